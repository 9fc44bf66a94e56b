// An editor's side of `owt acp`, written with the official ACP TypeScript
// SDK (@agentclientprotocol/sdk, pinned by scripts/install-agents): what
// tests/tests/acp_owt_agent.rs runs.
//
//   node acp-client.mjs SDK_DIR OWT REPO
//
// Connection 1: initialize, session/new in REPO, one prompt; the agent's
// permission request must reach this client, which allows it; then
// session/list. Connection 2 (a second `owt acp`, as an editor restarted):
// session/list, session/load of the session (its transcript comes back as
// updates), a second prompt. Prints one JSON report on stdout; the Rust
// test checks it against owt's own view. Exits 1 (with the error on
// stderr) when a request fails.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkDir, owt, repo] = process.argv.slice(2);
/** Progress, on stderr (with `owt acp`'s log: the test shows it on failure). */
const step = (what) => process.stderr.write(`acp-client: ${what}\n`);
const acp = await import(pathToFileURL(`${sdkDir}/dist/v1/stable/acp.js`).href);

/** Starts `owt acp` and a client on its stdio; the report's part of it. */
function connect(label) {
  const child = spawn(owt, ["-v", "acp", "--ai-tool", "claude"], {
    cwd: repo,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const seen = { permissions: [], updates: [] };
  const app = acp
    .client({ name: "owt-e2e" })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      step(`${label}: permission asked: ${params.toolCall.title}`);
      seen.permissions.push(params);
      const allow = params.options.find((o) => o.kind === "allow_once");
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    })
    .onNotification(acp.methods.client.session.update, async ({ params }) => {
      seen.updates.push(params);
    });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { app, stream, child, seen, label };
}

function text(updates, kind) {
  return updates
    .filter((u) => u.update.sessionUpdate === kind && u.update.content?.type === "text")
    .map((u) => u.update.content.text)
    .join("");
}

const init = { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} };
const report = {};

const first = connect("first");
await first.app.connectWith(first.stream, async (ctx) => {
  const initialized = await ctx.request(acp.methods.agent.initialize, init);
  report.agentInfo = initialized.agentInfo;
  report.loadSession = initialized.agentCapabilities?.loadSession ?? false;
  step("first: session/new");
  const created = await ctx.request(acp.methods.agent.session.new, { cwd: repo, mcpServers: [] });
  report.sessionId = created.sessionId;
  report.owt = created._meta?.owt ?? null;
  step(`first: prompt ${created.sessionId}`);
  const turn = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId: created.sessionId,
    prompt: [{ type: "text", text: "Create hello.txt with a greeting" }],
  });
  report.firstStop = turn.stopReason;
  report.permissions = first.seen.permissions.map((p) => ({
    sessionId: p.sessionId,
    title: p.toolCall.title,
    options: p.options.map((o) => o.kind),
  }));
  report.firstReply = text(first.seen.updates, "agent_message_chunk");
  report.firstTools = first.seen.updates
    .filter((u) => u.update.sessionUpdate === "tool_call")
    .map((u) => u.update.title);
  step("first: session/list");
  const listed = await ctx.request(acp.methods.agent.session.list, { cwd: repo });
  report.listed = listed.sessions.map((s) => ({ sessionId: s.sessionId, cwd: s.cwd, title: s.title }));
});
first.child.stdin.end();

const second = connect("second");
await second.app.connectWith(second.stream, async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, init);
  const listed = await ctx.request(acp.methods.agent.session.list, { cwd: repo });
  report.relisted = listed.sessions.map((s) => s.sessionId);
  step("second: session/load");
  await ctx.request(acp.methods.agent.session.load, {
    sessionId: report.sessionId,
    cwd: repo,
    mcpServers: [],
  });
  report.replayedUser = text(second.seen.updates, "user_message_chunk");
  report.replayedReply = text(second.seen.updates, "agent_message_chunk");
  const before = second.seen.updates.length;
  step("second: prompt");
  const turn = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId: report.sessionId,
    prompt: [{ type: "text", text: "Anything else?" }],
  });
  report.secondStop = turn.stopReason;
  report.secondReply = text(second.seen.updates.slice(before), "agent_message_chunk");
  try {
    await ctx.request(acp.methods.agent.session.load, { sessionId: "nope", cwd: repo, mcpServers: [] });
    report.unknownLoad = "accepted";
  } catch (e) {
    report.unknownLoad = e.message;
  }
});
second.child.stdin.end();

process.stdout.write(JSON.stringify(report) + "\n");

// owt's status plugin for OpenCode: reports what this session does to owt
// (`owt hook --event working|waiting|blocked`), from OpenCode's own events,
// and asks Conflict Guard before each edit (`owt hook --pre-edit`).
// Written by owt under $OWT_HOME and loaded only by the sessions owt starts
// (through OPENCODE_CONFIG_CONTENT); the user's configuration is untouched.
// (`spawn`, `OWT`, `asClaudeCall` and `askGuard` are in guard-ask.js,
// which owt appends to this file.)

export const OwtStatus = async (ctx) => {
  if (!process.env.OWT_SESSION) return {};
  const cwd = (ctx && (ctx.directory || ctx.worktree)) || process.cwd();
  // Warnings for edits that went through, by call, for the tool's result.
  const warnings = new Map();
  // Sub-agent sessions (the task tool) go busy and idle inside a turn.
  const children = new Set();
  let last = null;
  let queue = Promise.resolve();
  // One `owt hook` at a time, in event order; repeats are dropped.
  const report = (event) => {
    if (event === last) return;
    last = event;
    queue = queue.then(
      () =>
        new Promise((resolve) => {
          const child = spawn(OWT, ["hook", "--event", event], { stdio: "ignore" });
          child.on("exit", resolve);
          child.on("error", resolve);
        }),
    );
  };
  return {
    // Conflict Guard ([guard] pre_edit): `block` refuses the edit (the
    // thrown error is the tool's result the model reads); `warn` lets it
    // through and adds who else is there to the tool's result.
    "tool.execute.before": async (input, output) => {
      const call = asClaudeCall(input.tool, output && output.args, cwd);
      if (!call) return;
      const answer = await askGuard(call, cwd);
      if (!answer) return;
      if (answer.permissionDecision === "deny") throw new Error(answer.permissionDecisionReason);
      if (answer.additionalContext) warnings.set(input.callID, answer.additionalContext);
    },
    "tool.execute.after": async (input, output) => {
      const warning = warnings.get(input.callID);
      if (!warning) return;
      warnings.delete(input.callID);
      if (output && typeof output.output === "string") output.output += `\n\n${warning}`;
    },
    event: async ({ event }) => {
      const p = event.properties || {};
      switch (event.type) {
        case "session.created":
        case "session.updated":
          if (p.info && p.info.parentID) children.add(p.info.id);
          return;
        case "session.status":
          if (children.has(p.sessionID)) return;
          report(p.status && p.status.type === "idle" ? "waiting" : "working");
          return;
        case "session.idle":
          if (!children.has(p.sessionID)) report("waiting");
          return;
        case "permission.asked":
        case "permission.updated":
          report("blocked");
          return;
        case "permission.replied":
          report("working");
          return;
      }
    },
  };
};

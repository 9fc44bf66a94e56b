// Protocol tests: the real `owt lsp` (from $OWT_BIN, else target/debug/owt)
// over stdio through vscode-jsonrpc, in a real temporary git repository with
// a fake agent. They exercise exactly what the extension relies on:
// initialize with `openTerminal`, the declared commands, `owt/board`,
// `owt/boardChanged` after an agent starts, and `owt/openTerminal` on attach.
//
// The binary missing is a failure, not a skip.

import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';

import {
  ALL_COMMANDS,
  Commands,
  SESSION_ACTIONS,
  METHOD_BOARD,
  METHOD_BOARD_CHANGED,
  METHOD_OPEN_TERMINAL,
  type Board,
  type InitializationOptions,
  type OpenTerminalParams,
  type SessionView,
} from '../src/protocol';
import { LspServer, TestEnv, owtBin } from './harness';

const STEP_MS = 15_000;
const AGENT_MS = 30_000;

const STATUSES = [
  'starting',
  'working',
  'idle',
  'needs-input',
  'blocked',
  'done',
  'exited',
  'conflict',
  'queued',
  'unreachable',
  'limited',
];
const LANES = ['needs-you', 'ready-to-ship', 'in-flight', 'ready-to-clean'];

/** Checks a Board has the serde shape of `owt_protocol::Board`. */
function assertBoard(value: unknown, what: string): asserts value is Board {
  const b = value as Board;
  const ctx = `${what}: ${JSON.stringify(value)}`;
  assert.equal(typeof b, 'object', ctx);
  assert.equal(typeof b.repository, 'string', ctx);
  assert.ok(Array.isArray(b.lanes), ctx);
  for (const lane of b.lanes) {
    assert.ok(LANES.includes(lane.lane), `unknown lane ${lane.lane} in ${ctx}`);
    assert.equal(typeof lane.title, 'string', ctx);
    assert.ok(Array.isArray(lane.sessions), ctx);
    assert.equal(lane.count, lane.sessions.length, ctx);
    for (const s of lane.sessions) assertSession(s, ctx);
  }
  assert.deepEqual(b.all_lanes.map((l) => l.lane), LANES, ctx);
  assert.equal(b.counts.total, sessionsOf(b).length, ctx);
  assert.equal(typeof b.counts.summary, 'string', ctx);
}

function assertSession(s: SessionView, ctx: string): void {
  for (const k of ['name', 'id', 'task', 'branch', 'base', 'worktree', 'provider', 'status_text'] as const) {
    assert.equal(typeof s[k], 'string', `${k} in ${ctx}`);
  }
  assert.ok(STATUSES.includes(s.status), `status ${s.status} in ${ctx}`);
  assert.ok(LANES.includes(s.lane), `lane ${s.lane} in ${ctx}`);
  assert.ok(s.kind === 'worktree' || s.kind === 'branch', `kind in ${ctx}`);
  for (const k of ['created_at', 'ahead', 'changed_files', 'overlaps'] as const) {
    assert.equal(typeof s[k], 'number', `${k} in ${ctx}`);
  }
  assert.equal(typeof s.host_lost, 'boolean', `host_lost in ${ctx}`);
  assert.ok(Array.isArray(s.conflicted_files), `conflicted_files in ${ctx}`);
  assert.ok(s.exit_code === null || typeof s.exit_code === 'number', `exit_code in ${ctx}`);
  assert.ok(s.agent_pid === null || typeof s.agent_pid === 'number', `agent_pid in ${ctx}`);
  assert.deepEqual(s.actions.map((a) => a.action), SESSION_ACTIONS, `actions in ${ctx}`);
  for (const a of s.actions) {
    assert.equal(a.available, a.reason === null, `a reason exactly when unavailable, in ${ctx}`);
  }
}

function sessionsOf(board: Board): SessionView[] {
  return board.lanes.flatMap((l) => l.sessions);
}

function samePath(a: string, b: string): boolean {
  const norm = (p: string): string => {
    const resolved = path.resolve(p);
    try {
      return fs.realpathSync(resolved);
    } catch {
      return resolved;
    }
  };
  return norm(a) === norm(b);
}

describe('owt lsp protocol (what the VS Code extension relies on)', () => {
  let env: TestEnv | undefined;
  let server: LspServer | undefined;
  let repo = '';
  /** The session started through `owt.spawn`. */
  let spawned: SessionView | undefined;

  /** Why the setup failed (missing binary, git failing): every test reports it. */
  let setupError: unknown;

  const srv = (): LspServer => {
    if (setupError !== undefined) throw setupError;
    assert.ok(server, 'owt lsp was not started');
    return server;
  };

  before(() => {
    try {
      const bin = owtBin(); // throws with a clear message when the binary is missing
      env = new TestEnv();
      repo = env.repo('repo');
      server = new LspServer(bin, repo, env.env);
    } catch (err) {
      setupError = err;
    }
  });

  after(async () => {
    try {
      if (server) await server.stop(STEP_MS);
    } finally {
      env?.cleanup();
    }
  });

  it('initialize with openTerminal: the server declares the 8 owt commands', async () => {
    const s = srv();
    const rootUri = pathToFileURL(repo).href;
    const initializationOptions: InitializationOptions = {
      openTerminal: true,
      severities: { overlap: 'information', 'hunk-overlap': 'warning', conflict: 'error' },
    };
    const result = await s.request<{ capabilities: { executeCommandProvider?: { commands?: string[] } } }>(
      'initialize',
      {
        processId: process.pid,
        clientInfo: { name: 'owt-vscode-protocol-test', version: '0' },
        rootUri,
        rootPath: repo,
        workspaceFolders: [{ uri: rootUri, name: 'repo' }],
        capabilities: {
          workspace: { executeCommand: { dynamicRegistration: false }, workspaceFolders: true, configuration: true },
          window: { workDoneProgress: true, showDocument: { support: true }, showMessage: {} },
          textDocument: {
            publishDiagnostics: { relatedInformation: true, codeDescriptionSupport: true, dataSupport: true },
            codeAction: { dataSupport: true, codeActionLiteralSupport: { codeActionKind: { valueSet: ['quickfix', 'source'] } } },
            synchronization: { didSave: true },
          },
        },
        initializationOptions,
      },
      STEP_MS,
    );
    const commands = result.capabilities.executeCommandProvider?.commands ?? [];
    for (const c of ALL_COMMANDS) {
      assert.ok(commands.includes(c), `executeCommandProvider.commands lacks ${c}: ${JSON.stringify(commands)}`);
    }
    await s.conn.sendNotification('initialized', {});
  });

  it('owt/board returns the board of the workspace repository, empty at first', async () => {
    const board = await srv().request<unknown>(METHOD_BOARD, undefined, STEP_MS);
    assertBoard(board, 'owt/board');
    assert.ok(samePath(board.repository, repo), `repository ${board.repository} is not ${repo}`);
    assert.deepEqual(sessionsOf(board), []);
  });

  it('owt/boardChanged arrives after owt.spawn starts a fake agent', async () => {
    const s = srv();
    const from = s.received.length;
    await s.request<unknown>('workspace/executeCommand', { command: Commands.spawn, arguments: [{ task: 'x' }] }, AGENT_MS);
    const { value } = await s.waitFor('owt/boardChanged with the spawned session (task "x")', AGENT_MS, from, (r) => {
      if (r.kind !== 'notification' || r.method !== METHOD_BOARD_CHANGED) return undefined;
      assertBoard(r.params, METHOD_BOARD_CHANGED);
      return sessionsOf(r.params).find((x) => x.task === 'x');
    });
    spawned = value;
    assert.equal(spawned.provider, 'fake');

    const board = await s.request<unknown>(METHOD_BOARD, undefined, STEP_MS);
    assertBoard(board, 'owt/board after spawn');
    assert.ok(
      sessionsOf(board).some((x) => x.name === value.name),
      `owt/board lacks ${value.name}: ${JSON.stringify(board)}`,
    );
  });

  it('owt/boardChanged arrives when the CLI starts an agent outside the server', async () => {
    const s = srv();
    assert.ok(env, 'no test env');
    const from = s.received.length;
    env.run(owtBin(), ['new', 'from the cli', '--name', 'cli-agent'], repo);
    await s.waitFor('owt/boardChanged with cli-agent (started by `owt new`)', AGENT_MS, from, (r) => {
      if (r.kind !== 'notification' || r.method !== METHOD_BOARD_CHANGED) return undefined;
      assertBoard(r.params, METHOD_BOARD_CHANGED);
      return sessionsOf(r.params).find((x) => x.name === 'cli-agent');
    });
  });

  it('owt.attach sends owt/openTerminal for the session; {opened: true} completes the command', async () => {
    const s = srv();
    if (!spawned) {
      // owt/boardChanged failed above; still test attach on the session owt.spawn made.
      const board = await s.request<unknown>(METHOD_BOARD, undefined, STEP_MS);
      assertBoard(board, 'owt/board');
      spawned = sessionsOf(board).find((x) => x.task === 'x');
    }
    assert.ok(spawned, 'no session with task "x" (see the earlier failure)');
    const name = spawned.name;
    s.onRequest(METHOD_OPEN_TERMINAL, () => ({ opened: true }));
    const from = s.received.length;
    const executed = s.request<unknown>('workspace/executeCommand', { command: Commands.attach, arguments: [{ session: name }] }, STEP_MS);
    const { value: params } = await s.waitFor(`${METHOD_OPEN_TERMINAL} for ${name}`, STEP_MS, from, (r) =>
      r.kind === 'request' && r.method === METHOD_OPEN_TERMINAL ? (r.params as OpenTerminalParams) : undefined,
    );
    await executed;

    const ctx = JSON.stringify(params);
    assert.equal(params.session, name, ctx);
    assert.equal(typeof params.title, 'string', ctx);
    assert.ok(params.title.length > 0, ctx);
    assert.ok(Array.isArray(params.argv) && params.argv.length > 0, ctx);
    assert.ok(params.argv.every((a) => typeof a === 'string'), ctx);
    assert.ok(params.argv.includes('attach') && params.argv.includes(name), `argv should run \`owt attach ${name}\`: ${ctx}`);
    assert.ok(fs.statSync(params.cwd).isDirectory(), `cwd is not a directory: ${ctx}`);
    // VS Code runs argv[0] directly (shellPath): it must be an executable.
    const exe = params.argv[0] ?? '';
    if (path.isAbsolute(exe)) fs.accessSync(exe, fs.constants.X_OK);
  });

  it('shutdown and exit stop the server cleanly, agents survive it', async () => {
    const s = srv();
    assert.ok(env, 'no test env');
    const exit = await s.stop(STEP_MS);
    assert.equal(exit.code, 0, `owt lsp exit: ${JSON.stringify(exit)}${s.context()}`);
    const list = JSON.parse(env.run(owtBin(), ['--json', 'list'], repo)) as { sessions: SessionView[] };
    const names = list.sessions.map((x) => x.name);
    assert.ok(spawned && names.includes(spawned.name), `sessions after the server stopped: ${names.join(', ')}`);
  });
});

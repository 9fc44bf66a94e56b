// Resume, protocol level: the real `owt lsp` over vscode-jsonrpc with a
// session of the test fake agent (tests/data/fake_agent.py, which exits on
// `exit N`). The row's context value carries `:resume` (what shows the
// tree item's Resume menu entry) exactly when the board's `resume` action
// is available; `owt.resume` (what owt.ui.resume sends) is refused with the
// board's reason while the agent runs, and restarts it once it exited.

import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { contextValue, sessionActions, unavailableReason } from '../src/model';
import { Commands, METHOD_BOARD, type Board, type SessionView } from '../src/protocol';
import { LspServer, REPO_ROOT, TestEnv, owtBin } from './harness';

const STEP_MS = 20_000;
const AGENT_MS = 30_000;
const RESUME_MENU = /:resume(:|$)/;

function sessionNamed(board: Board, name: string): SessionView | undefined {
  return board.lanes.flatMap((l) => l.sessions).find((s) => s.name === name);
}

describe('Resume on a session whose agent is gone', () => {
  let env: TestEnv | undefined;
  let server: LspServer | undefined;
  let repo = '';

  /** Polls `owt/board` until `name` satisfies `want`. */
  async function waitSession(name: string, want: (s: SessionView) => boolean, what: string): Promise<SessionView> {
    assert.ok(server);
    const deadline = Date.now() + AGENT_MS;
    for (;;) {
      const board = await server.request<Board>(METHOD_BOARD, undefined, STEP_MS);
      const s = sessionNamed(board, name);
      if (s && want(s)) return s;
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; ${name} is ${JSON.stringify(s)}${server.context()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  before(async () => {
    env = new TestEnv();
    repo = env.repo('repo');
    const agent = path.join(REPO_ROOT, 'tests', 'data', 'fake_agent.py');
    const config = path.join(env.home, '.config', 'owt', 'config.toml');
    fs.mkdirSync(path.dirname(config), { recursive: true });
    fs.writeFileSync(
      config,
      `[tools.pyfake]\nbinary = "python3"\ncommand_template = ${JSON.stringify(`{binary} ${agent}`)}\nprompt_mode = "none"\n`,
    );
    server = new LspServer(owtBin(), repo, env.env);
    const rootUri = pathToFileURL(repo).href;
    await server.request('initialize', { processId: process.pid, rootUri, capabilities: {} }, STEP_MS);
    await server.conn.sendNotification('initialized', {});
    await server.request<Board>(METHOD_BOARD, undefined, STEP_MS);
  });

  after(async () => {
    try {
      if (server) await server.stop(STEP_MS);
    } finally {
      env?.cleanup();
    }
  });

  it('a running agent: no Resume, and owt.resume is refused with the board’s reason', async () => {
    assert.ok(server && env);
    env.run(owtBin(), ['new', 'say goodbye', '--name', 'ends', '--ai-tool', 'pyfake'], repo);
    const running = await waitSession('ends', (s) => s.status === 'needs-input', 'ends to wait for input');
    assert.ok(!RESUME_MENU.test(contextValue(sessionActions(running))), contextValue(sessionActions(running)));
    const reason = unavailableReason(running, 'resume');
    assert.ok(reason, 'the board says why not');
    await assert.rejects(
      server.request('workspace/executeCommand', { command: Commands.resume, arguments: [{ session: 'ends' }] }, STEP_MS),
      (e: Error) => e.message.includes(reason),
    );
  });

  it('an exited agent: Resume is offered, and owt.resume restarts it', async () => {
    assert.ok(server && env);
    env.run(owtBin(), ['send', 'ends', 'exit 3'], repo);
    const exited = await waitSession('ends', (s) => s.status === 'exited', 'ends to exit');
    assert.ok(RESUME_MENU.test(contextValue(sessionActions(exited))), contextValue(sessionActions(exited)));
    const result = await server.request<SessionView>(
      'workspace/executeCommand',
      { command: Commands.resume, arguments: [{ session: 'ends' }] },
      STEP_MS,
    );
    assert.equal(result.name, 'ends');
    const back = await waitSession('ends', (s) => s.status !== 'exited' && s.agent_pid != null, 'ends to run again');
    assert.ok(!RESUME_MENU.test(contextValue(sessionActions(back))));
  });
});

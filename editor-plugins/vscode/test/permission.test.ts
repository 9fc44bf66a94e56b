// Approve… / Deny, protocol level: the real `owt lsp` over vscode-jsonrpc
// with an ACP session of the scripted ACP agent
// (tests/data/fake-acp-agent.py --mode ask: asks to write ask.txt, writes it
// when allowed). The board offers `approve` / `deny` on the blocked row
// with the question and its options (what the quick pick lists);
// `owt.approve` with a picked option and `owt.deny` answer it (what the
// commands send); a wrong option is refused and changes nothing.
// vscode-languageclient answers the NEEDS YOU `window/showMessageRequest`
// itself; its actions are checked here too.

import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { answeredText, contextValue, permissionChoices, sessionActions } from '../src/model';
import { Commands, METHOD_BOARD, type Board, type SessionView } from '../src/protocol';
import { LspServer, REPO_ROOT, TestEnv, owtBin } from './harness';

const STEP_MS = 20_000;
const AGENT_MS = 30_000;

function sessionNamed(board: Board, name: string): SessionView | undefined {
  return board.lanes.flatMap((l) => l.sessions).find((s) => s.name === name);
}

describe('Approve… and Deny on a blocked ACP session', () => {
  let env: TestEnv | undefined;
  let server: LspServer | undefined;
  let repo = '';
  let worktree = '';

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
    const agent = path.join(REPO_ROOT, 'tests', 'data', 'fake-acp-agent.py');
    const config = path.join(env.home, '.config', 'owt', 'config.toml');
    fs.mkdirSync(path.dirname(config), { recursive: true });
    fs.writeFileSync(config, `[tools.acpfake]\nbinary = ${JSON.stringify(agent)}\nacp = "{binary} --mode ask"\n`);
    server = new LspServer(owtBin(), repo, env.env);
    const rootUri = pathToFileURL(repo).href;
    // As vscode-languageclient announces it.
    const capabilities = { window: { showMessage: { messageActionItem: { additionalPropertiesSupport: true } } } };
    await server.request('initialize', { processId: process.pid, rootUri, capabilities }, STEP_MS);
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

  it('the blocked row offers approve and deny, with the options to pick from', async () => {
    assert.ok(server && env);
    const from = server.received.length;
    const created = JSON.parse(
      env.run(owtBin(), ['--json', 'new', 'go', '--name', 'asks', '--ai-tool', 'acpfake', '--acp', '--raw'], repo),
    ) as { session: SessionView };
    worktree = created.session.worktree;
    const blocked = await waitSession('asks', (s) => s.status === 'blocked' && s.permission != null, 'asks to block');
    assert.ok(sessionActions(blocked).includes('approve') && sessionActions(blocked).includes('deny'));
    assert.match(contextValue(sessionActions(blocked)), /:approve(:|$)/);
    assert.deepEqual(
      permissionChoices(blocked).map((c) => [c.label, c.option]),
      [
        ['Allow', 'yes'],
        ['Reject', 'no'],
      ],
    );
    // The NEEDS YOU question vscode-languageclient shows with its buttons.
    const { value } = await server.waitFor('the NEEDS YOU question', STEP_MS, from, (r) =>
      r.kind === 'request' && r.method === 'window/showMessageRequest' ? r.params : undefined,
    );
    const question = value as { message: string; actions: { title: string }[] };
    assert.equal(question.message, 'owt: asks is blocked: Write ask.txt (ask.txt)');
    assert.deepEqual(
      question.actions.map((a) => a.title),
      ['Allow', 'Reject', 'Deny'],
    );
  });

  it('a wrong option is refused and the request stays pending', async () => {
    assert.ok(server);
    const blocked = await waitSession('asks', (s) => s.status === 'blocked', 'asks still blocked');
    await assert.rejects(
      server.request('workspace/executeCommand', { command: Commands.approve, arguments: [{ session: 'asks', option: 'maybe' }] }, STEP_MS),
      /no option `maybe`; the options are: 1 Allow \(yes\), 2 Reject \(no\)/,
    );
    const still = await waitSession('asks', () => true, 'asks');
    assert.equal(still.status, 'blocked');
    assert.deepEqual(still.permission, blocked.permission);
  });

  it('Approve… with the picked option unblocks the agent, which writes the file', async () => {
    assert.ok(server);
    const blocked = await waitSession('asks', (s) => s.status === 'blocked', 'asks blocked');
    const [allow] = permissionChoices(blocked);
    assert.ok(allow);
    const result = await server.request(
      'workspace/executeCommand',
      { command: Commands.approve, arguments: [{ session: 'asks', option: allow.option, permission_id: allow.permissionId }] },
      STEP_MS,
    );
    assert.equal(answeredText('asks', result), 'owt: asks: Write ask.txt → Allow');
    await waitSession('asks', (s) => s.status === 'needs-input' && s.permission == null, 'asks to wait for input');
    assert.equal(fs.readFileSync(path.join(worktree, 'ask.txt'), 'utf8'), 'asked\n');
  });

  it('Deny refuses the next request: nothing is written', async () => {
    assert.ok(server && env);
    fs.rmSync(path.join(worktree, 'ask.txt'));
    env.run(owtBin(), ['send', 'asks', 'again'], repo);
    const blocked = await waitSession('asks', (s) => s.status === 'blocked' && s.permission != null, 'asks to block again');
    const result = await server.request(
      'workspace/executeCommand',
      { command: Commands.deny, arguments: [{ session: 'asks', permission_id: blocked.permission?.id }] },
      STEP_MS,
    );
    assert.equal(answeredText('asks', result), 'owt: asks: Write ask.txt → Reject');
    const after = await waitSession('asks', (s) => s.status === 'needs-input', 'asks to wait for input');
    assert.ok(!sessionActions(after).includes('approve'));
    assert.ok(!fs.existsSync(path.join(worktree, 'ask.txt')));
  });
});

// Review, protocol level: the real `owt lsp` answers `owt/diff` for a
// session with changes, and `changesResources` (what the "Review" command
// hands to `vscode.changes`) turns it into the right resources: the agent's
// files as `file:` URIs, the base versions as `owt-base:` URIs whose blob
// `git cat-file` reads back as the base text (none for an added file);
// `owt.markReviewed` marks them reviewed as shown; the Review command's
// flow (`reviewSession`) asks for the diff, opens `vscode.changes` with
// those resources and marks them (falling back to `vscode.diff` where
// VS Code has no multi-file diff editor); "Ask <agent> to change this…"
// takes the comment from the input box (`withComment`) and the server
// stores it on the selected lines.

import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { BASE_SCHEME, changesResources, parseBaseQuery } from '../src/model';
import { baseCommentArgs, reviewSession, selectedLines, withComment, type ReviewHost } from '../src/review';
import { Commands, METHOD_BOARD, METHOD_DIFF, type DiffReport } from '../src/protocol';
import { LspServer, TestEnv, owtBin } from './harness';

const STEP_MS = 20_000;

describe('owt/diff and the Review command’s resources', () => {
  let env: TestEnv | undefined;
  let server: LspServer | undefined;
  let repo = '';
  let worktree = '';

  before(async () => {
    env = new TestEnv();
    repo = env.repo('repo');
    fs.writeFileSync(path.join(repo, 'lib.txt'), 'one\ntwo\nthree\n');
    fs.writeFileSync(path.join(repo, 'old.txt'), 'moved as it is\n');
    env.run('git', ['add', 'lib.txt', 'old.txt'], repo);
    env.run('git', ['commit', '-q', '-m', 'lib'], repo);
    const created = JSON.parse(env.run(owtBin(), ['--json', 'new', 'review me', '--name', 'rev'], repo)) as {
      session: { worktree: string };
    };
    worktree = created.session.worktree;
    fs.writeFileSync(path.join(worktree, 'lib.txt'), 'one\nTWO\nthree\n');
    fs.writeFileSync(path.join(worktree, 'added.txt'), 'new\n');
    env.run('git', ['mv', 'old.txt', 'moved.txt'], worktree);
    server = new LspServer(owtBin(), repo, env.env);
    const rootUri = pathToFileURL(repo).href;
    await server.request('initialize', { processId: process.pid, rootUri, capabilities: {} }, STEP_MS);
    await server.conn.sendNotification('initialized', {});
  });

  after(async () => {
    try {
      if (server) await server.stop(STEP_MS);
    } finally {
      env?.cleanup();
    }
  });

  it('maps the agent’s files and their base versions for vscode.changes', async () => {
    assert.ok(server && env);
    const report = await server.request<DiffReport>(METHOD_DIFF, { session: 'rev' }, STEP_MS);
    assert.deepEqual(
      report.files.map((f) => [f.path, f.status, f.additions, f.deletions]),
      [
        ['added.txt', 'added', 1, 0],
        ['lib.txt', 'modified', 1, 1],
        ['moved.txt', 'renamed', 0, 0],
      ],
    );
    const resources = changesResources(report);
    assert.equal(resources.length, 3);
    const [added, lib, moved] = resources;
    // VS Code flags an entry renamed when its sides' paths differ: only the rename.
    const samePath = (r: { original: string; modified: string }): boolean =>
      decodeURIComponent(new URL(r.original).pathname) === decodeURIComponent(new URL(r.modified).pathname);
    assert.ok(samePath(lib) && samePath(added), 'a modified or added file is not shown as renamed');
    assert.ok(!samePath(moved), 'a renamed file is');
    assert.equal(decodeURIComponent(new URL(moved.original).pathname), path.join(worktree, 'old.txt'));
    assert.equal(fileURLToPath(moved.modified), path.join(worktree, 'moved.txt'));
    assert.equal(fileURLToPath(lib.label), path.join(worktree, 'lib.txt'));
    assert.equal(lib.modified, lib.label, 'the agent’s side is its file');
    const base = new URL(lib.original);
    assert.equal(base.protocol, `${BASE_SCHEME}:`);
    const { worktree: where, blob } = parseBaseQuery(base.search);
    assert.equal(where, report.worktree);
    assert.equal(env.run('git', ['-C', where, 'cat-file', 'blob', blob], repo), 'one\ntwo\nthree\n');
    assert.equal(parseBaseQuery(new URL(added.original).search).blob, '', 'an added file has no base');
    assert.equal(fileURLToPath(added.modified), path.join(worktree, 'added.txt'));
  });

  it('owt.markReviewed with the shown diff’s snapshot marks the files as shown; one changed since stays not reviewed', async () => {
    assert.ok(server);
    const shown = await server.request<DiffReport>(METHOD_DIFF, { session: 'rev' }, STEP_MS);
    // The agent writes added.txt again after the diff was shown.
    fs.writeFileSync(path.join(worktree, 'added.txt'), 'newer\n');
    const marked = await server.request<{ reviewed: string[]; unreviewed: string[] }>(
      'workspace/executeCommand',
      // What the Review command sends once vscode.changes is open.
      { command: Commands.markReviewed, arguments: [{ session: 'rev', snapshot: shown.snapshot }] },
      STEP_MS,
    );
    assert.deepEqual(marked.reviewed, ['lib.txt', 'moved.txt']);
    assert.deepEqual(marked.unreviewed, ['added.txt']);
    const report = await server.request<DiffReport>(METHOD_DIFF, { session: 'rev' }, STEP_MS);
    assert.deepEqual(
      report.files.map((f) => [f.path, f.reviewed]),
      [
        ['added.txt', false],
        ['lib.txt', true],
        ['moved.txt', true],
      ],
    );
  });

  /** A ReviewHost over the real server that records the VS Code commands run. */
  function host(failing: string[] = []): { host: ReviewHost; ran: unknown[][]; said: string[] } {
    const ran: unknown[][] = [];
    const said: string[] = [];
    return {
      ran,
      said,
      host: {
        diff: (session) => server!.request<DiffReport>(METHOD_DIFF, { session }, STEP_MS),
        executeCommand: async (command, ...args) => {
          ran.push([command, ...args]);
          if (failing.includes(command)) throw new Error(`command '${command}' not found`);
          return undefined;
        },
        uri: (value) => value,
        execute: (command, args) => server!.request('workspace/executeCommand', { command, arguments: [args] }, STEP_MS),
        info: (message) => said.push(message),
      },
    };
  }

  it('the Review command asks the server for the diff, opens vscode.changes with each file’s base and agent sides, then marks them reviewed', async () => {
    assert.ok(server);
    const { host: h, ran } = host();
    assert.equal(await reviewSession('rev', h), 'changes');
    assert.equal(ran.length, 1, 'one VS Code command');
    const [command, title, triples] = ran[0] as [string, string, string[][]];
    assert.equal(command, 'vscode.changes');
    assert.equal(title, 'owt: review rev (+2 −1 against main)');
    const rows = triples.map(([label, original, modified]) => {
      const base = new URL(original);
      return [
        label === modified ? 'label=agent' : 'label≠agent',
        decodeURIComponent(base.pathname),
        parseBaseQuery(base.search).blob === '' ? '' : env!.run('git', ['-C', worktree, 'cat-file', 'blob', parseBaseQuery(base.search).blob], repo),
        fileURLToPath(modified),
      ];
    });
    assert.deepEqual(rows, [
      ['label=agent', path.join(worktree, 'added.txt'), '', path.join(worktree, 'added.txt')],
      ['label=agent', path.join(worktree, 'lib.txt'), 'one\ntwo\nthree\n', path.join(worktree, 'lib.txt')],
      ['label=agent', path.join(worktree, 'old.txt'), 'moved as it is\n', path.join(worktree, 'moved.txt')],
    ]);
    const report = await server.request<DiffReport>(METHOD_DIFF, { session: 'rev' }, STEP_MS);
    assert.deepEqual(
      report.files.map((f) => f.reviewed),
      [true, true, true],
      'every file shown is reviewed',
    );
  });

  it('without vscode.changes (VS Code before 1.85) it shows the first file in a diff editor and marks nothing', async () => {
    assert.ok(server);
    fs.writeFileSync(path.join(worktree, 'lib.txt'), 'one\nTWO\nthree\nfour\n');
    const { host: h, ran, said } = host(['vscode.changes']);
    assert.equal(await reviewSession('rev', h), 'diff-per-file');
    assert.deepEqual(
      ran.map((r) => r[0]),
      ['vscode.changes', 'vscode.diff'],
    );
    const [, original, modified] = ran[1] as string[];
    assert.equal(decodeURIComponent(new URL(original).pathname), path.join(worktree, 'added.txt'));
    assert.equal(fileURLToPath(modified), path.join(worktree, 'added.txt'));
    assert.match(said.join('\n'), /no multi-file diff editor/);
    const report = await server.request<DiffReport>(METHOD_DIFF, { session: 'rev' }, STEP_MS);
    assert.equal(report.files.find((f) => f.path === 'lib.txt')?.reviewed, false, 'lib.txt changed and was not shown');
  });

  it('“Ask rev to change this…”: the code action’s owt.comment gets the text from the input box; cancelled, nothing is sent', async () => {
    assert.ok(server && env);
    await server.request(METHOD_BOARD, undefined, STEP_MS);
    const file = pathToFileURL(path.join(worktree, 'lib.txt')).href;
    const actions = await server.request<{ title: string; command: { command: string; arguments: unknown[] } }[]>(
      'textDocument/codeAction',
      { textDocument: { uri: file }, range: { start: { line: 1, character: 0 }, end: { line: 2, character: 2 } }, context: { diagnostics: [] } },
      STEP_MS,
    );
    const ask = actions.find((a) => a.title === 'owt: ask rev to change this…');
    assert.ok(ask, `the ask action among ${JSON.stringify(actions.map((a) => a.title))}`);
    const prompts: string[] = [];
    // Cancelled (Escape in the input box): nothing goes to the server.
    assert.equal(
      await withComment(ask.command.command, ask.command.arguments, async (title) => {
        prompts.push(title);
        return undefined;
      }),
      undefined,
    );
    // Given: the command goes with the text.
    const args = await withComment(ask.command.command, ask.command.arguments, async (title) => {
      prompts.push(title);
      return 'say TWO in lower case';
    });
    assert.deepEqual(prompts, ['owt: Ask rev to change this', 'owt: Ask rev to change this']);
    assert.ok(args);
    const made = await server.request<{ path: string; start_line: number; end_line: number; selected: string; text: string }[]>(
      'workspace/executeCommand',
      { command: ask.command.command, arguments: args },
      STEP_MS,
    );
    assert.deepEqual(
      made.map((c) => [c.path, c.start_line, c.end_line, c.selected, c.text]),
      [['lib.txt', 2, 3, 'TWO\nthree', 'say TWO in lower case']],
    );
    const listed = JSON.parse(env.run(owtBin(), ['--json', 'comments', 'rev'], repo)) as { comments: { text: string }[] };
    assert.deepEqual(listed.comments.map((c) => c.text), ['say TWO in lower case']);
    // Other commands pass as they are.
    const other = [{ session: 'rev' }];
    assert.equal(await withComment('owt.ship', other, async () => 'never asked'), other);
  });

  it('"Ask <agent> to change this…" on the base side goes on the agent’s lines the diff maps it to', async () => {
    assert.ok(server && env);
    const report = await server.request<DiffReport>(METHOD_DIFF, { session: 'rev' }, STEP_MS);
    const [added, lib] = changesResources(report);
    assert.equal(baseCommentArgs(new URL(added.original).search, 1, 1), undefined, 'an added file has no base side');
    // Base lines 1-2 ("one", "two") of lib.txt, selected down to the start of line 3.
    const args = baseCommentArgs(new URL(lib.original).search, ...selectedLines(0, 2, 0));
    assert.deepEqual(args, { session: 'rev', path: 'lib.txt', side: 'base', start_line: 1, end_line: 2 });
    const asked = await withComment(Commands.comment, [args], async (title) => {
      assert.equal(title, 'owt: Ask rev to change this');
      return 'keep two lower case';
    });
    assert.ok(asked);
    const made = await server.request<{ path: string; start_line: number; end_line: number; selected: string; text: string }[]>(
      'workspace/executeCommand',
      { command: Commands.comment, arguments: asked },
      STEP_MS,
    );
    assert.deepEqual(
      made.map((c) => [c.path, c.start_line, c.end_line, c.selected, c.text]),
      [['lib.txt', 1, 2, 'one\nTWO', '(on the base version, lines 1-2:\n    one\n    two)\nkeep two lower case']],
    );
  });

  it('a session without changes: said, nothing opened', async () => {
    assert.ok(server && env);
    env.run(owtBin(), ['--json', 'new', 'nothing yet', '--name', 'idle'], repo);
    const { host: h, ran, said } = host();
    assert.equal(await reviewSession('idle', h), 'no-changes');
    assert.deepEqual(ran, []);
    assert.deepEqual(said, ['owt: idle has no changes against main.']);
  });
});

// Review, protocol level: the real `owt lsp` answers `owt/diff` for a
// session with changes, and `changesResources` (what the "Review" command
// hands to `vscode.changes`) turns it into the right resources: the agent's
// files as `file:` URIs, the base versions as `owt-base:` URIs whose blob
// `git cat-file` reads back as the base text (none for an added file);
// `owt.markReviewed` marks them reviewed.

import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { BASE_SCHEME, changesResources, parseBaseQuery } from '../src/model';
import { Commands, METHOD_DIFF, type DiffReport } from '../src/protocol';
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
    env.run('git', ['add', 'lib.txt'], repo);
    env.run('git', ['commit', '-q', '-m', 'lib'], repo);
    const created = JSON.parse(env.run(owtBin(), ['--json', 'new', 'review me', '--name', 'rev'], repo)) as {
      session: { worktree: string };
    };
    worktree = created.session.worktree;
    fs.writeFileSync(path.join(worktree, 'lib.txt'), 'one\nTWO\nthree\n');
    fs.writeFileSync(path.join(worktree, 'added.txt'), 'new\n');
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
      ],
    );
    const resources = changesResources(report);
    assert.equal(resources.length, 2);
    const [added, lib] = resources;
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

  it('owt.markReviewed marks every file reviewed as it is now', async () => {
    assert.ok(server);
    await server.request('workspace/executeCommand', { command: Commands.markReviewed, arguments: [{ session: 'rev' }] }, STEP_MS);
    const report = await server.request<DiffReport>(METHOD_DIFF, { session: 'rev' }, STEP_MS);
    assert.deepEqual(
      report.files.map((f) => f.reviewed),
      [true, true],
    );
  });
});

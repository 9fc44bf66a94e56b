// Unit tests of the pure tree model and status bar text. The `vscode` module
// is made unloadable first: the model must not depend on it.

import { strict as assert } from 'node:assert';
import Module from 'node:module';
import { describe, it } from 'node:test';

type Load = (request: string, parent: unknown, isMain: boolean) => unknown;
const mod = Module as unknown as { _load: Load };
const realLoad = mod._load;
let vscodeRequests = 0;
mod._load = function (request: string, parent: unknown, isMain: boolean): unknown {
  if (request === 'vscode') {
    vscodeRequests++;
    throw new Error('the tree model must not import `vscode`');
  }
  return realLoad.call(this, request, parent, isMain);
};

// Loaded after the stub is in place (a static import would be hoisted above it).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const model = require('../src/model') as typeof import('../src/model');
import { actions, sampleBoard, session, sharedBoard } from './fixtures';
import type { Board } from '../src/protocol';

describe('tree model', () => {
  it('does not load the vscode module', () => {
    assert.equal(vscodeRequests, 0);
    assert.ok(Object.keys(require.cache).some((k) => k.endsWith('model.js')), 'model.js was loaded');
  });

  it('maps lanes to top-level nodes in priority order, with CLI titles', () => {
    const roots = model.boardToTree(sampleBoard());
    assert.deepEqual(
      roots.map((r) => [r.id, r.label, r.description]),
      [
        ['lane:needs-you', 'NEEDS YOU', '1 session'],
        ['lane:ready-to-ship', 'READY TO SHIP', '1 session'],
        ['lane:in-flight', 'IN FLIGHT', '3 sessions'],
      ],
    );
    assert.deepEqual(
      roots[2]?.sessions.map((s) => s.label),
      ['refactor-billing', 'docs', 'tests'],
    );
  });

  it('shows the lanes the server sent, in its order, with its titles and counts', () => {
    const b = sampleBoard();
    const [needs, , flight] = b.lanes;
    assert.ok(needs && flight);
    const odd: Board = {
      ...b,
      lanes: [{ ...flight, title: 'LATER', count: 7 }, needs],
    };
    const roots = model.boardToTree(odd);
    assert.deepEqual(
      roots.map((r) => [r.label, r.description]),
      [
        ['LATER', '7 sessions'],
        ['NEEDS YOU', '1 session'],
      ],
    );
  });

  it('has no roots without a board or with an empty one', () => {
    assert.deepEqual(model.boardToTree(undefined), []);
    assert.deepEqual(model.boardToTree({ ...sampleBoard(), lanes: [] }), []);
    assert.deepEqual(new model.TreeState().children(undefined), []);
  });

  it('children: lanes hold sessions, sessions are leaves', () => {
    const tree = new model.TreeState();
    tree.setBoard(sampleBoard());
    const [lane] = tree.children(undefined);
    assert.ok(lane && lane.kind === 'lane');
    const kids = tree.children(lane);
    assert.equal(kids.length, 1);
    const leaf = kids[0];
    assert.ok(leaf && leaf.kind === 'session');
    assert.deepEqual(tree.children(leaf), []);
  });

  it('describes a session like the CLI board', () => {
    assert.equal(
      model.sessionDescription(session({ name: 'a', status_text: 'working', provider: 'claude', ahead: 3, overlaps: 1 })),
      'working · claude · +3 commits · 1 overlap',
    );
    assert.equal(
      model.sessionDescription(session({ name: 'b', status_text: 'idle', provider: 'codex', ahead: 1, overlaps: 2 })),
      'idle · codex · +1 commit · 2 overlaps',
    );
    assert.equal(model.sessionDescription(session({ name: 'c', status_text: 'exited with code 2', provider: 'fake' })), 'exited with code 2 · fake');
    assert.equal(model.sessionDescription(session({ name: 'd', status: 'idle', status_text: '' })), 'idle · claude');
  });

  it('puts task, branch and worktree in the tooltip', () => {
    const node = model.sessionNode(
      session({ name: 'add-jwt', task: 'Add JWT auth\nwith refresh tokens', ahead: 2, changed_files: 5, overlaps: 1, conflicted_files: ['src/a.rs'] }),
    );
    assert.equal(node.id, 'session:id-add-jwt');
    for (const part of ['Add JWT auth', 'with refresh tokens', 'owt/add-jwt (base main)', '/repo.worktrees/add-jwt', '2 commits ahead, 5 files changed', 'overlaps with 1 participant', 'src/a.rs', 'pid 4242']) {
      assert.ok(node.tooltip.includes(part), `tooltip lacks ${JSON.stringify(part)}:\n${node.tooltip}`);
    }
  });

  it('shows the checks and the pull request the server sent', () => {
    const node = model.sessionNode(
      session({
        name: 'api',
        status: 'checks-failed',
        status_text: 'checks failed, agent fixing (1 of 3)',
        checks: { state: 'failed', trigger: 'turn-end', attempt: 1, max_attempts: 3, exit_code: 101, timed_out: false,
          duration_ms: 1200, log: '/owt/logs/checks/x.log', started_at: 0, current: true },
        pr: { number: 12, url: 'https://github.com/o/r/pull/12', state: 'open', draft: true, ci: 'failing', review: 'none' },
      }),
    );
    assert.equal(node.icon, 'warning');
    assert.ok(node.description.startsWith('checks failed, agent fixing (1 of 3)'), node.description);
    assert.ok(node.description.includes('PR #12 draft'), node.description);
    for (const part of ['checks failed (exit code 101, fix 1 of 3), log /owt/logs/checks/x.log', 'pull request: #12 draft, CI failing, review none: https://github.com/o/r/pull/12']) {
      assert.ok(node.tooltip.includes(part), `tooltip lacks ${JSON.stringify(part)}:\n${node.tooltip}`);
    }
  });

  it('offers exactly the actions the server marked available', () => {
    const working = model.sessionNode(session({ name: 'w' }));
    assert.equal(working.contextValue, 'owt.session:attach:peek:send:delete');

    // Whatever the session's fields say: the actions decide.
    const odd = model.sessionNode(session({ name: 'o', status: 'exited', host_lost: true, actions: actions('merge', 'send') }));
    assert.deepEqual(odd.actions, ['send', 'merge']);
    assert.equal(odd.contextValue, 'owt.session:send:merge');
    assert.equal(model.unavailableReason(odd.session, 'attach'), 'no attach in this fixture');
    assert.equal(model.unavailableReason(odd.session, 'merge'), undefined);
  });

  it('renders the shared board fixture exactly as its actions say (as the Neovim board does)', () => {
    const roots = model.boardToTree(sharedBoard());
    const rows = roots.flatMap((lane) => lane.sessions.map((s) => [lane.label, s.label, s.contextValue]));
    assert.deepEqual(rows, [
      ['NEEDS YOU', 'blocked-one', 'owt.session:attach:peek:send:delete'],
      ['READY TO SHIP', 'odd-one', 'owt.session:merge:delete'],
      ['IN FLIGHT', 'conflicted', 'owt.session:attach:peek:send:delete:conflicts'],
    ]);
    const odd = model.findSession(sharedBoard(), 'odd-one');
    assert.ok(odd);
    assert.equal(model.unavailableReason(odd, 'attach'), 'the fixture says no');
    assert.equal(model.statusBarModel(sharedBoard()).text, 'owt: 1 needs you · 1 ready · 1 idle');
    // READY TO SHIP rows say the server's review state, as sent.
    const descriptions = roots.flatMap((lane) => lane.sessions.map((s) => [s.label, s.description]));
    assert.deepEqual(
      descriptions.map(([label, d]) => [label, /reviewed/.test(String(d))]),
      [['blocked-one', false], ['odd-one', true], ['conflicted', false]],
    );
    assert.match(String(descriptions[1][1]), / · reviewed( · |$)/);
    const notYet = model.sessionNode(session({ name: 'r', lane: 'ready-to-ship', review: 'not-reviewed' }));
    assert.match(String(notYet.description), / · not reviewed( · |$)/);
  });

  it('offers Approve… with the pending request’s options, and Deny, only where the server allows them', () => {
    const blocked = session({
      name: 'asks',
      status: 'blocked',
      lane: 'needs-you',
      transport: 'acp',
      permission: {
        id: 4,
        question: 'Write ask.txt',
        tool_kind: 'edit',
        paths: ['ask.txt'],
        options: [
          { id: 'yes', name: 'Allow', kind: 'allow_once' },
          { id: 'no', name: 'Reject', kind: 'reject_once' },
        ],
      },
      actions: actions('attach', 'peek', 'send', 'delete', 'approve', 'deny'),
    });
    const node = model.sessionNode(blocked);
    assert.equal(node.contextValue, 'owt.session:attach:peek:send:delete:approve:deny');
    assert.deepEqual(model.permissionChoices(blocked), [
      { label: 'Allow', description: '1 · allow once', option: 'yes', permissionId: 4 },
      { label: 'Reject', description: '2 · reject once', option: 'no', permissionId: 4 },
    ]);
    assert.equal(model.permissionQuestion(blocked), 'asks asks: Write ask.txt (ask.txt)');
    assert.equal(
      model.answeredText('asks', { question: 'Write ask.txt', option_id: 'yes', name: 'Allow' }),
      'owt: asks: Write ask.txt → Allow',
    );
    assert.equal(model.answeredText('asks', undefined), undefined);
    // Nothing pending: no choices, and the shared fixture's rows offer neither.
    assert.deepEqual(model.permissionChoices(session({ name: 'w' })), []);
    for (const lane of model.boardToTree(sharedBoard())) {
      for (const s of lane.sessions) assert.ok(!/:(approve|deny)(:|$)/.test(s.contextValue), s.contextValue);
    }
  });

  it('context values match the menu `when` clauses of package.json', () => {
    // Each inline action's `when` is `viewItem =~ /:<action>(:|$)/`.
    const re = (a: string): RegExp => new RegExp(`:${a}(:|$)`);
    const cv = model.contextValue(['attach', 'peek', 'ship', 'delete']);
    assert.ok(re('attach').test(cv) && re('peek').test(cv) && re('ship').test(cv) && re('delete').test(cv));
    assert.ok(!re('merge').test(cv) && !re('send').test(cv));
  });

  it('gives every status an icon', () => {
    const statuses = [
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
      'checks-running',
      'checks-failed',
      'ci-failed',
      'changes-requested',
      'pr-open',
      'merged',
    ] as const;
    for (const status of statuses) {
      assert.ok(model.statusIcon(session({ name: 's', status })).length > 0, status);
    }
    assert.notEqual(
      model.statusIcon(session({ name: 'a', status: 'exited', exit_code: 0 })),
      model.statusIcon(session({ name: 'b', status: 'exited', exit_code: 3 })),
    );
  });

  it('finds sessions by name', () => {
    const b = sampleBoard();
    assert.equal(model.allSessions(b).length, 5);
    assert.equal(model.findSession(b, 'tests')?.provider, 'aider');
    assert.equal(model.findSession(b, 'nope'), undefined);
    assert.equal(model.findSession(undefined, 'tests'), undefined);
  });
});

describe('status bar', () => {
  it('shows the counts the server sent', () => {
    const m = model.statusBarModel(sampleBoard());
    assert.equal(m.text, 'owt: 2 working · 1 needs you · 1 ready · 1 idle');
    assert.equal(m.attention, true);
    assert.ok(m.tooltip.includes('5 agent sessions in /repo'));
    assert.ok(m.tooltip.includes('NEEDS YOU: fix-login'));
    const calm: Board = { ...sampleBoard(), counts: { total: 3, working: 3, needs_you: 0, ready: 0, idle: 0, to_clean: 0, queued: 0, summary: '3 working' } };
    assert.deepEqual([model.statusBarModel(calm).text, model.statusBarModel(calm).attention], ['owt: 3 working', false]);
  });

  it('says when there are no agents or no server', () => {
    const empty: Board = { repository: '/r', lanes: [], all_lanes: [], counts: { total: 0, working: 0, needs_you: 0, ready: 0, idle: 0, to_clean: 0, queued: 0, summary: '' } };
    assert.deepEqual([model.statusBarModel(undefined).text, model.statusBarModel(empty).text], ['owt: no agents', 'owt: no agents']);
    assert.equal(model.statusBarModel(undefined).attention, false);
    assert.equal(model.statusBarModel(sampleBoard(), false).text, 'owt: not running');
  });
});

describe('New agent prefill', () => {
  it('puts the selection on one line, with file and 1-based lines', () => {
    assert.equal(model.taskPrefill('// TODO: retry\n  on 503\n', 'src/http.ts', 10, 11), '// TODO: retry on 503 (src/http.ts:10-11)');
    assert.equal(model.taskPrefill('fix this', 'a.rs', 7, 7), 'fix this (a.rs:7)');
    assert.equal(model.taskPrefill('   ', 'a.rs', 1, 3), '(a.rs:1-3)');
    assert.equal(model.taskPrefill('untitled text', undefined, 1, 1), 'untitled text');
  });

  it('truncates long selections', () => {
    const long = 'x'.repeat(1000);
    const line = model.oneLine(long, 50);
    assert.equal(line.length, 50);
    assert.ok(line.endsWith('…'));
  });
});

/** A board with `lane`'s sessions replaced (the count follows). */
function withLane(board: Board, lane: string, sessions: Board['lanes'][number]['sessions']): Board {
  return { ...board, lanes: board.lanes.map((l) => (l.lane === lane ? { ...l, sessions, count: sessions.length } : l)) };
}

describe('tree updates (what VS Code is told of a new board)', () => {
  it('tells nothing before VS Code first asks for the lanes; it then reads the newest board', () => {
    const tree = new model.TreeState();
    assert.equal(tree.setBoard(sampleBoard()), 'none');
    assert.deepEqual(
      tree.children(undefined).map((l) => l.id),
      ['lane:needs-you', 'lane:ready-to-ship', 'lane:in-flight'],
    );
  });

  it('an equal board (the first boardChanged and the owt/board answer, at start) changes nothing', () => {
    const tree = new model.TreeState();
    tree.children(undefined); // the view drew "no board" first
    assert.equal(tree.setBoard(sampleBoard()), 'root');
    tree.children(undefined);
    assert.equal(tree.setBoard(sampleBoard()), 'none');
  });

  it('while a whole-tree refresh is on its way, asks for no other; VS Code then reads the newest board', () => {
    const tree = new model.TreeState();
    tree.children(undefined);
    assert.equal(tree.setBoard(sampleBoard()), 'root');
    const moved = withLane(sampleBoard(), 'in-flight', []);
    assert.equal(tree.setBoard({ ...moved, lanes: moved.lanes.filter((l) => l.lane !== 'in-flight') }), 'none');
    assert.deepEqual(
      tree.children(undefined).map((l) => l.id),
      ['lane:needs-you', 'lane:ready-to-ship'],
    );
  });

  it('a whole-tree refresh stays unread until VS Code reads the lanes (the extension asks again meanwhile)', () => {
    const tree = new model.TreeState();
    tree.children(undefined); // the view drew "no board" first
    assert.equal(tree.rootUnread(), false);
    assert.equal(tree.setBoard(sampleBoard()), 'root');
    assert.equal(tree.rootUnread(), true);
    // VS Code folded the refresh into a read under way: nothing read yet.
    assert.equal(tree.setBoard(sampleBoard()), 'none');
    assert.equal(tree.rootUnread(), true);
    tree.children(undefined);
    assert.equal(tree.rootUnread(), false);
  });

  it('sessions moving between lanes that stay refresh those lanes only, as the very objects VS Code holds', () => {
    const tree = new model.TreeState();
    tree.setBoard(sampleBoard());
    const held = tree.children(undefined);
    const [needsYou, ready, inFlight] = held;
    assert.ok(needsYou && ready && inFlight && needsYou.kind === 'lane' && inFlight.kind === 'lane');
    const before = sampleBoard();
    const billing = before.lanes[2]?.sessions[0];
    assert.ok(billing);
    const asked = { ...billing, status: 'needs-input' as const, status_text: 'needs input', lane: 'needs-you' as const };
    let next = withLane(before, 'needs-you', [...(before.lanes[0]?.sessions ?? []), asked]);
    next = withLane(next, 'in-flight', (before.lanes[2]?.sessions ?? []).slice(1));
    const change = tree.setBoard(next);
    assert.ok(Array.isArray(change), `lanes refreshed, got ${JSON.stringify(change)}`);
    assert.equal(change.length, 2);
    assert.ok(change[0] === needsYou && change[1] === inFlight, 'the same lane objects, not copies');
    // Updated in place: VS Code asks those objects for their children.
    assert.deepEqual(tree.children(needsYou).map((s) => s.label), ['fix-login', 'refactor-billing']);
    assert.equal(needsYou.description, '2 sessions');
    assert.deepEqual(tree.children(inFlight).map((s) => s.label), ['docs', 'tests']);
    // A later read of the lanes hands out the same objects again.
    const again = tree.children(undefined);
    assert.ok(again.every((l, i) => l === held[i]));
  });

  it('a session changing in place refreshes its lane; a lane appearing, going or moving refreshes the whole tree', () => {
    const tree = new model.TreeState();
    tree.setBoard(sampleBoard());
    const [, ready] = tree.children(undefined);
    const shipped = sampleBoard();
    const jwt = shipped.lanes[1]?.sessions[0];
    assert.ok(jwt);
    const change = tree.setBoard(withLane(shipped, 'ready-to-ship', [{ ...jwt, review: 'reviewed' }]));
    assert.ok(Array.isArray(change) && change.length === 1 && change[0] === ready);

    const gone = { ...shipped, lanes: shipped.lanes.filter((l) => l.lane !== 'ready-to-ship') };
    assert.equal(tree.setBoard(gone), 'root');
    tree.children(undefined);
    assert.equal(tree.setBoard({ ...gone, lanes: [...gone.lanes].reverse() }), 'root');
    tree.children(undefined);
    assert.equal(tree.setBoard(undefined), 'root');
    assert.deepEqual(tree.children(undefined), []);
  });
});

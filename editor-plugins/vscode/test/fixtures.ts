// Board fixtures in the serde form of `owt-protocol`.

import * as fs from 'node:fs';
import * as path from 'node:path';

import { SESSION_ACTIONS, type ActionState, type Board, type SessionAction, type SessionView } from '../src/protocol';

/** Every action, those named available (as the server would send them). */
export function actions(...available: SessionAction[]): ActionState[] {
  return SESSION_ACTIONS.map((action) =>
    available.includes(action)
      ? { action, available: true, reason: null }
      : { action, available: false, reason: `no ${action} in this fixture` },
  );
}

/** `editor-plugins/fixtures/board-actions.json`, shared with the Neovim tests. */
export function sharedBoard(): Board {
  // out/test/fixtures.js → editor-plugins/fixtures
  const file = path.join(__dirname, '..', '..', '..', 'fixtures', 'board-actions.json');
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Board;
}

export function session(over: Partial<SessionView> & Pick<SessionView, 'name'>): SessionView {
  return {
    id: `id-${over.name}`,
    task: `task of ${over.name}`,
    branch: `owt/${over.name}`,
    base: 'main',
    worktree: `/repo.worktrees/${over.name}`,
    provider: 'claude',
    kind: 'worktree',
    status: 'working',
    status_text: over.status ?? 'working',
    lane: 'in-flight',
    created_at: 1_767_225_600_000,
    exit_code: null,
    host_lost: false,
    ahead: 0,
    changed_files: 0,
    overlaps: 0,
    conflicted_files: [],
    agent_pid: 4242,
    rss_bytes: null,
    ports: [],
    actions: actions('attach', 'peek', 'send', 'delete'),
    ...over,
  };
}

/** Three lanes, as `owt --json` prints them (non-empty lanes, priority order). */
export function sampleBoard(): Board {
  return {
    repository: '/repo',
    lanes: [
      {
        lane: 'needs-you',
        title: 'NEEDS YOU',
        count: 1,
        sessions: [
          session({ name: 'fix-login', status: 'needs-input', status_text: 'needs input', lane: 'needs-you', provider: 'codex', overlaps: 1 }),
        ],
      },
      {
        lane: 'ready-to-ship',
        title: 'READY TO SHIP',
        count: 1,
        sessions: [
          session({ name: 'add-jwt', status: 'done', status_text: 'done', lane: 'ready-to-ship', ahead: 3, changed_files: 4, overlaps: 2 }),
        ],
      },
      {
        lane: 'in-flight',
        title: 'IN FLIGHT',
        count: 3,
        sessions: [
          session({ name: 'refactor-billing', ahead: 1, changed_files: 2 }),
          session({ name: 'docs', status: 'starting', status_text: 'starting' }),
          session({ name: 'tests', status: 'idle', status_text: 'idle', provider: 'aider' }),
        ],
      },
    ],
    all_lanes: [
      { lane: 'needs-you', title: 'NEEDS YOU', count: 1 },
      { lane: 'ready-to-ship', title: 'READY TO SHIP', count: 1 },
      { lane: 'in-flight', title: 'IN FLIGHT', count: 3 },
      { lane: 'ready-to-clean', title: 'READY TO CLEAN', count: 0 },
    ],
    counts: {
      total: 5,
      working: 2,
      needs_you: 1,
      ready: 1,
      idle: 1,
      to_clean: 0,
      queued: 0,
      summary: '2 working · 1 needs you · 1 ready · 1 idle',
    },
  };
}

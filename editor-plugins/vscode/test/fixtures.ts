// Board fixtures in the serde form of `owt-protocol`.

import type { Board, SessionView } from '../src/protocol';

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
        sessions: [
          session({ name: 'fix-login', status: 'needs-input', status_text: 'needs input', lane: 'needs-you', provider: 'codex', overlaps: 1 }),
        ],
      },
      {
        lane: 'ready-to-ship',
        title: 'READY TO SHIP',
        sessions: [
          session({ name: 'add-jwt', status: 'done', status_text: 'done', lane: 'ready-to-ship', ahead: 3, changed_files: 4, overlaps: 2 }),
        ],
      },
      {
        lane: 'in-flight',
        title: 'IN FLIGHT',
        sessions: [
          session({ name: 'refactor-billing', ahead: 1, changed_files: 2 }),
          session({ name: 'docs', status: 'starting', status_text: 'starting' }),
          session({ name: 'tests', status: 'idle', status_text: 'idle', provider: 'aider' }),
        ],
      },
    ],
  };
}

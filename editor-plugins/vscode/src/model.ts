// The pure model of the Agents view: Board → tree nodes, and the status bar
// text. No `vscode` import, so it is unit-tested under plain Node.
//
// It shows what the server decided and decides nothing itself: lanes, their
// titles, order and counts, the status bar counts and every session's
// actions come in the Board (`owt_protocol::Board`, `SessionView.actions`).

import type { Board, ChecksView, DiffFile, DiffReport, Lane, PrView, SessionAction, SessionView, TokenUsage } from './protocol';

export type { SessionAction };

export interface LaneNode {
  kind: 'lane';
  /** Stable tree id. */
  id: string;
  lane: Lane;
  /** `NEEDS YOU`, as the CLI board prints it. */
  label: string;
  /** Number of sessions, e.g. `2 sessions`. */
  description: string;
  contextValue: string;
  sessions: SessionNode[];
}

export interface SessionNode {
  kind: 'session';
  /** Stable tree id (from the session id, not its position). */
  id: string;
  label: string;
  /** `status · provider · +N commits · M overlaps · 12k tok $0.04`. */
  description: string;
  /** Plain text: task, branch, worktree, … */
  tooltip: string;
  /** `owt.session:attach:peek:…`; menus match `viewItem =~ /:attach\b/`. */
  contextValue: string;
  actions: SessionAction[];
  /** Name of a ThemeIcon (codicon) for the status. */
  icon: string;
  session: SessionView;
}

export type TreeNode = LaneNode | SessionNode;

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** A count at a glance, as the CLI prints it: `950`, `12.3k`, `456k`, `4.5M`. */
export function compactCount(n: number): string {
  if (n < 1000) return `${n}`;
  if (n < 10_000) return `${(n / 1e3).toFixed(1)}k`;
  if (n < 1_000_000) return `${(n / 1e3).toFixed(0)}k`;
  if (n < 10_000_000) return `${(n / 1e6).toFixed(1)}M`;
  if (n < 1_000_000_000) return `${(n / 1e6).toFixed(0)}M`;
  return `${(n / 1e9).toFixed(1)}G`;
}

/** US dollars: cents above a dime, else two significant digits. */
export function dollars(usd: number): string {
  if (usd === 0 || Math.abs(usd) >= 0.1) return `$${usd.toFixed(2)}`;
  const digits = Math.min(8, Math.max(2, 1 - Math.floor(Math.log10(Math.abs(usd)))));
  return `$${usd.toFixed(digits)}`;
}

export function totalTokens(u: TokenUsage): number {
  return u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens;
}

/** `12.3k tok` or `1.2M tok $0.42`, as on the CLI board. */
export function usageFigure(u: TokenUsage): string {
  const cost = u.cost_usd === null || u.cost_usd === undefined ? '' : ` ${dollars(u.cost_usd)}`;
  return `${compactCount(totalTokens(u))} tok${cost}`;
}

/** The one-line description of a session, in the CLI board's words. */
/** `PR #12`, `PR #12 draft`, `PR #12 merged`. */
export function prFigure(pr: PrView): string {
  if (pr.state === 'open') return `PR #${pr.number}${pr.draft ? ' draft' : ''}`;
  return `PR #${pr.number} ${pr.state}`;
}

/** `checks failed (exit code 1, fix 2 of 3)` … from the server's checks view. */
export function checksLine(c: ChecksView): string {
  const why = c.timed_out ? 'timed out' : c.exit_code !== null ? `exit code ${c.exit_code}` : '';
  const fixes = c.state === 'failed' && c.max_attempts > 0 ? `fix ${Math.min(c.attempt, c.max_attempts)} of ${c.max_attempts}` : '';
  const detail = [why, fixes].filter((p) => p.length > 0).join(', ');
  const stale = c.current || c.state === 'running' ? '' : '; the agent has had input since';
  return `checks ${c.state}${detail ? ` (${detail})` : ''}${stale}${c.log ? `, log ${c.log}` : ''}`;
}

export function sessionDescription(s: SessionView): string {
  const parts = [s.status_text || s.status, s.provider];
  if (s.ahead > 0) parts.push(`+${plural(s.ahead, 'commit')}`);
  if (s.overlaps > 0) parts.push(plural(s.overlaps, 'overlap'));
  // READY TO SHIP rows: the server's `review` (not-reviewed → "not reviewed").
  if (s.review) parts.push(s.review.replace('-', ' '));
  if (s.pr && !(s.status_text || '').includes('#')) parts.push(prFigure(s.pr));
  if (s.usage) parts.push(usageFigure(s.usage));
  return parts.filter((p) => p.length > 0).join(' · ');
}

export function sessionTooltip(s: SessionView): string {
  const lines = [s.name, '', s.task.trim(), ''];
  lines.push(`status: ${s.status_text || s.status}`);
  lines.push(`agent: ${s.provider}${s.agent_pid !== null ? ` (pid ${s.agent_pid})` : ''}`);
  lines.push(`branch: ${s.branch} (base ${s.base})`);
  lines.push(`${s.kind === 'branch' ? 'checkout' : 'worktree'}: ${s.worktree}`);
  lines.push(`changes: ${plural(s.ahead, 'commit')} ahead, ${plural(s.changed_files, 'file')} changed`);
  if (s.overlaps > 0) lines.push(`Conflict Guard: overlaps with ${plural(s.overlaps, 'participant')}`);
  if (s.usage) {
    const u = s.usage;
    const cost = u.cost_usd === null || u.cost_usd === undefined ? '' : `, ${dollars(u.cost_usd)}`;
    lines.push(
      `tokens: ${compactCount(totalTokens(u))} (in ${compactCount(u.input_tokens)}, out ${compactCount(u.output_tokens)}, ` +
        `cache ${compactCount(u.cache_read_tokens)} read, ${compactCount(u.cache_write_tokens)} written${cost})`,
    );
  }
  if (s.checks) lines.push(checksLine(s.checks));
  if (s.pr) {
    const pr = s.pr;
    lines.push(`pull request: ${prFigure(pr).slice(3)}, CI ${pr.ci}, review ${pr.review}: ${pr.url}`);
    if (pr.error) lines.push(`forge: ${pr.error}`);
  }
  if (s.conflicted_files.length > 0) {
    lines.push(`merge conflicts: ${s.conflicted_files.join(', ')}`);
  }
  return lines.join('\n');
}

/** The actions a session offers now (the server's `actions`), in menu order. */
export function sessionActions(s: SessionView): SessionAction[] {
  return s.actions.filter((a) => a.available).map((a) => a.action);
}

/** Why `action` is not available for `s` now (undefined when it is). */
export function unavailableReason(s: SessionView, action: SessionAction): string | undefined {
  const state = s.actions.find((a) => a.action === action);
  if (!state) return 'the server did not offer it';
  return state.available ? undefined : (state.reason ?? 'not available now');
}

/** One item of the Approve… quick pick: an option of the pending permission request. */
export interface PermissionChoice {
  label: string;
  description: string;
  /** The option's id (`owt.approve`'s `option`). */
  option: string;
  /** The request it answers (`owt.approve`'s `permission_id`). */
  permissionId: number;
}

/** The options of `s`'s pending ACP permission request, as the agent listed them. */
export function permissionChoices(s: SessionView): PermissionChoice[] {
  const p = s.permission;
  if (!p) return [];
  return p.options.map((o, i) => ({
    label: o.name,
    description: `${i + 1} · ${o.kind.replace('_', ' ')}`,
    option: o.id,
    permissionId: p.id,
  }));
}

/** `fix-login asks: Write a.txt (a.txt)`: the question of `s`'s pending request. */
export function permissionQuestion(s: SessionView): string {
  const p = s.permission;
  if (!p) return `${s.name} has no pending permission request`;
  const paths = p.paths.length > 0 ? ` (${p.paths.join(', ')})` : '';
  return `${s.name} asks: ${p.question}${paths}`;
}

/** What `owt.approve` / `owt.deny` answered (`PermissionAnswered`), as one line. */
export function answeredText(name: string, result: unknown): string | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  const r = result as { question?: unknown; name?: unknown };
  if (typeof r.question !== 'string' || typeof r.name !== 'string') return undefined;
  return `owt: ${name}: ${r.question} → ${r.name}`;
}

export function contextValue(actions: readonly SessionAction[]): string {
  return ['owt.session', ...actions].join(':');
}

/** Codicon name per status. */
export function statusIcon(s: SessionView): string {
  switch (s.status) {
    case 'starting':
      return 'loading~spin';
    case 'working':
      return 'sync~spin';
    case 'idle':
      return 'circle-outline';
    case 'needs-input':
      return 'bell';
    case 'blocked':
      return 'shield';
    case 'done':
      return 'pass';
    case 'exited':
      return s.exit_code === 0 ? 'circle-slash' : 'error';
    case 'conflict':
      return 'git-merge';
    case 'checks-running':
      return 'beaker';
    case 'checks-failed':
    case 'ci-failed':
      return 'warning';
    case 'changes-requested':
      return 'comment-discussion';
    case 'pr-open':
      return 'git-pull-request';
    case 'merged':
      return 'check-all';
    case 'queued':
      return 'watch';
    case 'unreachable':
      return 'debug-disconnect';
    case 'limited':
      return 'clock';
  }
}

export function sessionNode(s: SessionView): SessionNode {
  const actions = sessionActions(s);
  return {
    kind: 'session',
    id: `session:${s.id || s.name}`,
    label: s.name,
    description: sessionDescription(s),
    tooltip: sessionTooltip(s),
    contextValue: contextValue(actions),
    actions,
    icon: statusIcon(s),
    session: s,
  };
}

/** Top-level nodes: one per lane the server sent (non-empty, in priority order). */
export function boardToTree(board: Board | undefined): LaneNode[] {
  if (!board) return [];
  return board.lanes.map((l) => ({
    kind: 'lane' as const,
    id: `lane:${l.lane}`,
    lane: l.lane,
    label: l.title,
    description: plural(l.count, 'session'),
    contextValue: `owt.lane:${l.lane}`,
    sessions: l.sessions.map(sessionNode),
  }));
}

/**
 * What VS Code must be told after a new board: nothing, these lanes (their
 * row and their sessions), or the whole tree (`'root'`).
 */
export type TreeChange = 'none' | 'root' | LaneNode[];

/**
 * The Agents tree as VS Code holds it, and the least it must be told when
 * the board changes.
 *
 * VS Code forgets every element's handle when it refreshes the whole tree,
 * also while it is still asking for the children of lanes it got a moment
 * before; it then answers that lane with no children ("No tree item with id
 * '1/lane:…' found") and keeps drawing it expanded but empty. So the whole
 * tree is refreshed only when the lanes themselves change (one appears,
 * goes, or they reorder); otherwise the lanes that changed are refreshed as
 * elements, which keeps every lane's handle. A board equal to the last one
 * changes nothing, and while a whole-tree refresh is on its way no other is
 * asked for: VS Code reads the newest board when it asks for the lanes.
 */
export class TreeState {
  private board: Board | undefined;
  /** The lane objects VS Code got from the last `roots()` (refreshed in place). */
  private held: LaneNode[] = [];
  /** VS Code has asked for the lanes at least once. */
  private served = false;
  /** A whole-tree refresh was asked for and VS Code has not read the lanes since. */
  private rootPending = false;
  /** The board last shown or asked to be shown, as text (equal boards change nothing). */
  private shownKey = JSON.stringify(boardToTree(undefined));

  current(): Board | undefined {
    return this.board;
  }

  /** The lanes for VS Code's `getChildren()` of the root: the held objects, brought up to date. */
  roots(): LaneNode[] {
    const next = boardToTree(this.board);
    const byId = new Map(this.held.map((l) => [l.id, l]));
    this.held = next.map((l) => {
      const old = byId.get(l.id);
      return old ? Object.assign(old, l) : l;
    });
    this.served = true;
    this.rootPending = false;
    return this.held;
  }

  /** A whole-tree refresh was asked for and VS Code has not read the lanes since. */
  rootUnread(): boolean {
    return this.rootPending;
  }

  children(node: TreeNode | undefined): TreeNode[] {
    if (node === undefined) return this.roots();
    return node.kind === 'lane' ? node.sessions : [];
  }

  /** Takes a new board; says what VS Code must refresh. */
  setBoard(board: Board | undefined): TreeChange {
    this.board = board;
    const next = boardToTree(board);
    const key = JSON.stringify(next);
    if (key === this.shownKey) return 'none';
    this.shownKey = key;
    // Before VS Code first asks, and while a whole-tree refresh is on its
    // way, it will read this board when it asks for the lanes.
    if (!this.served || this.rootPending) return 'none';
    const sameLanes = next.length === this.held.length && next.every((l, i) => l.id === this.held[i]?.id);
    if (!sameLanes) {
      this.rootPending = true;
      return 'root';
    }
    const changed: LaneNode[] = [];
    next.forEach((l, i) => {
      const old = this.held[i] as LaneNode;
      if (JSON.stringify(old) !== JSON.stringify(l)) {
        Object.assign(old, l);
        changed.push(old);
      }
    });
    return changed.length > 0 ? changed : 'none';
  }
}

export function allSessions(board: Board | undefined): SessionView[] {
  return board ? board.lanes.flatMap((l) => l.sessions) : [];
}

export function findSession(board: Board | undefined, name: string): SessionView | undefined {
  return allSessions(board).find((s) => s.name === name);
}

export interface StatusBarModel {
  /** e.g. `owt: 3 working · 1 needs you`. */
  text: string;
  tooltip: string;
  /** Something waits for the human (NEEDS YOU is not empty). */
  attention: boolean;
}

export function statusBarModel(board: Board | undefined, connected = true): StatusBarModel {
  if (!connected) {
    return { text: 'owt: not running', tooltip: 'owt lsp is not running — click to show the Agents view', attention: false };
  }
  const c = board?.counts;
  if (!board || !c || c.total === 0) {
    return { text: 'owt: no agents', tooltip: 'No agent sessions — click to show the Agents view', attention: false };
  }
  const tooltip = [
    `${plural(c.total, 'agent session')} in ${board.repository}`,
    ...boardToTree(board).map((l) => `${l.label}: ${l.sessions.map((s) => s.label).join(', ')}`),
    '',
    'Click to show the Agents view',
  ].join('\n');
  return { text: `owt: ${c.summary}`, tooltip, attention: c.needs_you > 0 };
}

/** One line for an input box: whitespace runs collapsed, at most `max` chars. */
export function oneLine(text: string, max = 400): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * The `owt: New agent…` input box prefill for a selection: the selected text
 * on one line, then `(path:start-end)` with 1-based lines.
 */
export function taskPrefill(
  selection: string,
  relativePath: string | undefined,
  startLine1: number,
  endLine1: number,
): string {
  const text = oneLine(selection);
  if (!relativePath) return text;
  const lines = startLine1 === endLine1 ? `${startLine1}` : `${startLine1}-${endLine1}`;
  const where = `(${relativePath}:${lines})`;
  return text.length > 0 ? `${text} ${where}` : where;
}

// ---------------------------------------------------------------- review

/** URI scheme of the base versions the review diff shows (read-only). */
export const BASE_SCHEME = 'owt-base';

/** One row of VS Code's multi-file diff (`vscode.changes`), as URI strings. */
export interface ChangeResource {
  label: string;
  original: string;
  modified: string;
}

/**
 * `owt-base:` URI of the base side of `file` (no blob: an empty document).
 * Its path is the file's own path in the worktree (the old one of a
 * rename): VS Code's multi-file diff marks an entry renamed ("R", the base
 * struck through) when the two sides' paths differ, so only renames are.
 */
export function baseUri(report: DiffReport, file: DiffFile): string {
  const where = `${report.worktree.replace(/\/+$/, '')}/${file.old_path ?? file.path}`;
  const path = where.split('/').map(encodeURIComponent).join('/');
  // `session` and `path` (the agent's): where a comment made on this side goes.
  const query = new URLSearchParams({
    worktree: report.worktree,
    blob: file.base_blob ?? '',
    session: report.session,
    path: file.path,
  });
  return `${BASE_SCHEME}:${path}?${query.toString()}`;
}

/**
 * The parts of an `owt-base:` URI's query: where to read which blob, and
 * whose file (the session, the agent's path) it is the base of.
 */
export function parseBaseQuery(query: string): { worktree: string; blob: string; session: string; path: string } {
  const q = new URLSearchParams(query);
  return {
    worktree: q.get('worktree') ?? '',
    blob: q.get('blob') ?? '',
    session: q.get('session') ?? '',
    path: q.get('path') ?? '',
  };
}

/**
 * The resources of `owt/diff`'s report for `vscode.changes`: the base
 * version (an `owt-base:` document, empty for an added file) against the
 * agent's file (its `file:` URI; an empty base document for a deleted one).
 */
export function changesResources(report: DiffReport): ChangeResource[] {
  return report.files.map((f) => {
    const original = baseUri(report, f);
    const empty = baseUri(report, { ...f, base_blob: undefined });
    const modified = f.agent_uri ?? empty;
    return { label: f.agent_uri ?? original, original, modified };
  });
}

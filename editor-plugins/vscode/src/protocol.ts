// The wire types of `owt lsp` that the extension relies on. They mirror the
// serde form of the Rust crate `owt-protocol` (protocol/src/cli.rs and
// protocol/src/lsp.rs); keep them in step with it. No `vscode` import here:
// this module is shared by the extension and by the Node tests.

/** Display status of a session (`owt_protocol::Status`, kebab-case). */
export type Status =
  | 'starting'
  | 'working'
  | 'idle'
  | 'needs-input'
  | 'blocked'
  | 'done'
  | 'exited'
  | 'conflict';

/** Board lane (`owt_protocol::Lane`, kebab-case). */
export type Lane = 'needs-you' | 'ready-to-ship' | 'in-flight';

export type SessionKind = 'worktree' | 'branch';

/** `owt_protocol::SessionView`. */
export interface SessionView {
  name: string;
  id: string;
  task: string;
  branch: string;
  base: string;
  worktree: string;
  provider: string;
  kind: SessionKind;
  status: Status;
  status_text: string;
  lane: Lane;
  /** Unix time in milliseconds. */
  created_at: number;
  exit_code: number | null;
  host_lost: boolean;
  ahead: number;
  changed_files: number;
  overlaps: number;
  conflicted_files: string[];
  agent_pid: number | null;
  /** Tokens the agent recorded for this session; absent or null before any. */
  usage?: TokenUsage | null;
}

/** `owt_protocol::TokenUsage`: `input_tokens` excludes cache reads and writes. */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  /** US dollars, where the agent reports a cost. */
  cost_usd: number | null;
}

/** `owt_protocol::BoardLane`. */
export interface BoardLane {
  lane: Lane;
  title: string;
  sessions: SessionView[];
}

/** `owt_protocol::Board`: result of `owt/board`, params of `owt/boardChanged`. */
export interface Board {
  repository: string;
  /** Non-empty lanes only, in priority order. */
  lanes: BoardLane[];
}

/** `owt_protocol::lsp::Severities` (kebab-case keys). */
export interface Severities {
  overlap?: string;
  'hunk-overlap'?: string;
  conflict?: string;
}

/** `owt_protocol::lsp::InitializationOptions` (camelCase keys). */
export interface InitializationOptions {
  openTerminal: boolean;
  severities?: Severities;
}

/** `owt_protocol::lsp::OpenTerminalParams`. */
export interface OpenTerminalParams {
  title: string;
  argv: string[];
  cwd: string;
  session: string;
}

/** `owt_protocol::lsp::OpenTerminalResult`. */
export interface OpenTerminalResult {
  opened: boolean;
}

/** `owt_protocol::lsp::CommandArgs`: the one argument of every owt command. */
export interface CommandArgs {
  session?: string;
  task?: string;
  text?: string;
  ai_tool?: string;
  uri?: string;
  path?: string;
  start_line?: number;
  end_line?: number;
  rebase?: boolean;
  force?: boolean;
}

export const METHOD_BOARD = 'owt/board';
export const METHOD_BOARD_CHANGED = 'owt/boardChanged';
export const METHOD_OPEN_TERMINAL = 'owt/openTerminal';

/** Command ids of `workspace/executeCommand` (`owt_protocol::lsp::commands`). */
export const Commands = {
  spawn: 'owt.spawn',
  attach: 'owt.attach',
  send: 'owt.send',
  peek: 'owt.peek',
  merge: 'owt.merge',
  ship: 'owt.ship',
  delete: 'owt.delete',
  openAgentFile: 'owt.openAgentFile',
} as const;

export type CommandId = (typeof Commands)[keyof typeof Commands];

export const ALL_COMMANDS: readonly CommandId[] = [
  Commands.spawn,
  Commands.attach,
  Commands.send,
  Commands.peek,
  Commands.merge,
  Commands.ship,
  Commands.delete,
  Commands.openAgentFile,
];

export const SEVERITY_VALUES = ['error', 'warning', 'information', 'hint'] as const;
export type SeverityValue = (typeof SEVERITY_VALUES)[number];

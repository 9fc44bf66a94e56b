// The Review command's flow, apart from the `vscode` module so Node tests
// drive it against the real `owt lsp`: ask the server for the agent's diff
// (`owt/diff`), open VS Code's multi-file diff editor (`vscode.changes`)
// over the base versions and the agent's files, then mark the files
// reviewed as they were in that diff (its `snapshot`).

import { changesResources, parseBaseQuery, type ChangeResource } from './model';
import { Commands, type DiffReport } from './protocol';

/** What the flow needs from VS Code and the language client. */
export interface ReviewHost {
  /** `owt/diff {session}`; undefined when the server cannot answer (it said why). */
  diff(session: string): Promise<DiffReport | undefined>;
  /** `vscode.commands.executeCommand(command, ...args)`. */
  executeCommand(command: string, ...args: unknown[]): Promise<unknown>;
  /** A URI string as the commands take it (`vscode.Uri.parse`). */
  uri(value: string): unknown;
  /** `workspace/executeCommand` of a server command. */
  execute(command: string, args: Record<string, unknown>): Promise<unknown>;
  /** An information message. */
  info(message: string): void;
}

/** How the review ended. */
export type ReviewOutcome = 'no-diff' | 'no-changes' | 'changes' | 'diff-per-file';

/** The multi-file diff editor's title: the agent and its counts. */
export function reviewTitle(report: DiffReport): string {
  return `owt: review ${report.session} (+${report.additions} −${report.deletions} against ${report.base})`;
}

/**
 * Reviews `session`: its diff in the multi-file diff editor, then every
 * file marked reviewed as shown. VS Code before 1.85 has no
 * `vscode.changes`: there the first file opens in a diff editor
 * (`vscode.diff`) and nothing is marked (the others were not shown).
 */
export async function reviewSession(session: string, host: ReviewHost): Promise<ReviewOutcome> {
  const report = await host.diff(session);
  if (!report) return 'no-diff';
  if (report.files.length === 0) {
    host.info(`owt: ${session} has no changes against ${report.base}.`);
    return 'no-changes';
  }
  const resources: ChangeResource[] = changesResources(report);
  const triples = resources.map((r) => [host.uri(r.label), host.uri(r.original), host.uri(r.modified)]);
  try {
    await host.executeCommand('vscode.changes', reviewTitle(report), triples);
  } catch {
    const first = resources[0];
    await host.executeCommand(
      'vscode.diff',
      host.uri(first.original),
      host.uri(first.modified),
      `${reviewTitle(report)}: ${report.files[0].path}`,
    );
    host.info(
      `owt: this VS Code has no multi-file diff editor (1.85+); showing ${report.files[0].path} only, nothing marked reviewed (\`owt review ${session}\` lists every change).`,
    );
    return 'diff-per-file';
  }
  await host.execute(Commands.markReviewed, { session, snapshot: report.snapshot });
  return 'changes';
}

/**
 * The arguments of `command` as they go to the server: for the code
 * action "Ask <agent> to change this…" (`owt.comment` without text), the
 * comment asked for with `ask` (an input box) added, or undefined when
 * none was given (nothing is sent); other commands as they are.
 */
export async function withComment(
  command: string,
  args: unknown[],
  ask: (title: string, prompt: string) => Promise<string | undefined>,
): Promise<unknown[] | undefined> {
  const first = (args[0] ?? {}) as { session?: string; text?: string };
  if (command !== Commands.comment || typeof args[0] !== 'object' || first.text) return args;
  const text = await ask(
    `owt: Ask ${first.session ?? 'the agent'} to change this`,
    'Your comment, typed into the agent with the file, lines and their text',
  );
  if (text === undefined || text.trim().length === 0) return undefined;
  return [{ ...first, text }, ...args.slice(1)];
}

/**
 * The `owt.comment` arguments of "Ask <agent> to change this…" on lines
 * `first..last` (1-based) of the base side of the review diff (an
 * `owt-base:` document, given by its URI's query): the server carries
 * the base lines onto the agent's copy through the diff (`side: "base"`).
 * Undefined for a base document that is no agent's file's (an added one).
 */
export function baseCommentArgs(
  query: string,
  first: number,
  last: number,
): { session: string; path: string; side: 'base'; start_line: number; end_line: number } | undefined {
  const { session, path, blob } = parseBaseQuery(query);
  if (!session || !path || !blob) return undefined;
  return { session, path, side: 'base', start_line: first, end_line: last };
}

/**
 * The 1-based first and last lines of a selection from 0-based positions
 * (a selection ending at the start of a line leaves that line out).
 */
export function selectedLines(start: number, end: number, endCharacter: number): [number, number] {
  const last = endCharacter === 0 && end > start ? end - 1 : end;
  return [start + 1, last + 1];
}

// The owt VS Code extension: starts `owt lsp`, shows the Agents view and the
// status bar item, opens attach terminals for `owt/openTerminal`.
//
// The server declares the `owt.*` commands in `executeCommandProvider`, so the
// language client registers them itself; this file registers only `owt.ui.*`
// commands, which call `workspace/executeCommand` through the client.

import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  NotificationType,
  RequestType,
  RequestType0,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';

import {
  boardToTree,
  findSession,
  allSessions,
  answeredText,
  BASE_SCHEME,
  parseBaseQuery,
  permissionChoices,
  permissionQuestion,
  sessionActions,
  sessionDescription,
  statusBarModel,
  taskPrefill,
  TreeState,
  unavailableReason,
  type SessionAction,
  type SessionNode,
  type TreeNode,
} from './model';
import { baseCommentArgs, reviewSession, selectedLines, withComment } from './review';
import {
  Commands,
  METHOD_BOARD,
  METHOD_BOARD_CHANGED,
  METHOD_OPEN_TERMINAL,
  METHOD_DIFF,
  type Board,
  type DiffParams,
  type DiffReport,
  type CommandArgs,
  type CommandId,
  type InitializationOptions,
  type OpenTerminalParams,
  type OpenTerminalResult,
  type Severities,
  type SessionView,
} from './protocol';

const VIEW_ID = 'owt.agents';
const execFileAsync = promisify(execFile);

const BoardRequest = new RequestType0<Board, void>(METHOD_BOARD);
const BoardChanged = new NotificationType<Board>(METHOD_BOARD_CHANGED);
const OpenTerminal = new RequestType<OpenTerminalParams, OpenTerminalResult, void>(METHOD_OPEN_TERMINAL);
const DiffRequest = new RequestType<DiffParams, DiffReport, void>(METHOD_DIFF);

// ---------------------------------------------------------------- settings

function owtPath(): string {
  const configured = vscode.workspace.getConfiguration('owt').get<string>('path', 'owt').trim();
  if (configured.length === 0) return 'owt';
  // `~/.cargo/bin/owt`, as people write it: spawn() does not expand `~`.
  return configured.startsWith('~/') ? path.join(os.homedir(), configured.slice(2)) : configured;
}

/**
 * The Settings editor at `owt.path`. In a remote window (SSH, containers,
 * code-server) the binary is looked up on the remote machine, and the User
 * tab does not list machine settings: open the Remote tab there.
 */
async function openPathSetting(): Promise<void> {
  if (vscode.env.remoteName !== undefined) {
    await vscode.commands.executeCommand('workbench.action.openRemoteSettings', { query: 'owt.path' });
  } else {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'owt.path');
  }
}

/**
 * The file `command` runs, as spawn() finds it (a path, relative to `cwd`,
 * or a bare name on PATH); undefined when there is none.
 */
function findExecutable(command: string, cwd: string | undefined): string | undefined {
  const runnable = (file: string): boolean => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes('/')) {
    const file = path.resolve(cwd ?? process.cwd(), command);
    return runnable(file) ? file : undefined;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir.length > 0 && runnable(path.join(dir, command))) return path.join(dir, command);
  }
  return undefined;
}

function severities(): Severities {
  const c = vscode.workspace.getConfiguration('owt.severity');
  return {
    overlap: c.get<string>('overlap', 'information'),
    'hunk-overlap': c.get<string>('hunkOverlap', 'warning'),
    conflict: c.get<string>('conflict', 'error'),
  };
}

function initializationOptions(): InitializationOptions {
  return { openTerminal: true, severities: severities() };
}

// ------------------------------------------------------------ agents view

class AgentsTree implements vscode.TreeDataProvider<TreeNode> {
  // What VS Code holds and what it must be told of a new board: see TreeState.
  private readonly state = new TreeState();
  private readonly changed = new vscode.EventEmitter<TreeNode | TreeNode[] | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  current(): Board | undefined {
    return this.state.current();
  }

  private recheck: ReturnType<typeof setTimeout> | undefined;

  setBoard(board: Board | undefined): void {
    const change = this.state.setBoard(board);
    if (change === 'root') this.refreshRoot(0);
    else if (change !== 'none') this.changed.fire(change);
  }

  /**
   * Asks VS Code to read the lanes again, and asks again (0.5, 1, 2, 4, 8 s
   * later) while it has not: VS Code folds a whole-tree refresh into a read
   * of the lanes already under way, which returns the board from before,
   * and nothing else would ever ask again (the view stayed empty beside a
   * status bar counting sessions). Once VS Code reads, nothing more.
   */
  private refreshRoot(attempt: number): void {
    this.changed.fire(undefined);
    clearTimeout(this.recheck);
    if (attempt >= ROOT_REFRESH_TRIES) return;
    this.recheck = setTimeout(() => {
      if (this.state.rootUnread()) this.refreshRoot(attempt + 1);
    }, ROOT_REFRESH_FIRST_MS * 2 ** attempt);
  }

  /** From the held snapshot, synchronously. */
  getChildren(node?: TreeNode): TreeNode[] {
    return this.state.children(node);
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    if (node.kind === 'lane') {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = node.id;
      item.description = node.description;
      item.contextValue = node.contextValue;
      return item;
    }
    const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.contextValue = node.contextValue;
    item.iconPath = new vscode.ThemeIcon(node.icon);
    return item;
  }

  dispose(): void {
    clearTimeout(this.recheck);
    this.changed.dispose();
  }
}

/** How often, and after how long first, an unread whole-tree refresh is asked for again. */
const ROOT_REFRESH_TRIES = 5;
const ROOT_REFRESH_FIRST_MS = 500;

// --------------------------------------------------------------- terminals

class Terminals implements vscode.Disposable {
  private readonly bySession = new Map<string, vscode.Terminal>();
  private readonly subscription: vscode.Disposable;

  constructor() {
    this.subscription = vscode.window.onDidCloseTerminal((t) => {
      for (const [session, terminal] of this.bySession) {
        if (terminal === t) this.bySession.delete(session);
      }
    });
  }

  /** `owt/openTerminal`: show the session's live terminal, or open one beside the editor. */
  open(params: OpenTerminalParams): OpenTerminalResult {
    const session = params.session || params.title;
    // Ours, or one with the session's name that survived a reload of the extension.
    const existing =
      this.bySession.get(session) ??
      vscode.window.terminals.find((t) => t.name === session && t.exitStatus === undefined);
    if (existing && existing.exitStatus === undefined) {
      this.bySession.set(session, existing);
      existing.show(false);
      return { opened: true };
    }
    const [shellPath, ...shellArgs] = params.argv;
    if (shellPath === undefined) return { opened: false };
    const terminal = vscode.window.createTerminal({
      name: session,
      shellPath,
      shellArgs,
      cwd: params.cwd || undefined,
      // Beside the file being edited; with no editor open, in the editor
      // area itself (Beside would leave an empty, focused group next to it).
      location: {
        viewColumn: vscode.window.activeTextEditor ? vscode.ViewColumn.Beside : vscode.ViewColumn.Active,
        preserveFocus: false,
      },
    });
    this.bySession.set(session, terminal);
    // Focus it once its process runs: focusing a terminal editor whose
    // view is not drawn yet does nothing, and keys would go nowhere.
    void Promise.resolve(terminal.processId).then(() => terminal.show(false));
    return { opened: true };
  }

  dispose(): void {
    this.subscription.dispose();
    this.bySession.clear();
  }
}

// ---------------------------------------------------------------- the client

class Owt implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly tree = new AgentsTree();
  private readonly terminals = new Terminals();
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  private readonly output = vscode.window.createOutputChannel('owt');
  readonly view: vscode.TreeView<TreeNode>;
  /** `owt.server` context key: which welcome the empty Agents view shows. */
  private serverState: 'starting' | 'running' | 'stopped' | undefined;
  private starting = false;

  constructor() {
    this.view = vscode.window.createTreeView(VIEW_ID, { treeDataProvider: this.tree, showCollapseAll: false });
    this.status.command = 'owt.ui.showBoard';
    this.status.name = 'owt agents';
    this.render(false);
    this.status.show();
  }

  private render(connected: boolean): void {
    const board = this.tree.current();
    const m = statusBarModel(board, connected);
    this.status.text = `$(hubot) ${m.text}`;
    this.status.tooltip = m.tooltip;
    this.status.backgroundColor = m.attention ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    const needsYou = boardToTree(board).find((l) => l.lane === 'needs-you')?.sessions.length ?? 0;
    this.view.badge = needsYou > 0 ? { value: needsYou, tooltip: `${needsYou} need you` } : undefined;
    const state = connected ? 'running' : this.starting ? 'starting' : 'stopped';
    if (state !== this.serverState) {
      this.serverState = state;
      void vscode.commands.executeCommand('setContext', 'owt.server', state);
    }
  }

  private connected(): boolean {
    return this.client?.state === State.Running;
  }

  private setBoard(board: Board | undefined): void {
    this.tree.setBoard(board);
    this.render(this.connected());
  }

  async start(): Promise<void> {
    if (this.client || this.starting) return;
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      this.render(false);
      return;
    }
    this.starting = true;
    try {
      await this.startIn(folder);
    } finally {
      this.starting = false;
      this.render(this.connected());
    }
  }

  private async startIn(folder: vscode.WorkspaceFolder): Promise<void> {
    const command = owtPath();
    const cwd = folder.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
    if (findExecutable(command, cwd) === undefined) {
      this.render(false);
      void this.binaryMissing(command);
      return;
    }
    const serverOptions: ServerOptions = {
      // No `transport`: TransportKind.stdio would append `--stdio` to the args.
      command,
      args: ['lsp'],
      options: { cwd },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      initializationOptions: initializationOptions(),
      outputChannel: this.output,
      middleware: {
        // "Ask <agent> to change this…": the comment is asked for here.
        executeCommand: async (command, args, next) => {
          const asked = await withComment(command, args, (title, prompt) =>
            Promise.resolve(vscode.window.showInputBox({ title, prompt, ignoreFocusOut: true })),
          );
          return asked === undefined ? undefined : next(command, asked);
        },
      },
      errorHandler: {
        error: (_error, _message, count) => ({
          action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
        }),
        // A server that dies is not restarted behind the person's back (a
        // crash loop would hide itself): the board empties, the status bar
        // says so, and a restart is one click away.
        closed: () => {
          this.tree.setBoard(undefined);
          void this.serverStopped();
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    const client = new LanguageClient('owt', 'owt', serverOptions, clientOptions);
    this.client = client;
    client.onRequest(OpenTerminal, (params) => this.terminals.open(params));
    client.onNotification(BoardChanged, (board) => this.setBoard(board));
    client.onDidChangeState((e) => this.render(e.newState === State.Running));
    try {
      await client.start();
      this.setBoard(await client.sendRequest(BoardRequest));
    } catch (err) {
      this.render(false);
      // Not awaited: a restart (say, after fixing owt.path) must not wait
      // for this message to be dismissed.
      void this.startFailed(command, err);
    }
  }

  private async startFailed(command: string, err: unknown): Promise<void> {
    const choice = await vscode.window.showErrorMessage(
      `owt: could not start \`${command} lsp\`: ${messageOf(err)}`,
      'Open Settings',
      'Show Output',
    );
    if (choice === 'Open Settings') await openPathSetting();
    if (choice === 'Show Output') this.output.show();
  }

  private async binaryMissing(command: string): Promise<void> {
    const message = command.includes('/')
      ? `owt: \`${command}\` (the \`owt.path\` setting) is not an executable file. Point \`owt.path\` at the owt binary.`
      : `owt: \`${command}\` was not found on PATH. Install owt, or set \`owt.path\` to the owt binary (e.g. ~/.cargo/bin/owt).`;
    const choice = await vscode.window.showErrorMessage(message, 'Open Settings');
    if (choice === 'Open Settings') await openPathSetting();
  }

  private async serverStopped(): Promise<void> {
    const choice = await vscode.window.showErrorMessage(
      'owt: `owt lsp` stopped unexpectedly; the agents keep running. The owt output shows why.',
      'Restart',
      'Show Output',
    );
    if (choice === 'Restart') await this.restart();
    if (choice === 'Show Output') this.output.show();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.tree.setBoard(undefined);
    this.render(false);
    if (client) {
      try {
        await client.stop();
      } catch {
        // already stopped or never started: nothing to undo
      }
      await client.dispose();
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  board(): Board | undefined {
    return this.tree.current();
  }

  async refresh(): Promise<void> {
    const client = this.running();
    if (client) this.setBoard(await client.sendRequest(BoardRequest));
  }

  private running(): LanguageClient | undefined {
    if (this.client?.state === State.Running) return this.client;
    void vscode.window.showWarningMessage('owt: `owt lsp` is not running.', 'Restart').then((c) => {
      if (c === 'Restart') void this.restart();
    });
    return undefined;
  }

  /** `owt/diff`: the agent's whole working state against its base. */
  async diff(session: string): Promise<DiffReport | undefined> {
    const client = this.running();
    if (!client) return undefined;
    try {
      return await client.sendRequest(DiffRequest, { session });
    } catch (err) {
      void vscode.window.showErrorMessage(`owt: cannot diff ${session}: ${messageOf(err)}`);
      return undefined;
    }
  }

  /** `workspace/executeCommand` of a server-declared owt command. */
  async execute(command: CommandId, args: CommandArgs): Promise<unknown> {
    const client = this.running();
    if (!client) return undefined;
    try {
      return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] });
    } catch (err) {
      void vscode.window.showErrorMessage(`owt: ${command} failed: ${messageOf(err)}`);
      return undefined;
    }
  }

  dispose(): void {
    void this.stop();
    this.view.dispose();
    this.tree.dispose();
    this.terminals.dispose();
    this.status.dispose();
    this.output.dispose();
  }
}

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** Text a command returned (a string, or an object with `text` / `screen`), if any. */
function textOf(result: unknown): string | undefined {
  if (typeof result === 'string') return result;
  if (result !== null && typeof result === 'object') {
    for (const key of ['text', 'screen', 'message']) {
      const value: unknown = (result as Record<string, unknown>)[key];
      if (typeof value === 'string') return value;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------- commands

/**
 * The session a `owt.ui.*` command is about: the tree row, a name, or a pick
 * among the sessions whose `actions` allow `action` (a named session that
 * does not allow it gets the server's reason instead).
 */
async function pickSession(
  owt: Owt,
  arg: unknown,
  placeHolder: string,
  action: SessionAction,
): Promise<SessionView | undefined> {
  const board = owt.board();
  let named: SessionView | undefined;
  if (arg !== null && typeof arg === 'object' && 'kind' in arg && (arg as TreeNode).kind === 'session') {
    named = (arg as SessionNode).session;
  } else if (typeof arg === 'string') {
    named = findSession(board, arg);
  }
  if (named) {
    const why = unavailableReason(named, action);
    if (why === undefined) return named;
    void vscode.window.showWarningMessage(`owt: cannot ${action} ${named.name}: ${why}`);
    return undefined;
  }
  if (typeof arg === 'string') return undefined;
  const sessions = allSessions(board).filter((s) => sessionActions(s).includes(action));
  if (sessions.length === 0) {
    void vscode.window.showInformationMessage(`owt: no agent session to ${action} now.`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    sessions.map((s) => ({ label: s.name, description: sessionDescription(s), detail: s.task, session: s })),
    { placeHolder, matchOnDescription: true, matchOnDetail: true },
  );
  return picked?.session;
}

async function newAgent(owt: Owt): Promise<void> {
  const args: CommandArgs = {};
  let value = '';
  const editor = vscode.window.activeTextEditor;
  if (editor && !editor.selection.isEmpty) {
    const sel = editor.selection;
    const doc = editor.document;
    // An end at column 0 does not include that line.
    const endLine = sel.end.character === 0 && sel.end.line > sel.start.line ? sel.end.line - 1 : sel.end.line;
    const rel = doc.uri.scheme === 'file' ? vscode.workspace.asRelativePath(doc.uri, false) : undefined;
    value = taskPrefill(doc.getText(sel), rel, sel.start.line + 1, endLine + 1);
    // The prefilled task already carries the file, lines and selected text
    // (the person sees and edits it), so no uri/lines are sent: the server
    // would append the same context again.
  }
  const task = await vscode.window.showInputBox({
    title: 'owt: New agent',
    prompt: 'The task, sent to the agent as its first prompt',
    placeHolder: 'Fix the login redirect',
    value,
    valueSelection: [0, 0],
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim().length === 0 ? 'Describe the task' : undefined),
  });
  if (task === undefined) return;
  args.task = task.trim();
  await owt.execute(Commands.spawn, args);
}

async function confirm(message: string, detail: string, ...actions: string[]): Promise<string | undefined> {
  return vscode.window.showWarningMessage(message, { modal: true, detail }, ...actions);
}

let active: Owt | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const owt = new Owt();
  active = owt;
  context.subscriptions.push(owt);

  const register = (id: string, fn: (arg?: unknown) => Promise<void>): void => {
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  };

  register('owt.ui.newAgent', () => newAgent(owt));
  register('owt.ui.showBoard', async () => {
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  });
  register('owt.ui.refresh', () => owt.refresh());
  register('owt.ui.restart', () => owt.restart());

  register('owt.ui.attach', async (arg) => {
    const s = await pickSession(owt, arg, 'Attach to which agent?', 'attach');
    if (s) await owt.execute(Commands.attach, { session: s.name });
  });
  register('owt.ui.peek', async (arg) => {
    const s = await pickSession(owt, arg, 'Peek at which agent?', 'peek');
    if (!s) return;
    const text = textOf(await owt.execute(Commands.peek, { session: s.name }));
    if (text !== undefined) {
      const doc = await vscode.workspace.openTextDocument({ content: text, language: 'plaintext' });
      await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true });
    }
  });
  register('owt.ui.send', async (arg) => {
    const s = await pickSession(owt, arg, 'Send text to which agent?', 'send');
    if (!s) return;
    const text = await vscode.window.showInputBox({
      title: `owt: Send to ${s.name}`,
      prompt: 'Typed into the agent’s terminal, followed by Enter',
      ignoreFocusOut: true,
    });
    if (text !== undefined && text.length > 0) await owt.execute(Commands.send, { session: s.name, text });
  });
  register('owt.ui.approve', async (arg) => {
    const s = await pickSession(owt, arg, 'Answer which agent’s permission request?', 'approve');
    if (!s) return;
    const picked = await vscode.window.showQuickPick(permissionChoices(s), {
      title: `owt: Approve (${s.name})`,
      placeHolder: permissionQuestion(s),
      ignoreFocusOut: true,
    });
    if (!picked) return;
    const args = { session: s.name, option: picked.option, permission_id: picked.permissionId };
    const text = answeredText(s.name, await owt.execute(Commands.approve, args));
    if (text) void vscode.window.showInformationMessage(text);
  });
  register('owt.ui.deny', async (arg) => {
    const s = await pickSession(owt, arg, 'Deny which agent’s permission request?', 'deny');
    if (!s) return;
    const args = { session: s.name, permission_id: s.permission?.id };
    const text = answeredText(s.name, await owt.execute(Commands.deny, args));
    if (text) void vscode.window.showInformationMessage(text);
  });
  register('owt.ui.merge', async (arg) => {
    const s = await pickSession(owt, arg, 'Merge which agent’s branch?', 'merge');
    if (!s) return;
    const c = await confirm(`Merge ${s.branch} into ${s.base}?`, s.task, 'Merge', 'Rebase');
    if (c) await owt.execute(Commands.merge, { session: s.name, rebase: c === 'Rebase' });
  });
  register('owt.ui.resume', async (arg) => {
    const s = await pickSession(owt, arg, 'Resume which agent?', 'resume');
    if (!s) return;
    await owt.execute(Commands.resume, { session: s.name });
  });
  register('owt.ui.ship', async (arg) => {
    const s = await pickSession(owt, arg, 'Ship which agent?', 'ship');
    if (!s) return;
    const c = await confirm(
      `Ship ${s.name}?`,
      `Commits its work, merges ${s.branch} into ${s.base}, then deletes the session.\n\n${s.task}`,
      'Ship',
    );
    if (c) await owt.execute(Commands.ship, { session: s.name });
  });
  register('owt.ui.delete', async (arg) => {
    const s = await pickSession(owt, arg, 'Delete which agent?', 'delete');
    if (!s) return;
    const c = await confirm(
      `Delete ${s.name}?`,
      `Stops the agent and removes its worktree ${path.basename(s.worktree)} and branch ${s.branch}. ` +
        'Without force, owt refuses to drop uncommitted work.',
      'Delete',
      'Delete (force)',
    );
    if (c) await owt.execute(Commands.delete, { session: s.name, force: c === 'Delete (force)' });
  });

  // The base side of the review diff: `git cat-file blob` in the worktree.
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(BASE_SCHEME, {
      provideTextDocumentContent: async (uri) => {
        const { worktree, blob } = parseBaseQuery(uri.query);
        if (!blob) return '';
        const { stdout } = await execFileAsync('git', ['-C', worktree, 'cat-file', 'blob', blob], {
          maxBuffer: 64 * 1024 * 1024,
        });
        return stdout;
      },
    }),
  );
  // "Ask <agent> to change this…" on the base side of the review diff
  // (the agent's side has the server's code action).
  register('owt.ui.commentOnBase', async () => {
    const editor = vscode.window.activeTextEditor;
    const sel = editor?.selection;
    const args =
      editor && sel && editor.document.uri.scheme === BASE_SCHEME
        ? baseCommentArgs(editor.document.uri.query, ...selectedLines(sel.start.line, sel.end.line, sel.end.character))
        : undefined;
    if (!args) {
      void vscode.window.showInformationMessage(
        'owt: select lines on the base side of a review diff (on the agent’s side, use the code action "owt: ask … to change this…").',
      );
      return;
    }
    const asked = await withComment(Commands.comment, [args], (title, prompt) =>
      Promise.resolve(vscode.window.showInputBox({ title, prompt, ignoreFocusOut: true })),
    );
    if (asked) await owt.execute(Commands.comment, asked[0] as CommandArgs);
  });
  register('owt.ui.review', async (arg) => {
    let name: string | undefined;
    if (arg !== null && typeof arg === 'object' && 'kind' in arg && (arg as TreeNode).kind === 'session') {
      name = (arg as SessionNode).session.name;
    } else if (typeof arg === 'string') {
      name = arg;
    } else {
      const sessions = allSessions(owt.board());
      const picked = await vscode.window.showQuickPick(
        sessions.map((s) => ({ label: s.name, description: sessionDescription(s), detail: s.task })),
        { placeHolder: 'Review which agent?' },
      );
      name = picked?.label;
    }
    if (!name) return;
    // Shown whole: every file is then reviewed as it was in this diff (a
    // file the agent changed since stays not reviewed).
    await reviewSession(name, {
      diff: (session) => owt.diff(session),
      executeCommand: (command, ...args) => Promise.resolve(vscode.commands.executeCommand(command, ...args)),
      uri: (value) => vscode.Uri.parse(value),
      execute: (command, args) => owt.execute(command as CommandId, args as CommandArgs),
      info: (message) => void vscode.window.showInformationMessage(message),
    });
  });

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('owt.path') || e.affectsConfiguration('owt.severity')) void owt.restart();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void owt.start()),
  );

  void owt.start();
}

export async function deactivate(): Promise<void> {
  // Stop the server cleanly (shutdown + exit) before VS Code disposes the rest.
  const owt = active;
  active = undefined;
  await owt?.stop();
}

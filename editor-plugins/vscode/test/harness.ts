// A hermetic `owt lsp` under test: temp HOME / OWT_HOME, a real git repo with
// a fake agent, and a vscode-jsonrpc connection over the server's stdio.
// Every wait has a deadline and fails loudly, with the server's stderr.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';

/** The extension's folder (this file runs from `out/test/`). */
export const EXTENSION_DIR = path.resolve(__dirname, '..', '..');
/** The owt repository root. */
export const REPO_ROOT = path.resolve(EXTENSION_DIR, '..', '..');

/** `$OWT_BIN`, else `target/debug/owt` of this repository. Fails loudly if missing. */
export function owtBin(): string {
  const fromEnv = process.env.OWT_BIN;
  const bin = fromEnv && fromEnv.length > 0 ? path.resolve(fromEnv) : path.join(REPO_ROOT, 'target', 'debug', 'owt');
  try {
    fs.accessSync(bin, fs.constants.X_OK);
  } catch {
    throw new Error(
      `owt binary not found or not executable at ${bin}` +
        (fromEnv ? ' (from $OWT_BIN)' : ' — build it with `cargo build -p owt` at the repository root, or set $OWT_BIN'),
    );
  }
  return bin;
}

export function idleAgent(): string {
  const script = path.join(REPO_ROOT, 'tests', 'data', 'idle-agent.sh');
  if (!fs.existsSync(script)) throw new Error(`fake agent script missing: ${script}`);
  return script;
}

export class TestEnv {
  readonly root: string;
  readonly home: string;
  readonly owtHome: string;
  readonly env: NodeJS.ProcessEnv;

  constructor() {
    // Short paths: session sockets live under $OWT_HOME/run (limit ~100 bytes).
    this.root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'owt-vsc-')));
    this.home = path.join(this.root, 'home');
    this.owtHome = path.join(this.root, 'owt');
    fs.mkdirSync(this.home);
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of ['XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'RUST_LOG', 'TMUX', 'TMUX_PANE', 'OWT_BIN', 'OWT_SESSION']) delete env[k];
    Object.assign(env, {
      HOME: this.home,
      OWT_HOME: this.owtHome,
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_CONFIG_SYSTEM: '/dev/null',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'Test',
      GIT_AUTHOR_EMAIL: 'test@example.com',
      GIT_COMMITTER_NAME: 'Test',
      GIT_COMMITTER_EMAIL: 'test@example.com',
      GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
    });
    this.env = env;
  }

  run(cmd: string, args: readonly string[], cwd: string): string {
    try {
      return execFileSync(cmd, args, { cwd, env: this.env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\nstdout: ${e.stdout ?? ''}\nstderr: ${e.stderr ?? ''}`);
    }
  }

  /** A repository with one commit on `main` and an `.owt.toml` declaring the `fake` agent (trusted: `owt trust`). */
  repo(name: string): string {
    const dir = path.join(this.root, name);
    fs.mkdirSync(dir);
    this.run('git', ['init', '-q', '-b', 'main'], dir);
    fs.writeFileSync(path.join(dir, 'README.md'), '# test repository\n');
    fs.writeFileSync(
      path.join(dir, '.owt.toml'),
      `[agent]\ndefault_tool = "fake"\n\n[tools.fake]\nbinary = ${JSON.stringify(idleAgent())}\n`,
    );
    this.run('git', ['add', '.'], dir);
    this.run('git', ['commit', '-q', '-m', 'initial'], dir);
    this.run(owtBin(), ['trust'], dir);
    return dir;
  }

  /** Pids of processes carrying this env's OWT_HOME (session hosts, agents, servers). */
  ourProcesses(): number[] {
    const needle = Buffer.from(`OWT_HOME=${this.owtHome}`);
    const pids: number[] = [];
    for (const entry of fs.readdirSync('/proc')) {
      const pid = Number(entry);
      if (!Number.isInteger(pid) || pid === process.pid) continue;
      let environ: Buffer;
      try {
        environ = fs.readFileSync(`/proc/${pid}/environ`);
      } catch {
        continue;
      }
      let start = 0;
      for (let i = 0; i <= environ.length; i++) {
        if (i === environ.length || environ[i] === 0) {
          if (environ.subarray(start, i).equals(needle)) {
            pids.push(pid);
            break;
          }
          start = i + 1;
        }
      }
    }
    return pids;
  }

  /** Kills what this env started (found by its unique OWT_HOME), removes the temp dir. */
  cleanup(): void {
    for (const pid of this.ourProcesses()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/** Something the server sent us, in arrival order. */
export interface Received {
  kind: 'notification' | 'request';
  method: string;
  params: unknown;
}

type RequestReply = (params: unknown) => unknown;

export class LspServer {
  readonly proc: ChildProcess;
  readonly conn: MessageConnection;
  readonly received: Received[] = [];
  stderr = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly listeners = new Set<() => void>();
  private readonly replies = new Map<string, RequestReply>();
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(bin: string, cwd: string, env: NodeJS.ProcessEnv) {
    this.proc = spawn(bin, ['lsp'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr?.setEncoding('utf8');
    this.proc.stderr?.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
        this.wake();
      });
      this.proc.on('error', (err) => {
        this.stderr += `\n[spawn error] ${err.message}`;
        this.exitInfo = { code: null, signal: null };
        resolve(this.exitInfo);
        this.wake();
      });
    });
    const stdout = this.proc.stdout;
    const stdin = this.proc.stdin;
    if (!stdout || !stdin) throw new Error('owt lsp: no stdio pipes');
    this.conn = createMessageConnection(new StreamMessageReader(stdout), new StreamMessageWriter(stdin));
    this.conn.onNotification((method: string, params: unknown) => {
      this.received.push({ kind: 'notification', method, params });
      this.wake();
    });
    this.conn.onRequest((method: string, params: unknown) => {
      this.received.push({ kind: 'request', method, params });
      this.wake();
      const reply = this.replies.get(method);
      if (reply) return reply(params);
      return defaultReply(method, params);
    });
    this.conn.onError(([err]) => {
      this.stderr += `\n[connection error] ${err.message}`;
    });
    this.conn.listen();
  }

  /** Answer server→client requests of `method` with `reply`. */
  onRequest(method: string, reply: RequestReply): void {
    this.replies.set(method, reply);
  }

  private wake(): void {
    for (const l of [...this.listeners]) l();
  }

  /** Diagnostics for failure messages: stderr and what the server said. */
  context(): string {
    const said = this.received
      .filter((r) => r.method === 'window/showMessage' || r.method === 'window/logMessage')
      .map((r) => `  ${r.method}: ${JSON.stringify(r.params)}`)
      .join('\n');
    const exit = this.exitInfo ? `\nowt lsp exited: code ${this.exitInfo.code}, signal ${this.exitInfo.signal}` : '';
    return `${exit}\n--- owt lsp stderr ---\n${this.stderr.slice(-4000)}\n--- server messages ---\n${said}`;
  }

  /** `promise`, or a loud failure at the deadline or when the server dies first. */
  async deadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}${this.context()}`)), ms);
    });
    const died = this.exited.then((): never => {
      throw new Error(`owt lsp exited while waiting for ${what}${this.context()}`);
    });
    try {
      return await Promise.race([promise, timeout, died]);
    } catch (err) {
      if (err instanceof Error && !err.message.includes('--- owt lsp stderr ---')) {
        err.message = `${what}: ${err.message}${this.context()}`;
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends a request; `params === undefined` sends none (as vscode-languageclient does for shutdown and owt/board). */
  request<R>(method: string, params: unknown, ms: number): Promise<R> {
    const sent = params === undefined ? this.conn.sendRequest<R>(method) : this.conn.sendRequest<R>(method, params);
    return this.deadline(sent, ms, `the reply to ${method}`);
  }

  /** The first message received at index ≥ `from` that satisfies `pick`, within `ms`. */
  waitFor<T>(what: string, ms: number, from: number, pick: (r: Received) => T | undefined): Promise<{ value: T; index: number }> {
    const found = new Promise<{ value: T; index: number }>((resolve) => {
      let next = from;
      const check = (): void => {
        for (; next < this.received.length; next++) {
          const r = this.received[next];
          if (r === undefined) continue;
          const value = pick(r);
          if (value !== undefined) {
            this.listeners.delete(check);
            resolve({ value, index: next });
            return;
          }
        }
      };
      this.listeners.add(check);
      check();
    });
    return this.deadline(found, ms, what);
  }

  /** shutdown + exit; kills the process if it does not exit within `ms`. */
  async stop(ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.exitInfo) return this.exitInfo;
    try {
      await this.request('shutdown', undefined, ms);
      await this.conn.sendNotification('exit');
      return await this.deadline(this.exited, ms, 'owt lsp to exit after shutdown/exit');
    } finally {
      this.conn.dispose();
      if (!this.exitInfo) this.proc.kill('SIGKILL');
    }
  }
}

/** What a plain editor answers to the standard server→client requests. */
function defaultReply(method: string, params: unknown): unknown {
  switch (method) {
    case 'workspace/configuration': {
      const items = (params as { items?: unknown[] } | null)?.items ?? [];
      return items.map(() => null);
    }
    case 'window/showDocument':
      return { success: true };
    case 'workspace/applyEdit':
      return { applied: false };
    default:
      // window/workDoneProgress/create, client/registerCapability, showMessageRequest, …
      return null;
  }
}

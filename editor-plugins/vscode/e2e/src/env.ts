// The hermetic world of one end-to-end run: a temporary HOME and OWT_HOME,
// git configured by environment only, real git repositories with the
// scripted agent `tests/data/editor-agent.sh`, the real `owt` binary (on a
// PATH built from scratch, through a folder the run controls), and polling
// with deadlines that fail loudly for states outside the browser (git, the
// store).

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { SessionView } from '../../src/protocol';

/** The owt repository root (this file runs from `e2e/out/e2e/src/`). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..', '..', '..', '..');
export const EDITOR_AGENT = path.join(REPO_ROOT, 'tests', 'data', 'editor-agent.sh');

/** The file every suite's repository starts with: a conflict on line 5 is the running example. */
export const CART = [
  'def total(items):',
  '    amount = 0',
  '    for item in items:',
  '        amount += item.price * item.quantity',
  '    tax = amount * 0.20',
  '    return amount + tax',
  '',
  'def discount(amount, code):',
  '    if code == "WELCOME":',
  '        return amount * 0.9',
  '    return amount',
  '',
].join('\n');

/** Name of the scripted agent in every test repository's `.owt.toml`. */
export const AGENT_TOOL = 'scripted';

/** `$OWT_BIN`, else `target/debug/owt`; fails loudly when missing. */
export function owtBin(): string {
  const fromEnv = process.env.OWT_BIN;
  const bin = fromEnv ? path.resolve(fromEnv) : path.join(REPO_ROOT, 'target', 'debug', 'owt');
  try {
    fs.accessSync(bin, fs.constants.X_OK);
  } catch {
    throw new Error(`owt binary not found at ${bin}: build it (cargo build -p owt) or set $OWT_BIN`);
  }
  return bin;
}

/** Polls `probe` until it returns something other than `undefined`, or fails after `ms` naming `what`. */
export async function poll<T>(what: string, ms: number, probe: () => T | undefined, last?: () => string): Promise<T> {
  const deadline = Date.now() + ms;
  let error: unknown;
  for (;;) {
    try {
      const value = probe();
      if (value !== undefined) return value;
      error = undefined;
    } catch (err) {
      error = err;
    }
    if (Date.now() > deadline) {
      const detail = error instanceof Error ? `\nlast error: ${error.message}` : '';
      throw new Error(`timed out after ${ms} ms waiting for ${what}${detail}${last ? `\nlast seen: ${last()}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The system's own folders: a run's PATH is built from these, never from
 * the caller's PATH, which may hold an installed owt (`cargo install` puts
 * it in ~/.cargo/bin): then removing the run's link would not make owt
 * missing. A system folder that holds an `owt` anyway is left out too.
 */
const SYSTEM_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** `binDir`, this Node's folder and the system's folders, none with an `owt` but `binDir`. */
export function pathFromScratch(binDir: string): string {
  const dirs = [path.dirname(process.execPath), ...SYSTEM_PATH].filter((dir) => !fs.existsSync(path.join(dir, 'owt')));
  return [binDir, ...new Set(dirs)].join(':');
}

export class E2eEnv {
  readonly root: string;
  readonly home: string;
  readonly owtHome: string;
  /** First on PATH (the only folder of it that may hold an `owt`): holds the `owt` link (removed to test a missing binary). */
  readonly binDir: string;
  readonly owt: string;
  readonly env: NodeJS.ProcessEnv;

  constructor(owt: string) {
    // Short paths: session sockets live under $OWT_HOME/run (limit ~100 bytes).
    this.root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'owt-e2e-')));
    this.home = path.join(this.root, 'home');
    this.owtHome = path.join(this.root, 'owt');
    this.binDir = path.join(this.root, 'bin');
    this.owt = owt;
    fs.mkdirSync(this.home);
    fs.mkdirSync(this.binDir);
    this.linkOwt();
    const env: NodeJS.ProcessEnv = {};
    // Only what a login would give, nothing of the caller's editor or agent.
    for (const k of ['LANG', 'LC_ALL', 'TERM', 'TZ', 'USER', 'LOGNAME', 'SHELL', 'TMPDIR']) {
      if (process.env[k] !== undefined) env[k] = process.env[k];
    }
    Object.assign(env, {
      // From scratch: `unlinkOwt` must leave no owt on it (see pathFromScratch).
      PATH: pathFromScratch(this.binDir),
      HOME: this.home,
      OWT_HOME: this.owtHome,
      XDG_CONFIG_HOME: path.join(this.home, '.config'),
      XDG_DATA_HOME: path.join(this.home, '.local', 'share'),
      XDG_CACHE_HOME: path.join(this.home, '.cache'),
      XDG_STATE_HOME: path.join(this.home, '.local', 'state'),
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_CONFIG_SYSTEM: '/dev/null',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'Test',
      GIT_AUTHOR_EMAIL: 'test@example.com',
      GIT_COMMITTER_NAME: 'Test',
      GIT_COMMITTER_EMAIL: 'test@example.com',
      GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
      SHELL: '/bin/bash',
    });
    this.env = env;
  }

  /** `owt` on PATH (the normal state). */
  linkOwt(): void {
    const link = path.join(this.binDir, 'owt');
    fs.rmSync(link, { force: true });
    fs.symlinkSync(this.owt, link);
  }

  /** `owt` gone from PATH, as on a machine where it was never installed. */
  unlinkOwt(): void {
    fs.rmSync(path.join(this.binDir, 'owt'), { force: true });
  }

  run(cmd: string, args: readonly string[], cwd: string, input?: string): string {
    try {
      return execFileSync(cmd, args, {
        cwd,
        env: this.env,
        encoding: 'utf8',
        input,
        stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        timeout: 60_000,
      });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed: ${e.message}\nstdout: ${e.stdout ?? ''}\nstderr: ${e.stderr ?? ''}`);
    }
  }

  git(repo: string, ...args: string[]): string {
    return this.run('git', args, repo).trim();
  }

  /** The real CLI, as a person would type it in the repository. */
  cli(repo: string, ...args: string[]): string {
    return this.run(this.owt, args, repo);
  }

  sessions(repo: string): SessionView[] {
    return (JSON.parse(this.cli(repo, '--json', 'list')) as { sessions: SessionView[] }).sessions;
  }

  session(repo: string, name: string): SessionView | undefined {
    return this.sessions(repo).find((s) => s.name === name);
  }

  /**
   * A repository (one commit on `main`) holding `files`, whose default
   * agent is the scripted one, trusted (`owt trust`). `name` is also the VS Code window's title.
   */
  repo(name: string, files: Record<string, string>): string {
    const dir = path.join(this.root, name);
    fs.mkdirSync(dir);
    this.git(dir, 'init', '-q', '-b', 'main');
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), text);
    }
    fs.writeFileSync(
      path.join(dir, '.owt.toml'),
      `[agent]\ndefault_tool = "${AGENT_TOOL}"\n\n[tools.${AGENT_TOOL}]\nbinary = ${JSON.stringify(EDITOR_AGENT)}\n`,
    );
    this.git(dir, 'add', '.');
    this.git(dir, 'commit', '-q', '-m', 'initial');
    // A repository's own agents run only once the user trusts its files.
    this.cli(dir, 'trust');
    return dir;
  }

  /** Starts an agent with the CLI (`owt new TASK --name NAME`) and waits until its prompt shows. */
  async newAgent(repo: string, name: string, task: string): Promise<SessionView> {
    this.cli(repo, 'new', task, '--name', name);
    await this.waitForScreen(repo, name, /^ready>\s*$/m, 'its first prompt');
    const s = this.session(repo, name);
    if (!s) throw new Error(`owt new did not create ${name}`);
    return s;
  }

  /** `owt peek NAME`: the agent's screen as text. */
  peek(repo: string, name: string): string {
    return this.cli(repo, 'peek', name);
  }

  async waitForScreen(repo: string, name: string, pattern: RegExp, what: string, ms = 20_000): Promise<string> {
    let screen = '';
    return poll(
      `${name}'s screen to show ${what} (${pattern})`,
      ms,
      () => {
        screen = this.peek(repo, name);
        return pattern.test(screen) ? screen : undefined;
      },
      () => screen,
    );
  }

  /**
   * Tells an agent one command with `owt send` and waits for its receipt
   * (`ok #N: …`, numbered above every earlier one: the newest receipt is
   * always on screen, just above the prompt).
   */
  async tell(repo: string, name: string, command: string): Promise<void> {
    const newest = (screen: string): number => Math.max(0, ...[...screen.matchAll(/^(?:ok|error) #(\d+):/gm)].map((m) => Number(m[1])));
    const before = newest(this.peek(repo, name));
    this.cli(repo, 'send', name, command);
    let screen = '';
    await poll(
      `${name} to acknowledge \`${command}\``,
      20_000,
      () => {
        screen = this.peek(repo, name);
        if (newest(screen) <= before) return undefined;
        if (new RegExp(`^error #${newest(screen)}:`, 'm').test(screen)) throw new Error(`${name} refused \`${command}\`:\n${screen}`);
        return true;
      },
      () => screen,
    );
  }

  /** Pids of processes carrying this run's OWT_HOME (session hosts, agents, servers). */
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

  /** Whether a process is alive (not a zombie). */
  static alive(pid: number): boolean {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return !/\) Z /.test(stat);
    } catch {
      return false;
    }
  }

  /** Kills everything this run started that carries its OWT_HOME, then removes the folder. */
  cleanup(keep: boolean): void {
    for (const pid of this.ourProcesses()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (!keep) fs.rmSync(this.root, { recursive: true, force: true });
  }
}

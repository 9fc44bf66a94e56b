// A real VS Code for the suite: code-server (VS Code's own workbench and
// extension host, served on 127.0.0.1) with the owt .vsix installed, driven
// through Debian's headless Chromium by puppeteer-core. One code-server per
// run; every scenario opens its own window on its own repository (its own
// extension host and `owt lsp`). Everything waits for a state of the page
// (a deadline that fails loudly, with a screenshot), never for time.

import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import puppeteer, { type Browser, type KeyInput, type Page } from 'puppeteer-core';

import type { E2eEnv } from './env';

/** What `e2e/install.sh` installed, passed in the environment by `e2e/run.sh`. */
export interface Tools {
  codeServer: string;
  node: string;
  chromium: string;
  vsix: string;
}

export function toolsFromEnv(): Tools {
  const get = (name: string): string => {
    const value = process.env[name];
    if (!value) throw new Error(`$${name} is not set: run the suite with editor-plugins/vscode/e2e/run.sh`);
    if (!fs.existsSync(value)) throw new Error(`$${name}=${value} does not exist: run e2e/install.sh`);
    return value;
  };
  return { codeServer: get('CODE_SERVER'), node: get('OWT_E2E_NODE'), chromium: get('CHROMIUM'), vsix: get('OWT_VSIX') };
}

/** The version of the VS Code inside code-server (its `lib/vscode/package.json`). */
export function vscodeVersion(tools: Tools): string {
  const entry = fs.realpathSync(tools.codeServer); // …/code-server/out/node/entry.js
  const root = path.resolve(path.dirname(entry), '..', '..');
  return (JSON.parse(fs.readFileSync(path.join(root, 'lib', 'vscode', 'package.json'), 'utf8')) as { version: string }).version;
}

/** Whether `version` (x.y.z) is in a caret range `^a.b.c` (the only form engines.vscode uses here). */
export function satisfiesCaret(version: string, range: string): boolean {
  const m = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range);
  const v = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!m || !v) throw new Error(`cannot compare ${version} with ${range}`);
  const [want, have] = [m.slice(1).map(Number), v.slice(1).map(Number)];
  if (have[0] !== want[0]) return false;
  for (let i = 1; i < 3; i++) {
    if ((have[i] ?? 0) !== (want[i] ?? 0)) return (have[i] ?? 0) > (want[i] ?? 0);
  }
  return true;
}

/** Wait budgets (ms). Generous: CI has 2 loaded cores. */
export const T = {
  /** The workbench of a new window appears. */
  window: 60_000,
  /** The extension activates and `owt lsp` answers. */
  activate: 60_000,
  /** Something the server computes (a board change, diagnostics). */
  server: 30_000,
  /** A UI reaction to a key or click. */
  ui: 15_000,
};

/** Dark theme, no welcome pages, tips, chat or telemetry; terminals drawn with DOM nodes (readable text). */
const USER_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'workbench.colorTheme': 'Default Dark Modern',
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'workbench.layoutControl.enabled': false,
  'window.commandCenter': false,
  'chat.disableAIFeatures': true,
  'chat.commandCenter.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'git.autofetch': false,
  'git.openRepositoryInParentFolders': 'never',
  'security.workspace.trust.enabled': false,
  'terminal.integrated.gpuAcceleration': 'off',
  'terminal.integrated.enablePersistentSessions': false,
  'terminal.integrated.showExitAlert': false,
  'editor.minimap.enabled': false,
  'editor.hover.delay': 300,
  'editor.lightbulb.enabled': 'onCode',
  'editor.fontSize': 14,
  'files.autoSave': 'off',
  'files.hotExit': 'off',
  'problems.autoReveal': false,
  'breadcrumbs.enabled': true,
  'remote.autoForwardPorts': false,
};

function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.setTimeout(5_000, () => req.destroy(new Error('timeout')));
  });
}

export class Workbench {
  private browser: Browser | undefined;
  private server: ChildProcess | undefined;
  private serverLog = '';
  private url = '';
  readonly dir: string;
  readonly userData: string;

  constructor(
    readonly env: E2eEnv,
    readonly tools: Tools,
    readonly artifacts: string,
  ) {
    this.dir = path.join(env.root, 'vscode');
    this.userData = path.join(this.dir, 'ud');
  }

  private codeServerArgs(...args: string[]): string[] {
    return [this.tools.codeServer, '--user-data-dir', this.userData, '--extensions-dir', path.join(this.dir, 'exts'), ...args];
  }

  private serverEnv(): NodeJS.ProcessEnv {
    return {
      ...this.env.env,
      // No gallery: nothing is fetched for extensions, nothing leaves 127.0.0.1.
      EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: 'http://127.0.0.1:9/gallery', itemUrl: 'http://127.0.0.1:9/item' }),
    };
  }

  async start(): Promise<void> {
    fs.mkdirSync(path.join(this.userData, 'User'), { recursive: true });
    fs.mkdirSync(this.artifacts, { recursive: true });
    fs.writeFileSync(path.join(this.userData, 'User', 'settings.json'), JSON.stringify(USER_SETTINGS, null, 2));

    // The .vsix a user installs, through VS Code's own installer.
    execFileSync(this.tools.node, this.codeServerArgs('--install-extension', this.tools.vsix), {
      env: this.serverEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });

    // Its own process group: the teardown kills the group (extension hosts, owt lsp, terminals).
    const server = spawn(
      this.tools.node,
      this.codeServerArgs(
        '--bind-addr',
        '127.0.0.1:0',
        '--auth',
        'none',
        '--disable-telemetry',
        '--disable-update-check',
        '--disable-workspace-trust',
        '--disable-getting-started-override',
        '--ignore-last-opened',
        // A closed window's extension host (and its `owt lsp`) goes away soon.
        '--reconnection-grace-time',
        '5',
        // Keep the environment given here: a login shell's profile would reset PATH.
        '--vscode-option',
        'force-disable-user-env',
      ),
      { env: this.serverEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.server = server;
    const exited = new Promise<never>((_, reject) => {
      server.on('exit', (code, signal) => reject(new Error(`code-server exited (${code ?? signal}):\n${this.serverLog.slice(-4000)}`)));
    });
    exited.catch(() => undefined);
    const listening = new Promise<string>((resolve) => {
      const onData = (chunk: Buffer): void => {
        this.serverLog += chunk.toString();
        const m = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(this.serverLog);
        if (m?.[1]) resolve(m[1]);
      };
      server.stdout?.on('data', onData);
      server.stderr?.on('data', onData);
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`code-server did not listen within ${T.window} ms:\n${this.serverLog}`)), T.window);
    });
    try {
      this.url = await Promise.race([listening, exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
    const deadline = Date.now() + T.window;
    while ((await get(`${this.url}/healthz`).catch(() => 0)) !== 200) {
      if (Date.now() > deadline) throw new Error(`code-server /healthz did not answer 200:\n${this.serverLog}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    this.browser = await puppeteer.launch({
      executablePath: this.tools.chromium,
      headless: true,
      pipe: true,
      userDataDir: path.join(this.dir, 'chromium'),
      defaultViewport: { width: 1280, height: 800, deviceScaleFactor: 1 },
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--disable-sync',
        '--disable-features=Translate,MediaRouter',
        '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
        '--lang=en-US',
      ],
      env: { ...process.env, HOME: this.env.home, XDG_CONFIG_HOME: path.join(this.dir, 'chromium-config') },
    });
  }

  /** A new window on `folder`, once the workbench is drawn. */
  async open(folder: string, name: string): Promise<Window> {
    if (!this.browser) throw new Error('the workbench is not started');
    const page = await this.browser.newPage();
    const window = new Window(page, name, this.artifacts, this);
    await page.goto(`${this.url}/?folder=${encodeURIComponent(folder)}`, { waitUntil: 'domcontentloaded', timeout: T.window });
    await window.until('the workbench', T.window, () => document.querySelector('.monaco-workbench .part.statusbar') !== null);
    return window;
  }

  /** The extension host's logs of every window so far (for failure messages). */
  extensionLogs(): string {
    const out: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(p);
        else if (/owt|exthost\.log|remoteexthost\.log/i.test(entry.name)) {
          out.push(`--- ${path.relative(this.userData, p)}\n${fs.readFileSync(p, 'utf8').slice(-3000)}`);
        }
      }
    };
    try {
      walk(path.join(this.userData, 'logs'));
    } catch {
      // no logs yet
    }
    return out.join('\n');
  }

  /** Lines of every window's extension host logs so far that match `re`, whole files. */
  extensionLogLines(re: RegExp): string[] {
    const out: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(p);
        else if (/exthost\.log$/i.test(entry.name)) out.push(...fs.readFileSync(p, 'utf8').split('\n').filter((l) => re.test(l)));
      }
    };
    try {
      walk(path.join(this.userData, 'logs'));
    } catch {
      // no logs yet
    }
    return out;
  }

  /** Closes the browser, kills code-server's whole process group. */
  async stop(): Promise<void> {
    const browser = this.browser;
    this.browser = undefined;
    if (browser) {
      const proc = browser.process();
      await Promise.race([browser.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5_000))]);
      if (proc?.pid && proc.exitCode === null) {
        try {
          process.kill(proc.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    this.killServer();
  }

  /** Synchronous: also used from `process.on('exit')`. */
  killServer(): void {
    const pid = this.server?.pid;
    this.server = undefined;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // group gone
    }
  }
}

/** One row of the owt Agents view, as a person sees it. */
export interface Row {
  level: number;
  name: string;
  description: string;
  /** The whole accessible label (VS Code puts the tooltip there). */
  aria: string;
}

export interface Notification {
  message: string;
  source: string;
  buttons: string[];
}

/** One browser page: one VS Code window on one repository. */
export class Window {
  private shots = 0;

  constructor(
    readonly page: Page,
    readonly name: string,
    readonly artifacts: string,
    readonly workbench: Workbench,
  ) {}

  /**
   * Waits until `fn` (run in the page) returns a truthy value, and returns
   * it. On timeout: an error naming `what`, with what the window shows and
   * a screenshot.
   */
  async until<A extends unknown[], R>(what: string, ms: number, fn: (...args: A) => R, ...args: A): Promise<NonNullable<Awaited<R>>> {
    try {
      const handle = await this.page.waitForFunction(fn as (...a: unknown[]) => R, { timeout: ms, polling: 100 }, ...args);
      const value = (await handle.jsonValue()) as NonNullable<Awaited<R>>;
      await handle.dispose();
      return value;
    } catch (err) {
      throw await this.failure(`waiting for ${what}`, err);
    }
  }

  /** An error with the state of the window (and a screenshot) for `doing`. */
  async failure(doing: string, err: unknown): Promise<Error> {
    const shot = path.join(this.artifacts, `FAILED-${this.name}-${++this.shots}.png`);
    await this.page.screenshot({ path: shot }).catch(() => undefined);
    const state = await this.describe().catch((e: unknown) => `(cannot describe the window: ${String(e)})`);
    const message = err instanceof Error ? err.message : String(err);
    return new Error(`${this.name}: ${doing}: ${message}\n${state}\nscreenshot: ${shot}\n${this.workbench.extensionLogs()}`);
  }

  /** What a person would read on screen: status bar, notifications, view rows, editors. */
  async describe(): Promise<string> {
    const [status, notes, rows, tabs, editor] = await Promise.all([
      this.statusBar(),
      this.notifications(),
      this.rows(),
      this.tabs(),
      this.page.evaluate(() => {
        const tab = document.querySelector('.editor-group-container.active .tab.active');
        const lines = [...document.querySelectorAll('.editor-group-container.active .view-lines .view-line')].map((l) => l.textContent ?? '');
        return `${tab?.getAttribute('title') ?? tab?.textContent ?? '(none)'}\n    ${lines.slice(0, 12).join('\n    ')}`;
      }),
    ]);
    return [
      `status bar: ${status.join(' | ')}`,
      `notifications: ${notes.map((n) => `${n.message} [${n.buttons.join(', ')}]`).join(' / ') || '(none)'}`,
      `agents view: ${rows.map((r) => `${'  '.repeat(r.level - 1)}${r.name} — ${r.description}`).join('\n  ') || '(no rows)'}`,
      `editor tabs: ${tabs.join(', ') || '(none)'}`,
      `active editor: ${editor}`,
    ].join('\n');
  }

  /** A PNG for a person to look at: the whole window, or the part `clip` selects. */
  async screenshot(name: string, clip?: { x: number; y: number; width: number; height: number }): Promise<string> {
    const file = path.join(this.artifacts, `${name}.png`);
    // Nothing blinks or animates in the picture.
    await this.page.mouse.move(1279, 799);
    // Within the window as it is: a capture beyond the viewport resizes it,
    // and VS Code closes an open menu (the Quick Fix one) on a resize.
    await this.page.screenshot({ path: file, captureBeyondViewport: false, ...(clip ? { clip } : {}) });
    return file;
  }

  // ------------------------------------------------------------ reading

  statusBar(): Promise<string[]> {
    return this.page.$$eval('.part.statusbar .statusbar-item', (items) =>
      items.map((i) => (i.textContent ?? '').trim()).filter((t) => t.length > 0),
    );
  }

  /** The owt status bar item's text, e.g. `owt: 1 working · 1 needs you`, or undefined. */
  async owtStatus(): Promise<string | undefined> {
    return (await this.statusBar()).find((t) => t.startsWith('owt:'));
  }

  notifications(): Promise<Notification[]> {
    return this.page.$$eval('.notifications-toasts .notification-list-item, .notifications-center .notification-list-item', (items) =>
      items.map((i) => ({
        message: (i.querySelector('.notification-list-item-message')?.textContent ?? '').trim(),
        source: (i.querySelector('.notification-list-item-source')?.textContent ?? '').trim(),
        buttons: [...i.querySelectorAll('.notification-list-item-buttons-container .monaco-button')].map((b) =>
          (b.textContent ?? '').trim(),
        ),
      })),
    );
  }

  rows(): Promise<Row[]> {
    return this.page.$$eval('[id="workbench.view.extension.owt"] .monaco-list-row', (rows) =>
      rows.map((r) => ({
        level: Number(r.getAttribute('aria-level') ?? '0'),
        name: (r.querySelector('.label-name')?.textContent ?? '').trim(),
        description: (r.querySelector('.label-description')?.textContent ?? '').trim(),
        aria: r.getAttribute('aria-label') ?? '',
      })),
    );
  }

  tabs(): Promise<string[]> {
    return this.page.$$eval('.tabs-container .tab', (tabs) => tabs.map((t) => t.getAttribute('aria-label') ?? (t.textContent ?? '').trim()));
  }

  // ------------------------------------------------------------ acting

  async press(...keys: KeyInput[]): Promise<void> {
    for (const k of keys.slice(0, -1)) await this.page.keyboard.down(k);
    const last = keys[keys.length - 1];
    if (last !== undefined) await this.page.keyboard.press(last);
    for (const k of keys.slice(0, -1).reverse()) await this.page.keyboard.up(k);
  }

  async type(text: string): Promise<void> {
    await this.page.keyboard.type(text);
  }

  /** Clicks the first element matching `selector` whose text (or aria-label) matches `text`. */
  async click(what: string, selector: string, text?: RegExp): Promise<void> {
    const source = text?.source ?? null;
    const flags = text?.flags ?? '';
    const found = await this.until(`${what} to be visible`, T.ui, (sel: string, src: string | null, fl: string) => {
      const re = src === null ? null : new RegExp(src, fl);
      for (const el of document.querySelectorAll(sel)) {
        const h = el as HTMLElement;
        const label = `${h.textContent ?? ''} ${h.getAttribute('aria-label') ?? ''}`;
        const box = h.getBoundingClientRect();
        if (box.width > 0 && box.height > 0 && (re === null || re.test(label))) {
          return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
        }
      }
      return null;
    }, selector, source, flags);
    await this.page.mouse.click(found.x, found.y);
  }

  /** Runs a command from the palette (F1), by its title, as a person would. */
  async command(title: string): Promise<void> {
    await this.press('F1');
    await this.until('the command palette', T.ui, () => {
      const input = document.querySelector('.quick-input-widget .quick-input-box input') as HTMLInputElement | null;
      return input !== null && input.offsetParent !== null && document.activeElement === input;
    });
    await this.type(title);
    await this.until(`“${title}” in the command palette`, T.ui, (t: string) => {
      const row = document.querySelector('.quick-input-widget .monaco-list-row.focused');
      return row !== null && (row.getAttribute('aria-label') ?? row.textContent ?? '').includes(t);
    }, title);
    await this.press('Enter');
  }

  /** Opens a file of the workspace through Quick Open (Ctrl+P). */
  async openFile(relative: string): Promise<void> {
    await this.press('Control', 'p');
    await this.until('Quick Open', T.ui, () => {
      const input = document.querySelector('.quick-input-widget .quick-input-box input') as HTMLInputElement | null;
      return input !== null && document.activeElement === input;
    });
    await this.type(relative);
    const base = path.basename(relative);
    await this.until(`${relative} in Quick Open`, T.ui, (b: string) => {
      const row = document.querySelector('.quick-input-widget .monaco-list-row.focused');
      return row !== null && (row.textContent ?? '').includes(b);
    }, base);
    await this.press('Enter');
    await this.until(`${relative} to be the active editor`, T.ui, (b: string) => {
      const tab = document.querySelector('.tabs-container .tab.active');
      const focused = document.activeElement?.closest('.monaco-editor') !== null;
      return tab !== null && (tab.textContent ?? '').includes(b) && focused;
    }, base);
  }

  /** Moves the cursor of the active editor to `line` (1-based), column 1. */
  async gotoLine(line: number, column = 1): Promise<void> {
    await this.press('Control', 'g');
    await this.until('the Go to Line box', T.ui, () => {
      const input = document.querySelector('.quick-input-widget .quick-input-box input') as HTMLInputElement | null;
      return input !== null && document.activeElement === input;
    });
    await this.type(`${line}:${column}`);
    await this.press('Enter');
    await this.until(`the cursor on line ${line}`, T.ui, (l: number, c: number) => {
      const items = [...document.querySelectorAll('.part.statusbar .statusbar-item')].map((i) => i.textContent ?? '');
      return items.some((t) => t.includes(`Ln ${l}, Col ${c}`));
    }, line, column);
  }

  /** Opens the owt view (activity bar) and waits for the view pane. */
  async showAgents(): Promise<void> {
    const open = await this.page.$('[id="workbench.view.extension.owt"]');
    if (open && (await open.isVisible())) return;
    await this.click('the owt activity bar entry', '.activitybar .action-item .action-label', /^\s*owt/);
    await this.until('the owt view', T.ui, () => {
      const pane = document.querySelector('[id="workbench.view.extension.owt"]') as HTMLElement | null;
      return pane !== null && pane.offsetParent !== null;
    });
  }

  /** Waits until the Agents view's rows satisfy `ok` (checked in Node on each poll). */
  async rowsUntil(what: string, ok: (rows: Row[]) => boolean, ms = T.server): Promise<Row[]> {
    const deadline = Date.now() + ms;
    let rows: Row[] = [];
    for (;;) {
      rows = await this.rows();
      if (ok(rows)) return rows;
      if (Date.now() > deadline) throw await this.failure(`waiting for the Agents view to show ${what}`, new Error(`timed out after ${ms} ms`));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /**
   * Waits until the active terminal (drawn with DOM nodes) shows `pattern`;
   * returns the title of the active editor tab or terminal.
   */
  async terminalUntil(what: string, pattern: RegExp, ms = T.server): Promise<string> {
    return this.until(what, ms, (src: string, flags: string) => {
      const re = new RegExp(src, flags);
      for (const rows of document.querySelectorAll('.terminal-wrapper .xterm-rows')) {
        const el = rows as HTMLElement;
        if (el.offsetParent === null) continue;
        const text = [...el.children].map((d) => d.textContent ?? '').join('\n');
        if (!re.test(text)) continue;
        const tab = document.querySelector('.tabs-container .tab.active');
        return (tab?.textContent ?? '').trim() || 'terminal';
      }
      return null;
    }, pattern.source, pattern.flags);
  }

  async close(): Promise<void> {
    await this.page.close().catch(() => undefined);
  }
}

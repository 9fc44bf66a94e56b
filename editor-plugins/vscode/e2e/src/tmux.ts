// Terminal editors (Neovim, Helix) for the suites and the docs' pictures:
// a private tmux server runs the editor; `send-keys` types, `capture-pane`
// reads the screen (plain text to assert on, `-e` with colours to draw);
// `toHtml` turns a coloured capture into a page that the suite's headless
// Chromium renders to PNG, so a terminal picture is exactly what tmux holds.

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser } from 'puppeteer-core';

import { poll } from './env';

export class Tmux {
  readonly socket: string;

  constructor(
    dir: string,
    readonly env: NodeJS.ProcessEnv,
    public cols = 120,
    public rows = 32,
  ) {
    this.socket = path.join(dir, 'tmux.sock');
  }

  /** Resizes the terminal (the program gets SIGWINCH; pictures follow the new size). */
  resize(cols: number, rows: number): void {
    this.tmux('resize-window', '-t', 'e2e', '-x', String(cols), '-y', String(rows));
    this.cols = cols;
    this.rows = rows;
  }

  tmux(...args: string[]): string {
    return execFileSync('tmux', ['-S', this.socket, '-f', '/dev/null', ...args], {
      env: this.env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    });
  }

  /** Starts `argv` in a detached session of the private server. */
  start(cwd: string, argv: string[]): void {
    this.tmux('new-session', '-d', '-s', 'e2e', '-x', String(this.cols), '-y', String(this.rows), '-c', cwd, ...argv);
    this.tmux('set-option', '-g', 'status', 'off');
    this.tmux('set-option', '-g', 'escape-time', '0');
  }

  /** Keys in tmux's notation (`Escape`, `C-w`, `Enter`, or text with `-l`). */
  keys(...keys: string[]): void {
    this.tmux('send-keys', '-t', 'e2e', ...keys);
  }

  text(text: string): void {
    this.tmux('send-keys', '-t', 'e2e', '-l', text);
  }

  /** The screen as plain text. */
  screen(): string {
    return this.tmux('capture-pane', '-p', '-t', 'e2e');
  }

  /** The screen with SGR colour escapes. */
  coloured(): string {
    return this.tmux('capture-pane', '-p', '-e', '-N', '-t', 'e2e');
  }

  cursor(): { x: number; y: number } {
    const [x, y] = this.tmux('display-message', '-p', '-t', 'e2e', '#{cursor_x},#{cursor_y}').trim().split(',').map(Number);
    return { x: x ?? 0, y: y ?? 0 };
  }

  /** Waits until the screen matches `pattern`; fails with the screen. */
  async until(what: string, pattern: RegExp | ((screen: string) => boolean), ms = 20_000): Promise<string> {
    let screen = '';
    const ok = typeof pattern === 'function' ? pattern : (s: string) => pattern.test(s);
    return poll(
      `the terminal to show ${what}`,
      ms,
      () => {
        screen = this.screen();
        return ok(screen) ? screen : undefined;
      },
      () => `\n${screen}`,
    );
  }

  kill(): void {
    try {
      this.tmux('kill-server');
    } catch {
      // not running
    }
  }

  /** Renders the current screen to `file` (PNG) through Chromium. */
  async picture(browser: Browser, file: string, title: string): Promise<void> {
    const html = toHtml(this.coloured(), this.cols, this.rows, this.cursor(), title);
    const page = await browser.newPage();
    try {
      await page.setContent(html, { waitUntil: 'load' });
      const frame = await page.$('#frame');
      if (!frame) throw new Error('terminal page without #frame');
      fs.mkdirSync(path.dirname(file), { recursive: true });
      await frame.screenshot({ path: file });
    } finally {
      await page.close();
    }
  }
}

// ------------------------------------------------------------ ANSI → HTML

/** The 16 colours of the terminal in the pictures (VS Code's dark terminal palette). */
const PALETTE16 = [
  '#000000', '#cd3131', '#0dbc79', '#e5e510', '#2472c8', '#bc3fbc', '#11a8cd', '#e5e5e5',
  '#666666', '#f14c4c', '#23d18b', '#f5f543', '#3b8eea', '#d670d6', '#29b8db', '#ffffff',
];
const DEFAULT_FG = '#cccccc';
const DEFAULT_BG = '#1e1e1e';

function color256(n: number): string {
  if (n < 16) return PALETTE16[n] ?? DEFAULT_FG;
  if (n < 232) {
    const i = n - 16;
    const level = (v: number): number => (v === 0 ? 0 : 55 + v * 40);
    const r = level(Math.floor(i / 36));
    const g = level(Math.floor(i / 6) % 6);
    const b = level(i % 6);
    return `rgb(${r},${g},${b})`;
  }
  const v = 8 + (n - 232) * 10;
  return `rgb(${v},${v},${v})`;
}

interface Style {
  fg: string | undefined;
  bg: string | undefined;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
  curly: boolean;
  reverse: boolean;
  strike: boolean;
  underlineColor: string | undefined;
}

const PLAIN: Style = {
  fg: undefined,
  bg: undefined,
  bold: false,
  dim: false,
  italic: false,
  underline: false,
  curly: false,
  reverse: false,
  strike: false,
  underlineColor: undefined,
};

/** Applies one SGR parameter list (`1;38;5;208`) to `s`. */
export function applySgr(s: Style, params: string): Style {
  const out = { ...s };
  const parts = params === '' ? ['0'] : params.split(';');
  for (let i = 0; i < parts.length; i++) {
    const [head, sub] = (parts[i] ?? '0').split(':');
    const p = Number(head || '0');
    const extended = (): string | undefined => {
      const mode = Number(parts[i + 1]);
      if (mode === 5) {
        const v = color256(Number(parts[i + 2]));
        i += 2;
        return v;
      }
      if (mode === 2) {
        const v = `rgb(${Number(parts[i + 2])},${Number(parts[i + 3])},${Number(parts[i + 4])})`;
        i += 4;
        return v;
      }
      return undefined;
    };
    if (p === 0) Object.assign(out, PLAIN);
    else if (p === 1) out.bold = true;
    else if (p === 2) out.dim = true;
    else if (p === 3) out.italic = true;
    else if (p === 4) {
      out.underline = sub !== '0';
      out.curly = sub === '3';
    } else if (p === 7) out.reverse = true;
    else if (p === 9) out.strike = true;
    else if (p === 22) out.bold = out.dim = false;
    else if (p === 23) out.italic = false;
    else if (p === 24) out.underline = out.curly = false;
    else if (p === 27) out.reverse = false;
    else if (p === 29) out.strike = false;
    else if (p >= 30 && p <= 37) out.fg = PALETTE16[p - 30];
    else if (p === 38) out.fg = extended();
    else if (p === 39) out.fg = undefined;
    else if (p >= 40 && p <= 47) out.bg = PALETTE16[p - 40];
    else if (p === 48) out.bg = extended();
    else if (p === 49) out.bg = undefined;
    else if (p === 58) out.underlineColor = extended();
    else if (p === 59) out.underlineColor = undefined;
    else if (p >= 90 && p <= 97) out.fg = PALETTE16[p - 90 + 8];
    else if (p >= 100 && p <= 107) out.bg = PALETTE16[p - 100 + 8];
  }
  return out;
}

function css(s: Style): string {
  let fg = s.fg ?? DEFAULT_FG;
  let bg = s.bg;
  if (s.reverse) {
    const f = fg;
    fg = bg ?? DEFAULT_BG;
    bg = f;
  }
  const rules = [`color:${fg}`];
  if (bg) rules.push(`background:${bg}`);
  if (s.bold) rules.push('font-weight:bold');
  if (s.dim) rules.push('opacity:0.7');
  if (s.italic) rules.push('font-style:italic');
  const lines = [s.underline ? 'underline' : '', s.strike ? 'line-through' : ''].filter(Boolean);
  if (lines.length > 0) {
    rules.push(`text-decoration:${lines.join(' ')}${s.curly ? ' wavy' : ''}${s.underlineColor ? ` ${s.underlineColor}` : ''}`);
  }
  return rules.join(';');
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** One line of a capture as HTML spans (one per run of equal style); the cursor cell drawn as a block. */
function lineHtml(line: string, cols: number, cursorX: number | undefined, style: Style): { html: string; style: Style } {
  const cells: { ch: string; css: string }[] = [];
  let s = style;
  // eslint-disable-next-line no-control-regex
  const re = /\x1b\[([0-9;:]*)m|\x1b\[[0-9;?]*[A-Za-z]|([^\x1b]+)/g;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) {
    if (m[1] !== undefined) {
      s = applySgr(s, m[1]);
    } else if (m[2] !== undefined) {
      for (const ch of m[2]) if (cells.length < cols) cells.push({ ch, css: css(s) });
    }
  }
  if (cursorX !== undefined) {
    while (cells.length <= cursorX) cells.push({ ch: ' ', css: css(PLAIN) });
    const cell = cells[cursorX];
    if (cell) cell.css = 'cursor';
  }
  let html = '';
  for (let i = 0; i < cells.length; ) {
    const run = cells[i]?.css ?? '';
    let text = '';
    for (; i < cells.length && cells[i]?.css === run; i++) text += cells[i]?.ch ?? '';
    html += run === 'cursor' ? `<span class="cursor">${escapeHtml(text)}</span>` : `<span style="${run}">${escapeHtml(text)}</span>`;
  }
  return { html, style: s };
}

/** A page holding the capture in a window-like frame; `#frame` is what gets photographed. */
export function toHtml(capture: string, cols: number, rows: number, cursor: { x: number; y: number }, title: string): string {
  const lines = capture.replace(/\n$/, '').split('\n');
  let style = PLAIN;
  const body: string[] = [];
  for (let y = 0; y < rows; y++) {
    const { html, style: next } = lineHtml(lines[y] ?? '', cols, y === cursor.y ? cursor.x : undefined, style);
    style = next;
    body.push(html);
  }
  return `<!doctype html><html><head><meta charset="utf-8"><style>
  body { margin: 0; background: #ffffff; }
  #frame { display: inline-block; margin: 0; background: ${DEFAULT_BG}; border-radius: 6px; overflow: hidden; }
  #title { font: 12px "DejaVu Sans", sans-serif; color: #cccccc; background: #323233; padding: 5px 12px; }
  pre { margin: 0; padding: 8px 10px; font: 13px/17px "DejaVu Sans Mono", monospace; color: ${DEFAULT_FG}; white-space: pre; }
  pre div { height: 17px; }
  pre span { display: inline-block; height: 17px; vertical-align: top; }
  .cursor { background: #cccccc; color: ${DEFAULT_BG}; }
  </style></head><body><div id="frame"><div id="title">${escapeHtml(title)}</div><pre>${body.map((l) => `<div>${l}</div>`).join('')}</pre></div></body></html>`;
}

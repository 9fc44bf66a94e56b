// What the Neovim and Helix suites share: the repository every picture
// shows (two scripted agents, one of them changing the line you edit), the
// terminal they run in, and Chromium to draw its screen.

import * as fs from 'node:fs';
import * as path from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';

import { CART, E2eEnv } from './env';

import { Tmux } from './tmux';


export interface Scene {
  env: E2eEnv;
  repo: string;
  tmux: Tmux;
  browser: Browser;
  artifacts: string;
}

/**
 * A repository with two agents: `tax-fix` changed line 5 of src/cart.py
 * (not committed), `add-docs` committed a README and says it is done.
 */
export async function scene(owt: string, artifacts: string): Promise<Scene> {
  const env = new E2eEnv(owt);
  const repo = env.repo('shop', { 'src/cart.py': CART, 'README.md': '# shop\n' });
  await env.newAgent(repo, 'tax-fix', 'Use the regional VAT rate');
  await env.tell(repo, 'tax-fix', 'edit src/cart.py 5     tax = amount * vat_rate(region)');
  await env.newAgent(repo, 'add-docs', 'Document the cart module');
  await env.tell(repo, 'add-docs', 'edit README.md 1 # shop: a cart with taxes and discounts');
  await env.tell(repo, 'add-docs', 'commit Document the cart module');
  await env.tell(repo, 'add-docs', 'signal done');
  const chromium = process.env.CHROMIUM ?? '/usr/bin/chromium';
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    pipe: true,
    userDataDir: path.join(env.root, 'chromium'),
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--host-resolver-rules=MAP * ~NOTFOUND'],
  });
  const tmux = new Tmux(env.root, { ...env.env, TERM: 'xterm-256color', COLORTERM: 'truecolor' }, 110, 30);
  fs.mkdirSync(artifacts, { recursive: true });
  return { env, repo, tmux, browser, artifacts };
}

/** Nothing a scene started outlives the test process, even when it is interrupted. */
export function killOnExit(scene: () => Scene | undefined): void {
  const kill = (): void => {
    const s = scene();
    s?.tmux.kill();
    s?.env.cleanup(true);
  };
  process.on('exit', kill);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      kill();
      process.exit(130);
    });
  }
}

export async function teardown(s: Scene | undefined): Promise<void> {
  if (!s) return;
  s.tmux.kill();
  await s.browser.close().catch(() => undefined);
  s.env.cleanup(false);
}

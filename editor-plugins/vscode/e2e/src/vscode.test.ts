// The owt extension in a real VS Code (code-server, driven by headless
// Chromium), against the real `owt` binary, real git repositories and
// scripted agents in real PTYs (tests/data/editor-agent.sh). Each scenario
// opens its own window on its own repository, asserts on what a person sees
// (tree rows, badge, status bar, squiggles, Problems, hovers, menus,
// terminal text, dialogs, notifications) and saves a screenshot.
//
// Not here yet: the review scenario (multi-diff editor of an agent's
// files) waits for the review feature.

import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { E2eEnv, owtBin, poll, REPO_ROOT } from './env';
import { T, toolsFromEnv, Window, Workbench, type Row } from './workbench';

const ARTIFACTS = process.env.OWT_E2E_ARTIFACTS ?? path.join(REPO_ROOT, 'target', 'vscode-e2e');

let env: E2eEnv | undefined;
let workbench: Workbench | undefined;
let setupError: unknown;

function world(): { env: E2eEnv; workbench: Workbench } {
  if (setupError !== undefined) throw setupError;
  assert.ok(env && workbench, 'the workbench did not start');
  return { env, workbench };
}

/** Synchronous teardown for an interrupted run: nothing outlives it. */
function killEverything(): void {
  workbench?.killServer();
  env?.cleanup(true);
}
process.on('exit', killEverything);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killEverything();
    process.exit(130);
  });
}

before(async () => {
  try {
    fs.rmSync(ARTIFACTS, { recursive: true, force: true });
    env = new E2eEnv(owtBin());
    workbench = new Workbench(env, toolsFromEnv(), ARTIFACTS);
    await workbench.start();
  } catch (err) {
    setupError = err;
  }
});

after(async () => {
  await workbench?.stop();
  env?.cleanup(false);
});

/** Lanes and their sessions, as the tree shows them (lane label → session names). */
function lanes(rows: Row[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  let lane = '';
  for (const r of rows) {
    if (r.level === 1) {
      lane = r.name;
      out[lane] = [];
    } else if (r.level === 2) {
      (out[lane] ??= []).push(r.name);
    }
  }
  return out;
}

function sameLanes(rows: Row[], expected: Record<string, string[]>): boolean {
  return JSON.stringify(lanes(rows)) === JSON.stringify(expected);
}

/** The badge on the owt activity bar entry ('' when none). */
function owtBadge(w: Window): Promise<string> {
  return w.page.evaluate(() => {
    for (const label of document.querySelectorAll('.activitybar .action-item .action-label')) {
      if (!(label.getAttribute('aria-label') ?? '').startsWith('owt')) continue;
      const badge = label.closest('.action-item')?.querySelector('.badge .badge-content') as HTMLElement | null;
      return badge && badge.offsetParent !== null ? (badge.textContent ?? '').trim() : '';
    }
    return '';
  });
}

/**
 * Opens a window and waits for the extension's first board: the status bar
 * item reading `status`, the Agents view showing `session`'s row.
 */
async function openBoard(name: string, repo: string, want: { status?: RegExp; session?: string }): Promise<Window> {
  const w = await world().workbench.open(repo, name);
  const status = want.status ?? /^owt: /;
  await w.until(`the owt status bar item to read ${status}`, T.activate, (src: string) => {
    const re = new RegExp(src);
    return [...document.querySelectorAll('.part.statusbar .statusbar-item')].some((i) => re.test((i.textContent ?? '').trim()));
  }, status.source);
  await w.showAgents();
  const session = want.session;
  if (session !== undefined) await w.rowsUntil(session, (r) => r.some((x) => x.level === 2 && x.name === session));
  return w;
}

/** Hovers a session row and clicks one of its inline actions (by its title). */
async function rowAction(w: Window, session: string, action: string): Promise<void> {
  const box = await w.until(`the row of ${session}`, T.ui, (name: string) => {
    for (const row of document.querySelectorAll('[id="workbench.view.extension.owt"] .monaco-list-row')) {
      if ((row.querySelector('.label-name')?.textContent ?? '').trim() !== name) continue;
      const b = row.getBoundingClientRect();
      return { x: b.x + 40, y: b.y + b.height / 2 };
    }
    return null;
  }, session);
  await w.page.mouse.move(box.x, box.y);
  await w.click(`${action} on ${session}'s row`, `[id="workbench.view.extension.owt"] .monaco-list-row .actions .action-label`, new RegExp(`^\\s*${action}`));
}

/** Line numbers (1-based) of the active editor that carry a squiggle of `kind` (error, warning, info). */
function squiggleLines(w: Window, kind: string): Promise<number[]> {
  return w.page.evaluate((k: string) => {
    const editor = document.querySelector('.editor-group-container.active .monaco-editor') ?? document.querySelector('.monaco-editor');
    if (!editor) return [];
    const lineAt = new Map<string, number>();
    for (const n of editor.querySelectorAll('.margin-view-overlays .line-numbers')) {
      const top = (n.closest('[style*="top"]') as HTMLElement | null)?.style.top ?? '';
      lineAt.set(top, Number((n.textContent ?? '').trim()));
    }
    const lines = new Set<number>();
    for (const s of editor.querySelectorAll(`.view-overlays .squiggly-${k}`)) {
      const top = (s.closest('[style*="top"]') as HTMLElement | null)?.style.top ?? '';
      const line = lineAt.get(top);
      if (line !== undefined) lines.add(line);
    }
    return [...lines].sort((a, b) => a - b);
  }, kind);
}

const CART = [
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

describe('owt in a real VS Code', () => {
  it('activation: the view, badge and status bar show the board; a status change moves a session', async () => {
    const { env } = world();
    const repo = env.repo('shop', { 'src/cart.py': CART, 'src/auth.py': 'def login(user):\n    return user\n' });
    await env.newAgent(repo, 'fix-login', 'Fix the login redirect loop');
    await env.newAgent(repo, 'add-jwt', 'Add JWT refresh tokens');
    await env.newAgent(repo, 'refactor-billing', 'Refactor the billing module');
    await env.tell(repo, 'fix-login', 'signal waiting');
    await env.tell(repo, 'add-jwt', 'edit src/auth.py 2     return issue_token(user)');
    await env.tell(repo, 'add-jwt', 'commit Add JWT refresh tokens');
    await env.tell(repo, 'add-jwt', 'signal done');
    await env.tell(repo, 'refactor-billing', 'work Splitting invoices.py into modules');
    await poll('the CLI to show one session in each lane', T.server, () => {
      const byName = Object.fromEntries(env.sessions(repo).map((s) => [s.name, s.lane]));
      return byName['fix-login'] === 'needs-you' && byName['add-jwt'] === 'ready-to-ship' && byName['refactor-billing'] === 'in-flight'
        ? true
        : undefined;
    });

    const w = await openBoard('activation', repo, { status: /^owt: 1 working · 1 needs you · 1 ready$/ });
    const rows = await w.rowsUntil('one session in each lane', (r) =>
      sameLanes(r, { 'NEEDS YOU': ['fix-login'], 'READY TO SHIP': ['add-jwt'], 'IN FLIGHT': ['refactor-billing'] }),
    );
    const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
    assert.match(byName['fix-login']?.description ?? '', /^needs-input · scripted$/);
    assert.match(byName['add-jwt']?.description ?? '', /^done · scripted · \+1 commit$/);
    assert.match(byName['refactor-billing']?.description ?? '', /^working · scripted$/);
    assert.match(byName['add-jwt']?.aria ?? '', /Add JWT refresh tokens/, 'the tooltip (aria label) carries the task');
    assert.equal(await owtBadge(w), '1', 'the badge counts the sessions that need you');
    await w.screenshot('activation-board');

    // The agent asks a question: it moves to NEEDS YOU, the badge and status bar follow.
    await env.tell(repo, 'refactor-billing', 'signal waiting');
    await w.rowsUntil('refactor-billing in NEEDS YOU', (r) =>
      sameLanes(r, { 'NEEDS YOU': ['fix-login', 'refactor-billing'], 'READY TO SHIP': ['add-jwt'] }) ||
      sameLanes(r, { 'NEEDS YOU': ['refactor-billing', 'fix-login'], 'READY TO SHIP': ['add-jwt'] }),
    );
    await w.until('the badge to count 2', T.server, () => {
      for (const label of document.querySelectorAll('.activitybar .action-item .action-label')) {
        if (!(label.getAttribute('aria-label') ?? '').startsWith('owt')) continue;
        return (label.closest('.action-item')?.querySelector('.badge .badge-content')?.textContent ?? '').trim() === '2';
      }
      return false;
    });
    assert.equal(await w.owtStatus(), 'owt: 2 needs you · 1 ready');
    await w.screenshot('activation-status-change');
    await w.close();
  });

  it('diagnostics and code actions: squiggles, Problems, hover, the Quick Fix menu, the agent\'s copy; cleared on revert', async () => {
    const { env } = world();
    const repo = env.repo('store', { 'src/cart.py': CART });
    await env.newAgent(repo, 'tax-fix', 'Use the regional VAT rate');
    await env.tell(repo, 'tax-fix', 'edit src/cart.py 5     tax = amount * vat_rate(region)');
    const w = await openBoard('diagnostics', repo, { session: 'tax-fix' });

    // Your unsaved edit of the same line: a conflict with the agent's change.
    await w.openFile('src/cart.py');
    await w.gotoLine(5, 11);
    await w.press('Shift', 'End');
    await w.type('amount * 0.25');
    const message = /^tax-fix \(scripted, [a-z -]+\) changed line 5 here \(\+1 −1\); merging it with your changes will conflict$/;
    await w.until('an error squiggle', T.server, () => document.querySelector('.monaco-editor .view-overlays .squiggly-error') !== null);
    assert.deepEqual(await squiggleLines(w, 'error'), [5], 'the squiggle is on the agent\'s line, and only there');

    // The hover over the line tells who changed what.
    await w.command('Show or Focus Hover');
    const hover = await w.until('the hover with the owt message', T.ui, () => {
      const h = document.querySelector('.monaco-hover:not(.hidden) .hover-contents, .monaco-hover .marker');
      return h && /tax-fix/.test(h.textContent ?? '') ? (h.closest('.monaco-hover')?.textContent ?? '') : null;
    });
    assert.match(hover, /tax-fix \(scripted, [a-z -]+\) changed line 5 here/);
    assert.match(hover, /owt\(conflict\)/, 'the hover names the source and the level');
    assert.match(hover, /tax-fix's copy/, "the hover links the agent's copy of the lines");
    await w.screenshot('diagnostics-hover');
    await w.press('Escape');

    // The Problems panel lists it with the owt message.
    await w.command('View: Focus Problems');
    const problem = await w.until('an owt entry in the Problems panel', T.ui, () => {
      for (const row of document.querySelectorAll('.markers-panel .monaco-list-row')) {
        const label = row.getAttribute('aria-label') ?? '';
        if (/tax-fix/.test(label)) return { label, text: row.textContent ?? '' };
      }
      return null;
    });
    assert.match(problem.text, /changed line 5 here/);
    assert.match(problem.text, /owt/);
    assert.match(problem.text, /\[Ln 5, Col 1\]/);
    const messageText = problem.text.slice(problem.text.indexOf('tax-fix'), problem.text.indexOf('conflict') + 'conflict'.length);
    assert.match(messageText, message);
    await w.screenshot('diagnostics-problems');

    // Quick Fix on the line: attach, ship, tell the agent, open the agent's copy.
    await w.openFile('src/cart.py');
    await w.gotoLine(5, 5);
    await w.command('Quick Fix...');
    const items = await w.until('the Quick Fix menu', T.server, () => {
      const rows = [...document.querySelectorAll('.action-widget .monaco-list-row')].map((r) => (r.textContent ?? '').trim());
      return rows.some((t) => t.startsWith('owt:')) ? rows : null;
    });
    for (const expected of [
      "owt: open tax-fix's copy of src/cart.py",
      'owt: tell tax-fix about this overlap',
      'owt: attach to tax-fix',
      'owt: ship tax-fix',
    ]) {
      assert.ok(items.some((t) => t.includes(expected)), `Quick Fix lacks “${expected}”: ${JSON.stringify(items)}`);
    }
    await w.screenshot('code-actions');
    await w.click("“open tax-fix's copy”", '.action-widget .monaco-list-row', /open tax-fix's copy/);
    await w.until("the agent's copy in the editor", T.server, () => {
      const group = document.querySelector('.editor-group-container.active');
      const crumbs = [...(group?.querySelectorAll('.breadcrumbs-control .monaco-breadcrumb-item') ?? [])].map((c) => (c.textContent ?? '').trim());
      const text = [...(group?.querySelectorAll('.view-lines .view-line') ?? [])].map((l) => l.textContent ?? '').join('\n');
      return crumbs.join('/').endsWith('store.worktrees/tax-fix/src/cart.py') && text.includes('vat_rate(region)');
    });
    await w.screenshot('code-actions-agent-copy');

    // The agent reverts: the squiggle and the Problems entry go away.
    await env.tell(repo, 'tax-fix', 'revert');
    await w.openFile('src/cart.py');
    await w.until('the squiggle to clear', T.server, () => document.querySelector('.monaco-editor .view-overlays .squiggly-error') === null);
    await w.command('View: Focus Problems');
    await w.until('the Problems panel without owt entries', T.server, () => {
      const panel = document.querySelector('.markers-panel');
      return panel !== null && ![...panel.querySelectorAll('.monaco-list-row')].some((r) => /tax-fix/.test(r.getAttribute('aria-label') ?? ''));
    });
    await w.close();
  });

  it('attach: the integrated terminal shows the agent; typing reaches it; closing the terminal leaves it running', async () => {
    const { env } = world();
    const repo = env.repo('api', { 'README.md': '# api\n' });
    const agent = await env.newAgent(repo, 'api-docs', 'Document the public API');
    const w = await openBoard('attach', repo, { session: 'api-docs' });

    await rowAction(w, 'api-docs', 'Attach');
    const tab = await w.terminalUntil("the agent's screen in a terminal tab", /editor-agent: Document the public API[\s\S]*ready> /);
    assert.match(tab, /api-docs/, 'the terminal tab is named after the session');

    await w.type('hello from VS Code');
    await w.press('Enter');
    await w.terminalUntil('the agent to answer in the terminal', /got: hello from VS Code/);
    await env.waitForScreen(repo, 'api-docs', /got: hello from VS Code/, 'the typed line (seen by the agent)');
    await w.screenshot('attach-terminal');

    // Close the terminal tab: the agent keeps running.
    await w.click("the terminal tab's close button", '.tabs-container .tab.active .tab-actions .action-label', /Close/);
    await w.until('the terminal tab to close', T.ui, () =>
      ![...document.querySelectorAll('.tabs-container .tab')].some((t) => (t.textContent ?? '').includes('api-docs')),
    );
    const after = env.session(repo, 'api-docs');
    assert.ok(after && after.status !== 'exited', `api-docs after closing its terminal: ${JSON.stringify(after)}`);
    assert.ok(agent.agent_pid !== null && E2eEnv.alive(agent.agent_pid), `the agent process ${agent.agent_pid} is gone`);
    const rows = await w.rows();
    assert.ok(rows.some((r) => r.name === 'api-docs' && !/exited/.test(r.description)), JSON.stringify(rows));
    await w.close();
  });
});

// owt in a real Helix ($OWT_HELIX, 25.07 or newer) in a terminal (tmux):
// the languages.toml that `owt editor helix --write` makes, the real
// `owt lsp`, scripted agents. Asserts on the screen's text and draws it to
// a PNG (the docs' pictures). Run by e2e/run.sh only when $OWT_HELIX is set.

import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { owtBin, REPO_ROOT } from './env';
import { killOnExit, scene, teardown, type Scene } from './terminal-editors';

const ARTIFACTS = process.env.OWT_E2E_ARTIFACTS ?? path.join(REPO_ROOT, 'target', 'vscode-e2e');

let s: Scene | undefined;
let setupError: unknown;
killOnExit(() => s);

before(async () => {
  try {
    const hx = process.env.OWT_HELIX;
    if (!hx || !fs.existsSync(hx)) throw new Error(`$OWT_HELIX must name a Helix binary (got ${hx ?? 'nothing'})`);
    s = await scene(owtBin(), ARTIFACTS);
    // owt's own installer writes the language servers; the rest is taste.
    s.env.cli(s.repo, 'editor', 'helix', '--write');
    const config = path.join(s.env.env.XDG_CONFIG_HOME ?? '', 'helix', 'config.toml');
    fs.writeFileSync(
      config,
      ['[editor]', 'true-color = true', '', '[editor.inline-diagnostics]', 'cursor-line = "hint"', 'other-lines = "hint"', ''].join('\n'),
    );
    const runtime = path.join(path.dirname(hx), 'runtime');
    s.tmux.env.HELIX_RUNTIME = fs.existsSync(runtime) ? runtime : path.join(s.env.root, 'helix-runtime');
    fs.mkdirSync(s.tmux.env.HELIX_RUNTIME, { recursive: true });
    s.tmux.start(s.repo, [hx, 'src/cart.py']);
  } catch (err) {
    setupError = err;
  }
});

after(async () => {
  await teardown(s);
});

function scn(): Scene {
  if (setupError !== undefined) throw setupError;
  assert.ok(s, 'no scene');
  return s;
}

describe('owt in a real Helix (in a terminal)', () => {
  it('diagnostics: your unsaved edit of the line an agent changed shows the owt message inline', async () => {
    const { tmux, browser, artifacts } = scn();
    await tmux.until('the file', /def total\(items\):/);
    tmux.text('5gg');
    tmux.keys('A');
    tmux.text(' * 1.25');
    tmux.keys('Escape');
    const screen = await tmux.until('the conflict diagnostic under line 5', /tax-fix \(scripted, [a-z -]+\) changed line 5 here/);
    assert.match(screen, /tax = amount \* 0\.20 \* 1\.25/);
    await tmux.picture(browser, path.join(artifacts, 'helix-diagnostics.png'), 'hx src/cart.py');
  });

  it("code actions (Space a): open the agent's copy, tell it, attach, ship; no merge before the agent commits", async () => {
    const { tmux, browser, artifacts } = scn();
    tmux.keys('Space');
    tmux.text('a');
    const screen = await tmux.until('the code action menu', /owt: ship tax-fix/);
    for (const item of ["owt: open tax-fix's copy of src/cart.py", 'owt: tell tax-fix about this overlap', 'owt: attach to tax-fix']) {
      assert.ok(screen.includes(item), `the menu lacks “${item}”:\n${screen}`);
    }
    // The agent has changed files but no commit: the server's actions leave merge out.
    assert.ok(!screen.includes('owt: merge tax-fix'), `the menu offers a merge with nothing committed:\n${screen}`);
    await tmux.picture(browser, path.join(artifacts, 'helix-code-actions.png'), 'hx src/cart.py — Space a');
    tmux.keys('Escape');
    await tmux.until('the menu to close', (t) => !t.includes('owt: ship tax-fix'));
  });

  it("review: `owt review` prints file:line locations Helix opens; “show the base version” opens a read-only copy", async () => {
    const { env, repo, tmux, browser, artifacts } = scn();
    const worktree = env.session(repo, 'tax-fix')?.worktree;
    assert.ok(worktree, 'tax-fix has a worktree');
    // Helix has no diff view: the CLI prints one `file:line` per hunk.
    const locations = env.cli(repo, 'review', 'tax-fix');
    const cart = `${worktree}/src/cart.py`;
    const line = locations.split('\n').find((l) => l.startsWith(`${cart}:5: `));
    assert.ok(line, `no ${cart}:5 location in:\n${locations}`);
    assert.match(line, /\(modified, \+1 -1, not reviewed\)/);
    // `:open FILE:LINE` takes the location as printed.
    tmux.text(`:open ${line.split(': ')[0]}\r`);
    await tmux.until("the agent's copy at line 5", (t) => t.includes('vat_rate(region)') && t.includes('tax-fix/src/cart.py'));
    tmux.keys('Space');
    tmux.text('a');
    const menu = await tmux.until('the code action menu with the review actions', /owt: show the base version of src\/cart\.py/);
    const items = menu.split('\n').filter((l) => /owt: /.test(l)).map((l) => l.replace(/^.*?(owt: .*?)\s*(│.*)?$/, '$1').trim());
    const at = items.findIndex((i) => i.startsWith('owt: show the base version of src/cart.py'));
    assert.ok(at >= 0, `the menu: ${JSON.stringify(items)}`);
    // The menu opens on its first item.
    for (let i = 0; i < at; i++) tmux.keys('Down');
    tmux.keys('Enter');
    // window/showDocument: Helix opens owt's copy of the base version.
    const base = await tmux.until('the base version', (t) => /\/review\/\S*\/src\/cart\.py/.test(t) && t.includes('tax = amount * 0.20') && !t.includes('vat_rate(region)'));
    const copy = /(\/\S*\/review\/\S*\/src\/cart\.py)/.exec(base)?.[1];
    assert.ok(copy && fs.existsSync(copy), `the statusline names the copy: ${copy}\n${base}`);
    // Read-only on disk (Helix shows no [readonly] for root, who may write anything).
    assert.equal(fs.statSync(copy).mode & 0o777, 0o400, `${copy} is read-only`);
    assert.ok(copy.startsWith(path.join(env.env.OWT_HOME ?? '', 'review')), `${copy} is under $OWT_HOME/review`);
    await tmux.picture(browser, path.join(artifacts, 'helix-review.png'), 'hx — the base version of src/cart.py (owt: show the base version)');
  });

  it('review comment: select lines in the agent’s copy, “ask tax-fix to change this…”, then `:lsp-workspace-command owt.comment "text"`; one message reaches the agent, the Hint shows', async () => {
    const { env, repo, tmux, browser, artifacts } = scn();
    const worktree = env.session(repo, 'tax-fix')?.worktree;
    assert.ok(worktree, 'tax-fix has a worktree');
    const cart = `${worktree}/src/cart.py`;
    tmux.text(`:open ${cart}\r`);
    await tmux.until("the agent's copy", (t) => t.includes('vat_rate(region)') && t.includes('tax-fix/src/cart.py'));
    // Lines 5 and 6 selected: `5gg`, `x` (the line), `x` (and the next).
    tmux.text('5ggxx');
    tmux.keys('Space');
    tmux.text('a');
    const menu = await tmux.until('the code action menu with the comment action', /owt: ask tax-fix to change this…/);
    const items = menu.split('\n').filter((l) => /owt: /.test(l)).map((l) => l.replace(/^.*?(owt: .*?)\s*(│.*)?$/, '$1').trim());
    const at = items.findIndex((i) => i.startsWith('owt: ask tax-fix to change this'));
    assert.ok(at >= 0, `the menu: ${JSON.stringify(items)}`);
    for (let i = 0; i < at; i++) tmux.keys('Down');
    tmux.keys('Enter');
    // Helix cannot ask for text: the server says how to give it.
    await tmux.until('how to give the comment', /lsp-workspace-command owt\.comment/);
    tmux.keys('Escape');
    tmux.text(':lsp-workspace-command owt.comment "keep 0.20 as the fallback rate"\r');
    // Typed into the agent as one message (the scripted agent echoes each
    // input it gets as `got: …`; the terminal wraps it at its width). The
    // screen shows the typed text at its prompt before the agent reads it:
    // wait for the echo itself.
    const whole = /got: (Review comment from the human supervising you \(owt review\)\..*?Comment: keep 0\.20 as the fallback rate)/;
    const got = await (async () => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const peek = env.cli(repo, 'peek', 'tax-fix').replace(/\n/g, '');
        if (whole.test(peek)) return peek;
        if (Date.now() > deadline) throw new Error(`one input holding the whole comment did not reach the agent:\n${peek}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const message = whole.exec(got)?.[1] ?? '';
    assert.ok(message, `one input holds the whole comment:\n${got}`);
    assert.match(message, /src\/cart\.py lines 5-6:/, 'the file and lines');
    assert.match(message, /tax = amount \* vat_rate\(region\)/, 'the selected text');
    const listed = JSON.parse(env.cli(repo, '--json', 'comments', 'tax-fix')) as { comments: { path: string; start_line: number; end_line: number; text: string }[] };
    assert.deepEqual(
      listed.comments.map((c) => [c.path, c.start_line, c.end_line, c.text]),
      [['src/cart.py', 5, 6, 'keep 0.20 as the fallback rate']],
    );
    // The comment as a Hint on those lines (inline: `[editor.inline-diagnostics]`).
    await tmux.until('the comment as an inline hint', /review comment 1 to tax-fix/, 30_000);
    await tmux.picture(browser, path.join(artifacts, 'helix-review-comment.png'), 'hx — :lsp-workspace-command owt.comment "keep 0.20 as the fallback rate"');
  });
});

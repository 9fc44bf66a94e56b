// The Neovim plugin as a person sees it: a real Neovim 0.11 ($NVIM) in a
// terminal (tmux), the real `owt lsp`, scripted agents. Asserts on the
// screen's text at each step and draws it to a PNG (the docs' pictures).

import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { owtBin, REPO_ROOT } from './env';
import { killOnExit, scene, teardown, type Scene } from './terminal-editors';

const ARTIFACTS = process.env.OWT_E2E_ARTIFACTS ?? path.join(REPO_ROOT, 'target', 'vscode-e2e');
const PLUGIN = path.join(REPO_ROOT, 'editor-plugins', 'neovim');

function nvimBin(): string {
  const nvim = process.env.NVIM ?? path.join(REPO_ROOT, '.venv-nvim', 'bin', 'nvim');
  if (!fs.existsSync(nvim)) throw new Error(`Neovim not found at ${nvim}: set $NVIM (scripts/test installs it into .venv-nvim)`);
  return nvim;
}

let s: Scene | undefined;
let setupError: unknown;
killOnExit(() => s);

before(async () => {
  try {
    s = await scene(owtBin(), ARTIFACTS);
    const init = path.join(s.env.root, 'init.lua');
    fs.writeFileSync(
      init,
      [
        `vim.opt.rtp:prepend(${JSON.stringify(PLUGIN)})`,
        'vim.o.termguicolors = true',
        'vim.o.number = true',
        "vim.o.signcolumn = 'yes'",
        'vim.o.swapfile = false',
        'vim.o.laststatus = 2',
        `vim.o.statusline = " %f %m %= %{v:lua.require'owt'.status()} "`,
        'vim.diagnostic.config({ virtual_text = true, signs = true, underline = true })',
        'vim.g.owt = { ask_provider = false }',
      ].join('\n'),
    );
    s.tmux.start(s.repo, [nvimBin(), '-u', init, '-i', 'NONE', 'src/cart.py']);
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

describe('owt in a real Neovim (in a terminal)', () => {
  it('diagnostics: your unsaved edit of the line an agent changed shows the owt message', async () => {
    const { tmux, browser, artifacts } = scn();
    await tmux.until('the statusline with the board counts', /owt .*(needs you|ready)/);
    tmux.text(':5\r');
    tmux.keys('A');
    tmux.text(' * 1.25');
    tmux.keys('Escape');
    const screen = await tmux.until('the conflict diagnostic beside line 5', /tax-fix \(scripted, [a-z -]+\) changed line 5 here/);
    assert.match(screen, /^E?\s*5 .*tax = amount \* 0\.20 \* 1\.25.*tax-fix/m, 'the message sits on line 5');
    await tmux.picture(browser, path.join(artifacts, 'neovim-diagnostics.png'), 'nvim src/cart.py');
  });

  it("code actions: open the agent's copy, tell it, attach, ship; no merge before the agent commits", async () => {
    const { tmux, browser, artifacts } = scn();
    tmux.text(':lua vim.lsp.buf.code_action()\r');
    const screen = await tmux.until('the code action menu', /owt: ship tax-fix/);
    for (const item of ["owt: open tax-fix's copy of src/cart.py", 'owt: tell tax-fix about this overlap', 'owt: attach to tax-fix']) {
      assert.ok(screen.includes(item), `the menu lacks “${item}”:\n${screen}`);
    }
    // The agent has changed files but no commit: the server's actions leave merge out.
    assert.ok(!screen.includes('owt: merge tax-fix'), `the menu offers a merge with nothing committed:\n${screen}`);
    await tmux.picture(browser, path.join(artifacts, 'neovim-code-actions.png'), 'nvim src/cart.py — code actions');
    tmux.keys('Escape');
    await tmux.until('the menu to close', (t) => !t.includes('owt: ship tax-fix'));
  });

  it('board and attach: the lanes in a buffer; `a` opens the agent in a terminal split', async () => {
    const { tmux, browser, artifacts } = scn();
    tmux.text(':Owt board\r');
    const board = await tmux.until('the board with both lanes', /READY TO SHIP[\s\S]*add-docs/);
    assert.match(board, /tax-fix/);
    await tmux.picture(browser, path.join(artifacts, 'neovim-board.png'), 'nvim — :Owt board');
    tmux.text('/tax-fix\r');
    tmux.keys('a');
    const screen = await tmux.until("the agent's screen in a terminal", /editor-agent: Use the regional VAT rate/);
    assert.match(screen, /ok #1: edit src\/cart\.py 5/);
    await tmux.picture(browser, path.join(artifacts, 'neovim-attach.png'), 'nvim — attached to tax-fix');
  });

  it("review: :Owt review opens the agent's files beside the base, side by side", async () => {
    const { tmux, browser, artifacts } = scn();
    // Out of the attached terminal (terminal mode) first; a wider terminal
    // holds the file list and both sides.
    tmux.keys('C-\\', 'C-n');
    tmux.resize(150, 30);
    await tmux.until('Neovim redrawn 150 columns wide (its statusline)', (t) => t.split('\n').some((l) => l.length > 140 && /owt \d/.test(l)));
    tmux.text(':nohlsearch | tabnew | Owt review tax-fix\r');
    const screen = await tmux.until('the review tab: the file list and both sides of src/cart.py', (t) =>
      /owt review: tax-fix \(\+1 −1 against/.test(t) && t.includes('vat_rate(region)') && t.includes('amount * 0.20'),
    );
    assert.match(screen, /M \+1 −1\s+src\/cart\.py/, 'the file list names the changed file with its counts');
    // Side by side: the base's line 5 and the agent's, on one screen line.
    assert.match(screen, /tax = amount \* 0\.20.*│.*tax = amount \* vat_rate\(region\)/, 'base | agent on line 5');
    await tmux.picture(browser, path.join(artifacts, 'neovim-review.png'), 'nvim — :Owt review tax-fix');
  });
});

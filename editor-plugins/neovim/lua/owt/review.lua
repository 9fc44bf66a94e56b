--- `:Owt review [name]`: a tab with the agent's changed files (from the
--- server's `owt/diff`, else `owt --json diff`) in a sidebar, and a
--- side-by-side diff (`diffthis`) of the selected file: the base version,
--- read-only, on the left, the agent's copy on the right. Opening a file
--- marks it reviewed as it was in the diff shown (`owt.markReviewed` with
--- the report's snapshot, else `owt review --mark --snapshot`): ship warns
--- about files nobody opened since the agent's last change.
---
--- Keys (sidebar and both diff windows): `]f`/`[f` next/previous file,
--- `<CR>` (sidebar) open the file under the cursor, `s` ship, `m` merge,
--- `d` discard (delete, through owt's delete rules), `r` reload, `q` close.
local actions = require("owt.actions")
local client_mod = require("owt.client")

local M = {}

---@class owt.ReviewView
---@field name string
---@field report table  DiffReport
---@field index integer|nil  the file shown
---@field sidebar integer    buffer
---@field client_id integer|nil
---@field root string

---@type table<integer, owt.ReviewView>  tabpage → view
M.views = {}

local STATUS = {
  added = "A",
  deleted = "D",
  modified = "M",
  renamed = "R",
  ["mode-changed"] = "M",
  ["type-changed"] = "T",
}

local function fail(msg)
  vim.notify("owt: " .. msg, vim.log.levels.ERROR, { title = "owt" })
end

--- Fetches `name`'s diff: `on_done(report|nil, err|nil)`.
function M.fetch(name, on_done)
  local client = client_mod.get()
  if client then
    client:request("owt/diff", { session = name }, function(err, report)
      on_done(report, err and (err.message or tostring(err)) or nil)
    end, 0)
    return
  end
  client_mod.cli_json({ "diff", name }, on_done)
end

--- Marks `path` of `name` reviewed as it was in the diff shown (its
--- snapshot): a file the agent changed since stays not reviewed.
function M.mark_reviewed(view, path)
  local client = view.client_id and vim.lsp.get_client_by_id(view.client_id) or client_mod.get()
  local snapshot = view.report.snapshot
  local function done(out, err)
    if err then
      return fail(err)
    end
    local reviewed = {}
    for _, p in ipairs((out or {}).reviewed or {}) do
      reviewed[p] = true
    end
    for _, f in ipairs(view.report.files) do
      f.reviewed = reviewed[f.path] == true
    end
    M.render(view)
  end
  if client then
    client_mod.execute(client, "owt.markReviewed", { session = view.name, path = path, snapshot = snapshot }, done)
  else
    client_mod.cli_json({ "review", view.name, "--mark", path, "--snapshot", snapshot }, done)
  end
end

--- Lines above the files in the sidebar: the title and the keys (two
--- lines, so they fit its 40 columns unwrapped).
local HEAD = 3

--- The sidebar's lines; file `i` is on line `i + HEAD`.
function M.lines(report)
  local lines = {
    ("owt review: %s (+%d −%d against %s)"):format(report.session, report.additions or 0, report.deletions or 0, report.base),
    "]f/[f next/prev  <CR> open  r reload",
    "s ship  m merge  d discard  q close",
  }
  for _, f in ipairs(report.files) do
    local counts = f.binary and "binary" or ("+%d −%d"):format(f.additions or 0, f.deletions or 0)
    local name = f.old_path and (f.old_path .. " → " .. f.path) or f.path
    lines[#lines + 1] = ("%s %s %-10s %s"):format(f.reviewed and "✓" or " ", STATUS[f.status] or "?", counts, name)
  end
  if #report.files == 0 then
    lines[#lines + 1] = "(no changes)"
  end
  return lines
end

function M.render(view)
  if not vim.api.nvim_buf_is_valid(view.sidebar) then
    return
  end
  vim.bo[view.sidebar].modifiable = true
  vim.api.nvim_buf_set_lines(view.sidebar, 0, -1, false, M.lines(view.report))
  vim.bo[view.sidebar].modifiable = false
  vim.bo[view.sidebar].modified = false
end

--- What stands for a binary file's side (its bytes are not text to diff).
local function binary_lines(side, blob)
  return { ("Binary file: the %s version, not shown (git cat-file blob %s)"):format(side, blob or "-") }
end

--- The base version's text of file `f` (empty for an added file).
local function base_lines(view, f)
  if not f.base_blob then
    return {}
  end
  if f.binary then
    return binary_lines("base", f.base_blob)
  end
  local out = vim.system({ "git", "-C", view.report.worktree, "cat-file", "blob", f.base_blob }, { text = true }):wait(10000)
  if out.code ~= 0 then
    fail("cannot read the base version of " .. f.path .. ": " .. (out.stderr or ""))
    return {}
  end
  local text = out.stdout or ""
  if text:sub(-1) == "\n" then
    text = text:sub(1, -2)
  end
  return vim.split(text, "\n", { plain = true })
end

local function sidebar_win(view)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == view.sidebar then
      return win
    end
  end
end

--- Columns of the file list.
local SIDEBAR_WIDTH = 40

--- Shows file `i` side by side: base (read-only) | agent's copy.
function M.show(view, i)
  local f = view.report.files[i]
  if not f then
    return
  end
  view.index = i
  local side = sidebar_win(view)
  -- Only the sidebar stays; the two diff windows are made anew.
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if win ~= side then
      pcall(vim.api.nvim_win_close, win, true)
    end
  end
  if side then
    vim.api.nvim_set_current_win(side)
    vim.api.nvim_win_set_cursor(side, { i + HEAD, 0 })
  end
  vim.cmd("rightbelow vsplit")
  -- The agent's copy: the real file in its worktree (a deleted file: empty).
  local agent_win = vim.api.nvim_get_current_win()
  -- Code windows, with the user's settings (not the list's, which a split copies).
  for _, option in ipairs({ "number", "relativenumber", "signcolumn", "foldcolumn" }) do
    vim.api.nvim_set_option_value(option, vim.go[option], { scope = "local", win = agent_win })
  end
  if f.status ~= "deleted" and not f.binary then
    vim.cmd.edit(vim.fn.fnameescape(vim.fs.joinpath(view.report.worktree, f.path)))
  else
    vim.cmd.enew()
    vim.bo.buftype = "nofile"
    vim.bo.bufhidden = "wipe"
    if f.binary and f.agent_blob then
      vim.api.nvim_buf_set_lines(0, 0, -1, false, binary_lines("agent's", f.agent_blob))
      vim.bo.modifiable = false
    end
  end
  local agent_buf = vim.api.nvim_get_current_buf()
  -- The base: a scratch buffer, read-only.
  vim.cmd("leftabove vnew")
  local base_buf = vim.api.nvim_get_current_buf()
  vim.bo[base_buf].buftype = "nofile"
  vim.bo[base_buf].bufhidden = "wipe"
  vim.bo[base_buf].swapfile = false
  local base_name = ("owt-base://%s/%s"):format(view.name, f.old_path or f.path)
  pcall(vim.api.nvim_buf_set_name, base_buf, base_name)
  vim.api.nvim_buf_set_lines(base_buf, 0, -1, false, base_lines(view, f))
  vim.bo[base_buf].modifiable = false
  vim.bo[base_buf].readonly = true
  local ft = vim.filetype.match({ filename = f.path })
  if ft then
    vim.bo[base_buf].filetype = ft
  end
  -- Two binaries' notes are not a diff.
  if not f.binary then
    vim.cmd("diffthis")
  end
  vim.api.nvim_set_current_win(agent_win)
  if not f.binary then
    vim.cmd("diffthis")
  end
  -- The file list keeps its width (a split halves it); both sides share the rest.
  if side and vim.api.nvim_win_is_valid(side) then
    vim.api.nvim_win_set_width(side, SIDEBAR_WIDTH)
    vim.cmd("wincmd =")
  end
  for _, buf in ipairs({ base_buf, agent_buf }) do
    M.keys(view, buf)
  end
  -- The base is not the server's document (no code actions there): `c`
  -- (on a line, or a visual selection) asks the agent to change it.
  if f.status ~= "added" and not f.binary then
    local function ask(first, last)
      M.comment_on_base(view, f.path, first, last)
    end
    local opts = { buffer = base_buf, nowait = true, desc = "owt review: ask the agent to change this (base side)" }
    vim.keymap.set("n", "c", function()
      local l = vim.fn.line(".")
      ask(l, l)
    end, opts)
    vim.keymap.set("x", "c", function()
      local a, b = vim.fn.line("v"), vim.fn.line(".")
      vim.cmd("normal! " .. vim.keycode("<Esc>"))
      ask(math.min(a, b), math.max(a, b))
    end, opts)
  end
  vim.b[agent_buf].owt_review_session = view.name
  vim.b[base_buf].owt_review_session = view.name
  if not f.reviewed then
    M.mark_reviewed(view, f.path)
  end
end

function M.next(view, step)
  local n = #view.report.files
  if n == 0 then
    return
  end
  local i = ((view.index or 0) - 1 + step) % n + 1
  if view.index == nil and step < 0 then
    i = n
  end
  M.show(view, i)
end

--- The review keys in `buf`.
function M.keys(view, buf)
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, desc = "owt review: " .. desc })
  end
  map("]f", function()
    M.next(view, 1)
  end, "next file")
  map("[f", function()
    M.next(view, -1)
  end, "previous file")
  -- Through the server the review came from (the repository's), not the
  -- one of the agent's file in its worktree (which a discard removes).
  local function server()
    local client = view.client_id and vim.lsp.get_client_by_id(view.client_id)
    return client and not client:is_stopped() and client or nil
  end
  -- A ship, a merge that deleted the session, a discard: the tab closes.
  map("s", function()
    actions.ship(view.name, function(_, err)
      if not err then
        M.close(view)
      end
    end, server())
  end, "ship")
  map("m", function()
    actions.merge(view.name, function(out, err)
      if not err and out and out.deleted then
        M.close(view)
      end
    end, server())
  end, "merge")
  map("d", function()
    local choices = { "Delete", "Delete, dropping uncommitted work (--force)", "Cancel" }
    vim.ui.select(choices, { prompt = ("owt: discard %s?"):format(view.name) }, function(_, idx)
      if idx == 1 or idx == 2 then
        actions.delete(view.name, idx == 2, function(_, err)
          if not err then
            M.close(view)
          end
        end, server())
      end
    end)
  end, "discard")
  map("r", function()
    M.reload(view)
  end, "reload")
  map("q", function()
    vim.cmd("tabclose")
  end, "close")
end

--- Closes the review tab of `view` (its session is gone).
function M.close(view)
  for tab, v in pairs(M.views) do
    if v == view then
      M.views[tab] = nil
      if vim.api.nvim_tabpage_is_valid(tab) then
        if #vim.api.nvim_list_tabpages() > 1 then
          vim.cmd.tabclose(vim.api.nvim_tabpage_get_number(tab))
        else
          vim.api.nvim_set_current_tabpage(tab)
          vim.cmd("enew")
          vim.cmd("only")
        end
      end
    end
  end
end

function M.reload(view, on_done)
  M.fetch(view.name, function(report, err)
    if err then
      return fail(err)
    end
    view.report = report
    M.render(view)
    if on_done then
      on_done(view)
    end
  end)
end

--- Opens the review tab of `name`; `on_done(view)` once it is drawn.
function M.open(name, on_done)
  local origin = client_mod.get()
  M.fetch(name, function(report, err)
    if err then
      return fail(err)
    end
    vim.cmd("tabnew")
    local tab = vim.api.nvim_get_current_tabpage()
    local sidebar = vim.api.nvim_get_current_buf()
    vim.bo[sidebar].buftype = "nofile"
    vim.bo[sidebar].bufhidden = "wipe"
    vim.bo[sidebar].swapfile = false
    vim.bo[sidebar].filetype = "owt-review"
    pcall(vim.api.nvim_buf_set_name, sidebar, "owt://review/" .. name)
    local view = {
      name = name,
      report = report,
      sidebar = sidebar,
      client_id = origin and origin.id or nil,
      root = client_mod.root(),
    }
    if origin then
      vim.b[sidebar].owt_client_id = origin.id
    end
    M.views[tab] = view
    M.render(view)
    M.keys(view, sidebar)
    vim.keymap.set("n", "<CR>", function()
      local i = vim.api.nvim_win_get_cursor(0)[1] - HEAD
      if view.report.files[i] then
        M.show(view, i)
      end
    end, { buffer = sidebar, nowait = true, desc = "owt review: open file" })
    vim.wo.winfixwidth = true
    -- A list, not code: no line numbers or sign column in its 40 columns
    -- (this window only: the user's settings stay as they are).
    for option, value in pairs({ number = false, relativenumber = false, signcolumn = "no", foldcolumn = "0" }) do
      vim.api.nvim_set_option_value(option, value, { scope = "local", win = 0 })
    end
    if #report.files > 0 then
      M.show(view, 1)
    end
    if on_done then
      on_done(view)
    end
  end)
end

--- "Ask <agent> to change this…" on base lines `first..last` of `path`
--- (the read-only side of the diff): the server carries them onto the
--- agent's copy through the diff (`owt.comment` with `side = "base"`).
function M.comment_on_base(view, path, first, last)
  local client = view.client_id and vim.lsp.get_client_by_id(view.client_id)
  if not client or client:is_stopped() then
    fail("the owt server of this review is not running")
    return
  end
  local arg = { session = view.name, path = path, side = "base", start_line = first, end_line = last }
  M.comment_command({ arguments = { arg } }, { client_id = client.id })
end

--- `owt.comment` code actions: ask for the comment, then run the command
--- with it (registered in `vim.lsp.commands`).
function M.comment_command(command, ctx)
  local arg = vim.deepcopy((command.arguments or {})[1] or {})
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  vim.ui.input({ prompt = ("owt: ask %s to change this: "):format(arg.session or "the agent") }, function(text)
    if not text or vim.trim(text) == "" or not client then
      return
    end
    arg.text = text
    client_mod.execute(client, "owt.comment", arg, function(_, err)
      if err then
        fail(err)
      else
        vim.notify(("owt: comment for %s queued"):format(arg.session or "the agent"), vim.log.levels.INFO, { title = "owt" })
      end
    end)
  end)
end

return M

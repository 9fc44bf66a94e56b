-- Review in Neovim: `:Owt review NAME` opens a tab with the agent's changed
-- files and a side-by-side diff whose two sides hold the base and the
-- agent's text; opening a file marks it reviewed, and that survives a
-- restart (a second Neovim with its own owt lsp shows it); "Ask <agent> to change this…" on a
-- selection reaches the scripted agent as one message with file, lines,
-- text and comment; the comment shows as a Hint (source owt-review) until
-- the agent changes those lines.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

local function numbered(n)
  local lines = {}
  for i = 1, n do
    lines[i] = ("line %d"):format(i)
  end
  return lines
end
local base_text = table.concat(numbered(10), "\n") .. "\n"
local agent_log -- what the scripted agent was typed, one JSON string a line

-- The scripted agent (tests/data/fake_agent.py) logs every input it gets.
do
  local tmp_log = vim.fn.tempname() .. ".agent-log"
  agent_log = tmp_log
  h.setup({
    ["a.txt"] = base_text,
    ["b.txt"] = "bee\n",
    [".owt.toml"] = ('[agent]\ndefault_tool = "fake"\nenv = { FAKE_LOG = "%s" }\n[tools.fake]\nbinary = "%s"\n'):format(
      tmp_log,
      h.repo_root .. "/tests/data/fake_agent.py"
    ),
  })
end

local review = require("owt.review")
local session, view

local function agent_lines()
  local text = h.read(agent_log) or ""
  local out = {}
  for line in text:gmatch("[^\n]+") do
    out[#out + 1] = vim.json.decode(line)
  end
  return out
end

local function review_hints(buf)
  return vim.tbl_filter(function(d)
    return d.source == "owt-review"
  end, vim.diagnostic.get(buf))
end

h.run({
  {
    ":Owt review opens the file list and a diff of both sides",
    function()
      session = h.new_session("change a and b")
      h.wait(30000, function()
        local lines = vim.system({ h.bin, "-C", h.repo, "peek", session.name }, { text = true }):wait().stdout or ""
        return lines:find("FAKE AGENT READY", 1, true)
      end, "the scripted agent to start")
      local agent_a = { "line 1", "line 2", "line THREE", "line 4", "line 5", "line 6", "line 7", "line 8", "line 9", "line 10", "line 11" }
      h.write(session.worktree .. "/a.txt", table.concat(agent_a, "\n") .. "\n")
      h.write(session.worktree .. "/c.txt", "new file\n")
      h.open("b.txt")
      vim.o.number = true
      vim.cmd("Owt review " .. session.name)
      view = h.wait(20000, function()
        local v = review.views[vim.api.nvim_get_current_tabpage()]
        return v and v.index and v or nil
      end, "the review tab")
      local side = table.concat(vim.api.nvim_buf_get_lines(view.sidebar, 0, -1, false), "\n")
      h.truthy(side:find("M +2 −1", 1, true) and side:find("a.txt", 1, true), "a.txt with its counts in:\n" .. side)
      h.truthy(side:find("A +1 −0", 1, true) and side:find("c.txt", 1, true), "c.txt added in:\n" .. side)
      h.truthy(not side:find("b.txt", 1, true), "b.txt did not change:\n" .. side)
      -- Two diff windows beside the sidebar: base | agent.
      local diffed = {}
      for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        if vim.wo[win].diff then
          diffed[#diffed + 1] = vim.api.nvim_win_get_buf(win)
        end
      end
      h.eq(2, #diffed, "two windows in diff mode")
      local base_buf = vim.iter(diffed):find(function(b)
        return vim.api.nvim_buf_get_name(b):find("owt-base://", 1, true)
      end)
      local agent_buf = vim.iter(diffed):find(function(b)
        return b ~= base_buf
      end)
      h.eq(base_text:sub(1, -2), h.text(base_buf), "the base side")
      h.eq(false, vim.bo[base_buf].modifiable, "the base is read-only")
      h.eq(table.concat(agent_a, "\n"), h.text(agent_buf), "the agent's side")
      h.eq(session.worktree .. "/a.txt", vim.api.nvim_buf_get_name(agent_buf), "the agent's own file")
      h.eq(40, vim.api.nvim_win_get_width(vim.fn.bufwinid(view.sidebar)), "the file list keeps its width beside the two sides")
      h.eq(false, vim.wo[vim.fn.bufwinid(view.sidebar)].number, "no line numbers in the file list")
      h.eq(true, vim.go.number, "the user's 'number' is left as it was")
      h.eq(true, vim.wo[vim.fn.bufwinid(agent_buf)].number, "the code windows keep the user's 'number'")
      h.eq(true, vim.wo[vim.fn.bufwinid(base_buf)].number, "both of them")
      -- OWT_CAPTURE=FILE: the tab's windows as text, for docs/neovim.md.
      local capture = os.getenv("OWT_CAPTURE")
      if capture and capture ~= "" then
        local out = {}
        for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
          local b = vim.api.nvim_win_get_buf(win)
          out[#out + 1] = "── " .. vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":t") .. (vim.wo[win].diff and " (diff)" or "")
          vim.list_extend(out, vim.api.nvim_buf_get_lines(b, 0, -1, false))
        end
        h.write(capture, table.concat(out, "\n") .. "\n")
      end
    end,
  },
  {
    "]f moves to the next file; opened files are reviewed, for other processes too",
    function()
      vim.cmd("normal ]f")
      h.wait(10000, function()
        return view.index == 2
      end, "the second file")
      h.wait(10000, function()
        local report = h.owt_json({ "diff", session.name })
        local all = true
        for _, f in ipairs(report.files) do
          all = all and f.reviewed
        end
        return all
      end, "both files reviewed (read by a new owt process)")
      local side = h.wait(10000, function()
        local text = table.concat(vim.api.nvim_buf_get_lines(view.sidebar, 0, -1, false), "\n")
        return select(2, text:gsub("✓", "")) == 2 and text or nil
      end, "both rows checked in the sidebar")
      h.truthy(side, "sidebar")
    end,
  },
  {
    "a comment on a selection reaches the agent as one message and shows until the agent changes those lines",
    function()
      vim.cmd("normal [f")
      h.wait(10000, function()
        return view.index == 1
      end, "back to a.txt")
      local agent_buf = vim.api.nvim_get_current_buf()
      h.eq(session.worktree .. "/a.txt", vim.api.nvim_buf_get_name(agent_buf), "in the agent's copy")
      h.client(agent_buf)
      vim.ui.input = function(_, on_confirm)
        on_confirm("spell it as a digit")
      end
      local applied = false
      vim.lsp.buf.code_action({
        range = { start = { 3, 0 }, ["end"] = { 4, 3 } },
        filter = function(action)
          return action.title:find("ask " .. session.name .. " to change this", 1, true) ~= nil
        end,
        apply = true,
      })
      local expected = "Review comment from the human supervising you (owt review). Please change the code as asked:\n\n"
        .. "a.txt lines 3-4:\n    line THREE\n    line 4\nComment: spell it as a digit"
      h.wait(30000, function()
        for _, line in ipairs(agent_lines()) do
          if line == expected then
            applied = true
          end
        end
        return applied
      end, "the comment in the agent's input: " .. vim.inspect(agent_lines()))
      local hints = h.wait(20000, function()
        local d = review_hints(agent_buf)
        return #d > 0 and d or nil
      end, "the comment as a diagnostic")
      h.eq(vim.diagnostic.severity.HINT, hints[1].severity, "a Hint")
      h.eq(2, hints[1].lnum, "on line 3")
      -- The agent changes line 3: the comment is addressed and clears.
      local changed = { "line 1", "line 2", "line 3", "line 4", "line 5", "line 6", "line 7", "line 8", "line 9", "line 10", "line 11" }
      h.write(session.worktree .. "/a.txt", table.concat(changed, "\n") .. "\n")
      h.wait(30000, function()
        return #review_hints(agent_buf) == 0
      end, "the comment diagnostic to clear")
    end,
  },
  {
    "`c` on the base side asks the agent to change the agent's lines the diff maps the selection to",
    function()
      -- The agent inserts a line after line 2 and removes line 8.
      local agent_a = { "line 1", "line 2", "inserted", "line 3", "line 4", "line 5", "line 6", "line 7", "line 9", "line 10", "line 11" }
      h.write(session.worktree .. "/a.txt", table.concat(agent_a, "\n") .. "\n")
      local before = #agent_lines()
      local base_win = vim.iter(vim.api.nvim_tabpage_list_wins(0)):find(function(w)
        return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)):find("owt-base://", 1, true) ~= nil
      end)
      h.truthy(base_win, "the base side's window")
      vim.api.nvim_set_current_win(base_win)
      local answers = { "name them", "put it back" }
      vim.ui.input = function(_, on_confirm)
        on_confirm(table.remove(answers, 1))
      end
      -- A visual selection of base lines 5-6, then base line 8 (removed).
      vim.cmd("normal 5GVjc")
      vim.cmd("normal 8Gc")
      local expected = "Review comments from the human supervising you (owt review). Please change the code as asked in each:\n\n"
        .. "a.txt lines 6-7:\n    line 5\n    line 6\nComment: (on the base version, lines 5-6:\n    line 5\n    line 6)\nname them\n\n"
        .. "a.txt line 9:\n    line 9\nComment: (on the base version, line 8:\n    line 8)\nput it back"
      h.wait(30000, function()
        for i = before + 1, #agent_lines() do
          if agent_lines()[i] == expected then
            return true
          end
        end
      end, "both comments in the agent's input as one message: " .. vim.inspect(agent_lines()))
    end,
  },
  {
    "reviewed state survives a restart: a new Neovim and a new owt lsp show c.txt reviewed, a.txt (changed since) not",
    function()
      -- This Neovim's servers stop: nothing of the review stays in memory.
      for _, c in ipairs(vim.lsp.get_clients({ name = "owt" })) do
        c:stop(true)
      end
      h.wait(10000, function()
        return #vim.lsp.get_clients({ name = "owt" }) == 0
      end, "this Neovim's owt lsp to stop")
      -- Another Neovim, as a user starts it: the plugin, a file of the
      -- repository (its own owt lsp attaches), then :Owt review.
      local script, out = h.tmp .. "/restart.lua", h.tmp .. "/restart.out"
      h.write(
        script,
        ([[
vim.g.owt = { bin = %q, terminal = { insert = false } }
vim.opt.runtimepath:prepend(%q)
vim.cmd("filetype on")
vim.cmd.runtime("plugin/owt.lua")
vim.cmd.cd(%q)
vim.cmd.edit("b.txt")
local function result(text)
  local f = assert(io.open(%q, "w"))
  f:write(text)
  f:close()
  for _, c in ipairs(vim.lsp.get_clients()) do
    c:stop(true)
  end
  vim.wait(5000, function() return #vim.lsp.get_clients() == 0 end, 50)
  vim.cmd("qall!")
end
local served = vim.wait(20000, function()
  local c = vim.lsp.get_clients({ name = "owt" })[1]
  return c ~= nil and c.initialized
end, 50)
if not served then
  result("no owt lsp attached")
end
local review = require("owt.review")
vim.cmd("Owt review %s")
local view
vim.wait(20000, function()
  view = review.views[vim.api.nvim_get_current_tabpage()]
  return view ~= nil and view.index ~= nil
end, 50)
if not view then
  result("no review tab")
end
result("served by owt lsp\n" .. table.concat(vim.api.nvim_buf_get_lines(view.sidebar, 0, -1, false), "\n"))
]]):format(h.bin, h.plugin_dir, h.repo, out, session.name)
      )
      local run = vim.system({ vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", script }, { text = true }):wait(90000)
      local text = h.read(out) or ("no result; the second Neovim exited " .. tostring(run.code) .. ": " .. (run.stderr or ""))
      h.truthy(text:find("^served by owt lsp\n"), "the second Neovim's review came from its own owt lsp:\n" .. text)
      local rows = {}
      for line in text:gmatch("[^\n]+") do
        local mark, file = line:match("^(.-) [AM] .-([%w.]+)$")
        if mark and file then
          rows[file] = mark
        end
      end
      h.eq("✓", rows["c.txt"], "c.txt: reviewed, unchanged since:\n" .. text)
      h.eq(" ", rows["a.txt"], "a.txt: the agent changed it after it was reviewed:\n" .. text)
    end,
  },
})

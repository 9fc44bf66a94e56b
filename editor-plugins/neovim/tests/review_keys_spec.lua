-- The review tab's keys, in a real Neovim 0.11 against the real owt: `v` on
-- a board row opens the review of that session; `<CR>` on a file row of the
-- list shows that file; `m` merges and `d` discards (through owt delete's
-- rules, force only when chosen) from the tab, through the server the
-- review came from; `s` ships, and since one file was never opened, the
-- server's closing message is a warning naming it. A tab whose session
-- ended closes.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup({ ["README.md"] = "# demo\n", ["a.txt"] = "one\ntwo\n", ["b.txt"] = "bee\n", ["a.bin"] = "\0\1\2old\0" })
local review = require("owt.review")
local board_mod = require("owt.board")

--- The review view of `name` in the current tab once a file is shown.
local function current_view(name, what)
  return h.wait(20000, function()
    local v = review.views[vim.api.nvim_get_current_tabpage()]
    return v and v.name == name and v.index and v or nil
  end, what or ("the review tab of " .. name))
end

--- Line of `name`'s row in the board buffer `buf`.
local function board_row(buf, name)
  return h.wait(20000, function()
    local view = board_mod.views[buf]
    for lnum, session in pairs(view and view.rows or {}) do
      if session.name == name then
        return lnum
      end
    end
  end, "the board row of " .. name)
end

local function git(...)
  return (h.sh({ "git", "-C", h.repo, ... }))
end

local mergeable, shippable

h.run({
  {
    "v on a board row opens that session's review; <CR> on a file row shows that file",
    function()
      h.open("README.md")
      mergeable = h.new_session("merge then discard")
      h.write(mergeable.worktree .. "/c.txt", "committed by the agent\n")
      h.write(mergeable.worktree .. "/b.txt", "bee, committed\n")
      h.sh({ "git", "add", "b.txt", "c.txt" }, { cwd = mergeable.worktree })
      h.sh({ "git", "commit", "-q", "-m", "agent: b.txt, c.txt" }, { cwd = mergeable.worktree })
      vim.cmd("Owt board")
      local board_buf = vim.api.nvim_get_current_buf()
      vim.api.nvim_win_set_cursor(0, { board_row(board_buf, mergeable.name), 0 })
      vim.cmd("normal v")
      local view = current_view(mergeable.name, "the review tab of the row's session, from the board's v")
      h.eq({ "b.txt", "c.txt" }, vim.tbl_map(function(f)
        return f.path
      end, view.report.files), "its two changed files")
      h.eq(1, view.index, "the first file shown")
      -- <CR> on the row of the second file in the list.
      local side = vim.fn.bufwinid(view.sidebar)
      vim.api.nvim_set_current_win(side)
      local lines = vim.api.nvim_buf_get_lines(view.sidebar, 0, -1, false)
      local row = h.truthy(vim.iter(ipairs(lines)):find(function(_, l)
        return l:find("c.txt", 1, true) ~= nil
      end), "c.txt in the list:\n" .. table.concat(lines, "\n"))
      vim.api.nvim_win_set_cursor(side, { row, 0 })
      vim.cmd("normal \r")
      h.wait(10000, function()
        return view.index == 2
      end, "c.txt shown")
      h.eq(mergeable.worktree .. "/c.txt", vim.api.nvim_buf_get_name(0), "the agent's copy of c.txt beside its base")
      -- Every line of the list fits its 40 columns.
      for _, l in ipairs(vim.api.nvim_buf_get_lines(view.sidebar, 1, 3, false)) do
        h.truthy(vim.fn.strdisplaywidth(l) <= 40, "a key line wider than the list: " .. l)
      end
    end,
  },
  {
    "m merges the agent's commits (the session ends, its tab closes)",
    function()
      local view = current_view(mergeable.name)
      local before = #h.messages
      vim.cmd("normal m")
      h.wait(30000, function()
        for i = before + 1, #h.messages do
          if h.messages[i].msg:find("merged owt/" .. view.name .. " into main", 1, true) then
            return true
          end
        end
      end, "the merge to end")
      h.eq("committed by the agent\n", git("show", "main:c.txt"), "merged as committed")
      h.eq("bee, committed\n", git("show", "main:b.txt"), "both files of its commit")
      h.eq(nil, h.sessions()[view.name], "the merged session is deleted")
      h.wait(10000, function()
        return vim.fn.bufwinid(view.sidebar) == -1
      end, "its review tab to close")
    end,
  },
  {
    "d discards the session after asking, force only when chosen (its tab closes)",
    function()
      vim.cmd("tabnew")
      vim.cmd("tabonly")
      h.open("README.md")
      local doomed = h.new_session("discard me")
      h.write(doomed.worktree .. "/e.txt", "uncommitted\n")
      h.write(doomed.worktree .. "/a.bin", "\0\1\2binary\0")
      vim.cmd("Owt review " .. doomed.name)
      local view = current_view(doomed.name)
      -- A binary file (the first): a note on each side, no diff of its bytes.
      h.eq("a.bin", view.report.files[view.index].path, "the binary file first")
      local notes = {}
      for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        local b = vim.api.nvim_win_get_buf(win)
        if b ~= view.sidebar then
          notes[#notes + 1] = h.text(b):match("^Binary file: the (%S+) version, not shown") or h.text(b)
          h.eq(false, vim.wo[win].diff, "no diff mode on a binary's note")
        end
      end
      table.sort(notes)
      h.eq({ "agent's", "base" }, notes, "both sides say binary")
      local asked
      vim.ui.select = function(items, opts, on_choice)
        asked = { items = items, prompt = opts.prompt }
        on_choice(items[2], 2)
      end
      vim.cmd("normal d")
      h.wait(30000, function()
        return h.sessions()[doomed.name] == nil
      end, doomed.name .. " deleted")
      h.eq("owt: discard " .. doomed.name .. "?", asked.prompt, "asked first")
      h.eq("Delete, dropping uncommitted work (--force)", asked.items[2], "the forced choice says what it drops")
      h.wait(10000, function()
        return vim.fn.bufwinid(view.sidebar) == -1
      end, "its review tab to close")
      h.eq(nil, vim.uv.fs_stat(doomed.worktree), "its worktree is gone")
    end,
  },
  {
    "s ships from the review tab; a file never opened makes its message a warning",
    function()
      vim.cmd("tabnew")
      vim.cmd("tabonly")
      h.open("README.md")
      shippable = h.new_session("ship me")
      h.write(shippable.worktree .. "/a.txt", "one\nTWO\n")
      h.write(shippable.worktree .. "/d.txt", "new file\n")
      vim.cmd("Owt review " .. shippable.name)
      current_view(shippable.name)
      -- Only a.txt is opened (and so reviewed); d.txt never is.
      h.wait(10000, function()
        local files = h.owt_json({ "diff", shippable.name }).files
        return files[1].reviewed and not files[2].reviewed
      end, "a.txt reviewed, d.txt not")
      local before = #h.messages
      vim.cmd("normal s")
      local said = h.wait(30000, function()
        for i = before + 1, #h.messages do
          if h.messages[i].msg:find("shipped " .. shippable.name, 1, true) then
            return h.messages[i]
          end
        end
      end, "the ship's closing message")
      h.eq(
        ("owt: shipped %s into main, with 1 file not reviewed since its last change (d.txt)"):format(shippable.name),
        said.msg,
        "the message names the file nobody reviewed"
      )
      h.eq(vim.log.levels.WARN, said.level, "a warning")
      h.eq("new file\n", git("show", "main:d.txt"), "shipped all the same")
      h.wait(10000, function()
        return review.views[vim.api.nvim_get_current_tabpage()] == nil
      end, "its review tab to close")
    end,
  },
})

-- The board's READY TO SHIP row says "not reviewed" until you have opened
-- every file the agent changed (`:Owt review`), "reviewed" then, and "not
-- reviewed" again once the agent changes a file: the server decides (the
-- session's `review`), the board only shows it.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup({ ["README.md"] = "# demo\n", ["notes.txt"] = "one\ntwo\n" })
local review = require("owt.review")
local session
local board_buf

local function row(buf)
  for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find("^  " .. vim.pesc(session.name) .. " ") then
      return line
    end
  end
end

--- Waits for the session's board row to end its review cell with `words`
--- (and, when given, to hold `also` too: the board redraws when the server
--- says so, so a row read before that is the one from before).
local function board_says(words, also)
  return h.wait(30000, function()
    local line = row(board_buf)
    if not line then
      return nil
    end
    local says = line:find(" not reviewed", 1, true) and "not reviewed" or line:find(" reviewed", 1, true) and "reviewed" or nil
    return says == words and (also == nil or line:find(also, 1, true)) and line or nil
  end, ("the row of %s to say %q%s; the board shows:\n%s"):format(
    session and session.name or "?",
    words,
    also and (" and %q"):format(also) or "",
    board_buf and h.text(board_buf) or ""
  ))
end

h.run({
  {
    "a READY TO SHIP row says not reviewed",
    function()
      h.open("README.md")
      session = h.new_session("touch two files")
      h.write(session.worktree .. "/shipped.txt", "made by the agent\n")
      h.sh({ "git", "add", "shipped.txt" }, { cwd = session.worktree })
      h.sh({ "git", "commit", "-q", "-m", "agent: add shipped.txt" }, { cwd = session.worktree })
      h.write(session.worktree .. "/notes.txt", "one\nTWO\n")
      h.wait(20000, function()
        local s = h.sessions()[session.name]
        return s and s.lane == "ready-to-ship"
      end, session.name .. " in ready-to-ship")
      vim.cmd("Owt board")
      board_buf = vim.api.nvim_get_current_buf()
      -- The row with its counts: one commit, two files changed.
      board_says("not reviewed", "+1 ~2")
    end,
  },
  {
    "opening every file in :Owt review makes it reviewed",
    function()
      local board_tab = vim.api.nvim_get_current_tabpage()
      vim.cmd("Owt review " .. session.name)
      local view = h.wait(20000, function()
        local v = review.views[vim.api.nvim_get_current_tabpage()]
        return v and v.index and v or nil
      end, "the review tab")
      h.eq(2, #view.report.files, "two changed files")
      -- Only the first file is open: the work is not reviewed yet.
      h.wait(10000, function()
        return h.owt_json({ "diff", session.name }).files[1].reviewed
      end, "the first file marked reviewed")
      h.eq("not reviewed", h.sessions()[session.name].review and h.sessions()[session.name].review:gsub("-", " "), "one of two files")
      vim.cmd("normal ]f")
      vim.api.nvim_set_current_tabpage(board_tab)
      board_says("reviewed")
    end,
  },
  {
    "the agent's next change makes it not reviewed again",
    function()
      h.write(session.worktree .. "/shipped.txt", "made by the agent, then changed\n")
      board_says("not reviewed")
    end,
  },
})

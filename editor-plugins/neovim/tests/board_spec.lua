-- The board buffer renders the three lanes, its footer names only the keys
-- that apply to the row under the cursor, and `s` on a READY TO SHIP row
-- ships it (the merge is visible in the repository).
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup({ ["README.md"] = "# demo\n" })
local session
local board_buf

local function line_of(buf, pattern)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find(pattern) then
      return i
    end
  end
end

local function footer(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  return lines[#lines]
end

h.run({
  {
    "a session with a commit and an idle agent is READY TO SHIP",
    function()
      h.open("README.md")
      session = h.new_session("add shipped.txt")
      h.write(session.worktree .. "/shipped.txt", "made by the agent\n")
      h.sh({ "git", "add", "shipped.txt" }, { cwd = session.worktree })
      h.sh({ "git", "commit", "-q", "-m", "agent: add shipped.txt" }, { cwd = session.worktree })
      h.wait(20000, function()
        local s = h.sessions()[session.name]
        return s and s.lane == "ready-to-ship" and s.ahead == 1
      end, "owt list to put " .. session.name .. " in ready-to-ship with 1 commit ahead")
    end,
  },
  {
    ":Owt board renders the three lanes with the session's row",
    function()
      vim.cmd("Owt board")
      board_buf = vim.api.nvim_get_current_buf()
      h.truthy(vim.api.nvim_buf_get_name(board_buf):find("owt://board", 1, true), "the board buffer is owt://board")
      h.wait(20000, function()
        local ready = line_of(board_buf, "^READY TO SHIP %(1%)")
        local row = line_of(board_buf, "^  " .. vim.pesc(session.name) .. " ")
        return ready and row and row > ready
      end, "READY TO SHIP (1) with the session's row; the board shows:\n" .. h.text(board_buf))
      h.truthy(line_of(board_buf, "^NEEDS YOU %(0%)"), "NEEDS YOU lane:\n" .. h.text(board_buf))
      h.truthy(line_of(board_buf, "^IN FLIGHT %(0%)"), "IN FLIGHT lane:\n" .. h.text(board_buf))
    end,
  },
  {
    "the footer names only the keys that apply to the row",
    function()
      local row = line_of(board_buf, "^  " .. vim.pesc(session.name) .. " ")
      vim.api.nvim_win_set_cursor(0, { row, 0 })
      vim.api.nvim_exec_autocmds("CursorMoved", { buffer = board_buf })
      h.eq("a attach  s ship  m merge  p peek  t send  d delete  v review  n new  r refresh  q close", footer(board_buf), "footer on a ready row")
      vim.api.nvim_win_set_cursor(0, { 1, 0 })
      vim.api.nvim_exec_autocmds("CursorMoved", { buffer = board_buf })
      h.eq("n new  r refresh  q close", footer(board_buf), "footer on the title line")
    end,
  },
  {
    "the statusline counts the ready session",
    function()
      h.wait(10000, function()
        return require("owt").status():find("1 ready", 1, true)
      end, "status() to say `1 ready`; it says: " .. require("owt").status())
    end,
  },
  {
    ":Owt list, :Owt queue and :Owt guard show the CLI's reports",
    function()
      local board_win = vim.api.nvim_get_current_win()
      for verb, expected in pairs({ list = session.name, queue = session.name, guard = "" }) do
        vim.cmd("Owt " .. verb)
        local buf = h.wait(20000, function()
          local b = vim.fn.bufnr("owt://" .. verb)
          return b ~= -1 and vim.api.nvim_buf_line_count(b) > 0 and h.text(b) ~= "" and b or nil
        end, "the owt://" .. verb .. " buffer")
        h.truthy(h.text(buf):find(expected, 1, true), ("owt://%s names %s:\n%s"):format(verb, expected, h.text(buf)))
        vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
        vim.cmd("normal q")
      end
      vim.api.nvim_set_current_win(board_win)
      h.eq(board_buf, vim.api.nvim_get_current_buf(), "back on the board")
    end,
  },
  {
    "`s` on the ready row ships it into main",
    function()
      local row = line_of(board_buf, "^  " .. vim.pesc(session.name) .. " ")
      vim.api.nvim_win_set_cursor(0, { row, 0 })
      -- The board acts through the server it was opened from, wherever the
      -- current directory is.
      vim.cmd.cd("/")
      vim.cmd("normal s")
      h.wait(60000, function()
        local _, code = h.sh({ "git", "cat-file", "-e", "main:shipped.txt" }, { cwd = h.repo, allow_fail = true })
        return code == 0
      end, "shipped.txt in main")
      local log = h.sh({ "git", "log", "--format=%s", "main" }, { cwd = h.repo })
      h.truthy(log:find("agent: add shipped.txt", 1, true), "the agent's commit in git log main:\n" .. log)
      h.wait(20000, function()
        return h.read(h.repo .. "/shipped.txt") == "made by the agent\n"
      end, "shipped.txt in the main checkout")
      h.wait(20000, function()
        return h.sessions()[session.name] == nil
      end, "the shipped session to be gone from owt list")
      h.wait(20000, function()
        return line_of(board_buf, "^READY TO SHIP %(0%)")
      end, "the board to show an empty READY TO SHIP lane:\n" .. h.text(board_buf))
    end,
  },
})

-- `R` on the real board (real owt lsp, real owt): an agent that exited
-- gets `R resume` in its row's footer (the server's `resume` action), and
-- `R` restarts it through `owt.resume`.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup({ ["README.md"] = "# demo\n" })
local session
local board_buf

local function row_line(buf, name)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find("^  " .. vim.pesc(name) .. " ") then
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
    "an agent that exited shows R resume on its row",
    function()
      h.open("README.md")
      session = h.new_session("exit when told")
      h.wait(20000, function()
        local s = h.sessions()[session.name]
        return s and s.agent_pid ~= nil
      end, session.name .. "'s agent to run")
      h.sh({ h.bin, "-C", h.repo, "send", session.name, "exit" })
      h.wait(20000, function()
        local s = h.sessions()[session.name]
        return s and s.status == "exited"
      end, session.name .. " to exit")
      vim.cmd("Owt board")
      board_buf = vim.api.nvim_get_current_buf()
      h.wait(20000, function()
        require("owt.board").refresh(board_buf)
        local row = row_line(board_buf, session.name)
        if not row then
          return false
        end
        vim.api.nvim_win_set_cursor(0, { row, 0 })
        vim.api.nvim_exec_autocmds("CursorMoved", { buffer = board_buf })
        return footer(board_buf):find("R resume", 1, true) ~= nil
      end, "R resume in the footer of " .. session.name .. "'s row:\n" .. h.text(board_buf))
    end,
  },
  {
    "R restarts the agent",
    function()
      vim.api.nvim_win_set_cursor(0, { row_line(board_buf, session.name), 0 })
      vim.cmd("normal R")
      h.wait(30000, function()
        local s = h.sessions()[session.name]
        return s and s.status ~= "exited" and s.agent_pid ~= nil
      end, session.name .. " to run again")
    end,
  },
})

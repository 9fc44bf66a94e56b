-- `R` resume on the board: in a row's footer exactly when the session's
-- `resume` action is available (the server's verdict, no rule here),
-- refused with the server's reason otherwise, and run through
-- `owt.resume` (actions.resume) when available.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup()
local board_mod = require("owt.board")
local actions = require("owt.actions")

local function session(name, available, reason)
  return {
    name = name,
    actions = {
      { action = "peek", available = true },
      { action = "resume", available = available, reason = reason },
    },
  }
end

local exited = session("gone", true, nil)
local working = session("busy", false, "its agent is still running")
local buf

h.run({
  {
    "the footer shows R resume only when the server says it is available",
    function()
      h.eq("p peek  R resume  v review  n new  r refresh  q close", board_mod.footer_text(exited), "exited")
      h.eq("p peek  v review  n new  r refresh  q close", board_mod.footer_text(working), "working")
    end,
  },
  {
    "R on a session the server refuses says its reason and does nothing",
    function()
      buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_win_set_buf(0, buf)
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "busy", "gone", "footer" })
      board_mod.views[buf] = { rows = { [1] = working, [2] = exited }, footer = 3 }
      local called = {}
      local real = actions.resume
      actions.resume = function(name)
        called[#called + 1] = name
      end
      vim.api.nvim_win_set_cursor(0, { 1, 0 })
      h.messages = {}
      board_mod.press(buf, "R")
      h.eq("owt: cannot resume busy: its agent is still running", h.messages[1] and h.messages[1].msg, "the refusal")
      h.eq(0, #called, "nothing resumed")
      vim.api.nvim_win_set_cursor(0, { 2, 0 })
      board_mod.press(buf, "R")
      actions.resume = real
      h.eq({ "gone" }, called, "R resumes the row's session")
    end,
  },
  {
    ":Owt resume completes and is a subcommand",
    function()
      h.truthy(vim.tbl_contains(require("owt.commands").subcommands, "resume"), "resume subcommand")
    end,
  },
})

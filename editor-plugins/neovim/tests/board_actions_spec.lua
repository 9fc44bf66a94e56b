-- The board shows exactly what the server sends: fed the shared fixture
-- (editor-plugins/fixtures/board-actions.json, also rendered by the VS Code
-- tests), its lanes, counts, keys and refusals come from the board's
-- `all_lanes` and each session's `actions`, never from rules of its own —
-- `odd-one` offers merge with no commit and no attach while working.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup()
local board_mod = require("owt.board")
local fixture = vim.json.decode(h.read(h.repo_root .. "/editor-plugins/fixtures/board-actions.json"))
local buf

local function fixture_session(name)
  for _, lane in ipairs(fixture.lanes) do
    for _, session in ipairs(lane.sessions) do
      if session.name == name then
        return session
      end
    end
  end
  error("no session " .. name .. " in the fixture")
end

local function row_of(name)
  for lnum, session in pairs(board_mod.views[buf].rows) do
    if session.name == name then
      return lnum
    end
  end
end

h.run({
  {
    "the lanes and counts are the board's",
    function()
      buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_win_set_buf(0, buf)
      board_mod.views[buf] = { rows = {}, footer = 1 }
      board_mod.render(buf, fixture)
      local text = h.text(buf)
      for _, header in ipairs({ "NEEDS YOU (1)", "READY TO SHIP (1)", "IN FLIGHT (1)" }) do
        h.truthy(text:find(header, 1, true), header .. " in:\n" .. text)
      end
      h.eq("owt 1 needs you · 1 ready · 1 idle", require("owt.state").status_of(fixture), "the statusline is the board's counts.summary")
    end,
  },
  {
    "READY TO SHIP rows say the server's review state, as sent",
    function()
      local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      for name, want in pairs({ ["odd-one"] = true, ["blocked-one"] = false, ["conflicted"] = false }) do
        local line = lines[row_of(name)]
        h.eq(want, line:find("reviewed", 1, true) ~= nil, "review words on " .. name .. "'s row: " .. line)
      end
      h.truthy(not lines[row_of("odd-one")]:find("not reviewed", 1, true), "odd-one is reviewed")
    end,
  },
  {
    "each row's keys are its session's available actions",
    function()
      local want = {
        ["blocked-one"] = "a attach  p peek  t send  d delete  v review  n new  r refresh  q close",
        ["odd-one"] = "m merge  d delete  v review  n new  r refresh  q close",
        ["conflicted"] = "a attach  p peek  t send  f conflicted files  d delete  v review  n new  r refresh  q close",
      }
      for name, footer in pairs(want) do
        h.eq(footer, board_mod.footer_text(fixture_session(name)), "footer of " .. name)
        h.truthy(row_of(name), name .. " has a row")
      end
    end,
  },
  {
    "a key the actions refuse says the server's reason and does nothing",
    function()
      vim.api.nvim_win_set_cursor(0, { row_of("odd-one"), 0 })
      h.messages = {}
      board_mod.press(buf, "a")
      h.eq("owt: cannot attach odd-one: the fixture says no", h.messages[1] and h.messages[1].msg, "the refusal")
      h.eq(vim.log.levels.WARN, h.messages[1].level, "a warning")
    end,
  },
})

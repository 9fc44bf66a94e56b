-- The tokens an agent recorded show on the board and in `:Owt list`. The
-- session runs the idle test agent under the name `claude` (the user's own
-- config redefines it), and the test
-- writes the transcript line Claude Code would (taken from a real Claude
-- Code 2.1.197 transcript: 1007 input, 23 output, 511 cache-read and 45
-- cache-write tokens) where Claude Code keeps it.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup({ ["README.md"] = "# demo\n" })
-- A repository may not redefine a built-in agent; the user's own config may.
h.write(vim.env.XDG_CONFIG_HOME .. "/owt/config.toml", ('[tools.claude]\nbinary = "%s"\n'):format(h.idle_agent))
local session

local function line_of(buf, pattern)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find(pattern) then
      return i, line
    end
  end
end

h.run({
  {
    "a Claude Code session with a transcript",
    function()
      session = h.owt_json({ "new", "count my tokens", "--ai-tool", "claude" }).session
      h.eq("claude", session.provider, "the session's agent")
      local folder = ("%s/.claude/projects/%s"):format(vim.env.HOME, session.worktree:gsub("[^%w]", "-"))
      local line = vim.json.encode({
        type = "assistant",
        timestamp = os.date("!%Y-%m-%dT%H:%M:%S.000Z"),
        cwd = session.worktree,
        message = {
          id = "msg_1",
          role = "assistant",
          usage = {
            input_tokens = 1007,
            cache_creation_input_tokens = 45,
            cache_read_input_tokens = 511,
            output_tokens = 23,
          },
        },
      })
      h.write(folder .. "/0be5b925.jsonl", line .. "\n")
    end,
  },
  {
    ":Owt board shows the session's tokens",
    function()
      h.open("README.md")
      vim.cmd("Owt board")
      local buf = vim.api.nvim_get_current_buf()
      -- 1007 + 23 + 511 + 45 = 1586 tokens.
      h.wait(20000, function()
        local _, row = line_of(buf, "^  " .. vim.pesc(session.name) .. " ")
        return row and row:find("1.6k tok", 1, true)
      end, "the board row to show 1.6k tok; the board shows:\n" .. h.text(buf))
    end,
  },
  {
    ":Owt list has a TOKENS column",
    function()
      vim.cmd("Owt list")
      local buf = h.wait(20000, function()
        local b = vim.fn.bufnr("owt://list")
        return b ~= -1 and line_of(b, vim.pesc(session.name)) and b
      end, "the owt://list buffer with the session")
      local header = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
      h.truthy(header:find("OVERLAPS  TOKENS", 1, true), "header: " .. header)
      local _, row = line_of(buf, vim.pesc(session.name))
      h.truthy(row:find("1.6k tok", 1, true), "row: " .. row)
    end,
  },
  {
    "figures are compact",
    function()
      local ui = require("owt.ui")
      h.eq({ "0", "999", "1.0k", "12k", "1.2M", "45M" }, vim.tbl_map(ui.compact_count, { 0, 999, 1000, 12345, 1240000, 45000000 }), "counts")
      h.eq("$0.0038", ui.dollars(0.003828), "a small cost")
      h.eq("2.2k tok $1.26", ui.usage_figure({ input_tokens = 2119, output_tokens = 91, cache_read_tokens = 0, cache_write_tokens = 0, cost_usd = 1.256 }), "with a cost")
      h.eq("", ui.usage_figure(nil), "no usage")
    end,
  },
})

-- :Owt attach opens the agent's terminal through owt/openTerminal, reuses
-- its window, and :Owt send / :Owt peek reach the same agent.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup({ ["README.md"] = "# demo\n" })
local session
local term_buf

local function terminal_buffers()
  local out = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == "terminal" then
      out[#out + 1] = buf
    end
  end
  return out
end

h.run({
  {
    "the LSP client announces openTerminal",
    function()
      local _, client = h.open("README.md")
      h.eq(true, client.config.init_options.openTerminal, "init_options.openTerminal")
      session = h.new_session("say hello")
      h.wait(20000, function()
        local s = h.sessions()[session.name]
        return s and s.status == "needs-input"
      end, "the fake agent to show its prompt")
    end,
  },
  {
    ":Owt attach opens a terminal showing the agent's screen",
    function()
      local wins = #vim.api.nvim_tabpage_list_wins(0)
      vim.cmd("Owt attach " .. session.name)
      term_buf = h.wait(15000, function()
        for _, buf in ipairs(terminal_buffers()) do
          if vim.b[buf].owt_session == session.name then
            return buf
          end
        end
      end, "a terminal buffer for " .. session.name)
      h.eq(wins + 1, #vim.api.nvim_tabpage_list_wins(0), "windows after attach (a vsplit)")
      h.eq("owt://" .. session.name, vim.api.nvim_buf_get_name(term_buf), "terminal buffer name")
      h.wait(15000, function()
        return h.text(term_buf):find("ready>", 1, true)
      end, "`ready>` in the terminal; it shows:\n" .. h.text(term_buf))
    end,
  },
  {
    "attaching again reuses the terminal window",
    function()
      vim.cmd("wincmd p")
      local wins = #vim.api.nvim_tabpage_list_wins(0)
      vim.cmd("Owt attach " .. session.name)
      h.wait(10000, function()
        return vim.api.nvim_get_current_buf() == term_buf
      end, "the existing terminal window to get focus")
      h.eq(wins, #vim.api.nvim_tabpage_list_wins(0), "windows after the second attach")
      h.eq(1, #terminal_buffers(), "terminal buffers")
    end,
  },
  {
    ":Owt send types into the agent",
    function()
      vim.cmd("Owt send " .. session.name .. " hello from nvim")
      h.wait(15000, function()
        return h.text(term_buf):find("got: hello from nvim", 1, true)
      end, "`got: hello from nvim` in the terminal; it shows:\n" .. h.text(term_buf))
    end,
  },
  {
    ":Owt peek shows the screen in a float",
    function()
      vim.cmd("Owt peek " .. session.name)
      local buf = h.wait(10000, function()
        local win = vim.api.nvim_get_current_win()
        if vim.api.nvim_win_get_config(win).relative ~= "" then
          return vim.api.nvim_win_get_buf(win)
        end
      end, "a floating peek window")
      h.truthy(h.text(buf):find("got: hello from nvim", 1, true), "peek shows the agent's screen:\n" .. h.text(buf))
      vim.cmd("normal q")
    end,
  },
})

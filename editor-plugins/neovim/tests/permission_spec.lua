-- An ACP session blocked on a permission request, answered from real
-- Neovim: owt lsp asks the question with one choice per option plus Deny
-- (window/showMessageRequest, which Neovim shows with vim.ui.select), and
-- the board's `y` (approve: pick an option) and `x` (deny) keys answer it.
-- The agent is the scripted ACP agent (tests/data/fake-acp-agent.py --mode
-- ask: asks to write ask.txt, writes it when allowed).
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup({ ["README.md"] = "# demo\n" })
h.write(
  vim.env.XDG_CONFIG_HOME .. "/owt/config.toml",
  ('[tools.acpfake]\nbinary = "%s"\nacp = "{binary} --mode ask"\n'):format(h.repo_root .. "/tests/data/fake-acp-agent.py")
)

local board_mod = require("owt.board")
local board_buf
local session

-- vim.ui.select as a person uses it: each call is recorded and answered by
-- `choose` (nil: dismissed).
local asked = {}
local choose = function()
  return nil
end
vim.ui.select = function(items, opts, on_choice)
  asked[#asked + 1] = { items = items, opts = opts }
  local item = choose(items, opts)
  local index
  for i, it in ipairs(items) do
    if it == item then
      index = i
    end
  end
  on_choice(item, index)
end

local function row_of(name)
  for lnum, s in pairs(board_mod.views[board_buf].rows) do
    if s.name == name then
      return lnum
    end
  end
end

local function footer()
  local lines = vim.api.nvim_buf_get_lines(board_buf, 0, -1, false)
  return lines[#lines]
end

--- Waits for the board to show `name` with `status`, and puts the cursor on its row.
local function on_row(name, status)
  h.wait(20000, function()
    local lnum = row_of(name)
    local s = lnum and board_mod.views[board_buf].rows[lnum]
    return s and s.status == status
  end, name .. " " .. status .. " on the board; it shows:\n" .. (board_buf and h.text(board_buf) or ""))
  vim.api.nvim_set_current_win(vim.fn.bufwinid(board_buf))
  vim.api.nvim_win_set_cursor(0, { row_of(name), 0 })
  vim.api.nvim_exec_autocmds("CursorMoved", { buffer = board_buf })
end

--- The next recorded vim.ui.select call whose kind is `kind`.
local function next_select(kind, from)
  return h.wait(20000, function()
    for i = from, #asked do
      if asked[i].opts.kind == kind then
        return i
      end
    end
  end, "vim.ui.select of kind " .. kind)
end

h.run({
  {
    "owt lsp asks the question with each option and Deny",
    function()
      h.open("README.md")
      session = h.owt_json({ "new", "go", "--name", "asks", "--ai-tool", "acpfake", "--acp", "--raw" }).session
      local i = next_select("lsp_message", 1)
      local titles = vim.tbl_map(function(a)
        return a.title
      end, asked[i].items)
      h.eq({ "Allow", "Reject", "Deny" }, titles, "the question's choices")
      h.truthy(asked[i].opts.prompt:find("owt: asks is blocked: Write ask.txt (ask.txt)", 1, true), "the question: " .. asked[i].opts.prompt)
      -- Dismissed: nothing was answered.
      h.eq("blocked", h.sessions().asks.status, "still blocked")
    end,
  },
  {
    "the blocked row offers y approve and x deny",
    function()
      vim.cmd("Owt board")
      board_buf = vim.api.nvim_get_current_buf()
      on_row("asks", "blocked")
      h.truthy(footer():find("y approve  x deny", 1, true), "footer: " .. footer())
    end,
  },
  {
    "y picks an option and approves it: the agent writes and waits",
    function()
      local from = #asked + 1
      choose = function(items, opts)
        if opts.kind == "owt_permission" then
          return items[1]
        end
      end
      board_mod.press(board_buf, "y")
      local i = next_select("owt_permission", from)
      h.eq("owt: asks asks: Write ask.txt", asked[i].opts.prompt, "the picker's prompt")
      h.eq({ "Allow", "Reject" }, vim.tbl_map(asked[i].opts.format_item, asked[i].items), "the options")
      h.wait(20000, function()
        return h.sessions().asks.status == "needs-input"
      end, "asks to wait for input after the approval")
      h.eq("asked\n", h.read(session.worktree .. "/ask.txt"), "the file the agent was allowed to write")
      h.wait(10000, function()
        for _, m in ipairs(h.messages) do
          if m.msg == "owt: asks: Write ask.txt → Allow" then
            return true
          end
        end
      end, "the answer's message")
    end,
  },
  {
    "x denies the next request: nothing is written",
    function()
      os.remove(session.worktree .. "/ask.txt")
      h.sh({ h.bin, "-C", h.repo, "send", "asks", "again" })
      on_row("asks", "blocked")
      board_mod.press(board_buf, "x")
      h.wait(20000, function()
        return h.sessions().asks.status == "needs-input"
      end, "asks to wait for input after the refusal")
      h.eq(nil, h.read(session.worktree .. "/ask.txt"), "no file written")
      local peek = h.sh({ h.bin, "-C", h.repo, "peek", "asks" })
      h.truthy(peek:find("you chose no", 1, true), "the agent got the refusal: " .. peek)
    end,
  },
  {
    "y on a row with nothing pending says why and does nothing",
    function()
      on_row("asks", "needs-input")
      h.truthy(not footer():find("approve", 1, true), "footer: " .. footer())
      h.messages = {}
      local before = #asked
      board_mod.press(board_buf, "y")
      h.eq("owt: cannot approve asks: no permission request is pending", h.messages[1] and h.messages[1].msg, "the refusal")
      h.eq(before, #asked, "no picker")
    end,
  },
})

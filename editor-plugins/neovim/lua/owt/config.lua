--- Configuration: `vim.g.owt` (a table), optionally set through
--- `require("owt").setup(opts)`. Read at use time, so changes apply without
--- a restart (except `cmd`, read when the server starts).
local M = {}

---@class owt.Config
---@field bin string             the owt binary (CLI verbs, `:checkhealth owt`)
---@field cmd string[]|nil       the LSP command; default `{ bin, "lsp" }`
---@field terminal owt.TerminalConfig
---@field board { position: "split"|"vsplit"|"tab"|"current" }
---@field ask_provider boolean    `:Owt new` asks for the agent with vim.ui.select
---@field notify_progress boolean|"auto"  vim.notify progress ("auto": unless a progress plugin is loaded)
---@field severities table|nil    per level: { aware = "hint", overlap = "information", ["hunk-overlap"] = "warning", conflict = "error" }
---@field awareness boolean|nil  hints on lines agents are changing in files you have open (nil: `[guard] awareness`, on)

---@class owt.TerminalConfig
---@field position "vsplit"|"split"|"tab"|"float"
---@field size number|nil          columns (vsplit) or rows (split); nil: half
---@field insert boolean           enter Terminal mode when the terminal opens

---@type owt.Config
M.defaults = {
  bin = "owt",
  cmd = nil,
  terminal = { position = "vsplit", size = nil, insert = true },
  board = { position = "split" },
  ask_provider = true,
  notify_progress = "auto",
  severities = nil,
  awareness = nil,
}

--- The effective configuration: defaults overridden by `vim.g.owt`.
---@return owt.Config
function M.get()
  local user = vim.g.owt
  if type(user) ~= "table" then
    user = {}
  end
  return vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), user)
end

--- The LSP command.
---@return string[]
function M.cmd()
  local config = M.get()
  return config.cmd or { config.bin, "lsp" }
end

return M

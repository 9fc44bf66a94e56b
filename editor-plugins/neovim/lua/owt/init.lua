--- owt for Neovim: supervise parallel AI coding agents from the editor.
--- See :help owt.
local M = {}

--- The plugin's version; `:checkhealth owt` compares it with `owt version`.
M.version = "0.1.0"

--- Optional: sets `vim.g.owt` from `opts` (lazy.nvim passes its `opts`).
--- Nothing requires calling it.
---@param opts table|nil see :help owt-config
function M.setup(opts)
  local current = type(vim.g.owt) == "table" and vim.g.owt or {}
  vim.g.owt = vim.tbl_deep_extend("force", current, opts or {})
  local config = require("owt.config")
  vim.lsp.config("owt", {
    cmd = config.cmd(),
    init_options = {
      openTerminal = true,
      severities = config.get().severities,
      awareness = config.get().awareness,
    },
  })
end

--- Statusline text, e.g. `owt 3 working · 1 needs you · 2 ready` ("" when
--- there is nothing to say).
---@param bufnr integer|nil
---@return string
function M.status(bufnr)
  return require("owt.state").status(bufnr)
end

--- Opens the board.
function M.board()
  return require("owt.board").open()
end

--- Starts an agent; `opts` as `:Owt new` (task, ai_tool, bufnr, start_line, end_line).
function M.new(opts, on_done)
  return require("owt.actions").new(opts or {}, on_done)
end

for _, verb in ipairs({ "attach", "send", "peek", "merge", "ship", "delete", "resume" }) do
  M[verb] = function(...)
    return require("owt.actions")[verb](...)
  end
end

return M

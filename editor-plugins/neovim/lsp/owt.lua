-- The `owt lsp` sidecar for Neovim's built-in LSP client (see :help owt).
-- Enabled by plugin/owt.lua with vim.lsp.enable("owt"); override any field
-- with vim.lsp.config("owt", { ... }).
local config = require("owt.config")

---@type vim.lsp.Config
return {
  cmd = config.cmd(),
  -- Every filetype: no `filetypes` field. plugin/owt.lua also attaches
  -- buffers that have no filetype at all.
  root_markers = { ".git" },
  -- Start only inside a git repository (or a worktree, whose .git is a
  -- file). Neovim itself declines to start a cmd that is not executable;
  -- plugin/owt.lua says so once.
  root_dir = function(bufnr, on_dir)
    local root = vim.fs.root(bufnr, { ".git" })
    if root then
      on_dir(root)
    end
  end,
  init_options = {
    openTerminal = true,
    severities = config.get().severities,
    awareness = config.get().awareness,
  },
  handlers = {
    ["owt/openTerminal"] = function(err, params, ctx)
      return require("owt.terminal").on_open_terminal(err, params, ctx)
    end,
    ["owt/boardChanged"] = function(err, params, ctx)
      return require("owt.state").on_board_changed(err, params, ctx)
    end,
    ["window/showMessage"] = function(err, params, ctx)
      return require("owt.notify").on_show_message(err, params, ctx)
    end,
  },
}

--- Attaching owt to buffers that have no filetype (Neovim's vim.lsp.enable
--- only reacts to FileType).
local M = {}

--- Starts (or reuses) the owt client for `bufnr` if it is a file buffer
--- without a filetype inside a git repository.
---@param bufnr integer
function M.attach_no_filetype(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= "" or vim.bo[bufnr].filetype ~= "" then
    return
  end
  if not vim.lsp.is_enabled("owt") or #vim.lsp.get_clients({ name = "owt", bufnr = bufnr }) > 0 then
    return
  end
  local resolved = vim.lsp.config.owt
  if not resolved then
    return
  end
  local config = vim.deepcopy(resolved)
  local function start(root)
    if not root or not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    config.root_dir = root
    vim.lsp.start(config, { bufnr = bufnr })
  end
  if type(config.root_dir) == "function" then
    config.root_dir(bufnr, function(root)
      vim.schedule(function()
        start(root)
      end)
    end)
  elseif config.root_dir then
    start(config.root_dir)
  else
    start(vim.fs.root(bufnr, config.root_markers or { ".git" }))
  end
end

return M

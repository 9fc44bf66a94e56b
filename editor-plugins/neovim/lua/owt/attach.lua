--- Attaching owt to buffers that have no filetype (Neovim's vim.lsp.enable
--- only reacts to FileType).
local M = {}

local warned = false

--- Whether the server's command can run; warns once when it cannot.
---@return boolean
function M.binary_available()
  local cmd = vim.lsp.config.owt and vim.lsp.config.owt.cmd
  if type(cmd) ~= "table" or vim.fn.executable(cmd[1]) == 1 then
    return true
  end
  if not warned then
    warned = true
    vim.notify(
      ("owt: `%s` not found, so the owt language server is off (see :checkhealth owt)"):format(cmd[1]),
      vim.log.levels.WARN,
      { title = "owt" }
    )
  end
  return false
end

--- After a file buffer is read: warns once if the server cannot start, and
--- starts (or reuses) the owt client for a buffer without a filetype inside
--- a git repository.
---@param bufnr integer
function M.on_buf_read(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= "" or not vim.lsp.is_enabled("owt") then
    return
  end
  if #vim.lsp.get_clients({ name = "owt", bufnr = bufnr }) > 0 or not vim.fs.root(bufnr, { ".git" }) then
    return
  end
  if not M.binary_available() then
    return
  end
  if vim.bo[bufnr].filetype ~= "" then
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

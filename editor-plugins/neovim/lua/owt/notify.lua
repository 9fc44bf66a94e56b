--- Server messages and progress as vim.notify.
local M = {}

local levels = {
  [1] = vim.log.levels.ERROR,
  [2] = vim.log.levels.WARN,
  [3] = vim.log.levels.INFO,
  [4] = vim.log.levels.DEBUG,
}

--- Handler of `window/showMessage`.
function M.on_show_message(err, params, _)
  if err or type(params) ~= "table" then
    return
  end
  local text = params.message or ""
  if not text:match("^owt") then
    text = "owt: " .. text
  end
  vim.notify(text, levels[params.type] or vim.log.levels.INFO, { title = "owt" })
end

--- Whether a plugin that shows LSP progress is loaded.
local function progress_plugin_loaded()
  return package.loaded["fidget"] ~= nil or package.loaded["noice"] ~= nil
end

--- `LspProgress` autocmd callback: begin and report steps of owt's long
--- operations as vim.notify (the end comes as a `window/showMessage`).
function M.on_progress(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  if not client or client.name ~= "owt" then
    return
  end
  local setting = require("owt.config").get().notify_progress
  if setting == false or (setting == "auto" and progress_plugin_loaded()) then
    return
  end
  local value = ev.data.params and ev.data.params.value or {}
  if value.kind == "begin" then
    vim.notify(value.title or "owt: working", vim.log.levels.INFO, { title = "owt" })
  elseif value.kind == "report" and value.message then
    vim.notify("owt: " .. value.message, vim.log.levels.INFO, { title = "owt" })
  end
end

return M

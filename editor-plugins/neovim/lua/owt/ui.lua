--- Small UI helpers: scratch buffers and floating text.
local M = {}

--- Opens a window as `position` says (split, vsplit, tab, current).
---@param position string
function M.open_window(position)
  if position == "tab" then
    vim.cmd("tabnew")
  elseif position == "vsplit" then
    vim.cmd("vsplit")
  elseif position ~= "current" then
    vim.cmd("split")
  end
  return vim.api.nvim_get_current_win()
end

--- Shows `lines` in the scratch buffer named `name` (reused if it exists,
--- its window focused if visible). `q` closes it.
---@param name string  e.g. "owt://list"
---@param lines string[]
---@param opts { filetype: string|nil, position: string|nil }|nil
---@return integer buf
function M.scratch(name, lines, opts)
  opts = opts or {}
  local buf = vim.fn.bufnr(name)
  if buf == -1 or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].swapfile = false
    vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, nowait = true, desc = "owt: close" })
  end
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    M.open_window(opts.position or "split")
    vim.api.nvim_win_set_buf(0, buf)
  else
    vim.api.nvim_set_current_win(win)
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if opts.filetype then
    vim.bo[buf].filetype = opts.filetype
  end
  return buf
end

--- Shows `lines` in a centred floating window titled `title`; `q` closes it.
---@param title string
---@param lines string[]
---@return integer buf, integer win
function M.float(title, lines)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local width = 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width, vim.o.columns - 4)
  local height = math.max(1, math.min(#lines, vim.o.lines - 6))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    border = "rounded",
    title = " " .. title .. " ",
    title_pos = "center",
  })
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, nowait = true, desc = "owt: close" })
  return buf, win
end

--- Formats rows of cells into aligned columns.
---@param rows string[][]
---@return string[]
function M.columns(rows)
  local widths = {}
  for _, row in ipairs(rows) do
    for i, cell in ipairs(row) do
      widths[i] = math.max(widths[i] or 0, vim.fn.strdisplaywidth(cell))
    end
  end
  local out = {}
  for _, row in ipairs(rows) do
    local cells = {}
    for i, cell in ipairs(row) do
      if i < #row then
        cell = cell .. string.rep(" ", widths[i] - vim.fn.strdisplaywidth(cell))
      end
      cells[#cells + 1] = cell
    end
    out[#out + 1] = table.concat(cells, "  ")
  end
  return out
end

return M

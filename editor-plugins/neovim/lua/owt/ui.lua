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

--- A count at a glance, as the CLI prints it: `950`, `12.3k`, `456k`, `4.5M`.
---@param n integer
---@return string
function M.compact_count(n)
  if n < 1000 then
    return tostring(n)
  elseif n < 10000 then
    return ("%.1fk"):format(n / 1e3)
  elseif n < 1000000 then
    return ("%.0fk"):format(n / 1e3)
  elseif n < 10000000 then
    return ("%.1fM"):format(n / 1e6)
  elseif n < 1000000000 then
    return ("%.0fM"):format(n / 1e6)
  end
  return ("%.1fG"):format(n / 1e9)
end

--- US dollars: cents above a dime, else two significant digits (`$0.0038`).
---@param usd number
---@return string
function M.dollars(usd)
  if usd == 0 or math.abs(usd) >= 0.1 then
    return ("$%.2f"):format(usd)
  end
  local digits = math.min(8, math.max(2, 1 - math.floor(math.log10(math.abs(usd)))))
  return ("$%." .. digits .. "f"):format(usd)
end

--- A session's tokens (`SessionView.usage`) as on the CLI board:
--- `12.3k tok`, `1.2M tok $0.42`; "" without usage.
---@param usage table|nil
---@return string
function M.usage_figure(usage)
  if type(usage) ~= "table" then
    return ""
  end
  local total = (usage.input_tokens or 0)
    + (usage.output_tokens or 0)
    + (usage.cache_read_tokens or 0)
    + (usage.cache_write_tokens or 0)
  local text = M.compact_count(total) .. " tok"
  if type(usage.cost_usd) == "number" then
    text = text .. " " .. M.dollars(usage.cost_usd)
  end
  return text
end

return M

--- Agents' terminals inside Neovim: `owt attach NAME` in a terminal buffer,
--- one per session, its window reused when it is open.
local config = require("owt.config")

local M = {}

---@type table<string, { buf: integer, job: integer }> session → its terminal
M.terminals = {}

local function job_running(job)
  return vim.fn.jobwait({ job }, 0)[1] == -1
end

--- Opens a window for a new terminal, as `position` says; returns it.
---@param position string
---@param size number|nil
---@param title string
---@return integer win
local function open_window(position, size, title)
  if position == "float" then
    local width = math.max(20, math.floor(vim.o.columns * 0.85))
    local height = math.max(5, math.floor((vim.o.lines - vim.o.cmdheight) * 0.8))
    local buf = vim.api.nvim_create_buf(false, false)
    return vim.api.nvim_open_win(buf, true, {
      relative = "editor",
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2) - 1,
      col = math.floor((vim.o.columns - width) / 2),
      border = "rounded",
      title = " " .. title .. " ",
      title_pos = "center",
    })
  end
  if position == "tab" then
    vim.cmd("tabnew")
  elseif position == "split" then
    vim.cmd((size and tostring(size) or "") .. "new")
  else
    vim.cmd((size and tostring(size) or "") .. "vnew")
  end
  return vim.api.nvim_get_current_win()
end

--- Shows `buf` in a window of the current tab if one shows it already;
--- returns whether it did.
local function focus_existing(buf)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_set_current_win(win)
      return true
    end
  end
  return false
end

--- Opens (or focuses) the terminal of `session` running `argv` in `cwd`.
---@param opts { session: string, argv: string[], cwd: string|nil, title: string|nil }
---@return integer buf the terminal buffer
function M.open(opts)
  local cfg = config.get().terminal
  local title = opts.title or ("owt: " .. opts.session)
  local existing = M.terminals[opts.session]
  if existing and vim.api.nvim_buf_is_valid(existing.buf) and job_running(existing.job) then
    if not focus_existing(existing.buf) then
      local win = open_window(cfg.position, cfg.size, title)
      local scratch = vim.api.nvim_win_get_buf(win)
      vim.api.nvim_win_set_buf(win, existing.buf)
      if scratch ~= existing.buf and vim.api.nvim_buf_is_valid(scratch) then
        pcall(vim.api.nvim_buf_delete, scratch, { force = true })
      end
    end
    if cfg.insert then
      vim.cmd.startinsert()
    end
    return existing.buf
  end
  open_window(cfg.position, cfg.size, title)
  local buf = vim.api.nvim_get_current_buf()
  local cwd = opts.cwd
  if cwd and vim.fn.isdirectory(cwd) == 0 then
    cwd = nil
  end
  local job = vim.fn.jobstart(opts.argv, {
    term = true,
    cwd = cwd,
    on_exit = function()
      local current = M.terminals[opts.session]
      if current and current.buf == buf then
        M.terminals[opts.session] = nil
      end
    end,
  })
  if job <= 0 then
    error(("owt: cannot start %s"):format(table.concat(opts.argv, " ")))
  end
  vim.b[buf].owt_session = opts.session
  pcall(vim.api.nvim_buf_set_name, buf, ("owt://%s"):format(opts.session))
  M.terminals[opts.session] = { buf = buf, job = job }
  if cfg.insert then
    vim.cmd.startinsert()
  end
  return buf
end

--- Handler of the server→client request `owt/openTerminal {title, argv, cwd, session}`.
function M.on_open_terminal(err, params, _)
  if err or type(params) ~= "table" or type(params.argv) ~= "table" or #params.argv == 0 then
    return nil, { code = -32602, message = "owt/openTerminal needs {title, argv, cwd, session}" }
  end
  local ok, open_err = pcall(M.open, {
    session = params.session or params.title or table.concat(params.argv, " "),
    argv = params.argv,
    cwd = params.cwd,
    title = params.title,
  })
  if not ok then
    vim.notify(tostring(open_err), vim.log.levels.ERROR, { title = "owt" })
    return { opened = false }
  end
  return { opened = true }
end

return M

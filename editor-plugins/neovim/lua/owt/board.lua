--- The board buffer: NEEDS YOU / READY TO SHIP / IN FLIGHT, one row per
--- session, refreshed on owt/boardChanged, with keys on each row.
---
--- It shows what the server decided and decides nothing itself: the lanes,
--- their titles, order and counts come in `board.all_lanes`, and a row's
--- keys are the actions its session's `actions` mark available.
local actions = require("owt.actions")
local client_mod = require("owt.client")
local ui = require("owt.ui")

local M = {}

local NAME = "owt://board"

---@class owt.BoardView
---@field rows table<integer, table>  line number → SessionView
---@field footer integer              line number of the footer
---@field client_id integer|nil
---@field board table|nil

---@type table<integer, owt.BoardView>
M.views = {}

--- Every key, in footer order, with its label and the session action it
--- runs (keys without one work on any line).
M.keys = {
  { key = "a", label = "attach", action = "attach" },
  { key = "s", label = "ship", action = "ship" },
  { key = "m", label = "merge", action = "merge" },
  { key = "p", label = "peek", action = "peek" },
  { key = "t", label = "send", action = "send" },
  { key = "y", label = "approve", action = "approve" },
  { key = "x", label = "deny", action = "deny" },
  { key = "f", label = "conflicted files", action = "conflicts" },
  { key = "d", label = "delete", action = "delete" },
  { key = "R", label = "resume", action = "resume" },
  { key = "v", label = "review", session = true },
  { key = "n", label = "new" },
  { key = "r", label = "refresh" },
  { key = "q", label = "close" },
}

--- The server's verdict on `action` for `session`: nil when it is
--- available, else why not.
---@param session table|nil
---@param action string
---@return string|nil
function M.why_not(session, action)
  if not session then
    return "not on a session's row"
  end
  for _, state in ipairs(session.actions or {}) do
    if state.action == action then
      return (not state.available) and (state.reason or "not available now") or nil
    end
  end
  return "the server did not offer it"
end

--- Whether key spec `k` applies to `session` (nil on lines that are not
--- sessions).
local function applies(k, session)
  if k.session then
    return session ~= nil
  end
  return k.action == nil or M.why_not(session, k.action) == nil
end

local function age(created_at)
  if type(created_at) ~= "number" then
    return ""
  end
  local seconds = math.max(0, os.time() - math.floor(created_at / 1000))
  if seconds < 60 then
    return seconds .. "s"
  elseif seconds < 3600 then
    return math.floor(seconds / 60) .. "m"
  elseif seconds < 86400 then
    return math.floor(seconds / 3600) .. "h"
  end
  return math.floor(seconds / 86400) .. "d"
end

local function first_line(text)
  local line = (text or ""):match("^[^\n]*") or ""
  if vim.fn.strchars(line) > 60 then
    line = vim.fn.strcharpart(line, 0, 59) .. "…"
  end
  return line
end

--- The footer text for a row.
---@param session table|nil
---@return string
function M.footer_text(session)
  local parts = {}
  for _, k in ipairs(M.keys) do
    if applies(k, session) then
      parts[#parts + 1] = k.key .. " " .. k.label
    end
  end
  return table.concat(parts, "  ")
end

local function session_at(buf, lnum)
  local view = M.views[buf]
  return view and view.rows[lnum] or nil
end

local function update_footer(buf)
  local view = M.views[buf]
  if not view or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local win = vim.fn.bufwinid(buf)
  local lnum = win ~= -1 and vim.api.nvim_win_get_cursor(win)[1] or 1
  local text = M.footer_text(session_at(buf, lnum))
  local current = vim.api.nvim_buf_get_lines(buf, view.footer - 1, view.footer, false)[1]
  if current ~= text then
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, view.footer - 1, view.footer, false, { text })
    vim.bo[buf].modifiable = false
    vim.bo[buf].modified = false
  end
end

--- Draws `board` (or an error) into the board buffer `buf`.
---@param buf integer
---@param board table|nil
---@param err string|nil
function M.render(buf, board, err)
  local view = M.views[buf]
  if not view or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  view.board = board
  view.rows = {}
  local lines = {}
  if err then
    lines = { "owt board", "", "error: " .. err }
  else
    lines[1] = "owt board — " .. (board.repository or "")
    local by_lane = {}
    for _, lane in ipairs(board.lanes or {}) do
      by_lane[lane.lane] = lane.sessions or {}
    end
    for _, lane in ipairs(board.all_lanes or {}) do
      local sessions = by_lane[lane.lane] or {}
      lines[#lines + 1] = ""
      lines[#lines + 1] = ("%s (%d)"):format(lane.title, lane.count)
      if #sessions == 0 then
        lines[#lines + 1] = "  (none)"
      else
        local cells = {}
        for _, s in ipairs(sessions) do
          local changes = ("+%d ~%d"):format(s.ahead or 0, s.changed_files or 0)
          if (s.overlaps or 0) > 0 then
            changes = changes .. (" ⚠%d"):format(s.overlaps)
          end
          cells[#cells + 1] = {
            "  " .. s.name,
            s.status_text or s.status or "",
            s.provider or "",
            s.branch or "",
            age(s.created_at),
            changes,
            -- READY TO SHIP rows: the server's `review` (not-reviewed → "not reviewed").
            s.review and s.review:gsub("-", " ") or "",
            ui.usage_figure(s.usage),
            first_line(s.task),
          }
        end
        for i, text in ipairs(ui.columns(cells)) do
          lines[#lines + 1] = text
          view.rows[#lines] = sessions[i]
        end
      end
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = ""
  view.footer = #lines
  local win = vim.fn.bufwinid(buf)
  local cursor = win ~= -1 and vim.api.nvim_win_get_cursor(win) or nil
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if cursor then
    pcall(vim.api.nvim_win_set_cursor, win, { math.min(cursor[1], #lines), 0 })
  end
  update_footer(buf)
end

--- Re-reads the board (owt/board, else `owt --json`) into `buf`.
---@param buf integer|nil  default: every open board buffer
function M.refresh(buf)
  local bufs = buf and { buf } or vim.tbl_keys(M.views)
  for _, b in ipairs(bufs) do
    local view = M.views[b]
    if view and vim.api.nvim_buf_is_valid(b) then
      client_mod.board(b, function(board, err, client_id)
        view.client_id = client_id
        vim.b[b].owt_client_id = client_id
        if board and board.repository then
          vim.b[b].owt_root = board.repository
        end
        M.render(b, board, err)
      end)
    end
  end
end

--- Runs the action of `key` on the row under the cursor.
---@param buf integer
---@param key string
function M.press(buf, key)
  local lnum = vim.api.nvim_win_get_cursor(0)[1]
  local session = session_at(buf, lnum)
  local spec
  for _, k in ipairs(M.keys) do
    if k.key == key then
      spec = k
    end
  end
  if not spec then
    return
  end
  if not applies(spec, session) then
    local why = M.why_not(session, spec.action)
    local what = session and ("owt: cannot %s %s: %s"):format(spec.label, session.name, why)
      or ("owt: `%s` %s (%s)"):format(key, why, M.footer_text(session))
    vim.notify(what, vim.log.levels.WARN, { title = "owt" })
    return
  end
  local name = session and session.name
  if key == "a" then
    actions.attach(name)
  elseif key == "s" then
    actions.ship(name, function() M.refresh(buf) end)
  elseif key == "m" then
    actions.merge(name, function() M.refresh(buf) end)
  elseif key == "p" then
    actions.peek(name)
  elseif key == "t" then
    vim.ui.input({ prompt = ("owt: send to %s: "):format(name) }, function(text)
      if text and text ~= "" then
        actions.send(name, text)
      end
    end)
  elseif key == "y" then
    actions.approve_pick(session, function() M.refresh(buf) end)
  elseif key == "x" then
    local permission = session.permission or {}
    actions.answer(name, { deny = true, permission_id = permission.id }, function() M.refresh(buf) end)
  elseif key == "f" then
    local items = {}
    for _, path in ipairs(session.conflicted_files) do
      items[#items + 1] = { filename = vim.fs.joinpath(session.worktree, path), lnum = 1, text = "conflict in " .. name }
    end
    vim.fn.setqflist({}, " ", { title = "owt: conflicts of " .. name, items = items })
    vim.cmd("wincmd p")
    vim.cmd("cfirst")
  elseif key == "d" then
    local choices = { "Delete", "Delete, dropping uncommitted work (--force)", "Cancel" }
    vim.ui.select(choices, { prompt = ("owt: delete %s?"):format(name) }, function(_, idx)
      if idx == 1 or idx == 2 then
        actions.delete(name, idx == 2, function() M.refresh(buf) end)
      end
    end)
  elseif key == "R" then
    actions.resume(name, function() M.refresh(buf) end)
  elseif key == "v" then
    require("owt.review").open(name)
  elseif key == "n" then
    actions.new_interactive({}, function() M.refresh(buf) end)
  elseif key == "r" then
    M.refresh(buf)
  elseif key == "q" then
    if #vim.api.nvim_list_wins() > 1 then
      vim.cmd("close")
    else
      vim.api.nvim_buf_delete(buf, { force = true })
    end
  end
end

--- Opens (or focuses) the board buffer.
---@return integer buf
function M.open()
  -- The server (and repository) of the buffer the board is opened from.
  local origin = client_mod.get()
  local origin_root = client_mod.root()
  local buf = vim.fn.bufnr(NAME)
  if buf ~= -1 and M.views[buf] and vim.api.nvim_buf_is_valid(buf) then
    local win = vim.fn.bufwinid(buf)
    if win ~= -1 then
      vim.api.nvim_set_current_win(win)
    else
      ui.open_window(require("owt.config").get().board.position)
      vim.api.nvim_win_set_buf(0, buf)
    end
    M.refresh(buf)
    return buf
  end
  ui.open_window(require("owt.config").get().board.position)
  buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_win_set_buf(0, buf)
  vim.api.nvim_buf_set_name(buf, NAME)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "owt-board"
  vim.wo[0][0].wrap = false
  M.views[buf] = { rows = {}, footer = 1, client_id = origin and origin.id or nil }
  vim.b[buf].owt_client_id = origin and origin.id or nil
  vim.b[buf].owt_root = origin_root
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "owt board — loading…" })
  vim.bo[buf].modifiable = false
  for _, k in ipairs(M.keys) do
    vim.keymap.set("n", k.key, function()
      M.press(buf, k.key)
    end, { buffer = buf, nowait = true, desc = "owt board: " .. k.label })
  end
  local group = vim.api.nvim_create_augroup("owt.board." .. buf, { clear = true })
  vim.api.nvim_create_autocmd("CursorMoved", {
    group = group,
    buffer = buf,
    callback = function()
      update_footer(buf)
    end,
  })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "OwtBoardChanged",
    callback = function(ev)
      local view = M.views[buf]
      if view and (view.client_id == nil or view.client_id == ev.data.client_id) then
        view.client_id = ev.data.client_id
        vim.b[buf].owt_client_id = ev.data.client_id
        M.render(buf, ev.data.board)
      end
    end,
  })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "OwtRefresh",
    callback = function()
      M.refresh(buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = buf,
    callback = function()
      M.views[buf] = nil
      pcall(vim.api.nvim_del_augroup_by_id, group)
    end,
  })
  M.refresh(buf)
  return buf
end

return M

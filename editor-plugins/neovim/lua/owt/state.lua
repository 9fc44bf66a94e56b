--- The latest board each owt client announced, and the statusline.
local M = {}

---@type table<integer, table> client id → Board (owt/boardChanged or owt/board)
M.boards = {}
---@type integer|nil the client whose board arrived last
M.last_client = nil

--- Records `board` as the board of client `client_id` and tells listeners
--- (the board buffer, statuslines) through `User OwtBoardChanged`.
---@param client_id integer
---@param board table
function M.set_board(client_id, board)
  M.boards[client_id] = board
  M.last_client = client_id
  vim.api.nvim_exec_autocmds("User", {
    pattern = "OwtBoardChanged",
    modeline = false,
    data = { client_id = client_id, board = board },
  })
  pcall(vim.cmd.redrawstatus)
end

--- Handler of the notification `owt/boardChanged`.
function M.on_board_changed(err, board, ctx)
  if err or type(board) ~= "table" or type(board.lanes) ~= "table" then
    return
  end
  M.set_board(ctx.client_id, board)
end

--- The board for `bufnr`: its own owt client's, else the latest one.
---@param bufnr integer|nil
---@return table|nil
function M.board_for(bufnr)
  for _, client in ipairs(vim.lsp.get_clients({ name = "owt", bufnr = bufnr or 0 })) do
    if M.boards[client.id] then
      return M.boards[client.id]
    end
  end
  if M.last_client and vim.lsp.get_client_by_id(M.last_client) then
    return M.boards[M.last_client]
  end
  return nil
end

--- Every session of a board, flattened.
---@param board table
---@return table[]
function M.sessions(board)
  local out = {}
  for _, lane in ipairs(board.lanes or {}) do
    for _, session in ipairs(lane.sessions or {}) do
      out[#out + 1] = session
    end
  end
  return out
end

--- Statusline text: the board's `counts.summary` (e.g. `owt 3 working · 1
--- needs you · 2 ready`); empty when there is no owt server or no session.
---@param bufnr integer|nil
---@return string
function M.status(bufnr)
  return M.status_of(M.board_for(bufnr))
end

--- The statusline text of `board` (nil: no board).
---@param board table|nil
---@return string
function M.status_of(board)
  local summary = board and board.counts and board.counts.summary or ""
  if summary == "" then
    return ""
  end
  return "owt " .. summary
end

return M

--- Talking to owt: the `owt lsp` client of this buffer when there is one,
--- else the `owt` CLI (every verb works without the server).
local config = require("owt.config")

local M = {}

--- The owt LSP client for `bufnr`: the one attached to it, else the one an
--- owt buffer (the board) was drawn from, else one whose root holds the
--- current directory.
---@param bufnr integer|nil
---@return vim.lsp.Client|nil
function M.get(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local clients = vim.lsp.get_clients({ name = "owt", bufnr = bufnr })
  if #clients > 0 then
    return clients[1]
  end
  local pinned = vim.b[bufnr].owt_client_id
  local client = pinned and vim.lsp.get_client_by_id(pinned)
  if client and not client:is_stopped() then
    return client
  end
  clients = vim.lsp.get_clients({ name = "owt" })
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  for _, client in ipairs(clients) do
    local root = client.root_dir and vim.fs.normalize(client.root_dir)
    if root and (cwd == root or vim.startswith(cwd, root .. "/")) then
      return client
    end
  end
  return nil
end

--- The repository root owt works in, for CLI calls.
---@param bufnr integer|nil
---@return string
function M.root(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = M.get(bufnr)
  if client and client.root_dir then
    return client.root_dir
  end
  if vim.b[bufnr].owt_root then
    return vim.b[bufnr].owt_root
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name:match("^%a[%w+.-]*://") then
    name = ""
  end
  return (name ~= "" and vim.fs.root(name, { ".git" })) or vim.fs.root(vim.fn.getcwd(), { ".git" }) or vim.fn.getcwd()
end

--- Runs `owt ARGS...` in `cwd`; `on_done(ok, stdout, stderr)` on the main loop.
---@param args string[]
---@param opts { cwd: string|nil }|nil
---@param on_done fun(ok: boolean, stdout: string, stderr: string)
function M.cli(args, opts, on_done)
  local cmd = { config.get().bin }
  vim.list_extend(cmd, args)
  local ok, err = pcall(vim.system, cmd, { text = true, cwd = (opts and opts.cwd) or M.root() }, function(out)
    vim.schedule(function()
      on_done(out.code == 0, out.stdout or "", out.stderr or "")
    end)
  end)
  if not ok then
    vim.schedule(function()
      on_done(false, "", tostring(err))
    end)
  end
end

--- Runs `owt --json ARGS...` and decodes stdout; `on_done(value|nil, err|nil)`.
---@param args string[]
---@param on_done fun(value: any, err: string|nil)
function M.cli_json(args, on_done)
  local full = { "--json" }
  vim.list_extend(full, args)
  M.cli(full, nil, function(ok, stdout, stderr)
    if not ok then
      return on_done(nil, M.cli_error(stderr))
    end
    local decoded, value = pcall(vim.json.decode, stdout, { luanil = { object = true, array = true } })
    if not decoded then
      return on_done(nil, "owt printed something that is not JSON: " .. stdout:sub(1, 200))
    end
    on_done(value, nil)
  end)
end

--- A person-readable error from owt's stderr (`{"error", "hint"}` with --json).
---@param stderr string
---@return string
function M.cli_error(stderr)
  local ok, doc = pcall(vim.json.decode, stderr)
  if ok and type(doc) == "table" and doc.error then
    return doc.hint and (doc.error .. " (" .. doc.hint .. ")") or doc.error
  end
  stderr = vim.trim(stderr)
  return stderr ~= "" and stderr or "owt failed"
end

--- Runs an owt command through `workspace/executeCommand`.
---@param client vim.lsp.Client
---@param command string  e.g. "owt.ship"
---@param args table      the one object argument
---@param on_done fun(result: any, err: string|nil)|nil
function M.execute(client, command, args, on_done)
  client:request("workspace/executeCommand", { command = command, arguments = { args } }, function(err, result)
    if on_done then
      on_done(result, err and (err.message or tostring(err)) or nil)
    elseif err then
      vim.notify("owt: " .. (err.message or tostring(err)), vim.log.levels.ERROR, { title = "owt" })
    end
  end, 0)
end

--- Fetches the board: `owt/board` (no params) from the client, else `owt --json`.
---@param bufnr integer|nil
---@param on_done fun(board: table|nil, err: string|nil, client_id: integer|nil)
function M.board(bufnr, on_done)
  local client = M.get(bufnr)
  if client then
    client:request("owt/board", nil, function(err, board)
      if err then
        return on_done(nil, err.message or tostring(err), client.id)
      end
      require("owt.state").set_board(client.id, board)
      on_done(board, nil, client.id)
    end, 0)
    return
  end
  M.cli_json({}, function(board, err)
    on_done(board, err, nil)
  end)
end

return M

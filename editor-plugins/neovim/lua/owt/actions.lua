--- What `:Owt`, the board and the Lua API do: through the owt LSP client
--- when one serves the buffer, else through the owt CLI.
local client_mod = require("owt.client")
local config = require("owt.config")

local M = {}

local function info(msg)
  vim.notify(msg, vim.log.levels.INFO, { title = "owt" })
end

local function fail(msg)
  vim.notify(msg:match("^owt") and msg or ("owt: " .. msg), vim.log.levels.ERROR, { title = "owt" })
end

--- Called after something that changes sessions, when no server will
--- announce it: refreshes open board buffers.
local function changed()
  vim.api.nvim_exec_autocmds("User", { pattern = "OwtRefresh", modeline = false })
end

--- A long command (merge, ship, delete): the server reports progress and
--- ends with a message of its own; the CLI path notifies here.
---@param command string     LSP command id
---@param args table         its argument
---@param cli_args string[]  the same through the CLI (after `--json`)
---@param done_text fun(value: table): string
---@param on_done fun(result: any, err: string|nil)|nil
---@param client vim.lsp.Client|nil the server to ask (default: the current buffer's)
local function long(command, args, cli_args, done_text, on_done, client)
  client = client or client_mod.get()
  if client then
    client_mod.execute(client, command, args, function(result, err)
      -- The server already said so with window/showMessage.
      if on_done then
        on_done(result, err)
      end
    end)
    return
  end
  client_mod.cli_json(cli_args, function(value, err)
    if err then
      fail(err)
    else
      info(done_text(value))
    end
    changed()
    if on_done then
      on_done(value, err)
    end
  end)
end

--- Opens the terminal of `name` (owt attach) in a split.
---@param name string
function M.attach(name)
  local client = client_mod.get()
  if client then
    client_mod.execute(client, "owt.attach", { session = name }, function(_, err)
      if err then
        fail(err)
      end
    end)
    return
  end
  require("owt.terminal").open({
    session = name,
    argv = { config.get().bin, "attach", name },
    cwd = client_mod.root(),
  })
end

--- Types `text` (then Enter) into the agent `name`.
---@param name string
---@param text string
function M.send(name, text)
  local client = client_mod.get()
  if client then
    client_mod.execute(client, "owt.send", { session = name, text = text }, function(_, err)
      if err then
        fail(err)
      else
        info(("owt: sent to %s"):format(name))
      end
    end)
    return
  end
  client_mod.cli({ "send", name, text }, nil, function(ok, _, stderr)
    if ok then
      info(("owt: sent to %s"):format(name))
    else
      fail(client_mod.cli_error(stderr))
    end
  end)
end

--- Shows the agent's current screen in a floating window.
---@param name string
---@param on_done fun(lines: string[]|nil)|nil
function M.peek(name, on_done)
  local function show(lines)
    while #lines > 0 and vim.trim(lines[#lines]) == "" do
      lines[#lines] = nil
    end
    if #lines == 0 then
      lines = { "(empty screen)" }
    end
    require("owt.ui").float("owt peek: " .. name, lines)
    if on_done then
      on_done(lines)
    end
  end
  local client = client_mod.get()
  if client then
    client_mod.execute(client, "owt.peek", { session = name }, function(result, err)
      if err then
        fail(err)
        return on_done and on_done(nil)
      end
      local screen = type(result) == "table" and result.screen or {}
      show(vim.deepcopy(screen.lines or {}))
    end)
    return
  end
  client_mod.cli({ "peek", name }, nil, function(ok, stdout, stderr)
    if not ok then
      fail(client_mod.cli_error(stderr))
      return on_done and on_done(nil)
    end
    show(vim.split(stdout, "\n", { plain = true }))
  end)
end

---@param name string
---@param on_done fun(result: any, err: string|nil)|nil
---@param client vim.lsp.Client|nil the server to ask (default: the current buffer's)
function M.merge(name, on_done, client)
  long("owt.merge", { session = name }, { "merge", name }, function(out)
    return ("owt: merged %s into %s"):format(out.branch or name, out.base or "its base")
  end, on_done, client)
end

---@param name string
---@param on_done fun(result: any, err: string|nil)|nil
---@param client vim.lsp.Client|nil the server to ask (default: the current buffer's)
function M.ship(name, on_done, client)
  long("owt.ship", { session = name }, { "ship", name }, function(out)
    local merge = out.merge or {}
    local text = ("owt: shipped %s into %s"):format(merge.name or name, merge.base or "its base")
    local unreviewed = out.unreviewed or {}
    if #unreviewed > 0 then
      text = text
        .. (", with %d file%s not reviewed since %s last change (%s)"):format(
          #unreviewed,
          #unreviewed == 1 and "" or "s",
          #unreviewed == 1 and "its" or "their",
          table.concat(unreviewed, ", ")
        )
    end
    return text
  end, on_done, client)
end

--- Restarts `name`'s agent, which is gone, continuing its conversation
--- (owt resume).
---@param name string
---@param on_done fun(result: any, err: string|nil)|nil
---@param client vim.lsp.Client|nil the server to ask (default: the current buffer's)
function M.resume(name, on_done, client)
  long("owt.resume", { session = name }, { "resume", name }, function(out)
    return ("owt: resumed %s (%s)"):format(out.name or name, out.provider or "its agent")
  end, on_done, client)
end

---@param name string
---@param force boolean|nil drop uncommitted work
---@param on_done fun(result: any, err: string|nil)|nil
---@param client vim.lsp.Client|nil the server to ask (default: the current buffer's)
function M.delete(name, force, on_done, client)
  local cli_args = { "delete", name }
  if force then
    cli_args[#cli_args + 1] = "--force"
  end
  long("owt.delete", { session = name, force = force or nil }, cli_args, function(out)
    return ("owt: deleted %s"):format(out.name or name)
  end, on_done, client)
end

--- Answers `name`'s pending ACP permission request: `option` (an option's
--- id, number or name; nil: the first "allow once"), or refuses it when
--- `deny`. `permission_id` (SessionView.permission.id) makes sure no later
--- request is answered by mistake; the CLI path does without it.
---@param name string
---@param opts { option: string|nil, deny: boolean|nil, permission_id: integer|nil }
---@param on_done fun(result: any, err: string|nil)|nil
function M.answer(name, opts, on_done)
  local function done(result, err)
    if err then
      fail(err)
    elseif type(result) == "table" then
      info(("owt: %s: %s → %s"):format(name, result.question or "", result.name or ""))
    end
    if on_done then
      on_done(result, err)
    end
  end
  local client = client_mod.get()
  if client then
    local command = opts.deny and "owt.deny" or "owt.approve"
    local args = { session = name, permission_id = opts.permission_id }
    if not opts.deny then
      args.option = opts.option
    end
    client_mod.execute(client, command, args, done)
    return
  end
  local cli_args = opts.deny and { "deny", name } or { "approve", name, opts.option }
  client_mod.cli_json(cli_args, function(value, err)
    changed()
    done(value, err)
  end)
end

--- Picks one of `session`'s permission options (vim.ui.select), then
--- answers with it.
---@param session table  SessionView with a `permission`
---@param on_done fun(result: any, err: string|nil)|nil
function M.approve_pick(session, on_done)
  local permission = session.permission
  if type(permission) ~= "table" then
    return fail(("owt: %s has no pending permission request"):format(session.name))
  end
  local prompt = ("owt: %s asks: %s"):format(session.name, permission.question or "")
  vim.ui.select(permission.options or {}, {
    prompt = prompt,
    kind = "owt_permission",
    format_item = function(option)
      return option.name
    end,
  }, function(option)
    if option then
      M.answer(session.name, { option = option.id, permission_id = permission.id }, on_done)
    end
  end)
end

--- The agents `:Owt new` offers: the configured default, the repository's
--- `[tools.*]` and the built-in providers.
---@return string[]
function M.providers()
  local names = { "claude", "codex", "opencode", "pi", "droid", "aider", "gemini", "cursor-agent", "amp", "goose" }
  local ok, out = pcall(function()
    return vim.system({ config.get().bin, "--json", "config", "show" }, { text = true, cwd = client_mod.root() }):wait(3000)
  end)
  if ok and out.code == 0 then
    local decoded, doc = pcall(vim.json.decode, out.stdout)
    if decoded and type(doc) == "table" and type(doc.config) == "table" and type(doc.config.tools) == "table" then
      for tool in pairs(doc.config.tools) do
        if not vim.tbl_contains(names, tool) then
          table.insert(names, 1, tool)
        end
      end
    end
  end
  return names
end

--- The selection context the CLI path appends (the server does the same
--- for owt.spawn with a uri and lines).
local function selection_context(bufnr, start_line, end_line)
  local lines = vim.api.nvim_buf_get_lines(bufnr, start_line - 1, end_line, false)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local root = client_mod.root(bufnr)
  if vim.startswith(path, root .. "/") then
    path = path:sub(#root + 2)
  end
  return path, ("\n\nContext: %s, lines %d-%d:\n```\n%s\n```"):format(path, start_line, end_line, table.concat(lines, "\n"))
end

--- Starts an agent. `opts.task` may be empty when a selection is given.
---@param opts { task: string|nil, ai_tool: string|nil, bufnr: integer|nil, start_line: integer|nil, end_line: integer|nil }
---@param on_done fun(result: any, err: string|nil)|nil
function M.new(opts, on_done)
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local task = opts.task and vim.trim(opts.task) or ""
  local has_selection = opts.start_line ~= nil and vim.api.nvim_buf_get_name(bufnr) ~= ""
  if task == "" and not has_selection then
    fail("owt: a new agent needs a task")
    return on_done and on_done(nil, "no task")
  end
  local client = client_mod.get(bufnr)
  if client then
    local args = { task = task ~= "" and task or nil, ai_tool = opts.ai_tool }
    if has_selection then
      args.uri = vim.uri_from_bufnr(bufnr)
      args.start_line = opts.start_line
      args.end_line = opts.end_line or opts.start_line
    end
    client_mod.execute(client, "owt.spawn", args, function(result, err)
      if on_done then
        on_done(result, err)
      end
    end)
    return
  end
  if has_selection then
    local path, context = selection_context(bufnr, opts.start_line, opts.end_line or opts.start_line)
    if task == "" then
      task = ("Work on %s lines %d-%d"):format(path, opts.start_line, opts.end_line or opts.start_line)
    end
    task = task .. context
  end
  local cli_args = { "new", task }
  if opts.ai_tool then
    vim.list_extend(cli_args, { "--ai-tool", opts.ai_tool })
  end
  client_mod.cli_json(cli_args, function(out, err)
    if err then
      fail(err)
    else
      info(("owt: started %s (%s)"):format(out.session.name, out.session.provider))
    end
    changed()
    if on_done then
      on_done(out, err)
    end
  end)
end

--- `:Owt new` interactively: task from vim.ui.input (optional with a
--- selection), agent from vim.ui.select when `ask_provider` is set.
---@param opts { task: string|nil, bufnr: integer|nil, start_line: integer|nil, end_line: integer|nil }
---@param on_done fun(result: any, err: string|nil)|nil
function M.new_interactive(opts, on_done)
  local function with_provider(task)
    local spawn = function(ai_tool)
      M.new(vim.tbl_extend("force", opts, { task = task, ai_tool = ai_tool }), on_done)
    end
    if not config.get().ask_provider then
      return spawn(nil)
    end
    local choices = { "default" }
    vim.list_extend(choices, M.providers())
    vim.ui.select(choices, { prompt = "owt: which agent?" }, function(choice)
      if choice == nil then
        return
      end
      spawn(choice ~= "default" and choice or nil)
    end)
  end
  if opts.task and vim.trim(opts.task) ~= "" then
    return with_provider(opts.task)
  end
  local prompt = opts.start_line and "owt task (the selection is attached): " or "owt task: "
  vim.ui.input({ prompt = prompt }, function(task)
    if task == nil then
      return
    end
    if vim.trim(task) == "" and not opts.start_line then
      return fail("owt: a new agent needs a task")
    end
    with_provider(task)
  end)
end

return M

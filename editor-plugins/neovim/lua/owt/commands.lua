--- The `:Owt` user command and its completion.
local actions = require("owt.actions")
local client_mod = require("owt.client")
local config = require("owt.config")

local M = {}

--- Subcommands that take a session name as their first argument.
local WITH_SESSION = { attach = true, send = true, peek = true, merge = true, ship = true, delete = true, resume = true, review = true }

M.subcommands = { "board", "new", "list", "attach", "send", "peek", "merge", "ship", "delete", "resume", "review", "queue", "guard" }

--- Session names, from the latest board, else `owt --json list`.
---@return string[]
function M.session_names()
  local state = require("owt.state")
  local board = state.board_for(0)
  local names = {}
  if board then
    for _, s in ipairs(state.sessions(board)) do
      names[#names + 1] = s.name
    end
    return names
  end
  local ok, out = pcall(function()
    return vim.system({ config.get().bin, "--json", "list" }, { text = true, cwd = client_mod.root() }):wait(3000)
  end)
  if ok and out.code == 0 then
    local decoded, list = pcall(vim.json.decode, out.stdout)
    if decoded and type(list) == "table" then
      for _, s in ipairs(list.sessions or {}) do
        names[#names + 1] = s.name
      end
    end
  end
  return names
end

--- Completion of `:Owt`.
function M.complete(arglead, cmdline, _)
  local rest = cmdline:gsub("^%S*Owt!?", "", 1)
  local words = vim.split(vim.trim(rest), "%s+", { trimempty = true })
  local nth = #words + (arglead == "" and 1 or 0)
  local candidates = {}
  if nth <= 1 then
    candidates = M.subcommands
  elseif nth == 2 and WITH_SESSION[words[1]] then
    candidates = M.session_names()
  else
    return {}
  end
  return vim.tbl_filter(function(c)
    return vim.startswith(c, arglead)
  end, candidates)
end

--- Runs `fn(name)` with the session named in `args`, or one picked with
--- vim.ui.select.
local function with_session(name, verb, fn)
  if name and name ~= "" then
    return fn(name)
  end
  local names = M.session_names()
  if #names == 0 then
    return vim.notify("owt: no sessions", vim.log.levels.WARN, { title = "owt" })
  end
  vim.ui.select(names, { prompt = ("owt %s:"):format(verb) }, function(choice)
    if choice then
      fn(choice)
    end
  end)
end

--- `owt ARGS` (text output) shown in the scratch buffer `owt://VERB`.
local function show_cli(verb, args)
  local cli = { verb }
  vim.list_extend(cli, args)
  client_mod.cli(cli, nil, function(ok, stdout, stderr)
    if not ok then
      return vim.notify("owt: " .. client_mod.cli_error(stderr), vim.log.levels.ERROR, { title = "owt" })
    end
    local lines = vim.split(vim.trim(stdout), "\n", { plain = true })
    require("owt.ui").scratch("owt://" .. verb, lines, { filetype = "owt-" .. verb })
  end)
end

--- `:Owt list`: `owt --json list` as a table.
function M.list()
  client_mod.cli_json({ "list" }, function(list, err)
    if err then
      return vim.notify("owt: " .. err, vim.log.levels.ERROR, { title = "owt" })
    end
    local ui = require("owt.ui")
    local rows = { { "NAME", "STATUS", "AGENT", "BRANCH", "AHEAD", "CHANGED", "OVERLAPS", "TOKENS", "WORKTREE" } }
    for _, s in ipairs(list.sessions or {}) do
      rows[#rows + 1] = {
        s.name,
        s.status_text or s.status,
        s.provider or "",
        s.branch or "",
        tostring(s.ahead or 0),
        tostring(s.changed_files or 0),
        tostring(s.overlaps or 0),
        s.usage and ui.usage_figure(s.usage) or "-",
        s.worktree or "",
      }
    end
    local lines = require("owt.ui").columns(rows)
    if #rows == 1 then
      lines[#lines + 1] = "(no sessions)"
    end
    require("owt.ui").scratch("owt://list", lines, { filetype = "owt-list" })
  end)
end

--- The `:Owt` command.
---@param cmd table the argument of nvim_create_user_command's callback
function M.run(cmd)
  local args = vim.deepcopy(cmd.fargs)
  local sub = table.remove(args, 1) or "board"
  local name = args[1]
  if sub == "board" then
    require("owt.board").open()
  elseif sub == "new" then
    local opts = { task = table.concat(args, " "), bufnr = vim.api.nvim_get_current_buf() }
    if cmd.range > 0 then
      opts.start_line, opts.end_line = cmd.line1, cmd.line2
    end
    actions.new_interactive(opts)
  elseif sub == "list" then
    M.list()
  elseif sub == "attach" then
    with_session(name, sub, actions.attach)
  elseif sub == "send" then
    with_session(name, sub, function(session)
      local text = table.concat(vim.list_slice(args, 2), " ")
      if text ~= "" then
        return actions.send(session, text)
      end
      vim.ui.input({ prompt = ("owt: send to %s: "):format(session) }, function(input)
        if input and input ~= "" then
          actions.send(session, input)
        end
      end)
    end)
  elseif sub == "peek" then
    with_session(name, sub, actions.peek)
  elseif sub == "merge" then
    with_session(name, sub, actions.merge)
  elseif sub == "ship" then
    with_session(name, sub, actions.ship)
  elseif sub == "delete" then
    with_session(name, sub, function(session)
      actions.delete(session, cmd.bang)
    end)
  elseif sub == "resume" then
    with_session(name, sub, actions.resume)
  elseif sub == "review" then
    with_session(name, sub, function(session)
      require("owt.review").open(session)
    end)
  elseif sub == "queue" or sub == "guard" then
    show_cli(sub, args)
  else
    vim.notify(("owt: unknown subcommand `%s`; try one of %s"):format(sub, table.concat(M.subcommands, ", ")), vim.log.levels.ERROR, { title = "owt" })
  end
end

return M

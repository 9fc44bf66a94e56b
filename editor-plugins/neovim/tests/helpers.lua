-- Test helpers: a hermetic environment, real git repositories, the real owt
-- binary, waits with deadlines that fail loudly, and a tiny runner.
local M = {}

local uv = vim.uv

local this = debug.getinfo(1, "S").source:sub(2)
M.tests_dir = vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(this, ":p")))
M.plugin_dir = vim.fs.dirname(M.tests_dir)
M.repo_root = vim.fs.dirname(vim.fs.dirname(M.plugin_dir))
M.idle_agent = M.repo_root .. "/tests/data/idle-agent.sh"

M.bin = os.getenv("OWT_BIN")
if not M.bin or M.bin == "" or vim.fn.executable(M.bin) ~= 1 then
  error("OWT_BIN must name the owt binary (run tests/run.sh); got " .. tostring(M.bin))
end

--- Waits until `cond()` is truthy, or fails with `what` after `ms`.
---@return any the last value of cond()
function M.wait(ms, cond, what)
  local value
  local ok = vim.wait(ms, function()
    value = cond()
    return value
  end, 50)
  if not ok then
    error(("timed out after %d ms waiting for %s"):format(ms, what), 2)
  end
  return value
end

function M.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(("%s: expected %s, got %s"):format(what or "value", vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function M.truthy(value, what)
  if not value then
    error(what or "expected a true value", 2)
  end
  return value
end

--- Runs a command synchronously (deadline 60 s); errors on failure.
---@return string stdout
function M.sh(cmd, opts)
  opts = opts or {}
  local out = vim.system(cmd, { text = true, cwd = opts.cwd }):wait(opts.timeout or 60000)
  if out.code ~= 0 and not opts.allow_fail then
    error(("`%s` failed (%s): %s%s"):format(table.concat(cmd, " "), tostring(out.code), out.stdout or "", out.stderr or ""), 2)
  end
  return out.stdout or "", out.code
end

--- `owt --json ARGS` in the repository, decoded.
function M.owt_json(args)
  local cmd = { M.bin, "-C", M.repo, "--json" }
  vim.list_extend(cmd, args)
  return vim.json.decode((M.sh(cmd)))
end

--- Sessions of the repository by name (`owt --json list`).
function M.sessions()
  local out = {}
  for _, s in ipairs(M.owt_json({ "list" }).sessions) do
    out[s.name] = s
  end
  return out
end

function M.write(path, text)
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

function M.read(path)
  local f = io.open(path, "r")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

--- Hermetic environment and a fresh repository with a fake agent; loads the
--- plugin as Neovim would at startup.
---@param files table<string, string>|nil extra files to commit
function M.setup(files)
  M.tmp = uv.fs_realpath(assert(uv.fs_mkdtemp("/tmp/owt-nvim-XXXXXX")))
  local env = {
    HOME = M.tmp .. "/home",
    OWT_HOME = M.tmp .. "/owt-home",
    XDG_CONFIG_HOME = M.tmp .. "/home/.config",
    XDG_STATE_HOME = M.tmp .. "/home/.local/state",
    GIT_CONFIG_GLOBAL = "/dev/null",
    GIT_CONFIG_SYSTEM = "/dev/null",
    GIT_AUTHOR_NAME = "owt test",
    GIT_AUTHOR_EMAIL = "test@owt.invalid",
    GIT_COMMITTER_NAME = "owt test",
    GIT_COMMITTER_EMAIL = "test@owt.invalid",
    TMUX = "",
    OWT_SESSION = "",
    WEZTERM_PANE = "",
    ZELLIJ = "",
    KITTY_LISTEN_ON = "",
  }
  for k, v in pairs(env) do
    vim.env[k] = v
  end
  vim.fn.mkdir(env.HOME, "p")
  vim.fn.mkdir(env.OWT_HOME, "p")
  M.owt_home = env.OWT_HOME
  M.repo = M.tmp .. "/repo"
  vim.fn.mkdir(M.repo, "p")
  M.sh({ "git", "init", "-q", "-b", "main", M.repo })
  M.write(
    M.repo .. "/.owt.toml",
    ('[agent]\ndefault_tool = "fake"\n[tools.fake]\nbinary = "%s"\n'):format(M.idle_agent)
  )
  for path, text in pairs(files or {}) do
    M.write(M.repo .. "/" .. path, text)
  end
  M.sh({ "git", "add", "-A" }, { cwd = M.repo })
  M.sh({ "git", "commit", "-q", "-m", "initial" }, { cwd = M.repo })
  -- A repository's own agents run only once the user trusts its files.
  M.sh({ M.bin, "trust" }, { cwd = M.repo })
  vim.cmd.cd(M.repo)

  -- Record notifications (and print them on their own lines).
  M.messages = {}
  vim.notify = function(msg, level)
    M.messages[#M.messages + 1] = { msg = msg, level = level }
    io.stdout:write(("# notify(%s): %s\n"):format(tostring(level), msg))
  end

  vim.g.owt = { bin = M.bin, terminal = { insert = false } }
  vim.opt.runtimepath:prepend(M.plugin_dir)
  vim.cmd("filetype on")
  vim.cmd.runtime("plugin/owt.lua")
end

--- The owt client attached to `bufnr` (waits for it).
function M.client(bufnr)
  return M.wait(20000, function()
    local c = vim.lsp.get_clients({ name = "owt", bufnr = bufnr })[1]
    return c and c.initialized and c or nil
  end, "the owt LSP client to attach to buffer " .. bufnr)
end

--- Opens `path` (relative to the repository) and waits for owt to attach.
function M.open(path)
  vim.cmd.edit(vim.fn.fnameescape(M.repo .. "/" .. path))
  local buf = vim.api.nvim_get_current_buf()
  return buf, M.client(buf)
end

--- `owt new TASK` through the CLI; returns the SessionView.
--- `owt new TASK`; returns the session once its agent has settled (no
--- longer starting or working: a verb such as merge or ship refuses a
--- working agent, and on a loaded machine its first turn can take seconds).
function M.new_session(task)
  local session = M.owt_json({ "new", task }).session
  M.wait(30000, function()
    local s = M.sessions()[session.name]
    return s == nil or (s.status ~= "starting" and s.status ~= "working")
  end, "the agent of " .. session.name .. " to settle")
  return session
end

--- Lines of a buffer joined with newlines.
function M.text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

--- Kills every process started with this test's OWT_HOME (session hosts,
--- agents, the LSP server), then removes the temporary directory.
function M.cleanup()
  for _, client in ipairs(vim.lsp.get_clients()) do
    client:stop(true)
  end
  if not M.owt_home then
    return
  end
  local marker = "OWT_HOME=" .. M.owt_home
  local me = vim.fn.getpid()
  local function victims()
    local pids = {}
    local dir = uv.fs_scandir("/proc")
    while dir do
      local name = uv.fs_scandir_next(dir)
      if not name then
        break
      end
      local pid = tonumber(name)
      if pid and pid ~= me then
        local f = io.open("/proc/" .. name .. "/environ", "rb")
        if f then
          local environ = f:read("*a") or ""
          f:close()
          if ("\0" .. environ .. "\0"):find("\0" .. marker .. "\0", 1, true) then
            pids[#pids + 1] = pid
          end
        end
      end
    end
    return pids
  end
  for _, pid in ipairs(victims()) do
    uv.kill(pid, "sigterm")
  end
  vim.wait(2000, function()
    return #victims() == 0
  end, 100)
  for _, pid in ipairs(victims()) do
    uv.kill(pid, "sigkill")
  end
  vim.fn.delete(M.tmp, "rf")
end

--- Runs `tests` ({ {name, fn}, ... }) in order, prints one line per test and
--- `RESULT passed=N failed=M`, cleans up, and exits non-zero on failure.
function M.run(tests)
  local passed, failed = 0, 0
  for _, t in ipairs(tests) do
    local ok, err = xpcall(t[2], debug.traceback)
    if ok then
      passed = passed + 1
      io.stdout:write(("ok - %s\n"):format(t[1]))
    else
      failed = failed + 1
      io.stdout:write(("not ok - %s\n%s\n"):format(t[1], tostring(err)))
    end
    io.stdout:flush()
  end
  local ok, err = pcall(M.cleanup)
  if not ok then
    io.stdout:write("cleanup failed: " .. tostring(err) .. "\n")
  end
  io.stdout:write(("RESULT passed=%d failed=%d\n"):format(passed, failed))
  io.stdout:flush()
  vim.cmd((failed > 0 and "cquit 1") or "qall!")
end

return M

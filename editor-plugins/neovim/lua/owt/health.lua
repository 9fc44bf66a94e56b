--- :checkhealth owt
local M = {}

local function run(cmd)
  local ok, out = pcall(function()
    return vim.system(cmd, { text = true }):wait(10000)
  end)
  if not ok then
    return nil, tostring(out)
  end
  if out.code ~= 0 then
    local err = vim.trim(out.stderr or "")
    return nil, err ~= "" and err or ("exit code " .. tostring(out.code))
  end
  return out.stdout
end

local function decode(text)
  local ok, value = pcall(vim.json.decode, text or "")
  return ok and type(value) == "table" and value or nil
end

--- Compares dotted versions; true when `have` >= `want`.
local function at_least(have, want)
  local a, b = vim.version.parse(have), vim.version.parse(want)
  return a ~= nil and b ~= nil and vim.version.cmp(a, b) >= 0
end

function M.check()
  local health = vim.health
  local plugin_version = require("owt").version
  local config = require("owt.config").get()

  health.start("owt: Neovim")
  if vim.fn.has("nvim-0.11") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.11 or newer is required", { "Upgrade Neovim" })
  end

  health.start("owt: binary")
  local exe = vim.fn.exepath(config.bin)
  if exe == "" then
    health.error(("`%s` not found"):format(config.bin), {
      "Install owt (cargo install --path server) and put it on $PATH",
      "or point the plugin at it: vim.g.owt = { bin = '/path/to/owt' }",
    })
    return
  end
  health.ok("found " .. exe)

  local out, err = run({ exe, "version", "--json" })
  local version = decode(out)
  if not version or not version.version then
    health.error("`owt version --json` failed: " .. (err or "unreadable output"))
  elseif version.version == plugin_version then
    health.ok(("owt %s matches the plugin (%s)"):format(version.version, plugin_version))
  else
    health.warn(("owt %s does not match the plugin (%s)"):format(version.version, plugin_version), {
      "Update the plugin and the binary together",
    })
  end

  health.start("owt: store")
  out, err = run({ exe, "--json", "db", "health" })
  local db = decode(out)
  if not db then
    health.error("the store is not reachable: " .. (err or "unreadable output"), { "Run `owt db health` in a terminal" })
  elseif db.integrity ~= "ok" then
    health.error(("store %s: integrity %s"):format(db.path or "?", tostring(db.integrity)), { "Run `owt doctor`" })
  else
    health.ok(("store %s reachable (schema %s, %s sessions)"):format(db.path or "?", tostring(db.schema_version), tostring(db.sessions)))
    for _, problem in ipairs(db.problems or {}) do
      health.warn(problem)
    end
  end

  health.start("owt: git")
  out, err = run({ "git", "--version" })
  local git = out and out:match("(%d+%.%d+%.?%d*)")
  if not git then
    health.error("git not found: " .. (err or "unreadable output"), { "Install git 2.38 or newer" })
  elseif at_least(git, "2.38.0") then
    health.ok("git " .. git)
  else
    health.warn(("git %s is older than 2.38 (merge prediction uses `git merge-tree --write-tree`)"):format(git))
  end

  health.start("owt: LSP")
  local clients = vim.lsp.get_clients({ name = "owt" })
  if #clients == 0 then
    health.info("no owt server running (it starts when you open a file in a git repository)")
  end
  for _, client in ipairs(clients) do
    health.ok(("owt lsp running (client %d, root %s)"):format(client.id, client.root_dir or "?"))
  end
end

return M

-- Conflict Guard in the editor: a fake agent edits a file you are editing
-- too → owt diagnostics on the agent's lines; its code actions include
-- attach and ship; attach opens the agent's terminal; the agent reverts →
-- the diagnostics clear.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

local ORIGINAL = {}
for i = 1, 12 do
  ORIGINAL[i] = ("line %d"):format(i)
end
local original_text = table.concat(ORIGINAL, "\n") .. "\n"
h.setup({ ["src/shared.txt"] = original_text })

local LEVELS = { overlap = true, ["hunk-overlap"] = true, conflict = true }
local session, buf, client
local seen -- the diagnostics test 1 saw (later tests need them)

--- owt diagnostics of the buffer.
local function owt_diagnostics()
  return vim.tbl_filter(function(d)
    return d.source == "owt"
  end, vim.diagnostic.get(buf))
end

h.run({
  {
    "an agent editing lines you edit shows owt diagnostics on its lines",
    function()
      session = h.new_session("rework shared.txt")
      h.wait(20000, function()
        local s = h.sessions()[session.name]
        return s and s.status == "needs-input"
      end, "the fake agent to show its prompt")
      buf, client = h.open("src/shared.txt")
      -- You change lines 5-6 (unsaved); the agent changes lines 5-6 in its worktree.
      vim.api.nvim_buf_set_lines(buf, 4, 6, false, { "line 5 (yours)", "line 6 (yours)" })
      local theirs = vim.deepcopy(ORIGINAL)
      theirs[5], theirs[6] = "line 5 (agent)", "line 6 (agent)"
      h.write(session.worktree .. "/src/shared.txt", table.concat(theirs, "\n") .. "\n")
      -- (The agent's write may be seen before your unsaved lines: an
      -- awareness hint first, then the pair's diagnostics.)
      local diagnostics = h.wait(30000, function()
        local d = owt_diagnostics()
        return #d > 0 and vim.iter(d):all(function(x)
          return x.code ~= "aware"
        end) and d or nil
      end, "owt diagnostics in src/shared.txt (the server must publish Conflict Guard diagnostics)")
      for _, d in ipairs(diagnostics) do
        h.truthy(LEVELS[d.code], "diagnostic code is a level: " .. vim.inspect(d.code))
        local data = d.user_data and d.user_data.lsp and d.user_data.lsp.data or {}
        h.eq(session.name, data.session, "data.session")
        h.eq(d.code, data.level, "data.level")
        -- 0-based lines 4..5 are the agent's lines 5-6.
        h.truthy(d.lnum >= 4 and d.lnum <= 5, ("diagnostic on line %d, not on the agent's lines 5-6"):format(d.lnum + 1))
        h.truthy(d.end_lnum <= 6, ("diagnostic ends on line %d, past the agent's lines"):format(d.end_lnum + 1))
      end
      h.truthy(vim.iter(diagnostics):any(function(d)
        return d.lnum == 4
      end), "a diagnostic starts on line 5: " .. vim.inspect(diagnostics))
      seen = diagnostics
    end,
  },
  {
    "the diagnostic's code actions include attach and ship",
    function()
      h.truthy(seen, "this test needs the owt diagnostic of the first test")
      local d = owt_diagnostics()[1]
      h.truthy(d, "an owt diagnostic")
      local params = {
        textDocument = { uri = vim.uri_from_bufnr(buf) },
        range = d.user_data.lsp.range,
        context = { diagnostics = { d.user_data.lsp }, triggerKind = 1 },
      }
      local response = client:request_sync("textDocument/codeAction", params, 10000, buf)
      h.truthy(response and not response.err, "codeAction answered: " .. vim.inspect(response))
      local commands = {}
      for _, action in ipairs(response.result or {}) do
        local command = action.command or {}
        commands[command.command or action.title] = command.arguments and command.arguments[1]
      end
      h.eq({ session = session.name }, commands["owt.attach"], "owt.attach action")
      h.eq({ session = session.name }, commands["owt.ship"], "owt.ship action")
    end,
  },
  {
    "running the attach code action opens the agent's terminal",
    function()
      h.truthy(seen, "this test needs the owt diagnostic of the first test")
      local d = h.truthy(owt_diagnostics()[1], "an owt diagnostic")
      vim.api.nvim_win_set_cursor(0, { d.lnum + 1, 0 })
      vim.lsp.buf.code_action({
        apply = true,
        filter = function(action)
          return action.command ~= nil and action.command.command == "owt.attach"
        end,
      })
      local term = h.wait(15000, function()
        for _, b in ipairs(vim.api.nvim_list_bufs()) do
          if vim.bo[b].buftype == "terminal" and vim.b[b].owt_session == session.name then
            return b
          end
        end
      end, "a terminal buffer attached to " .. session.name)
      h.wait(15000, function()
        return h.text(term):find("ready>", 1, true)
      end, "the agent's screen (`ready>`) in the terminal:\n" .. h.text(term))
      vim.cmd("wincmd p")
    end,
  },
  {
    "the diagnostics clear when the agent reverts",
    function()
      h.truthy(seen, "this test needs the owt diagnostics of the first test")
      h.write(session.worktree .. "/src/shared.txt", original_text)
      h.wait(30000, function()
        return #owt_diagnostics() == 0
      end, "owt diagnostics to clear; still: " .. vim.inspect(owt_diagnostics()))
    end,
  },
})

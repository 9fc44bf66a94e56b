-- Awake before you type: an agent changes lines of a file you have open
-- but have not touched → a Hint on its lines (level `aware`, naming it);
-- you edit those lines (unsaved) → the hint becomes a Conflict Guard
-- diagnostic (hunk-overlap or conflict); you undo → the hint is back.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

local ORIGINAL = {}
for i = 1, 20 do
  ORIGINAL[i] = ("line %d"):format(i)
end
local original_text = table.concat(ORIGINAL, "\n") .. "\n"
h.setup({ ["src/open.txt"] = original_text })

local session, buf

local function owt_diagnostics()
  return vim.tbl_filter(function(d)
    return d.source == "owt"
  end, vim.diagnostic.get(buf))
end

h.run({
  {
    "an agent's lines in a file you have open show as a hint before you type",
    function()
      session = h.new_session("rework open.txt")
      h.wait(20000, function()
        local s = h.sessions()[session.name]
        return s and s.status == "needs-input"
      end, "the fake agent to show its prompt")
      buf = h.open("src/open.txt")
      h.eq(false, vim.bo[buf].modified, "the buffer is not edited")
      local theirs = vim.deepcopy(ORIGINAL)
      for i = 8, 10 do
        theirs[i] = ("line %d (agent)"):format(i)
      end
      h.write(session.worktree .. "/src/open.txt", table.concat(theirs, "\n") .. "\n")
      local hints = h.wait(30000, function()
        local d = owt_diagnostics()
        return #d > 0 and d or nil
      end, "an owt hint in src/open.txt before any edit")
      h.eq(1, #hints, "one hint: " .. vim.inspect(hints))
      local d = hints[1]
      h.eq("aware", d.code, "code")
      h.eq(vim.diagnostic.severity.HINT, d.severity, "severity")
      h.eq(7, d.lnum, "starts on the agent's first line (8)")
      h.eq(10, d.end_lnum, "ends after the agent's last line (10)")
      h.truthy(
        d.message:find(session.name .. " (fake, ", 1, true) and d.message:find("is changing lines 8–10 here", 1, true),
        "the message names the agent and its lines: " .. d.message
      )
      h.eq(session.name, d.user_data.lsp.data.session, "data.session")
      h.eq(false, vim.bo[buf].modified, "still not edited")
    end,
  },
  {
    "editing those lines turns the hint into a Conflict Guard diagnostic",
    function()
      vim.api.nvim_buf_set_lines(buf, 8, 9, false, { "line 9 (yours)" })
      local upgraded = h.wait(30000, function()
        local d = owt_diagnostics()
        local levels = {}
        for _, x in ipairs(d) do
          levels[x.code] = true
        end
        return #d > 0 and not levels.aware and (levels["hunk-overlap"] or levels.conflict) and d or nil
      end, "the hint to become hunk-overlap or conflict; now: " .. vim.inspect(owt_diagnostics()))
      for _, d in ipairs(upgraded) do
        h.truthy(d.severity < vim.diagnostic.severity.HINT, "severity above hint: " .. vim.inspect(d))
        h.eq(session.name, d.user_data.lsp.data.session, "data.session")
      end
    end,
  },
  {
    "undoing your edit brings the hint back",
    function()
      vim.api.nvim_buf_set_lines(buf, 8, 9, false, { "line 9" })
      h.wait(30000, function()
        local d = owt_diagnostics()
        return #d == 1 and d[1].code == "aware" and d[1].lnum == 7
      end, "the hint again; now: " .. vim.inspect(owt_diagnostics()))
    end,
  },
})

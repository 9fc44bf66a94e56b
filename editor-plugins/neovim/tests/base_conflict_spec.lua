-- The base moved under your session: Neovim is open in a session's
-- worktree, the session changed lines 5–6 of a file, and afterwards (while
-- the editor is running) a commit lands on `main` that changes the same
-- lines. The user sees an Error (`base-conflict`) on exactly the session's
-- lines: the gutter sign, the message naming main's lines, the float.
-- Taking main's lines in the buffer (unsaved) makes it merge again: the
-- error clears.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

local ORIGINAL = {}
for i = 1, 20 do
  ORIGINAL[i] = ("line %d"):format(i)
end
local function text_with(tag)
  local lines = vim.deepcopy(ORIGINAL)
  lines[5], lines[6] = ("line 5 (%s)"):format(tag), ("line 6 (%s)"):format(tag)
  return lines
end
h.setup({ ["src/base.txt"] = table.concat(ORIGINAL, "\n") .. "\n" })

local session, buf

local function owt_diagnostics()
  return vim.tbl_filter(function(d)
    return d.source == "owt"
  end, vim.diagnostic.get(buf))
end

local function base_conflicts()
  return vim.tbl_filter(function(d)
    return d.code == "base-conflict"
  end, owt_diagnostics())
end

h.run({
  {
    "a commit landing on main over the session's lines is an Error on those lines",
    function()
      session = h.new_session("rework base.txt")
      h.wait(20000, function()
        local s = h.sessions()[session.name]
        return s and s.status == "needs-input"
      end, "the fake agent to show its prompt")
      -- The session's change (its agent's working state).
      h.write(session.worktree .. "/src/base.txt", table.concat(text_with("agent"), "\n") .. "\n")
      -- You open the session's file in its worktree.
      vim.cmd.edit(vim.fn.fnameescape(session.worktree .. "/src/base.txt"))
      buf = vim.api.nvim_get_current_buf()
      local client = h.client(buf)
      h.eq(
        vim.uv.fs_realpath(session.worktree),
        vim.uv.fs_realpath(client.root_dir),
        "the server runs for the session's worktree"
      )
      -- Afterwards, a commit lands on main changing the same lines.
      h.write(h.repo .. "/src/base.txt", table.concat(text_with("main"), "\n") .. "\n")
      h.sh({ "git", "commit", "-q", "-am", "main reworks lines 5-6" }, { cwd = h.repo })

      local seen = h.wait(30000, function()
        local d = base_conflicts()
        return #d > 0 and d or nil
      end, "a base-conflict diagnostic after main moved; now: " .. vim.inspect(owt_diagnostics()))
      h.eq(1, #seen, "one base-conflict: " .. vim.inspect(seen))
      local d = seen[1]
      h.eq(vim.diagnostic.severity.ERROR, d.severity, "routed like a conflict: Error")
      h.eq(4, d.lnum, "starts on the session's first changed line (5)")
      h.eq(6, d.end_lnum, "ends after the session's last changed line (6)")
      h.eq(
        "main changed lines 5–6 since you started; your changes here no longer merge into main",
        d.message,
        "the message names the base's lines"
      )
      local data = d.user_data.lsp.data
      h.eq("base-conflict", data.level, "data.level")
      h.eq(session.name, data.session, "data.session")

      -- What the user sees: an error sign in the gutter on line 5…
      local signs = vim.tbl_filter(function(m)
        return m[4].sign_hl_group == "DiagnosticSignError"
      end, vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true, type = "sign" }))
      h.truthy(#signs >= 1, "an error sign: " .. vim.inspect(signs))
      h.eq(4, signs[1][2], "the error sign is on line 5")
      -- …and the message in the diagnostic float on that line.
      vim.api.nvim_win_set_cursor(0, { 5, 0 })
      local float_buf, win = vim.diagnostic.open_float({ scope = "line" })
      h.truthy(float_buf and win, "a diagnostic float opens on line 5")
      local shown = table.concat(vim.api.nvim_buf_get_lines(float_buf, 0, -1, false), "\n")
      vim.api.nvim_win_close(win, true)
      h.truthy(
        shown:find("main changed lines 5–6 since you started", 1, true),
        "the float shows the message: " .. shown
      )
    end,
  },
  {
    "taking main's lines in the buffer (unsaved) clears the error",
    function()
      h.truthy(#base_conflicts() > 0, "this test needs the first test's base-conflict")
      vim.api.nvim_buf_set_lines(buf, 4, 6, false, { "line 5 (main)", "line 6 (main)" })
      h.wait(30000, function()
        return #base_conflicts() == 0
      end, "the base-conflict to clear; now: " .. vim.inspect(owt_diagnostics()))
      h.eq(true, vim.bo[buf].modified, "the fix is unsaved: the server read the buffer")
    end,
  },
})

-- The agents' pre-edit hook sees your unsaved buffers: you type over line
-- 15 of a file open in Neovim (not saved) → `owt hook --pre-edit`, asked
-- by a session about to edit that line, names you ("you (unsaved in your
-- editor)"); you save → it is your change on disk instead; you type again
-- and close the buffer without saving → nothing to say.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

local ORIGINAL = {}
for i = 1, 20 do
  ORIGINAL[i] = ("line %d"):format(i)
end
h.setup({ ["src/shared.txt"] = table.concat(ORIGINAL, "\n") .. "\n" })

local session, buf

--- What the hook answers the session's Edit of `old` (Claude Code's input).
local function hook(old)
  local file = session.worktree .. "/src/shared.txt"
  local input = vim.json.encode({
    session_id = "nvim",
    hook_event_name = "PreToolUse",
    cwd = session.worktree,
    tool_name = "Edit",
    tool_input = { file_path = file, old_string = old, new_string = "changed\n" },
  })
  local out = vim.system({ h.bin, "hook", "--pre-edit" }, {
    text = true,
    stdin = input,
    cwd = session.worktree,
    env = { OWT_SESSION = session.id },
  }):wait(20000)
  h.eq(0, out.code, "the hook never fails the agent: " .. (out.stderr or ""))
  return out.stdout or ""
end

--- The hook's answer once `done` accepts it (the server records the
--- buffers a moment after they change).
local function hook_until(old, what, done)
  local said = ""
  h.wait(20000, function()
    said = hook(old)
    return done(said)
  end, what .. "; the hook said: " .. said)
  return said
end

h.run({
  {
    "a line typed in Neovim and not saved is named by the agent's pre-edit hook",
    function()
      session = h.new_session("rework shared.txt")
      buf = h.open("src/shared.txt")
      vim.api.nvim_buf_set_lines(buf, 14, 15, false, { "line 15 (yours)" })
      h.eq(true, vim.bo[buf].modified, "the buffer is edited, not saved")
      local said = hook_until("line 15\n", "the hook to name your unsaved line 15", function(s)
        return s:find("you (unsaved in your editor) are changing line 15 of src/shared.txt", 1, true) ~= nil
      end)
      local answer = vim.json.decode(said)
      h.eq("PreToolUse", answer.hookSpecificOutput.hookEventName, "Claude Code's answer")
      h.eq(nil, answer.hookSpecificOutput.permissionDecision, "warn: the edit goes through")
      h.eq("", hook("line 3\n"), "another line: nothing to say")
    end,
  },
  {
    "saved, it is your change on disk",
    function()
      vim.cmd.write()
      hook_until("line 15\n", "the hook to name your saved line 15", function(s)
        return s:find("the main checkout (you) has changes on line 15", 1, true) ~= nil
          and not s:find("unsaved", 1, true)
      end)
    end,
  },
  {
    "closed without saving, it is forgotten",
    function()
      vim.api.nvim_buf_set_lines(buf, 16, 17, false, { "line 17 (yours)" })
      hook_until("line 17\n", "the hook to name your unsaved line 17", function(s)
        return s:find("you (unsaved in your editor) are changing line 17", 1, true) ~= nil
      end)
      vim.cmd("bdelete! " .. buf)
      hook_until("line 17\n", "the hook to forget line 17", function(s)
        return s == ""
      end)
    end,
  },
})

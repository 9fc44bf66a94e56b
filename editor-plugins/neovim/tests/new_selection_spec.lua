-- :'<,'>Owt new sends the visual selection (uri + 1-based lines) to
-- owt.spawn; the new session's task contains the selected text.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup({
  ["src/calc.py"] = table.concat({
    "def add(a, b):",
    "    return a + b",
    "",
    "def slow_fib(n):",
    "    return n if n < 2 else slow_fib(n - 1) + slow_fib(n - 2)",
    "",
  }, "\n"),
})

h.run({
  {
    "`:'<,'>Owt new` creates a session whose task holds the selection",
    function()
      local buf = h.open("src/calc.py")
      local offered
      vim.ui.input = function(opts, on_confirm)
        h.truthy(opts.prompt:find("selection", 1, true), "the prompt mentions the selection: " .. opts.prompt)
        on_confirm("make it fast")
      end
      vim.ui.select = function(items, _, on_choice)
        offered = items
        on_choice("fake", vim.fn.index(items, "fake") + 1)
      end
      vim.api.nvim_win_set_cursor(0, { 4, 0 })
      vim.cmd("normal! Vj\27")
      vim.cmd("'<,'>Owt new")
      h.truthy(offered and vim.tbl_contains(offered, "fake"), "vim.ui.select offered the repository's `fake` agent: " .. vim.inspect(offered))
      local found = h.wait(30000, function()
        for _, s in pairs(h.sessions()) do
          if s.task:find("slow_fib(n - 1)", 1, true) then
            return s
          end
        end
      end, "a session whose task contains the selection (owt --json list)")
      h.truthy(found.task:find("make it fast", 1, true), "the typed task is kept: " .. found.task)
      h.truthy(found.task:find("def slow_fib(n):", 1, true), "the first selected line is in the task: " .. found.task)
      h.truthy(found.task:find("src/calc.py", 1, true), "the task names the file: " .. found.task)
      h.truthy(found.task:find("4-5", 1, true), "the task names lines 4-5: " .. found.task)
      h.truthy(not found.task:find("def add", 1, true), "lines outside the selection stay out: " .. found.task)
      h.eq("fake", found.provider, "provider")
      h.eq(buf, vim.api.nvim_get_current_buf(), "the buffer stays current")
    end,
  },
})

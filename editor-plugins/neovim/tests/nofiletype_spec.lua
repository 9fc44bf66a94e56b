-- A buffer without a filetype gets the owt client too (vim.lsp.enable only
-- reacts to FileType).
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup({ ["NOTES-plain"] = "no filetype here\n", ["main.lua"] = "return 1\n" })

h.run({
  {
    "a file without a filetype is attached",
    function()
      vim.cmd.edit(h.repo .. "/NOTES-plain")
      local buf = vim.api.nvim_get_current_buf()
      h.eq("", vim.bo[buf].filetype, "filetype of NOTES-plain")
      local client = h.client(buf)
      h.eq(h.repo, client.root_dir, "root_dir")
    end,
  },
  {
    "a file with a filetype is attached to the same client",
    function()
      local first = vim.lsp.get_clients({ name = "owt" })[1]
      vim.cmd.edit(h.repo .. "/main.lua")
      local buf = vim.api.nvim_get_current_buf()
      h.eq("lua", vim.bo[buf].filetype, "filetype of main.lua")
      h.eq(first.id, h.client(buf).id, "client id")
      h.eq(1, #vim.lsp.get_clients({ name = "owt" }), "owt clients")
    end,
  },
  {
    "a buffer outside any git repository is left alone",
    function()
      local outside = h.tmp .. "/outside/plain"
      h.write(outside, "x\n")
      vim.cmd.edit(outside)
      local buf = vim.api.nvim_get_current_buf()
      -- Give both the FileType path and the BufReadPost path time to act.
      vim.wait(1500, function() return false end)
      h.eq(0, #vim.lsp.get_clients({ name = "owt", bufnr = buf }), "owt clients on a file outside git")
    end,
  },
  {
    "without the binary nothing starts and one warning says so",
    function()
      for _, c in ipairs(vim.lsp.get_clients({ name = "owt" })) do
        c:stop(true)
      end
      h.wait(10000, function()
        return #vim.lsp.get_clients({ name = "owt" }) == 0
      end, "the owt clients to stop")
      vim.lsp.config("owt", { cmd = { h.tmp .. "/missing/owt", "lsp" } })
      local before = #h.messages
      for _, name in ipairs({ "a.lua", "b.lua" }) do
        h.write(h.repo .. "/" .. name, "return 2\n")
        vim.cmd.edit(h.repo .. "/" .. name)
      end
      vim.wait(1500, function() return false end)
      h.eq(0, #vim.lsp.get_clients({ name = "owt" }), "owt clients without the binary")
      local warnings = vim.tbl_filter(function(m)
        return m.msg:find("not found", 1, true) ~= nil
      end, vim.list_slice(h.messages, before + 1))
      h.eq(1, #warnings, "warnings about the missing binary")
    end,
  },
})

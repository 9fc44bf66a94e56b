-- owt: supervise parallel AI coding agents from Neovim (see :help owt).
-- Cheap at startup: defines the :Owt command and a few autocmds, enables the
-- `owt` LSP config (lsp/owt.lua); every module loads on first use.
if vim.g.loaded_owt then
  return
end
vim.g.loaded_owt = true

if vim.fn.has("nvim-0.11") == 0 then
  vim.notify("owt needs Neovim 0.11 or newer", vim.log.levels.WARN)
  return
end

vim.lsp.enable("owt")

-- "Ask <agent> to change this…" code actions: the comment is asked for here.
vim.lsp.commands["owt.comment"] = function(command, ctx)
  require("owt.review").comment_command(command, ctx)
end

local group = vim.api.nvim_create_augroup("owt", { clear = true })

-- Neovim attaches servers on FileType only; buffers with no filetype (a
-- README without extension, a lockfile…) get owt too. Also warns once when
-- the owt binary is missing.
vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
  group = group,
  callback = function(ev)
    vim.schedule(function()
      require("owt.attach").on_buf_read(ev.buf)
    end)
  end,
})

vim.api.nvim_create_autocmd("LspProgress", {
  group = group,
  callback = function(ev)
    require("owt.notify").on_progress(ev)
  end,
})

vim.api.nvim_create_user_command("Owt", function(cmd)
  require("owt.commands").run(cmd)
end, {
  nargs = "*",
  range = true,
  bang = true,
  desc = "owt: board, new, list, attach, send, peek, merge, ship, delete, review, queue, guard",
  complete = function(...)
    return require("owt.commands").complete(...)
  end,
})

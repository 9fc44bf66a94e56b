-- :checkhealth owt: OK with the binary present, an error without it.
local h = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

h.setup()

local function checkhealth()
  vim.cmd("checkhealth owt")
  local buf = vim.api.nvim_get_current_buf()
  h.eq("checkhealth", vim.bo[buf].filetype, "the current buffer's filetype after :checkhealth")
  local text = h.text(buf)
  vim.api.nvim_buf_delete(buf, { force = true })
  return text
end

h.run({
  {
    "with the binary: binary, version, store and git are OK",
    function()
      local text = checkhealth()
      h.truthy(text:find("OK found " .. h.bin, 1, true), "binary found:\n" .. text)
      h.truthy(text:find("matches the plugin", 1, true), "version matches:\n" .. text)
      h.truthy(text:find("OK store " .. h.owt_home, 1, true), "store reachable:\n" .. text)
      h.truthy(text:find("OK git %d"), "git version:\n" .. text)
      h.truthy(not text:find("ERROR", 1, true), "no error:\n" .. text)
    end,
  },
  {
    "without the binary: an error",
    function()
      vim.g.owt = { bin = h.tmp .. "/no/such/owt" }
      local text = checkhealth()
      h.truthy(text:find("ERROR `" .. h.tmp .. "/no/such/owt` not found", 1, true), "binary not found error:\n" .. text)
    end,
  },
})

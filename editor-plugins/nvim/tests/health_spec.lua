-- :checkhealth cody reports Neovim, the daemon command and what `initialize` answers.
local h = require("helpers")
local spec = h.spec()

---@return string
local function checkhealth()
  vim.cmd("silent checkhealth cody")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout")
  return text
end

spec.test(":checkhealth cody asks a fresh daemon and reports its initialize answer", function()
  require("cody").stop()
  local text = checkhealth()
  h.contains(text, "Neovim " .. tostring(vim.version()):match("^%d+%.%d+%.%d+"))
  h.contains(text, "is executable")
  h.contains(text, "the daemon answers `initialize`: Cody")
  h.contains(text, "protocol version 1")
  h.contains(text, "default provider: offline")
  h.contains(text, "provider offline")
  h.contains(text, "sandbox")
  h.not_contains(text, "ERROR")
  h.eq(false, require("cody").status().running, "the probe daemon is not kept")
end)

spec.test(":checkhealth cody reports a command that is not executable", function()
  local cody = require("cody")
  cody.setup(vim.tbl_extend("force", h.default_config(), { cmd = { "no-such-cody-daemon" } }))
  local text = checkhealth()
  cody.setup(h.default_config())
  h.contains(text, "`no-such-cody-daemon` is not executable")
  h.contains(text, "python3 install.py")
  h.contains(text, "'--frozen', '--no-dev', 'cody-daemon'", "the advice does not build the dev tools")
end)

return spec

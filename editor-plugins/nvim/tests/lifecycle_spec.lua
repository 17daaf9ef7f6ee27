-- One daemon per Neovim, started lazily, shut down cleanly (shutdown + exit) on VimLeavePre.
local h = require("helpers")
local spec = h.spec()

local cody = require("cody")

spec.test("the daemon starts on first use and stop() shuts it down with exit code 0", function()
  cody.stop()
  h.eq(false, cody.status().running, "not running before use")
  h.new_session()
  vim.cmd("Cody list files")
  h.wait_chat("— end_turn")
  h.wait_turn()
  local status = cody.status()
  h.truthy(status.running, "running after a prompt")
  h.eq(1, status.initialize and status.initialize.protocolVersion, "initialized")

  h.eq(0, cody.stop(), "exit code after shutdown + exit")
  h.eq(false, cody.status().running)
end)

spec.test("VimLeavePre shuts the daemon down", function()
  h.new_session()
  vim.cmd("Cody list files")
  h.wait_chat("— end_turn")
  h.wait_turn()
  h.truthy(cody.status().running, "running")

  vim.api.nvim_exec_autocmds("VimLeavePre", {})
  h.eq(false, cody.status().running, "stopped")
  h.eq({ code = 0, signal = 0 }, cody.status().last_exit, "exited cleanly")
end)

return spec

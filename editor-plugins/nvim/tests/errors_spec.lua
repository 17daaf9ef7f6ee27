-- Errors: the daemon's message reaches vim.notify at ERROR level and the chat.
local h = require("helpers")
local spec = h.spec()

local cody = require("cody")

spec.test("an invalid setting is reported with the daemon's message", function()
  local notes = h.capture_notify()
  cody.setup(vim.tbl_extend("force", h.default_config(), { provider = "nope" }))
  h.new_session()

  vim.cmd("Cody hello")
  h.wait_chat("✗ ")
  h.wait_turn()
  cody.setup(h.default_config())

  local errors = vim.tbl_filter(function(n)
    return n.level == vim.log.levels.ERROR
  end, notes)
  h.eq(1, #errors, "one error notification: " .. vim.inspect(notes))
  h.contains(errors[1].msg, '_meta.cody.provider = "nope"', "names the setting that was sent")
  h.contains(errors[1].msg, "valid values: auto, openai, anthropic, openrouter, offline")
  h.contains(h.chat(), '✗ invalid configuration: _meta.cody.provider = "nope"')
end)

spec.test("a daemon command that cannot start is reported", function()
  cody.stop()
  local notes = h.capture_notify()
  cody.setup(vim.tbl_extend("force", h.default_config(), { cmd = { h.root .. "/no-such-daemon" } }))
  h.new_session()

  vim.cmd("Cody hello")
  h.wait_turn()
  cody.setup(h.default_config())

  h.truthy(#notes > 0, "a notification")
  h.eq(vim.log.levels.ERROR, notes[1].level)
  h.contains(notes[1].msg, "could not start the daemon " .. h.root .. "/no-such-daemon")
  h.contains(notes[1].msg, "Set `cmd`")
  h.contains(h.chat(), "✗ could not start the daemon")
end)

return spec

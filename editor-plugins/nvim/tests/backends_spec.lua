-- :CodyBackend: one turn on the Codex CLI and one on Claude Code, through the real daemon.
-- tests/e2e/test_nvim_plugin.py starts the loopback mock models and passes the CLIs and their
-- offline settings in $CODY_TEST_BACKEND_ENV (JSON); without it these tests say so and pass.
local h = require("helpers")
local spec = h.spec()

local cody = require("cody")

spec.test(":CodyBackend runs a turn on the Codex CLI and one on Claude Code", function()
  local raw = os.getenv("CODY_TEST_BACKEND_ENV")
  if not raw or raw == "" then
    h.out("  (skipped: CODY_TEST_BACKEND_ENV is not set; run through tests/e2e/test_nvim_plugin.py)")
    return
  end
  local env = vim.json.decode(raw)
  cody.stop()
  cody.setup(vim.tbl_extend("force", h.default_config(), { env = env }))
  local ok, err = pcall(function()
    for _, backend in ipairs({ "codex", "claude" }) do
      local notes = h.capture_notify()
      vim.cmd("CodyBackend " .. backend)
      h.contains(notes[#notes].msg, "new sessions run on " .. backend)
      vim.cmd("Cody hello " .. backend)
      h.wait(function()
        return h.chat():find("— end_turn", 1, true)
      end, backend .. " to answer", 60000)
      h.wait_turn()
      h.contains(h.chat(), "Hello from " .. backend)
      h.not_contains(h.chat(), "Error")
    end
  end)
  cody.stop()
  cody.setup(h.default_config())
  if not ok then
    error(err, 0)
  end
end)

spec.test(":CodyBackend refuses an unknown backend", function()
  local notes = h.capture_notify()
  vim.cmd("CodyBackend gemini")
  h.contains(notes[#notes].msg, 'unknown backend "gemini"')
  h.eq(nil, require("cody.config").options.backend, "nothing changed")
end)
return spec

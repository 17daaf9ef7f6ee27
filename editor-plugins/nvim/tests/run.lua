-- Test runner for cody.nvim, run by tests/run.sh:
--   nvim --headless -u NONE --cmd "set rtp+=<plugin dir>" -l tests/run.lua [name filter]
-- Runs every spec against the real daemon ($CODY_DAEMON_CMD) and exits non-zero on failure.
local tests_dir = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
package.path = ("%s/?.lua;%s"):format(tests_dir, package.path)

local h = require("helpers")

local SPECS = {
  "chat_spec",
  "approval_spec",
  "sessions_spec",
  "history_spec",
  "errors_spec",
  "health_spec",
  "lifecycle_spec",
  "backends_spec",
  "buffers_spec",
  "acp_spec",
  "escapes_spec",
  "rewind_spec",
  "warnings_spec",
  "subagents_spec",
  "talk_spec",
  "processes_spec",
}

local filter = _G.arg and _G.arg[1]

h.setup_environment()
vim.cmd.runtime("plugin/cody.lua")

local passed, failed = 0, {}
local started = vim.uv.hrtime()
for _, name in ipairs(SPECS) do
  local spec = require(name)
  for _, case in ipairs(spec.cases) do
    local full = ("%s: %s"):format(name, case.name)
    if not filter or full:find(filter, 1, true) then
      local t0 = vim.uv.hrtime()
      local ok, err = xpcall(case.run, debug.traceback)
      local cleanup_ok, cleanup_err = pcall(h.after_each)
      if ok and not cleanup_ok then
        ok, err = false, "cleanup: " .. tostring(cleanup_err)
      end
      local ms = (vim.uv.hrtime() - t0) / 1e6
      if ok then
        passed = passed + 1
        h.out(("ok   %s (%d ms)"):format(full, ms))
      else
        table.insert(failed, full)
        h.out(("FAIL %s (%d ms)\n%s\n--- chat buffer ---\n%s\n-------------------"):format(full, ms, err, h.chat()))
      end
    end
  end
end

pcall(require("cody").stop)
h.out(("\n%d passed, %d failed in %.1f s"):format(passed, #failed, (vim.uv.hrtime() - started) / 1e9))
for _, name in ipairs(failed) do
  h.out("  failed: " .. name)
end
if passed == 0 and #failed == 0 then
  h.out("no test matched " .. tostring(filter))
  os.exit(1)
end
os.exit(#failed == 0 and 0 or 1)

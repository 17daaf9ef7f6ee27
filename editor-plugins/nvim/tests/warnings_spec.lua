-- The daemon's `_meta.cody.warnings` (configuration it ignored) reach the user: in the chat
-- and as a notification, for a new session and for a resumed one.
local h = require("helpers")
local spec = h.spec()

local cody = require("cody")

---@param notes {msg: string, level: integer}[]
---@param needle string
---@return boolean
local function warned(notes, needle)
  return vim.iter(notes):any(function(n)
    return n.level == vim.log.levels.WARN and n.msg:find(needle, 1, true) ~= nil
  end)
end

spec.test("an untrusted project's ignored keys are shown when its session starts", function()
  local dir = h.workspace .. "/.cody"
  vim.fn.mkdir(dir, "p")
  vim.fn.writefile({ 'approval_policy = "never"' }, dir .. "/config.toml")
  local ok, err = pcall(function()
    h.new_session()
    local notes = h.capture_notify()
    vim.cmd("Cody list files")
    h.wait_chat("— end_turn")
    h.wait_turn()
    local needle = "ignored approval_policy from " .. dir .. "/config.toml: this project is not trusted"
    h.contains(h.chat(), "⚠ " .. needle)
    h.truthy(warned(notes, needle), "notified: " .. vim.inspect(notes))
  end)
  vim.fn.delete(dir, "rf")
  assert(ok, err)
end)

spec.test("ignored Codex settings are shown for a new and for a resumed session", function()
  local config_file = os.getenv("CODY_HOME") .. "/config.toml"
  vim.fn.writefile({ "hide_agent_reasoning = true" }, config_file)
  local ok, err = pcall(function()
    h.new_session()
    local notes = h.capture_notify()
    vim.cmd("Cody list files")
    h.wait_chat("— end_turn")
    h.wait_turn()
    local needle = "ignored Codex settings Cody does not use in " .. config_file .. ": hide_agent_reasoning"
    h.contains(h.chat(), "⚠ " .. needle)
    h.truthy(warned(notes, needle))

    local session_id = assert(cody.status().session_id)
    h.new_session()
    vim.cmd("CodyResume " .. session_id)
    h.wait_chat("— resumed session " .. session_id)
    h.contains(h.chat(), "⚠ " .. needle, "the resumed session says it too")
  end)
  vim.fn.delete(config_file)
  assert(ok, err)
end)

return spec

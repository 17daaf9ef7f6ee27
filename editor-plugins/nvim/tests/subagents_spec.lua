-- Subagents: a `task` call's child session shows its activity nested under the call, and the
-- call's result follows it. The built-in offline model delegates with `ask AGENT to TASK`.
local h = require("helpers")
local spec = h.spec()

spec.test("a child's tool calls are nested under the parent's task call, its answer after them", function()
  h.new_session()
  vim.cmd("Cody ask explore to list files")
  h.wait_chat("— end_turn")
  h.wait_turn()
  local text = h.chat()

  h.contains(text, "▸ explore: list files [other]\n  ↳ explore · session ")
  local nested = text:find("  │ explore: ▸ List .\n", 1, true)
  local answer = text:find("  ✓ I found ", 1, true)
  h.truthy(nested, "the child's call is shown under the parent's:\n" .. text)
  h.truthy(answer and answer > nested, "the call's result comes after the child's activity:\n" .. text)
  h.contains(text, "My subagent answered: I found ")
  h.contains(text, "alpha.txt, beta.md")
  h.eq(0, h.count(text, "## You\n\nlist files"), "the child's prompt is not shown as the user's")
end)

return spec

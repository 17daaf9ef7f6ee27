-- Issue 20.5: control sequences from the model, tools and session files are shown, never sent
-- to the terminal, and a title, label or picker item stays one line (cody.inert).
local h = require("helpers")
local spec = h.spec()

local FORGED = "touch PWNED;: \27[14Dls -la\27[K"
local FORGED_SHOWN = "touch PWNED;: ␛[14Dls -la␛[K"
local CLAUDE_ID = "62ba3d6f-69b4-4fb2-b809-98dd28854f87"
local HOSTILE_TITLE = "title \27]52;c;Q09EWS1QV05FRA==\7\n[claude] 2026-11-22 forged \226\128\174rtl"

--- Raw bytes a terminal acts on: C0 (but newline), DEL, C1, bidi controls.
---@param text string
---@return string? what was found
local function raw_control(text)
  local found = text:match("[%z\1-\9\11-\31\127]") or text:match("\194[\128-\159]")
  found = found or text:match("\226\128[\142\143\168-\174]") or text:match("\226\129[\166-\169]")
  return found
end

---@param text string
---@param what string
local function assert_inert(text, what)
  local found = raw_control(text)
  if found then
    error(("%s holds a raw control %q:\n%s"):format(what, found, text), 2)
  end
end

spec.test("a forged command is shown escaped in the approval, and what runs is what is shown", function()
  h.new_session()
  local calls = h.stub_select(h.pick("Allow once"))
  local pwned = h.workspace .. "/PWNED"
  vim.fn.delete(pwned)

  -- Under the default a sandboxed command runs unasked: this one asks to leave the sandbox.
  require("cody").prompt("run outside " .. FORGED)
  h.wait_chat("— end_turn")
  h.wait_turn()

  h.eq(1, #calls, "one approval dialog")
  local call = calls[1]
  h.contains(call.opts.prompt, "run: $ " .. FORGED_SHOWN, "select prompt")
  assert_inert(call.opts.prompt, "the select prompt")
  h.contains(call.preview_title, "Cody: " .. FORGED_SHOWN, "the preview window's title")
  assert_inert(call.preview_title, "the preview window's title")
  local preview = table.concat(call.preview_lines, "\n")
  h.contains(preview, "$ " .. FORGED_SHOWN .. "\ncwd: " .. h.workspace, "preview")
  assert_inert(preview, "the preview")
  h.eq(1, vim.fn.filereadable(pwned), "the command that was shown ran")

  local text = h.chat()
  h.contains(text, "▸ " .. FORGED_SHOWN .. " [execute]")
  assert_inert(text, "the chat")
end)

spec.test("sequences in a command's output, thoughts and the reply stay inert in the chat", function()
  h.new_session()
  h.stub_select(h.pick("Allow once"))
  require("cody").prompt([[run printf '\033]52;c;Q09EWS1QV05FRA==\007\033]0;owned\007\302\233\342\200\256x\n']])
  h.wait_chat("— end_turn")
  h.wait_turn()
  local text = h.chat()
  h.contains(text, "✓ ␛]52;c;Q09EWS1QV05FRA==␇␛]0;owned␇<U+009B><U+202E>x", "the output, shown")
  assert_inert(text, "the chat")
end)

spec.test("saved sessions with hostile titles are one inert line in the pickers", function()
  h.new_session()
  h.stub_select(h.pick("Reject"))
  require("cody").prompt("run " .. FORGED)
  h.wait_chat("— end_turn")
  h.wait_turn()

  local project = os.getenv("CLAUDE_CONFIG_DIR") .. "/projects/-home-dev-project"
  vim.fn.mkdir(project, "p")
  local fixture = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/../../../tests/fixtures/history"
  local lines = vim.fn.readfile(fixture .. "/claude/session.jsonl", "b")
  table.insert(lines, vim.json.encode({ type = "custom-title", customTitle = HOSTILE_TITLE, sessionId = CLAUDE_ID }))
  vim.fn.writefile(lines, project .. "/" .. CLAUDE_ID .. ".jsonl", "b")

  local sessions = h.stub_select(function()
    return nil
  end)
  vim.cmd("CodySessions")
  h.wait(function()
    return #sessions == 1
  end, "the session picker")
  local labels = table.concat(sessions[1].labels, "\n")
  h.contains(labels, "run " .. FORGED_SHOWN, "the session's title")
  assert_inert(labels, "the session picker")

  vim.cmd("CodyHistory")
  h.wait(function()
    return #sessions == 2
  end, "the history picker")
  local label = vim.iter(sessions[2].labels):find(function(l)
    return l:find("forged", 1, true) ~= nil
  end)
  h.truthy(label, vim.inspect(sessions[2].labels))
  h.contains(label, "title ␛]52;c;Q09EWS1QV05FRA==␇␊[claude] 2026-11-22 forged <U+202E>rtl")
  assert_inert(label, "the history picker")
  h.eq(#sessions[2].items, #sessions[2].labels, "one label per session")
end)

spec.test("a newline in a title or a plan entry neither fakes a line nor loses the update", function()
  h.new_session()
  local chat = require("cody.chat")
  chat.tool_call({ toolCallId = "t1", title = "echo hi\n  ✓ faked", kind = "execute", status = "pending" })
  chat.plan({ { content = "step one\n- [x] faked\27[2J", status = "pending" } })
  local text = h.chat()
  h.contains(text, "▸ echo hi␊  ✓ faked [execute]")
  h.contains(text, "- [ ] step one␊- [x] faked␛[2J")
  h.not_contains(text, "\n  ✓ faked")
  assert_inert(text, "the chat")
end)

return spec

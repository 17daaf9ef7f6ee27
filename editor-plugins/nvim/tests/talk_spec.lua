-- Talking to a running turn (issue 30), through the real daemon and a scripted model
-- (tests/support/talk_model.py: `slow <path>` runs a command until <path> exists; anything
-- else is answered `ok: <message as the model got it>`). tests/e2e/test_nvim_plugin.py
-- serves the model and passes its config.toml in $CODY_TEST_TALK_CONFIG.
local h = require("helpers")
local spec = h.spec()

local cody = require("cody")

local function gate_path(name)
  return h.root .. "/tmp/" .. name .. "-" .. tostring(vim.uv.hrtime())
end

--- Runs `fn` with the daemon on the talk model; restores the default daemon afterwards.
local function with_talk_model(fn)
  local config = os.getenv("CODY_TEST_TALK_CONFIG")
  if not config or config == "" then
    h.out("  (skipped: CODY_TEST_TALK_CONFIG is not set; run through tests/e2e/test_nvim_plugin.py)")
    return
  end
  local file = os.getenv("CODY_HOME") .. "/config.toml"
  vim.fn.writefile(vim.split(config, "\n"), file)
  cody.stop()
  cody.setup(vim.tbl_extend("force", h.default_config(), { env = { MOCK_API_KEY = "test-key-not-secret" } }))
  h.new_session()
  local ok, err = pcall(fn)
  if cody.status().busy then
    cody.cancel()
    h.wait_turn()
  end
  cody.stop()
  os.remove(file)
  cody.setup(h.default_config())
  if not ok then
    error(err, 0)
  end
end

local function wait_running_command()
  h.wait(function()
    return h.chat():find("slow-done [execute]", 1, true) or h.chat():find("▸ while", 1, true)
  end, "the slow command to start")
end

local function before(text, first, second)
  local a, b = text:find(first, 1, true), text:find(second, 1, true)
  h.truthy(a and b and a < b, ("%q before %q in:\n%s"):format(first, second, text))
end

spec.test("a message sent while a turn runs steers it", function()
  with_talk_model(function()
    local gate = gate_path("steer")
    cody.prompt("slow " .. gate)
    wait_running_command()
    h.eq(true, cody.status().busy)
    cody.prompt("also update the docs") -- busy: it steers the turn
    h.wait_chat("sent to the running turn")
    vim.fn.writefile({}, gate)
    h.wait_chat("ok: also update the docs")
    h.wait_turn()
    local text = h.chat()
    h.eq(1, h.count(text, "— end_turn"), "one turn")
    before(text, "slow-done", "## You\n\nalso update the docs")
    before(text, "## You\n\nalso update the docs", "ok: also update the docs")
  end)
end)

spec.test("<Tab> in the prompt buffer queues the next prompt; <CR> sends", function()
  with_talk_model(function()
    local input = require("cody.input")
    local gate = gate_path("queue")
    input.open()
    local buf = assert(input.buf())
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "slow " .. gate })
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "mx", false)
    wait_running_command()
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "second task" })
    vim.api.nvim_feedkeys(vim.keycode("A<Tab><Esc>"), "mx", false)
    h.wait_chat("queued: second task")
    h.eq(1, cody.status().queued)
    h.eq({ "" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "the prompt buffer is emptied")
    vim.fn.writefile({}, gate)
    h.wait_chat("ok: second task")
    h.wait_turn()
    local text = h.chat()
    h.eq(2, h.count(text, "— end_turn"), "two turns")
    before(text, "— end_turn", "## You\n\nsecond task")
  end)
end)

spec.test(":CodyCancel ends the turn and drops the queued prompts", function()
  with_talk_model(function()
    cody.prompt("slow " .. gate_path("never"))
    wait_running_command()
    vim.cmd("CodyQueue later")
    h.wait_chat("queued: later")
    vim.cmd("CodyCancel")
    h.wait_chat("dropped the queued prompt: later")
    h.wait_turn()
    h.contains(h.chat(), "— cancelled")
    h.not_contains(h.chat(), "ok: later")
  end)
end)

spec.test("@ in the prompt buffer offers workspace files, and the file is sent along", function()
  with_talk_model(function()
    local input = require("cody.input")
    input.open()
    local buf = assert(input.buf())
    local offered
    h.stub(vim.fn, "complete", function(start, items)
      offered = { start = start, words = vim.tbl_map(function(item)
        return item.word
      end, items) }
    end)
    -- What typing `@alp` does (headless Neovim cannot stay in Insert mode while the test
    -- waits: its stdin is closed): the TextChangedI handler, with the cursor after the word.
    h.stub(vim.api, "nvim_get_mode", function()
      return { mode = "i", blocking = false }
    end)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "explain @alp" })
    vim.api.nvim_win_set_cursor(0, { 1, #"explain @alp" })
    input.complete_mention(buf)
    h.wait(function()
      return offered
    end, "the completion menu")
    h.eq(9, offered.start, "the completion replaces @alp")
    h.eq("@alpha.txt ", offered.words[1])
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "explain " .. offered.words[1] })
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "mx", false)
    h.wait_chat("ok: explain @alpha.txt")
    h.wait_turn()
    h.contains(h.chat(), "alpha.txt\">")
    h.contains(h.chat(), "\nalpha\n", "the file's text reached the model")
  end)
end)

spec.test(":CodySend sends the buffer, or the selected lines", function()
  with_talk_model(function()
    local file = h.workspace .. "/lines.txt"
    vim.fn.writefile({ "first line", "second line", "third line" }, file)
    vim.cmd.edit(file)
    vim.cmd("2,3CodySend which lines")
    h.wait_chat("ok: which lines")
    h.wait_turn()
    local text = h.chat()
    h.contains(text, "second line\nthird line")
    h.not_contains(text, "first line")
    h.contains(text, "lines.txt#L2-L3")
    vim.cmd.edit(file)
    vim.cmd("CodySend")
    h.wait_chat("(sent lines.txt)")
    h.wait_turn()
    h.contains(h.chat(), "first line")
    vim.cmd.bwipeout({ bang = true, args = { file } })
  end)
end)

spec.test("a turn that ends while Neovim is in the background is notified", function()
  with_talk_model(function()
    local notes = h.capture_notify()
    cody.prompt("hello")
    h.wait_chat("ok: hello")
    h.wait_turn()
    h.eq(0, #vim.tbl_filter(function(note)
      return note.msg:find("turn ended", 1, true)
    end, notes), "a short turn in a focused Neovim is quiet")
    vim.api.nvim_exec_autocmds("FocusLost", {})
    cody.prompt("again")
    h.wait_chat("ok: again")
    h.wait_turn()
    vim.api.nvim_exec_autocmds("FocusGained", {})
    h.contains(notes[#notes].msg, "Cody: turn ended (end_turn)")
  end)
end)

return spec

-- Open buffers follow Cody's edits: after a write or patch the buffer shows the new text
-- (`:checktime`), and a buffer with unsaved changes is never overwritten.
local h = require("helpers")
local spec = h.spec()

--- Opens `name` (in the workspace) in a window of its own and returns its buffer.
---@param name string
---@param lines string[]
---@return integer
local function open_file(name, lines)
  local path = h.workspace .. "/" .. name
  vim.fn.writefile(lines, path)
  vim.cmd("split " .. vim.fn.fnameescape(path))
  return vim.api.nvim_get_current_buf()
end

---@param buf integer
local function close(buf, name)
  pcall(vim.api.nvim_buf_delete, buf, { force = true })
  vim.fn.delete(h.workspace .. "/" .. name)
end

spec.test("an open buffer shows the text Cody wrote to its file", function()
  local buf = open_file("follow.txt", { "before" })
  h.new_session()
  h.stub_select(h.pick("Allow once"))

  vim.cmd("Cody write follow.txt: after the edit")
  h.wait_chat("— end_turn")
  h.wait_turn()

  h.eq({ "after the edit" }, vim.fn.readfile(h.workspace .. "/follow.txt"), "the file was written")
  h.eq({ "after the edit" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "the buffer was reloaded")
  h.eq(false, vim.bo[buf].modified, "the reloaded buffer is clean")
  close(buf, "follow.txt")
end)

spec.test("a buffer with unsaved changes is kept and the user is told", function()
  local buf = open_file("mine.txt", { "on disk" })
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "my unsaved text" })
  h.new_session()
  h.stub_select(h.pick("Allow once"))
  local notes = h.capture_notify()

  vim.cmd("Cody write mine.txt: from cody")
  h.wait_chat("— end_turn")
  h.wait_turn()

  h.eq({ "from cody" }, vim.fn.readfile(h.workspace .. "/mine.txt"), "the file was written")
  h.eq({ "my unsaved text" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "unsaved text kept")
  local warned = vim.iter(notes):any(function(note)
    return note.msg:find("mine.txt changed on disk", 1, true) ~= nil and note.level == vim.log.levels.WARN
  end)
  h.truthy(warned, "a warning names the file: " .. vim.inspect(notes))
  close(buf, "mine.txt")
end)

spec.test("the advice for an unsaved buffer loads Cody's text from the chat; :e! there keeps the chat", function()
  local buf = open_file("advice.txt", { "on disk" })
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "my unsaved text" })
  h.new_session()
  h.stub_select(h.pick("Allow once"))
  local notes = h.capture_notify()

  vim.cmd("Cody write advice.txt: from cody")
  h.wait_chat("— end_turn")
  h.wait_turn()
  local note = vim.iter(notes):find(function(n)
    return n.msg:find("advice.txt changed on disk", 1, true) ~= nil
  end)
  h.truthy(note, "warned: " .. vim.inspect(notes))
  local advice = note.msg:match("To load Cody's version and drop yours: (.+)$")
  h.eq((":buffer %d | edit!"):format(buf), advice, "the advice names the buffer")

  -- Focus is in the chat (where the old advice, a bare :e!, wiped the transcript).
  local chat_win = require("cody.chat").open()
  local transcript = h.chat()
  local marks = #vim.api.nvim_buf_get_extmarks(0, require("cody.chat").namespace, 0, -1, {})
  vim.cmd("edit!")
  h.eq(transcript, h.chat(), ":e! in the chat keeps the transcript")
  h.eq(marks, #vim.api.nvim_buf_get_extmarks(0, require("cody.chat").namespace, 0, -1, {}), "and its highlights")
  h.eq(false, vim.bo.modifiable, "still read-only")

  vim.api.nvim_set_current_win(chat_win)
  vim.cmd(advice:sub(2)) -- what the user types, from the chat window
  h.eq({ "from cody" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "Cody's version is loaded")
  h.eq(false, vim.bo[buf].modified)
  h.eq(transcript, h.chat(), "the chat is untouched")
  vim.cmd("buffer " .. require("cody.chat").buf())
  close(buf, "advice.txt")
end)

spec.test("resuming a session replays its edits without reloading buffers or warning again", function()
  local buf = open_file("replayed.txt", { "on disk" })
  h.new_session()
  h.stub_select(h.pick("Allow once"))
  vim.cmd("Cody write replayed.txt: from cody")
  h.wait_chat("— end_turn")
  h.wait_turn()
  local session_id = assert(require("cody").status().session_id)
  h.new_session()

  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "edited since" })
  local notes = h.capture_notify()
  local changedtick = vim.api.nvim_buf_get_changedtick(buf)
  vim.cmd("CodyResume " .. session_id)
  h.wait_chat("— resumed session " .. session_id)
  h.contains(h.chat(), "Write replayed.txt", "the edit is replayed in the chat")
  local warned = vim.iter(notes):any(function(n)
    return n.msg:find("changed on disk", 1, true) ~= nil
  end)
  h.eq(false, warned, "no old warning: " .. vim.inspect(notes))
  h.eq(changedtick, vim.api.nvim_buf_get_changedtick(buf), "the buffer is left alone")
  close(buf, "replayed.txt")
end)

spec.test("a rejected edit leaves the buffer alone", function()
  local buf = open_file("kept.txt", { "unchanged" })
  local changedtick = vim.api.nvim_buf_get_changedtick(buf)
  -- The `ask` mode's policy: every edit asks (the default runs edits in the workspace).
  require("cody").setup(vim.tbl_extend("force", h.default_config(), { approval_policy = "untrusted" }))
  h.new_session()
  local calls = h.stub_select(h.pick("Reject"))

  vim.cmd("Cody write kept.txt: never written")
  h.wait_chat("— end_turn")
  h.wait_turn()
  require("cody").setup(h.default_config())

  h.eq(1, #calls, "the edit asked")
  h.eq({ "unchanged" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  h.eq(changedtick, vim.api.nvim_buf_get_changedtick(buf), "not even reloaded")
  close(buf, "kept.txt")
end)

return spec

-- The chat buffer: a prompt's streamed reply, thoughts, tool calls and the turn's status line.
local h = require("helpers")
local spec = h.spec()

spec.test("a prompt streams the reply and shows the tool call once", function()
  h.new_session()
  local chat = require("cody.chat")

  -- Snapshot the buffer on every change, to see the reply arrive piece by piece.
  local snapshots = {}
  vim.api.nvim_buf_attach(chat.buf(), false, {
    on_lines = function(_, buf)
      vim.schedule(function()
        if vim.api.nvim_buf_is_valid(buf) then
          table.insert(snapshots, table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
        end
      end)
    end,
  })

  vim.cmd("Cody list files")
  h.wait_chat("— end_turn")
  h.wait_turn()
  local text = h.chat()

  local buf = chat.buf()
  h.eq("cody://chat", vim.api.nvim_buf_get_name(buf), "buffer name")
  h.eq("markdown", vim.bo[buf].filetype, "filetype")
  h.eq("nofile", vim.bo[buf].buftype, "buftype")
  h.truthy(#vim.fn.win_findbuf(buf) > 0, "the chat is shown in a window")

  h.contains(text, "## You\n\nlist files\n\n## Cody")
  h.contains(text, "Let me list the files in `.`.")
  h.eq(1, h.count(text, "▸ List . [read]"), "the tool call is shown once")
  h.eq(1, h.count(text, "▸"), "one tool call in all")
  h.contains(text, "▸ List . [read]\n  ✓ " .. h.workspace)
  h.contains(text, "alpha.txt")
  h.contains(text, "beta.md")
  h.contains(text, "I found 2 entries: alpha.txt, beta.md.")
  h.truthy(
    text:match("— end_turn · %d+ tokens %(in %d+, out %d+[^)]*%) · session %d+ tokens —"),
    "status line with tokens:\n" .. text
  )

  -- The reply was streamed: the buffer once held a proper prefix of the final sentence.
  local final = "I found 2 entries: alpha.txt, beta.md."
  local partial = vim.iter(snapshots):any(function(snapshot)
    local last = snapshot:match("[^\n]*$")
    return last ~= final and #last > 0 and final:sub(1, #last) == last
  end)
  h.truthy(partial, "a partially streamed reply in some snapshot")

  -- Thoughts are shown dimmed (CodyThought).
  local thought = "The user wants the files in ."
  h.contains(text, thought)
  local dimmed = false
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(buf, chat.namespace, 0, -1, { details = true })) do
    local row, details = mark[2], mark[4]
    if details.hl_group == "CodyThought" then
      local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
      dimmed = dimmed or line:find(thought, 1, true) ~= nil
    end
  end
  h.truthy(dimmed, "the thought is highlighted with CodyThought")
end)

spec.test("streamed chunks are appended to the last line and newlines start new lines", function()
  h.new_session()
  local chat = require("cody.chat")
  chat.user("hello")
  chat.message("Hel")
  chat.message("lo, wor")
  chat.message("ld\nsecond ")
  chat.message("line\n\nthird")
  chat.thought("thinking ")
  chat.thought("more")
  chat.message("after")
  h.eq("## You\n\nhello\n\n## Cody\n\nHello, world\nsecond line\n\nthird\n\nthinking more\n\nafter", h.chat())
end)

return spec

-- :CodySessions and :CodyResume: saved sessions are listed and replayed into the chat.
local h = require("helpers")
local spec = h.spec()

local cody = require("cody")

---@type string?, string?
local listing_id, approved_id

--- Runs one prompt in a new session and returns the session id.
local function session_with(prompt, select_label)
  h.new_session()
  if select_label then
    h.stub_select(h.pick(select_label))
  end
  vim.cmd("Cody " .. prompt)
  h.wait_chat("— end_turn")
  h.wait_turn()
  return assert(cody.status().session_id)
end

spec.test(":CodySessions lists saved sessions and resumes the chosen one with its history", function()
  listing_id = session_with("list files")
  approved_id = session_with("run echo resume-me", "Allow once")
  h.new_session()
  h.eq("", h.chat(), "a new session starts with an empty chat")

  local calls = h.stub_select(function(items)
    return vim.iter(items):find(function(s)
      return s.sessionId == listing_id
    end)
  end)
  vim.cmd("CodySessions")
  h.wait_chat("— resumed session " .. listing_id)

  h.eq(1, #calls, "one picker")
  local ids = vim.tbl_map(function(s)
    return s.sessionId
  end, calls[1].items)
  local pos_listing = vim.fn.index(ids, listing_id)
  local pos_approved = vim.fn.index(ids, approved_id)
  h.truthy(pos_listing >= 0 and pos_approved >= 0, "both sessions are listed: " .. vim.inspect(ids))
  h.truthy(pos_approved < pos_listing, "newest first")
  local label = calls[1].labels[pos_listing + 1]
  h.contains(label, "list files", "the picker shows the title")
  h.contains(label, h.workspace, "the picker shows the cwd")

  local text = h.chat()
  h.contains(text, "## You\n\nlist files\n\n## Cody")
  h.contains(text, "Let me list the files in `.`.")
  h.eq(1, h.count(text, "▸ List . [read]"), "the replayed tool call is shown once")
  h.contains(text, "▸ List . [read]\n  ✓ " .. h.workspace)
  h.contains(text, "I found 2 entries: alpha.txt, beta.md.")
  h.not_contains(text, "resume-me")
  h.eq(listing_id, cody.status().session_id, "the resumed session is current")
end)

spec.test(":CodyResume ID replays that session, which then takes new prompts", function()
  assert(approved_id, "runs after the :CodySessions test")
  vim.cmd("CodyResume " .. approved_id)
  h.wait_chat("— resumed session " .. approved_id)

  local text = h.chat()
  h.contains(text, "## You\n\nrun echo resume-me")
  h.contains(text, "▸ echo resume-me [execute]\n  ✓ resume-me")
  h.not_contains(text, "I found 2 entries", "the previous chat was replaced")
  h.eq(approved_id, cody.status().session_id)

  vim.cmd("Cody list files")
  h.wait_chat("I found 2 entries")
  h.wait_turn()
  h.eq(approved_id, cody.status().session_id, "the prompt went to the resumed session")
  h.contains(
    h.chat(),
    ("— resumed session %s —\n\n## You\n\nlist files"):format(approved_id),
    "the new turn follows the replay"
  )
end)

spec.test(":CodyResume with an unknown id shows the daemon's error", function()
  local notes = h.capture_notify()
  vim.cmd("CodyResume no-such-session")
  h.wait(function()
    return #notes > 0
  end, "an error notification")
  h.eq(vim.log.levels.ERROR, notes[1].level)
  h.contains(notes[1].msg, "no-such-session not found")
  h.contains(notes[1].msg, "session/list", "the message says what to do")
end)

return spec

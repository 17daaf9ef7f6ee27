-- :CodyRewind and :CodyUndo: the picker lists each turn's prompt and files, rewinds files,
-- conversation or both through the daemon, reloads open buffers, and asks before
-- overwriting a file someone else changed since.
local h = require("helpers")
local spec = h.spec()

local cody = require("cody")

--- A select stub for the whole flow: approvals allowed once, the checkpoint whose prompt is
--- `prompt`, then `restore`, then `conflicts` ("keep" or "overwrite").
local function choose(prompt, restore, conflicts)
  return h.stub_select(function(items, opts)
    if opts.kind == "cody.checkpoint" then
      return vim.iter(items):find(function(c)
        return c.prompt == prompt and c.reason == "turn"
      end)
    elseif opts.kind == "cody.rewind.restore" then
      return restore
    elseif opts.kind == "cody.rewind.conflicts" then
      return conflicts
    end
    return h.pick("Allow once")(items, opts)
  end)
end

local function turn(prompt)
  vim.cmd("Cody " .. prompt)
  h.wait_turn()
end

local function read(name)
  local path = h.workspace .. "/" .. name
  return vim.fn.filereadable(path) == 1 and vim.fn.readfile(path) or nil
end

spec.test(":CodyRewind picks a turn, restores its files, reloads the buffer and rewinds the chat", function()
  h.new_session()
  local calls = choose("write story.txt: second draft", "both", nil)
  turn("write story.txt: first draft")
  vim.cmd("split " .. vim.fn.fnameescape(h.workspace .. "/story.txt"))
  local buf = vim.api.nvim_get_current_buf()
  turn("write story.txt: second draft")
  h.eq({ "second draft" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  local rewound = h.capture_event("CodyRewound")

  vim.cmd("CodyRewind")
  h.wait(function()
    return #rewound > 0
  end, "the rewind")

  local picker = calls[#calls - 1]
  h.eq("cody.checkpoint", picker.opts.kind)
  h.contains(picker.labels[1], "turn 2 · ")
  h.contains(picker.labels[1], "“write story.txt: second draft” · M story.txt")
  h.contains(picker.labels[2], "“write story.txt: first draft” · A story.txt")
  h.eq({ "story.txt" }, rewound[1].restored)
  h.eq({ "first draft" }, read("story.txt"))
  h.eq({ "first draft" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "the buffer was reloaded")
  h.contains(h.chat(), "rewound to before turn 2 “write story.txt: second draft”; 1 file(s) restored")

  -- The conversation went back too: the next prompt is turn 2 again.
  turn("write other.txt: x")
  local listed
  cody.connect(function(_, conn)
    conn:request("_cody/session/checkpoints", { sessionId = cody.status().session_id }, function(_, result)
      listed = result.checkpoints
    end)
  end)
  h.wait(function()
    return listed
  end, "the checkpoints")
  h.eq(2, listed[1].turn)
  h.eq(false, listed[3].inConversation, "the rewound turn is no longer in the conversation")
  pcall(vim.api.nvim_buf_delete, buf, { force = true })
end)

spec.test(":CodyUndo takes the last turn back, and a conflict is overwritten only when asked", function()
  h.new_session()
  local calls = choose("write plan.txt: mine", "files", "overwrite")
  turn("write plan.txt: version one")
  local rewound = h.capture_event("CodyRewound")

  vim.cmd("CodyUndo")
  h.wait(function()
    return #rewound > 0
  end, "the undo")
  h.eq(nil, read("plan.txt"), "the file the turn wrote is gone")

  turn("write plan.txt: mine")
  vim.fn.writefile({ "edited by hand" }, h.workspace .. "/plan.txt")
  vim.cmd("CodyRewind")
  h.wait(function()
    return #rewound > 1
  end, "the forced rewind")
  local asked = vim.iter(calls):find(function(c)
    return c.opts.kind == "cody.rewind.conflicts"
  end)
  h.truthy(asked, "the user was asked about the conflict")
  h.contains(asked.opts.prompt, "Changed since by someone else: plan.txt")
  h.eq({}, rewound[2].conflicts, "overwritten after the question")
  h.eq(nil, read("plan.txt"))
end)

return spec

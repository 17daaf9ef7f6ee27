-- Approvals through vim.ui.select: allow, reject (with the diff shown), cancel while the
-- dialog is open (closed by the daemon's $/cancelRequest), "Cancel the turn", and "Always
-- allow in this project". Under the default policy what the sandbox contains runs without a
-- dialog, so these ask to leave it: `run outside CMD` (the offline model's escalation) and
-- a write outside the workspace.
local h = require("helpers")
local spec = h.spec()

--- The options of a request that offers `project` (the allow_project option's name).
---@param project string
---@return string[]
local function labels(project)
  return { "Allow once", "Allow for this session", project, "Reject", "Reject for this session", "Cancel the turn" }
end

spec.test("an approved command runs and its output appears", function()
  h.new_session()
  local calls = h.stub_select(h.pick("Allow once"))

  vim.cmd("Cody run outside echo nvim-approved")
  h.wait_chat("— end_turn")
  h.wait_turn()

  h.eq(1, #calls, "one approval dialog")
  local call = calls[1]
  h.eq(labels("Always allow `exec(echo nvim-approved:*)` in " .. h.workspace), call.labels, "the options")
  h.contains(call.opts.prompt, "OUTSIDE THE SANDBOX", "select prompt says where it runs")
  h.contains(call.opts.prompt, "echo nvim-approved", "select prompt")
  h.contains(call.opts.prompt, "cwd: " .. h.workspace, "select prompt")
  h.truthy(call.preview_valid, "the request was shown in a window while asking")
  h.contains(table.concat(call.preview_lines, "\n"), "$ echo nvim-approved\ncwd: " .. h.workspace, "preview")
  h.truthy(not vim.api.nvim_win_is_valid(call.approval.preview_win), "the preview closes after the answer")

  local text = h.chat()
  h.eq(1, h.count(text, "▸ echo nvim-approved [execute]"), "the tool call is shown once")
  h.contains(text, "▸ echo nvim-approved [execute]\n  ✓ nvim-approved")
  h.contains(text, "The command succeeded. Its output:")
  h.eq(nil, require("cody.approval").current(), "no dialog left open")
end)

spec.test("a rejected edit is not written and the chat shows the denial", function()
  h.new_session()
  local calls = h.stub_select(h.pick("Reject"))

  vim.cmd("Cody write ../x.txt: hi")
  h.wait_chat("— end_turn")
  h.wait_turn()

  h.eq(1, #calls, "one approval dialog")
  local call = calls[1]
  h.eq(labels(("Always allow `writeFile(/%s/**)` in %s"):format(h.root, h.workspace)), call.labels, "the options")
  h.contains(call.opts.prompt, h.root .. "/x.txt", "select prompt names the file")
  h.truthy(call.preview_valid, "the diff was shown in a window while asking")
  h.eq("diff", call.preview_filetype, "the preview is a diff")
  local diff = table.concat(call.preview_lines, "\n")
  h.contains(diff, "OUTSIDE THE SANDBOX", "the preview says the write leaves the sandbox")
  h.contains(diff, "+++ " .. h.root .. "/x.txt", "diff header")
  h.contains(diff, "\n+hi", "diff body")

  h.eq(0, vim.fn.filereadable(h.root .. "/x.txt"), "x.txt was not written")
  local text = h.chat()
  h.contains(text, "▸ Write ../x.txt [edit]\n  ✗ User denied approval")
  h.contains(text, "not succeed: User denied approval.")
end)

spec.test(":CodyCancel while the dialog is open ends the turn and the daemon closes the dialog", function()
  h.new_session()
  local picker_win ---@type integer?
  local calls = h.stub_select(function()
    -- A picker with its own floating window, and a user who never answers.
    local buf = vim.api.nvim_create_buf(false, true)
    picker_win = vim.api.nvim_open_win(buf, true, { relative = "editor", row = 5, col = 5, width = 30, height = 5 })
    return nil
  end)
  local closed = h.capture_event("CodyApprovalClosed")
  local notes = h.capture_notify()

  vim.cmd("Cody run outside echo never-runs")
  h.wait(function()
    return #calls == 1
  end, "the approval dialog")
  local open = require("cody.approval").current()
  h.truthy(open and open.request_id, "an open dialog with the daemon's requestId")
  h.truthy(vim.api.nvim_win_is_valid(open.preview_win), "the preview is open")

  vim.cmd("CodyCancel")
  h.wait_chat("— cancelled")
  h.wait_turn()

  h.eq(1, #closed, "the dialog was closed once")
  h.eq(open.request_id, closed[1].requestId, "closed for the daemon's request id")
  h.eq("$/cancelRequest", closed[1].reason, "closed by the daemon's $/cancelRequest")
  h.truthy(not vim.api.nvim_win_is_valid(open.preview_win), "the preview window is closed")
  h.truthy(not vim.api.nvim_win_is_valid(assert(picker_win)), "the picker's window is closed")
  h.eq(nil, require("cody.approval").current(), "no dialog left open")
  h.truthy(
    vim.iter(notes):any(function(n)
      return n.msg:find("withdrawn", 1, true) ~= nil
    end),
    "the user is told the request was withdrawn"
  )

  local text = h.chat()
  h.contains(text, "▸ echo never-runs [execute]\n  ✗ cancelled")
  h.truthy(text:match("— cancelled · %d+ tokens"), "status line with stop reason cancelled")
  h.not_contains(text, "✓ never-runs")

  -- A late answer from the picker is ignored, and the session still works.
  calls[1].on_choice(calls[1].items[1])
  vim.cmd("Cody list files")
  h.wait_chat("I found 2 entries")
  h.wait_turn()
  h.not_contains(h.chat(), "✓ never-runs")
end)

spec.test('"Cancel the turn" in the dialog stops the turn', function()
  h.new_session()
  local calls = h.stub_select(h.pick("Cancel the turn"))

  vim.cmd("Cody run outside echo not-this-time")
  h.wait_chat("— cancelled")
  h.wait_turn()

  h.eq(1, #calls, "one approval dialog")
  h.contains(h.chat(), "▸ echo not-this-time [execute]\n  ✗ ")
  h.not_contains(h.chat(), "✓ not-this-time")
end)

spec.test("a picker that answers synchronously (like the built-in inputlist) works too", function()
  h.new_session()
  local shown = 0
  h.stub(vim.ui, "select", function(items, _, on_choice)
    shown = shown + 1
    on_choice(items[2]) -- "Allow for this session", before select returns
  end)

  vim.cmd("Cody run outside echo sync-one")
  h.wait_chat("— end_turn")
  h.wait_turn()
  vim.cmd("Cody run outside echo sync-one")
  h.wait_turn()

  h.eq(1, shown, "the session grant covers the second identical command")
  h.eq(2, h.count(h.chat(), "✓ sync-one"), "both runs succeeded")
end)

spec.test("dismissing the dialog rejects the call and the turn goes on", function()
  h.new_session()
  h.stub(vim.ui, "select", function(_, _, on_choice)
    vim.schedule(function()
      on_choice(nil) -- what pickers answer on <Esc>
    end)
  end)

  vim.cmd("Cody run outside echo dismissed")
  h.wait_chat("— end_turn")
  h.wait_turn()
  h.contains(h.chat(), "▸ echo dismissed [execute]\n  ✗ User denied approval")
end)

spec.test("always allow in this project saves a rule: the next run of that command does not ask", function()
  h.new_session()
  local calls = h.stub_select(function(items)
    return vim.iter(items):find(function(item)
      return item.option_id == "allow_project"
    end)
  end)

  vim.cmd("Cody run outside mkdir -p ../nvim-first")
  h.wait_chat("— end_turn")
  h.wait_turn()
  h.eq(1, #calls, "one approval dialog")
  h.contains(calls[1].labels[3], "Always allow `exec(mkdir:*)` in " .. h.workspace, "the option shows the rule")
  vim.cmd("Cody run outside mkdir -p ../nvim-second")
  h.wait_turn()

  h.eq(1, #calls, "the saved rule answered the second command")
  h.eq(1, vim.fn.isdirectory(h.root .. "/nvim-second"), "it ran, outside the sandbox")
  local config = table.concat(vim.fn.readfile(h.root .. "/cody-home/config.toml"), "\n")
  h.contains(config, ('[projects."%s".permissions]'):format(h.workspace), "saved for the project")
  h.contains(config, '"exec(mkdir:*)"', "the rule")
end)

return spec

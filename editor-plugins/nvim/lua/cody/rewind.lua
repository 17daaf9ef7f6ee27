--- :CodyRewind and :CodyUndo: go back to a checkpoint (one is taken at every turn).
---
--- `:CodyRewind` lists the session's checkpoints (`_cody/session/checkpoints`, newest first:
--- each turn's prompt, time and the files it changed) in |vim.ui.select()|, then asks what to
--- restore (both, files, conversation) and calls `_cody/session/rewind`. Files someone else
--- changed since the checkpoint are conflicts: they are left alone unless you choose to
--- overwrite them. `:CodyUndo` rewinds the last turn (files and conversation; a codex/claude
--- session's conversation is its CLI's, so there only its files). Open buffers of
--- the restored files are reloaded (a buffer with unsaved changes is kept: buffers.lua).
local buffers = require("cody.buffers")
local chat = require("cody.chat")
local inert = require("cody.inert")

local M = {}

local MARKS = { added = "A", modified = "M", deleted = "D" }
local RESTORES = { "both", "files", "conversation" }
local RESTORE_LABELS = {
  both = "Files and conversation",
  files = "Files only (the conversation stays)",
  conversation = "Conversation only (the files stay)",
}

---@param message string
---@param level integer?
local function notify(message, level)
  vim.notify("Cody: " .. inert.text(message), level or vim.log.levels.INFO)
end

--- One picker line: turn, time, prompt, files (inert: it all comes from the daemon).
---@param checkpoint table A `CheckpointInfo`.
---@return string
function M.label(checkpoint)
  local head = checkpoint.turn and ("turn %d"):format(checkpoint.turn) or "rewind"
  local files = {}
  for i, file in ipairs(checkpoint.files or {}) do
    if i > 4 then
      table.insert(files, ("+%d more"):format(#checkpoint.files - 4))
      break
    end
    table.insert(files, ("%s %s"):format(MARKS[file.change] or "?", file.path))
  end
  local changed = #files > 0 and table.concat(files, ", ")
    or (checkpoint.restorable == false and "files not restorable" or "no file changes")
  local gone = checkpoint.inConversation == false and " (not in the conversation)" or ""
  return inert.line(
    ("%s · %s · “%s” · %s%s"):format(head, tostring(checkpoint.time or ""):sub(12, 16), checkpoint.prompt or "", changed, gone)
  )
end

--- Calls `callback(conn, session_id, checkpoints)` with the current session's checkpoints.
---@param callback fun(conn: cody.Connection, session_id: string, checkpoints: table[])
local function with_checkpoints(callback)
  local cody = require("cody")
  local status = cody.status()
  if status.busy then
    notify("a turn is still running; wait for it or :CodyCancel it first", vim.log.levels.WARN)
    return
  end
  if not status.session_id then
    notify("no session yet: nothing to rewind")
    return
  end
  cody.connect(function(conn_err, conn)
    if conn_err or not conn then
      return
    end
    conn:request("_cody/session/checkpoints", { sessionId = status.session_id }, function(err, result)
      if err then
        notify("checkpoints: " .. (err.message or tostring(err)), vim.log.levels.ERROR)
        return
      end
      callback(conn, status.session_id, result.checkpoints or {})
    end)
  end)
end

--- Reloads the buffers of the restored files (paths relative to the session's directory).
---@param paths string[]
local function reload(paths)
  local cwd = require("cody").status().cwd or vim.fn.getcwd()
  buffers.refresh(vim.tbl_map(function(path)
    return cwd .. "/" .. path
  end, paths))
end

---@param conn cody.Connection
---@param session_id string
---@param checkpoint table
---@param restore string
---@param force boolean
local function rewind(conn, session_id, checkpoint, restore, force)
  local params = { sessionId = session_id, checkpointId = checkpoint.checkpointId, restore = restore, force = force }
  conn:request("_cody/session/rewind", params, function(err, result)
    if err then
      notify("rewind: " .. (err.message or tostring(err)), vim.log.levels.ERROR)
      return
    end
    reload(result.restored or {})
    local where = checkpoint.turn and ("turn %d"):format(checkpoint.turn) or "the checkpoint"
    local parts = { ("rewound to before %s “%s”"):format(where, checkpoint.prompt or "") }
    if restore ~= "conversation" then
      table.insert(parts, ("%d file(s) restored"):format(#(result.restored or {})))
    end
    if restore ~= "files" then
      table.insert(parts, "the conversation continues from there")
    end
    for _, stopped in ipairs(result.stoppedProcesses or {}) do
      table.insert(parts, ("stopped process %d (%s), which an undone turn started"):format(stopped.processId, stopped.command))
    end
    chat.note(inert.line(table.concat(parts, "; ")))
    for _, failure in ipairs(result.failed or {}) do
      notify(("not restored: %s (%s)"):format(failure.path, failure.reason), vim.log.levels.WARN)
    end
    local conflicts = result.conflicts or {}
    if #conflicts == 0 or force then
      vim.api.nvim_exec_autocmds("User", { pattern = "CodyRewound", modeline = false, data = result })
      return
    end
    vim.ui.select({ "keep", "overwrite" }, {
      prompt = inert.line(("Changed since by someone else: %s"):format(table.concat(conflicts, ", "))),
      kind = "cody.rewind.conflicts",
      format_item = function(item)
        return item == "keep" and "Keep my versions" or "Overwrite them with the checkpoint's"
      end,
    }, function(choice)
      if choice == "overwrite" then
        rewind(conn, session_id, checkpoint, "files", true)
      else
        vim.api.nvim_exec_autocmds("User", { pattern = "CodyRewound", modeline = false, data = result })
      end
    end)
  end)
end

--- `:CodyRewind`: pick a checkpoint, then what to restore.
function M.pick()
  with_checkpoints(function(conn, session_id, checkpoints)
    if #checkpoints == 0 then
      notify("no checkpoints yet: one is taken at every turn")
      return
    end
    vim.ui.select(checkpoints, {
      prompt = "Rewind to before",
      kind = "cody.checkpoint",
      format_item = M.label,
    }, function(checkpoint)
      if not checkpoint then
        return
      end
      local native = (require("cody").status().backend or "native") == "native"
      vim.ui.select(native and RESTORES or { "files" }, {
        prompt = "Restore",
        kind = "cody.rewind.restore",
        format_item = function(item)
          return RESTORE_LABELS[item]
        end,
      }, function(restore)
        if restore then
          rewind(conn, session_id, checkpoint, restore, false)
        end
      end)
    end)
  end)
end

--- `:CodyUndo`: rewind the last turn the conversation holds (files and conversation).
function M.undo()
  with_checkpoints(function(conn, session_id, checkpoints)
    local last = vim.iter(checkpoints):find(function(c)
      return c.reason == "turn" and c.inConversation ~= false
    end)
    if not last then
      notify("nothing to undo: this conversation has no turn yet")
      return
    end
    local native = (require("cody").status().backend or "native") == "native"
    rewind(conn, session_id, last, native and "both" or "files", false)
  end)
end

return M

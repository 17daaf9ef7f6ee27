--- :CodyProcesses: the chat session's processes (the servers, watchers and REPLs the model
--- started with `exec`'s `background` or `yieldMs`, and a command still running), listed with
--- `_cody/session/processes` in `vim.ui.select`; choosing a running one stops it and
--- everything it started (`_cody/process/kill`: SIGTERM, then SIGKILL). Every field shown
--- comes from the daemon and goes through `inert` (a command cannot draw on the screen).
local inert = require("cody.inert")

local M = {}

---@param message string
---@param level integer?
local function notify(message, level)
  vim.notify("Cody: " .. inert.text(message), level or vim.log.levels.INFO)
end

--- `running`, `exited 0`, `killed by SIGTERM`.
---@param process table A `ProcessInfo`.
---@return string
function M.state(process)
  if process.running then
    return "running"
  end
  if process.signal then
    return "killed by " .. process.signal
  end
  return "exited " .. tostring(process.exitCode)
end

--- The picker label of a process (one inert line).
---@param process table A `ProcessInfo`.
---@return string
function M.label(process)
  local command = process.command
  if type(command) == "table" then
    command = table.concat(command, " ")
  end
  return inert.line(("%d  %s  pid %d%s  %s"):format(
    process.processId,
    M.state(process),
    process.pid,
    process.background and "  bg" or "",
    tostring(command)
  ))
end

--- The chat session's processes (none before the first prompt).
---@param callback fun(err: table?, processes: table[]?)
function M.list(callback)
  local cody = require("cody")
  local session_id = cody.status().session_id
  if not session_id then
    callback(nil, {})
    return
  end
  cody.connect(function(conn_err, conn)
    if conn_err or not conn then
      callback(conn_err, nil)
      return
    end
    conn:request("_cody/session/processes", { sessionId = session_id }, function(err, result)
      callback(err, result and result.processes or nil)
    end)
  end)
end

--- Stops one of the chat session's processes.
---@param process_id integer
---@param callback fun(err: table?, result: table?)?
function M.kill(process_id, callback)
  local cody = require("cody")
  local session_id = cody.status().session_id
  cody.connect(function(conn_err, conn)
    if conn_err or not conn or not session_id then
      return
    end
    local params = { sessionId = session_id, processId = process_id }
    conn:request("_cody/process/kill", params, function(err, result)
      if err then
        notify(("stopping process %d failed: %s"):format(process_id, err.message or tostring(err)), vim.log.levels.ERROR)
      else
        notify(("stopped process %d (%s)"):format(process_id, M.state(result.process)))
      end
      if callback then
        callback(err, result)
      end
    end)
  end)
end

--- `:CodyProcesses`: the list; choosing a running process stops it.
function M.pick()
  M.list(function(err, processes)
    if err then
      notify("listing the processes failed: " .. (err.message or tostring(err)), vim.log.levels.ERROR)
      return
    end
    if not processes or #processes == 0 then
      notify("no processes in this session")
      return
    end
    vim.ui.select(processes, {
      prompt = "Cody processes (choose a running one to stop it)",
      kind = "cody.process",
      format_item = M.label,
    }, function(process)
      if not process then
        return
      end
      if not process.running then
        notify(("process %d has ended (%s)"):format(process.processId, M.state(process)))
        return
      end
      M.kill(process.processId)
    end)
  end)
end

return M

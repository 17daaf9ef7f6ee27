--- :CodyHistory: Codex, Claude Code and Cody sessions in one picker.
---
--- Lists them with `_cody/history/list` (newest first), and imports the chosen one into a new
--- Cody session with `_cody/history/import` (its settings from `setup()`, like `session/new`),
--- which is then replayed into the chat (`session/load`) and takes the next prompt.
local config = require("cody.config")
local inert = require("cody.inert")

local M = {}

local AGENT_NAMES = { codex = "Codex", claude = "Claude Code", cody = "Cody" }

---@param message string
---@param level integer?
local function notify(message, level)
  vim.notify("Cody: " .. inert.text(message), level or vim.log.levels.INFO)
end

--- Every listed session (following `nextCursor`, at most 20 pages).
---@param agent string? "codex"|"claude"|"cody"
---@param callback fun(err: table?, sessions: table[]?)
function M.list(agent, callback)
  require("cody").connect(function(conn_err, conn)
    if conn_err or not conn then
      callback(conn_err, nil)
      return
    end
    conn:request_all_sessions("_cody/history/list", { agent = agent }, callback)
  end)
end

--- The picker label of a session: agent, last update, title, message count, directory (one
--- inert line: the title and directory come from a file on disk).
---@param session table A `HistorySessionInfo`.
---@return string
function M.label(session)
  local count = (session.messageCountExact and "" or "~") .. tostring(session.messageCount or 0)
  return inert.line(
    ("[%s] %s  %s  (%s msgs, %s)"):format(
      session.agent,
      tostring(session.updatedAt or ""):sub(1, 16),
      session.title or "(untitled)",
      count,
      session.cwd or "?"
    )
  )
end

--- Imports a listed session and opens it in the chat. The new session works in the plugin's
--- `cwd` (the current directory unless `setup()` sets one), never in the directory the session
--- file names: a file may name any directory, `/` included.
---@param session table A `HistorySessionInfo`.
function M.import(session)
  local cody = require("cody")
  cody.connect(function(conn_err, conn)
    if conn_err or not conn then
      return
    end
    local cwd = config.cwd()
    local params = { agent = session.agent, sessionId = session.sessionId, cwd = cwd }
    local meta = config.session_meta()
    if meta then
      params._meta = { cody = meta }
    end
    conn:request("_cody/history/import", params, function(err, result)
      if err then
        notify(("importing %s failed: %s"):format(session.sessionId, err.message or tostring(err)), vim.log.levels.ERROR)
        return
      end
      local imported = result.imported or {}
      notify(
        ("imported %s session %s (%d items) as %s"):format(
          AGENT_NAMES[session.agent] or session.agent,
          session.sessionId,
          imported.items or 0,
          result.sessionId
        )
      )
      cody.resume(result.sessionId, cwd)
    end)
  end)
end

--- `:CodyHistory [agent]`: pick a session of any agent (or only `agent`'s) and import it.
---@param agent string?
function M.pick(agent)
  if agent == "" then
    agent = nil
  end
  if require("cody").status().busy then
    notify("a turn is still running; :CodyCancel it first", vim.log.levels.WARN)
    return
  end
  M.list(agent, function(err, sessions)
    if err then
      notify("_cody/history/list failed: " .. (err.message or tostring(err)), vim.log.levels.ERROR)
      return
    end
    if not sessions or #sessions == 0 then
      notify("no Codex, Claude Code or Cody sessions found")
      return
    end
    vim.ui.select(sessions, {
      prompt = "Continue a session in Cody",
      kind = "cody.history",
      format_item = M.label,
    }, function(session)
      if session then
        M.import(session)
      end
    end)
  end)
end

return M

--- cody.nvim: chat with the Cody daemon from Neovim.
---
--- One daemon per Neovim instance, started on first use: `initialize`, then `session/new`
--- (with the `_meta.cody` settings from `setup()`). `session/update` notifications are drawn in
--- the chat buffer, `session/request_permission` requests are answered through `vim.ui.select`,
--- and `VimLeavePre` shuts the daemon down (`shutdown`, then `exit`).
---
--- While a turn runs, a new message steers it (`_cody/session/steer`: the model reads it at
--- its next step; when the turn has just ended, -32011, it is queued instead) and `queue()`
--- sends one to run after it (`session/prompt` with `_meta.cody.queue`); `:CodyCancel` ends
--- the turn and drops the queue. A turn that ends (or an approval that waits) while Neovim
--- is not focused, or after a long turn, is said with |vim.notify()|.
---
--- Loading this module (`setup()` at startup, `:checkhealth cody`) loads only the
--- configuration: the chat, approvals, buffers and RPC modules load when first used.
local config = require("cody.config")

---@param name string
---@return table
local function on_first_use(name)
  return setmetatable({}, {
    __index = function(_, key)
      return require(name)[key]
    end,
  })
end

local approval = on_first_use("cody.approval")
local mentions = on_first_use("cody.mentions")
local buffers = on_first_use("cody.buffers")
local chat = on_first_use("cody.chat")
local inert = on_first_use("cody.inert")
local rpc = on_first_use("cody.rpc")

local M = {}

M.version = "0.1.0"

---@class cody.Turn
---@field cancel_requested boolean `:CodyCancel` came before the prompt was sent.
---@field sent boolean
---@field text string
---@field started number? When it began to run (`vim.uv.now()`).
---@field dropped boolean? A queued prompt the daemon answered `cancelled` before it ran.

---@class cody.State
---@field conn cody.Connection?
---@field init_result table? The `initialize` answer.
---@field init_waiters fun(err: cody.RpcError?, conn: cody.Connection?)[]?
---@field session_id string?
---@field session_waiters fun(err: cody.RpcError?, session_id: string?)[]?
---@field loading_id string? Session being replayed by `session/load`.
---@field title string?
---@field cwd string? The session's directory.
---@field backend string? Whose loop runs the session (`native`, `codex`, `claude`).
---@field turn cody.Turn?
---@field queued cody.Turn[] Prompts waiting for the running turn, oldest first.
---@field focused boolean Neovim has the focus (FocusLost / FocusGained).
---@field last_exit {code: integer, signal: integer}?

---@type cody.State
local state = { queued = {}, focused = true }

--- A turn this long ends with a notification even while Neovim has the focus.
M.LONG_TURN_MS = 5000

local augroup = vim.api.nvim_create_augroup("cody", { clear = true })

---@param message string
---@param level integer?
local function notify(message, level)
  vim.notify("Cody: " .. inert.text(message), level or vim.log.levels.INFO)
end

--- Shows a daemon error: its message says what to do.
---@param err cody.RpcError|table
---@param context string?
---@return string message
local function report(err, context)
  local message = (type(err) == "table" and err.message) or tostring(err)
  notify(context and (context .. ": " .. message) or message, vim.log.levels.ERROR)
  return message
end

--- Shows the daemon's `_meta.cody.warnings` of a session answer (configuration it ignored:
--- an untrusted project's keys, Codex settings Cody has no use for; a session whose directory
--- is gone) in the chat and as a notification.
---@param result table? `session/new` or `session/load` result
local function show_warnings(result)
  for _, warning in ipairs(vim.tbl_get(result or {}, "_meta", "cody", "warnings") or {}) do
    chat.warning(warning)
    notify(warning, vim.log.levels.WARN)
  end
end

---@param opts cody.UserConfig?
function M.setup(opts)
  config.setup(opts)
end

-- Daemon -------------------------------------------------------------------------------------

---@param params table
local function on_session_update(params)
  local sid = params.sessionId
  if sid ~= state.session_id and sid ~= state.loading_id then
    -- A child session (a subagent) of the shown one: its activity, nested under the call.
    local lineage = vim.tbl_get(params, "_meta", "cody")
    if type(lineage) == "table" and lineage.parentSessionId == state.session_id and state.session_id then
      chat.child_update(sid, params.update or {}, lineage)
    end
    return
  end
  local update = params.update or {}
  local kind = update.sessionUpdate
  local text = vim.tbl_get(update, "content", "text")
  if kind == "agent_message_chunk" and text then
    chat.message(text)
  elseif kind == "agent_thought_chunk" and text then
    chat.thought(text)
  elseif kind == "user_message_chunk" and text then
    chat.user(text)
  elseif kind == "tool_call" then
    chat.tool_call(update)
    if sid ~= state.loading_id then -- a replayed edit is history: it touches no buffer
      buffers.on_tool_update(update)
    end
  elseif kind == "tool_call_update" then
    local child = vim.tbl_get(update, "_meta", "cody")
    if type(child) == "table" and type(child.childSessionId) == "string" then
      chat.child_started(update.toolCallId, child)
    end
    chat.tool_call_update(update)
    if sid ~= state.loading_id then
      buffers.on_tool_update(update) -- an edit that completed: :checktime its open buffers
    end
  elseif kind == "plan" then
    chat.plan(update.entries)
  elseif kind == "session_info_update" then
    state.title = update.title and inert.line(update.title)
  end
end

---@param conn cody.Connection
---@param code integer
---@param signal integer
local function on_exit(conn, code, signal)
  state.last_exit = { code = code, signal = signal }
  if state.conn ~= conn then
    return
  end
  approval.cancel_all("daemon exited")
  buffers.reset()
  local was_running = state.turn ~= nil
  state.conn, state.init_result, state.session_id, state.loading_id, state.turn = nil, nil, nil, nil, nil
  state.queued = {}
  if not conn:is_stopping() then
    local log = vim.lsp.log.get_filename()
    notify(
      ("the daemon exited (code %d). Its stderr is in %s. The next :Cody starts a new one; :CodyResume continues a saved session."):format(
        code,
        log
      ),
      vim.log.levels.ERROR
    )
    if was_running then
      chat.error("the daemon exited during the turn")
    end
  end
end

---@param conn cody.Connection
local function register_handlers(conn)
  conn:on_notification("session/update", on_session_update)
  -- The daemon withdraws an approval request (turn cancelled, timeout): LSP and ACP spellings.
  conn:on_notification("$/cancelRequest", function(params)
    approval.cancel(params.id, "$/cancelRequest")
  end)
  conn:on_notification("$/cancel_request", function(params)
    approval.cancel(params.requestId, "$/cancel_request")
  end)
  conn:on_request("session/request_permission", approval.request)
  conn:on_exit(function(code, signal)
    on_exit(conn, code, signal)
  end)
end

--- Calls `callback(err, conn)` once the daemon is running and initialized (starting it if needed).
---@param callback fun(err: cody.RpcError?, conn: cody.Connection?)
function M.connect(callback)
  if state.conn and state.init_result then
    callback(nil, state.conn)
    return
  end
  if state.init_waiters then
    table.insert(state.init_waiters, callback)
    return
  end

  local cmd = config.cmd()
  local conn, start_err = rpc.start({ cmd = cmd, cwd = config.cwd(), env = config.options.env })
  if not conn then
    local err = {
      code = vim.lsp.protocol.ErrorCodes.InternalError,
      message = ("could not start the daemon %s: %s. Set `cmd` in require('cody').setup{} (:help cody-cmd) and check :checkhealth cody"):format(
        table.concat(cmd, " "),
        start_err
      ),
    }
    report(err)
    callback(err, nil)
    return
  end
  state.conn = conn
  state.init_waiters = { callback }
  register_handlers(conn)

  conn:request("initialize", {
    protocolVersion = 1,
    clientCapabilities = { fs = { readTextFile = false, writeTextFile = false }, terminal = false },
    clientInfo = { name = "cody.nvim", title = "Cody for Neovim", version = M.version },
  }, function(err, result)
    local waiters = state.init_waiters or {}
    state.init_waiters = nil
    if err then
      report(err, "initialize failed")
      if state.conn == conn then
        conn:stop(config.options.shutdown_timeout_ms)
      end
    else
      state.init_result = result
    end
    for _, waiter in ipairs(waiters) do
      waiter(err, not err and conn or nil)
    end
  end)
end

--- Calls `callback(err, session_id)` once a session exists (creating one if needed).
---@param callback fun(err: cody.RpcError?, session_id: string?)
local function ensure_session(callback)
  if state.session_id then
    callback(nil, state.session_id)
    return
  end
  if state.session_waiters then
    table.insert(state.session_waiters, callback)
    return
  end
  state.session_waiters = { callback }
  local function done(err, session_id)
    local waiters = state.session_waiters or {}
    state.session_waiters = nil
    for _, waiter in ipairs(waiters) do
      waiter(err, session_id)
    end
  end
  M.connect(function(conn_err, conn)
    if conn_err or not conn then
      done(conn_err, nil)
      return
    end
    local params = { cwd = config.cwd(), mcpServers = {} }
    local meta = config.session_meta()
    if meta then
      params._meta = { cody = meta }
    end
    conn:request("session/new", params, function(err, result)
      if err then
        report(err)
        done(err, nil)
        return
      end
      state.session_id, state.title = result.sessionId, nil
      state.cwd, state.backend = params.cwd, vim.tbl_get(result, "_meta", "cody", "backend")
      show_warnings(result)
      done(nil, result.sessionId)
    end)
  end)
end

--- Calls `callback(err, session_id)` once a session exists (creating one if needed).
M.with_session = ensure_session

--- The daemon connection, when it runs.
---@return cody.Connection?
function M.connection()
  return state.conn
end

-- Commands -----------------------------------------------------------------------------------

--- Opens (or focuses) the chat window.
function M.open()
  chat.open()
end

--- Says that a turn ended (or an approval waits) with |vim.notify()| when Neovim is not
--- focused, or the turn ran longer than `LONG_TURN_MS`.
---@param message string
---@param started number?
function M.notify_user(message, started)
  local long = started and (vim.uv.now() - started) >= M.LONG_TURN_MS
  if not state.focused or long then
    notify(message)
  end
end

--- The turn that runs next, when the running one answered (queued prompts run in order).
local function next_turn()
  local turn = table.remove(state.queued, 1)
  while turn and turn.dropped do
    turn = table.remove(state.queued, 1)
  end
  state.turn = turn
  if turn then
    turn.started = vim.uv.now()
    chat.user(turn.text)
  end
end

--- Sends `session/prompt` for `turn`; `queued`: with `_meta.cody.queue` (it waits for the
--- running turn). The answer ends the turn in the chat and starts the next queued one.
---@param turn cody.Turn
---@param session_id string
---@param content table[]
---@param queued boolean
local function send_prompt(turn, session_id, content, queued)
  local conn = assert(state.conn)
  turn.sent = true
  local params = { sessionId = session_id, prompt = content }
  if queued then
    params._meta = { cody = { queue = true } }
  end
  conn:request("session/prompt", params, function(err, result)
    if conn:is_stopping() then
      return
    end
    if turn.dropped then
      return -- said when the turn before it was cancelled
    end
    if state.turn ~= turn then
      -- A queued prompt answered before its turn came: the daemon dropped it (cancel).
      turn.dropped = true
      chat.note(("dropped the queued prompt: %s"):format(turn.text))
      return
    end
    if err then
      chat.error(report(err))
    else
      chat.turn_end(result)
      M.notify_user(("turn ended (%s)"):format(result.stopReason), turn.started)
    end
    if result and result.stopReason == "cancelled" then
      for _, waiting in ipairs(state.queued) do
        if not waiting.dropped then
          waiting.dropped = true
          chat.note(("dropped the queued prompt: %s"):format(waiting.text))
        end
      end
      state.queued = {}
    end
    next_turn()
    vim.api.nvim_exec_autocmds("User", {
      pattern = "CodyTurnDone",
      modeline = false,
      data = { sessionId = session_id, stopReason = result and result.stopReason, error = err },
    })
  end)
end

--- Sends a prompt: shows it in the chat, then streams the reply. While a turn runs, the
--- message steers that turn instead (see `steer`). `blocks`: more content to send with the
--- text (files, `@path` mentions: cody.mentions).
---@param text string
---@param blocks table[]?
function M.prompt(text, blocks)
  if state.turn then
    M.steer(text, blocks)
    return
  end
  chat.open()
  chat.user(text)
  ---@type cody.Turn
  local turn = { cancel_requested = false, sent = false, text = text, started = vim.uv.now() }
  state.turn = turn

  ensure_session(function(session_err, session_id)
    if session_err or not session_id then
      chat.error(session_err and session_err.message or "no session")
      if state.turn == turn then
        state.turn = nil
      end
      return
    end
    if turn.cancel_requested then
      chat.turn_end({ stopReason = "cancelled" })
      if state.turn == turn then
        state.turn = nil
      end
      return
    end
    send_prompt(turn, session_id, mentions.content(text, blocks), false)
  end)
end

--- Adds a message to the running turn (`_cody/session/steer`); the chat shows it where the
--- model reads it. With no turn running it is sent as a prompt; when the turn ended just
--- before (-32011) it is queued.
---@param text string
---@param blocks table[]?
function M.steer(text, blocks)
  local turn = state.turn
  if not turn or not turn.sent or not state.conn then
    if turn then
      M.queue(text, blocks)
    else
      M.prompt(text, blocks)
    end
    return
  end
  local content = mentions.content(text, blocks)
  state.conn:request("_cody/session/steer", { sessionId = state.session_id, prompt = content }, function(err)
    if err and err.code == -32011 then
      M.queue(text, blocks)
    elseif err then
      chat.error(report(err))
    else
      chat.note("sent to the running turn: the model reads it next")
    end
  end)
end

--- Queues a prompt to run after the running turn (and the prompts queued before it); with
--- no turn running it is sent at once.
---@param text string
---@param blocks table[]?
function M.queue(text, blocks)
  if not state.turn or not state.conn or not state.session_id then
    M.prompt(text, blocks)
    return
  end
  ---@type cody.Turn
  local turn = { cancel_requested = false, sent = false, text = text }
  table.insert(state.queued, turn)
  chat.note(("queued: %s"):format(text))
  send_prompt(turn, state.session_id, mentions.content(text, blocks), true)
end

--- Sends the current buffer, or the lines `first`..`last` of it, with `text` (a prompt; or
--- a steer while a turn runs): `:CodySend` and `:'<,'>CodySend`.
---@param text string?
---@param first integer?
---@param last integer?
function M.send_buffer(text, first, last)
  local block = mentions.buffer_block(0, first, last)
  local what = first and ("lines %d-%d of %s"):format(first, last, block.name) or block.name
  M.prompt(text and text ~= "" and text or ("(sent %s)"):format(what), { block.content })
end

--- Opens the prompt buffer below the chat (cody.input): <CR> sends (steers a running
--- turn), <Tab> queues, `@` completes a workspace file.
function M.ask()
  chat.open()
  require("cody.input").open()
end

--- Cancels the running turn (`session/cancel`); the turn ends with stop reason `cancelled`.
function M.cancel()
  local turn = state.turn
  if not turn then
    notify("no turn is running")
    return
  end
  if not turn.sent or not state.conn then
    turn.cancel_requested = true
    return
  end
  state.conn:notify("session/cancel", { sessionId = state.session_id })
end

--- Starts a fresh session on the next prompt, with an empty chat.
function M.new_session()
  if state.turn then
    notify("a turn is still running; :CodyCancel it first", vim.log.levels.WARN)
    return
  end
  if state.conn and state.session_id then
    state.conn:request("session/close", { sessionId = state.session_id }, function() end)
  end
  state.session_id, state.title, state.queued = nil, nil, {}
  chat.clear()
end

--- Chooses whose agent loop runs the next session (`native`, `codex`, `claude`) and starts it
--- fresh. Without a name, picks with |vim.ui.select()|, showing which CLIs are installed
--- (`_cody/agents/list`).
---@param name string?
function M.backend(name)
  if name then
    if not vim.tbl_contains(config.BACKENDS, name) then
      notify(("unknown backend %q; use one of %s"):format(name, table.concat(config.BACKENDS, ", ")), vim.log.levels.ERROR)
      return
    end
    config.options.backend = name
    M.new_session()
    notify(("new sessions run on %s"):format(name))
    return
  end
  M.connect(function(conn_err, conn)
    if conn_err or not conn then
      return
    end
    conn:request("_cody/agents/list", {}, function(err, result)
      if err then
        report(err)
        return
      end
      local found = { native = "Cody's own agent loop" }
      for _, agent in ipairs(result.agents or {}) do
        found[agent.id] = inert.line(
          agent.found and ("%s %s"):format(agent.name, agent.version or "") or ("%s: not installed"):format(agent.name)
        )
      end
      vim.ui.select(config.BACKENDS, {
        prompt = "Cody agent for new sessions",
        format_item = function(item)
          return ("%s — %s"):format(item, found[item] or "")
        end,
      }, function(choice)
        if choice then
          M.backend(choice)
        end
      end)
    end)
  end)
end

--- All saved sessions, newest first (following `nextCursor`).
---@param callback fun(err: cody.RpcError?, sessions: table[]?)
function M.list_sessions(callback)
  M.connect(function(conn_err, conn)
    if conn_err or not conn then
      callback(conn_err, nil)
      return
    end
    conn:request_all_sessions("session/list", nil, callback)
  end)
end

--- `:CodySessions`: pick a saved session with `vim.ui.select`, then resume it.
function M.sessions()
  M.list_sessions(function(err, sessions)
    if err then
      report(err, "session/list failed")
      return
    end
    if not sessions or #sessions == 0 then
      notify("no saved sessions yet")
      return
    end
    vim.ui.select(sessions, {
      prompt = "Resume a Cody session",
      kind = "cody.session",
      format_item = function(session)
        local label = ("%s  %s  (%s)"):format(session.updatedAt or "", session.title or "(untitled)", session.cwd or "")
        return inert.line(label) -- the title and directory come from a session file
      end,
    }, function(session)
      if session then
        M.resume(session.sessionId, session.cwd)
      end
    end)
  end)
end

--- Resumes a saved session with `session/load`; its history is replayed into the chat.
--- Without an id, asks which one (`:CodySessions`).
---@param session_id string?
---@param cwd string? The session's workspace (looked up with `session/list` when nil).
function M.resume(session_id, cwd)
  if not session_id or session_id == "" then
    M.sessions()
    return
  end
  if state.turn then
    notify("a turn is still running; :CodyCancel it first", vim.log.levels.WARN)
    return
  end
  if not cwd then
    M.list_sessions(function(_, sessions)
      local found = vim.iter(sessions or {}):find(function(s)
        return s.sessionId == session_id
      end)
      M.resume(session_id, found and found.cwd or config.cwd())
    end)
    return
  end
  M.connect(function(conn_err, conn)
    if conn_err or not conn then
      return
    end
    local previous = state.session_id
    if previous and previous ~= session_id then
      conn:request("session/close", { sessionId = previous }, function() end)
    end
    state.session_id, state.title = nil, nil
    state.loading_id = session_id
    chat.clear()
    chat.open()
    conn:request("session/load", { sessionId = session_id, cwd = cwd, mcpServers = {} }, function(err, result)
      state.loading_id = nil
      if err then
        chat.error(report(err))
        return
      end
      state.session_id = session_id
      state.cwd, state.backend = cwd, vim.tbl_get(result or {}, "_meta", "cody", "backend")
      chat.note(("resumed session %s"):format(session_id))
      show_warnings(result)
    end)
  end)
end

--- Shuts the daemon down (`shutdown`, then `exit`); the next command starts a new one.
---@return integer? exit_code nil when the daemon had to be killed or was not running
function M.stop()
  local conn = state.conn
  if not conn then
    return nil
  end
  approval.cancel_all("stop")
  conn:stop(config.options.shutdown_timeout_ms)
  state.conn, state.init_result, state.init_waiters = nil, nil, nil
  state.session_id, state.session_waiters, state.loading_id, state.turn = nil, nil, nil, nil
  state.queued = {}
  return conn.exited and conn.exit_code or nil
end

vim.api.nvim_create_autocmd("FocusLost", {
  group = augroup,
  callback = function()
    state.focused = false
  end,
})
vim.api.nvim_create_autocmd("FocusGained", {
  group = augroup,
  callback = function()
    state.focused = true
  end,
})

vim.api.nvim_create_autocmd("VimLeavePre", {
  group = augroup,
  desc = "Shut the Cody daemon down",
  callback = function()
    M.stop()
  end,
})

---@class cody.Status
---@field running boolean The daemon is running.
---@field initialize table? Its `initialize` answer.
---@field session_id string?
---@field title string?
---@field cwd string? The session's directory.
---@field backend string? Whose loop runs the session.
---@field busy boolean A turn is running.
---@field queued integer Prompts waiting for the running turn.
---@field last_exit {code: integer, signal: integer}? How the last daemon process ended.

--- The plugin's state, for statuslines, `:checkhealth` and tests.
---@return cody.Status
function M.status()
  return {
    running = state.conn ~= nil and not state.conn.exited,
    initialize = state.init_result,
    session_id = state.session_id,
    title = state.title,
    cwd = state.cwd,
    backend = state.backend,
    busy = state.turn ~= nil,
    queued = #state.queued,
    last_exit = state.last_exit,
  }
end

return M

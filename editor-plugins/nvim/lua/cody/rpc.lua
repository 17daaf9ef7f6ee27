--- A JSON-RPC connection to one daemon process, on top of `vim.lsp.rpc` (Content-Length
--- framing). Adds what `vim.lsp.rpc` leaves out: per-method handlers, failing pending
--- requests when the daemon exits, and a clean `shutdown`/`exit`.
local M = {}

local ErrorCodes = vim.lsp.protocol.ErrorCodes

---@class cody.RpcError
---@field code integer
---@field message string
---@field data any

---@alias cody.ResponseCallback fun(err: cody.RpcError?, result: any)

---@class cody.Connection
---@field cmd string[]
---@field exited boolean
---@field exit_code integer?
---@field private client vim.lsp.rpc.PublicClient
---@field private notification_handlers table<string, fun(params: table)>
---@field private request_handlers table<string, fun(params: table): any, lsp.ResponseError?>
---@field private pending table<integer, cody.ResponseCallback>
---@field private exit_callbacks fun(code: integer, signal: integer)[]
---@field private stopping boolean
local Connection = {}
Connection.__index = Connection

---@class cody.ConnectionOpts
---@field cmd string[]
---@field cwd string?
---@field env table<string, string>?

--- Spawns the daemon. Returns nil and a message when the command cannot be started.
---@param opts cody.ConnectionOpts
---@return cody.Connection? conn
---@return string? err
function M.start(opts)
  local self = setmetatable({
    cmd = opts.cmd,
    exited = false,
    notification_handlers = {},
    request_handlers = {},
    pending = {},
    exit_callbacks = {},
    stopping = false,
  }, Connection)

  ---@type vim.lsp.rpc.Dispatchers
  local dispatchers = {
    notification = function(method, params)
      local handler = self.notification_handlers[method]
      if handler then
        handler(params or {})
      end
    end,
    -- Runs inside a coroutine on Neovim >= 0.10, so a handler may yield.
    server_request = function(method, params)
      local handler = self.request_handlers[method]
      if not handler then
        return nil, vim.lsp.rpc.rpc_response_error(ErrorCodes.MethodNotFound, "cody.nvim does not handle " .. method)
      end
      return handler(params or {})
    end,
    on_exit = function(code, signal)
      -- Called from a libuv callback (fast context): leave it before touching the editor.
      vim.schedule(function()
        self:_on_exit(code, signal)
      end)
    end,
    on_error = function(code, err)
      local kind = vim.lsp.rpc.client_errors[code] or tostring(code)
      vim.notify(("Cody: RPC error %s: %s"):format(kind, vim.inspect(err)), vim.log.levels.ERROR)
    end,
  }

  if vim.fn.executable(opts.cmd[1]) == 0 then
    return nil, ("`%s` is not an executable"):format(opts.cmd[1])
  end
  local cwd = opts.cwd
  if cwd and vim.fn.isdirectory(cwd) == 0 then
    cwd = nil
  end
  local ok, client = pcall(vim.lsp.rpc.start, opts.cmd, dispatchers, { cwd = cwd, env = opts.env })
  if not ok then
    return nil, tostring(client)
  end
  self.client = client
  return self
end

---@private
---@param code integer
---@param signal integer
function Connection:_on_exit(code, signal)
  self.exited = true
  self.exit_code = code
  local pending = self.pending
  self.pending = {}
  for _, callback in pairs(pending) do
    callback({
      code = ErrorCodes.InternalError,
      message = ("the Cody daemon exited (code %d%s) before answering"):format(
        code,
        signal ~= 0 and (", signal " .. signal) or ""
      ),
    }, nil)
  end
  for _, callback in ipairs(self.exit_callbacks) do
    callback(code, signal)
  end
end

--- Registers the handler of a notification from the daemon (one per method).
---@param method string
---@param handler fun(params: table)
function Connection:on_notification(method, handler)
  self.notification_handlers[method] = handler
end

--- Registers the handler of a request from the daemon. It runs in a coroutine and returns
--- `result, err` (err built with `vim.lsp.rpc.rpc_response_error`).
---@param method string
---@param handler fun(params: table): any, lsp.ResponseError?
function Connection:on_request(method, handler)
  self.request_handlers[method] = handler
end

--- Called once the daemon process has exited (after pending requests were failed).
---@param callback fun(code: integer, signal: integer)
function Connection:on_exit(callback)
  table.insert(self.exit_callbacks, callback)
end

--- Sends a request; `callback(err, result)` runs on the main loop. When the daemon exits first,
--- the callback gets an error instead of never being called.
---@param method string
---@param params table?
---@param callback cody.ResponseCallback
---@return boolean sent
function Connection:request(method, params, callback)
  if self.exited or self.client.is_closing() then
    vim.schedule(function()
      callback({ code = ErrorCodes.InternalError, message = "the Cody daemon is not running" }, nil)
    end)
    return false
  end
  local sent, id = self.client.request(method, params, callback, function(message_id)
    -- Also called for a -32800 answer, whose callback Neovim drops.
    self.pending[message_id] = nil
  end)
  if not sent or not id then
    vim.schedule(function()
      callback({ code = ErrorCodes.InternalError, message = "could not send " .. method .. " to the Cody daemon" }, nil)
    end)
    return false
  end
  self.pending[id] = callback
  return true
end

--- Every `sessions` entry of a cursor-paged list (`session/list`, `_cody/history/list`):
--- asks again with `cursor` while the answer has a `nextCursor`, at most `max_pages` times.
---@param method string
---@param params table? the list's filters (without `cursor`)
---@param callback fun(err: cody.RpcError?, sessions: table[]?)
---@param max_pages integer? default 20
function Connection:request_all_sessions(method, params, callback, max_pages)
  local sessions = {}
  local function page(cursor, remaining)
    local page_params = vim.tbl_extend("force", params or {}, { cursor = cursor })
    self:request(method, next(page_params) and page_params or vim.empty_dict(), function(err, result)
      if err then
        callback(err, nil)
        return
      end
      vim.list_extend(sessions, result.sessions or {})
      if result.nextCursor and remaining > 1 then
        page(result.nextCursor, remaining - 1)
      else
        callback(nil, sessions)
      end
    end)
  end
  page(nil, max_pages or 20)
end

--- Sends a request and waits for its answer (only for `:checkhealth` and shutdown; chat
--- traffic is asynchronous so the UI never blocks).
---@param method string
---@param params table?
---@param timeout_ms integer
---@return cody.RpcError? err
---@return any result
function Connection:request_sync(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  self:request(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  local answered = vim.wait(timeout_ms, function()
    return done
  end, 10)
  if not answered then
    local message = ("no answer to %s within %d ms"):format(method, timeout_ms)
    return { code = ErrorCodes.InternalError, message = message }, nil
  end
  return err, result
end

---@param method string
---@param params table?
function Connection:notify(method, params)
  if not self.exited then
    self.client.notify(method, params)
  end
end

--- `shutdown` then `exit`, as in LSP; waits up to `timeout_ms` in all, then terminates the
--- process if it is still running.
---@param timeout_ms integer
function Connection:stop(timeout_ms)
  if self.exited or self.stopping then
    return
  end
  self.stopping = true
  local deadline = vim.uv.now() + timeout_ms
  self:request_sync("shutdown", nil, timeout_ms)
  self:notify("exit")
  vim.wait(math.max(deadline - vim.uv.now(), 0), function()
    return self.exited
  end, 10)
  if not self.exited then
    self.client.terminate()
  end
end

---@return boolean
function Connection:is_stopping()
  return self.stopping
end

return M

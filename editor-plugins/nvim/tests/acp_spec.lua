-- A CodeCompanion-style ACP session, driven through cody.nvim's own client (cody.rpc) with
-- the calls CodeCompanion makes (lua/codecompanion/acp/init.lua, Connection:connect):
-- initialize with fs capabilities, authenticate with the FIRST auth method (no
-- `auth_method` configured), session/new, config options chosen by ACP category
-- (`session_config_options = {model = ..., mode = ...}`), a prompt whose permission request
-- is answered by option id (as avante.nvim does), and tool call locations it can open.
local h = require("helpers")
local spec = h.spec()

local rpc = require("cody.rpc")

---@class AcpClient
---@field conn cody.Connection
---@field updates table[]
---@field permissions table[]
---@field answer_kind string

--- Starts the daemon and answers the requests an ACP editor answers.
---@return AcpClient
local function start()
  local conn = assert(rpc.start({ cmd = h.daemon_cmd(), cwd = h.workspace }))
  local client = { conn = conn, updates = {}, permissions = {}, answer_kind = "allow_always" }
  conn:on_notification("session/update", function(params)
    table.insert(client.updates, params.update)
  end)
  conn:on_request("session/request_permission", function(params)
    table.insert(client.permissions, params)
    for _, option in ipairs(params.options) do
      if option.kind == client.answer_kind then
        return { outcome = { outcome = "selected", optionId = option.optionId } }
      end
    end
    return { outcome = { outcome = "cancelled" } }
  end)
  -- CodeCompanion declares fs: the daemon may read and write through the editor.
  conn:on_request("fs/read_text_file", function(params)
    return { content = table.concat(vim.fn.readfile(params.path), "\n") }
  end)
  conn:on_request("fs/write_text_file", function(params)
    vim.fn.mkdir(vim.fs.dirname(params.path), "p")
    vim.fn.writefile(vim.split(params.content, "\n", { plain = true }), params.path)
    return vim.NIL
  end)
  return client
end

---@param client AcpClient
---@param method string
---@param params table?
---@return table
local function call(client, method, params)
  local err, result = client.conn:request_sync(method, params or vim.empty_dict(), h.TIMEOUT_MS)
  if err then
    error(("%s failed: %s"):format(method, vim.inspect(err)), 2)
  end
  return result
end

--- The final state of each tool call: its `tool_call` merged with its updates.
---@param updates table[]
---@return table<string, table>
local function tool_calls(updates)
  local calls = {}
  for _, update in ipairs(updates) do
    if update.sessionUpdate == "tool_call" then
      calls[update.toolCallId] = vim.deepcopy(update)
      calls[update.toolCallId].first_locations = update.locations
    elseif update.sessionUpdate == "tool_call_update" and calls[update.toolCallId] then
      calls[update.toolCallId] = vim.tbl_extend("force", calls[update.toolCallId], update)
    end
  end
  return calls
end

spec.test("config options by category, locations and permission ids work for CodeCompanion", function()
  local client = start()
  local ok, err = pcall(function()
    local init = call(client, "initialize", {
      protocolVersion = 1,
      clientCapabilities = { fs = { readTextFile = true, writeTextFile = true }, terminal = false },
      clientInfo = { name = "CodeCompanion.nvim", version = "1.0.0" },
    })
    h.truthy(#init.authMethods > 0, "auth methods are listed")
    -- No auth_method in the adapter: CodeCompanion authenticates with the first one.
    call(client, "authenticate", { methodId = init.authMethods[1].id })

    local new = call(client, "session/new", { cwd = h.workspace, mcpServers = {} })
    local sid = new.sessionId
    local by_category = {}
    for _, option in ipairs(new.configOptions) do
      if option.category and option.category:sub(1, 1) ~= "_" then
        by_category[option.category] = by_category[option.category] or {}
        table.insert(by_category[option.category], option)
      end
    end
    h.eq({ "mode", "model", "thought_level" }, vim.fn.sort(vim.tbl_keys(by_category)), "ACP categories")
    for category, options in pairs(by_category) do
      h.eq(1, #options, "exactly one option in category " .. category)
    end
    h.eq("model", by_category.model[1].id, "the model picker lists models, not providers")

    -- session_config_options = { model = <a listed model>, mode = "read-only" }, by category.
    local model = by_category.model[1]
    local set = call(client, "session/set_config_option", {
      sessionId = sid,
      configId = model.id,
      value = model.options[1].value,
    })
    local mode_id = by_category.mode[1].id
    set = call(client, "session/set_config_option", { sessionId = sid, configId = mode_id, value = "read-only" })
    local values = {}
    for _, option in ipairs(set.configOptions) do
      values[option.id] = option.currentValue
    end
    h.eq("read-only", values[mode_id])
    h.eq("read-only", values.sandbox_mode, "the mode set the sandbox")
    -- The `ask` mode (untrusted + workspace-write): a write in the workspace asks.
    call(client, "session/set_config_option", { sessionId = sid, configId = mode_id, value = "ask" })

    -- A write needs approval; answered by the option whose kind is allow_always.
    local result = call(client, "session/prompt", {
      sessionId = sid,
      prompt = { { type = "text", text = "write cc/notes.txt: hello from codecompanion" } },
    })
    h.eq("end_turn", result.stopReason)
    h.eq(1, #client.permissions, "one permission request")
    local request = client.permissions[1]
    for _, option in ipairs(request.options) do
      if option.optionId ~= "allow_project" then
        h.eq(option.kind, option.optionId, "option ids equal their kinds (avante decides by id)")
      else
        h.eq("allow_always", option.kind, "allow_project is a second allow_always")
      end
    end
    local target = vim.uv.fs_realpath(h.workspace) .. "/cc/notes.txt"
    h.eq({ { path = target } }, request.toolCall.locations, "the approval names the absolute file")
    h.eq({ "hello from codecompanion" }, vim.fn.readfile(h.workspace .. "/cc/notes.txt"))

    local calls = tool_calls(client.updates)
    local write = calls[request.toolCall.toolCallId]
    h.eq("completed", write.status)
    h.eq({ { path = target } }, write.first_locations, "tool_call locations")
    h.eq({ { path = target, line = 1 } }, write.locations, "final locations with the line")
    h.truthy(vim.startswith(write.locations[1].path, "/"), "absolute: no cwd to join")

    -- The allow_always answer is remembered: the same file is written again without asking.
    call(client, "session/prompt", {
      sessionId = sid,
      prompt = { { type = "text", text = "write cc/notes.txt: second" } },
    })
    h.eq(1, #client.permissions, "not asked again")
    h.eq({ "second" }, vim.fn.readfile(h.workspace .. "/cc/notes.txt"))

    call(client, "session/prompt", { sessionId = sid, prompt = { { type = "text", text = "read cc/notes.txt" } } })
    local read
    for _, c in pairs(tool_calls(client.updates)) do
      if c.kind == "read" then
        read = c
      end
    end
    h.eq({ { path = target, line = 1 } }, read.locations, "a read names the file and its first line")
  end)
  client.conn:stop(5000)
  vim.fn.delete(h.workspace .. "/cc", "rf")
  if not ok then
    error(err, 0)
  end
end)

return spec

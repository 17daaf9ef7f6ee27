-- Helpers shared by the specs: the test workspace, waiting, stubbing, assertions.
local M = {}

--- Generous liveness timeout for anything that waits on the daemon.
M.TIMEOUT_MS = 10000

---@type {tbl: table, key: any, value: any}[]
local stubs = {}

---@param text string
function M.out(text)
  io.stdout:write(text, "\n")
  io.stdout:flush()
end

--- The daemon command from $CODY_DAEMON_CMD (whitespace-separated words).
---@return string[]
function M.daemon_cmd()
  local cmd = os.getenv("CODY_DAEMON_CMD")
  assert(cmd and cmd ~= "", "CODY_DAEMON_CMD is not set (run tests/run.sh)")
  return vim.split(vim.trim(cmd), "%s+")
end

--- The plugin configuration every spec starts from.
---@return cody.UserConfig
function M.default_config()
  return { cmd = M.daemon_cmd(), shutdown_timeout_ms = 5000 }
end

--- A workspace with known files; Neovim's cwd (so the plugin's default `cwd`).
function M.setup_environment()
  local root = assert(os.getenv("CODY_TEST_ROOT"), "CODY_TEST_ROOT is not set (run tests/run.sh)")
  M.root = root
  M.workspace = root .. "/workspace"
  vim.fn.mkdir(M.workspace, "p")
  vim.fn.writefile({ "alpha" }, M.workspace .. "/alpha.txt")
  vim.fn.writefile({ "# beta" }, M.workspace .. "/beta.md")
  vim.cmd.cd(M.workspace)
  require("cody").setup(M.default_config())
end

--- The chat buffer's text.
---@return string
function M.chat()
  return require("cody.chat").text()
end

--- Waits for `cond`, failing with `what` (and the chat) after `timeout_ms`.
---@param cond fun(): any
---@param what string
---@param timeout_ms integer?
function M.wait(cond, what, timeout_ms)
  if not vim.wait(timeout_ms or M.TIMEOUT_MS, function()
    return cond() and true or false
  end, 20) then
    error(("timed out waiting for %s"):format(what), 2)
  end
end

--- Waits until the chat shows `text` (plain substring).
---@param text string
function M.wait_chat(text)
  M.wait(function()
    return M.chat():find(text, 1, true)
  end, ("%q in the chat"):format(text))
end

--- Waits for the running turn to finish.
function M.wait_turn()
  M.wait(function()
    return not require("cody").status().busy
  end, "the turn to end")
end

--- Replaces `tbl[key]` until the end of the test.
function M.stub(tbl, key, value)
  table.insert(stubs, { tbl = tbl, key = key, value = tbl[key] })
  tbl[key] = value
end

--- A `vim.ui.select` stub: records each call; `choose(items, opts)` returns the item to pick,
--- or nil to never answer (a dialog left open).
---@param choose fun(items: table[], opts: table): table?
---@return {items: table[], opts: table, labels: string[], on_choice: function, approval: table?}[] calls
function M.stub_select(choose)
  local calls = {}
  M.stub(vim.ui, "select", function(items, opts, on_choice)
    local labels = vim.tbl_map(function(item)
      return opts.format_item and opts.format_item(item) or tostring(item)
    end, items)
    local approval = require("cody.approval").current()
    local call = { items = items, opts = opts, labels = labels, on_choice = on_choice, approval = approval }
    if approval and approval.preview_win then
      -- What the user sees while deciding: the preview window and its contents.
      call.preview_valid = vim.api.nvim_win_is_valid(approval.preview_win)
      call.preview_lines = vim.api.nvim_buf_get_lines(approval.preview_buf, 0, -1, false)
      call.preview_filetype = vim.bo[approval.preview_buf].filetype
      local title = vim.api.nvim_win_get_config(approval.preview_win).title or {}
      call.preview_title = table.concat(vim.tbl_map(function(chunk)
        return chunk[1]
      end, title))
    end
    table.insert(calls, call)
    local pick = choose(items, opts)
    if pick ~= nil then
      -- Answer later, like a real picker does.
      vim.schedule(function()
        on_choice(pick)
      end)
    end
  end)
  return calls
end

--- Picks the select item with this label.
---@param label string
---@return fun(items: table[], opts: table): table
function M.pick(label)
  return function(items, opts)
    for _, item in ipairs(items) do
      if (opts.format_item and opts.format_item(item) or item) == label then
        return item
      end
    end
    error("no select item labelled " .. label)
  end
end

--- Records `vim.notify` calls (and still prints errors to the test log).
---@return {msg: string, level: integer}[]
function M.capture_notify()
  local notes = {}
  M.stub(vim, "notify", function(msg, level)
    table.insert(notes, { msg = msg, level = level })
  end)
  return notes
end

--- Records the `User <pattern>` autocommands fired during the test.
---@param pattern string
---@return table[] data of each event
function M.capture_event(pattern)
  local events = {}
  local id = vim.api.nvim_create_autocmd("User", {
    pattern = pattern,
    callback = function(ev)
      table.insert(events, ev.data)
    end,
  })
  table.insert(stubs, { autocmd = id })
  return events
end

--- Runs after every test: restores stubs, ends a turn left running.
function M.after_each()
  for i = #stubs, 1, -1 do
    local stub = stubs[i]
    if stub.autocmd then
      pcall(vim.api.nvim_del_autocmd, stub.autocmd)
    else
      stub.tbl[stub.key] = stub.value
    end
  end
  stubs = {}
  local cody = require("cody")
  if cody.status().busy then
    cody.cancel()
    M.wait_turn()
  end
end

---@param haystack string
---@param needle string
---@param what string?
function M.contains(haystack, needle, what)
  if not haystack:find(needle, 1, true) then
    error(("%sexpected to find %q in:\n%s"):format(what and (what .. ": ") or "", needle, haystack), 2)
  end
end

---@param haystack string
---@param needle string
---@param what string?
function M.not_contains(haystack, needle, what)
  if haystack:find(needle, 1, true) then
    error(("%sdid not expect %q in:\n%s"):format(what and (what .. ": ") or "", needle, haystack), 2)
  end
end

function M.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(
      ("%sexpected %s, got %s"):format(what and (what .. ": ") or "", vim.inspect(expected), vim.inspect(actual)),
      2
    )
  end
end

function M.truthy(value, what)
  if not value then
    error(("expected %s"):format(what or "a true value"), 2)
  end
end

--- Number of plain occurrences of `needle` in `haystack`.
function M.count(haystack, needle)
  local n, start = 0, 1
  while true do
    local s, e = haystack:find(needle, start, true)
    if not s then
      return n
    end
    n, start = n + 1, e + 1
  end
end

--- A spec: an ordered list of named cases.
function M.spec()
  local spec = { cases = {} }
  function spec.test(name, run)
    table.insert(spec.cases, { name = name, run = run })
  end
  return spec
end

--- Starts every test from a new session and an empty chat.
function M.new_session()
  vim.cmd("CodyNew")
end

return M

--- Approvals: the `session/request_permission` handler.
---
--- The request's details (the command and its cwd, or the diff of an edit) are shown in a
--- floating window, and the choice is asked with `vim.ui.select`. The handler runs inside the
--- coroutine `vim.lsp.rpc` gives server requests (Neovim >= 0.10): it yields while the dialog
--- is open and is resumed with the answer. Neovim's dispatcher never sees JSON-RPC ids, so the
--- daemon repeats the id in `_meta.cody.requestId`; when the daemon withdraws the request with
--- `$/cancelRequest {id}` (turn cancelled, approval timed out), the dialog is closed and the
--- request is left unanswered, as the daemon expects.
---
--- What the request says (title, command, diff, paths, option names) is made inert
--- (cody.inert) before anything shows it: a floating window's title reaches the terminal raw,
--- and a newline in a picker's prompt or item would make a line of its own.
local inert = require("cody.inert")

local M = {}

---@class cody.ApprovalItem
---@field label string What the user sees in the select.
---@field option_id string? The daemon's optionId; nil for "Cancel the turn".

---@class cody.PendingApproval
---@field request_id string|integer
---@field session_id string?
---@field title string
---@field prompt string The one-line prompt given to `vim.ui.select`.
---@field details string[] The full request content shown in the preview window.
---@field preview_win integer? The preview window, while open.
---@field preview_buf integer?
---@field known_wins table<integer, true> Windows that existed before the dialog opened.
---@field done boolean

---@type table<string, cody.PendingApproval>
local pending = {}

local CANCEL_LABEL = "Cancel the turn"

--- Options the daemon normally sends; used only if a request comes without options.
local DEFAULT_OPTIONS = {
  { optionId = "allow_once", name = "Allow once" },
  { optionId = "allow_always", name = "Allow for this session" },
  { optionId = "reject_once", name = "Reject" },
  { optionId = "reject_always", name = "Reject for this session" },
}

--- Dismissing the dialog (<Esc>) is answered like "Reject": the tool does not run, the turn
--- goes on. "Cancel the turn" is the explicit way to stop.
local DISMISS_OPTION = "reject_once"

---@param id string|integer|nil
---@return string?
local function key(id)
  return id ~= nil and tostring(id) or nil
end

---@param text string
---@return string[]
local function split_lines(text)
  return vim.tbl_map(inert.line, vim.split(text, "\n", { plain = true }))
end

--- A unified diff of an ACP `diff` content block.
---@param block {path: string, oldText: string?, newText: string?}
---@return string[]
local function diff_lines(block)
  local old, new = block.oldText or "", block.newText or ""
  local function with_eol(s)
    return (s == "" or s:sub(-1) == "\n") and s or (s .. "\n")
  end
  local diff = (vim.text and vim.text.diff or vim.diff)(with_eol(old), with_eol(new), { result_type = "unified" })
  local path = inert.line(block.path)
  local lines = {
    ("--- %s"):format(block.oldText and path or "/dev/null"),
    ("+++ %s"):format(path),
  }
  vim.list_extend(lines, split_lines(tostring(diff):gsub("\n$", "")))
  return lines
end

--- The request content as readable lines, plus whether it contains a diff.
---@param content table[]?
---@return string[] lines
---@return boolean has_diff
---@return string[] paths edited files
local function render_content(content)
  local lines, has_diff, paths = {}, false, {}
  for _, block in ipairs(content or {}) do
    if #lines > 0 then
      table.insert(lines, "")
    end
    if block.type == "diff" then
      has_diff = true
      table.insert(paths, inert.line(block.path))
      vim.list_extend(lines, diff_lines(block))
    elseif block.type == "content" and type(block.content) == "table" and block.content.type == "text" then
      vim.list_extend(lines, split_lines(block.content.text or ""))
    end
  end
  return lines, has_diff, paths
end

--- One line for `vim.ui.select` (several pickers do not show multi-line prompts).
---@param tool_call table
---@param details string[]
---@param has_diff boolean
---@param paths string[]
---@return string
local function one_line_prompt(tool_call, details, has_diff, paths)
  local title = inert.line(tool_call.title or "a tool call")
  if has_diff then
    local adds, dels = 0, 0
    for _, line in ipairs(details) do
      if line:match("^%+") and not line:match("^%+%+%+ ") then
        adds = adds + 1
      elseif line:match("^%-") and not line:match("^%-%-%- ") then
        dels = dels + 1
      end
    end
    return ("Cody wants to edit %s (+%d -%d, diff shown above). Allow?"):format(table.concat(paths, ", "), adds, dels)
  end
  local text = vim.tbl_filter(function(line)
    return line ~= ""
  end, details)
  if #text == 0 then
    return ("Cody wants to use %s. Allow?"):format(title)
  end
  return ("Cody wants to run: %s. Allow?"):format(table.concat(text, " · "))
end

---@param approval cody.PendingApproval
---@param has_diff boolean
local function open_preview(approval, has_diff)
  local lines = vim.list_extend({}, approval.details)
  if #lines == 0 then
    lines = { approval.title }
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  if has_diff then
    vim.bo[buf].filetype = "diff"
  end

  local widest = 20
  for _, line in ipairs(lines) do
    widest = math.max(widest, vim.fn.strdisplaywidth(line))
  end
  local width = math.min(widest + 2, math.max(vim.o.columns - 4, 20))
  -- Leave the bottom of the screen to the select prompt.
  local height = math.min(#lines, math.max(math.floor(vim.o.lines * 0.5), 3))
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, {
    relative = "editor",
    row = 1,
    col = math.max(math.floor((vim.o.columns - width) / 2), 0),
    width = width,
    height = height,
    style = "minimal",
    border = "rounded",
    title = (" Cody: %s "):format(approval.title),
    title_pos = "center",
    zindex = 60,
  })
  if ok then
    vim.wo[win].wrap = false
    approval.preview_win = win
  end
  approval.preview_buf = buf
end

---@param approval cody.PendingApproval
local function close_preview(approval)
  if approval.preview_win and vim.api.nvim_win_is_valid(approval.preview_win) then
    vim.api.nvim_win_close(approval.preview_win, true)
  end
  if approval.preview_buf and vim.api.nvim_buf_is_valid(approval.preview_buf) then
    vim.api.nvim_buf_delete(approval.preview_buf, { force = true })
  end
  approval.preview_win, approval.preview_buf = nil, nil
end

--- Closes floating windows a picker opened for this dialog (telescope, fzf-lua, snacks...).
--- `vim.ui.select` has no close API; this is the closest generic equivalent.
---@param approval cody.PendingApproval
local function close_picker_windows(approval)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if not approval.known_wins[win] and win ~= approval.preview_win and vim.api.nvim_win_is_valid(win) then
      local win_config = vim.api.nvim_win_get_config(win)
      -- Focusable floats only: leave notification popups and the like alone.
      if win_config.relative ~= "" and win_config.focusable ~= false then
        if win == vim.api.nvim_get_current_win() then
          vim.cmd.stopinsert()
        end
        pcall(vim.api.nvim_win_close, win, true)
      end
    end
  end
end

---@param approval cody.PendingApproval
---@param event string
---@param reason string
local function fire(approval, event, reason)
  vim.api.nvim_exec_autocmds("User", {
    pattern = event,
    modeline = false,
    data = { requestId = approval.request_id, sessionId = approval.session_id, title = approval.title, reason = reason },
  })
end

--- Handles `session/request_permission`. Must run inside the server-request coroutine; returns
--- the JSON-RPC result.
---@param params table
---@return table? result
---@return lsp.ResponseError? err
function M.request(params)
  local co = coroutine.running()
  local tool_call = params.toolCall or {}
  local request_id = vim.tbl_get(params, "_meta", "cody", "requestId")
  local details, has_diff, paths = render_content(tool_call.content)

  ---@type cody.PendingApproval
  local approval = {
    request_id = request_id,
    session_id = params.sessionId,
    title = inert.line(tool_call.title or "tool call"),
    prompt = one_line_prompt(tool_call, details, has_diff, paths),
    details = details,
    known_wins = {},
    done = false,
  }
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    approval.known_wins[win] = true
  end
  if key(request_id) then
    pending[key(request_id)] = approval
  end

  ---@type cody.ApprovalItem[]
  local items = {}
  local options = params.options and #params.options > 0 and params.options or DEFAULT_OPTIONS
  for _, option in ipairs(options) do
    table.insert(items, { label = inert.line(option.name or option.optionId), option_id = option.optionId })
  end
  table.insert(items, { label = CANCEL_LABEL })

  local answer ---@type table?
  local suspended = false
  ---@param result table
  local function finish(result)
    if approval.done then
      return
    end
    approval.done = true
    close_preview(approval)
    if key(request_id) then
      pending[key(request_id)] = nil
    end
    if suspended then
      -- Resume from the main loop, not from inside the picker's callback.
      vim.schedule(function()
        local ok, err = coroutine.resume(co, result)
        if not ok then
          vim.notify("Cody: could not answer the approval request: " .. tostring(err), vim.log.levels.ERROR)
        end
      end)
    else
      answer = result
    end
  end

  require("cody").notify_user(("needs your approval: %s"):format(approval.title))
  open_preview(approval, has_diff)
  vim.cmd.redraw() -- the built-in select blocks; draw the preview first
  local ok, err = pcall(vim.ui.select, items, {
    prompt = approval.prompt,
    kind = "cody.approval",
    format_item = function(item)
      return item.label
    end,
  }, function(choice)
    if not choice then
      finish({ outcome = { outcome = "selected", optionId = DISMISS_OPTION } })
    elseif choice.option_id then
      finish({ outcome = { outcome = "selected", optionId = choice.option_id } })
    else
      finish({ outcome = { outcome = "cancelled" } })
    end
  end)
  if not ok then
    vim.notify("Cody: vim.ui.select failed, the request is rejected: " .. tostring(err), vim.log.levels.ERROR)
    finish({ outcome = { outcome = "selected", optionId = DISMISS_OPTION } })
  end

  if answer == nil then
    if not co then
      -- Neovim < 0.10 answers server requests synchronously; nothing to wait in.
      finish({ outcome = { outcome = "selected", optionId = DISMISS_OPTION } })
    else
      suspended = true
      answer = coroutine.yield()
    end
  end
  return answer
end

--- Closes the dialog of a request the daemon withdrew (`$/cancelRequest`). The request stays
--- unanswered. Returns whether a dialog was open for that id.
---@param request_id string|integer|nil
---@param reason string? What withdrew it (for the `User CodyApprovalClosed` event).
---@return boolean
function M.cancel(request_id, reason)
  local approval = key(request_id) and pending[key(request_id)]
  if not approval or approval.done then
    return false
  end
  approval.done = true -- a late answer from the picker is ignored
  pending[key(request_id)] = nil
  close_preview(approval)
  close_picker_windows(approval)
  fire(approval, "CodyApprovalClosed", reason or "$/cancelRequest")
  vim.notify(("Cody: approval for %q withdrawn by the daemon"):format(approval.title), vim.log.levels.INFO)
  return true
end

--- Closes every open dialog (the daemon exited).
---@param reason string
function M.cancel_all(reason)
  for _, id in ipairs(vim.tbl_keys(pending)) do
    M.cancel(id, reason)
  end
end

--- The open approval dialog, if any (for statuslines and tests).
---@return {request_id: string|integer, title: string, prompt: string, details: string[], preview_win: integer?, preview_buf: integer?}?
function M.current()
  local _, approval = next(pending)
  if not approval then
    return nil
  end
  return {
    request_id = approval.request_id,
    title = approval.title,
    prompt = approval.prompt,
    details = approval.details,
    preview_win = approval.preview_win,
    preview_buf = approval.preview_buf,
  }
end

return M

--- The chat buffer (`cody://chat`): a markdown scratch buffer that shows the conversation as
--- it streams. Text chunks are appended to the last line; thoughts are dimmed (highlight group
--- `CodyThought`, linked to `Comment`); each tool call is one `▸ title [kind]` line, followed by
--- `✓`/`✗` and a short preview of its result once it completes or fails; a status line closes
--- every turn.
---
--- Every character that reaches the buffer goes through `append` or `set_lines`, which make
--- it inert first (cody.inert): a title or a plan entry stays one line, a control character
--- is shown, never acted on.
local config = require("cody.config")
local inert = require("cody.inert")

local M = {}

M.namespace = vim.api.nvim_create_namespace("cody.chat")
M.name = "cody://chat"

local MAX_PREVIEW_LINES = 3
local MAX_PREVIEW_WIDTH = 100

--- Blocks written by the agent; the first one of a reply gets a `## Cody` header.
local AGENT_BLOCKS = { message = true, thought = true, tool = true, plan = true }

---@class cody.ToolCallView
---@field mark integer Extmark on the `▸` line (it follows the line when text moves).
---@field done boolean
---@field tail integer? Extmark on the last line nested under it (a child session's activity):
--- its result goes after that.

---@class cody.ChatState
---@field buf integer?
---@field block string? Kind of the block at the end of the buffer.
---@field speaker "user"|"agent"|nil Who wrote the last section.
---@field tools table<string, cody.ToolCallView>
---@field thought_mark integer? Highlight extmark of the thought block being streamed.
---@field plan_mark integer? Start of the plan block, while it is the last block.
---@field children table<string, {agent: string?, titles: table<string, string>, call: string?}>? Child sessions seen.

---@type cody.ChatState
local state = { tools = {} }

local function define_highlights()
  local links = {
    CodyThought = "Comment",
    CodyHeader = "Title",
    CodyToolCall = "Function",
    CodyToolOk = "DiagnosticOk",
    CodyToolFailed = "DiagnosticError",
    CodyStatus = "Comment",
    CodyError = "DiagnosticError",
    CodyWarning = "DiagnosticWarn",
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

local group = vim.api.nvim_create_augroup("cody.chat", { clear = true })
vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = define_highlights })
define_highlights()

---@param buf integer
local function set_keymaps(buf)
  local keys = config.options.keymaps
  local function map(lhs, rhs, desc)
    if lhs then
      vim.keymap.set("n", lhs, rhs, { buffer = buf, nowait = true, silent = true, desc = desc })
    end
  end
  map(keys.prompt, function()
    require("cody").ask()
  end, "Cody: send a prompt")
  map(keys.cancel, function()
    require("cody").cancel()
  end, "Cody: cancel the turn")
  map(keys.close, function()
    if not pcall(vim.api.nvim_win_close, 0, false) then
      vim.notify("Cody: this is the last window", vim.log.levels.WARN)
    end
  end, "Cody: close the chat window")
end

---@return integer
local function create_buf()
  local buf = vim.api.nvim_create_buf(false, true) -- unlisted scratch: nofile, hidden, no swap
  if not pcall(vim.api.nvim_buf_set_name, buf, M.name) then
    -- A stale buffer with that name (e.g. after reloading the module): replace it.
    local stale = vim.fn.bufnr("^" .. M.name .. "$")
    if stale > 0 then
      vim.api.nvim_buf_delete(stale, { force = true })
    end
    vim.api.nvim_buf_set_name(buf, M.name)
  end
  vim.bo[buf].filetype = "markdown"
  -- Vim's markdown syntax paints an underscore inside a word (`end_turn`, `file_name`) as
  -- an error; in a chat that is just text.
  vim.api.nvim_buf_call(buf, function()
    vim.cmd([[silent! syntax match markdownCodyWordUnderscore "\w\@<=_\w\@="]])
  end)
  vim.bo[buf].modifiable = false
  set_keymaps(buf)
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = buf,
    callback = function()
      state = { tools = {} }
    end,
  })
  -- `:edit!` in the chat would reload a scratch buffer as empty: the transcript (text and
  -- marks, whose ids the tool calls keep) is put back instead.
  local saved ---@type {lines: string[], marks: table[]}?
  vim.api.nvim_create_autocmd("BufUnload", {
    group = group,
    buffer = buf,
    callback = function()
      saved = {
        lines = vim.api.nvim_buf_get_lines(buf, 0, -1, true),
        marks = vim.api.nvim_buf_get_extmarks(buf, M.namespace, 0, -1, { details = true }),
      }
    end,
  })
  vim.api.nvim_create_autocmd("BufReadCmd", {
    group = group,
    buffer = buf,
    callback = function()
      if not saved then
        return
      end
      local restore = saved
      saved = nil
      vim.bo[buf].modifiable = true
      vim.api.nvim_buf_set_lines(buf, 0, -1, true, restore.lines)
      for _, mark in ipairs(restore.marks) do
        local id, row, col, details = mark[1], mark[2], mark[3], mark[4]
        pcall(vim.api.nvim_buf_set_extmark, buf, M.namespace, row, col, {
          id = id,
          end_row = details.end_row,
          end_col = details.end_col,
          hl_group = details.hl_group,
          hl_eol = details.hl_eol,
          line_hl_group = details.line_hl_group,
        })
      end
      vim.bo[buf].modifiable = false
      vim.bo[buf].modified = false
    end,
  })
  state = { buf = buf, tools = {} }
  return buf
end

--- The chat buffer, created on first use.
---@return integer
function M.buf()
  if state.buf and vim.api.nvim_buf_is_valid(state.buf) then
    return state.buf
  end
  return create_buf()
end

--- Shows the chat buffer in a window of the current tab page (a split, per
--- `chat.position`) and returns that window.
---@param opts {focus: boolean?}?
---@return integer win
function M.open(opts)
  local focus = not opts or opts.focus ~= false
  local buf = M.buf()
  local win = vim.iter(vim.api.nvim_tabpage_list_wins(0)):find(function(w)
    return vim.api.nvim_win_get_buf(w) == buf
  end)
  if not win then
    local previous = vim.api.nvim_get_current_win()
    local chat = config.options.chat
    local modifiers = {
      right = "botright vertical",
      left = "topleft vertical",
      below = "botright",
      above = "topleft",
      tab = "tab",
    }
    vim.cmd(("%s sbuffer %d"):format(modifiers[chat.position] or modifiers.right, buf))
    win = vim.api.nvim_get_current_win()
    local vertical = chat.position == "right" or chat.position == "left"
    local total = vertical and vim.o.columns or vim.o.lines
    local size = chat.size < 1 and math.floor(total * chat.size) or chat.size
    if chat.position ~= "tab" and size > 0 then
      if vertical then
        vim.api.nvim_win_set_width(win, size)
      else
        vim.api.nvim_win_set_height(win, size)
      end
    end
    vim.wo[win][0].wrap = true
    vim.wo[win][0].linebreak = true
    vim.wo[win][0].number = false
    vim.wo[win][0].relativenumber = false
    vim.wo[win][0].signcolumn = "no"
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
    if not focus then
      vim.api.nvim_set_current_win(previous)
    end
  elseif focus then
    vim.api.nvim_set_current_win(win)
  end
  return win
end

-- Writing ------------------------------------------------------------------------------------

--- Runs `fn` with the buffer modifiable, then keeps the windows that were at the end of the
--- chat (or are not focused) scrolled to the end.
---@param fn fun(buf: integer)
local function write(fn)
  local buf = M.buf()
  local line_count = vim.api.nvim_buf_line_count(buf)
  local current = vim.api.nvim_get_current_win()
  local followers = vim.tbl_filter(function(win)
    return win ~= current or vim.api.nvim_win_get_cursor(win)[1] >= line_count
  end, vim.fn.win_findbuf(buf))

  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn, buf)
  vim.bo[buf].modifiable = false
  if not ok then
    error(err, 0)
  end

  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(followers) do
    vim.api.nvim_win_set_cursor(win, { last, 0 })
  end
end

---@param buf integer
---@return integer row 0-based
---@return string line
local function last_line(buf)
  local row = vim.api.nvim_buf_line_count(buf) - 1
  return row, vim.api.nvim_buf_get_lines(buf, row, row + 1, true)[1]
end

--- Appends text at the end of the last line; newlines start new lines.
---@param buf integer
---@param text string
local function append(buf, text)
  local row, line = last_line(buf)
  vim.api.nvim_buf_set_text(buf, row, #line, row, #line, inert.lines(text))
end

--- Replaces lines `start` to `end_` with `lines`, each made one inert line; returns them.
---@param buf integer
---@param start integer
---@param end_ integer
---@param lines string[]
---@return string[]
local function set_lines(buf, start, end_, lines)
  local shown = vim.tbl_map(inert.line, lines)
  vim.api.nvim_buf_set_lines(buf, start, end_, true, shown)
  return shown
end

--- Makes the last line an empty line that follows a blank line (or the start of the buffer).
---@param buf integer
local function new_paragraph(buf)
  local row, line = last_line(buf)
  if line ~= "" then
    vim.api.nvim_buf_set_lines(buf, -1, -1, true, { "", "" })
  elseif row > 0 and vim.api.nvim_buf_get_lines(buf, row - 1, row, true)[1] ~= "" then
    vim.api.nvim_buf_set_lines(buf, -1, -1, true, { "" })
  end
end

--- Makes the last line empty (without a blank line before it).
---@param buf integer
local function new_line(buf)
  local _, line = last_line(buf)
  if line ~= "" then
    vim.api.nvim_buf_set_lines(buf, -1, -1, true, { "" })
  end
end

---@param buf integer
---@param row integer
---@param hl string
local function highlight_line(buf, row, hl)
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, true)[1]
  return vim.api.nvim_buf_set_extmark(buf, M.namespace, row, 0, { end_row = row, end_col = #line, hl_group = hl })
end

--- Starts a block of `kind` at the end of the buffer unless one is already being written.
---@param buf integer
---@param kind string
local function begin(buf, kind)
  local continues = state.block == kind and kind ~= "tool" and kind ~= "status" and kind ~= "error"
  if continues then
    return
  end
  state.thought_mark = nil
  state.plan_mark = nil
  if AGENT_BLOCKS[kind] and state.speaker ~= "agent" then
    new_paragraph(buf)
    append(buf, "## Cody")
    highlight_line(buf, (last_line(buf)), "CodyHeader")
    state.speaker = "agent"
    state.block = "header"
  end
  if kind == "tool" and state.block == "tool" then
    new_line(buf)
  else
    new_paragraph(buf)
  end
  state.block = kind
end

-- Rendering the protocol ---------------------------------------------------------------------

--- Shows a user message (a prompt being sent, or one replayed by `session/load`).
---@param text string
function M.user(text)
  write(function(buf)
    if state.block ~= "user" then
      new_paragraph(buf)
      append(buf, "## You")
      highlight_line(buf, (last_line(buf)), "CodyHeader")
      new_paragraph(buf)
      state.block, state.speaker = "user", "user"
    end
    append(buf, text)
  end)
end

---@param text string
function M.message(text)
  write(function(buf)
    begin(buf, "message")
    append(buf, text)
  end)
end

---@param text string
function M.thought(text)
  if not config.options.chat.show_thoughts then
    return
  end
  write(function(buf)
    begin(buf, "thought")
    local start_row = last_line(buf)
    if state.thought_mark then
      start_row = vim.api.nvim_buf_get_extmark_by_id(buf, M.namespace, state.thought_mark, {})[1]
    end
    append(buf, text)
    local row, line = last_line(buf)
    state.thought_mark = vim.api.nvim_buf_set_extmark(buf, M.namespace, start_row, 0, {
      id = state.thought_mark,
      end_row = row,
      end_col = #line,
      hl_group = "CodyThought",
      hl_eol = true,
    })
  end)
end

---@param block table ACP `diff` content
---@return string
local function diffstat(block)
  local function with_eol(text)
    return (text == "" or text:sub(-1) == "\n") and text or (text .. "\n")
  end
  local diff = vim.text and vim.text.diff or vim.diff
  ---@type integer[][]
  local hunks = diff(with_eol(block.oldText or ""), with_eol(block.newText or ""), { result_type = "indices" })
  local added, removed = 0, 0
  for _, hunk in ipairs(hunks) do
    removed, added = removed + hunk[2], added + hunk[4]
  end
  return ("%s%s (+%d -%d)"):format(inert.line(block.path), block.oldText and "" or " (new file)", added, removed)
end

--- A few lines summing up a finished tool call.
---@param update table `tool_call` or `tool_call_update`
---@return string[]
local function tool_preview(update)
  local parts = {}
  for _, block in ipairs(update.content or {}) do
    if block.type == "content" and type(block.content) == "table" and block.content.type == "text" then
      table.insert(parts, block.content.text)
    elseif block.type == "diff" then
      table.insert(parts, diffstat(block))
    end
  end
  local text = table.concat(parts, "\n")
  if text == "" and type(update.rawOutput) == "table" and type(update.rawOutput.output) == "string" then
    text = update.rawOutput.output
  end
  -- Replays carry what the model saw: {"error": "..."} for calls that did not run, and a
  -- header before a command's output.
  local ok, decoded = pcall(vim.json.decode, text)
  if ok and type(decoded) == "table" and type(decoded.error) == "string" then
    text = decoded.error
  end
  local exit_code = type(update.rawOutput) == "table" and tonumber(update.rawOutput.exitCode) or nil
  local code, output = text:match("^Exit code: (%-?%d+)\nWall time: [^\n]*\nOutput:\n?(.*)$")
  if code then
    text, exit_code = output, exit_code or tonumber(code)
  end
  text = vim.trim(text)
  local lines = text ~= "" and vim.split(text, "\n", { plain = true }) or {}
  if exit_code and exit_code ~= 0 then
    table.insert(lines, 1, ("exit code %d"):format(exit_code))
  end
  local preview = {}
  for i = 1, math.min(#lines, MAX_PREVIEW_LINES) do
    local line = lines[i]
    if vim.fn.strchars(line) > MAX_PREVIEW_WIDTH then
      line = vim.fn.strcharpart(line, 0, MAX_PREVIEW_WIDTH - 1) .. "…"
    end
    table.insert(preview, line)
  end
  if #lines > MAX_PREVIEW_LINES then
    table.insert(preview, ("… (%d more lines)"):format(#lines - MAX_PREVIEW_LINES))
  end
  return preview
end

---@param buf integer
---@param view cody.ToolCallView
---@param update table
local function show_tool_result(buf, view, update)
  view.done = true
  local ok = update.status == "completed"
  local preview = tool_preview(update)
  local lines = {}
  for i, line in ipairs(preview) do
    table.insert(lines, (i == 1 and ("  %s "):format(ok and "✓" or "✗") or "    ") .. line)
  end
  if #lines == 0 then
    lines = { ok and "  ✓ done" or "  ✗ failed" }
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(buf, M.namespace, view.tail or view.mark, {})[1]
  lines = set_lines(buf, row + 1, row + 1, lines)
  vim.api.nvim_buf_set_extmark(buf, M.namespace, row + 1, 0, {
    end_row = row + #lines,
    end_col = #lines[#lines],
    hl_group = ok and "CodyToolOk" or "CodyToolFailed",
  })
end

--- `tool_call`: one line per call; a call replayed with its final status also gets its result.
---@param update table
function M.tool_call(update)
  write(function(buf)
    local view = state.tools[update.toolCallId]
    if not view then
      begin(buf, "tool")
      local title, kind = inert.line(update.title or update.toolCallId), inert.line(update.kind or "other")
      append(buf, ("▸ %s [%s]"):format(title, kind))
      view = { mark = highlight_line(buf, (last_line(buf)), "CodyToolCall"), done = false }
      state.tools[update.toolCallId] = view
    end
    if not view.done and (update.status == "completed" or update.status == "failed") then
      show_tool_result(buf, view, update)
    end
  end)
end

--- `tool_call_update`: adds the result under the call's line once it completes or fails.
---@param update table
function M.tool_call_update(update)
  if not state.tools[update.toolCallId] then
    M.tool_call(update)
    return
  end
  local view = state.tools[update.toolCallId]
  if view.done or (update.status ~= "completed" and update.status ~= "failed") then
    return
  end
  write(function(buf)
    show_tool_result(buf, view, update)
  end)
end

--- Appends one dimmed line of a child's activity; while its `task` call has no result yet,
--- the result will go after it.
---@param call_id string?
---@param text string
local function nested_line(call_id, text)
  write(function(buf)
    begin(buf, "tool")
    append(buf, inert.line(text))
    local row = last_line(buf)
    local mark = highlight_line(buf, row, "CodyStatus")
    local view = call_id and state.tools[call_id]
    if view and not view.done then
      view.tail = mark
    end
  end)
end

--- A line under the parent's `task` call when it started a child session (a subagent):
--- `↳ explore · session <id>`.
---@param call_id string the `task` call
---@param meta table `_meta.cody` of its `tool_call_update`: childSessionId, agent
function M.child_started(call_id, meta)
  state.children = state.children or {}
  state.children[meta.childSessionId or ""] = { agent = meta.agent, titles = {}, call = call_id }
  nested_line(call_id, ("  ↳ %s · session %s"):format(meta.agent or "subagent", meta.childSessionId or "?"))
end

--- What a child session of the shown one does, one indented line per tool call it makes
--- (`│ explore: ▸ Read src/app.py`, `│ explore: ✗ ...` when one fails); its answer is the
--- parent's `task` call's result.
---@param session_id string the child's
---@param update table its `session/update`'s `update`
---@param meta table its `_meta.cody`: parentSessionId, parentToolCallId, agent
function M.child_update(session_id, update, meta)
  state.children = state.children or {}
  local child = state.children[session_id] or { agent = meta.agent, titles = {} }
  state.children[session_id] = child
  local text
  if update.sessionUpdate == "tool_call" then
    child.titles[update.toolCallId or ""] = update.title
    text = "▸ " .. (update.title or update.toolCallId or "a tool call")
  elseif update.sessionUpdate == "tool_call_update" and update.status == "failed" then
    text = "✗ " .. (child.titles[update.toolCallId or ""] or update.toolCallId or "a tool call")
  else
    return
  end
  nested_line(child.call or meta.parentToolCallId, ("  │ %s: %s"):format(child.agent or "subagent", text))
end

--- `plan`: a checklist, rewritten in place while it is the last thing in the chat.
---@param entries {content: string, status: string}[]
function M.plan(entries)
  local marks = { completed = "[x]", in_progress = "[~]", pending = "[ ]" }
  local lines = { "Plan:" }
  for _, entry in ipairs(entries or {}) do
    table.insert(lines, ("- %s %s"):format(marks[entry.status] or "[ ]", entry.content))
  end
  write(function(buf)
    if state.block == "plan" and state.plan_mark then
      local row = vim.api.nvim_buf_get_extmark_by_id(buf, M.namespace, state.plan_mark, {})[1]
      set_lines(buf, row, -1, lines)
    else
      begin(buf, "plan")
      local row = last_line(buf)
      set_lines(buf, row, row + 1, lines)
      state.plan_mark = vim.api.nvim_buf_set_extmark(buf, M.namespace, row, 0, {})
    end
  end)
end

---@param usage table? `{inputTokens, outputTokens, totalTokens, thoughtTokens, ...}`
---@return string?
local function format_usage(usage)
  if type(usage) ~= "table" or not usage.totalTokens then
    return nil
  end
  local text = ("%d tokens (in %d, out %d"):format(usage.totalTokens, usage.inputTokens or 0, usage.outputTokens or 0)
  if (usage.thoughtTokens or 0) > 0 then
    text = text .. (", reasoning %d"):format(usage.thoughtTokens)
  end
  if (usage.cachedReadTokens or 0) > 0 then
    text = text .. (", cached %d"):format(usage.cachedReadTokens)
  end
  return text .. ")"
end

--- A dimmed line such as `— end_turn · 459 tokens (in 416, out 43) · session 1032 tokens —`.
---@param text string
---@param hl string?
local function status_line(text, hl)
  write(function(buf)
    begin(buf, "status")
    append(buf, text)
    highlight_line(buf, (last_line(buf)), hl or "CodyStatus")
    state.speaker = nil
  end)
end

--- Closes a turn with its stop reason and token usage (`_meta.cody.usage`).
---@param result table `session/prompt` result
function M.turn_end(result)
  local usage = vim.tbl_get(result or {}, "_meta", "cody", "usage") or {}
  local parts = { result and result.stopReason or "unknown" }
  local turn = format_usage(usage.turn or usage.last)
  if turn then
    table.insert(parts, turn)
  end
  if type(usage.total) == "table" and usage.total.totalTokens then
    table.insert(parts, ("session %d tokens"):format(usage.total.totalTokens))
  end
  status_line("— " .. table.concat(parts, " · ") .. " —")
end

--- A dimmed one-line note (e.g. "resumed session ...").
---@param text string
function M.note(text)
  status_line("— " .. text .. " —")
end

--- A warning from the daemon (e.g. configuration it ignored), on a line of its own.
---@param message string
function M.warning(message)
  write(function(buf)
    begin(buf, "error")
    append(buf, "⚠ " .. message)
    local row = last_line(buf)
    vim.api.nvim_buf_set_extmark(buf, M.namespace, row, 0, { line_hl_group = "CodyWarning" })
    state.speaker = nil
  end)
end

---@param message string
function M.error(message)
  write(function(buf)
    begin(buf, "error")
    append(buf, "✗ " .. message)
    local row = last_line(buf)
    vim.api.nvim_buf_set_extmark(buf, M.namespace, row, 0, { line_hl_group = "CodyError" })
    state.speaker = nil
  end)
end

--- Empties the chat (a new or resumed session starts on a clean page).
function M.clear()
  write(function(buf)
    vim.api.nvim_buf_clear_namespace(buf, M.namespace, 0, -1)
    vim.api.nvim_buf_set_lines(buf, 0, -1, true, {})
  end)
  state = { buf = state.buf, tools = {} }
end

--- The chat text (for tests and scripts).
---@return string
function M.text()
  if not (state.buf and vim.api.nvim_buf_is_valid(state.buf)) then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(state.buf, 0, -1, true), "\n")
end

return M

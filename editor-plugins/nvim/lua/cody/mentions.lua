--- Files sent with a prompt: `@path` mentions and the current buffer or selection.
---
--- A prompt's `@path` words that name a file inside the session's workspace are sent along
--- as embedded resources (`{type = "resource", resource = {uri, text}}`), the text keeping
--- the mention; a file larger than `MAX_BYTES` or not UTF-8 goes as a `resource_link` (the
--- model can read it with its tools). `:CodySend` sends a buffer, or some of its lines, the
--- same way (what the buffer holds, saved or not). Completion of `@` words asks the daemon's
--- file search (`_cody/files/search`, the model's fileSearch: fuzzy, ignore rules).
local config = require("cody.config")

local M = {}

M.MAX_BYTES = 256 * 1024

--- The `@path` words of `text` (`\ ` is a space inside a path).
---@param text string
---@return string[]
function M.mentioned(text)
  local found = {}
  for word in (" " .. text):gmatch("%s@([^%s]+)") do
    table.insert(found, (word:gsub("\\$", "")))
  end
  return found
end

--- Whether `data` is UTF-8 text (no NUL byte, every sequence well formed).
---@param data string
---@return boolean
function M.is_text(data)
  if data:find("%z") then
    return false
  end
  if not data:find("[\128-\255]") then
    return true
  end
  local i, n = 1, #data
  while i <= n do
    local c = data:byte(i)
    local extra = c < 0x80 and 0 or (c >= 0xC2 and c <= 0xDF) and 1 or (c >= 0xE0 and c <= 0xEF) and 2
      or (c >= 0xF0 and c <= 0xF4) and 3 or nil
    if not extra then
      return false
    end
    for k = 1, extra do
      local b = data:byte(i + k)
      if not b or b < 0x80 or b > 0xBF then
        return false
      end
    end
    i = i + extra + 1
  end
  return true
end

---@param path string
---@return string?
local function realpath(path)
  return vim.uv.fs_realpath(path)
end

--- The block for a file of the workspace (nil when `path` names no regular file there).
---@param root string
---@param mention string
---@return table?
local function file_block(root, mention)
  local path = realpath(root .. "/" .. mention)
  if not path or (path ~= root and path:sub(1, #root + 1) ~= root .. "/") then
    return nil
  end
  local stat = vim.uv.fs_stat(path)
  if not stat or stat.type ~= "file" then
    return nil
  end
  local uri = vim.uri_from_fname(path)
  if stat.size <= M.MAX_BYTES then
    local fd = io.open(path, "rb")
    if fd then
      local data = fd:read(M.MAX_BYTES + 1) or ""
      fd:close()
      if #data <= M.MAX_BYTES and M.is_text(data) then
        return { type = "resource", resource = { uri = uri, text = data } }
      end
    end
  end
  return { type = "resource_link", uri = uri, name = mention }
end

--- The content blocks of a prompt: its text, the files it mentions, then `extra`.
---@param text string
---@param extra table[]?
---@return table[]
function M.content(text, extra)
  local blocks = { { type = "text", text = text } }
  local root = realpath(config.cwd()) or config.cwd()
  local seen = {}
  for _, mention in ipairs(M.mentioned(text)) do
    local block = file_block(root, mention)
    local key = block and (block.uri or block.resource.uri)
    if block and not seen[key] then
      seen[key] = true
      table.insert(blocks, block)
    end
  end
  vim.list_extend(blocks, extra or {})
  return blocks
end

--- A buffer (or its lines `first`..`last`, 1-based, inclusive) as an embedded resource.
---@param buf integer
---@param first integer?
---@param last integer?
---@return {name: string, content: table}
function M.buffer_block(buf, first, last)
  local lines = vim.api.nvim_buf_get_lines(buf, first and first - 1 or 0, last or -1, false)
  local file = vim.api.nvim_buf_get_name(buf)
  local name = file ~= "" and vim.fn.fnamemodify(file, ":~:.") or ("[buffer %d]"):format(buf)
  local uri = file ~= "" and vim.uri_from_fname(vim.fn.fnamemodify(file, ":p")) or ("untitled:buffer-%d"):format(buf)
  if first then
    uri = ("%s#L%d-L%d"):format(uri, first, last or first)
  end
  return {
    name = name,
    content = { type = "resource", resource = { uri = uri, text = table.concat(lines, "\n") .. "\n" } },
  }
end

--- Asks the daemon for the workspace files matching `query`; `callback(paths)` (empty on
--- any error: completion is best effort).
---@param query string
---@param callback fun(paths: string[])
function M.search(query, callback)
  local cody = require("cody")
  local status = cody.status()
  local function ask(session_id)
    local conn = require("cody").connection()
    if not conn or not session_id then
      callback({})
      return
    end
    conn:request("_cody/files/search", { sessionId = session_id, query = query, limit = 20 }, function(err, result)
      callback((not err and type(result) == "table" and result.paths) or {})
    end)
  end
  if status.session_id then
    ask(status.session_id)
  else
    cody.with_session(function(_, session_id)
      ask(session_id)
    end)
  end
end

return M

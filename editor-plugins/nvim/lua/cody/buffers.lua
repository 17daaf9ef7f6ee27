--- Keeping open buffers in step with the files Cody changes.
---
--- When an editing tool call (`kind` edit, delete or move) completes, every loaded buffer of a
--- file it touched is checked with `:checktime`, with 'autoread' on for that moment: an
--- unmodified buffer shows the new text at once. A buffer with unsaved changes is not
--- reloaded (your text is not thrown away); you are told the file changed on disk, and given
--- a command that loads Cody's version into that buffer from any window (a bare `:e!` in
--- the chat would be aimed at the chat). Calls replayed by `session/load` are history: they
--- refresh nothing and warn about nothing.
--- The touched files are the call's ACP `locations` (absolute paths) and the paths of its
--- `diff` content.
local M = {}

local EDIT_KINDS = { edit = true, delete = true, move = true }

---@type table<string, {kind: string?, paths: string[]}>
local calls = {}

---@param path string
---@return string
local function normalize(path)
  return vim.fs.normalize(vim.fn.fnamemodify(path, ":p"))
end

---@param list string[]
---@param update table
local function collect(list, update)
  for _, location in ipairs(update.locations or {}) do
    if type(location.path) == "string" then
      table.insert(list, location.path)
    end
  end
  for _, block in ipairs(update.content or {}) do
    if block.type == "diff" and type(block.path) == "string" then
      table.insert(list, block.path)
    end
  end
end

--- The loaded buffers showing `path` (compared as normalized absolute paths, and as real
--- paths, since Cody reports real paths and a buffer may use a symlinked one).
---@param path string
---@return integer[]
local function buffers_of(path)
  local wanted = normalize(path)
  local real = vim.uv.fs_realpath(wanted) or wanted
  local found = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and name ~= "" and vim.bo[buf].buftype == "" then
      local full = normalize(name)
      if full == wanted or (vim.uv.fs_realpath(full) or full) == real then
        table.insert(found, buf)
      end
    end
  end
  return found
end

--- Reloads (or, with unsaved changes, warns about) the buffers of `paths`. Returns the
--- buffers that were checked.
---@param paths string[]
---@return integer[]
function M.refresh(paths)
  local checked, seen = {}, {}
  for _, path in ipairs(paths) do
    for _, buf in ipairs(buffers_of(path)) do
      if not seen[buf] then
        seen[buf] = true
        if vim.bo[buf].modified then
          vim.notify(
            (
              "Cody: %s changed on disk, but its buffer has unsaved changes, so it was not reloaded."
              .. " To load Cody's version and drop yours: :buffer %d | edit!"
            ):format(vim.api.nvim_buf_get_name(buf), buf),
            vim.log.levels.WARN
          )
        else
          vim.api.nvim_buf_call(buf, function()
            vim.cmd("setlocal autoread")
            pcall(vim.cmd.checktime, buf)
            vim.cmd("setlocal autoread<")
          end)
          table.insert(checked, buf)
        end
      end
    end
  end
  return checked
end

--- Follows `tool_call` / `tool_call_update` notifications; refreshes the touched buffers
--- when an editing call completes.
---@param update table
function M.on_tool_update(update)
  local id = update.toolCallId
  if not id then
    return
  end
  local call = calls[id]
  if not call then
    call = { kind = update.kind, paths = {} }
    calls[id] = call
  end
  call.kind = update.kind or call.kind
  collect(call.paths, update)
  if update.status == "completed" or update.status == "failed" then
    calls[id] = nil
    if update.status == "completed" and EDIT_KINDS[call.kind or ""] and #call.paths > 0 then
      M.refresh(call.paths)
    end
  end
end

--- Forgets calls in flight (a new session, or the daemon exited).
function M.reset()
  calls = {}
end

return M

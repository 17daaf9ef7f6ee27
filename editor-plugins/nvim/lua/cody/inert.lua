--- Text from the daemon made inert before Neovim shows it (the same rule as cody-client's
--- inert.py).
---
--- Nearly everything the plugin shows comes from the model, a tool, a file or a session file.
--- Neovim shows control characters in buffers and messages as `^[`, but not everywhere: a
--- floating window's `title` reaches the terminal raw (Neovim 0.11: an OSC 52 there sets the
--- clipboard, an OSC 0 the terminal's title), a newline in a `vim.ui.select` item or prompt
--- makes a line of its own (a forged choice), and `nvim_buf_set_lines` refuses a line that
--- holds one (the update is lost). So every such string goes through here first:
---
--- - `text(s)`: each C0 control but `\n` and `\t` shown as its control picture (`␛` for ESC,
---   `␍` for a lone CR, U+2400-U+241F), DEL as `␡`, each C1 control, bidi control (U+061C,
---   U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and line or paragraph separator (U+2028,
---   U+2029) as `<U+XXXX>`; `\r\n` becomes `\n`.
--- - `line(s)`: the same, and `\n`, `\t` shown as `␊`, `␉`: a title, a label, a picker item or
---   a buffer line stays one line.
--- - `lines(s)`: `text(s)` split at newlines, ready for `nvim_buf_set_lines`.
---
--- Both are idempotent, and keep every other character (valid UTF-8 stays valid).
local M = {}

---@param code integer
---@return string
local function shown(code)
  return ("<U+%04X>"):format(code)
end

---@param char string one byte
---@return string
local function picture(char)
  local byte = char:byte()
  if byte == 0x7f then
    return "\226\144\161" -- ␡ U+2421
  end
  -- U+2400 + byte, in UTF-8: E2 90 80+byte
  return "\226\144" .. string.char(0x80 + byte)
end

---@param s string
---@param controls string pattern matching the C0 controls to show
---@return string
local function replace(s, controls)
  s = s:gsub(controls, picture)
  -- C1 controls: U+0080-U+009F (C2 80 - C2 9F)
  s = s:gsub("\194([\128-\159])", function(c)
    return shown(c:byte())
  end)
  -- U+200E, U+200F, U+2028, U+2029, U+202A-U+202E (E2 80 xx)
  s = s:gsub("\226\128([\142\143\168-\174])", function(c)
    return shown(0x2000 + c:byte() - 0x80)
  end)
  -- U+2066-U+2069 (E2 81 A6-A9)
  s = s:gsub("\226\129([\166-\169])", function(c)
    return shown(0x2040 + c:byte() - 0x80)
  end)
  -- U+061C (D8 9C)
  s = s:gsub("\216\156", shown(0x061C))
  return s
end

--- `s` with every character a terminal acts on shown instead (newlines and tabs kept).
---@param s any
---@return string
function M.text(s)
  s = tostring(s or "")
  s = s:gsub("\r\n", "\n")
  return replace(s, "[%z\1-\8\11-\31\127]")
end

--- `s` inert and on one line: newlines and tabs are shown (`␊`, `␉`) as well.
---@param s any
---@return string
function M.line(s)
  return replace(tostring(s or ""), "[%z\1-\31\127]")
end

--- `s` inert, split at newlines (for `nvim_buf_set_lines`).
---@param s any
---@return string[]
function M.lines(s)
  return vim.split(M.text(s), "\n", { plain = true })
end

return M

--- The prompt buffer (`cody://prompt`): where a message to Cody is written, in a small
--- window below the chat.
---
--- <CR> (insert or normal mode) sends it: a prompt, or, while a turn runs, a message that
--- steers that turn (the model reads it at its next step). <Tab> queues it as the next
--- prompt instead (with the completion menu open, <Tab> moves in the menu). <C-c> cancels
--- the running turn. Typing `@` and part of a path offers the workspace's files (the
--- daemon's file search, cody.mentions); the chosen `@path` is sent along with the message.
--- Multi-line messages: <C-j> (insert) starts a new line.
local M = {}

M.name = "cody://prompt"
M.HEIGHT = 3

---@type integer?
local prompt_buf

---@type integer Completion requests: only the latest one's answer is shown.
local generation = 0

---@return integer
local function buffer()
  if prompt_buf and vim.api.nvim_buf_is_valid(prompt_buf) then
    return prompt_buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, M.name)
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].completeopt = "menuone,noinsert,noselect"
  prompt_buf = buf
  M.set_keymaps(buf)
  vim.api.nvim_create_autocmd("TextChangedI", {
    buffer = buf,
    callback = function()
      M.complete_mention(buf)
    end,
  })
  return buf
end

--- The text typed, and an empty buffer.
---@param buf integer
---@return string?
local function take(buf)
  local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "" })
  return text ~= "" and text or nil
end

--- Sends what the buffer holds: a prompt (or a steer while a turn runs), or `queue`d.
---@param buf integer
---@param queue boolean?
function M.send(buf, queue)
  local text = take(buf)
  if not text then
    return
  end
  local cody = require("cody")
  local win = vim.api.nvim_get_current_win()
  if queue then
    cody.queue(text)
  else
    cody.prompt(text)
  end
  if vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_set_current_win(win) -- keep writing here: the chat shows the reply
  end
end

---@param buf integer
function M.set_keymaps(buf)
  local function map(modes, lhs, rhs, desc)
    vim.keymap.set(modes, lhs, rhs, { buffer = buf, silent = true, desc = desc })
  end
  map({ "i", "n" }, "<CR>", function()
    if vim.fn.pumvisible() == 1 and vim.fn.complete_info({ "selected" }).selected >= 0 then
      vim.api.nvim_feedkeys(vim.keycode("<C-y>"), "n", false) -- take the completion
      return
    end
    M.send(buf)
  end, "Cody: send (steers a running turn)")
  map("i", "<Tab>", function()
    if vim.fn.pumvisible() == 1 then
      vim.api.nvim_feedkeys(vim.keycode("<C-n>"), "n", false)
      return
    end
    M.send(buf, true)
  end, "Cody: queue as the next prompt")
  map("i", "<C-j>", function()
    vim.api.nvim_put({ "", "" }, "c", false, true)
  end, "Cody: new line")
  map({ "i", "n" }, "<C-c>", function()
    require("cody").cancel()
  end, "Cody: cancel the turn")
end

--- Offers the workspace files for the `@word` before the cursor (asynchronously: the
--- menu opens when the daemon answers, if the word is still being typed).
---@param buf integer
function M.complete_mention(buf)
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local before = line:sub(1, col)
  local start, query = before:match("()@([^%s]*)$")
  if not start or (start > 1 and not before:sub(start - 1, start - 1):match("%s")) then
    return
  end
  generation = generation + 1
  local mine = generation
  require("cody.mentions").search(query, function(paths)
    if mine ~= generation or vim.api.nvim_get_current_buf() ~= buf then
      return
    end
    if not vim.api.nvim_get_mode().mode:match("^i") or #paths == 0 then
      return
    end
    local items = vim.tbl_map(function(path)
      return { word = "@" .. path:gsub(" ", "\\ ") .. " ", abbr = require("cody.inert").line(path), menu = "[file]" }
    end, paths)
    vim.fn.complete(start, items)
  end)
end

--- Shows the prompt window below the chat window (creating both as needed) and starts
--- insert mode in it.
---@return integer win
function M.open()
  local chat = require("cody.chat")
  local chat_win = chat.open()
  local buf = buffer()
  local win = vim.iter(vim.api.nvim_tabpage_list_wins(0)):find(function(w)
    return vim.api.nvim_win_get_buf(w) == buf
  end)
  if not win then
    vim.api.nvim_set_current_win(chat_win)
    vim.cmd(("belowright %dsplit"):format(M.HEIGHT))
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    vim.wo[win][0].winfixheight = true
    vim.wo[win][0].number = false
    vim.wo[win][0].relativenumber = false
    vim.wo[win][0].signcolumn = "no"
    vim.wo[win][0].wrap = true
  end
  vim.api.nvim_set_current_win(win)
  vim.cmd.startinsert({ bang = true })
  return win
end

--- The prompt buffer, once it exists.
---@return integer?
function M.buf()
  return prompt_buf and vim.api.nvim_buf_is_valid(prompt_buf) and prompt_buf or nil
end

return M

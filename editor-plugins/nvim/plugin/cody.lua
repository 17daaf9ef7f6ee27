-- cody.nvim commands. The modules load on first use; the daemon starts with the first command
-- that needs it.
if vim.g.loaded_cody then
  return
end
vim.g.loaded_cody = true

if vim.fn.has("nvim-0.10") == 0 then
  vim.notify("cody.nvim needs Neovim 0.10 or newer", vim.log.levels.ERROR)
  return
end

vim.api.nvim_create_user_command("Cody", function(cmd)
  local cody = require("cody")
  if cmd.args ~= "" then
    cody.prompt(cmd.args)
  else
    cody.ask()
  end
end, { nargs = "*", desc = "Cody: open the chat and send a prompt" })

vim.api.nvim_create_user_command("CodyCancel", function()
  require("cody").cancel()
end, { nargs = 0, desc = "Cody: cancel the running turn" })

vim.api.nvim_create_user_command("CodySessions", function()
  require("cody").sessions()
end, { nargs = 0, desc = "Cody: pick a saved session to resume" })

vim.api.nvim_create_user_command("CodyResume", function(cmd)
  require("cody").resume(cmd.args ~= "" and cmd.args or nil)
end, { nargs = "?", desc = "Cody: resume a saved session (replays it into the chat)" })

vim.api.nvim_create_user_command("CodyNew", function()
  require("cody").new_session()
end, { nargs = 0, desc = "Cody: start a new session with an empty chat" })

vim.api.nvim_create_user_command("CodyHistory", function(cmd)
  require("cody.history").pick(cmd.args)
end, {
  nargs = "?",
  complete = function()
    return { "codex", "claude", "cody" }
  end,
  desc = "Cody: pick a Codex, Claude Code or Cody session and continue it in Cody",
})

vim.api.nvim_create_user_command("CodyBackend", function(cmd)
  require("cody").backend(cmd.args ~= "" and cmd.args or nil)
end, {
  nargs = "?",
  complete = function()
    return { "native", "codex", "claude" }
  end,
  desc = "Cody: run new sessions on Cody's loop, the Codex CLI or Claude Code",
})

vim.api.nvim_create_user_command("CodyQueue", function(cmd)
  require("cody").queue(cmd.args)
end, { nargs = "+", desc = "Cody: queue a prompt to run after the running turn" })

vim.api.nvim_create_user_command("CodySend", function(cmd)
  local first, last
  if cmd.range > 0 then
    first, last = cmd.line1, cmd.line2
  end
  require("cody").send_buffer(cmd.args, first, last)
end, {
  nargs = "*",
  range = true,
  desc = "Cody: send the current buffer (or the selected lines) with an optional prompt",
})

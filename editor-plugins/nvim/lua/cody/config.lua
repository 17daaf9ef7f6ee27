--- Configuration for cody.nvim: defaults, `setup()` merging and the derived values the
--- other modules need (daemon command, working directory, `_meta.cody` session settings).
local M = {}

---@alias cody.ApprovalPolicy "untrusted"|"on-request"|"on-failure"|"never"
---@alias cody.SandboxMode "read-only"|"workspace-write"|"danger-full-access"
---@alias cody.Backend "native"|"codex"|"claude"

---@class cody.KeymapsConfig
---@field prompt string|false Chat buffer, normal mode: ask for a prompt (default `i`).
---@field cancel string|false Chat buffer, normal mode: cancel the running turn (default `<C-c>`).
---@field close string|false Chat buffer, normal mode: close the chat window (default `q`).

---@class cody.ChatConfig
---@field position "right"|"left"|"above"|"below"|"tab" Where `:Cody` opens the chat window.
---@field size number Width (left/right) or height (above/below); below 1 it is a fraction of the editor.
---@field show_thoughts boolean Show the model's thoughts (dimmed with `CodyThought`).

---@class cody.Config
---@field cmd string[] The daemon command (argv, no shell). See `:help cody-cmd`.
---@field cwd string? Workspace of new sessions; nil means the current directory at session start.
---@field env table<string, string>? Extra environment variables for the daemon.
---@field log_file string? Passed to the daemon as `--log-file` (else its stderr goes to the LSP log).
---@field provider string? `_meta.cody.provider` (else `model_provider` from the daemon's config).
---@field model string? `_meta.cody.model`.
---@field approval_policy cody.ApprovalPolicy? `_meta.cody.approvalPolicy`.
---@field sandbox_mode cody.SandboxMode? `_meta.cody.sandboxMode`.
---@field reasoning_effort string? `_meta.cody.reasoningEffort`.
---@field backend cody.Backend? `_meta.cody.backend`: whose agent loop runs new sessions.
---@field shutdown_timeout_ms integer How long `VimLeavePre` waits for `shutdown`/exit.
---@field chat cody.ChatConfig
---@field keymaps cody.KeymapsConfig

---@class cody.UserConfig
---@field cmd? string[]
---@field cwd? string
---@field env? table<string, string>
---@field log_file? string
---@field provider? string
---@field model? string
---@field approval_policy? cody.ApprovalPolicy
---@field sandbox_mode? cody.SandboxMode
---@field reasoning_effort? string
---@field backend? cody.Backend
---@field shutdown_timeout_ms? integer
---@field chat? cody.ChatConfig|{}
---@field keymaps? cody.KeymapsConfig|{}

---@type cody.Config
M.defaults = {
  cmd = { "cody-daemon" },
  cwd = nil,
  env = nil,
  log_file = nil,
  provider = nil,
  model = nil,
  approval_policy = nil,
  sandbox_mode = nil,
  reasoning_effort = nil,
  backend = nil,
  shutdown_timeout_ms = 3000,
  chat = {
    position = "right",
    size = 0.4,
    show_thoughts = true,
  },
  keymaps = {
    prompt = "i",
    cancel = "<C-c>",
    close = "q",
  },
}

---@type cody.Config
M.options = vim.deepcopy(M.defaults)

--- The session backends: Cody's own loop, the Codex CLI, Claude Code.
M.BACKENDS = { "native", "codex", "claude" }

--- Checks the type of one option; raises a readable error naming it.
---@param name string
---@param value any
---@param expected string[]
local function check(name, value, expected)
  if value == nil or vim.tbl_contains(expected, type(value)) then
    return
  end
  error(("cody.setup: `%s` must be %s, got %s"):format(name, table.concat(expected, " or "), type(value)), 3)
end

---@param opts cody.UserConfig?
function M.setup(opts)
  opts = opts or {}
  check("opts", opts, { "table" })
  check("cmd", opts.cmd, { "table" })
  if opts.cmd then
    if #opts.cmd == 0 then
      error("cody.setup: `cmd` must be a non-empty list such as { 'cody-daemon' }", 2)
    end
    for i, word in ipairs(opts.cmd) do
      check(("cmd[%d]"):format(i), word, { "string" })
    end
  end
  for _, key in ipairs({ "cwd", "log_file", "provider", "model", "approval_policy", "sandbox_mode", "reasoning_effort", "backend" }) do
    check(key, opts[key], { "string" })
  end
  if opts.backend and not vim.tbl_contains(M.BACKENDS, opts.backend) then
    error(("cody.setup: `backend` must be one of %s, got %q"):format(table.concat(M.BACKENDS, ", "), opts.backend), 2)
  end
  check("env", opts.env, { "table" })
  check("chat", opts.chat, { "table" })
  check("keymaps", opts.keymaps, { "table" })

  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  -- Lists are replaced, not merged index by index.
  merged.cmd = vim.deepcopy(opts.cmd or M.defaults.cmd)
  M.options = merged
end

--- The argv that starts the daemon.
---@return string[]
function M.cmd()
  local cmd = vim.deepcopy(M.options.cmd)
  if M.options.log_file then
    vim.list_extend(cmd, { "--log-file", vim.fn.expand(M.options.log_file) })
  end
  return cmd
end

--- The absolute workspace directory for a new session.
---@return string
function M.cwd()
  local cwd = M.options.cwd and vim.fn.expand(M.options.cwd) or vim.fn.getcwd()
  local absolute = vim.fn.fnamemodify(cwd, ":p"):gsub("(.)/$", "%1")
  return absolute
end

--- The `_meta.cody` settings for `session/new`, or nil when none are set.
---@return table<string, string>?
function M.session_meta()
  local o = M.options
  local meta = {
    provider = o.provider,
    model = o.model,
    approvalPolicy = o.approval_policy,
    sandboxMode = o.sandbox_mode,
    reasoningEffort = o.reasoning_effort,
    backend = o.backend,
  }
  return next(meta) and meta or nil
end

return M

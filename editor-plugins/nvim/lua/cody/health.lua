--- `:checkhealth cody`: Neovim version, the daemon command, and what the daemon's
--- `initialize` answer reports (protocol version, providers, sandbox).
local config = require("cody.config")

local M = {}

local INITIALIZE_TIMEOUT_MS = 10000

local function check_neovim()
  local v = vim.version()
  local version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.10") == 1 then
    vim.health.ok("Neovim " .. version)
  else
    vim.health.error("Neovim " .. version .. " is too old", { "cody.nvim needs Neovim 0.10 or newer" })
  end
end

---@param cmd string[]
---@return boolean
local function check_command(cmd)
  vim.health.info("daemon command: `" .. table.concat(cmd, " ") .. "`")
  if vim.fn.executable(cmd[1]) == 1 then
    vim.health.ok(("`%s` is executable (%s)"):format(cmd[1], vim.fn.exepath(cmd[1])))
    return true
  end
  vim.health.error(("`%s` is not executable"):format(cmd[1]), {
    "Install Cody so that `cody-daemon` is on $PATH: `python3 install.py` in the Cody checkout",
    "or point the plugin at a checkout:",
    "require('cody').setup{ cmd = { 'uv', 'run', '--project', '/path/to/cody', '--frozen', '--no-dev', 'cody-daemon' } }",
  })
  return false
end

--- Starts a short-lived daemon and asks it `initialize` (unless the plugin's daemon already did).
---@param cmd string[]
---@return string? err
---@return table? result
local function initialize(cmd)
  local status = require("cody").status()
  if status.running and status.initialize then
    return nil, status.initialize
  end
  local conn, start_err = require("cody.rpc").start({ cmd = cmd, cwd = config.cwd(), env = config.options.env })
  if not conn then
    return start_err, nil
  end
  local err, result = conn:request_sync("initialize", {
    protocolVersion = 1,
    clientCapabilities = vim.empty_dict(),
    clientInfo = { name = "cody.nvim-health", version = require("cody").version },
  }, INITIALIZE_TIMEOUT_MS)
  conn:stop(config.options.shutdown_timeout_ms)
  if err then
    local message = err.message
    if conn.exit_code and conn.exit_code ~= 0 then
      message = ("%s (exit code %d; its stderr is in %s)"):format(message, conn.exit_code, vim.lsp.log.get_filename())
    end
    return message, nil
  end
  return nil, result
end

---@param result table
local function report_initialize(result)
  local meta = vim.tbl_get(result, "_meta", "cody") or {}
  local agent = result.agentInfo or {}
  vim.health.ok(
    ("the daemon answers `initialize`: %s %s"):format(agent.title or agent.name or "?", agent.version or "?")
  )
  if result.protocolVersion == 1 then
    vim.health.ok("protocol version 1")
  else
    vim.health.warn(("protocol version %s (this plugin speaks 1)"):format(vim.inspect(result.protocolVersion)))
  end

  local default = meta.defaultProvider
  vim.health.info(("default provider: %s"):format(default or "(not reported)"))
  if config.options.provider then
    vim.health.info("provider from setup(): " .. config.options.provider)
  end
  for _, provider in ipairs(meta.providers or {}) do
    local line = ("provider %s (%s, default model %s): %s"):format(
      provider.id,
      provider.name or provider.id,
      provider.defaultModel or "?",
      provider.credentials or ""
    )
    if provider.available then
      vim.health.ok(line .. " [available]")
    else
      vim.health.info(line .. " [not available]")
    end
  end
  if default == "offline" and not config.options.provider then
    vim.health.warn("no provider credentials found: chats use the built-in offline demo model", {
      "Set OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENROUTER_API_KEY for the daemon (setup{ env = ... }), or log in to Codex / Claude Code",
    })
  end

  local caps = result.agentCapabilities or {}
  local session_caps = vim.tbl_keys(caps.sessionCapabilities or {})
  table.sort(session_caps)
  vim.health.info(
    ("loadSession: %s; session capabilities: %s"):format(tostring(caps.loadSession), table.concat(session_caps, ", "))
  )
  if meta.extensions then
    vim.health.info("extensions: " .. table.concat(meta.extensions, ", "))
  end
  if meta.configFile then
    vim.health.info("config file: " .. meta.configFile)
  end
  if meta.dataDir then
    vim.health.info("data directory: " .. meta.dataDir)
  end

  local sandbox = meta.sandbox
  if sandbox ~= nil then
    vim.health.info("sandbox (reported by initialize): " .. vim.inspect(sandbox))
  else
    local bwrap = vim.env.CODY_BWRAP or "bwrap"
    local found = bwrap ~= "none" and vim.fn.executable(bwrap) == 1
    vim.health.info(
      ("initialize does not report sandbox support; bubblewrap (`%s`) is %s on this machine"):format(
        bwrap,
        found and "installed" or "not found"
      )
    )
    if not found then
      vim.health.warn("without bubblewrap, commands cannot be sandboxed", {
        "Install bubblewrap (e.g. `apt install bubblewrap`); the daemon then runs `exec` in a sandbox",
      })
    end
  end
end

function M.check()
  vim.health.start("cody.nvim")
  check_neovim()

  vim.health.start("Cody daemon")
  local cmd = config.cmd()
  if not check_command(cmd) then
    return
  end
  local err, result = initialize(cmd)
  if err or not result then
    vim.health.error("the daemon does not answer `initialize`: " .. tostring(err), {
      "Run the command by hand to see its error: " .. table.concat(cmd, " ") .. " --help",
    })
    return
  end
  report_initialize(result)
end

return M

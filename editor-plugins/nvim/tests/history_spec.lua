-- :CodyHistory: sessions of Codex, Claude Code and Cody in one picker; the chosen one is
-- imported into Cody, replayed into the chat and continued.
local h = require("helpers")
local spec = h.spec()

local cody = require("cody")

local CODEX_ID = "01a2016a-2cc7-7713-957a-8f7d89039f89"
local CLAUDE_ID = "62ba3d6f-69b4-4fb2-b809-98dd28854f87"

local function repo_dir()
  local tests_dir = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
  return vim.fs.normalize(tests_dir .. "/../../..")
end

--- The real-CLI fixture sessions, where Codex and Claude Code keep them. The Codex one says
--- it ran in `/` (a hostile file may name any directory): an import must not work there.
local function place_fixtures()
  local fixtures = repo_dir() .. "/tests/fixtures/history"
  local codex_day = os.getenv("CODEX_HOME") .. "/sessions/2026/11/22"
  vim.fn.mkdir(codex_day, "p")
  local rollout = vim.tbl_map(function(line)
    return (line:gsub('"cwd":"/home/dev/project"', '"cwd":"/"'))
  end, vim.fn.readfile(fixtures .. "/codex/rollout_exec_resumed.jsonl", "b"))
  vim.fn.writefile(rollout, ("%s/rollout-2026-11-22T04-01-05-%s.jsonl"):format(codex_day, CODEX_ID), "b")
  local project = os.getenv("CLAUDE_CONFIG_DIR") .. "/projects/-home-dev-project"
  vim.fn.mkdir(project, "p")
  vim.fn.writefile(vim.fn.readfile(fixtures .. "/claude/session.jsonl", "b"), project .. "/" .. CLAUDE_ID .. ".jsonl", "b")
end

spec.test(":CodyHistory lists every agent's sessions, imports the chosen one and continues it", function()
  place_fixtures()
  h.new_session()
  local notes = h.capture_notify()
  local calls = h.stub_select(function(items)
    return vim.iter(items):find(function(s)
      return s.sessionId == CODEX_ID
    end)
  end)
  vim.cmd("CodyHistory")
  h.wait_chat("— resumed session ")

  h.eq(1, #calls, "one picker")
  h.eq("cody.history", calls[1].opts.kind)
  local agents = vim.tbl_map(function(s)
    return s.agent .. ":" .. s.sessionId
  end, calls[1].items)
  h.truthy(vim.tbl_contains(agents, "codex:" .. CODEX_ID), vim.inspect(agents))
  h.truthy(vim.tbl_contains(agents, "claude:" .. CLAUDE_ID), vim.inspect(agents))
  local label = calls[1].labels[vim.fn.index(agents, "codex:" .. CODEX_ID) + 1]
  h.contains(label, "[codex]")
  h.contains(label, "run echo hello", "the picker shows the title")
  h.contains(label, "10 msgs")

  local imported_id = assert(cody.status().session_id)
  h.truthy(imported_id ~= CODEX_ID, "a new Cody session")
  h.truthy(vim.iter(notes):any(function(n)
    return n.msg:find("imported Codex session " .. CODEX_ID, 1, true) ~= nil
  end), "the import is announced")
  local text = h.chat()
  h.contains(text, "## You\n\nrun echo hello")
  h.contains(text, "## You\n\nrun echo again")
  -- An imported call shows its command and kind, not `▸ Bash [other]` (issue 24.12).
  h.eq(1, h.count(text, "▸ echo hello [execute]"), "each imported call is shown once")
  h.eq(1, h.count(text, "▸ echo again [execute]"))
  h.eq(0, h.count(text, "[other]"))
  h.contains(text, "Output:\nhello", "tool results and answers are replayed")

  vim.cmd("Cody list files")
  h.wait_chat("I found 2 entries")
  h.wait_turn()
  h.eq(imported_id, cody.status().session_id, "the prompt went to the imported session")
  local listed
  cody.list_sessions(function(_, sessions)
    listed = sessions or {}
  end)
  h.wait(function()
    return listed ~= nil
  end, "session/list")
  local mine = vim.iter(listed):find(function(s)
    return s.sessionId == imported_id
  end)
  h.eq(require("cody.config").cwd(), mine and mine.cwd, "the editor's directory, not the file's /")
end)

spec.test(":CodyHistory claude offers only Claude Code sessions", function()
  place_fixtures()
  local calls = h.stub_select(function()
    return nil
  end)
  vim.cmd("CodyHistory claude")
  h.wait(function()
    return #calls > 0
  end, "the picker")
  h.eq({ CLAUDE_ID }, vim.tbl_map(function(s)
    return s.sessionId
  end, calls[1].items))
end)

return spec

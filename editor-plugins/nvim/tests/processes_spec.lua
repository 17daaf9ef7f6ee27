-- :CodyProcesses: the processes the model started (a command in the background), listed with
-- their state; choosing a running one stops it (and the process is gone).
local h = require("helpers")
local spec = h.spec()

local function alive(pid)
  local stat = io.open(("/proc/%d/stat"):format(pid))
  if not stat then
    return false
  end
  local state = stat:read("*a"):match("%) (%a)")
  stat:close()
  return state ~= nil and state ~= "Z" and state ~= "X"
end

spec.test(":CodyProcesses lists a background command and stops the chosen one", function()
  h.new_session()
  local marker = ("61.%d"):format(vim.uv.os_getpid())
  h.stub_select(h.pick("Allow once")) -- when the policy asks about the command
  vim.cmd("Cody start sleep " .. marker)
  h.wait_chat("— end_turn")
  h.wait_turn()
  h.contains(h.chat(), "Started in the background as process")

  local notes = h.capture_notify()
  local calls = h.stub_select(function(items)
    return items[1]
  end)
  vim.cmd("CodyProcesses")
  h.wait(function()
    return #calls == 1
  end, "the process list")
  h.eq("cody.process", calls[1].opts.kind)
  h.eq(1, #calls[1].items, "one process")
  local process = calls[1].items[1]
  h.contains(calls[1].labels[1], "1  running  pid " .. process.pid .. "  bg  sleep " .. marker)
  h.truthy(alive(process.pid), "the command runs")

  h.wait(function()
    return vim.iter(notes):any(function(n)
      return n.msg:find("stopped process 1 (killed by SIGTERM)", 1, true) ~= nil
    end)
  end, "the stop to be announced")
  h.wait(function()
    return not alive(process.pid)
  end, "the process to be gone")

  calls = h.stub_select(function()
    return nil
  end)
  vim.cmd("CodyProcesses")
  h.wait(function()
    return #calls == 1
  end, "the process list again")
  h.contains(calls[1].labels[1], "1  killed by SIGTERM")
end)

return spec

"""Language servers through the real daemon: diagnostics after edits, `symbols`, restarts.

Real `ruff server` and `basedpyright-langserver` (PyPI wheels in the dev group); the model
is the scripted mock. A server that never answers is a small script (a test double for a
*server*, tests/support/silent_lsp.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent


def have(program: str) -> bool:
    return (BIN / program).is_file()


needs_ruff = pytest.mark.skipif(
    not have("ruff") and os.environ.get("CI") != "true", reason="ruff is not installed"
)
needs_pyright = pytest.mark.skipif(
    not have("basedpyright-langserver") and os.environ.get("CI") != "true",
    reason="basedpyright is not installed",
)


def lsp_env(cody_env: CodyEnv, model: MockResponsesServer, lsp: str) -> None:
    """Language servers on (the harness turns them off), trusted workspace, `lsp` config."""
    cody_env.env.pop("CODY_LSP", None)
    cody_env.env["PATH"] = f"{BIN}{os.pathsep}{cody_env.env['PATH']}"
    cody_env.use_mock_provider(
        model.base_url, extra=f'trusted_projects = ["{cody_env.workspace}"]\n'
    )
    with (cody_env.cody_home / "config.toml").open("a", encoding="utf-8") as handle:
        handle.write(lsp)


def diagnostics(daemon: Daemon, call_id: str) -> list[dict[str, Any]]:
    return [
        m["params"]
        for m in daemon.received
        if m.get("method") == "_cody/diagnostics" and m["params"].get("toolCallId") == call_id
    ]


async def start(cody_env: CodyEnv) -> Daemon:
    daemon = await Daemon.start(cody_env)
    await daemon.initialize()
    return daemon


RUFF_ONLY = "\n[lsp.basedpyright]\nenabled = false\n[lsp.pyright]\nenabled = false\n"
"""Only ruff: most tests need one fast server (basedpyright has tests of its own)."""


@needs_ruff
async def test_an_undefined_name_comes_back_with_the_edit_and_its_fix_comes_back_clean(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    lsp_env(cody_env, model, RUFF_ONLY + "[lsp]\ndiagnostics_timeout_ms = 20000\n")
    ws = cody_env.workspace
    (ws / "app.py").write_text("import os\n\n\ndef main():\n    return 1\n")
    broken = "import os\n\n\ndef main():\n    return undefined_name\n"
    fixed = "import os\n\n\ndef main():\n    return 2\n"
    model.enqueue(tool_call("writeFile", {"filePath": "app.py", "content": broken}, call_id="w1"))
    model.enqueue(tool_call("writeFile", {"filePath": "app.py", "content": fixed}, call_id="w2"))
    model.enqueue(text("done"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "edit app.py")

    outputs = tool_outputs(model.requests[-1])
    assert "app.py:5:12 error F821 Undefined name `undefined_name`" in outputs["w1"]
    # `import os` was unused before the edit too: not repeated.
    assert "F401" not in outputs["w1"]
    assert "F821" not in outputs["w2"] and "no new problems" in outputs["w2"]
    [first] = diagnostics(daemon, "w1")
    assert first["path"] == str(ws.resolve() / "app.py")
    assert [(d["code"], d["line"], d["severity"]) for d in first["diagnostics"]] == [
        ("F821", 5, "error")
    ]
    [second] = diagnostics(daemon, "w2")
    assert second["diagnostics"] == [] and second["servers"] == ["ruff"]
    shown = [u for u in daemon.tool_updates(sid, "w1") if u.get("status") == "completed"]
    assert "F821" in json.dumps(shown[-1]["content"])
    await daemon.close()
    assert daemon.invalid == []


def tool_names(request: Any) -> list[str]:
    return [tool["name"] for tool in request.body.get("tools", [])]


def children(pid: int) -> dict[int, str]:
    """Processes whose parent is `pid`: pid -> command line."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found[int(entry.name)] = cmdline
    return found


def running(pid: int) -> bool:
    """The process exists and is not a zombie (one left for its new parent to reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def server_pids(daemon: Daemon, word: str) -> list[int]:
    return [pid for pid, cmd in children(daemon.process.process.pid).items() if word in cmd]


@needs_ruff
async def test_a_warning_that_was_there_before_is_not_repeated_when_lines_move(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """The delta matches by the flagged line's text, not its number: lines added above an
    old warning move it, they do not make it new."""
    lsp_env(cody_env, model, RUFF_ONLY + "[lsp]\ndiagnostics_timeout_ms = 20000\n")
    ws = cody_env.workspace
    (ws / "calc.py").write_text("import os\n\n\ndef add(a, b):\n    return a + b\n")
    patch = (
        "*** Begin Patch\n*** Update File: calc.py\n"
        '@@\n+"""Calculator."""\n+\n import os\n'
        "@@ def add(a, b):\n     return a + b\n+\n+\n+def mul(a, b):\n+    return a * c\n"
        "*** End Patch\n"
    )
    model.enqueue(tool_call("applyPatch", {"patch": patch}, call_id="p1"))
    model.enqueue(text("done"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "add mul")

    output = tool_outputs(model.requests[-1])["p1"]
    assert "new since this change: 1 error\ncalc.py:11:16 error F821 Undefined name `c`" in output
    assert "F401" not in output, "the unused import was there before the patch"
    [report] = diagnostics(daemon, "p1")
    assert [d["code"] for d in report["diagnostics"]] == ["F821"]
    await daemon.close()


@needs_ruff
async def test_a_killed_server_is_started_again_at_the_next_edit(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    lsp_env(cody_env, model, RUFF_ONLY + "[lsp]\ndiagnostics_timeout_ms = 20000\n")
    ws = cody_env.workspace
    model.enqueue(tool_call("writeFile", {"filePath": "a.py", "content": "x = y\n"}, call_id="w1"))
    model.enqueue(text("one"))
    model.enqueue(tool_call("writeFile", {"filePath": "a.py", "content": "x = z\n"}, call_id="w2"))
    model.enqueue(text("two"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(sid, "first")
    [before] = server_pids(daemon, "ruff")
    assert "Undefined name `y`" in tool_outputs(model.requests[-1])["w1"]

    os.kill(before, signal.SIGKILL)
    await daemon.wait_for(lambda: not running(before))
    await daemon.prompt(sid, "second")

    assert "Undefined name `z`" in tool_outputs(model.requests[-1])["w2"]
    [after] = server_pids(daemon, "ruff")
    assert after != before
    assert (ws / "a.py").read_text() == "x = z\n"
    await daemon.close()


async def test_a_server_that_never_answers_costs_the_edit_only_the_bound(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    silent = Path(__file__).parents[1] / "support" / "silent_lsp.py"
    lsp_env(
        cody_env,
        model,
        RUFF_ONLY
        + "[lsp]\ndiagnostics_timeout_ms = 300\n"
        + f'[lsp.silent]\ncommand = ["{sys.executable}", "{silent}"]\nextensions = [".py"]\n',
    )
    with (cody_env.cody_home / "config.toml").open("a") as handle:
        handle.write("[lsp.ruff]\nenabled = false\n")  # only the silent one
    model.enqueue(tool_call("writeFile", {"filePath": "a.py", "content": "x = y\n"}, call_id="w1"))
    model.enqueue(text("one"))
    model.enqueue(tool_call("writeFile", {"filePath": "b.py", "content": "b = 1\n"}, call_id="w2"))
    model.enqueue(text("two"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "write a")
    # The first edit may end while the pool itself still loads (then it says so); once the
    # silent server runs, an edit waits for it and gives up after the bound.
    first = tool_outputs(model.requests[-1])["w1"]
    assert first.startswith("Wrote ") and "Not checked in time:" in first
    await daemon.wait_for(lambda: bool(server_pids(daemon, "silent_lsp")))
    result = await daemon.prompt(sid, "write b")

    assert result["stopReason"] == "end_turn"
    second = tool_outputs(model.requests[-1])["w2"]
    assert second.startswith("Wrote "), "the edit itself succeeded"
    assert "Not checked in time: silent (" in second
    [report] = diagnostics(daemon, "w2")
    assert report["diagnostics"] == [] and report["late"][0].startswith("silent")
    assert (cody_env.workspace / "b.py").read_text() == "b = 1\n"
    [silent] = server_pids(daemon, "silent_lsp")  # still running, never answered
    await daemon.close()
    assert not running(silent), "the daemon's exit ended it"


@needs_ruff
@needs_pyright
async def test_symbols_finds_a_definition_once_a_server_runs_and_types_are_checked(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """basedpyright and ruff together: a type error comes back with the edit, then `symbols`
    (offered only from then on) finds a definition in another file of the project."""
    lsp_env(cody_env, model, "[lsp]\ndiagnostics_timeout_ms = 45000\n")
    ws = cody_env.workspace
    (ws / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "0"\n')
    (ws / "shop").mkdir()
    (ws / "shop" / "__init__.py").write_text("")
    (ws / "shop" / "prices.py").write_text(
        "def total(prices: list[float]) -> float:\n    return sum(prices)\n"
    )
    main = "from shop.prices import total\n\nprint(total([1.0, 2.0]))\nprint(total('x'))\n"
    model.enqueue(tool_call("writeFile", {"filePath": "main.py", "content": main}, call_id="w1"))
    model.enqueue(
        tool_call(
            "symbols",
            {"operation": "definition", "filePath": "main.py", "symbol": "total", "line": 3},
            call_id="s1",
        )
    )
    model.enqueue(
        tool_call("symbols", {"operation": "workspaceSymbols", "query": "total"}, call_id="s2")
    )
    model.enqueue(
        tool_call(
            "symbols",
            {"operation": "references", "filePath": "shop/prices.py", "symbol": "total"},
            call_id="s3",
        )
    )
    model.enqueue(
        tool_call(
            "symbols", {"operation": "documentSymbols", "filePath": "shop/prices.py"}, call_id="s4"
        )
    )
    model.enqueue(text("done"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")
    before = await daemon.request("_cody/tools/list", {"sessionId": sid})

    await daemon.prompt(sid, "use total")

    after = await daemon.request("_cody/tools/list", {"sessionId": sid})
    assert "symbols" not in tool_names(model.requests[0]), "no server ran yet"
    assert "symbols" in tool_names(model.requests[1]), "offered within the turn of the edit"
    absent = {tool["name"]: tool["reason"] for tool in before["absent"]}
    assert "no language server that answers symbol requests runs" in absent["symbols"]
    assert "symbols" in {tool["name"] for tool in after["tools"]}
    assert "symbols" not in {tool["name"] for tool in after["absent"]}
    outputs = tool_outputs(model.requests[-1])
    assert "main.py:4:13 error reportArgumentType" in outputs["w1"]
    assert "main.py:3" not in outputs["w1"], "the good call is fine"
    assert "shop/prices.py:1:5  def total(prices: list[float]) -> float:" in outputs["s1"]
    assert "shop/prices.py:1:5 function total" in outputs["s2"]
    references = outputs["s3"].splitlines()
    assert references[0].endswith("4 results")
    assert {line.split("  ")[0] for line in references[1:]} == {
        "shop/prices.py:1:5",
        "main.py:1:25",
        "main.py:3:7",
        "main.py:4:7",
    }
    assert "shop/prices.py:1:5 function total" in outputs["s4"]
    assert "  shop/prices.py:1:11 variable prices" in outputs["s4"]
    [report] = diagnostics(daemon, "w1")
    assert {"basedpyright", "ruff"} == set(report["servers"])
    await daemon.close()


@needs_ruff
async def test_an_untrusted_project_runs_servers_sandboxed_and_cannot_add_one(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """The project's own config may not name a server command unless the user trusts it;
    the built-in servers still run, read-only under bubblewrap."""
    cody_env.env.pop("CODY_LSP", None)
    cody_env.env["PATH"] = f"{BIN}{os.pathsep}{cody_env.env['PATH']}"
    cody_env.use_mock_provider(model.base_url, extra=RUFF_ONLY)
    ws = cody_env.workspace
    marker = cody_env.root / "pwned"
    (ws / ".cody").mkdir()
    (ws / ".cody" / "config.toml").write_text(
        f'[lsp.evil]\ncommand = ["sh", "-c", "touch {marker}"]\nextensions = [".py"]\n'
        "[lsp]\ndiagnostics_timeout_ms = 20000\n"
    )
    model.enqueue(tool_call("writeFile", {"filePath": "a.py", "content": "x = y\n"}, call_id="w1"))
    model.enqueue(text("done"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "write")

    assert "Undefined name `y`" in tool_outputs(model.requests[-1])["w1"]
    assert not marker.exists(), "the project's server command never ran"
    servers = {pid: cmd for pid, cmd in children(daemon.process.process.pid).items()}
    [ruff] = [cmd for cmd in servers.values() if "ruff" in cmd]
    if os.environ.get("CODY_BWRAP") != "none":
        assert "bwrap" in ruff and "--unshare-net" in ruff
    await daemon.close()


@needs_ruff
async def test_a_command_that_changes_an_open_file_gets_its_new_diagnostics(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """After `exec`, the files the servers hold are read again: what a command broke in
    them comes back with the command's result."""
    lsp_env(cody_env, model, RUFF_ONLY + "[lsp]\ndiagnostics_timeout_ms = 20000\n")
    ws = cody_env.workspace
    model.enqueue(tool_call("writeFile", {"filePath": "a.py", "content": "x = 1\n"}, call_id="w1"))
    script = "open('a.py', 'a').write('print(missing)\\n')"
    model.enqueue(tool_call("exec", {"command": [sys.executable, "-c", script]}, call_id="e1"))
    model.enqueue(tool_call("exec", {"command": ["true"]}, call_id="e2"))
    model.enqueue(text("done"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "append")

    outputs = tool_outputs(model.requests[-1])
    assert "no new problems" in outputs["w1"]
    assert "a.py:2:7 error F821 Undefined name `missing`" in outputs["e1"]
    assert "Diagnostics" not in outputs["e2"], "nothing changed: nothing to check"
    [report] = diagnostics(daemon, "e1")
    assert report["path"] == str(ws.resolve() / "a.py")
    await daemon.close()


@needs_ruff
async def test_a_held_file_a_command_made_a_fifo_or_a_dev_zero_link_stalls_nothing(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """A command may replace files the servers hold with a FIFO and a link to `/dev/zero`:
    the check after it opens neither (lsp/files.py reads through core/safe_read.py), so the
    command's result is not held up by a read that never ends, and the servers go on."""
    lsp_env(cody_env, model, RUFF_ONLY + "[lsp]\ndiagnostics_timeout_ms = 20000\n")
    model.enqueue(tool_call("writeFile", {"filePath": "a.py", "content": "x = 1\n"}, call_id="w1"))
    model.enqueue(tool_call("writeFile", {"filePath": "b.py", "content": "y = 2\n"}, call_id="w2"))
    script = (
        "import os; os.remove('a.py'); os.mkfifo('a.py'); "
        "os.remove('b.py'); os.symlink('/dev/zero', 'b.py')"
    )
    model.enqueue(tool_call("exec", {"command": [sys.executable, "-c", script]}, call_id="e1"))
    model.enqueue(
        tool_call("writeFile", {"filePath": "c.py", "content": "print(gone)\n"}, call_id="w3")
    )
    model.enqueue(text("done"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "swap")

    outputs = tool_outputs(model.requests[-1])
    assert "no new problems" in outputs["w1"] and "no new problems" in outputs["w2"]
    assert "Not checked in time" not in outputs["e1"], "no read of the FIFO or /dev/zero"
    assert "c.py:1:7 error F821 Undefined name `gone`" in outputs["w3"]
    assert await daemon.close() == 1, "it exits on `exit` (1: no `shutdown` first), unkilled"


async def test_doctor_lists_the_servers_and_whether_they_start(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    broken = f'["{sys.executable}", "-c", "raise SystemExit(3)"]'
    lsp_env(
        cody_env,
        model,
        f"[lsp.broken]\ncommand = {broken}\nextensions = ['.broken']\n"
        "[lsp.gopls]\ncommand = ['no-such-gopls-here']\n",
    )
    ws = cody_env.workspace
    trusted = f'trusted_projects = ["{ws}"]\n'
    config = cody_env.cody_home / "config.toml"
    config.write_text(config.read_text().replace(trusted, ""))  # sandboxed servers
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_client",
        "doctor",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=cody_env.env,
        cwd=ws,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    lines = out.decode().splitlines()

    assert f"Language servers  for {ws.resolve()}" in lines
    [ruff] = [line for line in lines if line.startswith("  ok  ruff ")]
    assert "started:" in ruff and "[.py .pyi]" in ruff
    if os.environ.get("CODY_BWRAP") != "none":
        assert "sandboxed, read-only" in ruff
    [gopls] = [line for line in lines if " gopls " in line]
    assert gopls.startswith("  --") and "no-such-gopls-here is not installed" in gopls
    [failed] = [line for line in lines if " broken " in line]
    assert failed.startswith("  !!") and "failed:" in failed and "exit code 3" in failed


async def test_a_server_that_keeps_crashing_is_restarted_then_reported_and_left_off(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    crash = f'["{sys.executable}", "-c", "import sys; sys.stderr.write(\'boom\'); sys.exit(3)"]'
    lsp_env(
        cody_env,
        model,
        RUFF_ONLY
        + "[lsp.ruff]\nenabled = false\n"
        + f"[lsp.crashy]\ncommand = {crash}\nextensions = ['.py']\n"
        + "[lsp]\nrestarts = 1\ndiagnostics_timeout_ms = 20000\n",
    )
    for n in range(3):
        model.enqueue(
            tool_call("writeFile", {"filePath": f"f{n}.py", "content": "x = 1\n"}, call_id=f"w{n}")
        )
    model.enqueue(text("done"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")

    result = await daemon.prompt(sid, "write three files")

    assert result["stopReason"] == "end_turn"
    outputs = tool_outputs(model.requests[-1])
    for n in range(3):
        assert outputs[f"w{n}"].startswith("Wrote "), "every edit itself succeeded"
    assert "crashy (the server exited (exit code 3): boom)" in outputs["w0"]
    assert "crashy (the server exited (exit code 3): boom)" in outputs["w1"]
    assert "crashy (left off after 2 failures" in outputs["w2"]
    assert all((cody_env.workspace / f"f{n}.py").exists() for n in range(3))
    await daemon.close()


@needs_ruff
async def test_the_server_stops_with_the_last_session_that_used_it(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    lsp_env(cody_env, model, RUFF_ONLY + "[lsp]\ndiagnostics_timeout_ms = 20000\n")
    for name in ("a", "b"):
        model.enqueue(
            tool_call("writeFile", {"filePath": f"{name}.py", "content": "x = 1\n"}, call_id=name)
        )
        model.enqueue(text("ok"))
    daemon = await start(cody_env)
    first = await daemon.new_session(approvalPolicy="never")
    second = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(first, "a")
    await daemon.prompt(second, "b")
    [ruff] = server_pids(daemon, "ruff")  # one server for the project, shared

    await daemon.request("session/close", {"sessionId": first})
    assert running(ruff), "the other session still uses it"
    await daemon.request("session/close", {"sessionId": second})
    await daemon.wait_for(lambda: not running(ruff))
    await daemon.close()


@needs_ruff
async def test_a_key_quoted_in_a_diagnostic_is_redacted_everywhere(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Servers quote the code in their messages: a credential there is redacted in the
    `_cody/diagnostics` notification as in the result."""
    lsp_env(cody_env, model, RUFF_ONLY + "[lsp]\ndiagnostics_timeout_ms = 20000\n")
    key = "sk_live_0123456789abcdef"
    cody_env.env["MOCK_API_KEY"] = key
    model.enqueue(tool_call("writeFile", {"filePath": "k.py", "content": f"print({key})\n"}))
    model.enqueue(text("done"))
    daemon = await start(cody_env)
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "write")

    [report] = [m["params"] for m in daemon.received if m.get("method") == "_cody/diagnostics"]
    assert report["diagnostics"][0]["code"] == "F821"
    assert key not in json.dumps(report)
    [done] = [u for u in daemon.tool_updates(sid) if u.get("status") == "completed"]
    assert key not in json.dumps(done) and "F821" in json.dumps(done["content"])
    assert key not in tool_outputs(model.requests[-1])[done["toolCallId"]]
    assert "[REDACTED]" in report["diagnostics"][0]["message"]
    await daemon.close()

"""Language servers through the real daemon: diagnostics after edits, `symbols`, restarts.

Real `ruff server` and `basedpyright-langserver` (PyPI wheels in the dev group); the model
is the scripted mock. A server that never answers is a small script (a test double for a
*server*, tests/support/silent_lsp.py).
"""

from __future__ import annotations

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

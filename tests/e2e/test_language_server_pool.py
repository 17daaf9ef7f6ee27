"""The language-server pool in-process, with a real `ruff server`: what the daemon tests
cannot make happen on purpose (an edit whose bound passes before the server answers)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from cody_daemon.config.model import LspConfig
from cody_daemon.core.code_intel import EditedFile
from cody_daemon.lsp.service import LanguageServers

BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not (BIN / "ruff").is_file() and os.environ.get("CI") != "true",
        reason="ruff is not installed",
    ),
]

ONLY_RUFF = LspConfig.model_validate(
    {"basedpyright": {"enabled": False}, "pyright": {"enabled": False}}
)


async def test_what_a_late_server_missed_is_reported_with_the_next_change(tmp_path: Path) -> None:
    env = {"PATH": f"{BIN}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)}
    servers = LanguageServers(env)
    servers.attach("s1", cwd=tmp_path, config=ONLY_RUFF, trusted=True, env=env)
    path = tmp_path / "a.py"
    try:
        path.write_text("x = 1\n")
        first = EditedFile(path=path, before=None, after="x = 1\nprint(missing)\n")
        [late] = await servers.check("s1", [first], bound_s=0)  # no time at all
        assert late.new == () and late.late, "nothing in time: reported as missing"

        second = EditedFile(path=path, before=first.after, after=first.after + "y = 2\n")
        [report] = await servers.check("s1", [second], bound_s=30)

        assert [(d.code, d.line) for d in report.new] == [("F821", 2)]
        third = EditedFile(path=path, before=second.after, after=second.after + "z = 3\n")
        [again] = await servers.check("s1", [third], bound_s=30)
        assert again.new == () and again.servers == ("ruff",), "reported once, not again"

        # The pool is loaded and ruff runs: now the server itself is late.
        fourth = EditedFile(path=path, before=third.after, after=third.after + "print(other)\n")
        [late] = await servers.check("s1", [fourth], bound_s=0)
        assert late.late and late.late[0].startswith("ruff")
        fifth = EditedFile(path=path, before=fourth.after, after=fourth.after + "w = 4\n")
        [caught_up] = await servers.check("s1", [fifth], bound_s=30)
        assert [(d.code, d.line) for d in caught_up.new] == [("F821", 5)]
    finally:
        await servers.aclose()

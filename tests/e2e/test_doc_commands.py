"""The docs' commands and claims are true (issue 24.13).

- `uv run cody-client ...` from the user's project created `.venv` and `uv.lock` there (and
  failed); `uv run --project <checkout> cody-daemon` without `--no-dev` built the whole
  development environment on first use. Every `uv run` of Cody in the docs names the checkout
  and keeps `--no-dev`, and that command, run from an empty project, leaves nothing there.
- The VS Code README installed the daemon with `python3 -m pip install uv` (refused on Debian
  and Ubuntu: PEP 668); it uses `install.py`, which needs only Python.
- docs/acp-editors.md said `auto` uses a Claude login; the daemon never does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv, Daemon

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "editor-plugins" / "vscode" / "README.md",
    REPO / "editor-plugins" / "nvim" / "README.md",
    REPO / "editor-plugins" / "nvim" / "doc" / "cody.txt",
    REPO / "examples" / "README.md",
]
# `uv run`, also spread over an editor's JSON (`"uv", "args": ["run"`), Lua or Lisp config.
UV_RUN_OF_CODY = re.compile(
    r"\buv\b(?:\W{1,6}|\W+(?:args|:command-params)\W+)run\b.{0,160}?\bcody-(?:daemon|client)\b"
)


def uv_runs_of_cody(text: str) -> list[str]:
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(paragraph.split())
        found += [match.group(0) for match in UV_RUN_OF_CODY.finditer(flat)]
    return found


def test_every_uv_run_of_cody_names_the_checkout_and_skips_the_dev_tools() -> None:
    seen = 0
    for doc in DOCS:
        for command in uv_runs_of_cody(doc.read_text(encoding="utf-8")):
            seen += 1
            where = f"{doc.relative_to(REPO)}: {command}"
            assert "--project" in command, f"runs in the user's project: {where}"
            assert "--no-dev" in command, f"builds the development environment: {where}"
    assert seen >= 5, "the pattern still finds the docs' uv commands"
    assert uv_runs_of_cody('"command": "uv",\n  "args": ["run", "--frozen", "cody-daemon"]')


def test_the_documented_uv_command_leaves_the_users_project_alone(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI installs uv: the documented uv command must be run")
        pytest.skip("uv is not installed")
    project = tmp_path / "my-project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "mine"\nversion = "0"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT")}
    result = subprocess.run(
        [uv, "run", "--project", str(REPO), "--frozen", "--no-dev", "cody-daemon", "--version"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "cody-daemon" in result.stdout
    assert sorted(p.name for p in project.iterdir()) == ["pyproject.toml"], "nothing created"


def test_the_vscode_readme_installs_the_daemon_without_pip() -> None:
    text = (REPO / "editor-plugins" / "vscode" / "README.md").read_text(encoding="utf-8")
    install = text[text.index("## Install") : text.index("## Settings")]
    assert "pip install" not in install, "PEP 668: refused by Debian's and Ubuntu's python3"
    assert "`python3\ninstall.py`" in install or "`python3 install.py`" in install
    assert (REPO / "install.py").is_file()


async def test_the_editors_doc_says_what_auto_does_with_a_claude_login(
    cody_env: CodyEnv,
) -> None:
    doc = (REPO / "docs" / "acp-editors.md").read_text(encoding="utf-8")
    bullet = " ".join(doc[doc.index("- **Model credentials.**") :].split("\n- ")[0].split())
    assert "Claude login)" not in bullet
    assert "never used by Cody's own loop" in bullet and "`claude` backend" in bullet

    login = Path(cody_env.env["CLAUDE_CONFIG_DIR"]) / ".credentials.json"
    expires = int((time.time() + 3600) * 1000)
    login.write_text(
        json.dumps({"claudeAiOauth": {"accessToken": "sk-ant-oat-x", "expiresAt": expires}})
    )
    daemon = await Daemon.start(cody_env)
    try:
        result = await daemon.initialize()
    finally:
        await daemon.close()
    assert result["_meta"]["cody"]["defaultProvider"] == "offline", "as the doc now says"

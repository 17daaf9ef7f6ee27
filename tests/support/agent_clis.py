"""The real Codex CLI and Claude Code, pinned in tests/agents/package-lock.json, run offline.

codex-acp (Zed's ACP adapter around Codex) is pinned there too, for `bench/run.py --peers`.

`codex()` / `claude()` return the path of the installed binary, running `npm ci` in
tests/agents first when it is missing or at another version. Without node/npm a test skips on
a developer's machine and fails under `CI=true` (CI installs them).

`codex_home(...)` and `claude_env(...)` build what BACKENDS-style offline runs need: an empty
HOME, a config pointing the CLI at a loopback mock model, fake keys, no telemetry. Nothing
here reads or writes the real `~/.codex` or `~/.claude`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from cody_daemon.backends.info import KINDS, backend_info

__all__ = [
    "AGENTS_DIR",
    "claude",
    "claude_env",
    "codex",
    "codex_acp",
    "codex_env",
    "require_codex_sandbox",
    "write_codex_config",
]

AGENTS_DIR = Path(__file__).resolve().parents[1] / "agents"
_PACKAGES = {
    **{kind: backend_info(kind).npm_package for kind in KINDS},
    "codex-acp": "@zed-industries/codex-acp",  # bench/run.py --peers only
}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def _pinned(package: str) -> str:
    manifest = json.loads((AGENTS_DIR / "package.json").read_text(encoding="utf-8"))
    version: str = manifest["dependencies"][package]
    return version


def _installed(package: str) -> str | None:
    manifest = AGENTS_DIR / "node_modules" / package / "package.json"
    if not manifest.is_file():
        return None
    version: str = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return version


def _ensure_installed() -> None:
    if all(_installed(p) == _pinned(p) for p in _PACKAGES.values()):
        return
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        _unavailable("node and npm are not on PATH (needed for the real Codex / Claude CLIs)")
        return
    install = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=AGENTS_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if install.returncode != 0:
        pytest.fail(f"npm ci failed in {AGENTS_DIR}:\n{install.stdout}\n{install.stderr}")


def _binary(name: str) -> Path:
    _ensure_installed()
    path = AGENTS_DIR / "node_modules" / ".bin" / name
    if not path.exists():
        _unavailable(f"{path} is missing after npm ci")
    return path


def codex() -> Path:
    """The pinned `codex` executable (installing it first when needed)."""
    return _binary("codex")


def claude() -> Path:
    """The pinned `claude` executable (installing it first when needed)."""
    return _binary("claude")


def require_codex_sandbox() -> None:
    """Skip (fail under `CI=true`) unless the pinned Codex CLI's own sandbox (its bundled
    bubblewrap and seccomp) can run a command here: tests that run its commands sandboxed."""
    with tempfile.TemporaryDirectory(prefix="cody-codex-sandbox-") as tmp:
        home = Path(tmp)
        (home / "codex").mkdir()
        env = {"HOME": str(home), "CODEX_HOME": str(home / "codex"), "PATH": "/usr/bin:/bin"}
        probe = subprocess.run(
            [str(codex()), "sandbox", "-c", 'sandbox_mode="workspace-write"', "--", "true"],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    if probe.returncode != 0:
        tail = probe.stderr.strip().splitlines()[-1:] or ["no output"]
        _unavailable(f"the Codex CLI's sandbox cannot run a command here ({tail[0]})")


def codex_acp() -> Path:
    """The pinned `codex-acp` launcher (Zed's ACP adapter around Codex), for the peer bench."""
    return _binary("codex-acp")


def write_codex_config(
    codex_home: Path,
    base_url: str,
    *,
    model: str = "gpt-5.5",
    approval_policy: str = "never",
    sandbox_mode: str = "danger-full-access",
) -> None:
    """A Codex config.toml that sends every model call to `base_url` (a Responses mock, `/v1`)."""
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "mock"\n'
        f'approval_policy = "{approval_policy}"\n'
        f'sandbox_mode = "{sandbox_mode}"\n'
        "\n[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{base_url}"\n'
        'env_key = "MOCK_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n",
        encoding="utf-8",
    )


def _clean_base_env(home: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith(("_API_KEY", "_TOKEN", "_SECRET"))
        and not key.startswith(("CODEX_", "CLAUDE", "ANTHROPIC_", "OPENAI_"))
    }
    home.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    return env


def codex_env(home: Path, codex_home: Path) -> dict[str, str]:
    """Environment for an offline `codex` run: empty HOME, CODEX_HOME, the mock's fake key."""
    env = _clean_base_env(home)
    env["CODEX_HOME"] = str(codex_home)
    env["MOCK_KEY"] = "sk-mock-codex"
    env["RUST_LOG"] = "error"
    return env


def claude_env(home: Path, config_dir: Path, base_url: str) -> dict[str, str]:
    """Environment for an offline `claude` run against an Anthropic mock at `base_url` (no /v1)."""
    env = _clean_base_env(home)
    config_dir.mkdir(parents=True, exist_ok=True)
    env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    env["ANTHROPIC_BASE_URL"] = base_url.rstrip("/").removesuffix("/v1")
    env["ANTHROPIC_API_KEY"] = "sk-ant-mock-claude"
    env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    env["DISABLE_AUTOUPDATER"] = "1"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"
    return env

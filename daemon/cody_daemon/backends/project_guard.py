"""Keeping a cloned repository's own agent settings from running code (untrusted projects).

Observed with the pinned CLIs (see tests/e2e/test_backends.py, the hostile-repository test):
- Claude Code in `-p` mode runs the hooks of `<repo>/.claude/settings.json` (e.g. a
  `SessionStart` command) without asking; `--setting-sources user --strict-mcp-config`
  (mapping.py) keeps the project's settings and `.mcp.json` out;
- the Codex CLI 0.169 says project-local config is disabled until the project is trusted,
  yet still starts the MCP servers of `<repo>/.codex/config.toml` (a `command` of the
  repository's choosing). For an untrusted project the daemon therefore reads every
  `.codex/config.toml` from the workspace up to the file-system root and overrides each MCP
  server named there with a disabled one (`-c mcp_servers.<name>={...enabled=false}`; a
  command-line override beats every config file). A server whose name cannot be written as a
  plain key makes the session refuse to start, saying why.

- the Codex CLI 0.169 itself runs `git -c core.hooksPath=/dev/null -c core.fsmonitor=false
  status --porcelain --ignore-submodules=dirty` in the workspace at every turn (for the
  `has_changes` of its request metadata), with no setting to stop it, so a repository whose
  own git configuration defines a filter driver (`filter.<driver>.clean`, selected by its
  `.gitattributes`) would run that program on any prompt. `codex_git_refusal` names such a
  setting (policy/git_repo.py `guarded_status_hazard`), and the turn is refused before the CLI
  is started, saying how to proceed. Claude Code's own `git status` / `git log` at each turn
  are switched off instead (`CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS`, backends/env.py).

"Trusted" means listed in the user's Cody `trusted_projects`; then nothing is overridden or
refused.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from ..core.safe_read import CONFIG_FILE_LIMIT, read_regular_text
from ..errors import ProviderError
from ..policy.git_repo import guarded_status_hazard

__all__ = ["codex_git_refusal", "codex_project_overrides"]

_PLAIN_KEY: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DISABLED: Final = '{command="/bin/false",args=[],enabled=false}'


def _project_configs(cwd: Path, codex_home: Path) -> list[Path]:
    found: list[Path] = []
    for directory in (cwd, *cwd.parents):
        candidate = directory / ".codex" / "config.toml"
        if candidate.is_file() and candidate.resolve() != (codex_home / "config.toml").resolve():
            found.append(candidate)
    return found


def codex_project_overrides(cwd: Path, codex_home: Path) -> list[str]:
    """`-c` arguments that disable the MCP servers project config files define."""
    names: list[str] = []
    for path in _project_configs(cwd, codex_home):
        try:
            data = tomllib.loads(read_regular_text(path, CONFIG_FILE_LIMIT))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        servers = data.get("mcp_servers")
        if not isinstance(servers, dict):
            continue
        for name in servers:
            if not _PLAIN_KEY.match(name):
                raise ProviderError(
                    kind="provider",
                    provider="codex",
                    message=(
                        f"{path} defines an MCP server ({name[:40]!r}) that the Codex CLI would "
                        "start even though this project is not trusted, and Cody cannot disable "
                        "it by name. Remove it, or add the project to trusted_projects in "
                        "Cody's config.toml if you trust it."
                    ),
                )
            if name not in names:
                names.append(name)
    args: list[str] = []
    for name in names:
        args += ["-c", f"mcp_servers.{name}={_DISABLED}"]
    return args


def codex_git_refusal(cwd: Path, env: Mapping[str, str]) -> ProviderError | None:
    """The error to end a turn with when the Codex CLI's own `git status` in `cwd` could run
    a program of the repository's choosing (see the module docstring), else None. Reads a few
    small files: call it off the event loop."""
    hazard = guarded_status_hazard(cwd, env)
    if hazard is None:
        return None
    return ProviderError(
        kind="provider",
        provider="codex",
        message=(
            f"Cody did not start the Codex CLI in {cwd}: the CLI runs `git status` there at "
            f"every turn, and this repository's git configuration ({hazard[:200]}) could make "
            "git run a program of the repository's choosing. Remove that setting, use Cody's "
            "own agent (the native backend) or Claude Code here, or add the project to "
            "trusted_projects in Cody's config.toml if you trust it."
        ),
    )

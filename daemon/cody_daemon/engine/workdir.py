"""Where a stored session runs once `session/load` or `session/resume` makes it live again.

Contract (docs/protocol.md "Sessions"):
- A session runs in the directory it was created in; the request's `cwd` is not used.
- With `_meta.cody.relocate` it runs in the request's `cwd` instead (an existing directory).
  When that is another directory, the session's "allow for this session" grants are dropped:
  they were given for that directory's programs and files (`make` there is not `make` here).
  A codex/claude session cannot move (its agent CLI's thread belongs to its directory); a
  fork, which runs Cody's own loop, can. The session file keeps the directory it was created
  in, so the next load without `relocate` is back there.
- A session whose directory no longer exists still loads (replay, `_cody/session/history` and
  fork need no directory) with a warning, but cannot be continued there: a prompt or a
  compaction answers -32602 (`require_workdir`), saying how to continue it elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidParams, Issue

__all__ = ["Workdir", "gone_message", "refuse_live_move", "require_workdir", "workdir_for"]


@dataclass(frozen=True, slots=True)
class Workdir:
    path: Path
    moved: bool
    """It is not the directory the session was created in: drop its session grants."""
    warning: str | None = None


def workdir_for(
    session_id: str, recorded: str, *, relocate_to: str | None, backend: str
) -> Workdir:
    """The directory a stored session runs in (see the module's contract)."""
    own = Path(recorded)
    if relocate_to is None:
        if own.is_dir():
            return Workdir(own, moved=False)
        return Workdir(own, moved=False, warning=gone_message(session_id, recorded))
    target = Path(relocate_to)
    if not target.is_dir():
        raise InvalidParams(
            f"cwd {relocate_to} is not an existing directory.",
            [Issue(key="cwd", message="not an existing directory", value=relocate_to)],
        )
    if _real(target) == _real(own):
        return Workdir(own, moved=False)
    if backend != "native":
        raise InvalidParams(
            f"Session {session_id} runs on the {backend} backend, whose thread belongs to "
            f"{recorded}: it cannot move to {relocate_to}. Fork it instead (a fork runs Cody's "
            "own loop with the same history).",
            [
                Issue(
                    key="_meta.cody.relocate",
                    message=f"a {backend} session cannot change its directory",
                    value=True,
                    source="_meta.cody",
                )
            ],
        )
    return Workdir(
        target,
        moved=True,
        warning=(
            f"Session {session_id} continues in {relocate_to} instead of {recorded}; its "
            '"allow for this session" grants were given there and are dropped.'
        ),
    )


def gone_message(session_id: str, cwd: str | Path) -> str:
    return (
        f"The directory of session {session_id}, {cwd}, no longer exists: the session can be "
        "read but not continued there. Continue it in another directory with session/load or "
        f"session/resume of {session_id} with `_meta.cody.relocate` and that directory as `cwd`."
    )


def require_workdir(session_id: str, cwd: Path) -> None:
    """InvalidParams when the session's directory no longer exists (nothing can run there)."""
    if cwd.is_dir():
        return
    raise InvalidParams(
        gone_message(session_id, cwd),
        [
            Issue(
                key="cwd",
                message="the session's directory no longer exists",
                value=str(cwd),
                source="session file",
            )
        ],
    )


def refuse_live_move(session_id: str, cwd: Path, relocate_to: str) -> None:
    """A session already live in this daemon stays where it runs (another client uses it)."""
    if _real(cwd) == _real(Path(relocate_to)):
        return
    raise InvalidParams(
        f"Session {session_id} is open in this daemon in {cwd}: close it (session/close) "
        f"before moving it to {relocate_to}.",
        [Issue(key="_meta.cody.relocate", message="the session is live", source="_meta.cody")],
    )


def _real(path: Path) -> str:
    return os.path.realpath(path)

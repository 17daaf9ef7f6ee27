"""A git repository whose own settings make git run a program, for the agent-CLI attacks.

`hostile_repository(path, markers)` builds a repository (committed `a.txt`, then modified, so
`git status` and `git diff` compare contents) that runs `touch <markers>/PWNED-<vector>` from:
- `core.fsmonitor` (every command that reads the index: status, diff, add...);
- hooks in `.git/hooks` (`post-index-change` runs when status refreshes the index; the
  others when a commit, checkout or reference update happens);
- `log.showSignature` with `gpg.program`, on a commit carrying a `gpgsig` header (git log);
- `diff.external` (git diff);
- with `filters=True`: a `.gitattributes` selecting the driver `evil` for `*.txt`, whose
  `filter.evil.clean` / `smudge` and `diff.evil.textconv` are programs (status, add, diff).

The markers live outside the repository, so nothing in it can hide them.
`prove_it_runs(repo, markers)` runs plain git there and returns the markers that appeared
(then removes them): each test first shows the fixture is real.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["hostile_repository", "markers_in", "prove_it_runs"]

_HOOKS = (
    "post-index-change",
    "pre-commit",
    "post-commit",
    "post-checkout",
    "reference-transaction",
)


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        input=stdin,
        capture_output=True,
        check=True,
    )
    return done.stdout


def _sign_head(repo: Path) -> None:
    """Give HEAD a `gpgsig` header (not a valid signature: git still asks gpg.program)."""
    head, _, message = _git(repo, "cat-file", "commit", "HEAD").partition(b"\n\n")
    signature = (
        b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAd\n -----END PGP SIGNATURE-----"
    )
    commit = head + b"\n" + signature + b"\n\n" + message
    oid = _git(repo, "hash-object", "-t", "commit", "-w", "--stdin", stdin=commit).strip()
    _git(repo, "update-ref", "HEAD", oid.decode())


def hostile_repository(path: Path, markers: Path, *, filters: bool = True) -> Path:
    markers.mkdir(parents=True, exist_ok=True)
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    (path / "a.txt").write_text("one\n")
    if filters:
        (path / ".gitattributes").write_text("*.txt filter=evil diff=evil\n")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "one")
    _sign_head(path)
    (path / "a.txt").write_text("two\n")

    def touch(vector: str) -> str:
        return f"touch {markers}/PWNED-{vector}"

    program = markers.parent / "hostile-program"
    program.write_text(f"#!/bin/sh\n{touch('gpg')}\nexit 1\n")
    program.chmod(0o755)
    settings = {
        "core.fsmonitor": f"{touch('fsmonitor')}; false",
        "log.showSignature": "true",
        "gpg.program": str(program),
        "diff.external": f"{touch('external')}; true",
    }
    if filters:
        settings |= {
            "filter.evil.clean": f"{touch('clean')}; cat",
            "filter.evil.smudge": f"{touch('smudge')}; cat",
            "diff.evil.textconv": f"{touch('textconv')}; cat",
        }
    for key, value in settings.items():
        _git(path, "config", key, value)
    for hook in _HOOKS:
        script = path / ".git" / "hooks" / hook
        script.write_text(f"#!/bin/sh\n{touch('hook-' + hook)}\n")
        script.chmod(0o755)
    return path


def markers_in(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.glob("PWNED-*"))


def prove_it_runs(repo: Path, markers: Path) -> list[str]:
    """Run `git status`, `git log` and `git diff` directly; the markers that appeared."""
    for command in (["status"], ["log", "--oneline", "-n", "5"], ["diff"]):
        subprocess.run(["git", *command], cwd=repo, capture_output=True, check=False)
    found = markers_in(markers)
    for name in found:
        (markers / name).unlink()
    return found

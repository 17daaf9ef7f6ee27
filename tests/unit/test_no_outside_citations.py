"""The repository cites only what it carries.

Cody was started from contract documents kept outside the repository. A reader of a fresh
clone cannot open them, so no tracked file may cite them (by name or by their directory):
the wire protocol is docs/protocol.md, the layers and pygls pitfalls are docs/architecture.md,
the backends docs/backends.md. The names are assembled here so this file does not match.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_MD = ".md"
CITATIONS: tuple[str, ...] = (
    "PROTOCOL" + _MD,
    "PRODUCT" + _MD,
    "PYGLS" + "_NOTES",
    "STYLE" + _MD,
    "BACKENDS" + _MD,
    "USER" + "_ASKS",
    "../" + "shared",
    "/work/" + "shared",
)
"""Case-sensitive: docs/protocol.md and docs/backends.md are the repository's own."""


def tracked_files() -> list[str]:
    """The repository's files, relative to its root: tracked and new (not ignored) ones, from
    git; a walk when git is absent."""
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return _walk()
    return [name for name in listing.decode().split("\0") if name]


def _walk() -> list[str]:
    skipped = {"node_modules", "__pycache__"}
    found: list[str] = []
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in skipped]
        found.extend(str(Path(root, name).relative_to(REPO)) for name in files)
    return found


def citations_in(text: str) -> list[str]:
    return [name for name in CITATIONS if name in text]


def find_citations(root: Path, files: list[str]) -> list[str]:
    """`path:line: cites NAME` for every citation in `files` (relative to `root`)."""
    hits = []
    for name in files:
        path = root / name
        try:
            data = path.read_bytes()
        except OSError:  # listed but absent (deleted in the work tree)
            continue
        if b"\0" in data[:8192]:
            continue  # binary (screenshots)
        text = data.decode("utf-8", errors="replace")
        for line_number, line in enumerate(text.splitlines(), 1):
            for cited in citations_in(line):
                hits.append(f"{name}:{line_number}: cites {cited}")
    return hits


def test_no_tracked_file_cites_documents_outside_the_repository() -> None:
    files = tracked_files()
    assert "docs/protocol.md" in files, "the repository's own protocol reference is missing"
    assert find_citations(REPO, files) == []


def test_the_check_reports_every_citation_with_its_line(tmp_path: Path) -> None:
    for cited in CITATIONS:
        assert citations_in(f"see {cited} section 2") == [cited]
    assert citations_in("see docs/protocol.md and docs/backends.md") == []
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("fine\nas in " + CITATIONS[0] + " Errors\n")
    (tmp_path / "picture.png").write_bytes(b"\x89PNG\0" + CITATIONS[0].encode())
    assert find_citations(tmp_path, ["docs/a.md", "picture.png", "gone.md"]) == [
        f"docs/a.md:2: cites {CITATIONS[0]}"
    ]

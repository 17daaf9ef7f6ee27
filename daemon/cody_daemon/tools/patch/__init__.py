"""The Codex `*** Begin Patch` format: parsing, in-memory application, transactional commit.

`parse_patch` (text -> file operations) -> `plan_changes` (operations -> every file's new
content, computed in memory; nothing written) -> `commit_changes` (all or nothing). The
`applyPatch` tool (tools/apply_patch.py) adds the sandbox, approval preview and result.
"""

from .apply import HunkError, apply_hunks, seek
from .files import FileChange, PatchError, commit_changes, op_paths, plan_changes
from .parse import AddFile, DeleteFile, FileOp, Hunk, PatchParseError, UpdateFile, parse_patch

__all__ = [
    "AddFile",
    "DeleteFile",
    "FileChange",
    "FileOp",
    "Hunk",
    "HunkError",
    "PatchError",
    "PatchParseError",
    "UpdateFile",
    "apply_hunks",
    "commit_changes",
    "op_paths",
    "parse_patch",
    "plan_changes",
    "seek",
]

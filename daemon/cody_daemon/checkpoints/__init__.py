"""Checkpoints of a workspace: snapshots in a shadow git repository, and safe restores.

The store lives in Cody's data directory (`<data dir>/checkpoints/<workspace key>/`), one
repository per workspace, never in the workspace and never in its `.git`:

- `git.py` runs git so that nothing from the workspace or the user's configuration can make
  it run a program (no hooks, fsmonitor, filters, attribute drivers, includes; a private
  environment);
- `repo.py` takes snapshots (a commit of the whole tree, incremental through a private
  index) and answers what changed between two of them (`changes.py` reads git's answer);
- `restore.py` writes a snapshot's files back without following a symlink, only inside the
  workspace and never into `.git`, `.cody` or another git directory;
- `store.py` finds (and creates) the repository of a workspace.

The engine decides when to snapshot and what to restore (engine/checkpoints.py,
engine/rewind.py); this package knows nothing about sessions or turns.
"""

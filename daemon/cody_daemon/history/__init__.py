"""Unified history: Codex, Claude Code and Cody sessions read as `UnifiedMessage`s.

One parser module per source (codex_rollout, codex_exec, claude_code, claude_stream,
cody_session), one tool vocabulary (vocabulary.py), streaming line by line (lines.py) in
timestamp-ordered chunks with resumable cursors (paging.py), discovery on disk
(discovery.py) and the import into a Cody history (importer.py). Layer: below the engine;
imports only core, errors, ids and store.
"""

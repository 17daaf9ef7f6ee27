"""What teams keep for their agents, read from the files they already have: custom commands
(`.claude/commands`, `$CODEX_HOME/prompts`, Cody's own), skills (`SKILL.md` folders) and hooks
(Claude Code's and Codex's JSON shape). README "Commands, skills and hooks";
docs/extensions.md.

This layer reads and parses (discovery.py) and runs hook processes (hook_runner.py); it knows
nothing of sessions or turns: the engine decides when a hook runs and what its answer does
(engine/hooks.py). Every file here may come from a hostile repository: it is read through
core/safe_read.py (regular files only, bounded), a project's file only when its real path lies
inside the project, and nothing from an untrusted project's hooks ever runs.
"""

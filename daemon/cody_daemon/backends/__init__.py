"""External agent CLIs (the Codex CLI, Claude Code) as a session's agent loop.

One module per CLI behind the `AgentBackend` interface (base.py); discovery.py finds the
CLIs, mapping.py turns Cody's settings into their flags, failures.py classifies their errors.
The engine (engine/backend_turn.py) drives a backend and persists what it reports.
"""

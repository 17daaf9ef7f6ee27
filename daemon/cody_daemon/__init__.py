"""Cody's stdio JSON-RPC daemon: sessions, turn loop, tools, approvals, persistence.

Layers: `rpc/` (the only code that imports pygls) -> `engine/` (sessions, turns) ->
`providers/`, `tools/`, `policy/`, `store/`, `config/`. `app.py` wires them together.
"""

__version__ = "0.1.0"

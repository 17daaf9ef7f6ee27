"""The processes `exec` starts, and the ones that outlive their call.

- `launcher.py`: the long-lived helper (stdlib only) that starts every command and kills
  everything it left behind; `launcher_client.py`: the daemon's side of it.
- `buffers.py`: where output goes (head and tail; a ring for later reads).
- `process.py`: one running command (output, input, exit, stop).
- `table.py`: a session's processes and the daemon's limits, launcher and network namespaces.
- `report.py`: what the model is told about a process (new output, state).
"""

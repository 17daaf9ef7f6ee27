"""Real MCP servers, written with the `mcp` SDK, that the MCP client tests start.

Each module here is also a script: `python <script>` serves MCP over stdio
(`demo_stdio.py`) or streamable HTTP (`demo_http.py`), or misbehaves on purpose
(`hang.py`, `crash.py`), or hands out its environment and files (`env_echo.py`, for the
secrets suite). `SCRIPTS` maps the short names the tests use to their paths.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

SCRIPTS = {
    "demo": HERE / "demo_stdio.py",
    "http": HERE / "demo_http.py",
    "hang": HERE / "hang.py",
    "crash": HERE / "crash.py",
    "slow": HERE / "slow_start.py",
    "envecho": HERE / "env_echo.py",
}

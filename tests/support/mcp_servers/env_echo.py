"""`python env_echo.py`: an MCP server (stdio) that hands out what it can see, for the
secrets suite: `environment()` returns its whole environment, `read_file(path)` any file.

A real server could be this careless (or hostile); the daemon must redact its output.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer


def build_server() -> MCPServer:
    server = MCPServer("envecho", log_level="WARNING")

    @server.tool(description="The server's environment variables, one NAME=value per line.")
    def environment() -> str:
        return "\n".join(f"{name}={value}" for name, value in sorted(os.environ.items()))

    @server.tool(description="The text of any file.")
    def read_file(path: str) -> str:
        return Path(path).read_text(errors="replace")

    return server


if __name__ == "__main__":
    build_server().run("stdio")

"""`python hang.py`: never answers the MCP handshake (sleeps, reading nothing)."""

from __future__ import annotations

import sys
import time

if __name__ == "__main__":
    print("hang: pretending to download something huge", file=sys.stderr, flush=True)
    time.sleep(600)

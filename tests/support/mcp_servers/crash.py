"""`python crash.py`: prints a log line to stdout, then exits with code 3 and a reason on stderr."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    print("crash: starting up", file=sys.stderr)
    print("this log line should have gone to stderr", flush=True)  # breaks MCP on stdout
    print("crash: DEMO_TOKEN is not set; cannot start", file=sys.stderr)
    sys.exit(3)

"""A language server that never answers: reads its input and says nothing (a test double for
a *server*, used to show that an edit waits for it at most `[lsp] diagnostics_timeout_ms`)."""

import sys

if __name__ == "__main__":
    while sys.stdin.buffer.read(4096):
        pass

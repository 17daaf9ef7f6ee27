"""Broken Content-Length frames a client (or a stray writer on its pipe) can send (issue 8.8).

Each case is the bad bytes as written to the daemon's stdin, in one or more writes; a
well-formed frame follows them. After any of them, the reader must resync and the next
well-formed frame must be answered. Used by tests/unit/test_framing.py (the reader alone)
and tests/e2e/test_rpc.py (the real daemon).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BAD_FRAME_CASES", "BadFrame", "lsp_frame"]

_BODY = b'{"jsonrpc":"2.0","id":"bad","method":"session/list","params":{}}'


def lsp_frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@dataclass(frozen=True)
class BadFrame:
    name: str
    writes: tuple[bytes, ...]
    """The bad input, in the writes the client makes (the good frame is a later write)."""
    glued: bool = False
    """The good frame must be written in the same write as the last bad bytes."""


BAD_FRAME_CASES: tuple[BadFrame, ...] = (
    BadFrame(
        "content_length_too_small",
        (b"Content-Length: %d\r\n\r\n%s" % (len(_BODY) - 10, _BODY),),
    ),
    BadFrame(
        "content_length_too_large_rest_arrives_later",
        (b"Content-Length: %d\r\n\r\n%s" % (len(_BODY) + 1000, _BODY),),
    ),
    BadFrame(
        "content_length_too_large_by_a_few_bytes",
        (b"Content-Length: %d\r\n\r\n%s" % (len(_BODY) + 5, _BODY),),
        glued=True,
    ),
    BadFrame("content_length_negative", (b"Content-Length: -5\r\n\r\n" + _BODY,)),
    BadFrame("content_length_not_a_number", (b"Content-Length: sixty\r\n\r\n" + _BODY,)),
    BadFrame("content_length_empty", (b"Content-Length: \r\n\r\n" + _BODY,)),
    BadFrame(
        "content_length_missing",
        (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + _BODY,),
    ),
    BadFrame(
        "content_length_duplicated_with_different_values",
        (b"Content-Length: 12\r\nContent-Length: %d\r\n\r\n%s" % (len(_BODY), _BODY),),
    ),
    BadFrame(
        "content_length_over_the_limit",
        (b"Content-Length: 999999999999999\r\n\r\n" + _BODY,),
    ),
    BadFrame("eleven_stray_bytes_without_a_newline", (b"stray bytes",)),
    BadFrame("a_stray_line", (b"a stray print from somewhere\r\n",)),
    BadFrame("header_without_a_blank_line", (b"Content-Length: %d\r\n%s" % (len(_BODY), _BODY),)),
    BadFrame("content_length_zero", (b"Content-Length: 0\r\n\r\n",)),
    BadFrame("body_that_is_not_json", (lsp_frame(b"this is not JSON at all"),)),
)
assert len(BAD_FRAME_CASES) >= 12
assert len(b"stray bytes") == 11

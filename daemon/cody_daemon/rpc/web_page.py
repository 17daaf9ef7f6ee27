"""The web page's files (rpc/page/, checked in as plain source: no build step, no CDN) and
the headers every answer of the web listener carries.

Invariants:
- Only the files of rpc/page/ with a known type are served, read once at start into a table
  keyed by URL path: no request path ever becomes a file system path.
- Every answer (a file, a refusal, a 404) has a strict Content-Security-Policy: scripts and
  styles from this origin only, no inline script or style, no `eval`, nothing framed or
  framing, connections only to this listener's own WebSocket, and Trusted Types required, so
  a string assigned to `innerHTML` (or any other HTML sink) throws in the browser. The page's
  own rule (tests/unit/test_web_page.py scans it) is that text only ever reaches the DOM
  through `textContent`.
- No CORS header is ever sent; nothing is cached (`no-store`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["PAGE_DIR", "PageFiles", "security_headers"]

PAGE_DIR = Path(__file__).with_name("page")

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}


def security_headers(host: str | None) -> list[tuple[str, str]]:
    """The headers of every answer; `host` (a checked Host header) names the one WebSocket
    the page may open."""
    connect = f"ws://{host}" if host else "'none'"
    policy = "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src {connect}",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
            "require-trusted-types-for 'script'",
            "trusted-types 'none'",
        )
    )
    return [
        ("Content-Security-Policy", policy),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
        ("Permissions-Policy", "camera=(), microphone=(), geolocation=()"),
    ]


@dataclass(frozen=True, slots=True)
class PageFile:
    body: bytes
    content_type: str


class PageFiles:
    """The page's files by URL path (`/` is index.html)."""

    def __init__(self, directory: Path = PAGE_DIR) -> None:
        self._files: dict[str, PageFile] = {}
        for path in sorted(directory.iterdir()):
            content_type = _TYPES.get(path.suffix)
            if content_type is None or not path.is_file():
                continue
            self._files[f"/{path.name}"] = PageFile(path.read_bytes(), content_type)
        if "/index.html" in self._files:
            self._files["/"] = self._files["/index.html"]

    def get(self, url_path: str) -> PageFile | None:
        return self._files.get(url_path)

    def paths(self) -> list[str]:
        return list(self._files)

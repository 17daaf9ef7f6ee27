"""The web page's own rules (docs/web.md, "What the page shows"), read from its source: no
HTML is ever written from a string, no inline script or style, nothing from outside this
origin; and the daemon serves exactly the files that are there."""

from __future__ import annotations

import re
from pathlib import Path

from cody_daemon.rpc.web_page import PAGE_DIR, PageFiles, security_headers

HTML_WRITERS = re.compile(
    r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment"
    r"|srcdoc|\beval\s*\(|new\s+Function\s*\(|setTimeout\s*\(\s*['\"`]|\.setHTML|parseHTMLUnsafe"
    r"|javascript:"
)
"""Every way a script can turn a string into markup or code."""


def scripts() -> list[Path]:
    return sorted(PAGE_DIR.glob("*.js"))


def test_no_script_of_the_page_writes_html_or_code_from_a_string() -> None:
    assert scripts(), "the page has scripts"
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in scripts()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if HTML_WRITERS.search(line) and not line.lstrip().startswith("//")
    ]
    assert found == [], "HTML or code written from a string (use dom.js el()/textContent)"


def test_text_reaches_the_dom_only_through_dom_js() -> None:
    """Attributes go through el()'s allow-list; only dom.js and the page's own fixed
    strings set textContent; no module sets an arbitrary attribute name."""
    for path in scripts():
        source = path.read_text()
        if path.name != "dom.js":
            assert not re.search(r"setAttribute\(\s*[A-Za-z_]", source), path.name
        for match in re.finditer(r"\.(href|src|action|formAction)\s*=", source):
            raise AssertionError(f"{path.name} sets .{match.group(1)}")


def test_the_html_has_no_inline_script_style_or_remote_resource() -> None:
    html = (PAGE_DIR / "index.html").read_text()
    assert re.findall(r"<script(?![^>]*\bsrc=\"/)", html) == []
    assert "style=" not in html and "<style" not in html
    assert re.findall(r"(?:src|href)=\"(?!/|#)", html) == [], "only this origin's files"
    for path in PAGE_DIR.iterdir():
        assert "http://" not in path.read_text().replace("http://www.w3.org/2000/svg", ""), path


def test_the_served_files_are_the_page_directory_and_nothing_else() -> None:
    files = PageFiles()
    expected = {f"/{path.name}" for path in PAGE_DIR.iterdir()} | {"/"}
    assert set(files.paths()) == expected
    assert files.get("/../web_page.py") is None and files.get("/%2e%2e/x") is None
    index = files.get("/")
    assert index is not None and index.content_type.startswith("text/html")


def test_the_policy_allows_only_this_origin_and_requires_trusted_types() -> None:
    headers = dict(security_headers("127.0.0.1:8765"))
    policy = headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy
    assert "connect-src ws://127.0.0.1:8765" in policy
    assert "require-trusted-types-for 'script'" in policy
    assert "unsafe" not in policy
    assert not [name for name in headers if name.lower().startswith("access-control")]

"""The chat's markdown, streamed line by line (clients/cody_client/markdown.py): what is printed
while a reply streams is never redrawn, so it must be what the whole reply renders to."""

from __future__ import annotations

import io

from cody_client.inert import guard
from cody_client.markdown import MarkdownStream

REPLY = (
    "# Plan\n\nFirst I read the files. "
    + "This sentence is long enough to wrap over several lines of the terminal. " * 4
    + "\n\nThe command succeeded. Its output:\n\n```\nHello from the Cody demo!\nsecond line\n```\n\n"
    "- one item\n- two items\n\nDone."
)


def rendered(chunks: list[str]) -> tuple[str, list[str]]:
    out = io.StringIO()
    stream = MarkdownStream(guard(out))
    stream.console.width = 60
    seen = []
    for chunk in chunks:
        stream.add(chunk)
        seen.append(out.getvalue())
    assert stream.end()
    return out.getvalue(), seen


def text_lines(output: str) -> list[str]:
    """The printed lines with text (blocks rendered apart may be spaced differently)."""
    return [line.rstrip() for line in output.splitlines() if line.strip()]


def test_streaming_in_small_pieces_prints_what_the_whole_reply_renders_to() -> None:
    """Regression: a code line printed half-written (`Hello from`) was never completed."""
    whole, _ = rendered([REPLY])
    for size in (1, 3, 7, 16):
        pieces = [REPLY[i : i + size] for i in range(0, len(REPLY), size)]
        streamed, _ = rendered(pieces)
        assert text_lines(streamed) == text_lines(whole), f"chunks of {size}"
    assert "Hello from the Cody demo!" in whole and "```" not in whole


def test_a_long_paragraph_shows_its_lines_before_it_ends() -> None:
    words = [word + " " for word in ("lorem ipsum dolor sit amet " * 30).split()]
    _, seen = rendered(words)
    assert seen[len(words) // 2].count("\n") >= 3, "wrapped lines are shown while it streams"


def test_an_open_code_fence_waits_for_its_end() -> None:
    _, seen = rendered(["Output:\n\n", "```\nHello from", " the demo\n", "```\n", "\nafter"])
    assert "Hello from" not in seen[2], "a half code line is never printed"
    assert "Hello from the demo" in seen[3]

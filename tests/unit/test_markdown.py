"""Names with underscores stay as typed in rendered answers; code and emphasis are untouched."""

from __future__ import annotations

import io

import pytest
from cody_client.markdown import literal_underscores
from rich.console import Console
from rich.markdown import Markdown


def rendered(text: str) -> str:
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(Markdown(literal_underscores(text)))
    return out.getvalue()


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("Edit __init__.py next.", "Edit __init__.py next."),
        ("Ignore __pycache__/ folders.", "Ignore __pycache__/ folders."),
        ('if __name__ == "__main__":', 'if __name__ == "__main__":'),
        ("call _private_helper and snake_case", "call _private_helper and snake_case"),
    ],
)
def test_names_with_underscores_render_as_typed(source: str, shown: str) -> None:
    assert shown in rendered(source)


def test_code_and_star_emphasis_are_untouched() -> None:
    text = "**bold** and `__x__`\n\n```python\nclass A:\n    def __init__(self): ...\n```\n"
    escaped = literal_underscores(text)
    assert "`__x__`" in escaped and "def __init__(self)" in escaped
    out = rendered(text)
    assert "**" not in out and "bold" in out
    assert "def __init__(self): ..." in out


def test_an_already_escaped_underscore_is_not_escaped_twice() -> None:
    assert literal_underscores(r"a \_b") == r"a \_b"

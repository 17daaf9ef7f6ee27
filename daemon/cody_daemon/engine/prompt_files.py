"""The prompt texts Cody sends to models, read from `engine/prompts/*.md`.

Invariants:
- every text a model receives from Cody itself (system prompt, family notes, the permissions
  and environment item, the project-instructions header, `/init` and `/review`) lives in a
  file under `prompts/`, packaged with the wheel (hatchling ships every file of the package
  directory; tests/e2e/test_install.py runs an installed copy);
- a file is read once per process and cached; its text is used as written, with trailing
  whitespace removed (so an editor's final newline never changes a request);
- placeholders are `string.Template` ones (`$name`); `render` fails loudly (KeyError) on a
  missing value, so a renamed placeholder cannot silently reach a model.
"""

from __future__ import annotations

import functools
from pathlib import Path
from string import Template

__all__ = ["PROMPTS_DIR", "prompt", "render"]

PROMPTS_DIR = Path(__file__).with_name("prompts")


@functools.cache
def prompt(name: str) -> str:
    """The text of `prompts/<name>.md` (`name` may hold a subdirectory: `permissions/x`)."""
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8").rstrip()


def render(name: str, **values: str) -> str:
    """`prompt(name)` with its `$placeholders` filled from `values`."""
    return Template(prompt(name)).substitute(values)

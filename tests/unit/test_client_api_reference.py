"""docs/client-api.md is generated from the library's docstrings (cody_client.api_reference):
it must say what the code says."""

from __future__ import annotations

import cody_client
from cody_client.api_reference import PAGE_PATH, render


def test_the_api_reference_page_is_up_to_date() -> None:
    assert PAGE_PATH.read_text(encoding="utf-8") == render(), (
        "docs/client-api.md is stale: run `uv run python -m cody_client.api_reference --write`"
    )


def test_every_exported_name_is_on_the_page() -> None:
    page = PAGE_PATH.read_text(encoding="utf-8")
    for name in cody_client.__all__:
        if name != "__version__":
            assert f"`{name}" in page or f"class `{name}" in page, name

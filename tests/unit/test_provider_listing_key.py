"""The provider listing's key covers the code that derives it (providers/listing.py): the
version never changes across `git pull && python3 install.py`, so a module that shapes the
listing but is not in `_DERIVED_BY` would leave a stale listing after an upgrade."""

from __future__ import annotations

import subprocess
import sys

from cody_daemon.providers import listing

STATEMENT = """
import sys
from cody_daemon.config.loader import load_user_config
from cody_daemon.providers.catalog import ProviderCatalog
from cody_daemon.providers.listing import provider_listing
print(" ".join(sorted(sys.modules)))
"""

NOT_SHAPING = {
    "config/__init__.py",
    "config/paths.py",  # where the file is, not what it says
    "providers/__init__.py",
    "errors.py",  # error messages only
}


def _source_path(module: str) -> str:
    """`cody_daemon.config.loader` -> `config/loader.py` (a package -> its `__init__.py`)."""
    parts = module.removeprefix("cody_daemon.").split(".")
    if module in PACKAGES:
        return "/".join([*parts, "__init__.py"])
    return "/".join(parts) + ".py"


PACKAGES = {"cody_daemon.config", "cody_daemon.providers"}


def test_every_module_that_shapes_the_listing_is_in_its_key() -> None:
    result = subprocess.run(
        [sys.executable, "-c", STATEMENT], check=True, capture_output=True, text=True
    )
    shaping = {
        _source_path(name)
        for name in result.stdout.split()
        if name.startswith(("cody_daemon.config", "cody_daemon.providers"))
        or name == "cody_daemon.validation"
    }
    assert "config/loader.py" in shaping  # the import list is real
    assert shaping - set(listing._DERIVED_BY) - NOT_SHAPING == set()

"""`initialize` on the wire without pydantic: its params read and its answer written as JSON.

The daemon answers `initialize` before anything imports pydantic (docs/architecture.md,
"Starting fast"); the models in `cody_protocol.initialize` stay the contract:

- `plain_client_capabilities(params)` returns exactly what
  `InitializeParams.model_validate(params).client_capabilities.wire()` returns, for params
  that are plain: every field of the JSON type its model declares and no key spelled as a
  Python field name (`client_info`, `meta`, ...). For any other params it returns None and
  the caller validates them with the model, which coerces as pydantic does or raises the
  -32602 every method raises for bad params.
- `initialize_result(...)` returns exactly what the `InitializeResult` model would dump.

tests/unit/test_initialize_wire.py holds both to the models (generated params included).
"""

from __future__ import annotations

from typing import Any, Final

from cody_protocol.codes import PROTOCOL_VERSION

__all__ = ["initialize_result", "plain_client_capabilities"]

_PYTHON_NAMES: Final = frozenset(
    {
        "protocol_version",
        "client_capabilities",
        "client_info",
        "read_text_file",
        "write_text_file",
        "meta",
    }
)
"""Field names the models also accept as keys (`validate_by_name`); params using them go
through the model, which decides which spelling wins."""


def plain_client_capabilities(params: Any) -> dict[str, Any] | None:
    """The wire form of `clientCapabilities`, or None when the params are not plain."""
    if params is None:
        params = {}
    if not _plain_object(params):
        return None
    version = params.get("protocolVersion", PROTOCOL_VERSION)
    if type(version) not in (int, str):
        return None
    if not _plain_client_info(params.get("clientInfo")):
        return None
    capabilities = params.get("clientCapabilities", {})
    if not _plain_object(capabilities):
        return None
    fs = capabilities.get("fs", {})
    if not _plain_object(fs):
        return None
    read = fs.get("readTextFile", False)
    write = fs.get("writeTextFile", False)
    terminal = capabilities.get("terminal", False)
    meta = capabilities.get("_meta")
    if not all(type(flag) is bool for flag in (read, write, terminal)):
        return None
    if meta is not None and not _plain_object(meta, field_names_too=True):
        return None
    wire: dict[str, Any] = {
        "fs": {"readTextFile": read, "writeTextFile": write},
        "terminal": terminal,
    }
    if meta is not None:
        wire["_meta"] = meta
    return wire


def _plain_object(value: Any, *, field_names_too: bool = False) -> bool:
    """A JSON object (`_meta`'s free-form keys may be anything, `field_names_too`)."""
    if type(value) is not dict:
        return False
    return field_names_too or _PYTHON_NAMES.isdisjoint(value)


def _plain_client_info(info: Any) -> bool:
    if info is None:
        return True
    if not _plain_object(info):
        return False
    title = info.get("title")
    return (
        type(info.get("name")) is str
        and type(info.get("version")) is str
        and (title is None or type(title) is str)
    )


def initialize_result(
    *,
    version: str,
    images: bool,
    auth_methods: list[dict[str, Any]],
    providers: list[dict[str, Any]],
    default_provider: str,
    extensions: list[str],
    data_dir: str,
    config_file: str,
    binaries: list[dict[str, Any]],
    locations: dict[str, str],
) -> dict[str, Any]:
    """`InitializeResult` as JSON. `auth_methods` and `providers` are `AuthMethod` /
    `ProviderInfo` shapes, `binaries` `BinaryInfo` ones, `locations` a `DaemonLocations`,
    without null members."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": images, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {
                "list": {},
                "resume": {},
                "close": {},
                "delete": {},
                "fork": {},
            },
            "auth": {"logout": {}},
        },
        "authMethods": auth_methods,
        "agentInfo": {"name": "cody", "version": version, "title": "Cody"},
        "_meta": {
            "cody": {
                "version": version,
                "extensions": extensions,
                "providers": providers,
                "defaultProvider": default_provider,
                "dataDir": data_dir,
                "configFile": config_file,
                "binaries": binaries,
                "locations": locations,
            }
        },
    }

"""The `lsprotocol.types` stand-in (rpc/lazy_lsprotocol.py) says what lsprotocol says.

These run in a fresh interpreter each: the stand-in must be installed before pygls is
imported, and this test process has imported the real module already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import attrs
import lsprotocol.types as real
from cody_daemon.rpc import lazy_lsprotocol
from cody_daemon.rpc.protocol import make_converter
from lsprotocol import converters
from pygls.protocol import JsonRPCResponseMessage


def run(code: str) -> Any:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(result.stdout.splitlines()[-1])


def test_every_eager_name_matches_lsprotocol() -> None:
    eager = lazy_lsprotocol._eager()
    for name, value in eager.items():
        assert hasattr(real, name), f"lsprotocol.types has no {name}"
        actual = getattr(real, name)
        if isinstance(value, str) or name == "LSPAny":
            assert value == actual, name
        elif name in ("ResponseError", "ResponseErrorMessage"):
            mine = [(a.name, a.default) for a in attrs.fields(value)]
            theirs = [(a.name, a.default) for a in attrs.fields(actual)]
            assert mine == theirs, name
        elif name in ("PositionEncodingKind", "TextDocumentSyncKind"):
            assert {m.name: m.value for m in value} == {m.name: m.value for m in actual}, name


def test_pygls_imports_without_loading_lsprotocol_types_and_binds_only_eager_names() -> None:
    """If a newer pygls reads another name at import, the real module loads: this fails."""
    loaded = run(
        "import sys, json\n"
        "from cody_daemon.rpc.lazy_lsprotocol import install, installed\n"
        "install()\n"
        "import pygls.server, pygls.protocol, pygls.exceptions\n"
        "import cody_daemon.rpc.server\n"
        "print(json.dumps(installed()))"
    )
    assert loaded is True


def test_any_other_name_loads_the_real_module_and_then_everything_is_real() -> None:
    report = run(
        "import sys, json\n"
        "from cody_daemon.rpc.lazy_lsprotocol import install, installed\n"
        "install()\n"
        "import pygls.server\n"
        "from lsprotocol import types\n"
        "hover = types.Hover(contents='x')\n"
        "position = types.Position(line=1, character=2)\n"
        "real = sys.modules['lsprotocol.types']\n"
        "print(json.dumps({'installed': installed(), 'hover': type(hover) is real.Hover,\n"
        "  'position': type(position) is real.Position,\n"
        "  'isinstance': isinstance(position, types.Position),\n"
        "  'same_error': types.ResponseError is real.ResponseError}))"
    )
    assert report == {
        "installed": False,
        "hover": True,
        "position": True,
        "isinstance": True,
        "same_error": True,
    }


def test_a_deferred_class_loads_the_real_one_when_used() -> None:
    report = run(
        "import sys, json\n"
        "from cody_daemon.rpc.lazy_lsprotocol import install, installed\n"
        "install()\n"
        "from lsprotocol.types import Position\n"
        "before = installed()\n"
        "p = Position(line=3, character=4)\n"
        "print(json.dumps({'before': before, 'after': installed(), 'line': p.line,\n"
        "  'is_real': type(p) is sys.modules['lsprotocol.types'].Position,\n"
        "  'isinstance': isinstance(p, Position)}))"
    )
    assert report == {
        "before": True,
        "after": False,
        "line": 3,
        "is_real": True,
        "isinstance": True,
    }


def test_the_converter_gives_pygls_answers_lsprotocols_wire_shape() -> None:
    ours = make_converter()
    theirs = converters.get_converter()
    cases: list[tuple[Any, Any]] = [
        (
            lazy_lsprotocol.ResponseErrorMessage(
                id=5, error=lazy_lsprotocol.ResponseError(code=-32601, message="x")
            ),
            real.ResponseErrorMessage(id=5, error=real.ResponseError(code=-32601, message="x")),
        ),
        (
            lazy_lsprotocol.ResponseErrorMessage(
                id="a", error=lazy_lsprotocol.ResponseError(code=-1, message="m", data={"k": None})
            ),
            real.ResponseErrorMessage(
                id="a", error=real.ResponseError(code=-1, message="m", data={"k": None})
            ),
        ),
        (
            lazy_lsprotocol.ResponseErrorMessage(
                id=None, error=lazy_lsprotocol.ResponseError(code=-2, message="m")
            ),
            real.ResponseErrorMessage(id=None, error=real.ResponseError(code=-2, message="m")),
        ),
    ]
    for result in (None, {"a": None, "b": [1, {"c": "d"}]}, [], "text"):
        message = JsonRPCResponseMessage(id=7, jsonrpc="2.0", result=result)
        cases.append((message, message))
    for mine, reference in cases:
        assert ours.unstructure(mine) == theirs.unstructure(reference)
    # The real classes (a process where lsprotocol is loaded) take the same shape.
    for _, reference in cases:
        assert ours.unstructure(reference) == theirs.unstructure(reference)

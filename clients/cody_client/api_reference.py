"""Generate the client library's API reference (`docs/client-api.md`) from its docstrings.

Run `python -m cody_client.api_reference --write` after changing the public API or a
docstring; a test fails when the checked-in page differs from what this produces. The page
lists every name `cody_client` exports (`cody_client.__all__`), grouped by the module that
defines it, each with its signature and docstring, and a class's public methods, properties
and fields. Only `inspect` is used: no documentation toolchain.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import sys
from functools import partial
from pathlib import Path
from typing import Any

import cody_client

__all__ = ["PAGE_PATH", "main", "render"]

PAGE_PATH = Path(__file__).resolve().parents[2] / "docs" / "client-api.md"

_MODULES = ("client", "session", "sync", "decisions", "errors", "connection", "daemon_command")
"""The order of the page's sections (the modules defining the exported names)."""

_HEADER = """\
# The Python client library: API reference

Generated from the docstrings by `python -m cody_client.api_reference --write` (a test keeps
this page and the code in step): every name `import cody_client` offers, grouped by the module
that defines it. How to install the library into your project, and an example: the
[README](../README.md#cody-in-your-own-python-project). The wire protocol underneath:
[protocol.md](protocol.md). Updates, requests and results are the pydantic models of
`cody_protocol` (`protocol/cody_protocol/`).
"""


def render() -> str:
    """The whole page."""
    names = [name for name in cody_client.__all__ if name != "__version__"]
    by_module: dict[str, list[str]] = {}
    for name in names:
        by_module.setdefault(cody_client._EXPORTS[name], []).append(name)
    parts = [_HEADER]
    for module_name in sorted(by_module, key=_section_order):
        module = importlib.import_module(f"cody_client.{module_name}")
        parts.append(f"\n## `cody_client.{module_name}`\n")
        summary = _first_paragraph(inspect.getdoc(module))
        if summary:
            parts.append(f"\n{summary}\n")
        for name in sorted(by_module[module_name], key=partial(_source_line, module)):
            parts.append(_entry(name, getattr(module, name)))
    return "".join(parts).rstrip() + "\n"


def _section_order(module: str) -> tuple[int, str]:
    return (_MODULES.index(module) if module in _MODULES else len(_MODULES), module)


def _source_line(module: Any, name: str) -> int:
    value = getattr(module, name)
    try:
        return inspect.getsourcelines(value)[1]
    except (TypeError, OSError):
        return 10**9  # an alias such as a union: after the classes


def _entry(name: str, value: Any) -> str:
    if inspect.isclass(value):
        return _class(name, value)
    if inspect.isfunction(value):
        return f"\n### `{name}{_signature(value)}`\n{_doc(value)}"
    return f"\n### `{name}`\n\n`{name} = {_type_text(value)}`\n"


def _class(name: str, cls: type) -> str:
    bases = [b.__name__ for b in cls.__bases__ if b is not object]
    heading = f"{name}({', '.join(bases)})" if bases else name
    lines = [f"\n### class `{heading}`\n", _doc(cls)]
    if dataclasses.is_dataclass(cls):
        fields = [f for f in dataclasses.fields(cls) if not f.name.startswith("_")]
        if fields:
            lines.append("\nFields: " + ", ".join(f"`{f.name}: {f.type}`" for f in fields) + "\n")
    for member_name, member in _own_members(cls):
        if isinstance(member, property):
            lines.append(f"\n#### property `{name}.{member_name}`\n{_doc(member)}")
            continue
        function = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        kind = "classmethod " if isinstance(member, classmethod) else ""
        shown = name if member_name == "__init__" else f"{name}.{member_name}"
        lines.append(
            f"\n#### {kind}`{shown}{_signature(function, drop_first=True)}`\n{_doc(function)}"
        )
    return "".join(lines)


def _own_members(cls: type) -> list[tuple[str, Any]]:
    """Public methods and properties the class itself defines (inherited ones from
    Exception or from a documented base are not repeated), in source order."""
    members = []
    for member_name, member in vars(cls).items():
        if member_name.startswith("_") and member_name not in ("__init__",):
            continue
        if member_name == "__init__" and dataclasses.is_dataclass(cls):
            continue
        if isinstance(member, property | classmethod | staticmethod) or inspect.isfunction(member):
            members.append((member_name, member))
    return members


def _signature(function: Any, *, drop_first: bool = False) -> str:
    """`(a: int, *, b: str = 'x') -> None`, annotations as written in the source."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return "(...)"
    parts: list[str] = []
    star_done = False
    parameters = list(signature.parameters.values())
    if drop_first and parameters and parameters[0].name in ("self", "cls"):
        parameters = parameters[1:]
    for parameter in parameters:
        if parameter.kind is parameter.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if parameter.kind is parameter.VAR_POSITIONAL:
            star_done = True
        prefix = ""
        if parameter.kind is parameter.VAR_POSITIONAL:
            prefix = "*"
        elif parameter.kind is parameter.VAR_KEYWORD:
            prefix = "**"
        text = f"{prefix}{parameter.name}"
        if parameter.annotation is not parameter.empty:
            text += f": {_annotation(parameter.annotation)}"
        if parameter.default is not parameter.empty:
            text += f" = {parameter.default!r}"
        parts.append(text)
    result = f"({', '.join(parts)})"
    if signature.return_annotation is not signature.empty:
        result += f" -> {_annotation(signature.return_annotation)}"
    return result


def _annotation(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _doc(value: Any) -> str:
    """The object's own docstring as a paragraph ("" without one: neither an inherited one
    nor the signature dataclasses write in place of a missing docstring)."""
    doc = value.__doc__ if isinstance(value, type) else inspect.getdoc(value)
    if isinstance(value, type):
        doc = inspect.cleandoc(doc) if doc else None
        if doc is not None and doc.startswith(f"{value.__name__}("):
            doc = None  # written by @dataclass
    if not doc or doc.startswith("Initialize self."):
        return ""
    return f"\n{doc}\n"


def _first_paragraph(doc: str | None) -> str:
    return doc.split("\n\n")[0].strip() if doc else ""


def _type_text(value: Any) -> str:
    text = str(value)
    return text.replace("cody_client.decisions.", "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cody_client.api_reference")
    parser.add_argument("--write", action="store_true", help=f"write {PAGE_PATH}")
    args = parser.parse_args(argv)
    page = render()
    if args.write:
        PAGE_PATH.write_text(page, encoding="utf-8")
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())

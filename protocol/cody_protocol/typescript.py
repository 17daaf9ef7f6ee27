"""TypeScript types for the VS Code extension, generated from the checked-in JSON Schema.

`python -m cody_protocol.schema --write` writes `editor-plugins/vscode/src/protocol/
generated.ts` from `protocol/schema/cody-protocol.schema.json`; a test fails when the file
differs from what this produces (tests/unit/test_vscode_types.py). The extension's own
`types.ts` only re-exports it and names a few unions.

What is produced, per `$defs` entry: an `interface` for an object (a property is optional
when the schema does not require it, except the tag of a discriminated union, which is
always sent), a `type` for anything else. JSON Schema maps as: `anyOf`/`oneOf` -> a union,
`enum`/`const` -> literals, `{}` (any value) -> `Json`, `additionalProperties` -> an index
signature. Also `ErrorCode` (`x-error-codes`) and `Method` (`x-methods`, keys in camelCase).
Deterministic: the same schema always gives the same text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

__all__ = ["method_key", "render_typescript"]

HEADER = """\
// Generated from protocol/schema/cody-protocol.schema.json by
// `python -m cody_protocol.schema --write` (cody_protocol/typescript.py). Do not edit:
// tests/unit/test_vscode_types.py fails when this file is stale.

/** Any JSON value (`rawInput`, `rawOutput`, error `data`, `_meta`). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
"""

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def render_typescript(schema: dict[str, Any]) -> str:
    """The whole `generated.ts` for `schema` (the protocol schema as `schema.generate()`)."""
    defs: dict[str, Any] = schema["$defs"]
    tags = _discriminants(defs)
    parts = [HEADER]
    for name in sorted(defs):
        parts.append(_definition(name, defs[name], tags.get(name, frozenset())))
    parts.append(_error_codes(schema.get("x-error-codes", {})))
    parts.append(_methods(schema.get("x-methods", {})))
    return "\n".join(parts)


def _doc(text: str | None, indent: str = "") -> str:
    if not text:
        return ""
    lines = text.replace("*/", "*\\/").strip().splitlines()
    if len(lines) == 1:
        return f"{indent}/** {lines[0]} */\n"
    body = "".join(f"{indent} * {line}".rstrip() + "\n" for line in lines)
    return f"{indent}/**\n{body}{indent} */\n"


def _discriminants(node: Any, found: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """For each `$defs` name, the properties that tag it in a discriminated union."""
    found = {} if found is None else found
    if isinstance(node, dict):
        discriminator = node.get("discriminator")
        if isinstance(discriminator, dict):
            for ref in discriminator.get("mapping", {}).values():
                found.setdefault(ref.rsplit("/", 1)[1], set()).add(discriminator["propertyName"])
        for value in node.values():
            _discriminants(value, found)
    elif isinstance(node, list):
        for value in node:
            _discriminants(value, found)
    return found


def _definition(name: str, node: dict[str, Any], tags: Collection[str]) -> str:
    doc = _doc(node.get("description") or f"`{name}`")
    if node.get("type") == "object" and "properties" in node:
        return f"{doc}export interface {name} {_object(node, '', tags)}\n"
    return f"{doc}export type {name} = {_type(node, '')};\n"


def _object(node: dict[str, Any], indent: str, tags: Collection[str] = ()) -> str:
    """An object type; a `tags` property (a union's discriminant, always sent) is required."""
    required = {*node.get("required", ()), *tags}
    inner = indent + "  "
    lines = ["{"]
    for key in sorted(node.get("properties", {})):
        prop = node["properties"][key]
        optional = key not in required
        name = key if _IDENTIFIER.match(key) else json.dumps(key)
        lines.append(
            _doc(prop.get("description"), inner)
            + f"{inner}{name}{'?' if optional else ''}: {_type(prop, inner)};"
        )
    extra = node.get("additionalProperties")
    if extra is True or isinstance(extra, dict):
        value = "Json" if extra is True else _type(extra, inner)
        lines.append(f"{inner}[key: string]: {value};")
    lines.append(f"{indent}}}")
    return "\n".join(lines)


def _type(node: dict[str, Any], indent: str) -> str:  # noqa: PLR0911 - one branch per form
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[1]
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        return " | ".join(json.dumps(value) for value in node["enum"])
    variants = node.get("anyOf") or node.get("oneOf")
    if variants:
        return _union([_type(variant, indent) for variant in variants])
    kind = node.get("type")
    if isinstance(kind, list):
        return _union([_type({**node, "type": one}, indent) for one in kind])
    if kind == "object":
        if "properties" in node:
            return _object(node, indent)
        extra = node.get("additionalProperties", True)
        value = "Json" if extra is True or extra == {} else _type(extra, indent)
        return f"{{ [key: string]: {value} }}"
    if kind == "array":
        item = _type(node.get("items", {}), indent)
        return f"({item})[]" if " " in item and not item.startswith("{") else f"{item}[]"
    simple = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}
    if kind in simple:
        return simple[kind]
    if kind == "null":
        return "null"
    return "Json"


def _union(members: list[str]) -> str:
    unique = list(dict.fromkeys(members))
    return " | ".join(unique)


def _camel(words: list[str]) -> str:
    words = [word for word in words if word]
    return words[0] + "".join(word[:1].upper() + word[1:] for word in words[1:])


def method_key(name: str, spec: str) -> str:
    """`session/request_permission` -> `sessionRequestPermission`, `_cody/models/list` ->
    `codyModelsList`, `$/cancel_request` -> `cancelRequestAcp` (the spec tells the two `$/`
    cancels apart)."""
    if name.startswith("$/"):
        return _camel([*re.split(r"[/_]", name[2:]), spec])
    return _camel(re.split(r"[/_]", name.lstrip("_")))


def _error_codes(codes: dict[str, int]) -> str:
    lines = ['/** Every JSON-RPC error code the daemon sends (docs/protocol.md, "Errors"). */']
    lines.append("export const ErrorCode = {")
    for name, code in codes.items():
        key = "".join(word.capitalize() for word in name.lower().split("_"))
        lines.append(f"  {key}: {code},")
    lines.append("} as const;\n")
    return "\n".join(lines)


def _methods(table: dict[str, dict[str, Any]]) -> str:
    lines = ["/** Every method on the wire (cody_protocol.methods.METHODS). */"]
    lines.append("export const Method = {")
    for name, facts in table.items():
        lines.append(f"  {method_key(name, facts['spec'])}: {json.dumps(name)},")
    lines.append("} as const;\n")
    return "\n".join(lines)

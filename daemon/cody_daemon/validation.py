"""Turn pydantic validation errors into `Issue`s that name key, bad value and valid values.

Used for request params (source `params`), `_meta.cody` and configuration files, so every
-32602 a user sees has the same shape.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError

from .errors import Issue

__all__ = ["issues_from_validation_error", "literal_values"]


def literal_values(annotation: Any) -> tuple[Any, ...] | None:
    """The values of a `Literal[...]` annotation (also inside Optional/Union), else None."""
    origin = get_origin(annotation)
    if origin is Literal:
        return get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        values: list[Any] = []
        for arg in get_args(annotation):
            if arg is type(None):
                continue
            inner = literal_values(arg)
            if inner is None:
                if get_origin(arg) is Literal or arg in (str, int, float, bool):
                    return None
                continue
            values.extend(inner)
        return tuple(values) or None
    if get_origin(annotation) is typing.Annotated:
        return literal_values(get_args(annotation)[0])
    return None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _field_info(model: type[BaseModel], key: str) -> tuple[str, Any] | None:
    """(python name, annotation) of a field addressed by name or alias."""
    for name, info in model.model_fields.items():
        if key in (name, info.alias, info.validation_alias):
            return name, info.annotation
    return None


def _walk(model: type[BaseModel], loc: Iterable[int | str]) -> tuple[Any, type[BaseModel] | None]:
    """Follow `loc` through nested models; return the leaf annotation and its parent model."""
    current: type[BaseModel] | None = model
    annotation: Any = None
    parent: type[BaseModel] | None = None
    for part in loc:
        if current is None:
            if annotation is not None and get_origin(annotation) is dict:
                current = _model_of(get_args(annotation)[1])
                annotation = get_args(annotation)[1]
            continue
        if isinstance(part, int):
            continue
        info = _field_info(current, part)
        if info is None:
            # a dict key (e.g. the provider name in model_providers.<name>)
            if annotation is not None and get_origin(annotation) is dict:
                annotation = get_args(annotation)[1]
                current = _model_of(annotation)
            else:
                parent, annotation = current, None
                current = None
            continue
        parent = current
        annotation = info[1]
        current = _model_of(annotation)
        if get_origin(annotation) is dict:
            current = None
    return annotation, parent


def issues_from_validation_error(
    exc: ValidationError,
    model: type[BaseModel],
    *,
    source: str | None = None,
    key_prefix: str = "",
) -> list[Issue]:
    """One Issue per error, keyed by dotted path, with the valid values where finite."""
    issues: list[Issue] = []
    for err in exc.errors(include_url=False):
        loc = tuple(part for part in err["loc"] if not _is_union_tag(part))
        key = key_prefix + ".".join(str(part) for part in loc)
        annotation, parent = _walk(model, loc)
        valid: tuple[Any, ...] | None = None
        message = str(err["msg"])
        if err["type"] == "extra_forbidden" and parent is not None:
            message = "unknown key"
            valid = tuple(info.alias or name for name, info in parent.model_fields.items())
        elif annotation is not None:
            valid = literal_values(annotation)
        issues.append(
            Issue(
                key=key or "params",
                message=message,
                value=err.get("input") if err["type"] != "missing" else None,
                valid=valid,
                source=source,
            )
        )
    return issues


def _is_union_tag(part: int | str) -> bool:
    """pydantic inserts union member names (e.g. `function-after[...]`) into locs."""
    return isinstance(part, str) and ("[" in part or part.startswith("function-"))

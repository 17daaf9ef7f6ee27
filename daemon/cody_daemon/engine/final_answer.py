"""A turn whose final answer must validate against a JSON Schema (`_meta.cody.outputSchema`).

How the schema reaches the model (`FinalAnswer.via`):
- `response_format`: the provider has structured output (`structured_output`: the Responses
  API's `text.format`, Chat Completions' `response_format`); every model call of the turn
  carries the schema, sent `strict` only when the schema meets OpenAI's strict rules (every
  object closed with `additionalProperties: false` and all its properties required: a
  strict request with any other schema is a 400). The final answer is the text of the last
  model call that asked for no tool.
- `tool`: any other API (Anthropic's Messages, the offline model). The model is offered a
  `respond` tool whose input is the answer; its arguments are the answer. A schema that is
  not an object is wrapped as `{"value": <schema>}` (tool input must be an object) and
  unwrapped again. Ending the turn with text instead counts as a failed answer, and the
  next call forces `respond` (`ModelRequest.tool_choice`).

Checking: the answer is parsed as JSON and validated (jsonschema, the draft the schema's
`$schema` names, 2020-12 by default; no remote `$ref` is ever fetched). A failed answer is
answered once: the model gets the errors (a `respond` call's result, or a note recorded as
a context item: engine/context_items.py) and tries again; a second failure ends the turn
with `valid: false` and the errors, which `cody-client exec` turns into exit code 7.

Invariants: a schema the validator refuses is -32602 before anything runs (`check_schema`);
validation never runs on the event loop for large answers (callers use `check_*_async`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from cody_protocol.prompt import StructuredOutput

from ..core.tooling import ToolSpec
from ..errors import InvalidParams, Issue
from ..providers.base import ModelRequest, ToolCallRequested
from ..tools.base import ToolResult
from .prompt_files import prompt, render
from .toolcalls import error_result

__all__ = [
    "MAX_FAILURES",
    "RESPOND",
    "AnswerStep",
    "FinalAnswer",
    "check_schema",
    "strict_compatible",
]

RESPOND = "respond"
"""The tool that carries the answer on APIs without structured output."""
MAX_FAILURES = 2
"""Failed answers before the turn gives up (the first one is answered with the errors)."""
_WRAPPED = "value"
_MAX_ERRORS = 10


def _validator_class(schema: Mapping[str, Any]) -> Any:
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    return validator_for(schema, default=Draft202012Validator)


def check_schema(schema: Any) -> None:
    """Raise InvalidParams (naming `_meta.cody.outputSchema`) unless `schema` is a JSON
    Schema the validator accepts."""
    from jsonschema.exceptions import SchemaError

    problem: str | None = None
    if not isinstance(schema, dict):
        problem = "must be a JSON Schema object"
    else:
        try:
            _validator_class(schema).check_schema(schema)
        except SchemaError as exc:
            where = "/".join(str(part) for part in exc.absolute_path) or "(root)"
            problem = f"not a valid JSON Schema at {where}: {exc.message}"
    if problem is not None:
        raise InvalidParams(
            f"_meta.cody.outputSchema {problem}",
            [Issue(key="_meta.cody.outputSchema", message=problem, source="params")],
        )


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict structured output takes `schema` as it is (module docstring)."""
    if isinstance(schema, list):
        return all(strict_compatible(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if "object" in _types(schema) or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or not isinstance(properties, dict):
            return False
        if set(schema.get("required") or ()) != set(properties):
            return False
    return all(strict_compatible(value) for key, value in schema.items() if key != "enum")


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    return {k for k in kind if isinstance(k, str)} if isinstance(kind, list) else set()


@dataclass(frozen=True, slots=True)
class Verdict:
    valid: bool
    value: Any = None
    errors: tuple[str, ...] = ()


@dataclass(slots=True)
class AnswerStep:
    """What the turn does after a model call that gave (or failed to give) the answer."""

    done: bool
    """The turn ends now (a valid answer, or the last failed one)."""
    respond: list[tuple[ToolCallRequested, ToolResult]] = field(default_factory=list)
    """`respond` calls to show and close with these results (what the model sees)."""
    skipped: list[ToolCallRequested] = field(default_factory=list)
    """Other calls of the same response, closed unrun: the answer ended the turn."""
    run: list[ToolCallRequested] = field(default_factory=list)
    """Other calls of the same response, run before the model tries again."""
    note: str | None = None
    """Why the answer failed, for the model (recorded as an `answer_check` context item)."""


class FinalAnswer:
    """One turn's output contract (see the module docstring)."""

    def __init__(self, schema: dict[str, Any], *, structured_output: bool) -> None:
        self.schema = schema
        self.via: Literal["response_format", "tool"] = (
            "response_format" if structured_output else "tool"
        )
        self._validator = _validator_class(schema)(schema)
        self._wrapped = not _is_object_schema(schema)
        self.failures = 0
        self.output: StructuredOutput | None = None
        self._strict = strict_compatible(schema)

    # -- the request ---------------------------------------------------------------------

    def shape(self, request: ModelRequest) -> ModelRequest:
        """`request` with the schema in it (as the API's structured output, or `respond`)."""
        if self.via == "response_format":
            return replace(request, output_schema=self.schema, output_strict=self._strict)
        tools = [tool for tool in request.tools if tool.name != RESPOND]
        tools.append(self.respond_spec())
        forced = RESPOND if self.failures else None  # after a failed answer: respond, now
        return replace(request, tools=tools, tool_choice=forced)

    def respond_spec(self) -> ToolSpec:
        parameters = (
            {
                "type": "object",
                "properties": {_WRAPPED: self.schema},
                "required": [_WRAPPED],
                "additionalProperties": False,
            }
            if self._wrapped
            else self.schema
        )
        return ToolSpec(
            name=RESPOND, description=prompt("final_answer/respond_tool"), parameters=parameters
        )

    # -- checking ------------------------------------------------------------------------

    async def after_call(
        self, calls: Sequence[ToolCallRequested], text: str, steer_pending: bool
    ) -> AnswerStep | None:
        """Check what a model call answered (`text`: its message); None when it gave no
        answer yet (tool calls to run, or a steered message to read first)."""
        respond = [call for call in calls if call.name == RESPOND] if self.via == "tool" else []
        if respond:
            verdict = await self.check_arguments(respond[0].arguments)
            done = self.settle(verdict, respond[0].arguments)
            results = [(respond[0], _respond_result(verdict))]
            results += [(call, error_result(_IGNORED)) for call in respond[1:]]
            others = [call for call in calls if call.name != RESPOND]
            if done:
                return AnswerStep(done=True, respond=results, skipped=others)
            return AnswerStep(done=False, respond=results, run=others)
        if calls or steer_pending:
            return None
        if self.via == "tool":
            verdict = Verdict(False, errors=("the turn ended without a `respond` call",))
        else:
            verdict = await self.check_text(text)
        if self.settle(verdict, text or None):
            return AnswerStep(done=True)
        return AnswerStep(done=False, note=self.retry_note(verdict))

    async def check_text(self, text: str) -> Verdict:
        return await asyncio.to_thread(self._check, _strip_fence(text), wrapped=False)

    async def check_arguments(self, arguments: str) -> Verdict:
        return await asyncio.to_thread(self._check, arguments, wrapped=self._wrapped)

    def _check(self, text: str, *, wrapped: bool) -> Verdict:
        try:
            value = json.loads(text)
        except ValueError as exc:
            return Verdict(False, errors=(f"not JSON: {exc}",))
        if wrapped:
            if not isinstance(value, dict) or _WRAPPED not in value:
                return Verdict(False, errors=(f"the input has no `{_WRAPPED}`",))
            value = value[_WRAPPED]
        try:
            errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.path))
        except Exception as exc:  # e.g. a `$ref` the schema cannot resolve (never fetched)
            return Verdict(False, errors=(f"the schema cannot check it: {exc}",))
        if errors:
            return Verdict(False, errors=tuple(_describe(error) for error in errors[:_MAX_ERRORS]))
        return Verdict(True, value=value)

    def settle(self, verdict: Verdict, text: str | None) -> bool:
        """Record an answer; True when the turn is done (valid, or failed `MAX_FAILURES`
        times), False when the model gets another try."""
        if not verdict.valid:
            self.failures += 1
        done = verdict.valid or self.failures >= MAX_FAILURES
        self.output = StructuredOutput(
            valid=verdict.valid,
            value=verdict.value,
            text=text,
            errors=list(verdict.errors),
            via=self.via,
        )
        return done

    def retry_note(self, verdict: Verdict) -> str:
        """What the model is told after an answer that failed without a `respond` call."""
        errors = "\n".join(f"- {error}" for error in verdict.errors)
        if self.via == "response_format":
            return render("final_answer/retry_json", errors=errors)
        return render("final_answer/retry_tool", errors=errors)


_IGNORED = "ignored: only the first respond call counts"


def _respond_result(verdict: Verdict) -> ToolResult:
    if verdict.valid:
        return ToolResult(output="Answer recorded.")
    return error_result("the answer does not follow the schema: " + "; ".join(verdict.errors))


def _is_object_schema(schema: Mapping[str, Any]) -> bool:
    return _types(schema) == {"object"}


def _strip_fence(text: str) -> str:
    """The JSON inside a lone Markdown code fence (models add one despite being told)."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and stripped.count("```") == 2:
        body = stripped[3:-3]
        first, _, rest = body.partition("\n")
        return rest if first.strip().isalnum() or not first.strip() else body
    return stripped


def _describe(error: Any) -> str:
    where = "/".join(str(part) for part in error.absolute_path)
    message = str(error.message)
    if len(message) > 300:
        message = message[:297] + "..."
    return f"at /{where}: {message}" if where else message

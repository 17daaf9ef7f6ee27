"""Answering an MCP server's question (`_cody/mcp/elicit`) in a terminal.

Interactive (a TTY in chat mode): the server's message is shown (inert), then the user
answers or declines; a form is filled in field by field (its title, description, type,
choices and default shown; an empty answer keeps the default or leaves an optional field
out; a value that does not fit the field's type is asked again); a URL is shown, never
opened, and the user says whether they went there. Ctrl-C or Ctrl-D cancels. Without a
terminal every question is declined with one line saying so. Everything the server sent is
shown through the client's output gate (cody_client/inert.py).
"""

from __future__ import annotations

import sys
from typing import Any

from cody_protocol.mcp import McpElicitParams, McpElicitResult

from .inert import one_line
from .terminal import Renderer

__all__ = ["FieldError", "TerminalElicitor", "parse_field"]


class FieldError(ValueError):
    """An answer that does not fit the field (the message says what would)."""


def parse_field(schema: dict[str, Any], text: str) -> Any:
    """The value of one form field from what the user typed (see the module docstring)."""
    kind = schema.get("type", "string")
    choices = _choices(schema)
    if kind == "array":
        items = schema.get("items") or {}
        allowed = _choices(items)
        values = [word.strip() for word in text.split(",") if word.strip()]
        wrong = [value for value in values if allowed and value not in allowed]
        if wrong:
            raise FieldError(f"choose from {', '.join(allowed)} (comma-separated)")
        return values
    if choices and text not in choices:
        raise FieldError(f"choose one of {', '.join(choices)}")
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in ("y", "yes", "true"):
            return True
        if lowered in ("n", "no", "false"):
            return False
        raise FieldError("answer yes or no")
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            raise FieldError(f"a{'n integer' if kind == 'integer' else ' number'}") from None
    return text


def _choices(schema: dict[str, Any]) -> list[str]:
    if isinstance(schema.get("enum"), list):
        return [str(value) for value in schema["enum"]]
    options = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(options, list):
        return [str(option["const"]) for option in options if isinstance(option, dict)]
    return []


class TerminalElicitor:
    """`CodyClient.on_elicitation` for a terminal (see the module docstring)."""

    def __init__(self, renderer: Renderer, *, interactive: bool | None = None) -> None:
        self.renderer = renderer
        self.interactive = sys.stdin.isatty() if interactive is None else interactive

    async def __call__(self, request: McpElicitParams) -> McpElicitResult:
        server = one_line(request.server)
        if not self.interactive:
            self.renderer.line(f"  MCP server {server} asked a question; declined (no terminal)")
            return McpElicitResult(action="decline")
        self.renderer.line(f"  MCP server {server} asks:")
        for line in request.message.splitlines() or [""]:
            self.renderer.line(f"  │ {one_line(line)}")
        try:
            if request.mode == "url":
                self.renderer.line(f"  │ URL: {one_line(request.url or '')}")
                answer = await self._ask("  Did you open it and finish there? [y/n]: ")
                return McpElicitResult(action="accept" if _yes(answer) else "decline")
            answer = await self._ask("  Answer? [y/n]: ")
            if not _yes(answer):
                return McpElicitResult(action="decline")
            return McpElicitResult(action="accept", content=await self._form(request))
        except (KeyboardInterrupt, EOFError):
            return McpElicitResult(action="cancel")

    async def _form(self, request: McpElicitParams) -> dict[str, Any]:
        schema = request.requested_schema or {}
        required = set(schema.get("required") or [])
        content: dict[str, Any] = {}
        for name, declared in (schema.get("properties") or {}).items():
            field: dict[str, Any] = declared if isinstance(declared, dict) else {}
            label = one_line(str(field.get("title") or name))
            about = field.get("description")
            if about:
                self.renderer.line(f"  {label}: {one_line(str(about))}")
            hints = [str(field.get("type", "string"))]
            if _choices(field) or _choices(field.get("items") or {}):
                hints.append(", ".join(_choices(field) or _choices(field.get("items") or {})))
            if "default" in field:
                hints.append(f"default {field['default']}")
            prompt = f"  {label} ({one_line('; '.join(hints))}){' *' if name in required else ''}: "
            while True:
                text = (await self._ask(prompt)).strip()
                if not text:
                    if "default" in field:
                        content[name] = field["default"]
                        break
                    if name not in required:
                        break
                    self.renderer.line("  this field is required")
                    continue
                try:
                    content[name] = parse_field(field, text)
                    break
                except FieldError as exc:
                    self.renderer.line(f"  {exc}")
        return content

    async def _ask(self, prompt: str) -> str:
        from prompt_toolkit import PromptSession

        session: PromptSession[str] = PromptSession()
        # handle_sigint=False: as for approvals, Ctrl-C arrives as KeyboardInterrupt here.
        return await session.prompt_async(prompt, handle_sigint=False)


def _yes(text: str) -> bool:
    return text.strip().lower() in ("y", "yes")

"""`exec`'s arguments as the model sees them (their schema and descriptions), and how long a
call waits for its command.

Invariants: `command` is a non-empty string or an argv whose first item is a program;
`yieldMs` and any `waitMs` are at most `MAX_WAIT_MS`; a call waits `timeoutMs` (default
`DEFAULT_TIMEOUT_MS`) for a command, `yieldMs` for one that may outlive it, nothing for one
started in the background without `yieldMs`, and never past `timeoutMs` when it is given.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from .processes.report import MAX_WAIT_MS

__all__ = ["DEFAULT_TIMEOUT_MS", "MAX_TIMEOUT_MS", "ExecArgs", "wait_s"]

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 3_600_000


class ExecArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    command: list[str] | str = Field(
        description=(
            "The command to run. An array of strings runs that program directly with those "
            'arguments (e.g. ["git", "status"]); a string runs through `bash -c`, so pipes, '
            '`&&` and quoting work (e.g. "ls -la | head"). Without background or yieldMs the '
            "command cannot read stdin."
        )
    )
    cwd: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(
        default=None,
        description=(
            "Working directory for the command; relative paths are resolved against the "
            "session's working directory (the default)."
        ),
    )
    timeout_ms: Annotated[
        int | None,
        WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS}),
    ] = Field(
        default=None,
        alias="timeoutMs",
        ge=1,
        le=MAX_TIMEOUT_MS,
        description=(
            f"Kill the command after this many milliseconds (default {DEFAULT_TIMEOUT_MS}, "
            f"maximum {MAX_TIMEOUT_MS}; with background or yieldMs: no limit unless given)."
        ),
    )
    background: bool = Field(
        default=False,
        description=(
            "Start it and return at once with a processId; it keeps running (also past a "
            "cancelled turn) until it exits, killProcess, or the session ends."
        ),
    )
    yield_ms: Annotated[
        int | None, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_WAIT_MS})
    ] = Field(
        default=None,
        alias="yieldMs",
        ge=1,
        le=MAX_WAIT_MS,
        description=(
            "Return after this many milliseconds: with the exit code if it ended, else with "
            "its output so far and a processId (it keeps running)."
        ),
    )
    tty: bool = Field(
        default=False,
        description="Run under a pseudo-terminal (40x120, TERM=dumb), for programs that need one.",
    )
    escalate: bool = Field(
        default=False,
        description=(
            "Ask the user to run this command outside the sandbox (with the network and "
            "write access to everything). Only when it cannot work inside: the sandbox "
            "blocked it (no network, a read-only path). Give the reason in justification."
        ),
    )
    justification: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(
        default=None,
        max_length=2000,
        description="With escalate: one sentence the user reads, why the command must run "
        "outside the sandbox.",
    )

    @model_validator(mode="after")
    def _justified(self) -> ExecArgs:
        if self.escalate and not (self.justification or "").strip():
            raise ValueError(
                "justification is required with escalate: say why the command must run "
                "outside the sandbox"
            )
        return self

    @field_validator("command")
    @classmethod
    def _not_empty(cls, value: list[str] | str) -> list[str] | str:
        if isinstance(value, str):
            if not value.strip():
                raise ValueError("command must not be empty")
        elif not value or not value[0]:
            raise ValueError("command must be a non-empty array whose first item is a program")
        return value


def wait_s(args: ExecArgs) -> float:
    """How long the call waits for the command (see the module docstring)."""
    if args.yield_ms is not None:
        wait = args.yield_ms / 1000
    elif args.background:
        wait = 0.0
    else:
        return (args.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
    return min(wait, args.timeout_ms / 1000) if args.timeout_ms else wait

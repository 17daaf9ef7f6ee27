"""The interface every tool implements (one tool per module; see tools/registry.py).

A tool call goes: parse (pydantic; bad arguments become an error result for the model) ->
policy (engine: allowlist, `sandbox_check`, grants keyed by `grant_key`, approval with
`preview` as the request content) -> `run`. `run` raises `ToolError` for failures the model
should see; any other exception is reported to the model as an internal tool error too, so
a tool can never end a turn.

Every tool declares its facts (`Tool.facts`: what a call can change, which files it reads or
writes, whether it reaches the network). Whether a call asks by default, the phases' tool
lists and the backends' mappings are derived from them; a registry refuses a tool without
them (tools/registry.py). A tool whose facts say it reads or writes files names those files
for each call (`path_reads` / `path_writes`); every call of one that never says asks before
it runs (`undeclared_files`, checked by the engine: fail closed).

Every call runs under a time limit the engine enforces (`time_limit_s`): past it, the call
is cancelled and fails with "timed out after N s", and the turn goes on. A tool keeps no
blocking work on the event loop (threads or subprocesses), so cancelling it is prompt.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from cody_protocol.content import ToolCallContent
from cody_protocol.updates import ToolCallLocation, ToolKind
from pydantic import BaseModel, ValidationError

from ..config.model import ToolConfig
from ..core.history import ImagePart
from ..core.tooling import GrantKey, ToolFacts, ToolSpec
from ..policy.approval import Escalation
from ..policy.rules import PathSubject, RuleSubject
from ..policy.sandbox import SandboxPolicy
from ..policy.secrets import SecretGuard
from .editor_files import EditorFiles

if TYPE_CHECKING:
    from .processes.table import ProcessTable

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "OWN_DEADLINE_MARGIN_S",
    "GrantKey",
    "LiveOutputEnd",
    "PathRead",
    "PlanStatus",
    "Progress",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolFacts",
    "canonical_grant_key",
    "check_write_target",
    "first_changed_line",
    "location",
    "missing_facts",
    "undeclared_files",
]

A = TypeVar("A", bound=BaseModel)

DEFAULT_TIME_LIMIT_S = 60.0
"""The engine's limit for one call of a tool without a deadline of its own."""
OWN_DEADLINE_MARGIN_S = 10.0
"""How far past a tool's own deadline the engine's limit lies (see `Tool.time_limit_s`)."""


class ToolError(Exception):
    """A failure the model should see as the tool result (`{"error": message}`)."""

    def __init__(self, message: str, *, raw_output: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.raw_output = raw_output


class ToolArgumentError(ToolError):
    """The model's arguments did not match the tool's schema."""


PlanStatus = Literal["pending", "in_progress", "completed"]


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a running call has come (an MCP `notifications/progress`)."""

    progress: float
    total: float | None = None
    message: str | None = None

    def text(self) -> str:
        """`Progress: 3/5 - copying` (numbers without a needless `.0`)."""
        done = f"{self.progress:g}" + (f"/{self.total:g}" if self.total is not None else "")
        return f"Progress: {done}" + (f" - {self.message}" if self.message else "")


@dataclass(frozen=True, slots=True)
class PathRead:
    """A path a tool call reads (see `Tool.path_reads`)."""

    path: Path
    contents_below: bool = False
    """A directory whose files' contents are read too (a content search), not only names."""


@dataclass(kw_only=True)
class ToolContext:
    session_id: str
    call_id: str
    cwd: Path
    """The session's working directory (absolute, resolved)."""
    sandbox: SandboxPolicy
    on_output: Callable[[str], None] | None = None
    """Receives output chunks while the tool runs, for tools that declare `live_output`
    (the engine throttles them into incremental `tool_call_update`s or a terminal)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The daemon's environment (web tools read their API keys from it via `env_key`)."""
    tool_config: Mapping[str, ToolConfig] = field(default_factory=dict)
    """`[tools.<name>]` from the session's configuration."""
    on_plan: Callable[[list[tuple[str, PlanStatus]]], None] | None = None
    """Publishes the agent's plan (`updatePlan`): sent to the client as a `plan` update."""
    secrets: SecretGuard = field(default_factory=SecretGuard)
    """Credentials tools must not pass on (exec drops them from the child environment)."""
    files: EditorFiles | None = None
    """The client's file I/O when it offers it (tools/editor_files.py); None: the disk."""
    outside_sandbox: bool = False
    """The user let this call run outside the sandbox (exec with `escalate`, or the re-run
    of a command that failed in it): exec runs it without bubblewrap."""
    write_anywhere: frozenset[Path] = frozenset()
    """Real paths the user let this call write although the sandbox does not allow them
    (file tools check each path again right before writing: only these may fail it)."""
    processes: ProcessTable | None = None
    """The session's processes (exec starts them; readOutput, writeStdin, killProcess use
    them); None: no command can be started."""
    turn_id: str | None = None
    """The running turn (a process records the turn that started it)."""
    on_progress: Callable[[Progress], None] | None = None
    """Publishes how far a long call has come (an MCP server's progress notifications):
    sent to the client as an `in_progress` update of the call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveOutputEnd:
    """How a live-output tool's process ended (shown as the terminal's exit status)."""

    exit_code: int | None
    signal: str | None = None
    """The signal's name (`SIGKILL`) when the process was killed by one."""
    complete: bool = True
    """False when the tool stopped streaming before the end (its output limit): clients
    that only saw the stream then also get the final (head + tail) text."""


@dataclass(kw_only=True)
class ToolResult:
    output: str
    """What the model receives as the tool result."""
    success: bool = True
    raw_output: dict[str, Any] | None = None
    """Structured metadata for clients (exit code, paths, sizes); small."""
    content: list[ToolCallContent] = field(default_factory=list)
    """How clients should display the result (text, diffs)."""
    live_end: LiveOutputEnd | None = None
    """For tools with `live_output`: how the streamed process ended."""
    locations: list[ToolCallLocation] = field(default_factory=list)
    """The files the call touched (absolute paths, line where known), for editors to follow;
    they replace the locations `Tool.locations` announced. Empty: keep those."""
    continues: Callable[[], None] | None = None
    """For a call whose process outlives it (exec with `background` or `yieldMs`): called
    once the call's final update is out; the process's live output then continues the
    call's (tools/processes/table.py `stream`)."""
    images: list[ImagePart] = field(default_factory=list)
    """Images for the model (an MCP tool's screenshot): the engine checks each against the
    model and the image limits (engine/tool_images.py) and sends the ones that pass in the
    API's shape, after `output`; the others leave a note in it."""


def location(path: os.PathLike[str] | str, line: int | None = None) -> ToolCallLocation:
    """An ACP tool call location: an absolute path, and a 1-based line when known. A path
    that is not valid UTF-8 is shown with replacement characters (JSON cannot carry it)."""
    text = os.fspath(path).encode("utf-8", "replace").decode("utf-8")
    return ToolCallLocation(path=text, line=line if line and line > 0 else None)


def first_changed_line(old: str | None, new: str | None) -> int | None:
    """The 1-based line of `new` where it first differs from `old` (None: nothing differs
    or there is no new text)."""
    if new is None:
        return None
    old_lines = (old or "").split("\n")
    new_lines = new.split("\n")
    for number, (before, after) in enumerate(zip(old_lines, new_lines, strict=False), start=1):
        if before != after:
            return number
    if len(new_lines) > len(old_lines):
        return len(old_lines) + 1
    if len(new_lines) < len(old_lines):
        return len(new_lines)
    return None


def check_write_target(path: Path, ctx: ToolContext) -> str | None:
    """Why the sandbox forbids writing `path` now (None: allowed, or the user let this call
    write that very path outside the sandbox)."""
    reason = ctx.sandbox.check_write(path)
    if reason is not None and path in ctx.write_anywhere:
        return None
    return reason


def canonical_grant_key(tool_name: str, args: BaseModel) -> GrantKey:
    """Default grant key: tool name + canonical JSON of the arguments."""
    payload = json.dumps(args.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return ("tool", tool_name, payload)


class Tool(ABC, Generic[A]):
    """Base class for tools. Subclasses set the class attributes (`facts` included) and
    implement `run`."""

    name: str
    description: str
    kind: ToolKind
    facts: ToolFacts
    """What a call can change, which files it touches, whether it reaches the network
    (core/tooling.py). No default: a tool without facts cannot be registered."""
    args_model: type[A]
    live_output: ClassVar[bool] = False
    """True for tools whose output is worth watching while they run (commands): the engine
    then passes `ctx.on_output` and clients show the stream (as a terminal where they can)."""
    file_effects: ClassVar[Literal["none", "declared", "any"]] = "none"
    """Which files a call may change, for the diagnostics step (engine/diagnostics.py):
    `declared` ones (the call's `locations` before, the diffs in its result after: edits),
    `any` (a command: the files the language servers hold are checked again), or none."""

    @property
    def requires_approval(self) -> bool:
        """A call asks by default (`ToolFacts.asks`); the approval policy and the sandbox
        weigh it (policy/approval.py). An MCP tool's server configuration may override it."""
        return self.facts.asks

    def spec(self) -> ToolSpec:
        """The tool as the model sees it, built once per tool (every model call of every turn
        sends the specs; pydantic's schema generation costs about a millisecond a tool)."""
        cached: ToolSpec | None = getattr(self, "_spec_cache", None)
        if cached is None or cached.description != self.description:
            schema = self.args_model.model_json_schema()
            schema.pop("title", None)
            cached = ToolSpec(name=self.name, description=self.description, parameters=schema)
            self._spec_cache = cached
        return cached

    def parse(self, raw: Any) -> A:
        """Validate the model's arguments; raises ToolArgumentError naming what is wrong."""
        try:
            return self.args_model.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ToolArgumentError(f"invalid arguments for {self.name}: {problems}") from None

    def title(self, args: A) -> str:
        """A one-line human title for the call (shown by clients)."""
        return self.name

    def grant_key(self, args: A, ctx: ToolContext) -> GrantKey:
        return canonical_grant_key(self.name, args)

    def unavailable(
        self,
        env: Mapping[str, str],
        tool_config: Mapping[str, ToolConfig],
        session_id: str | None = None,
    ) -> str | None:
        """Why this tool cannot work now in a session with this environment and `[tools.*]`
        configuration (it is then not offered to the model), or None when it can. Asked
        again before each model call: a tool may become able to work during a session
        (`symbols` once a language server runs for `session_id`; None: no session). The
        default: a tool is there unless `[tools.<name>] enabled = false`."""
        config = tool_config.get(self.name)
        if config is not None and not config.enabled:
            return f"turned off in the configuration ([tools.{self.name}] enabled = false)"
        return None

    def sandbox_check(self, args: A, ctx: ToolContext) -> str | None:
        """Return why the sandbox forbids this call (it then fails without a prompt)."""
        return None

    def locations(self, args: A, cwd: Path) -> list[ToolCallLocation]:
        """The files this call will touch (ACP `locations`: absolute paths, line where known),
        sent with its `tool_call` and its approval request so editors can follow along.
        Computed before the call runs, from the arguments alone; must not raise (the engine
        drops locations that fail)."""
        return []

    def preview(self, args: A, ctx: ToolContext) -> list[ToolCallContent]:
        """What the approval request shows: the command and cwd, or the diff of an edit."""
        return []

    async def preview_async(self, args: A, ctx: ToolContext) -> list[ToolCallContent]:
        """`preview`, for tools that must ask the client (an edit's diff against the
        editor's buffer); the engine calls this one."""
        return self.preview(args, ctx)

    def path_reads(self, args: A, ctx: ToolContext) -> tuple[PathRead, ...]:
        """The files and directories this call reads (the engine refuses login files). A
        tool whose `facts.files` is `read` must say (else each of its calls asks)."""
        return ()

    def path_writes(self, args: A, ctx: ToolContext) -> tuple[Path, ...]:
        """The files this call writes (absolute). A tool whose `facts.files` is `write` must
        say (else each of its calls asks, whatever the sandbox allows)."""
        return ()

    def known_safe(self, args: A, ctx: ToolContext) -> bool:
        """True when this call can neither write nor run other programs, whatever the files
        it meets (approval policy `untrusted` then runs it unasked; see safe_commands.py)."""
        return False

    def runs_unsandboxed(self, args: A, ctx: ToolContext) -> bool:
        """True when this call would run a process outside the sandbox the mode asks for."""
        return False

    def escalation(self, args: A, ctx: ToolContext) -> tuple[Escalation, str] | None:
        """Why this call needs more than the sandbox allows, in words (None: the sandbox
        contains it, so `on-request` runs it without asking). A tool that needs approval
        and does not know the sandbox is never contained."""
        if not self.requires_approval:
            return None
        return "other", f"{self.name} does not run inside the sandbox"

    def permission_subject(self, args: A, ctx: ToolContext) -> RuleSubject:
        """What permission rules match for this call (the command, the paths, the host);
        None: only rules naming the tool itself. By default the paths it reads."""
        reads = self.path_reads(args, ctx)
        return PathSubject(tuple(read.path for read in reads)) if reads else None

    def time_limit_s(self, args: A, ctx: ToolContext) -> float:
        """How long the engine lets this call run before cancelling it as timed out.

        `[tools.<name>] timeout_s`, else `DEFAULT_TIME_LIMIT_S`. A tool that enforces a
        deadline of its own (exec, web tools, MCP tools) returns that deadline plus
        `OWN_DEADLINE_MARGIN_S`: its own, more specific message wins, and the engine's limit
        is the backstop for a tool that hangs anyway.
        """
        config = ctx.tool_config.get(self.name)
        if config is not None and config.timeout_s is not None:
            return config.timeout_s
        return DEFAULT_TIME_LIMIT_S

    def time_limit_setting(self) -> str:
        """Where a user changes `time_limit_s` (named in the timeout message)."""
        return f"[tools.{self.name}] timeout_s"

    @abstractmethod
    async def run(self, args: A, ctx: ToolContext) -> ToolResult: ...


def undeclared_files(tool: Tool[Any]) -> str | None:
    """Why every call of `tool` asks although the tool might not: its facts say it reads or
    writes files, and it never says which (`path_reads` / `path_writes` not overridden: a
    tool that forgot to declare its paths is not permitted by default). None: it declares
    them (a call may then name none: a patch that does not parse, a workspace-wide search),
    or it touches no files."""
    kind = type(tool)
    files = tool.facts.files
    if files == "read" and kind.path_reads is Tool.path_reads:
        return f"{tool.name} reads files but does not say which"
    if files == "write" and kind.path_writes is Tool.path_writes:
        return f"{tool.name} writes files but does not say which"
    return None


def missing_facts(tool: Tool[Any]) -> str | None:
    """Why `tool` cannot be registered: it declares no facts (None: it does). A file tool
    that does not say which files it touches can be registered; each of its calls asks
    (`undeclared_files`)."""
    if isinstance(getattr(tool, "facts", None), ToolFacts):
        return None
    name = getattr(tool, "name", type(tool).__name__)
    return f"the tool {name!r} does not declare its facts (Tool.facts)"

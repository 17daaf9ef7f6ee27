"""Each tool carries its own facts (issue 22): what a call can change, which files it reads or
writes, whether it reaches the network. Phases, whether a call asks, Codex's read-only
sandbox and the backend guard are derived from them, never from lists of tool names.

Adding a tool takes its module and its registration: these tests fail loudly when a
registered tool misses a fact, and a file tool that never says which files it touches asks
before each call (the engine tests at the end, through the in-process engine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cody_daemon.backends.base import ApprovalAsk, BackendSettings
from cody_daemon.backends.mapping import codex_policy
from cody_daemon.core.tooling import ToolFacts
from cody_daemon.engine.backend_guard import BackendGuard
from cody_daemon.lsp.service import LanguageServers
from cody_daemon.policy.allowlist import PHASES, allowed_tools, phase_tools
from cody_daemon.policy.secrets import SecretGuard
from cody_daemon.tools.base import (
    PathRead,
    Tool,
    ToolContext,
    ToolResult,
    missing_facts,
    undeclared_files,
)
from cody_daemon.tools.mcp.tool import McpTool, approval_of
from cody_daemon.tools.registry import ToolRegistry
from cody_daemon.tools.symbols import SymbolsTool
from pydantic import BaseModel

from tests.support.engine import EngineHarness
from tests.support.mock_responses import text, tool_call

RESEARCH_BEFORE = frozenset(
    {
        "readFile",
        "listDir",
        "grepFiles",
        "fileSearch",
        "listMcpResources",
        "listMcpResourceTemplates",
        "symbols",
        "readMcpResource",
        "webSearch",
        "perplexitySearch",
        "fetchUrl",
    }
)
"""The `research` phase's tools when they were listed by hand (policy/allowlist.py before
issue 22): the derived list must be the same."""

ASKING_BEFORE = frozenset(
    {"exec", "writeStdin", "writeFile", "applyPatch", "webSearch", "perplexitySearch", "fetchUrl"}
)
"""The built-in tools that set `requires_approval = True` by hand before issue 22."""


def daemon_tools(root: Path) -> ToolRegistry:
    """Every tool the daemon registers, as app.py and the engine do (the built-ins, symbols,
    and the subagents' task tools, which the SessionManager adds)."""
    tools = ToolRegistry.builtin()
    tools.register(SymbolsTool(LanguageServers(env={})))
    harness = EngineHarness(root, tools=tools)
    assert "task" in harness.deps.tools
    return harness.deps.tools


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    return daemon_tools(tmp_path)


def test_every_registered_tool_declares_its_facts_and_its_files(registry: ToolRegistry) -> None:
    for tool in registry.tools():
        assert missing_facts(tool) is None, tool.name
        assert undeclared_files(tool) is None, f"{tool.name} never says which files it touches"
    facts = registry.facts()
    assert set(registry.names()) | {"listMcpResources", "readMcpResource"} <= set(facts)


def test_what_each_tool_can_do(registry: ToolRegistry) -> None:
    facts = registry.facts()
    writes = {name for name, tool in facts.items() if tool.files == "write"}
    reads = {name for name, tool in facts.items() if tool.files == "read"}
    runs = {name for name, tool in facts.items() if tool.changes == "programs"}
    assert writes == {"writeFile", "applyPatch"}
    assert reads == {"readFile", "listDir", "grepFiles", "fileSearch", "symbols"}
    assert runs == {"exec", "writeStdin"}
    assert {name for name, tool in facts.items() if tool.network} == {
        "webSearch",
        "perplexitySearch",
        "fetchUrl",
    }
    assert facts["task"].changes == facts["taskResult"].changes == "agents"
    assert facts["readOutput"].changes == facts["killProcess"].changes == "processes"


def test_which_tools_ask_is_unchanged(registry: ToolRegistry) -> None:
    asking = {tool.name for tool in registry.tools() if tool.requires_approval}
    assert asking == ASKING_BEFORE


def test_the_phases_are_derived_and_unchanged(registry: ToolRegistry) -> None:
    facts = registry.facts()
    assert phase_tools("research", facts) == RESEARCH_BEFORE
    assert phase_tools("plan", facts) == RESEARCH_BEFORE | {"updatePlan"}
    assert phase_tools("implement", facts) is None
    assert PHASES == ("research", "plan", "implement")
    assert allowed_tools(["exec"], "research", facts) == {"exec"}, "an explicit list wins"


class _PathArgs(BaseModel):
    path: str = "."


class _NewReader(Tool[_PathArgs]):
    """A new read-only tool: it joins the research phase by its facts alone."""

    name = "newReader"
    description = "reads a file"
    kind = "read"
    facts = ToolFacts(changes="nothing", files="read")
    args_model = _PathArgs

    def path_reads(self, args: _PathArgs, ctx: ToolContext) -> tuple[PathRead, ...]:
        return (PathRead(ctx.cwd / args.path),)

    async def run(self, args: _PathArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(output=f"read {args.path}")


class _ForgetfulReader(Tool[_PathArgs]):
    """A file tool that forgot to say which files it reads."""

    name = "forgetfulReader"
    description = "reads a file, and does not say which"
    kind = "read"
    facts = ToolFacts(changes="nothing", files="read")
    args_model = _PathArgs

    async def run(self, args: _PathArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(output=f"read {args.path}")


class _ForgetfulWriter(Tool[_PathArgs]):
    name = "forgetfulWriter"
    description = "writes a file, and does not say which"
    kind = "edit"
    facts = ToolFacts(changes="files", files="write")
    args_model = _PathArgs

    async def run(self, args: _PathArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(output=f"wrote {args.path}")


class _NoFacts(Tool[_PathArgs]):
    name = "noFacts"
    description = "declares nothing"
    kind = "other"
    args_model = _PathArgs

    async def run(self, args: _PathArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(output="ran")


def test_a_tool_without_facts_cannot_be_registered() -> None:
    with pytest.raises(ValueError, match="'noFacts' does not declare its facts"):
        ToolRegistry([_NoFacts()])


def test_a_new_read_only_tool_joins_research_and_a_forgetful_one_is_flagged() -> None:
    tools = ToolRegistry([_NewReader(), _ForgetfulReader(), _ForgetfulWriter()])
    research = phase_tools("research", tools.facts())
    assert research is not None and {"newReader", "forgetfulReader"} <= research
    assert undeclared_files(_NewReader()) is None
    assert undeclared_files(_ForgetfulReader()) == (
        "forgetfulReader reads files but does not say which"
    )
    assert undeclared_files(_ForgetfulWriter()) == (
        "forgetfulWriter writes files but does not say which"
    )


def test_codex_runs_read_only_exactly_when_no_allowed_tool_writes_or_runs(
    registry: ToolRegistry,
) -> None:
    facts = registry.facts()

    def sandbox(allowed: set[str]) -> str:
        settings = BackendSettings(
            approval_policy="never",
            sandbox_mode="workspace-write",
            allowed_tools=frozenset(allowed),
            tool_facts=facts,
        )
        return codex_policy(settings).sandbox

    for name, tool in facts.items():
        expected = "workspace-write" if tool.writes_or_runs else "read-only"
        assert sandbox({"readFile", name}) == expected, name
    assert sandbox({"readFile", "mcp__x__y"}) == "read-only", "an unknown tool never widens it"


def test_a_backend_asks_for_what_cody_would_ask(registry: ToolRegistry) -> None:
    guard = BackendGuard(secrets=SecretGuard(env={}), tool_facts=registry.facts())

    def asks(cody_tool: str | None) -> bool:
        return guard.requires_approval(
            ApprovalAsk(
                call_id="c",
                cody_tool=cody_tool,
                title="t",
                kind="other",
                raw_input={},
                content=[],
                grant_key=("tool", "t"),
            )
        )

    for tool in registry.tools():
        assert asks(tool.name) == tool.requires_approval, tool.name
    assert asks(None) and asks("mcp__x__y"), "a tool Cody does not know asks"


def test_an_mcp_tools_facts_come_from_its_servers_annotations() -> None:
    from mcp.types import ToolAnnotations

    def facts_of(annotations: Any, trust: bool = True) -> tuple[ToolFacts, bool]:
        approval = approval_of(None, trust, annotations)
        tool = McpTool(
            name="mcp__s__t",
            server="s",
            remote_name="t",
            description=None,
            input_schema={},
            requires_approval=approval.requires_approval,
            read_only=approval.read_only,
            caller=None,  # type: ignore[arg-type]
        )
        return tool.facts, tool.requires_approval

    read_only = ToolAnnotations(readOnlyHint=True)
    assert facts_of(read_only) == (ToolFacts(changes="nothing"), False)
    assert facts_of(read_only, trust=False) == (ToolFacts(changes="elsewhere"), True)
    assert facts_of(None) == (ToolFacts(changes="elsewhere"), True)


# -- through the engine -----------------------------------------------------------------------


async def _one_call(tmp_path: Path, tool: Tool[Any], policy: str) -> tuple[int, Any]:
    """Run one call of `tool` through the in-process engine; (questions asked, its output)."""
    config = f'approval_policy = "{policy}"\nsandbox_mode = "workspace-write"'
    async with EngineHarness(tmp_path, config=config, tools=ToolRegistry([tool])) as engine:
        engine.model.enqueue(tool_call(tool.name, {"path": "notes.txt"}, call_id="c1"))
        engine.model.enqueue(text("done"))
        sid = await engine.new_session()
        await engine.prompt(sid, "go")
        return len(engine.link.approvals), engine.tool_output(sid, "c1")


@pytest.mark.parametrize("policy", ["on-request", "on-failure", "untrusted"])
async def test_a_new_file_tool_that_never_says_which_files_asks(
    tmp_path: Path, policy: str
) -> None:
    asked, output = await _one_call(tmp_path, _ForgetfulReader(), policy)
    assert asked == 1, "a file tool that does not declare its paths is not permitted by default"
    assert output == "read notes.txt", "allowed once, it runs"


async def test_a_new_file_writer_that_never_says_which_files_asks(tmp_path: Path) -> None:
    asked, _ = await _one_call(tmp_path, _ForgetfulWriter(), "on-request")
    assert asked == 1


@pytest.mark.parametrize("policy", ["on-request", "on-failure", "untrusted"])
async def test_a_declared_read_only_tool_runs_unasked(tmp_path: Path, policy: str) -> None:
    asked, output = await _one_call(tmp_path, _NewReader(), policy)
    assert asked == 0
    assert output == "read notes.txt"


async def test_a_read_rule_on_the_project_now_covers_file_search(tmp_path: Path) -> None:
    """fileSearch read the working directory without saying so, so a rule denying that
    directory never matched it (a file tool permitted by default); it now declares it."""
    workspace = (tmp_path / "workspace").resolve()
    config = f'[permissions]\ndeny = ["Read(//{str(workspace).lstrip("/")})"]'
    async with EngineHarness(tmp_path, config=config) as engine:
        engine.model.enqueue(tool_call("fileSearch", {"query": "notes"}, call_id="c1"))
        engine.model.enqueue(text("done"))
        sid = await engine.new_session()
        await engine.prompt(sid, "find my notes")
        output = engine.tool_output(sid, "c1")
    assert "denied by the permission rule" in output["error"]
    assert engine.link.approvals == []


def test_the_mcp_session_tool_names_are_the_classes_names() -> None:
    """`tools/mcp.SESSION_TOOLS` is written out so importing the package stays cheap; it must
    name the session tools whose facts `ToolRegistry.facts()` adds."""
    from cody_daemon.tools.mcp import SESSION_TOOLS
    from cody_daemon.tools.mcp.resources import SESSION_TOOL_CLASSES

    assert tuple(cls.name for cls in SESSION_TOOL_CLASSES) == SESSION_TOOLS

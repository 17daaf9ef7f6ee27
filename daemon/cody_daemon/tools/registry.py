"""The tools a session can use, by name, in a stable order.

Invariants: names are unique; `tools()` and `specs()` keep registration order (so the
model sees the same tool list, and prompt caches stay warm, from call to call); filtering
by an allowlist never adds tools and ignores names that are not registered; a tool that
cannot work in a session (`Tool.unavailable`: no API key, turned off, no language server
running yet) is left out of what is offered, and `absent` says why; every registered tool
declares its facts (`Tool.facts`; `register` refuses one that does not, so adding a tool
takes its module and its registration, and a missing fact fails at once).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ..config.model import ToolConfig
from ..core.tooling import ToolFacts, ToolSpec
from .apply_patch import ApplyPatchTool
from .base import Tool, missing_facts
from .exec import ExecTool
from .file_search import FileSearchTool
from .grep_files import GrepFilesTool
from .kill_process import KillProcessTool
from .list_dir import ListDirTool
from .read_file import ReadFileTool
from .read_output import ReadOutputTool
from .update_plan import UpdatePlanTool
from .web import FetchUrlTool, PerplexitySearchTool, WebSearchTool
from .write_file import WriteFileTool
from .write_stdin import WriteStdinTool

__all__ = ["ToolRegistry"]


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            self.register(tool)

    @classmethod
    def builtin(cls) -> ToolRegistry:
        """The built-in tools."""
        return cls(
            [
                ExecTool(),
                ReadOutputTool(),
                WriteStdinTool(),
                KillProcessTool(),
                ReadFileTool(),
                WriteFileTool(),
                ApplyPatchTool(),
                ListDirTool(),
                GrepFilesTool(),
                FileSearchTool(),
                UpdatePlanTool(),
                WebSearchTool(),
                PerplexitySearchTool(),
                FetchUrlTool(),
            ]
        )

    def register(self, tool: Tool[Any]) -> None:
        """Add `tool`; raises ValueError if a tool with the same name is registered, or if
        the tool does not declare its facts (`missing_facts`)."""
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        missing = missing_facts(tool)
        if missing is not None:
            raise ValueError(missing)
        self._tools[tool.name] = tool

    def facts(self) -> dict[str, ToolFacts]:
        """What every tool a session may be offered can do, by name: the registered tools
        and the MCP session tools (tools/mcp: added per session beside the servers' own
        `mcp__*` tools, whose facts come from their servers and which no phase lists).
        Phases (policy/allowlist.py) and the backends' mappings are derived from these."""
        from .mcp.resources import SESSION_TOOL_CLASSES

        found = {cls.name: cls.facts for cls in SESSION_TOOL_CLASSES}
        found.update((name, tool.facts) for name, tool in self._tools.items())
        return found

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def tools(self, allowed: Collection[str] | None = None) -> list[Tool[Any]]:
        """The registered tools in order, only those named in `allowed` when it is given."""
        if allowed is None:
            return list(self._tools.values())
        return [tool for name, tool in self._tools.items() if name in allowed]

    def absent(
        self,
        env: Mapping[str, str],
        tool_config: Mapping[str, ToolConfig],
        session_id: str | None = None,
    ) -> dict[str, str]:
        """The registered tools that cannot work now with this environment and configuration
        (in `session_id`'s session), with why (`Tool.unavailable`): they are not offered to
        the model."""
        reasons = {
            tool.name: tool.unavailable(env, tool_config, session_id)
            for tool in self._tools.values()
        }
        return {name: reason for name, reason in reasons.items() if reason is not None}

    def offered(
        self,
        allowed: Collection[str] | None,
        env: Mapping[str, str],
        tool_config: Mapping[str, ToolConfig],
        session_id: str | None = None,
    ) -> ToolRegistry:
        """The tools a session offers the model now: allowed, and able to work here."""
        absent = self.absent(env, tool_config, session_id)
        return ToolRegistry(tool for tool in self.tools(allowed) if tool.name not in absent)

    def specs(self, allowed: Collection[str] | None = None) -> list[ToolSpec]:
        return [tool.spec() for tool in self.tools(allowed)]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    async def aclose(self) -> None:
        """Release what tools hold (HTTP clients); called at daemon shutdown."""
        for tool in self._tools.values():
            close = getattr(tool, "aclose", None)
            if close is not None:
                await close()

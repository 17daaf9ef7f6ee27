"""MCP servers as tools: real servers written with the `mcp` SDK (tests/support/mcp_servers/).

One stdio demo server is shared by the module (`demo`); the startup-failure test starts its own
servers; the HTTP server runs once per module in a subprocess on an OS-chosen port.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import cody_daemon.tools.mcp.transport  # noqa: F401  (the SDK import is not part of any timing)
import pytest
import pytest_asyncio
from cody_daemon.config.model import McpServerConfig
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.tools.base import Tool, ToolArgumentError, ToolContext, ToolError
from cody_daemon.tools.mcp import (
    McpHttp,
    McpServerSpec,
    McpSessionManager,
    McpSpecError,
    McpStatus,
    McpStdio,
    McpTool,
    build_specs,
    connection,
    merge_specs,
    specs_from_config,
    specs_from_session,
    tool_name,
)
from cody_daemon.tools.mcp.results import render_result
from cody_protocol.content import ContentToolCallContent, ImageContent
from cody_protocol.session import NewSessionParams
from mcp_types import CallToolResult, EmbeddedResource, ResourceLink, TextResourceContents

from tests.support.mcp_servers import SCRIPTS
from tests.support.mcp_servers.demo_tools import PIXEL_PNG

# --- helpers -------------------------------------------------------------------------------


def stdio(name: str, script: str, **kwargs: Any) -> McpServerSpec:
    transport = McpStdio(command=sys.executable, args=(str(SCRIPTS[script]),))
    return McpServerSpec(name=name, transport=transport, **kwargs)


def context(tmp_path: Path) -> ToolContext:
    return ToolContext(
        session_id="s1",
        call_id="c1",
        cwd=tmp_path,
        sandbox=SandboxPolicy.create("read-only", tmp_path),
    )


async def call(tool: Tool[Any], args: Any, ctx: ToolContext) -> tuple[bool, str]:
    result = await tool.run(tool.parse(args), ctx)
    return result.success, result.output


def by_name(tools: list[Tool[Any]]) -> dict[str, Tool[Any]]:
    return {tool.name: tool for tool in tools}


def children() -> dict[int, str]:
    """This process's child processes, `pid -> "<state> <cmdline>"` (zombies included)."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == os.getpid():
            found[int(entry)] = f"{state} {cmdline.decode(errors='replace')}"
    return found


# --- the shared stdio demo server ----------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def demo() -> AsyncIterator[tuple[McpSessionManager, list[McpStatus]]]:
    statuses: list[McpStatus] = []
    manager = McpSessionManager([stdio("demo", "demo")], on_status=statuses.append)
    try:
        yield manager, statuses
    finally:
        await manager.aclose()


@pytest.mark.asyncio(loop_scope="module")
async def test_tools_are_listed_with_the_servers_schemas(
    demo: tuple[McpSessionManager, list[McpStatus]],
) -> None:
    manager, statuses = demo
    tools = await manager.tools()
    names = [tool.name for tool in tools]
    assert names[:3] == ["mcp__demo__add", "mcp__demo__shout", "mcp__demo__fail"]
    assert [(s.state, s.tools) for s in statuses] == [("starting", 0), ("ready", len(tools))]
    add = by_name(tools)["mcp__demo__add"]
    assert isinstance(add, McpTool)
    assert (add.kind, add.requires_approval) == ("other", True)
    spec = add.spec()
    assert spec.description.startswith("Add two integers.")
    assert spec.parameters["type"] == "object"
    assert spec.parameters["required"] == ["a", "b"]
    assert spec.parameters["properties"]["a"]["type"] == "integer"
    assert await manager.tools() == tools  # cached: the same tools, no restart
    assert len(statuses) == 2


@pytest.mark.asyncio(loop_scope="module")
async def test_calls_map_results(
    demo: tuple[McpSessionManager, list[McpStatus]], tmp_path: Path
) -> None:
    tools = by_name(await demo[0].tools())
    ctx = context(tmp_path)
    assert await call(tools["mcp__demo__add"], {"a": 2, "b": 40}, ctx) == (True, "42")
    assert await call(tools["mcp__demo__shout"], {"text": "hi"}, ctx) == (True, "HI!")
    ok, output = await call(tools["mcp__demo__fail"], {"message": "boom"}, ctx)
    assert not ok and "failed on purpose: boom" in output
    ok, output = await call(tools["mcp__demo__stats"], None, ctx)  # no text: structured JSON
    assert ok and json.loads(output) == {"files": 3, "ok": True}
    pixel = tools["mcp__demo__pixel"]
    result = await pixel.run(pixel.parse({}), ctx)
    assert result.output == "[image 1: image/png, 12 bytes]", "a marker, never the base64"
    [part] = result.images
    assert part.image_url == f"data:image/png;base64,{PIXEL_PNG}", "the image, for the model"
    image = result.content[1]
    assert isinstance(image, ContentToolCallContent) and isinstance(image.content, ImageContent)
    # Bad arguments reach the server, which says what is wrong.
    ok, output = await call(tools["mcp__demo__add"], {"a": "x"}, ctx)
    assert not ok and "b" in output


@pytest.mark.asyncio(loop_scope="module")
async def test_arguments_are_any_object_and_keyed_canonically(
    demo: tuple[McpSessionManager, list[McpStatus]], tmp_path: Path
) -> None:
    add = by_name(await demo[0].tools())["mcp__demo__add"]
    ctx = context(tmp_path)
    one = add.grant_key(add.parse({"b": 1, "a": {"x": [1, 2]}}), ctx)
    two = add.grant_key(add.parse('{"a": {"x": [1, 2]}, "b": 1}'), ctx)
    assert one == two == ("tool", "mcp__demo__add", '{"a":{"x":[1,2]},"b":1}')
    assert add.parse(None).arguments() == {}
    assert add.parse({"model_config": 1}).arguments() == {"model_config": 1}
    for bad in ([1, 2], "not json", 3):
        with pytest.raises(ToolArgumentError, match="mcp__demo__add"):
            add.parse(bad)


@pytest.mark.asyncio(loop_scope="module")
async def test_read_mcp_resource(
    demo: tuple[McpSessionManager, list[McpStatus]], tmp_path: Path
) -> None:
    manager = demo[0]
    tools = by_name(await manager.session_tools())
    read = tools["readMcpResource"]
    assert (read.name, read.kind, read.requires_approval) == ("readMcpResource", "read", False)
    assert "demo" in read.description
    ctx = context(tmp_path)
    greeting = {"server": "demo", "uri": "demo://greeting"}
    assert await call(read, greeting, ctx) == (True, "Hello from the demo resource.\nSecond line.")
    blob = {"server": "demo", "uri": "demo://blob"}
    assert await call(read, blob, ctx) == (
        True,
        "[binary resource: application/octet-stream, 4 bytes]",
    )
    with pytest.raises(ToolError, match="Unknown resource"):
        await call(read, {"server": "demo", "uri": "demo://missing"}, ctx)
    with pytest.raises(ToolError, match=r"no MCP server named 'other'.*servers: demo"):
        await call(read, {"server": "other", "uri": "demo://greeting"}, ctx)
    with pytest.raises(ToolArgumentError):
        read.parse({"server": "demo"})


# --- startup failures, timeouts, crashes, shutdown ----------------------------------------


async def test_failures_are_reported_and_aclose_leaves_no_process(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    before = children()
    statuses: list[tuple[float, McpStatus]] = []
    servers = [
        stdio("demo", "demo", tool_timeout_s=0.5),
        stdio("hang", "hang", startup_timeout_s=1.0),
        stdio("crash", "crash"),
        McpServerSpec(name="missing", transport=McpStdio(command="no-such-mcp-server-cmd")),
        McpServerSpec(
            name="secret", transport=McpHttp(url="http://127.0.0.1:9/mcp"), unavailable="no token"
        ),
    ]
    manager = McpSessionManager(servers, on_status=lambda s: statuses.append((time.monotonic(), s)))
    try:
        started = time.monotonic()
        tools = by_name(await manager.tools())
        spawned = set(children()) - set(before)
        assert spawned, "the servers should be child processes"

        final = {s.server: s for s in manager.statuses()}
        assert final["demo"].state == "ready" and "mcp__demo__add" in tools
        assert all(not name.startswith(("mcp__hang", "mcp__crash")) for name in tools)
        hang = final["hang"]
        assert hang.state == "failed" and hang.reason is not None
        assert "timed out after 1 s" in hang.reason and "startup_timeout_s" in hang.reason
        assert "pretending to download" in hang.reason  # its stderr so far
        failed_at = next(t for t, s in statuses if s.server == "hang" and s.state == "failed")
        assert 1.0 <= failed_at - started < 2.5  # at about its 1 s, not after the others
        crash = final["crash"].reason or ""
        assert "exited with code 3" in crash and "DEMO_TOKEN is not set" in crash
        assert "stdout: this log line should have gone to stderr" in crash
        assert final["missing"].reason == (
            "command not found: 'no-such-mcp-server-cmd' is not on the daemon's PATH; give its "
            "full path in `command`"
        )
        assert (final["secret"].state, final["secret"].reason) == ("failed", "no token")
        for server in final:  # each transition once: starting, then ready or failed
            assert [s.state for _, s in statuses if s.server == server][0] == "starting"
            assert len([s for _, s in statuses if s.server == server]) == 2

        ctx = context(tmp_path)
        with pytest.raises(
            ToolError, match=r"within 0.5 s.*tool_timeout_s in \[mcp_servers.demo\]"
        ):
            await call(tools["mcp__demo__sleep"], {"seconds": 5}, ctx)
        assert await call(tools["mcp__demo__add"], {"a": 1, "b": 1}, ctx) == (True, "2")
        with pytest.raises(ToolError, match="demo"):  # the server dies during the call
            await call(tools["mcp__demo__crash"], {"code": 5}, ctx)
        for _ in range(200):
            if manager.statuses()[0].state == "failed":
                break
            await asyncio.sleep(0.01)
        dead = manager.statuses()[0]
        assert dead.state == "failed" and "exited with code 5" in (dead.reason or "")
        assert "crashing with code 5 as asked" in (dead.reason or "")
        assert "restarted at its next use (3 restarts left)" in (dead.reason or "")
        assert "mcp__demo__add" in by_name(await manager.tools()), "kept while restartable"
        # The next call restarts it.
        assert await call(tools["mcp__demo__add"], {"a": 1, "b": 1}, ctx) == (True, "2")
        assert [s.state for _, s in statuses if s.server == "demo"][-3:] == [
            "failed",
            "starting",
            "ready",
        ]
    finally:
        await manager.aclose()  # also when an assertion failed: no leaked servers
    assert set(children()) - set(before) == set()  # no process left, not even a zombie
    assert asyncio.all_tasks() == {asyncio.current_task()}
    captured = capfd.readouterr()
    assert "demo server starting" not in captured.out + captured.err  # stderr was captured
    await manager.aclose()  # idempotent
    with pytest.raises(ToolError, match="shut down"):
        await manager.tools()


async def test_a_server_that_keeps_crashing_is_given_up_and_its_tools_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "RESTART_BACKOFF_S", (0.0,))
    before = children()
    manager = McpSessionManager([stdio("demo", "demo")])
    try:
        ctx = context(tmp_path)
        for crashes in range(1, connection.MAX_RESTARTS + 2):
            tools = by_name(await manager.tools())
            assert "mcp__demo__crash" in tools, f"still offered after {crashes - 1} crashes"
            with pytest.raises(ToolError, match="demo"):
                await call(tools["mcp__demo__crash"], {"code": 7}, ctx)
            for _ in range(300):
                if manager.statuses()[0].state == "failed":
                    break
                await asyncio.sleep(0.01)
        status = manager.statuses()[0]
        assert status.state == "failed" and "not restarted again" in (status.reason or "")
        assert not any(name.startswith("mcp__demo") for name in by_name(await manager.tools()))
        with pytest.raises(ToolError, match="'demo' is not available"):
            await call(tools["mcp__demo__add"], {"a": 1, "b": 1}, ctx)
    finally:
        await manager.aclose()
    assert set(children()) - set(before) == set(), "every attempt's process was reaped"


async def test_no_servers_no_tools() -> None:
    manager = McpSessionManager([])
    assert await manager.session_tools() == []
    await manager.aclose()


# --- streamable HTTP ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    env = dict(os.environ, DEMO_HTTP_TOKEN="s3cret")
    process = subprocess.Popen(
        [sys.executable, str(SCRIPTS["http"])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


async def test_http_transport_with_bearer_token(http_url: str, tmp_path: Path) -> None:
    configs = {
        "web": McpServerConfig(
            url=http_url, bearer_token_env_var="WEB_TOKEN", requires_approval=False
        ),
        "anon": McpServerConfig(url=http_url),
    }
    specs = specs_from_config(configs, env={"WEB_TOKEN": "s3cret"})
    manager = McpSessionManager(specs)
    try:
        tools = by_name(await manager.session_tools())
        ctx = context(tmp_path)
        add = tools["mcp__web__add"]
        assert not add.requires_approval
        assert await call(add, {"a": 20, "b": 22}, ctx) == (True, "42")
        read = tools["readMcpResource"]
        ok, text = await call(read, {"server": "web", "uri": "demo://greeting"}, ctx)
        assert ok and text.startswith("Hello from the demo resource.")
        anon = {s.server: s for s in manager.statuses()}["anon"]
        assert anon.state == "failed"
        assert anon.reason == (
            f"HTTP 401 Unauthorized from {http_url}; "
            "check the token (bearer_token_env_var or the Authorization header)"
        )
    finally:
        await manager.aclose()
    assert asyncio.all_tasks() == {asyncio.current_task()}


# --- specs, names, rendering (no servers) ---------------------------------------------------


def test_specs_from_config(tmp_path: Path) -> None:
    configs = {
        "files": McpServerConfig(
            command="fs-server", args=["--root", "."], env={"TOKEN": "t"}, cwd="sub"
        ),
        "web": McpServerConfig(
            url="https://example.com/mcp",
            http_headers={"X-Team": "a"},
            bearer_token_env_var="WEB_TOKEN",
            startup_timeout_s=30,
            tool_timeout_s=5,
        ),
        "nokey": McpServerConfig(url="https://example.com/mcp", bearer_token_env_var="NOPE"),
        "off": McpServerConfig(command="x", enabled=False),
    }
    specs = specs_from_config(configs, env={"WEB_TOKEN": "abc"}, cwd=str(tmp_path))
    assert [s.name for s in specs] == ["files", "web", "nokey"]
    files, web, nokey = specs
    assert files.transport == McpStdio(
        command="fs-server", args=("--root", "."), env={"TOKEN": "t"}, cwd=str(tmp_path / "sub")
    )
    assert "TOKEN" not in repr(files) and "abc" not in repr(web)
    assert isinstance(web.transport, McpHttp)
    assert dict(web.transport.headers) == {"X-Team": "a", "Authorization": "Bearer abc"}
    assert (web.startup_timeout_s, web.tool_timeout_s, web.requires_approval) == (30, 5, None)
    assert web.trust_annotations, "unset requires_approval: the annotations decide"
    assert web.unavailable is None
    assert nokey.unavailable is not None and "bearer_token_env_var NOPE is not set" in (
        nokey.unavailable
    )


def test_specs_from_session_params() -> None:
    params = NewSessionParams.model_validate(
        {
            "cwd": "/work",
            "mcpServers": [
                {
                    "name": "fs",
                    "command": "/bin/fs",
                    "args": ["-v"],
                    "env": [{"name": "A", "value": "1"}],
                },
                {
                    "type": "http",
                    "name": "web",
                    "url": "https://x/mcp",
                    "headers": [{"name": "Authorization", "value": "Bearer k"}],
                },
            ],
        }
    )
    fs, web = specs_from_session(params.mcp_servers, cwd="/work")
    assert fs.transport == McpStdio(command="/bin/fs", args=("-v",), env={"A": "1"}, cwd="/work")
    assert isinstance(web.transport, McpHttp)
    assert dict(web.transport.headers) == {"Authorization": "Bearer k"}
    for spec in (fs, web):
        assert (spec.source, spec.startup_timeout_s, spec.tool_timeout_s) == ("session", 10, 60)
        assert spec.requires_approval is None and spec.trust_annotations

    sse = NewSessionParams.model_validate(
        {"cwd": "/w", "mcpServers": [{"type": "sse", "name": "old", "url": "https://x/sse"}]}
    )
    with pytest.raises(McpSpecError, match=r"'old' uses the sse transport.*sse = false"):
        specs_from_session(sse.mcp_servers)
    twice = NewSessionParams.model_validate(
        {"cwd": "/w", "mcpServers": [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]}
    )
    with pytest.raises(McpSpecError, match="twice"):
        specs_from_session(twice.mcp_servers)


def test_session_servers_win_but_keep_configured_tuning() -> None:
    configs = {
        "fs": McpServerConfig(
            command="old-fs", tool_timeout_s=300, requires_approval=False, trust_annotations=False
        ),
        "git": McpServerConfig(command="git-mcp"),
        "off": McpServerConfig(command="off-mcp", enabled=False, startup_timeout_s=40),
    }
    params = NewSessionParams.model_validate(
        {
            "cwd": "/w",
            "mcpServers": [{"name": "fs", "command": "new-fs"}, {"name": "off", "command": "o"}],
        }
    )
    specs = build_specs(configs, params.mcp_servers, env={}, cwd="/w")
    assert [s.name for s in specs] == ["git", "fs", "off"]
    fs = specs[1]
    assert isinstance(fs.transport, McpStdio) and fs.transport.command == "new-fs"
    assert (fs.source, fs.tool_timeout_s, fs.requires_approval) == ("session", 300, False)
    assert not fs.trust_annotations, "a client's server cannot make itself trusted"
    assert specs[2].startup_timeout_s == 40
    assert merge_specs(specs[:1], []) == specs[:1]


def test_tool_names_are_safe_short_and_unique() -> None:
    taken: set[str] = set()
    assert tool_name("demo", "add", taken) == "mcp__demo__add"
    assert tool_name("my server", "get.file/v2", taken) == "mcp__my_server__get_file_v2"
    clash = tool_name("my.server", "get file/v2", taken)
    assert clash != "mcp__my_server__get_file_v2" and clash.startswith("mcp__my_server__get_file")
    long = tool_name("s" * 40, "t" * 40, taken)
    assert len(long) == 64 and long.startswith("mcp__sss")
    assert tool_name("s" * 40, "t" * 40 + "x", taken) != long
    for name in taken:
        assert len(name) <= 64 and all(c.isalnum() or c in "_-" for c in name)


def test_schema_and_result_rendering() -> None:
    class Never:
        async def call_tool(
            self, tool: str, arguments: dict[str, Any], **options: Any
        ) -> CallToolResult:
            raise AssertionError("not called")

    odd = McpTool(
        name="mcp__x__y",
        server="x",
        remote_name="y",
        description=None,
        input_schema={"type": "string", "title": "Y"},
        requires_approval=True,
        caller=Never(),
    )
    assert odd.spec().parameters == {"type": "object", "properties": {}}
    assert odd.spec().description.startswith("The y tool")

    result = CallToolResult(
        content=[
            EmbeddedResource(
                type="resource", resource=TextResourceContents(uri="file:///a", text="alpha")
            ),
            ResourceLink(type="resource_link", uri="file:///b", name="b", description="the b"),
        ],
        structured_content={"ignored": True},
    )
    rendered = render_result(result)
    assert rendered.text == (
        "[resource file:///a]\nalpha\n"
        "[resource link: file:///b (b): the b; read it with readMcpResource]"
    ), "text resources as text, links as references, structured content only without text"
    assert [type(c.content).__name__ for c in rendered.content[1:]] == [
        "EmbeddedResource",
        "ResourceLink",
    ], "the client keeps every block"
    assert render_result(CallToolResult(content=[], is_error=True)).text.startswith("(the tool")


async def test_changed_roots_reach_a_server_that_asked_for_them(tmp_path: Path) -> None:
    """`roots/list_changed` (the real server-everything asks `roots/list` again)."""
    from cody_daemon.tools.mcp import McpClientHooks

    from tests.support.real_mcp_servers import everything

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    roots = [first]
    command, *args = everything()
    spec = McpServerSpec(
        name="every", transport=McpStdio(command=command, args=tuple(args)), startup_timeout_s=30
    )
    manager = McpSessionManager([spec], hooks=McpClientHooks(roots=lambda: list(roots)))
    try:
        listed = by_name(await manager.tools())["mcp__every__get-roots-list"]
        ctx = context(tmp_path)
        assert f"file://{first}" in (await call(listed, {}, ctx))[1]
        roots[:] = [second]
        manager.roots_changed()
        for _ in range(100):
            output = (await call(listed, {}, ctx))[1]
            if f"file://{second}" in output:
                break
            await asyncio.sleep(0.05)
        assert f"file://{second}" in output and f"file://{first}" not in output
    finally:
        await manager.aclose()

"""Real MCP servers nobody here wrote, through the real daemon: `server-everything` and
`server-filesystem` (npm, pinned in tests/mcp-servers) and `mcp-server-git` (PyPI, dev group).

What a user would notice: a screenshot reaches the model as an image (never as base64 text),
read-only tools run without a question, resources can be listed and read, a server's
prompt is a slash command, a killed server comes back on its next call, and the servers
learn the session's workspace (roots).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from tests.support import mock_anthropic
from tests.support.daemon import CodyEnv, Daemon, start_with_mock_key
from tests.support.mock_responses import (
    MockResponsesServer,
    text,
    tool_call,
    tool_output_images,
)
from tests.support.model_inputs import tool_outputs, user_texts
from tests.support.real_mcp_servers import everything, filesystem, git_server

PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(270_000)
"""A 270 KB PNG (the size that sent 40,122 characters of base64 to the model as text)."""


def server_toml(name: str, argv: list[str], **keys: Any) -> str:
    """An `[mcp_servers.<name>]` block (JSON strings and lists are valid TOML)."""
    lines = [
        f"[mcp_servers.{name}]",
        f"command = {json.dumps(argv[0])}",
        f"args = {json.dumps(argv[1:])}",
        "startup_timeout_s = 30",
    ]
    lines += [f"{key} = {json.dumps(value)}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


def statuses(daemon: Daemon, server: str) -> list[dict[str, Any]]:
    return daemon.mcp_statuses(server)


async def wait_ready(daemon: Daemon, *servers: str) -> None:
    await daemon.wait_mcp_ready(*servers)


async def start(cody_env: CodyEnv, model: MockResponsesServer, servers: str, **args: Any) -> Daemon:
    cody_env.use_mock_provider(model.base_url, extra=args.pop("extra", ""))
    path = cody_env.cody_home / "config.toml"
    path.write_text(path.read_text() + "\n" + servers, encoding="utf-8")
    daemon = await Daemon.start(cody_env, **args)
    await daemon.initialize()
    return daemon


def final_content(daemon: Daemon, sid: str, call_id: str) -> list[dict[str, Any]]:
    [done] = [
        u for u in daemon.tool_updates(sid, call_id) if u.get("status") in ("completed", "failed")
    ]
    content: list[dict[str, Any]] = done["content"]
    return content


# -- tool results: images -----------------------------------------------------------------


async def test_an_image_result_reaches_the_responses_model_as_an_image_never_as_base64(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    (cody_env.workspace / "shot.png").write_bytes(PNG)
    daemon = await start(
        cody_env,
        model,
        server_toml("files", filesystem(cody_env.workspace)) + server_toml("every", everything()),
    )
    try:
        sid = await daemon.new_session()
        await wait_ready(daemon, "files", "every")
        shot = str(cody_env.workspace / "shot.png")
        model.enqueue(tool_call("mcp__files__read_media_file", {"path": shot}, call_id="img"))
        model.enqueue(tool_call("mcp__every__get-tiny-image", {}, call_id="tiny"))
        model.enqueue(text("A logo and a screenshot."))

        assert (await daemon.prompt(sid, "look at them"))["stopReason"] == "end_turn"

        request = model.requests[-1]
        encoded = base64.b64encode(PNG).decode()
        images = tool_output_images(request)
        assert images["img"] == [f"data:image/png;base64,{encoded}"], "the file, as an image"
        assert len(images["tiny"]) == 1 and images["tiny"][0].startswith(
            "data:image/png;base64,iVBOR"
        )
        texts = tool_outputs(request)
        assert len(texts["img"]) < 2_000 and encoded[:100] not in texts["img"]
        assert "[image 1: image/png, 270,008 bytes]" in texts["img"]
        assert json.dumps(request.body).count(encoded[:100]) == 1, "base64 only in the image"
        assert daemon.permission_requests == [], "both tools are annotated read-only"
        shown = [c["content"] for c in final_content(daemon, sid, "img")]
        assert {"type": "image", "data": encoded, "mimeType": "image/png"} in shown, (
            "the client keeps the full content"
        )
    finally:
        await daemon.close()


async def test_an_image_result_reaches_the_anthropic_model_as_an_image_block(
    cody_env: CodyEnv,
) -> None:
    (cody_env.workspace / "shot.png").write_bytes(PNG)
    async with mock_anthropic.MockAnthropicServer() as claude:
        daemon = await start_with_mock_key(
            cody_env,
            'model_provider = "claude"\n[model_providers.claude]\n'
            f'base_url = "{claude.base_url}"\nwire_api = "anthropic"\nenv_key = "MOCK_API_KEY"\n'
            'default_model = "mock-model"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
            + server_toml("files", filesystem(cody_env.workspace)),
        )
        try:
            sid = await daemon.new_session()
            await wait_ready(daemon, "files")
            claude.enqueue(
                mock_anthropic.tool_call(
                    "mcp__files__read_media_file",
                    {"path": str(cody_env.workspace / "shot.png")},
                    call_id="toolu_img",
                )
            )
            claude.enqueue(mock_anthropic.text("A screenshot."))
            await daemon.prompt(sid, "look")
        finally:
            await daemon.close()
    messages = claude.requests[-1].body["messages"]
    [result] = [
        block
        for message in messages
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    kinds = [part["type"] for part in result["content"]]
    assert kinds == ["text", "image"], "the image is a block of the tool_result"
    source = result["content"][1]["source"]
    encoded = base64.b64encode(PNG).decode()
    assert source == {"type": "base64", "media_type": "image/png", "data": encoded}
    assert encoded[:100] not in result["content"][0]["text"]
    assert mock_anthropic.image_sources(claude.requests[-1]) == [source]


# -- annotations ----------------------------------------------------------------------------


def git_repository(path: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (
        ["git", "init", "-q"],
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
    ):
        subprocess.run(argv, cwd=path, check=True, env=env, timeout=30)
    (path / "new.txt").write_text("new\n")


async def test_read_only_tools_run_unasked_unless_the_server_is_not_trusted(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    git_repository(cody_env.workspace)
    argv = git_server(cody_env.workspace)
    for policy in ("on-request", "untrusted"):
        model.requests.clear()
        daemon = await start(
            cody_env,
            model,
            server_toml("git", argv) + server_toml("wary", argv, trust_annotations=False),
            extra=f'approval_policy = "{policy}"',
        )
        try:
            sid = await daemon.new_session()
            await wait_ready(daemon, "git", "wary")
            repo = str(cody_env.workspace)
            model.enqueue(tool_call("mcp__git__git_status", {"repo_path": repo}, call_id="s"))
            model.enqueue(
                tool_call(
                    "mcp__git__git_add", {"repo_path": repo, "files": ["new.txt"]}, call_id="a"
                )
            )
            model.enqueue(tool_call("mcp__wary__git_status", {"repo_path": repo}, call_id="w"))
            model.enqueue(text("done"))
            daemon.answer("allow_once", "allow_once")

            await daemon.prompt(sid, "stage it")

            asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
            assert asked == ["a", "w"], f"{policy}: git_status is read-only; git_add is not"
            outputs = tool_outputs(model.requests[-1])
            assert "new.txt" in outputs["s"] and "Repository status" in outputs["w"]
            listed = await daemon.request("_cody/tools/list", {"sessionId": sid})
            approval = {t["name"]: t["requiresApproval"] for t in listed["tools"]}
            assert approval["mcp__git__git_status"] is False
            assert approval["mcp__git__git_add"] is True
            assert approval["mcp__wary__git_status"] is True
        finally:
            await daemon.close()


# -- resources, prompts ---------------------------------------------------------------------


async def test_list_resources_then_read_one(cody_env: CodyEnv, model: MockResponsesServer) -> None:
    daemon = await start(cody_env, model, server_toml("every", everything()))
    try:
        sid = await daemon.new_session()
        await wait_ready(daemon, "every")
        model.enqueue(tool_call("listMcpResources", {"server": "every"}, call_id="list"))
        model.enqueue(tool_call("listMcpResourceTemplates", {}, call_id="templates"))
        model.enqueue(
            tool_call(
                "readMcpResource",
                {"server": "every", "uri": "demo://resource/static/document/architecture.md"},
                call_id="read",
            )
        )
        model.enqueue(text("Read it."))
        await daemon.prompt(sid, "what does it expose?")

        outputs = tool_outputs(model.requests[-1])
        listing = json.loads(outputs["list"])
        uris = {entry["uri"] for entry in listing["resources"]}
        assert "demo://resource/static/document/architecture.md" in uris
        assert all(entry["server"] == "every" for entry in listing["resources"])
        templates = json.loads(outputs["templates"])["resourceTemplates"]
        assert {
            "server": "every",
            "uriTemplate": "demo://resource/dynamic/text/{resourceId}",
        }.items() <= templates[0].items()
        assert "Architecture" in outputs["read"]
        assert daemon.permission_requests == [], "listing and reading resources never ask"
    finally:
        await daemon.close()


async def test_an_mcp_prompt_runs_as_a_slash_command(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    daemon = await start(cody_env, model, server_toml("every", everything()))
    try:
        sid = await daemon.new_session()

        def advertised() -> list[str]:
            updates = daemon.session_updates(sid, "available_commands_update")
            return [c["name"] for c in updates[-1]["availableCommands"]] if updates else []

        await daemon.wait_for(lambda: "mcp:every:args-prompt" in advertised(), 40)
        assert "compact" in advertised(), "advertised with Cody's own commands"
        [args_prompt] = [
            c
            for c in daemon.session_updates(sid, "available_commands_update")[-1][
                "availableCommands"
            ]
            if c["name"] == "mcp:every:args-prompt"
        ]
        assert args_prompt["input"]["hint"] == "city [state]"

        missing = await daemon.prompt(sid, "/mcp:every:args-prompt state=CA")
        assert missing["stopReason"] == "end_turn" and model.requests == []
        assert "needs city" in daemon.agent_text(sid)

        model.enqueue(text("Sunny."))
        await daemon.prompt(sid, '/mcp:every:args-prompt "Paris" state=TX')
        [request] = model.requests
        assert any("What's weather in Paris, TX?" in t for t in user_texts(request))
    finally:
        await daemon.close()


# -- lifecycle: a killed server ---------------------------------------------------------------


def child_pids(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == parent:
            found.append(int(entry.name))
    return found


async def test_a_killed_server_is_restarted_on_its_next_call(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    daemon = await start(cody_env, model, server_toml("every", everything()))
    try:
        sid = await daemon.new_session()
        await wait_ready(daemon, "every")
        daemon_pid = daemon.process.process.pid  # type: ignore[attr-defined]
        [server_pid] = child_pids(daemon_pid)
        os.kill(server_pid, signal.SIGKILL)
        await daemon.wait_for(lambda: statuses(daemon, "every")[-1]["state"] == "failed", 20)
        reason = statuses(daemon, "every")[-1]["reason"]
        assert "SIGKILL" in reason and "restarted at its next use" in reason

        model.enqueue(tool_call("mcp__every__echo", {"message": "back"}, call_id="e"))
        model.enqueue(text("It answered."))
        await daemon.prompt(sid, "echo")

        assert "Echo: back" in tool_outputs(model.requests[-1])["e"]
        assert "mcp__every__echo" in [t["name"] for t in model.requests[0].body["tools"]]
        states = [s["state"] for s in statuses(daemon, "every")]
        assert states[-3:] == ["failed", "starting", "ready"]
        restarted = child_pids(daemon_pid)
        assert restarted and server_pid not in restarted, "a new server process"
    finally:
        await daemon.close()


# -- roots ------------------------------------------------------------------------------------


async def test_servers_are_told_the_session_directory_and_writable_roots_as_their_roots(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    elsewhere = cody_env.root / "elsewhere"
    (elsewhere / "sub").mkdir(parents=True)
    shared = cody_env.root / "shared"
    shared.mkdir()
    daemon = await start(
        cody_env,
        model,
        # No directories on its command line: the filesystem server serves the roots.
        server_toml("files", filesystem()) + server_toml("every", everything()),
    )
    try:
        sid = await daemon.new_session(cwd=elsewhere / "sub", writableRoots=[str(shared)])
        await wait_ready(daemon, "files", "every")
        model.enqueue(tool_call("mcp__files__list_allowed_directories", {}, call_id="dirs"))
        model.enqueue(tool_call("mcp__every__get-roots-list", {}, call_id="roots"))
        model.enqueue(text("ok"))
        await daemon.prompt(sid, "where may you work?")
        outputs = tool_outputs(model.requests[-1])
        real = os.path.realpath(elsewhere / "sub")
        extra = os.path.realpath(shared)
        assert real in outputs["dirs"] and extra in outputs["dirs"]
        assert str(cody_env.workspace) not in outputs["dirs"], "only what the session says"
        assert f"URI: file://{real}" in outputs["roots"]
        assert f"URI: file://{extra}" in outputs["roots"]
    finally:
        await daemon.close()

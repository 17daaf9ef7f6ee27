"""The parts of issue 27 the other extension tests leave out, through the real daemon: a
command's `model` front matter is the turn's model; hooks from `[hooks]` in Cody's
config.toml; a `PreCompact` hook hears `/compact` (trigger `manual`); the peers' tool names
as matchers (`Edit|Write` is writeFile and applyPatch, `Read` is readFile).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

pytestmark = pytest.mark.e2e


def recorder(env: CodyEnv, seen: Path, extra: str = "") -> str:
    """A hook that appends its stdin to `seen` (then runs `extra`)."""
    path = env.root / f"record-{seen.stem}.py"
    path.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"open({str(seen)!r}, 'a').write(json.dumps(data) + '\\n')\n" + extra
    )
    return f"{sys.executable} {path}"


def told(seen: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in seen.read_text().splitlines()] if seen.exists() else []


async def test_a_commands_model_is_the_turns_model_and_only_its(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    commands = cody_env.cody_home / "commands"
    commands.mkdir()
    (commands / "quick.md").write_text("---\nmodel: mock-fast\n---\nAnswer quickly: $ARGUMENTS\n")
    sid = await daemon.new_session()
    model.enqueue(text("fast"))
    model.enqueue(text("usual"))
    await daemon.prompt(sid, "/quick what is 2+2")
    await daemon.prompt(sid, "and now?")
    assert [r.body["model"] for r in model.requests] == ["mock-fast", "mock-model"]


async def test_config_toml_hooks_and_a_pre_compact_hook_on_compact(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    seen = cody_env.root / "compact.jsonl"
    command = recorder(cody_env, seen)
    cody_env.use_mock_provider(
        model.base_url,
        # [hooks] in Cody's own config.toml, in the shape of hooks.json.
        f'[[hooks.PreCompact]]\nmatcher = "manual"\n'
        f'[[hooks.PreCompact.hooks]]\ntype = "command"\ncommand = {json.dumps(command)}\n',
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        created = await daemon.request(
            "session/new", {"cwd": str(cody_env.workspace), "mcpServers": []}
        )
        sid = created["sessionId"]
        [listed] = created["_meta"]["cody"]["hooks"]
        assert listed["event"] == "PreCompact" and listed["source"].endswith("config.toml")
        model.enqueue(text("first answer"))
        model.enqueue(text("Summary: one question was answered."))
        await daemon.prompt(sid, "a question")
        assert told(seen) == [], "PreCompact runs only before a compaction"
        await daemon.prompt(sid, "/compact")
        assert "Compacted" in daemon.agent_text(sid)
    finally:
        await daemon.close()
    [call] = told(seen)
    assert call["hook_event_name"] == "PreCompact" and call["trigger"] == "manual"
    assert call["session_id"] == sid


async def test_the_peers_tool_names_match_codys_tools(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    seen = cody_env.root / "reads.jsonl"
    deny = cody_env.root / "deny.py"
    deny.write_text(
        "import sys\nprint('edits are frozen this week', file=sys.stderr)\nsys.exit(2)\n"
    )
    (cody_env.root / "claude-config" / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Edit|Write",
                            "hooks": [{"type": "command", "command": f"{sys.executable} {deny}"}],
                        },
                        {
                            "matcher": "Read",
                            "hooks": [{"type": "command", "command": recorder(cody_env, seen)}],
                        },
                    ]
                }
            }
        )
    )
    cody_env.use_mock_provider(model.base_url, 'approval_policy = "never"')
    (cody_env.workspace / "notes.txt").write_text("NOTES\n")
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        model.enqueue(
            tool_call("writeFile", {"filePath": "new.txt", "content": "x\n"}, call_id="w")
        )
        model.enqueue(
            tool_call(
                "applyPatch",
                {"patch": "*** Begin Patch\n*** Add File: other.txt\n+y\n*** End Patch\n"},
                call_id="p",
            )
        )
        model.enqueue(tool_call("readFile", {"filePath": "notes.txt"}, call_id="r"))
        model.enqueue(text("done"))
        await daemon.prompt(sid, "edit and read")
    finally:
        await daemon.close()
    outputs = tool_outputs(model.requests[-1])
    assert "edits are frozen this week" in outputs["w"] and "edits are frozen" in outputs["p"]
    assert not (cody_env.workspace / "new.txt").exists()
    assert not (cody_env.workspace / "other.txt").exists()
    assert "NOTES" in outputs["r"]
    [read] = told(seen)
    assert read["tool_name"] == "readFile"
    assert read["tool_input"]["file_path"] == str(cody_env.workspace / "notes.txt")  # type: ignore[index]


async def test_skills_are_found_in_every_place_the_peers_keep_them(
    cody_env: CodyEnv, daemon: Daemon
) -> None:
    root = cody_env.workspace / "proj"
    (root / ".git").mkdir(parents=True)
    places = {
        "cody-user": cody_env.cody_home / "skills",
        "agents-user": cody_env.root / "home" / ".agents" / "skills",
        "claude-user": cody_env.root / "claude-config" / "skills",
        "codex-user": cody_env.root / "codex-home" / "skills",
        "agents-project": root / ".agents" / "skills",
        "claude-project": root / ".claude" / "skills",
    }
    for name, folder in places.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\nx\n")
    created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
    listed = {s["name"]: s["path"] for s in created["_meta"]["cody"]["skills"]}
    assert listed == {name: str(folder / name / "SKILL.md") for name, folder in places.items()}


async def test_a_pre_tool_use_hook_binds_a_subagents_calls_too(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """A policy hook cannot be walked around by delegating the call to a `task` child."""
    deny = cody_env.root / "no_touch.py"
    deny.write_text("import sys\nprint('no touching in this repo', file=sys.stderr)\nsys.exit(2)\n")
    (cody_env.root / "codex-home" / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Bash",
                            "hooks": [{"type": "command", "command": f"{sys.executable} {deny}"}],
                        }
                    ]
                }
            }
        )
    )
    cody_env.use_mock_provider(model.base_url, 'approval_policy = "never"')
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        model.enqueue(
            tool_call(
                "task", {"description": "touch it", "prompt": "touch the file. CHILD"}, call_id="t"
            )
        )
        model.enqueue(tool_call("exec", {"command": "touch touched.txt"}, call_id="c1"))
        model.enqueue(text("the hook refused"))
        model.enqueue(text("the child could not"))
        await daemon.prompt(sid, "delegate")
    finally:
        await daemon.close()
    assert not (cody_env.workspace / "touched.txt").exists()
    [child_after] = [r for r in model.requests if "c1" in tool_outputs(r)]
    assert "no touching in this repo" in tool_outputs(child_after)["c1"]

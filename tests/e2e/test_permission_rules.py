"""Permission rules that persist (issue 23), through the real daemon.

Rules come from the user config, a trusted project, Codex's `prefix_rule` files and Claude
Code's `settings.json`; deny > ask > allow; commands match the same normalised argv as grant
keys, so no spelling that escapes a grant escapes a rule; `allow_project` writes a rule that
the next daemon honours and `_cody/permissions/*` lists and removes.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

DENIED = json.dumps({"error": "User denied approval"})
WHY = "it needs the whole machine"


def exec_call(command: str | list[str], call_id: str, **extra: Any) -> object:
    return tool_call("exec", {"command": command, **extra}, call_id=call_id)


def escalated(command: str | list[str], call_id: str) -> object:
    return exec_call(command, call_id, escalate=True, justification=WHY)


def asked(daemon: Daemon) -> list[str]:
    return [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]


def decision(daemon: Daemon, sid: str, call_id: str) -> dict[str, Any]:
    for update in daemon.tool_updates(sid, call_id):
        found = (update.get("_meta") or {}).get("cody", {}).get("decision")
        if found is not None:
            return dict(found)
    raise AssertionError(f"no decision for {call_id}")


async def started(env: CodyEnv, model: MockResponsesServer, config: str = "") -> Daemon:
    env.use_mock_provider(model.base_url, extra=config)
    daemon = await Daemon.start(env)
    await daemon.initialize()
    return daemon


async def test_an_allow_rule_in_the_user_config_skips_the_prompt_in_a_new_daemon(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    config = '[permissions]\nallow = ["exec(touch:*)", "Bash(mkdir -p:*)"]\n'
    daemon = await started(cody_env, model, config)
    try:
        model.enqueue(exec_call("touch by-rule", "c1"))
        model.enqueue(escalated("mkdir -p made-outside", "c2"))
        model.enqueue(exec_call("rm -f by-rule", "c3"))
        model.enqueue(text("done"))
        sid = await daemon.new_session(approvalPolicy="untrusted")
        daemon.answer("reject_once")

        await daemon.prompt(sid, "go")

        assert asked(daemon) == ["c3"], "only the command no rule allows asks"
        ws = cody_env.workspace
        assert (ws / "by-rule").exists() and (ws / "made-outside").is_dir()
        got = decision(daemon, sid, "c1")
        assert got["by"] == "rule" and got["outcome"] == "allow"
        assert "exec(touch:*)" in got["detail"]
        assert str(cody_env.cody_home / "config.toml") in got["detail"]
        raw = daemon.tool_updates(sid, "c2")[-1]["rawOutput"]
        assert raw["sandboxed"] is False, "an allow rule also lets an escalation run outside"
    finally:
        await daemon.close()


async def test_a_deny_rule_refuses_and_tells_the_model_which_rule(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    config = '[permissions]\ndeny = ["exec(rm -rf:*)", "readFile(./.env)"]\n'
    daemon = await started(cody_env, model, config)
    try:
        ws = cody_env.workspace
        (ws / "keep").mkdir()
        (ws / ".env").write_text("TOKEN=abc\n")
        model.enqueue(exec_call("rm -rf keep", "c1"))
        model.enqueue(exec_call("FOO=1 /bin/rm -rf keep", "c2"))
        model.enqueue(exec_call("echo hi && sudo rm -rf keep", "c3"))
        model.enqueue(tool_call("readFile", {"filePath": ".env"}, call_id="c4"))
        model.enqueue(text("done"))
        sid = await daemon.new_session(approvalPolicy="never")

        await daemon.prompt(sid, "clean up")

        assert daemon.permission_requests == []
        outputs = tool_outputs(model.requests[-1])
        for call_id in ("c1", "c2", "c3"):
            assert "denied by the permission rule `exec(rm -rf:*)`" in outputs[call_id], call_id
        assert "readFile(./.env)" in outputs["c4"] and "TOKEN" not in outputs["c4"]
        assert (ws / "keep").is_dir()
        assert decision(daemon, sid, "c1")["by"] == "rule"
    finally:
        await daemon.close()


def _git_repo(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def _script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


async def test_no_grant_bypass_spelling_is_allowed_by_a_rule_for_its_plain_prefix(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Every spelling of tests/e2e/test_grant_keys.py, plus compound and redirected forms,
    asks to run outside the sandbox although `exec(git status:*)` allows `git status`."""
    ws = cody_env.workspace
    _git_repo(ws)
    _script(ws / "evilbin" / "git", f"touch {ws}/X-path")
    _script(ws / "evil.sh", f"touch {ws}/X-bash-env")
    _script(ws / "bash", f"touch {ws}/X-workspace-bash")
    outside = cody_env.root / "outside"
    outside.mkdir()
    fsmonitor = "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0="
    hostile: dict[str, str | list[str]] = {
        "h1": "PATH=./evilbin:$PATH git status",
        "h2": f"{fsmonitor}'touch X-config' git status",
        "h3": f"env {fsmonitor}'touch X-env' git status",
        "h4": ["env", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor",
               "GIT_CONFIG_VALUE_0=touch X-env-argv", "git", "status"],
        "h5": "BASH_ENV=./evil.sh bash -c 'git status'",
        "h6": ["./bash", "-c", "git status"],
        "h7": "git status; touch X-semicolon",
        "h8": "git status && touch X-and",
        "h9": "git status | tee X-pipe",
        "h10": "git status $(touch X-subst)",
        "h11": "git status `touch X-backtick`",
        "h12": f"git status > {outside}/X-redirect",
        "h13": "eval 'git status; touch X-eval'",
        "h14": "git status & touch X-background",
        "h15": "gitx status",
        "h16": "git statusx",
        "h17": "(git status; touch X-subshell)",
    }  # fmt: skip
    daemon = await started(cody_env, model, '[permissions]\nallow = ["exec(git status:*)"]\n')
    try:
        model.enqueue(escalated("git status", "plain"), escalated(["git", "status", "-s"], "args"))
        model.enqueue(*[escalated(command, call_id) for call_id, command in hostile.items()])
        model.enqueue(text("done"))
        sid = await daemon.new_session()
        daemon.answer_fn = lambda params: "reject_once"

        await daemon.prompt(sid, "status, in every spelling")

        assert asked(daemon) == list(hostile), "only the plain spellings ran unasked"
        outputs = tool_outputs(model.requests[-1])
        assert "Exit code: 0" in outputs["plain"] and "Exit code: 0" in outputs["args"]
        for call_id in hostile:
            assert outputs[call_id] == DENIED, call_id
        assert sorted(p.name for p in ws.iterdir() if p.name.startswith("X")) == []
        assert list(outside.iterdir()) == []
    finally:
        await daemon.close()


async def test_a_compound_command_is_allowed_only_when_every_part_is(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    config = '[permissions]\nallow = ["exec(mkdir:*)", "exec(touch:*)"]\n'
    daemon = await started(cody_env, model, config)
    try:
        model.enqueue(exec_call("mkdir -p d && touch d/f > d/log", "c1"))
        model.enqueue(exec_call("mkdir -p e && rm -rf d", "c2"))
        model.enqueue(text("done"))
        sid = await daemon.new_session(approvalPolicy="untrusted")
        daemon.answer("reject_once")

        await daemon.prompt(sid, "go")

        assert asked(daemon) == ["c2"]
        assert (cody_env.workspace / "d" / "f").exists()
        assert len(decision(daemon, sid, "c1")["detail"].split(";")) >= 2
    finally:
        await daemon.close()


async def test_an_untrusted_projects_rules_are_ignored_with_a_warning(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    ws = cody_env.workspace
    (ws / ".cody").mkdir()
    (ws / ".cody" / "config.toml").write_text('[permissions]\nallow = ["exec(touch:*)"]\n')
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(touch:*)", "Edit(**)"]}})
    )
    daemon = await started(cody_env, model)
    try:
        result = await daemon.request(
            "session/new",
            {
                "cwd": str(ws),
                "mcpServers": [],
                "_meta": {"cody": {"approvalPolicy": "untrusted"}},
            },
        )
        warnings = result["_meta"]["cody"]["warnings"]
        assert any("permissions" in w and "not trusted" in w for w in warnings), warnings
        assert any(".claude" in w and "not trusted" in w for w in warnings), warnings
        model.enqueue(exec_call("touch x", "c1"))
        model.enqueue(text("done"))
        daemon.answer("reject_once")

        await daemon.prompt(result["sessionId"], "go")

        assert asked(daemon) == ["c1"]
        assert not (ws / "x").exists()
    finally:
        await daemon.close()


async def test_a_trusted_projects_rules_apply(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    ws = cody_env.workspace
    (ws / ".cody").mkdir()
    (ws / ".cody" / "config.toml").write_text('[permissions]\nallow = ["exec(touch:*)"]\n')
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(mkdir:*)"]}})
    )
    daemon = await started(cody_env, model, f'trusted_projects = ["{ws}"]\n')
    try:
        model.enqueue(exec_call("touch x", "c1"), exec_call("mkdir y", "c2"))
        model.enqueue(text("done"))
        sid = await daemon.new_session(approvalPolicy="untrusted")

        await daemon.prompt(sid, "go")

        assert daemon.permission_requests == []
        assert (ws / "x").exists() and (ws / "y").is_dir()
        assert str(ws / ".claude" / "settings.json") in decision(daemon, sid, "c2")["detail"]
    finally:
        await daemon.close()


async def test_codex_prefix_rules_and_claude_settings_are_honoured(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    rules = cody_env.root / "codex-home" / "rules"
    rules.mkdir()
    (rules / "default.rules").write_text(
        "# written by codex\n"
        'prefix_rule(pattern=["touch"], decision="allow")\n'
        'prefix_rule(\n    pattern = ["git", ["push", "fetch"]],\n    decision = "forbidden",\n'
        '    justification = "ask first",\n)\n'
    )
    (cody_env.root / "claude-config" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(mkdir:*)", "Task"], "deny": ["Bash(rm:*)"]}})
    )
    daemon = await started(cody_env, model)
    try:
        model.enqueue(exec_call("touch from-codex", "c1"), exec_call("mkdir from-claude", "c2"))
        model.enqueue(exec_call("rm -f from-codex", "c3"), exec_call("git push origin main", "c4"))
        model.enqueue(text("done"))
        sid = await daemon.new_session(approvalPolicy="untrusted")

        await daemon.prompt(sid, "go")

        assert daemon.permission_requests == []
        ws = cody_env.workspace
        assert (ws / "from-codex").exists() and (ws / "from-claude").is_dir()
        outputs = tool_outputs(model.requests[-1])
        assert "Bash(rm:*)" in outputs["c3"]
        assert "exec(git push:*)" in outputs["c4"] and "default.rules" in outputs["c4"]
        assert "default.rules" in decision(daemon, sid, "c1")["detail"]
    finally:
        await daemon.close()


async def test_hostile_rule_files_are_skipped_without_blocking(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    rules = cody_env.root / "codex-home" / "rules"
    rules.mkdir()
    os.mkfifo(rules / "fifo.rules")
    (rules / "code.rules").write_text('import os\nprefix_rule(pattern=["touch"])\n')
    (rules / "deep.rules").write_text("prefix_rule(pattern=" + "[" * 5000 + ")")
    (rules / "huge.rules").write_bytes(b"#" * (2 * 1024 * 1024))
    (rules / "dir.rules").mkdir()
    (cody_env.root / "claude-config" / "settings.json").write_text("[" * 100_000)
    daemon = await started(cody_env, model)
    try:
        result = await daemon.request(
            "session/new",
            {"cwd": str(cody_env.workspace), "mcpServers": [],
             "_meta": {"cody": {"approvalPolicy": "untrusted"}}},
        )  # fmt: skip
        warnings = "\n".join(result["_meta"]["cody"]["warnings"])
        for name in ("fifo.rules", "code.rules", "deep.rules", "huge.rules", "settings.json"):
            assert name in warnings, name
        model.enqueue(exec_call("touch x", "c1"))
        model.enqueue(text("done"))
        daemon.answer("reject_once")
        await daemon.prompt(result["sessionId"], "go")
        assert asked(daemon) == ["c1"], "no rule of a skipped file applies"
    finally:
        await daemon.close()


async def test_an_invalid_rule_in_codys_config_is_an_error_naming_it(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    from cody_client.connection import RemoteError

    daemon = await started(cody_env, model, '[permissions]\nallow = ["exec(git * main)"]\n')
    try:
        with pytest.raises(RemoteError) as caught:
            await daemon.new_session()
        assert caught.value.code == -32602
        assert "permissions.allow[0]" in caught.value.message
        assert "git * main" in caught.value.message
    finally:
        await daemon.close()


CONFIG_WITH_COMMENTS = """# my Cody settings: keep this comment
approval_policy = "untrusted"  # I review everything
"""


async def test_allow_project_is_saved_honoured_by_the_next_daemon_listed_and_removed(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    ws = cody_env.workspace
    daemon = await started(cody_env, model, CONFIG_WITH_COMMENTS)
    try:
        model.enqueue(exec_call("mkdir -p build", "c1"))
        model.enqueue(text("done"))
        sid = await daemon.new_session()
        daemon.answer("allow_project")
        await daemon.prompt(sid, "build")
        [request] = daemon.permission_requests
        option = next(o for o in request["options"] if o["optionId"] == "allow_project")
        assert option["kind"] == "allow_always"
        assert option["name"] == f"Always allow `exec(mkdir:*)` in {ws}"
        assert request["_meta"]["cody"]["projectRules"] == ["exec(mkdir:*)"]
        assert (ws / "build").is_dir()
    finally:
        await daemon.close()
    config = (cody_env.cody_home / "config.toml").read_text()
    kept = '# my Cody settings: keep this comment\napproval_policy = "untrusted"  # I review everything\n'
    assert kept in config, "the file keeps its comments and order"
    assert f'[projects."{ws}".permissions]' in config and '"exec(mkdir:*)"' in config

    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(exec_call("mkdir -p dist", "c2"))
        model.enqueue(text("done"))
        sid = await daemon.new_session()
        await daemon.prompt(sid, "again")
        assert daemon.permission_requests == [], "the saved rule allows it"
        assert decision(daemon, sid, "c2")["by"] == "rule"

        listed = await daemon.request("_cody/permissions/list", {"cwd": str(ws)})
        [entry] = [r for r in listed["rules"] if r["rule"] == "exec(mkdir:*)"]
        assert entry["decision"] == "allow" and entry["project"] == str(ws)
        assert entry["source"] == str(cody_env.cody_home / "config.toml")
        assert not entry.get("readOnly")
        removed = await daemon.request("_cody/permissions/remove", entry)
        assert removed == {"removed": True}
        again = await daemon.request("_cody/permissions/list", {"cwd": str(ws)})
        assert all(r["rule"] != "exec(mkdir:*)" for r in again["rules"])

        model.enqueue(exec_call("mkdir -p out", "c3"))
        model.enqueue(text("done"))
        daemon.answer("reject_once")
        await daemon.prompt(sid, "and once more")
        assert asked(daemon) == ["c3"], "removed: it asks again from the next turn"
    finally:
        await daemon.close()
    assert (
        "# my Cody settings: keep this comment" in (cody_env.cody_home / "config.toml").read_text()
    )


async def test_a_read_only_rule_cannot_be_removed(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    from cody_client.connection import RemoteError

    settings = cody_env.root / "claude-config" / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(ls:*)"]}}))
    daemon = await started(cody_env, model)
    try:
        listed = await daemon.request("_cody/permissions/list", {})
        [entry] = [r for r in listed["rules"] if r["rule"] == "Bash(ls:*)"]
        assert entry["readOnly"] is True and entry["source"] == str(settings)
        with pytest.raises(RemoteError) as caught:
            await daemon.request("_cody/permissions/remove", entry)
        assert caught.value.code == -32602
        assert "Bash(ls:*)" in settings.read_text()
    finally:
        await daemon.close()


async def test_a_session_config_layer_cannot_carry_rules_and_says_so(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """`_meta.cody.config` (`cody-client exec -c`, issue 24.10) is a layer of config keys, but
    rules are read from the files at each turn: a session layer holding them would be dropped
    at the next turn, so it is refused, naming the key, instead of silently ignored."""
    from cody_client.connection import RemoteError

    daemon = await started(cody_env, model)
    try:
        with pytest.raises(RemoteError) as caught:
            await daemon.new_session(config={"permissions": {"allow": ["exec"]}})
        assert caught.value.code == -32602
        assert "_meta.cody.config.permissions" in json.dumps(caught.value.data)
        assert "config.toml" in caught.value.message
    finally:
        await daemon.close()

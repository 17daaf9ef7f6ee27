"""Agent profiles (engine/subagents/profiles.py, profile_files.py) and what a child may do
(limits.py): the peers' formats read as data, and nothing in a profile loosens the parent."""

from __future__ import annotations

from pathlib import Path

import pytest
from cody_daemon.engine.settings import SessionSettings
from cody_daemon.engine.subagents.limits import child_plan
from cody_daemon.engine.subagents.lineage import ChildTotals, Lineage
from cody_daemon.engine.subagents.profile_files import (
    cody_tool_names,
    markdown_profile,
    toml_profile,
)
from cody_daemon.engine.subagents.profiles import (
    AgentProfile,
    ProfileDirs,
    builtin_profiles,
    load_profiles,
)
from cody_daemon.tools.registry import ToolRegistry
from cody_daemon.worktrees.worktree import Worktree

KNOWN = ("exec", "readFile", "writeFile", "applyPatch", "grepFiles", "fileSearch", "listDir")

FACTS = ToolRegistry.builtin().facts()
"""What Cody's tools can do (the phases are derived from it)."""


def dirs(root: Path) -> ProfileDirs:
    return ProfileDirs(cody=root / "cody", claude=root / "claude", codex=root / "codex")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_claude_front_matter_with_a_comma_list_maps_the_peer_tool_names() -> None:
    fields, body = markdown_profile(
        "---\nname: reviewer\ndescription: 'Reviews: carefully'\ntools: Read, Grep, Glob, Bash\n"
        "model: inherit\n---\nYou review.\n"
    )
    assert fields["name"] == "reviewer" and fields["description"] == "Reviews: carefully"
    assert body == "You review.\n"
    tools, left_out = cody_tool_names(fields["tools"], KNOWN)
    assert tools == {"readFile", "grepFiles", "fileSearch", "exec"} and left_out == []


def test_a_tool_with_an_argument_pattern_is_left_out_not_widened() -> None:
    tools, left_out = cody_tool_names(["Read", "Bash(git diff:*)", "Frobnicate"], KNOWN)
    assert tools == {"readFile"}
    assert left_out == ["Bash(git diff:*)", "Frobnicate"]


def test_block_lists_and_cody_names_pass_and_mcp_tools_are_kept() -> None:
    fields, _ = markdown_profile("---\ntools:\n  - readFile\n  - mcp__docs__search\n---\n")
    tools, _ = cody_tool_names(fields["tools"], KNOWN)
    assert tools == {"readFile", "mcp__docs__search"}


def test_text_without_closed_front_matter_is_all_body() -> None:
    assert markdown_profile("---\nname: x\nno end") == ({}, "---\nname: x\nno end")
    assert markdown_profile("plain text") == ({}, "plain text")


def test_a_codex_agent_file_gives_its_instructions_as_the_body() -> None:
    fields, body = toml_profile(
        'name = "tester"\ndescription = "Runs tests"\ndeveloper_instructions = "Run pytest."\n'
        'sandbox_mode = "read-only"\nnickname_candidates = ["T"]\n[extra]\nx = 1\n'
    )
    assert fields == {
        "name": "tester",
        "description": "Runs tests",
        "sandbox_mode": "read-only",
        "nickname_candidates": ["T"],
    }
    assert body == "Run pytest."
    with pytest.raises(ValueError, match="not valid TOML"):
        toml_profile("name = ")


def test_profiles_are_found_in_order_and_the_first_of_a_name_wins(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write(project / ".cody/agents/a.md", "---\nname: shared\ndescription: from the project\n---\n")
    write(tmp_path / "cody/agents/a.md", "---\nname: shared\ndescription: from the user\n---\n")
    write(tmp_path / "cody/agents/mine.md", "---\ndescription: mine\n---\nBody.\n")
    write(project / ".claude/agents/c.md", "---\nname: claude-one\ndescription: c\n---\n")
    write(
        project / ".codex/agents/t.toml",
        'name = "codex-one"\ndescription = "t"\ndeveloper_instructions = "x"\n',
    )
    write(project / ".codex/agents/ignored.md", "---\nname: md-in-codex\ndescription: no\n---\n")

    found = load_profiles(project, dirs(tmp_path), KNOWN)

    names = list(found.profiles)
    assert names[:2] == ["general", "explore"]
    assert found.profiles["shared"].description == "from the project"
    assert (
        found.profiles["mine"].instructions == "Body." and found.profiles["mine"].origin == "cody"
    )
    assert found.profiles["claude-one"].origin == "claude"
    assert found.profiles["codex-one"].instructions == "x"
    assert "md-in-codex" not in found.profiles


def test_bad_profiles_are_warned_about_and_skipped(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    agents = project / ".claude" / "agents"
    write(agents / "nodesc.md", "---\nname: nodesc\n---\n")
    write(agents / "badname.md", "---\nname: '../../x'\ndescription: d\n---\n")
    write(agents / "general.md", "---\nname: general\ndescription: hijack\n---\n")
    write(agents / "policy.md", "---\nname: p\ndescription: d\napproval_policy: sometimes\n---\n")
    (agents / "binary.md").write_bytes(b"\xff\xfe\x00garbage")

    found = load_profiles(project, dirs(tmp_path), KNOWN)

    text = "\n".join(found.warnings)
    assert "no description" in text
    assert "not a usable agent name" in text
    assert "built-in agent's" in text
    assert "approval_policy 'sometimes' is not one of" in text
    assert "binary.md: not read" in text
    assert found.profiles["general"].description == builtin_profiles()["general"].description
    assert found.profiles["p"].approval_policy is None


def test_a_project_directory_linked_out_of_the_project_is_not_read(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / "x.md", "---\nname: x\ndescription: d\n---\n")
    (project / ".claude").mkdir()
    (project / ".claude" / "agents").symlink_to(elsewhere)

    found = load_profiles(project, dirs(tmp_path), KNOWN)

    assert "x" not in found.profiles
    assert any("outside the project" in w for w in found.warnings)


def settings(**changes: object) -> SessionSettings:
    base = SessionSettings(
        provider="p", model="m", approval_policy="on-request", sandbox_mode="workspace-write"
    )
    for key, value in changes.items():
        setattr(base, key, value)
    return base


@pytest.mark.parametrize(
    ("parent", "wanted", "result"),
    [
        ("on-request", "never", "on-request"),
        ("on-request", "untrusted", "untrusted"),
        ("untrusted", "on-request", "untrusted"),
        ("never", "on-failure", "on-failure"),
    ],
)
def test_a_profiles_approval_policy_applies_only_when_no_looser(
    parent: str, wanted: str, result: str
) -> None:
    profile = AgentProfile(name="x", description="d", approval_policy=wanted)  # type: ignore[arg-type]
    plan = child_plan(
        settings(approval_policy=parent), profile, has_model=lambda m: True, tool_facts=FACTS
    )
    assert plan.meta.approval_policy == result
    assert bool(plan.notes) == (result != wanted)


def test_sandbox_tools_model_and_turns_are_narrowed_never_widened() -> None:
    profile = AgentProfile(
        name="x",
        description="d",
        sandbox_mode="danger-full-access",
        tools=frozenset({"exec", "readFile"}),
        model="unknown-model",
        max_turns=5,
    )
    parent = settings(allowed_tools=["readFile", "grepFiles"], max_tool_iterations=50)
    plan = child_plan(parent, profile, has_model=lambda m: m == "m", tool_facts=FACTS)
    assert plan.meta.sandbox_mode == "workspace-write"
    assert plan.meta.allowed_tools == ["readFile"], "only what both allow"
    assert plan.meta.model == "m" and plan.meta.provider == "p"
    assert plan.meta.config == {"max_tool_iterations": 5}
    assert len(plan.notes) == 2
    explore = builtin_profiles()["explore"]
    plan = child_plan(settings(), explore, has_model=lambda m: True, tool_facts=FACTS)
    assert plan.meta.sandbox_mode == "read-only" and "exec" not in (plan.meta.allowed_tools or [])


@pytest.mark.parametrize(
    "record",
    [
        None,
        "x",
        {"sessionId": "p", "agent": "a", "depth": 0},
        {"sessionId": "p", "agent": "a", "depth": True},
        {"sessionId": "p\x1b]0;x", "agent": "a", "depth": 1},
        {"sessionId": "p", "agent": ["a"], "depth": 1},
        {"sessionId": "p", "agent": "a", "depth": 1, "toolCallId": 3},
    ],
)
def test_a_malformed_lineage_record_is_no_lineage(record: object) -> None:
    assert Lineage.from_record(record) is None


def test_a_lineage_round_trips_and_totals_survive_damage() -> None:
    lineage = Lineage(parent_session_id="p", parent_tool_call_id="t", agent="a", depth=2)
    assert Lineage.from_record(lineage.record()) == lineage
    assert ChildTotals.from_record({"usage": "x", "costUsd": "y", "sessions": -1}) == ChildTotals()


def test_a_recorded_worktree_outside_the_worktrees_directory_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "data" / "worktrees"
    good = {
        "path": str(root / "repo-1234" / "w"),
        "branch": "cody/w",
        "base": "a" * 40,
        "projectRoot": str(tmp_path / "repo"),
        "subdir": "src",
    }
    assert Worktree.from_record(good, root) is not None
    for change in (
        {"path": str(tmp_path / "repo")},
        {"path": str(root)},
        {"branch": "main"},
        {"branch": "cody/../main"},
        {"base": "HEAD"},
        {"subdir": "../.."},
        {"projectRoot": "relative"},
    ):
        assert Worktree.from_record({**good, **change}, root) is None, change

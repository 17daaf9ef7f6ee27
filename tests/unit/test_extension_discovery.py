"""extensions/discovery.py on real directories: where commands, skills and hooks come from,
which wins a name, what an untrusted project loses, and what hostile files cost."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cody_daemon.config.loader import HookTable
from cody_daemon.extensions.discovery import Extensions, Locations, discover


def where(root: Path) -> Locations:
    return Locations(
        cody_dir=root / "cody",
        claude_dir=root / "claude",
        codex_home=root / "codex",
        home=root / "home",
        config_file=root / "cody" / "config.toml",
    )


def project(root: Path) -> Path:
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    return repo


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def found(root: Path, cwd: Path, *, trusted: bool = False, **extra: object) -> Extensions:
    return discover(cwd, where(root), trusted=trusted, reserved={"compact", "init"}, **extra)  # type: ignore[arg-type]


def test_every_place_is_read_and_the_nearest_project_directory_wins(tmp_path: Path) -> None:
    repo = project(tmp_path)
    sub = repo / "pkg"
    write(tmp_path / "claude" / "commands" / "mine.md", "user claude")
    write(tmp_path / "codex" / "prompts" / "fix.md", "codex $1")
    write(tmp_path / "cody" / "commands" / "ops" / "deploy.md", "nested")
    write(repo / ".claude" / "commands" / "lint.md", "root lint")
    write(sub / ".claude" / "commands" / "lint.md", "sub lint")
    write(sub / ".cody" / "commands" / "test.md", "sub test")
    got = found(tmp_path, sub)
    assert set(got.commands) == {"mine", "fix", "prompts:fix", "ops:deploy", "lint", "test"}
    assert got.commands["lint"].path == sub / ".claude" / "commands" / "lint.md"
    assert got.commands["fix"].origin == "codex" and got.commands["mine"].origin == "claude"
    assert "not loaded, another command of the same name comes first: /lint" in "\n".join(
        got.warnings
    )


def test_builtins_and_the_users_commands_are_never_replaced(tmp_path: Path) -> None:
    repo = project(tmp_path)
    write(repo / ".claude" / "commands" / "compact.md", "evil")
    write(repo / ".claude" / "commands" / "deploy.md", "repo")
    write(tmp_path / "claude" / "commands" / "deploy.md", "user")
    write(repo / ".agents" / "skills" / "init" / "SKILL.md", "---\nname: init\n---\nx")
    got = found(tmp_path, repo)
    assert "compact" not in got.commands and "init" not in got.commands
    assert got.commands["deploy"].scope == "user"
    text = "\n".join(got.warnings)
    assert "/compact in" in text and "the skill /init in" in text


def test_skills_are_read_from_their_front_matter_only(tmp_path: Path) -> None:
    repo = project(tmp_path)
    write(
        tmp_path / "home" / ".agents" / "skills" / "pdf" / "SKILL.md",
        "---\nname: pdf\ndescription: Fills PDF forms\nuser-invocable: false\n---\n"
        + "x" * 100_000,
    )
    write(
        repo / ".claude" / "skills" / "notes" / "SKILL.md",
        "# Release notes\nWrite them from the merged pull requests.\n",
    )
    write(
        repo / ".agents" / "skills" / "pdf" / "SKILL.md",
        "---\nname: pdf\ndescription: the repository's pdf\n---\n",
    )
    write(repo / ".agents" / "skills" / "bad" / "SKILL.md", "---\nname: ../../etc\n---\n")
    got = found(tmp_path, repo)
    by = {skill.name: skill for skill in got.skills}
    assert set(by) == {"pdf", "notes"}
    assert by["pdf"].description == "Fills PDF forms" and by["pdf"].scope == "user"
    assert by["notes"].description == "Release notes"
    assert "pdf" not in got.commands and "notes" in got.commands, "user-invocable: false"
    assert "is not a usable name" in "\n".join(got.warnings)


def test_hostile_files_cost_only_themselves(tmp_path: Path) -> None:
    repo = project(tmp_path)
    commands = repo / ".claude" / "commands"
    commands.mkdir(parents=True)
    os.mkfifo(commands / "fifo.md")
    (commands / "zero.md").symlink_to("/dev/zero")
    (commands / "out.md").symlink_to(write(tmp_path / "secret.md", "secret"))
    write(commands / "binary.md", "a\0b")
    skills = repo / ".agents" / "skills"
    skills.mkdir(parents=True)
    (skills / "escape").symlink_to(tmp_path / "home")  # a folder outside the project
    write(tmp_path / "home" / "SKILL.md", "---\nname: escape\n---\n")
    (repo / ".claude" / "agents-link").symlink_to(tmp_path)
    write(commands / "ok.md", "fine")
    got = found(tmp_path, repo)
    assert set(got.commands) == {"ok"}
    assert not got.skills
    text = "\n".join(got.warnings)
    for name in ("fifo.md", "zero.md", "out.md", "binary.md"):
        assert f"{commands / name} skipped" in text, name


def hooks_json(path: Path, command: str) -> None:
    write(
        path,
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}
                    ]
                }
            }
        ),
    )


def test_an_untrusted_projects_hooks_are_named_and_never_kept(tmp_path: Path) -> None:
    repo = project(tmp_path)
    hooks_json(tmp_path / "codex" / "hooks.json", "user-hook")
    hooks_json(repo / ".claude" / "settings.json", "repo-hook")
    hooks_json(repo / ".codex" / "hooks.json", "codex-repo-hook")
    table = HookTable(
        str(repo / ".cody" / "config.toml"),
        {"Stop": [{"hooks": [{"type": "command", "command": "toml-repo-hook"}]}]},
        project=True,
    )
    untrusted = found(tmp_path, repo, hook_tables=[table])
    assert [hook.command for hook in untrusted.hooks] == ["user-hook"]
    text = "\n".join(untrusted.warnings)
    for command in ("repo-hook", "codex-repo-hook", "toml-repo-hook"):
        assert f"`{command}`" in text
    assert str(repo / ".claude" / "settings.json") in text and "not trusted" in text
    trusted = found(tmp_path, repo, trusted=True, hook_tables=[table])
    assert {hook.command for hook in trusted.hooks} == {
        "user-hook",
        "repo-hook",
        "codex-repo-hook",
        "toml-repo-hook",
    }


def test_claude_settings_can_turn_their_hooks_off_and_bad_json_is_named(tmp_path: Path) -> None:
    repo = project(tmp_path)
    write(
        tmp_path / "claude" / "settings.json",
        json.dumps(
            {
                "disableAllHooks": True,
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]},
            }
        ),
    )
    write(tmp_path / "codex" / "hooks.json", "{not json")
    write(tmp_path / "cody" / "hooks.json", "[" * 100_000)
    got = found(tmp_path, repo)
    assert not got.hooks
    text = "\n".join(got.warnings)
    assert "(disableAllHooks)" in text
    assert f"hooks in {tmp_path / 'codex' / 'hooks.json'} ignored: not valid JSON" in text
    assert f"hooks in {tmp_path / 'cody' / 'hooks.json'} ignored: not valid JSON" in text


def test_nothing_is_read_from_a_directory_anyone_may_write(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / ".git").mkdir(parents=True)
    write(shared / ".claude" / "commands" / "planted.md", "planted")
    hooks_json(shared / ".claude" / "settings.json", "planted-hook")
    shared.chmod(0o1777)
    cwd = shared / "work"
    cwd.mkdir()
    got = found(tmp_path, cwd, trusted=True)
    assert "planted" not in got.commands and not got.hooks


def test_a_thousand_bad_files_give_a_bounded_list_of_warnings(tmp_path: Path) -> None:
    repo = project(tmp_path)
    commands = repo / ".claude" / "commands"
    commands.mkdir(parents=True)
    for index in range(300):
        os.mkfifo(commands / f"f{index:03d}.md")
    got = found(tmp_path, repo)
    assert not got.commands
    assert len(got.warnings) == 20
    assert got.warnings[-1] == "... and 281 more warnings like these"


def test_hooks_tables_of_config_files_are_set_aside_per_file(tmp_path: Path) -> None:
    from cody_daemon.config.loader import load_effective_config
    from cody_daemon.config.paths import CodyPaths

    paths = CodyPaths.under(tmp_path / "cody", tmp_path / "data")
    write(
        paths.config_file,
        '[[hooks.PreToolUse]]\nmatcher = "Bash"\n'
        '[[hooks.PreToolUse.hooks]]\ntype = "command"\ncommand = "user-hook"\n',
    )
    repo = project(tmp_path)
    write(
        repo / ".cody" / "config.toml",
        '[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "repo-hook"\n',
    )
    loaded = load_effective_config(cwd=repo, paths=paths)
    assert [(t.source, t.project) for t in loaded.hook_tables] == [
        (str(paths.config_file), False),
        (str(repo / ".cody" / "config.toml"), True),
    ]
    assert not any("hooks" in warning for warning in loaded.warnings), loaded.warnings
    got = discover(repo, where(tmp_path), trusted=False, hook_tables=loaded.hook_tables)
    assert [hook.command for hook in got.hooks] == ["user-hook"]
    assert "`repo-hook`" in "\n".join(got.warnings)

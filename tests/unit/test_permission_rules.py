"""Permission rules: parsing, matching (policy/rules.py, command_parts.py), the rules
`allow_project` proposes (rule_proposals.py), other agents' files (foreign_rules.py) and
saving to the config (config/rule_writer.py)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from cody_daemon.config.rule_writer import RuleWriteError, add_project_rules, remove_rule
from cody_daemon.policy.command_parts import loose_parts, split_command
from cody_daemon.policy.foreign_rules import ForeignRules, read_claude_settings, read_codex_rules
from cody_daemon.policy.rule_proposals import propose_rules
from cody_daemon.policy.rules import (
    CommandSubject,
    PathSubject,
    RuleError,
    RuleSet,
    RuleSubject,
    UrlSubject,
    parse_rule,
)
from cody_daemon.tools.registry import ToolRegistry

WS = Path("/w")
FACTS = ToolRegistry.builtin().facts()
"""What Cody's tools declare (`Read` and `Edit` rules cover tools by their facts)."""


def rules(*entries: tuple[str, str], base: Path = WS, project: str | None = None) -> RuleSet:
    return RuleSet(
        [
            parse_rule(
                text, decision, source="/c.toml", base=base, home=Path("/h"), project=project
            )  # type: ignore[arg-type]
            for decision, text in entries
        ]
    )


def command(text: str | list[str], cwd: Path = WS, writable: Path = WS) -> CommandSubject:
    parts = split_command(text, cwd=cwd, may_write=lambda p: str(p).startswith(str(writable) + "/"))
    return CommandSubject(parts, tuple(loose_parts(text)), cwd)


def decision(ruleset: RuleSet, tool: str, subject: RuleSubject) -> str | None:
    verdict = ruleset.evaluate(tool, subject, FACTS.get(tool))
    return verdict.decision if verdict is not None else None


# -- commands ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "allowed"),
    [
        ("git diff", True),
        ("git diff HEAD~1 -- src", True),
        (["git", "diff", "--stat"], True),
        (["bash", "-lc", "git diff"], True),
        ("/usr/bin/git diff", True),
        ("git diff $FILE", True),  # the expansion is an argument, never a command
        ("git diff > out.txt", True),  # a redirection inside the workspace
        ("git diff 2>&1 | git diff", True),
        ("git diffx", False),
        ("gitx diff", False),
        ("git", False),
        ("FOO=1 git diff", False),
        ("env git diff", False),
        ("./git diff", False),
        ("git diff; rm x", False),
        ("git diff && rm x", False),
        ("git diff | sh", False),
        ("git diff $(rm x)", False),
        ("git diff `rm x`", False),
        ("git diff ${X}", False),
        ("git diff > /etc/passwd", False),
        ("git diff > $OUT", False),
        ("git diff &", False),
        ("(git diff)", False),
        ("eval git diff", False),
        ("source x; git diff", False),
        ("git diff <<EOF\nx\nEOF", False),
        ("$G diff", False),
        ("git di* x", False),
        ("git 'diff", False),
    ],
)
def test_an_allow_prefix_matches_only_its_plain_spellings(
    spelling: str | list[str], allowed: bool
) -> None:
    ruleset = rules(("allow", "exec(git diff:*)"), ("allow", "Bash(true)"))
    assert (decision(ruleset, "exec", command(spelling)) == "allow") is allowed


@pytest.mark.parametrize(
    "spelling",
    [
        "rm -rf build",
        "/bin/rm -rf build",
        "FOO=1 rm -rf build",
        "env -i rm -rf build",
        "sudo rm -rf build",
        "echo hi; rm -rf build",
        "echo $(rm -rf build)",
        "bash -c 'rm -rf build'",
        ["sh", "-c", "true && rm -rf build"],
        "eval 'rm -rf build'",
        "x=$(echo); nohup rm -rf build &",
    ],
)
def test_a_deny_rule_matches_any_part_even_hidden(spelling: str | list[str]) -> None:
    ruleset = rules(("deny", "exec(rm -rf:*)"), ("allow", "exec"))
    assert decision(ruleset, "exec", command(spelling)) == "deny"


def test_deny_beats_ask_beats_allow_whatever_the_order() -> None:
    ruleset = rules(
        ("allow", "exec(git:*)"), ("ask", "exec(git push:*)"), ("deny", "exec(git push --force:*)")
    )
    assert decision(ruleset, "exec", command("git status")) == "allow"
    assert decision(ruleset, "exec", command("git push origin")) == "ask"
    assert decision(ruleset, "exec", command("git push --force origin")) == "deny"


def test_a_compound_command_needs_every_part_allowed() -> None:
    ruleset = rules(("allow", "exec(npm test:*)"), ("allow", "exec(npm run lint)"))
    verdict = ruleset.evaluate("exec", command("npm test -- -x && npm run lint"), FACTS["exec"])
    assert verdict is not None and verdict.decision == "allow" and len(verdict.rules) == 2
    assert decision(ruleset, "exec", command("npm test && npm run lint --fix")) is None


def test_a_bare_exec_allows_what_splits_and_never_what_does_not() -> None:
    ruleset = rules(("allow", "exec"))
    assert decision(ruleset, "exec", command("anything at all | wc -l")) == "allow"
    assert decision(ruleset, "exec", command("echo $(id)")) is None


def test_a_glob_is_for_deny_and_ask_only() -> None:
    with pytest.raises(RuleError, match="allow"):
        parse_rule("exec(git * main)", "allow", source="s", base=WS, home=WS)
    ruleset = rules(("ask", "Bash(git * main)"))
    assert decision(ruleset, "exec", command("git push origin main")) == "ask"
    assert decision(ruleset, "exec", command("git push origin dev")) is None


def test_a_project_rule_applies_only_to_commands_run_inside_the_project() -> None:
    ruleset = rules(("allow", "exec(make:*)"), project="/w")
    assert decision(ruleset, "exec", command("make", cwd=Path("/w/sub"))) == "allow"
    assert decision(ruleset, "exec", command("make", cwd=Path("/other"))) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "exec(",
        "Task",
        "Agent(x)",
        "webSearch(foo)",
        "fetchUrl(docs.rs)",
        "mcp__x(y)",
        "exec(')",
    ],
)
def test_a_rule_cody_cannot_apply_is_an_error(text: str) -> None:
    with pytest.raises(RuleError):
        parse_rule(text, "deny", source="s", base=WS, home=WS)


# -- paths, hosts, tools ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "path", "matches"),
    [
        ("readFile(./.env)", "/w/.env", True),
        ("readFile(.env)", "/w/sub/deep/.env", True),  # no slash: any depth (gitignore)
        ("readFile(./.env)", "/w/sub/.env", False),
        ("Read(src/**)", "/w/src/a/b.py", True),
        ("Read(src)", "/w/src/a.py", True),  # a directory covers what is below it
        ("Read(src/*.py)", "/w/src/a/b.py", False),
        ("Read(src/**/*.py)", "/w/src/a/b.py", True),
        ("Read(//etc/passwd)", "/etc/passwd", True),
        ("Read(~/.ssh/**)", "/h/.ssh/id_ed25519", True),
        ("Read(/secrets/**)", "/w/secrets/k", True),
        ("Read(../other/**)", "/other/x", True),
        ("Read(*.key)", "/w/a/b.key", True),
        ("Read(*.key)", "/w/a/b.keys", False),
    ],
)
def test_path_rules_follow_gitignore(rule: str, path: str, matches: bool) -> None:
    ruleset = rules(("deny", rule))
    assert (decision(ruleset, "readFile", PathSubject((Path(path),))) == "deny") is matches


def test_read_rules_cover_every_read_tool_and_edit_rules_both_edit_tools() -> None:
    ruleset = rules(("deny", "Read(./secret)"), ("allow", "Edit(src/**)"))
    for tool in ("readFile", "listDir", "grepFiles", "fileSearch"):
        assert decision(ruleset, tool, PathSubject((Path("/w/secret"),))) == "deny"
    for tool in ("writeFile", "applyPatch"):
        assert decision(ruleset, tool, PathSubject((Path("/w/src/x"),))) == "allow"
    patch = PathSubject((Path("/w/src/x"), Path("/w/README")))
    assert decision(ruleset, "applyPatch", patch) is None, "every path of a patch must be allowed"


def test_hosts_and_mcp_servers() -> None:
    ruleset = rules(
        ("allow", "WebFetch(domain:docs.rs)"),
        ("allow", "fetchUrl(domain:*.python.org)"),
        ("deny", "mcp__github__delete_repo"),
        ("allow", "mcp__github"),
        ("allow", "webSearch"),
    )
    assert decision(ruleset, "fetchUrl", UrlSubject("DOCS.rs")) == "allow"
    assert decision(ruleset, "fetchUrl", UrlSubject("docs.python.org")) == "allow"
    assert decision(ruleset, "fetchUrl", UrlSubject("evil.rs")) is None
    assert decision(ruleset, "mcp__github__list_issues", None) == "allow"
    assert decision(ruleset, "mcp__github__delete_repo", None) == "deny"
    assert decision(ruleset, "mcp__githubx__list", None) is None
    assert decision(ruleset, "webSearch", None) == "allow"


# -- proposals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "proposed"),
    [
        ("npm run test -- -k x", ["exec(npm run test:*)"]),
        ("cargo test --release", ["exec(cargo test:*)"]),
        ("pytest -q", ["exec(pytest:*)"]),
        ("python3 -c 'print(1)'", ["exec(python3 -c 'print(1)')"]),
        ("rm -rf build", ["exec(rm -rf build)"]),
        ("git -C x status", ["exec(git -C x status)"]),
        ("npm ci && npm test", ["exec(npm ci:*)", "exec(npm test:*)"]),
        ("echo $(id)", None),
        ("rm $F", None),
        ("FOO=1 make", ["exec(FOO=1 make)"]),
        ("./build.sh --all", ["exec(./build.sh --all)"]),
    ],
)
def test_allow_project_proposes_a_rule_that_allows_the_call(
    spelling: str, proposed: list[str] | None
) -> None:
    subject = command(spelling)
    found = propose_rules("exec", subject, WS, FACTS.get("exec"))
    assert found == proposed
    if found is not None:
        assert decision(rules(*[("allow", r) for r in found]), "exec", subject) == "allow"


def test_allow_project_proposes_the_directory_of_an_edit(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    inside = PathSubject((tmp_path / "src" / "a.py",))
    assert propose_rules("writeFile", inside, tmp_path, FACTS.get("writeFile")) == [
        "writeFile(./src/**)"
    ]
    top = PathSubject((tmp_path / "a.py",))
    assert propose_rules("applyPatch", top, tmp_path, FACTS.get("applyPatch")) == [
        "writeFile(./**)"
    ]
    outside = PathSubject((Path("/srv/out/x"),))
    [rule] = propose_rules("writeFile", outside, tmp_path, FACTS.get("writeFile")) or []
    assert rule == "writeFile(//srv/out/**)"
    for subject in (inside, top, outside):
        found = propose_rules("writeFile", subject, tmp_path, FACTS.get("writeFile")) or []
        assert decision(rules(*[("allow", r) for r in found], base=tmp_path), "writeFile", subject)
    assert propose_rules("fetchUrl", UrlSubject("Docs.RS"), tmp_path, FACTS.get("fetchUrl")) == [
        "fetchUrl(domain:docs.rs)"
    ]
    assert propose_rules("mcp__a__b", None, tmp_path, FACTS.get("mcp__a__b")) == ["mcp__a__b"]


# -- other agents' files ----------------------------------------------------------------------


def test_codex_prefix_rules_expand_their_alternatives(tmp_path: Path) -> None:
    (tmp_path / "default.rules").write_text(
        "# comment\n"
        'prefix_rule(pattern=["git", ["push", "fetch"]], decision="prompt", match=["git push"])\n'
        "prefix_rule(pattern = ['rm', '-rf'], decision = 'forbidden',)\n"
        'prefix_rule(pattern=["ls"])\n'
        'host_executable(name="git", paths=["/usr/bin/git"])\n'
        'network_rule(host="x.org", protocol="https", decision="allow")\n'
    )
    found = ForeignRules()
    read_codex_rules(tmp_path, found)
    assert [(r.text, r.decision) for r in found.rules] == [
        ("exec(git push:*)", "ask"),
        ("exec(git fetch:*)", "ask"),
        ("exec(rm -rf:*)", "deny"),
        ("exec(ls:*)", "allow"),
    ]
    assert found.warnings == []


@pytest.mark.parametrize(
    "body",
    [
        'load("x.star", "y")\nprefix_rule(pattern=["ls"])',
        "prefix_rule(pattern=[" + "[" * 10 + '"a"' + "]" * 11 + ")",
        'prefix_rule(pattern=["ls"], decision=allow)',
        'prefix_rule(pattern=["ls"], decision="sometimes")',
        'prefix_rule(pattern="ls")',
        'prefix_rule(pattern=["ls"]',
        'prefix_rule(pattern=["l\\qs"])',
        'prefix_rule(pattern=["a", ' + ", ".join(['["x", "y"]'] * 7) + "])",
        '"""doc"""\nprefix_rule(pattern=["ls"])',
    ],
)
def test_a_codex_file_with_anything_else_is_skipped_whole(tmp_path: Path, body: str) -> None:
    (tmp_path / "bad.rules").write_text(
        'prefix_rule(pattern=["rm"], decision="forbidden")\n' + body
    )
    found = ForeignRules()
    read_codex_rules(tmp_path, found)
    assert found.rules == [], "not even the forbidden rule before the bad part"
    assert len(found.warnings) == 1 and "bad.rules" in found.warnings[0]


def test_special_and_huge_files_are_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.rules")
    (tmp_path / "huge.rules").write_bytes(b"#" * (2 * 1024 * 1024))
    (tmp_path / "settings.json").mkdir()
    found = ForeignRules()
    read_codex_rules(tmp_path, found)
    read_claude_settings(tmp_path / "settings.json", found)
    read_claude_settings(tmp_path / "missing.json", found)
    assert found.rules == []
    text = "\n".join(found.warnings)
    assert "pipe.rules: not a regular file" in text
    assert "huge.rules: larger than" in text
    assert "settings.json: not a regular file" in text


def test_claude_settings_keep_their_rules_as_written(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"permissions": {"allow": ["Bash(ls:*)", 3], "deny": ["Read(./.env)"]}}')
    found = ForeignRules()
    read_claude_settings(path, found)
    assert [(r.text, r.decision) for r in found.rules] == [
        ("Bash(ls:*)", "allow"),
        ("Read(./.env)", "deny"),
    ]
    path.write_text("[" * 100_000)
    again = ForeignRules()
    read_claude_settings(path, again)
    assert again.rules == [] and "not a JSON file" in again.warnings[0]


# -- writing the user config ------------------------------------------------------------------


def test_a_saved_rule_keeps_the_files_comments_order_and_mode(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    text = (
        "# top comment\nmodel = 'x'  # inline\n\n"
        '[permissions]\ndeny = ["exec(rm -rf:*)"]\n\n[tools.fetchUrl]\ntimeout_s = 5\n'
    )
    config.write_text(text)
    config.chmod(0o600)
    assert add_project_rules(config, "/p q", ["exec(make:*)"]) is True
    assert add_project_rules(config, "/p q", ["exec(make:*)"]) is False, "already there"
    saved = config.read_text()
    assert saved.startswith(text), "everything before stays as written"
    assert tomllib.loads(saved)["projects"]["/p q"]["permissions"]["allow"] == ["exec(make:*)"]
    assert config.stat().st_mode & 0o777 == 0o600
    assert remove_rule(config, "exec(make:*)", "allow", "/p q") is True
    assert remove_rule(config, "exec(rm -rf:*)", "deny", None) is True
    assert remove_rule(config, "exec(rm -rf:*)", "deny", None) is False
    assert "# top comment" in config.read_text() and "# inline" in config.read_text()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["config.toml"]


def test_a_config_that_is_not_toml_is_left_alone(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("model = \n")
    with pytest.raises(RuleWriteError, match="not valid TOML"):
        add_project_rules(config, "/p", ["exec(make:*)"])
    assert config.read_text() == "model = \n"
    config.write_text('projects = "no"\n')
    with pytest.raises(RuleWriteError, match="not a table"):
        add_project_rules(config, "/p", ["exec(make:*)"])

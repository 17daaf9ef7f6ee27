"""`is_inert_for_git`: can a repository make a read-only git command run a program?

Every repository here is made by the real git; every hostile setting is one that makes git
run a program (the e2e tests in tests/e2e/test_hostile_repo.py show git doing it).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cody_daemon.core.tooling import ToolFacts
from cody_daemon.policy.git_repo import is_inert_for_git

EXEC = ToolFacts(changes="programs")
"""What `exec` declares (rules for it match by its name)."""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-qm", "one")
    return path


def inert(path: Path) -> bool:
    return is_inert_for_git(path, {})


def test_a_fresh_repository_and_its_subdirectories_are_inert(repo: Path) -> None:
    (repo / "src" / "deep").mkdir(parents=True)
    assert inert(repo)
    assert inert(repo / "src" / "deep")
    assert inert(repo / "not-there-yet")


def test_a_directory_outside_any_repository_is_inert(tmp_path: Path) -> None:
    assert inert(tmp_path)


def test_the_settings_of_a_normal_clone_are_data(repo: Path) -> None:
    git(repo, "remote", "add", "origin", "https://example.com/x.git")
    git(repo, "config", "branch.main.remote", "origin")
    git(repo, "config", "branch.main.merge", "refs/heads/main")
    git(repo, "config", "user.name", "Someone")
    git(repo, "config", "pull.rebase", "true")
    git(repo, "config", "color.diff.meta", "blue")
    git(repo, "config", "alias.st", "!touch pwned")  # git never lets an alias replace status
    git(repo, "config", "lfs.repositoryformatversion", "0")
    assert inert(repo)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("core.fsmonitor", "touch pwned"),
        ("core.pager", "touch pwned; cat"),
        ("pager.log", "touch pwned; cat"),
        ("core.hooksPath", "evil-hooks"),
        ("core.worktree", "/"),
        ("core.splitIndex", "true"),
        ("diff.external", "./evil"),
        ("diff.evil.textconv", "./evil"),
        ("diff.evil.command", "./evil"),
        ("filter.evil.clean", "./evil"),
        ("filter.evil.process", "./evil"),
        ("include.path", "../evil.cfg"),
        ("includeIf.gitdir:/.path", "../evil.cfg"),
        ("log.showSignature", "true"),
        ("gpg.program", "./evil"),
        ("interactive.diffFilter", "./evil"),
        ("core.sshCommand", "./evil"),
        ("remote.origin.uploadpack", "./evil"),
        ("submodule.x.update", "!./evil"),
        ("hook.evil.command", "./evil"),
        ("something.unknown", "1"),
    ],
)
def test_a_setting_that_may_run_a_program_makes_the_repository_not_inert(
    repo: Path, key: str, value: str
) -> None:
    git(repo, "config", key, value)
    assert not inert(repo)
    assert not inert(repo / "sub" / "dir")


@pytest.mark.parametrize(
    "text",
    [
        "[core]\n\tfsmonitor = touch pwned\n",
        "[CORE]\n\tFSMonitor = touch pwned\n",
        "[core] fsmonitor = touch pwned\n",  # a key on the section line
        "[core]\n\tfsmonitor\n",  # a bare key means true
        '[remote "o"]\n\turl = x \\\n\tfsmonitor = y\n',  # a continuation line
        "[diff.evil]\n\ttextconv = ./evil\n",  # the old [section.subsection] form
        "[core\n\tfsmonitor = x\n",
        "fsmonitor = x\n",  # a key before any section
        "[core]\n\tbare = false\r\tfsmonitor = x\n",
    ],
)
def test_the_config_parser_refuses_what_it_does_not_fully_understand(repo: Path, text: str) -> None:
    (repo / ".git" / "config").write_text(text)
    assert not inert(repo)


def test_comments_and_a_byte_order_mark_are_fine(repo: Path) -> None:
    config = repo / ".git" / "config"
    config.write_text("\ufeff# a comment\n; another\n" + config.read_text() + "\n\n")
    assert inert(repo)


def test_a_huge_config_is_not_read(repo: Path) -> None:
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + "# padding\n" * 10_000)
    assert not inert(repo)


def test_a_post_index_change_hook_makes_the_repository_not_inert(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text("#!/bin/sh\ntouch pwned\n")
    hook.chmod(0o755)
    assert not inert(repo)


def test_other_hooks_do_not_matter_to_read_only_commands(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    assert inert(repo)


def test_submodules_make_the_repository_not_inert(repo: Path, tmp_path: Path) -> None:
    blob = git(repo, "rev-parse", "HEAD")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{blob},vendor/sub")
    assert not inert(repo), "a gitlink in the index, even without .gitmodules"


def test_a_gitmodules_file_makes_the_repository_not_inert(repo: Path) -> None:
    (repo / ".gitmodules").write_text('[submodule "x"]\n\tpath = x\n\turl = ../x\n')
    assert not inert(repo)


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_every_index_version_is_parsed(repo: Path, version: str) -> None:
    for n in range(30):
        (repo / f"file-{n:02}-{'x' * n}.txt").write_text(str(n))
    git(repo, "add", ".")
    git(repo, "update-index", "--index-version", version)
    if version == "3":
        git(repo, "update-index", "--skip-worktree", "a.txt")  # an extended flag
    assert inert(repo)
    blob = git(repo, "rev-parse", "HEAD")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{blob},zz-sub")
    assert not inert(repo)


def test_a_sha256_repository_is_parsed(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--object-format=sha256", "r")
    repo = tmp_path / "r"
    (repo / "a").write_text("a")
    git(repo, "add", "a")
    assert inert(repo)


def test_a_damaged_index_is_not_trusted(repo: Path) -> None:
    index = repo / ".git" / "index"
    index.write_bytes(index.read_bytes()[:30])
    assert not inert(repo)


def test_a_split_index_is_not_trusted(repo: Path) -> None:
    git(repo, "update-index", "--split-index")
    assert not inert(repo)


def test_an_embedded_bare_repository_is_checked_when_git_runs_inside_it(repo: Path) -> None:
    bare = repo / "vendor" / "evil"
    git(repo, "init", "-q", "--bare", str(bare))
    git(bare, "config", "core.fsmonitor", "touch pwned")
    assert inert(repo)
    assert not inert(bare)
    assert not inert(bare / "refs")


def test_a_decoy_git_directory_does_not_hide_the_repository_above(repo: Path) -> None:
    git(repo, "config", "core.fsmonitor", "touch pwned")
    (repo / "sub" / ".git").mkdir(parents=True)  # not a repository: git looks further up
    assert not inert(repo / "sub")


def test_a_gitdir_file_is_followed(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "init", "-q", "--bare", str(elsewhere))
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {elsewhere}\n")
    assert inert(work)
    git(elsewhere, "config", "diff.external", "./evil")
    assert not inert(work)
    (work / ".git").write_text("nonsense\n")
    assert not inert(work)


def test_a_linked_worktree_reads_the_common_configuration(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    assert inert(linked)
    git(repo, "config", "core.fsmonitor", "touch pwned")
    assert not inert(linked)


def test_git_redirected_by_the_environment_is_not_trusted(repo: Path) -> None:
    assert not is_inert_for_git(repo, {"GIT_DIR": str(repo / ".git")})
    assert is_inert_for_git(repo, {"GIT_DIR": ""})


# -- guarded_status_hazard: the Codex CLI's own `git status` ------------------------------------


def _guarded_status_runs(repo: Path, marker: str) -> bool:
    """Run the Codex CLI's own command (observed with 0.169) and see whether `marker` appeared."""
    subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "status"]
        + ["--porcelain", "--ignore-submodules=dirty"],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    ran = (repo.parent / marker).exists()
    (repo.parent / marker).unlink(missing_ok=True)
    return ran


def test_guarded_status_ignores_what_its_overrides_disable(repo: Path) -> None:
    from cody_daemon.policy.git_repo import guarded_status_hazard

    git(repo, "config", "core.fsmonitor", f"touch {repo.parent}/PWNED-fs; false")
    git(repo, "config", "core.hooksPath", ".husky")  # common, and overridden
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {repo.parent}/PWNED-hook\n")
    hook.chmod(0o755)
    (repo / "a.txt").write_text("changed\n")
    assert not _guarded_status_runs(repo, "PWNED-fs") and not _guarded_status_runs(
        repo, "PWNED-hook"
    )
    assert guarded_status_hazard(repo, {}) is None
    assert not inert(repo), "the unguarded command would run them"


def test_guarded_status_names_a_filter_driver_and_an_include(repo: Path) -> None:
    from cody_daemon.policy.git_repo import guarded_status_hazard

    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    git(repo, "config", "filter.evil.clean", f"touch {repo.parent}/PWNED-clean; cat")
    (repo / "a.txt").write_text("b\n")  # same size: git hashes it, through the filter
    assert _guarded_status_runs(repo, "PWNED-clean"), "the filter really runs"
    hazard = guarded_status_hazard(repo / "sub", {})
    assert hazard is not None and "filter.evil.clean" in hazard and str(repo) in hazard
    git(repo, "config", "--unset", "filter.evil.clean")
    assert guarded_status_hazard(repo, {}) is None
    git(repo, "config", "include.path", "../elsewhere")
    assert "include.path" in str(guarded_status_hazard(repo, {}))
    assert "GIT_DIR" in str(guarded_status_hazard(repo, {"GIT_DIR": "/x"}))


def test_an_allow_rule_vouches_for_no_repository_that_makes_git_run_programs(
    repo: Path, tmp_path: Path
) -> None:
    """Issue 23 x 20: a user's `exec(git status:*)` (or Claude Code's `Bash(git status:*)`)
    does not allow `git status` where the repository's configuration runs a program, also
    through `-C`, also as one part of a compound command; other commands are not its concern."""
    from cody_daemon.policy.command_parts import split_command
    from cody_daemon.policy.rules import CommandSubject, RuleSet, allow_rule_void, parse_rule

    def void(command: str, cwd: Path) -> str | None:
        rules = RuleSet(
            [
                parse_rule(text, "allow", source="/cfg.toml", base=cwd, home=tmp_path)
                for text in ("exec(git status:*)", "exec(git -C:*)", "exec(ls:*)")
            ]
        )
        parts = split_command(command, cwd=cwd, may_write=lambda _path: False)
        subject = CommandSubject(parts, (), cwd)
        verdict = rules.evaluate("exec", subject, EXEC)
        assert verdict is not None and verdict.decision == "allow", command
        return allow_rule_void(verdict, subject, {})

    clean = tmp_path / "clean"
    clean.mkdir()
    git(clean, "init", "-q")
    assert void("git status", repo) is None
    assert void("ls", repo) is None
    git(repo, "config", "core.fsmonitor", "touch pwned")
    assert void("git status", repo) is not None
    assert void("ls && git status", repo) is not None
    assert void("ls", repo) is None, "only git is the repository's to run"
    assert void(f"git -C {repo} status", clean) is not None

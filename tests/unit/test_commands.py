"""Command normalisation (grant keys) and the known-safe list used by policy `untrusted`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cody_daemon.policy.commands import normalize_command
from cody_daemon.policy.safe_commands import is_known_safe

GIT_STATUS = ("git", "status")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", GIT_STATUS),
        (["git", "status"], GIT_STATUS),
        (["bash", "-lc", "git status"], GIT_STATUS),
        (["bash", "-c", "git status"], GIT_STATUS),
        (["/bin/bash", "-lc", "git status"], GIT_STATUS),
        (["sh", "-c", "git status"], GIT_STATUS),
        (["zsh", "-ic", "git status"], GIT_STATUS),
        (["/usr/bin/dash", "-c", "git status"], GIT_STATUS),
        ("bash -lc 'git status'", GIT_STATUS),
        ("  git   status  ", GIT_STATUS),
        ("'git' \"status\"", GIT_STATUS),
        ("git status # look", GIT_STATUS),
        (["bash", "-lc", "sh -c 'git status'"], GIT_STATUS),
        # assignments and an env prefix are part of the key (docs/protocol.md "Grant keys")
        ("FOO=1 git status", ("FOO=1", "git", "status")),
        ("PATH=./evilbin git status", ("PATH=./evilbin", "git", "status")),
        ("env git status", ("env", "git", "status")),
        (["env", "FOO=1", "git", "status"], ("env", "FOO=1", "git", "status")),
        ("env FOO=1 git status", ("env", "FOO=1", "git", "status")),
        ("/usr/bin/env FOO=1 git status", ("/usr/bin/env", "FOO=1", "git", "status")),
        ("env -i git status", ("env", "-i", "git", "status")),
        (["bash", "-c", "FOO=1 git status"], ("FOO=1", "git", "status")),
        # a prefix before the shell stops the unwrapping: the shell sees the variable
        (
            "BASH_ENV=./evil.sh bash -c 'git status'",
            ("BASH_ENV=./evil.sh", "bash", "-c", "git status"),
        ),
        # scripts that are not one plain command keep their text
        ("git status && rm -rf /", ("bash", "-c", "git status && rm -rf /")),
        (["bash", "-lc", "git status; touch x"], ("bash", "-c", "git status; touch x")),
        (["sh", "-c", "git status; touch x"], ("sh", "-c", "git status; touch x")),
        ("PATH=./evilbin:$PATH git status", ("bash", "-c", "PATH=./evilbin:$PATH git status")),
        ("echo `id`", ("bash", "-c", "echo `id`")),
        ("echo $(id)", ("bash", "-c", "echo $(id)")),
        ("echo $HOME", ("bash", "-c", "echo $HOME")),
        ("rm -rf ~", ("bash", "-c", "rm -rf ~")),
        ("ls *.py", ("bash", "-c", "ls *.py")),
        ("git status\ntouch x", ("bash", "-c", "git status\ntouch x")),
        ("git status > out", ("bash", "-c", "git status > out")),
        ("echo 'unbalanced", ("bash", "-c", "echo 'unbalanced")),
        ("git diff HEAD~1", ("git", "diff", "HEAD~1")),
        # only system shells are unwrapped: ./bash is the workspace's program
        (["./bash", "-c", "git status"], ("./bash", "-c", "git status")),
        ("/tmp/bash -c 'git status'", ("/tmp/bash", "-c", "git status")),
        # not unwrapped: extra positional args after the script, unknown shell flags
        (["bash", "-c", "git status", "x"], ("bash", "-c", "git status", "x")),
        (["bash", "-e", "git status"], ("bash", "-e", "git status")),
        (["python", "-c", "print(1)"], ("python", "-c", "print(1)")),
        ("env", ("env",)),
        ("FOO=1", ("FOO=1",)),
    ],
)
def test_normalize_command(command: list[str] | str, expected: tuple[str, ...]) -> None:
    assert normalize_command(command) == expected


@pytest.mark.parametrize(
    ("granted", "other"),
    [
        ("git status", "PATH=./evilbin:$PATH git status"),
        ("git status", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor git status"),
        ("git status", "env GIT_CONFIG_COUNT=1 git status"),
        ("git status", "BASH_ENV=./evil.sh bash -c 'git status'"),
        ("git status", ["./bash", "-c", "git status"]),
        ("git status", "git\nstatus"),
        (["echo", "`id`"], "echo `id`"),
        (["echo", "$(id)"], "echo $(id)"),
        (["rm", "-rf", "~"], "rm -rf ~"),
        (["ls", "*"], "ls *"),
        (["ls", ">", "x"], "ls > x"),
        ("echo 'a", "echo 'b"),
    ],
)
def test_commands_that_run_differently_never_share_a_key(
    granted: list[str] | str, other: list[str] | str
) -> None:
    assert normalize_command(granted) != normalize_command(other)


SAFE = [
    "ls",
    "ls -la src",
    ["ls", "-la"],
    "cat README.md",
    "cat *.py",
    "pwd",
    "echo hello world",
    "echo $HOME",
    'echo "a;b > c"',
    "head -n 20 file.txt",
    "tail -n 5 log.txt",
    "wc -l *.py",
    "nl file",
    "grep -rn 'TODO' src",
    "grep -c foo$ file",
    "rg -n pattern",
    "rg --pretty foo",
    "ec'ho' hi",
    "find . -name '*.py'",
    "find . -type f -print",
    "which python",
    "whoami",
    "id",
    "uname -a",
    "date",
    "date -u +%Y-%m-%d",
    "date -d yesterday",
    "stat file",
    "file README.md",
    "true",
    "false",
    "tr a-z A-Z",
    "uniq -c",
    "uniq file",
    "cut -d: -f1 /etc/passwd",
    "sort -n file",
    "sort -t o file",
    "diff a b",
    "tree -L 2",
    "du -sh .",
    "df -h",
    "basename /a/b",
    "dirname /a/b",
    "realpath .",
    "readlink -f x",
    "printenv PATH",
    "env",
    ["env"],
    "sed -n 5p file.txt",
    "sed -n 10,20p file.txt",
    "git status",
    "git status --short",
    "git log --oneline -n 5",
    "git diff HEAD~1",
    "git show HEAD",
    "git branch",
    "git branch -a",
    "git branch --show-current",
    "git branch --list 'feat*'",
    "git branch --contains HEAD",
    "git rev-parse HEAD",
    "git ls-files",
    "git blame README.md",
    "git remote -v",
    "git describe --tags",
    "git tag",
    "git tag -l 'v1*'",
    "git -C sub status",
    "git --no-pager log",
    "/usr/bin/git status",
    # sequences whose every part is safe
    "git status && git diff",
    "ls || pwd",
    "ls; pwd",
    "ls\npwd\n",
    "cat file | grep foo | wc -l",
    "ls # a comment; rm -rf /",
    # shell wrappers around safe commands
    ["bash", "-lc", "git status"],
    "bash -lc 'ls -la'",
]

UNSAFE = [
    # redirections
    "cat x > y",
    "echo hi >> y",
    "cat < x",
    "cat <<EOF\nx\nEOF",
    "ls &> out",
    "ls 2>&1",
    "ls >| out",
    # sequences with an unsafe part
    "ls; rm -rf /",
    "ls && rm x",
    "ls || rm x",
    "cat x | tee y",
    "ls\nrm -rf /",
    "git status && git push",
    # substitutions, subshells, background jobs
    "echo $(rm x)",
    'echo "$(rm x)"',
    "echo `rm x`",
    'echo "`rm x`"',
    "echo $((1+1))",
    "echo ${X:=1}",
    "(rm x)",
    "ls &",
    "sleep 1 & ls",
    "cat <(rm x)",
    "{ ls; }",
    # assignments and prefixes that change behaviour
    "FOO=1 ls",
    "GIT_EXTERNAL_DIFF=rm git diff",
    "PAGER='rm -rf .' git log",
    "env FOO=1 ls",
    "env rm x",
    "env -i rm x",
    "X=1",
    # commands not on the list
    "rm -rf /",
    "touch x",
    "mkdir x",
    "python -c 'print(1)'",
    "curl example.com",
    "xargs rm",
    "./ls",
    "/tmp/evil/ls",
    "bash script.sh",
    "bash -c 'rm x'",
    ["bash", "-lc", "rm x"],
    ["rm", "-rf", "/"],
    "",
    "   ",
    # find that deletes or runs programs
    "find . -delete",
    "find . -name x -delete",
    "find . -exec rm {} \\;",
    "find . -execdir rm {} +",
    "find . -ok rm {} \\;",
    "find . -okdir rm {} \\;",
    "find . -fprint out",
    "find . -fprintf out %p",
    "find . -fls out",
    "find * -name x",  # a file named -delete would become an option
    "find . $X",
    "find . {-delete,-print}",
    "find . $'-delete'",
    # rg that runs programs
    "rg --pre cat foo",
    "rg --pre=./evil foo",
    "rg --pre-glob '*' --pre x foo",
    "rg -z foo",
    "rg --search-zip foo",
    "rg -iz foo",
    "rg foo *",
    "rg --hostname-bin=./evil --hyperlink-format=default foo",
    # commands that run other programs are not on the list
    "awk '{system(\"id\")}' f",
    "xargs cat",
    "less README.md",
    "man git",
    "tar -xf a.tar",
    "env -S 'rm x'",
    "nice ls",
    "timeout 5 ls",
    # sort / tree / file / date / uniq that write
    "sort -o out in",
    "sort -ro out in",
    "sort --output=out in",
    "sort --out=out in",
    "sort --compress-program=sh in",
    "tree -o out",
    "tree -ao out",
    "tree -R",
    "file -C",
    "file --compile",
    "date -s 2020-01-01",
    "date --set=2020-01-01",
    "date --se=2020-01-01",
    "date 010100002030",
    "uniq in out",
    # sed beyond printing a range
    "sed -i s/a/b/ file",
    "sed -n 1p",
    "sed 's/a/b/' file",
    "sed -n '1p;w out' file",
    "sed -n 1w/tmp/x file",
    "sed -n 1p file other",
    # git that mutates or runs programs
    "git branch -D x",
    "git branch -d x",
    "git branch -m a b",
    "git branch -f main HEAD",
    "git branch --delete x",
    "git branch new-branch",
    "git branch -u origin/main",
    "git tag v1",
    "git tag -d v1",
    "git tag -a v1 -m msg",
    "git tag -l -d v1",
    "git remote add x url",
    "git remote remove origin",
    "git push",
    "git commit -m x",
    "git checkout .",
    "git reset --hard",
    "git stash",
    "git -c core.pager=rm log",
    "git --exec-path=/tmp log",
    "git diff --output=out",
    "git log --output out",
    "git log --outp=out",
    "git diff --ext-diff",
    "git",
    # quoting tricks
    "echo 'unbalanced",
    'ls "unterminated',
    "ec'ho' hi; rm x",
    "cat x#; rm y",
]


@pytest.fixture(scope="module")
def clean_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A freshly initialised repository: its configuration runs nothing."""
    repo = tmp_path_factory.mktemp("clean")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.mark.parametrize("command", SAFE, ids=repr)
def test_known_safe(command: list[str] | str, clean_repo: Path) -> None:
    assert is_known_safe(command, cwd=clean_repo, env={})


@pytest.mark.parametrize("command", UNSAFE, ids=repr)
def test_not_known_safe(command: list[str] | str, clean_repo: Path) -> None:
    assert not is_known_safe(command, cwd=clean_repo, env={})


def test_git_is_never_known_safe_without_a_directory_to_check() -> None:
    assert is_known_safe("ls")
    assert not is_known_safe("git status")


@pytest.mark.parametrize(
    "argv",
    [
        ["ls", ">", "out"],  # no shell: `>` and `out` are just names for ls to list
        ["echo", "$(rm x)"],
        ["cat", "a;b"],
    ],
)
def test_argv_lists_are_taken_literally(argv: list[str]) -> None:
    assert is_known_safe(argv)


def test_deeply_nested_shells_are_not_trusted() -> None:
    command = "ls"
    for _ in range(10):
        command = f"bash -c {command!r}"
    assert not is_known_safe(command)

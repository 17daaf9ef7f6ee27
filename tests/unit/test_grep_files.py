"""`grepFiles` on real temp trees, with ripgrep and with the pure-Python fallback.

Every behaviour test runs against both engines (the `engine` fixture); the parity tests run
both on the same tree and require identical output. Tests that need ripgrep skip when it is
not installed, except under CI=true, where a missing ripgrep is a failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.tools import grep_files
from cody_daemon.tools.base import ToolContext, ToolError, ToolResult
from cody_daemon.tools.grep_files import ENGINE_ENV, MAX_MATCHES, GrepFilesTool
from cody_daemon.tools.grep_regex import PatternError, translate
from cody_daemon.tools.ignore import IGNORE, NONE, WHITELIST, IgnoreRules, Override, glob_to_regex

ENGINES = ("rg", "python")


def require_rg() -> None:
    if shutil.which("rg") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ripgrep (rg) must be installed when CI=true")
        pytest.skip("ripgrep (rg) is not installed")


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    name: str = request.param
    if name == "rg":
        require_rg()
    monkeypatch.setenv(ENGINE_ENV, name)
    return name


def write(root: Path, rel: str, data: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode())
    else:
        path.write_bytes(data)


def build_tree(root: Path) -> Path:
    """A tree exercising ignore files, hidden and binary files, unicode and caps."""
    files: dict[str, str | bytes] = {
        ".gitignore": "*.log\nbuild/\n/root_only.txt\n!keep.log\n# comment\n*.{tmp,bak}\n",
        "a.py": "def hello():\n    return 'hello'\n",
        "keep.log": "hello keep\n",
        "app.log": "hello app\n",
        "root_only.txt": "hello root\n",
        "build/out.txt": "hello build\n",
        "x.tmp": "hello tmp\n",
        "src/.gitignore": "generated/\n!important.log\n/local.txt\n",
        "src/main.py": "print('hello')\nHELLO = 1\n",
        "src/important.log": "hello important\n",
        "src/root_only.txt": "hello nested\n",
        "src/generated/x.py": "hello generated\n",
        "src/local.txt": "hello local\n",
        "src/sub/local.txt": "hello sublocal\n",
        "src/deep/util.ts": "export const hello = 1;\n",
        ".hidden/h.txt": "hello hidden\n",
        ".env": "hello env\n",
        "bin.dat": b"hello\x00binary\n",
        "unicode.txt": "héllo wörld\nnaïve café\n日本語 hello\n",
        "crlf.txt": "hello\r\nworld\r\n",
        "long.txt": "hello " + "x" * 1000 + "\n",
        "ü.txt": "hello ü\n",
        "日本/ファイル.txt": "hello jp\n",
        "noeol.txt": "hello",
        "r/.ignore": "*.md\n",
        "r/.gitignore": "!x.md\n",
        "r/.rgignore": "!y.md\n",
        "r/x.md": "hello x\n",
        "r/y.md": "hello y\n",
        "repo/.git/info/exclude": "excluded.txt\n",
        "repo/excluded.txt": "hello excluded\n",
        "repo/.gitignore": "!a.log\n",
        "repo/a.log": "hello a log\n",
        "repo/sub/b.log": "hello b log\n",
    }
    for rel, data in files.items():
        write(root, rel, data)
    os.symlink("a.py", root / "link.py")
    os.symlink("src", root / "linkdir")
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return build_tree(tmp_path / "ws")


def ctx_for(cwd: Path) -> ToolContext:
    return ToolContext(
        session_id="s", call_id="c", cwd=cwd, sandbox=SandboxPolicy.create("read-only", cwd)
    )


async def grep(cwd: Path, **args: Any) -> ToolResult:
    tool = GrepFilesTool()
    return await tool.run(tool.parse(args), ctx_for(cwd))


async def grep_both(monkeypatch: pytest.MonkeyPatch, cwd: Path, **args: Any) -> str:
    """Run both engines; assert they print the same thing (or fail the same way)."""
    outputs: list[str] = []
    for name in ENGINES:
        monkeypatch.setenv(ENGINE_ENV, name)
        try:
            outputs.append((await grep(cwd, **args)).output)
        except ToolError as exc:
            outputs.append(f"ToolError: {exc.message}")
    assert outputs[0] == outputs[1], f"engines differ for {args}"
    return outputs[0]


# --- behaviour, on both engines --------------------------------------------------------


async def test_respects_ignore_files_hidden_binary_and_symlinks(engine: str, tree: Path) -> None:
    result = await grep(tree, pattern="hello")
    paths = {line.split(":", 1)[0] for line in result.output.splitlines()}
    assert paths == {
        "a.py",  # `link.py` and `linkdir/` are symlinks: never followed
        "crlf.txt",
        "keep.log",  # `*.log` ignored, but `!keep.log` re-includes it
        "long.txt",
        "noeol.txt",
        "r/y.md",  # .rgignore `!y.md` beats .ignore `*.md`, which beats .gitignore `!x.md`
        "repo/a.log",  # repo/.gitignore re-includes it
        "repo/sub/b.log",  # the outer `*.log` stops at repo/, a git repository
        "src/deep/util.ts",
        "src/important.log",  # nested negation
        "src/main.py",
        "src/root_only.txt",  # `/root_only.txt` is anchored to the top directory
        "src/sub/local.txt",  # `/local.txt` in src/.gitignore is anchored to src/
        "unicode.txt",
        "ü.txt",
        "日本/ファイル.txt",
    }
    assert result.raw_output is not None
    assert result.raw_output["engine"] == ("ripgrep" if engine == "rg" else "python")
    assert result.raw_output["truncated"] is False


async def test_output_format_and_order(engine: str, tree: Path) -> None:
    result = await grep(tree, pattern="hello", path="src")
    assert result.output == (
        "deep/util.ts:1:export const hello = 1;\n"
        "important.log:1:hello important\n"
        "main.py:1:print('hello')\n"
        "root_only.txt:1:hello nested\n"
        "sub/local.txt:1:hello sublocal"
    )


async def test_sorted_by_path_components_then_line(engine: str, tmp_path: Path) -> None:
    for rel in ("a-b/x.txt", "a.txt", "a/b.txt", "B.txt"):
        write(tmp_path, rel, "one hit\nnothing\nhit two\n")
    result = await grep(tmp_path, pattern="hit")
    assert [line.rsplit(":", 1)[0] for line in result.output.splitlines()] == [
        "B.txt:1",
        "B.txt:3",
        "a/b.txt:1",
        "a/b.txt:3",
        "a-b/x.txt:1",
        "a-b/x.txt:3",
        "a.txt:1",
        "a.txt:3",
    ]


async def test_unicode_crlf_and_last_line(engine: str, tree: Path) -> None:
    result = await grep(tree, pattern="café|日本語|world$|^hello$")
    assert result.output == (  # `$` does not match before a `\r`, as in ripgrep
        "noeol.txt:1:hello\nunicode.txt:2:naïve café\nunicode.txt:3:日本語 hello"
    )
    crlf = await grep(tree, pattern="world", path="crlf.txt")
    assert crlf.output == "crlf.txt:2:world"  # the line's `\r` is not shown


async def test_case_insensitive_flag(engine: str, tree: Path) -> None:
    result = await grep(tree, pattern="(?i)^HELLO =", path="src")
    assert result.output == "main.py:2:HELLO = 1"
    assert (await grep(tree, pattern="^hello =", path="src")).output == "No matches."


async def test_include_globs(engine: str, tree: Path) -> None:
    async def files(include: str) -> list[str]:
        output = (await grep(tree, pattern="hello", include=include)).output
        return sorted({line.split(":", 1)[0] for line in output.splitlines()})

    assert await files("*.py") == ["a.py", "src/main.py"]  # src/generated/ stays ignored
    assert await files("src/**/*.ts") == ["src/deep/util.ts"]
    assert await files("*.{ts,md}") == ["r/x.md", "r/y.md", "src/deep/util.ts"]
    # A matching include overrides ignore rules and hidden-ness, as ripgrep's --glob does.
    assert await files("*.log") == [
        "app.log",
        "keep.log",
        "repo/a.log",
        "repo/sub/b.log",
        "src/important.log",
    ]
    assert await files(".env") == [".env"]


async def test_caps_matches_and_line_length(engine: str, tmp_path: Path) -> None:
    write(tmp_path, "many.txt", "".join(f"match {i}\n" for i in range(MAX_MATCHES + 50)))
    write(tmp_path, "long.txt", "match " + "y" * 2000 + "\n")
    result = await grep(tmp_path, pattern="match")
    lines = result.output.splitlines()
    assert lines[0].startswith("long.txt:1:match yyy")
    assert lines[0].endswith("... [line cut: 1506 more characters]")
    assert lines[MAX_MATCHES - 1] == f"many.txt:{MAX_MATCHES - 1}:match {MAX_MATCHES - 2}"
    assert lines[MAX_MATCHES:] == [
        "",
        f"[Showing the first {MAX_MATCHES} matching lines; there are more. Narrow the "
        "pattern, path or include to see the rest.]",
    ]
    assert result.raw_output is not None
    assert result.raw_output["truncated"] is True
    assert result.raw_output["matches"] == MAX_MATCHES


async def test_explicit_file_ignores_rules_but_not_binary_or_size(
    engine: str, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await grep(tree, pattern="hello", path="app.log")).output == "app.log:1:hello app"
    binary = await grep(tree, pattern="hello", path="bin.dat")
    assert binary.output == "No matches.\n(bin.dat is a binary file; not searched.)"
    monkeypatch.setattr(grep_files, "MAX_FILE_BYTES", 16)
    large = await grep(tree, pattern="hello", path="long.txt")
    assert large.output == "No matches.\n(long.txt is larger than 16 bytes; not searched.)"
    walked = await grep(tree, pattern="hello", path="src")  # larger files are skipped
    assert walked.output == (
        "important.log:1:hello important\n"  # exactly 16 bytes: kept
        "root_only.txt:1:hello nested\n"
        "sub/local.txt:1:hello sublocal"
    )


async def test_errors(engine: str, tree: Path) -> None:
    with pytest.raises(ToolError, match="look-around"):
        await grep(tree, pattern="foo(?=bar)")
    with pytest.raises(ToolError, match="unclosed '\\('"):
        await grep(tree, pattern="(foo")
    with pytest.raises(ToolError, match="path not found: nope"):
        await grep(tree, pattern="x", path="nope")
    with pytest.raises(ToolError, match="invalid include glob"):
        await grep(tree, pattern="x", include="*.{py")
    assert (await grep(tree, pattern="zzz-no-such-text")).output == "No matches."


async def test_fallback_refuses_what_it_cannot_honour(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENGINE_ENV, "python")
    with pytest.raises(ToolError, match=r"Unicode class \\p\{Greek\} needs ripgrep"):
        await grep(tree, pattern=r"\p{Greek}")
    with pytest.raises(ToolError, match="in the middle of a pattern"):
        await grep(tree, pattern="a(?i)b")
    with pytest.raises(ToolError, match=r"nested repetition like \(a\+\)\*"):
        await grep(tree, pattern=r"(\w+\.)+com")
    bounded = await grep(tree, pattern=r"(\w{1,5} ){2}")  # bounded nesting is fine
    assert bounded.output.splitlines() == [
        "repo/a.log:1:hello a log",
        "repo/sub/b.log:1:hello b log",
        "src/deep/util.ts:1:export const hello = 1;",
    ]


async def test_fallback_does_not_backtrack_across_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Searched as one string, `[^a]*[^a]*b` would backtrack cubically over the whole file.
    monkeypatch.setenv(ENGINE_ENV, "python")
    write(tmp_path, "flat.txt", "xxxxxxxx\n" * 3000 + "xxb\n")
    result = await grep(tmp_path, pattern="[^a]*[^a]*b")
    assert result.output == "flat.txt:3001:xxb"


async def test_ripgrep_honours_what_the_fallback_cannot(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_rg()
    monkeypatch.setenv(ENGINE_ENV, "rg")
    result = await grep(tree, pattern=r"\p{Han}+")
    assert result.output == "unicode.txt:3:日本語 hello"


def test_title() -> None:
    tool = GrepFilesTool()
    assert tool.title(tool.parse({"pattern": "fo+"})) == "Grep fo+ in ."
    assert tool.title(tool.parse({"pattern": "x", "path": "src"})) == "Grep x in src"
    assert tool.kind == "search"
    assert tool.requires_approval is False


# --- parity: identical output from both engines -----------------------------------------

PARITY_PATTERNS = [
    "hello",
    "^h",
    "l+o$",
    "(?i)HELLO",
    "[[:digit:]]+",
    r"\bhello\b",
    "é|ü",
    ".",
    r"\w+\s\w+",
    "x{3,}",
    "^$",
    r"\Ahello\z",
    r"\x{65e5}",
    "(?i:É)",
    r"\/|\%",
    "[^a-z ]",
]
PARITY_INCLUDES = [None, "*.py", "src/**", "!*.txt", "*", "*.{log,md}", "**/d1/*", "docs/"]


def build_generated_tree(root: Path) -> Path:
    """Many small files in nested directories, with ignore files at several levels."""
    words = ["hello", "world", "Hello World", "x", "", "café hello", "12 apples", "xxxx"]
    write(root, ".gitignore", "*.skip\nd3/\n")
    write(root, "gen/.gitignore", "!keep.skip\n/d1/f6.txt\n")
    write(root, "gen/d2/.ignore", "f1*.txt\n")
    for i in range(40):
        body = "".join(words[(i * 7 + j * 3) % len(words)] + "\n" for j in range(12))
        write(root, f"gen/d{i % 5}/f{i}.txt", body)
        write(root, f"gen/d{i % 5}/f{i}.skip", body)
    write(root, "gen/keep.skip", "hello kept\n")
    write(root, "src/mod.py", "import os\nhello = 'x'\n")
    write(root, "docs/readme.md", "Hello docs\n\n")
    return root


@pytest.mark.parametrize("builder", [build_tree, build_generated_tree])
async def test_engines_agree(builder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_rg()
    root = builder(tmp_path / "ws")
    cases: list[tuple[str, str | None]] = [(pattern, None) for pattern in PARITY_PATTERNS]
    cases += [(pattern, include) for include in PARITY_INCLUDES for pattern in ("hello", "^$")]
    for pattern, include in cases:
        args: dict[str, Any] = {"pattern": pattern}
        if include is not None:
            args["include"] = include
        await grep_both(monkeypatch, root, **args)
    for path in ["src", "src/main.py", "bin.dat", "repo", "repo/sub", ".hidden", "gen/d1"]:
        if (root / path).exists():
            await grep_both(monkeypatch, root, pattern="hello", path=path)


async def test_engines_agree_when_the_cap_cuts_across_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_rg()
    for i in range(30):
        write(tmp_path, f"d{i % 3}/f{i:02}.txt", "".join(f"hit {j}\n" for j in range(9)))
    output = await grep_both(monkeypatch, tmp_path, pattern="hit [0-8]")
    lines = output.splitlines()
    assert len(lines) == MAX_MATCHES + 2
    assert lines[0] == "d0/f00.txt:1:hit 0"
    # d0/ and d1/ hold 10 files each (180 lines), then d2/f02 and d2/f05, then 2 of d2/f08
    assert lines[MAX_MATCHES - 1] == "d2/f08.txt:2:hit 1"


async def test_engines_agree_on_errors(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_rg()
    for pattern in ["a**", "(?P=x)", r"\1", "x{,3}", r"\Z", "(?x) a", "[z-a]", r"a\n"]:
        output = await grep_both(monkeypatch, tree, pattern=pattern)
        assert output.startswith(f"ToolError: invalid pattern {pattern!r}")


# --- the pattern subset and the ignore rules, directly ----------------------------------


@pytest.mark.parametrize(
    ("pattern", "rust", "python"),
    [
        (r"\/x", "/x", "/x"),
        (r"\z", r"\z", "$"),
        (r"[[:alpha:]_]", r"[[:alpha:]_]", "[A-Za-z_]"),
        ("(?i)a(?-i:B)", "(?i)a(?-i:B)", "(?i)a(?-i:B)"),
        ("(?U)a+?", "(?U)a+?", "a+?"),
        (r"\u{e9}\t", "é\\x{9}", "é\\U00000009"),
        ("[a-]", "[a\\-]", "[a\\-]"),
    ],
)
def test_translate(pattern: str, rust: str, python: str) -> None:
    translated = translate(pattern)
    assert (translated.rust, translated.python) == (rust, python)


@pytest.mark.parametrize(
    ("pattern", "single_line"),
    [("foo.*bar", True), (r"\w+\S", True), (r"a\sb", False), ("[^a]", False), (r"\W", False)],
)
def test_translate_knows_when_a_pattern_can_cross_lines(pattern: str, single_line: bool) -> None:
    assert translate(pattern).single_line is single_line


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(?<=a)b", "look-around"),
        ("(a)\\1", "backreferences"),
        ("a{2}{3}", "stacked quantifiers"),
        ("^*", "nothing to repeat"),
        ("a{x}", r"write \\\{"),
        ("\\<word", r"use \\b"),
        ("(?<n>a)", r"\(\?P<name>"),
        ("[[:nope:]]", "unknown POSIX class"),
        ("a\nb", "newline"),
    ],
)
def test_translate_refuses(pattern: str, message: str) -> None:
    with pytest.raises(PatternError, match=message):
        translate(pattern)


def test_ignore_rules_follow_gitignore_semantics() -> None:
    rules = IgnoreRules("*.rs\n!src/main.rs\nfoo/\n/anchored\na/**/b\nabc/**\n\\#hash\n")
    assert rules.match("lib.rs", False) == IGNORE
    assert rules.match("deep/er/lib.rs", False) == IGNORE
    assert rules.match("src/main.rs", False) == WHITELIST  # the last matching line wins
    assert rules.match("x/foo", True) == IGNORE
    assert rules.match("x/foo", False) == NONE  # `foo/` matches directories only
    assert rules.match("anchored", False) == IGNORE
    assert rules.match("sub/anchored", False) == NONE
    assert rules.match("a/b", False) == IGNORE
    assert rules.match("a/x/y/b", False) == IGNORE
    assert rules.match("abc", True) == NONE  # `abc/**` matches inside abc, not abc itself
    assert rules.match("abc/x/y", False) == IGNORE
    assert rules.match("#hash", False) == IGNORE
    assert glob_to_regex("a**b") == "a[^/]*[^/]*b"  # `**` inside a name is just `*`


def test_override_include_semantics() -> None:
    include = Override("*.py")
    assert include.match("src/x.py", False) == WHITELIST
    assert include.match("src/x.ts", False) == IGNORE  # non-matching files are excluded
    assert include.match("src", True) == NONE  # ... but directories are still walked
    exclude = Override("!*.py")
    assert exclude.match("x.py", False) == IGNORE
    assert exclude.match("x.ts", False) == NONE

"""Language servers without processes: the delta of diagnostics, the text the model reads,
which servers a project gets, what an untrusted project may configure, and the converter
fix that lets pygls read ruff's `initialize` answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cody_daemon.config.loader import load_effective_config
from cody_daemon.config.model import BUILTIN_LSP_SERVERS, LspConfig
from cody_daemon.config.paths import CodyPaths
from cody_daemon.core.code_intel import Diagnostic, FileDiagnostics
from cody_daemon.engine.diagnostics import diagnostics_text
from cody_daemon.errors import InvalidParams
from cody_daemon.lsp.delta import changed_lines, new_diagnostics
from cody_daemon.lsp.specs import BUILTINS, find_root, server_specs

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lsp"


def diag(line: int, code: str, message: str, severity: str = "error") -> Diagnostic:
    return Diagnostic(
        path="/w/a.py",
        line=line,
        column=1,
        end_line=line,
        end_column=2,
        severity=severity,  # type: ignore[arg-type]
        message=message,
        code=code,
        source="Ruff",
    )


def test_an_old_warning_moved_down_by_the_edit_is_not_new() -> None:
    before_text = "import os\nx = 1\n"
    after_text = '"""Doc."""\n\nimport os\nx = y\n'
    before = [diag(1, "F401", "`os` imported but unused", "warning")]
    after = [
        diag(3, "F401", "`os` imported but unused", "warning"),
        diag(4, "F821", "Undefined name `y`"),
    ]
    assert [d.code for d in new_diagnostics(before, after, before_text, after_text)] == ["F821"]


def test_a_second_identical_problem_is_new_and_hints_never_count() -> None:
    before_text = "print(a)\n"
    after_text = "print(a)\nprint(a)\n"
    before = [diag(1, "F821", "Undefined name `a`")]
    after = [
        diag(1, "F821", "Undefined name `a`"),
        diag(2, "F821", "Undefined name `a`"),
        diag(2, "X1", "just a hint", "hint"),
    ]
    found = new_diagnostics(before, after, before_text, after_text)
    assert [(d.line, d.code) for d in found] == [(2, "F821")]


def test_without_a_baseline_only_changed_lines_are_reported() -> None:
    before_text = "import os\n\ndef f():\n    return 1\n"
    after_text = "import os\n\ndef f():\n    return y\n"
    after = [
        diag(1, "F401", "`os` imported but unused", "warning"),
        diag(4, "F821", "Undefined name `y`"),
    ]
    assert changed_lines(before_text, after_text) == {4}
    assert [d.code for d in new_diagnostics(None, after, before_text, after_text)] == ["F821"]


def test_a_new_file_has_only_new_problems_errors_first() -> None:
    after = [diag(2, "W1", "warn", "warning"), diag(5, "E1", "err")]
    found = new_diagnostics([], after, None, "a\nb\nc\nd\ne\n")
    assert [d.code for d in found] == ["E1", "W1"]


def test_the_model_reads_path_line_col_severity_code_message_capped() -> None:
    report = FileDiagnostics(
        path="/w/a.py",
        new=tuple(diag(n, "F821", f"Undefined name `v{n}`") for n in range(1, 5)),
        servers=("ruff",),
        late=("basedpyright (no answer in time)",),
    )
    text = diagnostics_text([report], Path("/w"), limit=2)
    assert text.splitlines() == [
        "Diagnostics (ruff), new since this change: 4 errors",
        "a.py:1:1 error F821 Undefined name `v1`",
        "a.py:2:1 error F821 Undefined name `v2`",
        "... and 2 more",
        "Not checked in time: basedpyright (no answer in time)",
    ]
    clean = FileDiagnostics(path="/w/a.py", new=(), servers=("ruff",))
    assert diagnostics_text([clean], Path("/w"), limit=2) == "Diagnostics (ruff): no new problems."


def test_builtin_servers_are_offered_only_when_their_program_is_found(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("ruff", "pyright-langserver"):
        (bin_dir / program).write_text("#!/bin/sh\n")
        (bin_dir / program).chmod(0o755)
    env = {"PATH": str(bin_dir)}
    found = {s.name: s for s in server_specs(LspConfig(), env, tmp_path) if s.found}
    assert set(found) <= {"ruff", "pyright", "basedpyright"}  # (the venv may have more)
    assert found["ruff"].argv() == [str(bin_dir / "ruff"), "server"]
    assert tuple(BUILTINS) == BUILTIN_LSP_SERVERS
    off = LspConfig.model_validate({"enabled": False})
    assert server_specs(off, env, tmp_path) == []
    no_ruff = LspConfig.model_validate({"ruff": {"enabled": False}})
    assert "ruff" not in {s.name for s in server_specs(no_ruff, env, tmp_path)}


def test_the_root_is_the_nearest_marker_inside_the_session(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "src").mkdir(parents=True)
    (tmp_path / "pkg" / "pyproject.toml").write_text("")
    (tmp_path.parent / "pyproject.toml").touch()  # above the session: never the root
    file = tmp_path / "pkg" / "src" / "m.py"
    assert find_root(file, tmp_path, ("pyproject.toml",)) == tmp_path / "pkg"
    assert find_root(tmp_path / "x.py", tmp_path, ("pyproject.toml",)) == tmp_path


def _paths(tmp_path: Path) -> CodyPaths:
    home = tmp_path / "cody-home"
    home.mkdir()
    return CodyPaths.under(home, home)


def test_an_untrusted_project_can_switch_servers_off_but_not_add_or_change_one(
    tmp_path: Path,
) -> None:
    paths = _paths(tmp_path)
    project = tmp_path / "project"
    (project / ".cody").mkdir(parents=True)
    (project / ".cody" / "config.toml").write_text(
        "[lsp.evil]\ncommand = ['sh', '-c', 'id']\nextensions = ['.py']\n"
        "[lsp.ruff]\ncommand = ['/tmp/not-ruff']\nenabled = false\n"
        "[lsp.basedpyright]\nsettings = { python = { pythonPath = './evil' } }\n"
    )
    loaded = load_effective_config(cwd=project, paths=paths)
    servers = loaded.config.lsp.servers()
    assert "evil" not in servers
    assert servers["ruff"].enabled is False and servers["ruff"].command is None
    assert servers["basedpyright"].settings is None
    [warning] = loaded.warnings
    assert "lsp.evil" in warning and "lsp.ruff.command" in warning
    assert "lsp.basedpyright.settings" in warning

    paths.config_file.write_text(f'trusted_projects = ["{project}"]\n')
    trusted = load_effective_config(cwd=project, paths=paths).config.lsp.servers()
    assert trusted["evil"].command == ["sh", "-c", "id"]


def test_a_server_that_is_not_built_in_needs_a_command_and_extensions(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.config_file.write_text("[lsp.mine]\nextensions = ['.x']\n")
    with pytest.raises(InvalidParams, match="lsp.mine.command"):
        load_effective_config(cwd=tmp_path, paths=paths)
    paths.config_file.write_text("[lsp.mine]\ncommand = ['x']\nextensions = ['x']\n")
    with pytest.raises(InvalidParams, match="is not a file ending"):
        load_effective_config(cwd=tmp_path, paths=paths)


def test_pygls_reads_ruffs_initialize_answer_only_with_the_notebook_filter_hook() -> None:
    from cody_daemon.lsp.wire import lsp_converter
    from lsprotocol import types as lsp
    from pygls.protocol import default_converter

    answer = json.loads((FIXTURES / "ruff_initialize.json").read_text())["result"]
    with pytest.raises(Exception, match="structuring InitializeResult"):
        default_converter().structure(answer, lsp.InitializeResult)
    result = lsp_converter().structure(answer, lsp.InitializeResult)
    assert result.capabilities.diagnostic_provider is not None

"""`[skills]` (Codex's table): the config model, who may set it, and the selector rules
(`[[skills.config]]` by name or by path, the last matching entry wins) applied at discovery."""

from __future__ import annotations

from pathlib import Path

import pytest
from cody_daemon.config.loader import load_effective_config
from cody_daemon.config.model import SkillSelector
from cody_daemon.config.paths import CodyPaths, resolve_paths
from cody_daemon.errors import InvalidParams
from cody_daemon.extensions.discovery import Extensions, Locations, discover


@pytest.fixture
def paths(tmp_path: Path) -> CodyPaths:
    return resolve_paths({"CODY_HOME": str(tmp_path / "cody")})


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def skill(folder: Path, name: str) -> Path:
    return write(folder / name / "SKILL.md", f"---\nname: {name}\ndescription: the {name}\n---\nx")


def found(tmp_path: Path, cwd: Path, selectors: list[SkillSelector]) -> Extensions:
    where = Locations(
        cody_dir=tmp_path / "cody",
        claude_dir=tmp_path / "claude",
        codex_home=tmp_path / "codex",
        home=tmp_path / "home",
        config_file=tmp_path / "cody" / "config.toml",
    )
    return discover(cwd, where, trusted=False, skill_selectors=selectors)


def rule(**fields: object) -> SkillSelector:
    return SkillSelector.model_validate(fields)


# --- the config model ----------------------------------------------------------------------


def test_a_codex_skills_table_is_read_not_ignored(paths: CodyPaths, tmp_path: Path) -> None:
    write(
        paths.config_file,
        "[skills]\ninclude_instructions = false\n[skills.bundled]\nenabled = false\n"
        '[[skills.config]]\nname = "pdf-tools"\nenabled = false\n'
        '[[skills.config]]\npath = "/opt/skills/review/SKILL.md"\nenabled = true\n',
    )
    loaded = load_effective_config(cwd=repo(tmp_path), paths=paths)
    skills = loaded.config.skills
    assert skills.include_instructions is False
    assert [(s.name, s.path, s.enabled) for s in skills.config] == [
        ("pdf-tools", None, False),
        (None, "/opt/skills/review/SKILL.md", True),
    ]
    assert not any("skills" in warning for warning in loaded.warnings)


def test_skills_defaults_list_every_skill_to_the_model(paths: CodyPaths, tmp_path: Path) -> None:
    skills = load_effective_config(cwd=repo(tmp_path), paths=paths).config.skills
    assert skills.include_instructions is True and skills.config == []


@pytest.mark.parametrize(
    ("toml", "key", "says"),
    [
        ("[skills]\ninclude_instruction = false\n", "skills.include_instruction", "unknown key"),
        ('[skills]\ninclude_instructions = "no"\n', "skills.include_instructions", "bool"),
        ('[[skills.config]]\nname = "a"\n', "skills.config.0.enabled", "required"),
        ("[[skills.config]]\nenabled = false\n", "skills.config.0", "exactly one of `name`"),
        (
            '[[skills.config]]\nname = "a"\npath = "/x"\nenabled = false\n',
            "skills.config.0",
            "exactly one of `name`",
        ),
        (
            '[[skills.config]]\npath = "skills/a"\nenabled = false\n',
            "skills.config.0.path",
            "not an absolute path",
        ),
        (
            '[[skills.config]]\nname = "a"\nenabled = false\nscope = "user"\n',
            "skills.config.0.scope",
            "unknown key",
        ),
    ],
)
def test_a_bad_skills_table_is_an_error_naming_the_key(
    paths: CodyPaths, tmp_path: Path, toml: str, key: str, says: str
) -> None:
    write(paths.config_file, toml)
    with pytest.raises(InvalidParams) as info:
        load_effective_config(cwd=repo(tmp_path), paths=paths)
    assert [issue.key for issue in info.value.issues] == [key]
    assert says in info.value.message
    assert str(paths.config_file) in info.value.message


def test_an_untrusted_project_cannot_switch_skills(paths: CodyPaths, tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(paths.config_file, '[[skills.config]]\nname = "mine"\nenabled = false\n')
    project_file = write(
        root / ".cody" / "config.toml",
        '[skills]\ninclude_instructions = false\n[[skills.config]]\nname = "mine"\n'
        "enabled = true\n",
    )
    loaded = load_effective_config(cwd=root, paths=paths)
    assert loaded.config.skills.include_instructions is True
    assert [(s.name, s.enabled) for s in loaded.config.skills.config] == [("mine", False)]
    assert any(
        "ignored skills from" in w and str(project_file) in w and "not trusted" in w
        for w in loaded.warnings
    )


def test_a_trusted_project_can_switch_skills(paths: CodyPaths, tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(paths.config_file, f'trusted_projects = ["{root}"]\n')
    write(root / ".cody" / "config.toml", "[skills]\ninclude_instructions = false\n")
    assert load_effective_config(cwd=root, paths=paths).config.skills.include_instructions is False


# --- the selector rules ----------------------------------------------------------------------


def test_a_skill_disabled_by_name_is_not_listed_nor_a_command(tmp_path: Path) -> None:
    root = repo(tmp_path)
    skill(tmp_path / "cody" / "skills", "pdf-tools")
    skill(root / ".agents" / "skills", "review")
    got = found(tmp_path, root, [rule(name="pdf-tools", enabled=False)])
    assert [s.name for s in got.skills] == ["review"]
    assert set(got.commands) == {"review"}
    assert got.skill("pdf-tools") is None  # so `$pdf-tools` attaches nothing
    assert [s["name"] for s in got.wire()["skills"]] == ["review"]
    assert [s["name"] for s in got.wire()["disabledSkills"]] == ["pdf-tools"]


@pytest.mark.parametrize("target", ["file", "folder"])
def test_a_skill_disabled_by_path_to_its_file_or_folder(tmp_path: Path, target: str) -> None:
    root = repo(tmp_path)
    path = skill(root / ".agents" / "skills", "review")
    skill(root / ".claude" / "skills", "lint")
    selector = str(path if target == "file" else path.parent)
    got = found(tmp_path, root, [rule(path=selector, enabled=False)])
    assert [s.name for s in got.skills] == ["lint"]


def test_a_path_selector_matches_through_a_symlink(tmp_path: Path) -> None:
    root = repo(tmp_path)
    skill(root / ".agents" / "skills", "review")
    (tmp_path / "link").symlink_to(root)
    got = found(
        tmp_path,
        root,
        [rule(path=str(tmp_path / "link" / ".agents" / "skills" / "review"), enabled=False)],
    )
    assert got.skills == ()


def test_the_last_matching_selector_wins(tmp_path: Path) -> None:
    root = repo(tmp_path)
    path = skill(root / ".agents" / "skills", "review")
    skill(root / ".agents" / "skills", "lint")
    off_then_on = [rule(name="review", enabled=False), rule(path=str(path), enabled=True)]
    on_then_off = [rule(path=str(path), enabled=True), rule(name="review", enabled=False)]
    assert {s.name for s in found(tmp_path, root, off_then_on).skills} == {"review", "lint"}
    assert {s.name for s in found(tmp_path, root, on_then_off).skills} == {"lint"}


def test_a_disabled_users_skill_is_not_replaced_by_the_projects(tmp_path: Path) -> None:
    root = repo(tmp_path)
    mine = skill(tmp_path / "cody" / "skills", "review")
    skill(root / ".agents" / "skills", "review")
    got = found(tmp_path, root, [rule(path=str(mine), enabled=False)])
    assert got.skills == ()
    assert "review" not in got.commands

"""The skills item: which skills the model may use, within a budget (docs/extensions.md
"Skills").

The item lists each skill the model may invoke as `- name: description (file: path)` with
how to use one (`prompts/skills.md`); the bodies are not in it: the model reads a `SKILL.md`
with readFile when it decides to use the skill (progressive disclosure).

Invariants:
- the whole item (text and instructions) costs at most `BUDGET_PERCENT` % of the context
  window, counted as the compaction estimate counts (`CHARS_PER_TOKEN` characters a token);
  skills that do not fit are named as omitted (as many names as fit, then how many more),
  in precedence order (the user's first);
- the text is a pure function of the skills and the window; `refresh` appends a new item
  (engine/context_items.py) only when it differs from the last one sent, at the start of a
  turn, so a session that changes nothing never re-sends it and earlier requests are never
  rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ..extensions.skills import Skill
from .compaction import CHARS_PER_TOKEN
from .context_items import latest, record, skills_entry
from .prompt_files import prompt, render

if TYPE_CHECKING:
    from .session import Session

__all__ = ["BUDGET_PERCENT", "refresh_skills", "skills_budget", "skills_text"]

BUDGET_PERCENT: Final = 2
_MORE: Final = ", and {n} more"


def skills_budget(context_window: int) -> int:
    """The item's budget in characters."""
    return max(1, context_window * BUDGET_PERCENT // 100) * CHARS_PER_TOKEN


def skills_text(skills: Sequence[Skill], context_window: int) -> str:
    """The item's text ("" when no skill is for the model)."""
    listed = [skill for skill in skills if skill.model_invocable]
    if not listed:
        return ""
    budget = skills_budget(context_window)
    lines = [f"- {s.name}: {s.description} (file: {s.path})" for s in listed]
    whole = render("skills", skills="\n".join(lines))
    if len(whole) <= budget:
        return whole
    frame = len(render("skills", skills="\n\n"))
    note_frame = len(render("skills_omitted", count=str(len(listed)), names=""))
    costs = [len(line) + 1 for line in lines]
    names = [len(skill.name) + 2 for skill in listed]
    # Keep the first `kept` lines while the rest can still be named in full; when not even
    # every name fits, the names are cut too (`_omitted`).
    kept = len(lines)
    used = sum(costs)
    named = 0
    while kept and frame + used + note_frame + named > budget:
        kept -= 1
        used -= costs[kept]
        named += names[kept]
    body = "\n".join(lines[:kept])
    omitted = [skill.name for skill in listed[kept:]]
    note = _omitted(omitted, budget - frame - len(body))
    text = render("skills", skills=f"{body}\n\n{note}" if body else note)
    return text if len(text) <= budget else ""


def _omitted(names: list[str], room: int) -> str:
    """The note naming the omitted skills: every name when they fit in `room` characters,
    else as many as fit and how many more."""
    frame = len(render("skills_omitted", count=str(len(names)), names=""))
    shown, used = 0, frame
    for index, name in enumerate(names):
        rest = len(names) - index - 1
        add = len(name) + (2 if index else 0)
        if used + add + (len(_MORE.format(n=rest)) if rest else 0) > room:
            break
        shown, used = shown + 1, used + add
    rest = len(names) - shown
    if not shown:
        listed = f"{len(names)} skills"
    else:
        listed = ", ".join(names[:shown]) + (_MORE.format(n=rest) if rest else "")
    return render("skills_omitted", count=str(len(names)), names=listed)


def refresh_skills(session: Session, skills: Sequence[Skill], context_window: int) -> bool:
    """Record a new skills item when the list for the model changed since the last one sent
    (or none was). True when one was added."""
    text = skills_text(skills, context_window)
    last = latest(session.context_items, "skills")
    if (last.key if last is not None else "") == text:
        return False
    record(session, skills_entry(session.history, text, text or prompt("skills_none")))
    return True

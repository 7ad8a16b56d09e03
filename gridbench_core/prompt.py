"""How a task is shown to a language model: the system prompt and first user message, rendered
from the task file and an episode's budgets with a pair of templates (``string.Template``:
``$name``; the packaged pair is in ``gridbench_core/templates/``). What comes from the task file is shown
as data: the grid's ids as JSON strings, a task id that is not a plain word quoted, the
instruction capped with control characters escaped. The runner, the adapters and the release
tables' ``prompt`` column all render with this one function."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Protocol

from gridbench_core.budgets import UNLIMITED
from gridbench_core.task import Task

TEMPLATES = Path(__file__).resolve().parent / "templates"
ID_CHARS = 64  # an id longer than this is cut in the prompt (a build's ids: 8 to 25 characters)
PLAIN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # a task id shown as it is; others quoted
INSTRUCTION_CHARS = 200_000  # a 30x30 task's instruction: about 70,000


class Budgets(Protocol):
    """What the prompt says of an episode's settings (``gridbench_core.budgets.EnvSettings``)."""

    @property
    def failure_rate(self) -> float: ...  # noqa: D102

    def queries_for(self, cell_rules: int, hidden: int) -> int: ...  # noqa: D102

    def checks_for(self, hidden: int) -> int: ...  # noqa: D102


@dataclass(frozen=True)
class PromptTemplates:
    """A system and a user template; ``sha256`` identifies the pair in every result row."""

    system: str
    user: str

    @property
    def sha256(self) -> str:
        """The SHA-256 hex digest of the system and user templates together."""
        return hashlib.sha256(f"{self.system}\0{self.user}".encode()).hexdigest()


def packaged_templates() -> PromptTemplates:
    """The packaged pair (``gridbench_core/templates/system.txt`` and ``user.txt``)."""
    return PromptTemplates(
        *((TEMPLATES / name).read_text(encoding="utf-8") for name in ("system.txt", "user.txt"))
    )


def _cell(item: str | None) -> str:
    return "null" if item is None else quoted(item)


def _budget_text(task: Task, settings: Budgets) -> tuple[str, str]:
    hidden = len(task.slots)
    queries = sorted({settings.queries_for(len(slot.constraints), hidden) for slot in task.slots})
    if queries == [UNLIMITED] or not queries:
        query = "attribute queries are unlimited"
    else:
        span = f"{queries[0]} to {queries[-1]}" if len(queries) > 1 else str(queries[0])
        query = f"each hidden cell allows {span} attribute queries (it depends on the cell)"
    checks = settings.checks_for(hidden)
    check = (
        "global checks are unlimited" if checks == UNLIMITED else f"the episode allows {checks} global checks"
    )
    return query, check


def quoted(text: str, limit: int = ID_CHARS) -> str:
    """Text from the task file (an id) as the prompt shows it: a JSON string, so that it reads
    as data and never as an instruction, with control characters and direction overrides
    escaped, cut to ``limit`` characters."""
    return json.dumps(text if len(text) <= limit else text[:limit] + "...")


def plain_text(text: str, limit: int = INSTRUCTION_CHARS) -> str:
    """The task's instruction as the prompt shows it: its lines kept, any other control or
    invisible formatting character escaped, cut to ``limit`` characters."""
    if len(text) > limit:
        text = text[:limit] + f"... ({len(text) - limit} more characters cut)"
    if text.replace("\n", "").isprintable():  # every character printable or a line break
        return text
    return "".join(char if char.isprintable() or char == "\n" else ascii(char)[1:-1] for char in text)


def render_task(templates: PromptTemplates, task: Task, settings: Budgets) -> list[dict[str, str]]:
    """The first two messages of an episode of ``task`` with ``settings`` (its budgets and
    failure rate), without building the episode. What comes from the task file is data: the
    grid's ids are JSON strings, a task id other than a plain word is one too (capped at
    :data:`ID_CHARS`, control characters and direction overrides escaped), and the
    instruction is capped and shows no control character. Tasks of a build render exactly as
    the templates say."""
    d = task.domain
    query_text, check_text = _budget_text(task, settings)
    rate = settings.failure_rate
    hidden = len(task.slots)
    values = {
        "task_id": task.task_id if PLAIN_ID.match(task.task_id) else quoted(task.task_id),
        "domain": d,
        "rows": task.rows,
        "cols": task.cols,
        "hidden": hidden,
        "hidden_text": f"{hidden} hidden cell{'s' if hidden != 1 else ''}",
        "instruction": plain_text(task.instruction),
        "grid": "[" + ", ".join("[" + ", ".join(_cell(c) for c in row) + "]" for row in task.grid) + "]",
        "hidden_cells": ", ".join(f"({s.row}, {s.col})" for s in task.slots),
        "query_tool": f"query_{d}_candidate_from_attribute",
        "item_info_tool": f"get_{d}_item_info",
        "item_attributes_tool": f"get_{d}_item_attributes",
        "slot_check_tool": f"check_{d}_slot_constraints",
        "global_check_tool": f"check_{d}_global_constraints",
        "query_budget_text": query_text,
        "check_budget_text": check_text,
        "failure_text": (
            f"- A tool may fail at random (about {rate:.0%} of calls): it then changes "
            "nothing and says so; simply call it again."
            if rate
            else ""
        ),
    }
    system = Template(templates.system).safe_substitute(values).replace("\n\n\n", "\n\n")
    user = Template(templates.user).safe_substitute(values)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]

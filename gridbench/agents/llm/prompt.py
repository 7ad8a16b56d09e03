"""The system prompt and first user message of an episode, rendered from the task file and the
episode's settings with the templates in ``templates/`` (``string.Template``: ``$name``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from env import UNLIMITED, EnvSettings, Episode
from gridbench.errors import UserError
from solvers.task import Task

TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE_BYTES = 1024 * 1024
ID_CHARS = 64  # an id longer than this is cut in the prompt (a build's ids: 8 to 25 characters)
PLAIN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")  # a task id shown as it is; others quoted
INSTRUCTION_CHARS = 200_000  # a 30x30 task's instruction: about 70,000


def _cell(item: str | None) -> str:
    return "null" if item is None else quoted(item)


@dataclass(frozen=True)
class PromptTemplates:
    """A system and a user template; ``sha256`` identifies the pair in every result row."""

    system: str
    user: str

    @property
    def sha256(self) -> str:
        """The SHA-256 hex digest of the system and user templates together."""
        return hashlib.sha256(f"{self.system}\0{self.user}".encode()).hexdigest()


def load_templates(folder: str | Path | None = None) -> PromptTemplates:
    """The templates of ``folder`` (default: the packaged ones); a missing file is an error
    that names it."""
    from pipeline.storage.safe import read_user_file

    root = Path(folder) if folder else TEMPLATES
    texts = []
    for name in ("system.txt", "user.txt"):
        path = root / name
        if not os.path.lexists(path):
            raise FileNotFoundError(
                f"prompt template {path} is missing; agent.prompt_dir must hold system.txt and user.txt"
            )
        try:  # a regular file (no FIFO, device or link), at most TEMPLATE_BYTES
            texts.append(read_user_file(path, TEMPLATE_BYTES).decode("utf-8"))
        except UnicodeDecodeError:
            raise UserError(f"prompt template {path} is not UTF-8 text") from None
    return PromptTemplates(*texts)


def _budget_text(task: Task, settings: EnvSettings) -> tuple[str, str]:
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
    if all(char.isprintable() or char == "\n" for char in text):
        return text
    return "".join(char if char.isprintable() or char == "\n" else ascii(char)[1:-1] for char in text)


def render(templates: PromptTemplates, episode: Episode) -> list[dict[str, str]]:
    """The first two messages of an episode."""
    return render_task(templates, episode.task, episode.settings)


def render_task(templates: PromptTemplates, task: Task, settings: EnvSettings) -> list[dict[str, str]]:
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

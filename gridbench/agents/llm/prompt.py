"""The prompt of an LLM episode: the templates (the packaged pair, or a folder of your own,
``agent.prompt_dir``) rendered by :func:`gridbench_core.prompt.render_task` from the episode's task and
settings."""

from __future__ import annotations

import os
from pathlib import Path

from gridbench.env import Episode
from gridbench_core.errors import UserError
from gridbench_core.prompt import (
    TEMPLATES,
    PromptTemplates,
    packaged_templates,
    plain_text,
    quoted,
    render_task,
)

TEMPLATE_BYTES = 1024 * 1024


def load_templates(folder: str | Path | None = None) -> PromptTemplates:
    """The templates of ``folder`` (default: the packaged ones); a missing file is an error
    that names it."""
    from pipeline.storage.safe import read_user_file

    if not folder:
        return packaged_templates()
    root = Path(folder)
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


def render(templates: PromptTemplates, episode: Episode) -> list[dict[str, str]]:
    """The first two messages of an episode."""
    return render_task(templates, episode.task, episode.settings)


__all__ = ["TEMPLATES", "PromptTemplates", "load_templates", "plain_text", "quoted", "render", "render_task"]

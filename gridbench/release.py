"""A release on disk, as the public face opens it: ``gridbench.load_release``. The index and
the files are :mod:`pipeline.storage.read`'s; a record of the public face can also open a tool
environment on its task (``record.episode()``)."""

from __future__ import annotations

from pathlib import Path

from gridbench.env import Episode
from gridbench_core.budgets import EnvSettings
from gridbench_core.errors import UserError
from gridbench_core.task_io import task_from_dict
from pipeline.storage import read


class ReleaseRecord(read.ReleaseRecord):
    """One task of a release: ``task`` and ``answer`` are the dicts of its two files."""

    def episode(self, settings: EnvSettings | None = None, seed: int = 0) -> Episode:
        """A fresh tool environment on this task."""
        if settings is not None and not isinstance(settings, EnvSettings):
            raise UserError(f"settings: pass a gridbench.EnvSettings, got {type(settings).__name__}")
        return Episode(task_from_dict(self.task), settings or EnvSettings(), seed=seed)


class Release(read.Release):
    """A release on disk: ``len()``, iteration, indexing and filtering over its tasks."""

    record_class = ReleaseRecord


def load_release(path: str | Path) -> Release:
    """Open the release at ``path`` (its manifest is checked; files are read lazily)."""
    if not isinstance(path, str | Path):
        raise UserError(f"load_release: pass the release folder's path, got {type(path).__name__}")
    return Release(path)


__all__ = ["Release", "ReleaseRecord", "load_release"]

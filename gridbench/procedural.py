"""Certified tasks generated on the fly (reasoning-gym style): ``gridbench.create_dataset``.

The items, their keys and their generation are :mod:`pipeline.generation.dataset`'s; an item
of the public face can also open a tool environment on its task (``item.episode()``) and
score a submitted grid (``item.score(grid)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from gridbench.env import Episode
from gridbench.scoring import score
from gridbench_core.budgets import EnvSettings
from gridbench_core.task_io import task_from_dict
from pipeline.generation import dataset
from pipeline.generation.dataset import Level, curriculum


class GeneratedTask(dataset.GeneratedTask):
    """One certified task: ``task`` and ``answer`` are the dicts a release's two files would
    hold (the answer carries the certificate); ``level`` is its curriculum level."""

    def episode(self, settings: EnvSettings | None = None, seed: int = 0) -> Episode:
        """A fresh tool environment on this task."""
        return Episode(task_from_dict(self.task), settings or EnvSettings(), seed=seed)

    def score(self, grid: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """``gridbench.score`` of a submitted grid against this task's truth."""
        return score(self.task, grid, self.answer)


class TaskDataset(dataset.TaskDataset):
    """``len()``, indexing, slicing and iteration over certified tasks generated on demand;
    ``generate(workers=n)`` makes them in ``n`` processes, in order."""

    item_class = GeneratedTask


def create_dataset(*args: Any, **kwargs: Any) -> TaskDataset:
    """``size`` certified tasks, generated lazily and deterministically: the arguments of
    :func:`pipeline.generation.dataset.create_dataset` (domains, size, seed, grid,
    hidden_slots, decoy_budgets, candidates_per_slot, levels, max_resistant_share, settings,
    salt, on_failure, room_over_budget), every one checked before anything is generated."""
    kwargs["dataset_class"] = TaskDataset
    return cast(TaskDataset, dataset.create_dataset(*args, **kwargs))


__all__ = ["GeneratedTask", "Level", "TaskDataset", "create_dataset", "curriculum"]

"""Where a served environment takes its next task, and where an episode's reward goes back.

A server (OpenEnv, verifiers) plays tasks from one of two kinds of source:

- a fixed set -- a release's records or a ``gridbench.create_dataset``: ``take`` picks the item
  a ``task_id`` names, or item ``seed % len``, or the next one in turn; a reward goes nowhere;
- an :class:`gridbench.AdaptiveSource`: ``take`` is its ``next()``, and the reward of an
  episode that ended is ``report``-ed to it (an episode closed before its end is
  ``abandon``-ed: it moves nothing).

Both are safe to share between the sessions of one server (a lock guards the turn counter; the
adaptive source locks itself).
"""

from __future__ import annotations

import threading
from typing import Any

from gridbench.adapters.core import task_source
from gridbench_core.errors import UserError


class Feed:
    """Tasks for the sessions of a server: ``take`` one, ``give_back`` its reward."""

    adaptive = False

    def __init__(self, items: Any) -> None:
        self.items = items
        self._turn = 0
        self._lock = threading.Lock()
        self._ids: dict[str, int] | None = None

    @classmethod
    def of(
        cls,
        release: Any = None,
        tasks: Any = None,
        domains: Any = None,
        hidden_slots: Any = None,
        decoy_budgets: Any = None,
    ) -> Feed:
        """The feed of a release (filtered), a sequence of items, or an adaptive source."""
        from gridbench.adaptive import AdaptiveSource

        if isinstance(tasks, AdaptiveSource):
            if release is not None:
                raise UserError("give release=PATH or tasks=..., not both")
            return AdaptiveFeed(tasks)
        return cls(task_source(release, tasks, domains, hidden_slots, decoy_budgets))

    def take(self, seed: int | None = None, task_id: str | None = None) -> Any:
        """The item to play: the one ``task_id`` names, else item ``seed % len``, else the next."""
        if task_id is not None:
            return self.items[self._index_of(task_id)]
        if seed is not None:
            return self.items[int(seed) % len(self.items)]
        with self._lock:
            index, self._turn = self._turn % len(self.items), self._turn + 1
        return self.items[index]

    def _index_of(self, task_id: Any) -> int:
        if hasattr(self.items, "domain_of"):
            raise UserError("task_id: a generated dataset picks its tasks by seed (its ids are not known)")
        if self._ids is None:
            self._ids = {item.task_id: i for i, item in enumerate(self.items)}
        if not isinstance(task_id, str) or task_id not in self._ids:
            raise UserError(f"task_id={str(task_id)[:80]!r} is not a task of this environment")
        return self._ids[task_id]

    def give_back(self, item: Any, reward: float | None) -> None:
        """An episode on ``item`` ended with ``reward`` (None: closed before its end)."""


class AdaptiveFeed(Feed):
    """The feed of an adaptive source: its tasks, and the rewards reported back to it."""

    adaptive = True

    def __init__(self, source: Any) -> None:
        super().__init__([])
        self.source = source

    def take(self, seed: int | None = None, task_id: str | None = None) -> Any:
        """The source's next task (an adaptive source picks; ``task_id`` is refused)."""
        if task_id is not None:
            raise UserError("task_id: an adaptive source picks the task; reset without task_id")
        return self.source.next()

    def give_back(self, item: Any, reward: float | None) -> None:
        """Report the reward of an ended episode; forget a task closed before its end."""
        if reward is None:
            self.source.abandon(item)
        else:
            self.source.report(item, reward)


__all__ = ["AdaptiveFeed", "Feed"]

"""An adaptive task source: certified tasks on the fly, at the rung of a difficulty ladder
that keeps a policy's recent success near a target.

    source = gridbench.AdaptiveSource(domains=["course", "meal"], seed=0, workers=2)
    item = source.next()                  # an AdaptiveTask: .task, .answer, .level, .key
    source.report(item, reward)           # the policy's reward on it, in [0, 1]
    state = source.state_dict()           # JSON-ready; AdaptiveSource(...).load_state_dict(state)

Deterministic: the tasks handed out are a function of the arguments and of the sequence of
``next`` and ``report`` calls (the rewards and which task each is for), whatever the number of
workers and however long their solves take. With ``workers`` > 0 a pool of processes generates
the next ``prefetch`` tasks of the current rung (and of its ``neighbours`` on either side, in
case the rung moves) while the trainer plays; ``next`` waits only when the pool is behind.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

from domains import PAPER_DOMAINS
from gridbench.adaptive.controller import Controller, ControllerSettings
from gridbench.adaptive.ladder import Difficulty, ladder_of
from gridbench.adaptive.tasks import MAX_TASKS_PER_LEVEL, AdaptiveTask, Job, key_of, make_task, settings_of
from gridbench_core.errors import UserError
from pipeline.generation import GenerationSettings, validate_key
from pipeline.generation.keys import ROOM_OVER_BUDGET

STATE_VERSION = 1
MAX_PENDING = 100_000  # tasks handed out and not yet reported that the source remembers
MAX_PREFETCH = 1_000


def _count(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UserError(f"{name}={repr(value)[:40]}: need a whole number in {low}..{high}")
    return value


class AdaptiveSource:
    """Certified tasks whose difficulty follows the rewards reported on them (see the module
    docstring). ``ladder``: rungs easiest first (:func:`gridbench.adaptive.ladder`; default the
    paper's 5x7 diagonal); ``target``, ``band``, ``window``, ``start``: the controller
    (:mod:`gridbench.adaptive.controller`); ``settings``: a ``GenerationSettings`` (its
    ``min_depth`` is each rung's; ``crosscheck=True`` adds the MILP cross-check); ``workers``:
    prefetching processes (0: generate in ``next``)."""

    def __init__(
        self,
        domains: str | Sequence[str] = PAPER_DOMAINS,
        seed: int = 0,
        ladder: Any = None,
        target: float = 0.5,
        band: float = 0.15,
        window: int = 16,
        start: int = 0,
        candidates_per_slot: int = 25,
        room_over_budget: int | None = ROOM_OVER_BUDGET,
        settings: GenerationSettings | None = None,
        salt: str = "",
        workers: int = 0,
        prefetch: int = 4,
        neighbours: int = 1,
    ) -> None:
        names = (domains,) if isinstance(domains, str) else tuple(domains)
        if not names or not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
            raise UserError(f"domains={list(names)[:8]}: give one or more distinct domains")
        self.domains = names
        self.seed = _count(seed, "seed", 0, 2**63 - 1)
        self.ladder: tuple[Difficulty, ...] = ladder_of(ladder)
        if not isinstance(salt, str) or len(salt) > 10_000:
            raise UserError("salt: give a string (at most 10,000 characters)")
        self.salt = salt
        self.candidates_per_slot = _count(candidates_per_slot, "candidates_per_slot", 2, 200)
        if room_over_budget is not None:
            _count(room_over_budget, "room_over_budget", 0, 200)
        self.room_over_budget = room_over_budget
        if settings is None:
            settings = GenerationSettings()
        elif not isinstance(settings, GenerationSettings):
            raise UserError("settings: pass a gridbench.GenerationSettings")
        self.settings = settings
        self.controller_settings = ControllerSettings(target, band, window, start)
        self.controller = Controller(self.controller_settings, len(self.ladder))
        self.workers = 0 if workers == 0 else self._workers(workers)
        self.prefetch = _count(prefetch, "prefetch", 1, MAX_PREFETCH)
        self.neighbours = _count(neighbours, "neighbours", 0, len(self.ladder))
        for level in range(len(self.ladder)):  # every rung and domain checked before any work
            job = self._job(level, 0)
            for domain in self.domains:
                validate_key(key_of(dataclasses.replace(job, domains=(domain,))), settings_of(job))
        self.counters = [0] * len(self.ladder)
        self.pending: OrderedDict[str, int] = OrderedDict()
        self.handed = 0
        self.waits: list[tuple[int, float]] = []  # (rung, seconds next() waited)
        self._futures: dict[tuple[int, int], Future[AdaptiveTask]] = {}
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.RLock()
        if self.workers:  # start on the first rung's tasks now, while the trainer sets up
            self._fill(self.controller.level, 0)

    @staticmethod
    def _workers(value: Any) -> int:
        from pipeline.parallel import check_workers

        return check_workers(value, "workers")

    # The tasks ---------------------------------------------------------------------------

    @property
    def level(self) -> int:
        """The rung the next task is drawn from."""
        return self.controller.level

    @property
    def difficulty(self) -> Difficulty:
        """The current rung."""
        return self.ladder[self.controller.level]

    def _job(self, level: int, k: int) -> Job:
        return Job(
            self.seed,
            self.salt,
            level,
            k,
            self.ladder[level],
            self.domains,
            self.candidates_per_slot,
            self.room_over_budget,
            self.settings,
        )

    def next(self) -> AdaptiveTask:
        """The next certified task, at the current rung (from the prefetch pool when it is
        ready; otherwise made, or waited for, here)."""
        with self._lock:
            level = self.controller.level
            k = self.counters[level]
            if k >= MAX_TASKS_PER_LEVEL:
                raise UserError(f"rung {level}: {MAX_TASKS_PER_LEVEL} tasks handed out, the most a rung has")
            self.counters[level] = k + 1
            start = time.perf_counter()
            if self.workers:
                self._fill(level, k)
                item = self._futures.pop((level, k)).result()
            else:
                item = make_task(self._job(level, k))
            self.waits.append((level, time.perf_counter() - start))
            if self.workers:
                self._fill(level, k + 1)
            self.handed += 1
            self.pending[item.task_id] = level
            while len(self.pending) > MAX_PENDING:
                self.pending.popitem(last=False)
            return item

    def report(self, task: AdaptiveTask | str, reward: float) -> None:
        """The reward a policy got on ``task`` (an item this source handed out, or its task
        id), in [0, 1]; moves the rung when the window says so. Each task is reported once."""
        task_id = task.task_id if isinstance(task, AdaptiveTask) else task
        with self._lock:
            if not isinstance(task_id, str) or task_id not in self.pending:
                raise UserError(
                    f"report: {str(task_id)[:80]!r} is not a task this source handed out and has not "
                    "had a reward yet"
                )
            level = self.pending[task_id]
            before = self.controller.level
            self.controller.report(level, reward)  # raises on a bad reward: the task stays pending
            del self.pending[task_id]
            if self.workers and self.controller.level != before:
                self._fill(self.controller.level, self.counters[self.controller.level])

    def abandon(self, task: AdaptiveTask | str) -> None:
        """Forget a task handed out that will get no reward (an episode closed before its end):
        it moves nothing. Unknown or already reported tasks are ignored."""
        task_id = task.task_id if isinstance(task, AdaptiveTask) else task
        with self._lock:
            self.pending.pop(task_id, None)

    # Prefetching -------------------------------------------------------------------------

    def _fill(self, level: int, k: int) -> None:
        """Make sure the pool is working on tasks ``k .. k + prefetch - 1`` of ``level`` and the
        next ones of its neighbours, the current rung's first: the pool runs its queue in order,
        so a neighbour's task still queued is taken out and queued again behind a new task of
        the current rung (it would make the trainer wait). Drop what is queued for rungs out of
        reach."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=get_context("spawn"), initializer=_ignore_interrupts
            )
        current = [(level, k + j) for j in range(self.prefetch)]
        wanted = list(current)
        for distance in range(1, self.neighbours + 1):
            for near in (level - distance, level + distance):
                if 0 <= near < len(self.ladder):
                    first = self.counters[near]
                    wanted += [(near, first + j) for j in range(max(1, self.prefetch // 2))]
        reach = range(level - self.neighbours, level + self.neighbours + 1)
        for key, future in list(self._futures.items()):
            stale = key[0] not in reach or key[1] < self.counters[key[0]]
            if stale and key not in wanted and (future.done() or future.cancel()):
                del self._futures[key]
        if any(key not in self._futures for key in current):
            for key, future in list(self._futures.items()):
                if key[0] != level and future.cancel():  # queued, not started: to the back
                    del self._futures[key]
        for key in wanted:
            if key not in self._futures:
                self._futures[key] = self._pool.submit(make_task, self._job(*key))

    def close(self) -> None:
        """Stop the prefetch pool (queued work is dropped; nothing handed out is lost)."""
        with self._lock:
            pool, self._pool = self._pool, None
            for future in self._futures.values():
                future.cancel()
            self._futures.clear()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> AdaptiveSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("an AdaptiveSource is not pickled; save source.state_dict() instead")

    # State --------------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The arguments that define the task sequence (no salt, no pool size): a restored state
        must come from a source with the same ones."""
        return {
            "domains": list(self.domains),
            "seed": self.seed,
            "ladder": [rung.to_dict() for rung in self.ladder],
            "target": self.controller_settings.target,
            "band": self.controller_settings.band,
            "window": self.controller_settings.window,
            "start": self.controller_settings.start,
            "candidates_per_slot": self.candidates_per_slot,
            "room_over_budget": self.room_over_budget,
            "settings": _settings_dict(self.settings),
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything a trainer saves to resume: JSON-ready (``json.dumps`` it as it is)."""
        with self._lock:
            return {
                "version": STATE_VERSION,
                "config": self.config(),
                "controller": self.controller.state(),
                "counters": list(self.counters),
                "pending": [[task_id, level] for task_id, level in self.pending.items()],
                "handed": self.handed,
            }

    def load_state_dict(self, state: Any) -> None:
        """Resume from a :meth:`state_dict` of a source with the same configuration (the tasks
        queued in the pool are dropped and made again where they are needed)."""
        if not isinstance(state, Mapping) or state.get("version") != STATE_VERSION:
            raise UserError(f"adaptive state: not a state_dict() of this version ({STATE_VERSION})")
        mine, theirs = self.config(), state.get("config")
        if not isinstance(theirs, Mapping):
            raise UserError("adaptive state: it has no config")
        for name in mine:
            if theirs.get(name) != mine[name]:
                raise UserError(
                    f"adaptive state: it was saved by a source with another {name} "
                    f"({str(theirs.get(name))[:80]}); build the source with the same arguments"
                )
        try:
            counters = [int(c) for c in state["counters"]]
            pending = OrderedDict((str(t), int(level)) for t, level in state["pending"])
            handed = int(state["handed"])
        except (KeyError, TypeError, ValueError):
            raise UserError("adaptive state: counters, pending or handed is damaged") from None
        if len(counters) != len(self.ladder) or any(c < 0 for c in counters):
            raise UserError("adaptive state: its counters do not fit this ladder")
        controller = Controller.from_state(self.controller_settings, len(self.ladder), state["controller"])
        with self._lock:
            self.close()
            self.controller, self.counters, self.pending, self.handed = controller, counters, pending, handed

    def stats(self) -> dict[str, Any]:
        """Where the source is and how it got there: the rung, recent success, tasks handed
        out, the moves, rewards per rung, and how long ``next`` waited."""
        with self._lock:
            waits = [w for _, w in self.waits]
            return {
                "level": self.controller.level,
                "difficulty": self.difficulty.name,
                "recent_success": self.controller.recent_success(),
                "handed": self.handed,
                "reported": self.controller.reports,
                "moves": list(self.controller.moves),
                "success_by_level": {
                    level: total / count for level, (count, total) in sorted(self.controller.totals.items())
                },
                "wait_s_mean": sum(waits) / len(waits) if waits else 0.0,
                "wait_s_max": max(waits, default=0.0),
            }

    def __repr__(self) -> str:
        return (
            f"AdaptiveSource(rung {self.controller.level}/{len(self.ladder) - 1}: {self.difficulty.name}, "
            f"domains={list(self.domains)}, seed={self.seed}, workers={self.workers})"
        )


def _ignore_interrupts() -> None:
    """A worker leaves Ctrl-C to its parent. (Not ``pipeline.parallel``'s set-up: its
    parent-death signal fires when the *thread* that spawned a worker ends, and a server spawns
    from short-lived session threads. A worker whose parent dies ends on its closed pipe.)"""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _settings_dict(settings: GenerationSettings) -> dict[str, Any]:
    data = dataclasses.asdict(settings)
    data.pop("min_depth")  # each rung's own
    return data


def from_config(config: Mapping[str, Any], **overrides: Any) -> AdaptiveSource:
    """A source from plain config data (``conf/adaptive/default.yaml``'s keys; ``generation``
    holds ``GenerationSettings`` fields); a misspelt key is one line naming it."""
    known = {
        "domains",
        "seed",
        "ladder",
        "target",
        "band",
        "window",
        "start",
        "candidates_per_slot",
        "room_over_budget",
        "generation",
        "workers",
        "prefetch",
        "neighbours",
    }
    data = {**dict(config), **overrides}
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        raise UserError(f"adaptive.{unknown[0]}: unknown key; the keys are {', '.join(sorted(known))}")
    generation = data.pop("generation", None) or {}
    if not isinstance(generation, Mapping):
        raise UserError("adaptive.generation: give a mapping of GenerationSettings fields")
    fields = set(GenerationSettings.__dataclass_fields__) - {"min_depth"}
    bad = sorted(set(map(str, generation)) - fields)
    if bad:
        raise UserError(f"adaptive.generation.{bad[0]}: not a generation setting (min_depth is each rung's)")
    return AdaptiveSource(settings=GenerationSettings(**dict(generation)), **data)


__all__ = ["AdaptiveSource", "from_config"]

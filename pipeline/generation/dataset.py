"""Certified tasks generated on the fly (reasoning-gym style): the library behind
``gridbench.create_dataset`` (which adds ``episode()`` and ``score()`` to the items).

Item ``i`` of a dataset is a pure function of the dataset's arguments and ``i``: its domain, H
and B are drawn by a generator seeded with a SHA-256 of (seed, i), its task key is built from
them, and the task is generated and certified (CP-SAT) when the item is first asked for. The
same arguments give the same tasks, byte for byte, in any order and any process.

A curriculum splits the items into levels, easiest first: level ``l`` of ``L`` draws H and B
from the ``l``-th slice of the sorted H and B values and asks for a resistant-decoy share
rising from 0 to ``max_resistant_share`` (``generation.min_resistant_share``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import random
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass
from typing import Any

from gridbench_core.errors import UserError
from gridbench_core.task import Task
from pipeline.generation.keys import ROOM_OVER_BUDGET, candidates_for

MAX_REDRAWS = 5  # an item's (domain, H, B) re-drawn at most this often when it cannot be certified
FAILURE_MODES = ("redraw", "raise")
CACHE = 256  # generated items kept for repeated indexing
# What a dataset may ask for, checked before anything is allocated or generated:
MAX_CANDIDATES = 200  # candidates per hidden cell (as a release's)
MAX_VALUES = 10_000  # values of hidden_slots or decoy_budgets
MAX_COMBINATIONS = 100_000  # (H, B) pairs, each checked for every domain before any work
MAX_LEVELS = 1_000
MAX_SIZE = 10**9
GENERATE_CHUNK = 10_000  # items handed to the worker pool at a time by generate()


@dataclass(frozen=True)
class Level:
    """One step of a curriculum: the H and B values it draws from, and the share of each
    task's decoys that must resist interval propagation."""

    hidden_slots: tuple[int, ...]
    decoy_budgets: tuple[int, ...]
    min_resistant_share: float = 0.0


@dataclass(frozen=True)
class GeneratedTask:
    """One certified task: ``task`` and ``answer`` are the dicts a release's two files would
    hold (the answer carries the certificate); ``level`` is its curriculum level."""

    index: int
    level: int
    key: Any
    task: dict[str, Any]
    answer: dict[str, Any]
    redraws: int = 0  # draws of (domain, H, B) replaced because they could not be certified

    @property
    def task_id(self) -> str:
        """The task's id."""
        return str(self.task["task_id"])


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:80]}..."


def _count(value: Sized) -> int:
    try:
        return len(value)
    except OverflowError:  # range(0, 10**20)
        return 2**63


def _values(value: int | Iterable[int], name: str) -> tuple[int, ...]:
    """The sorted distinct values of an int, a list or a range; more than
    :data:`MAX_VALUES` of them (``range(0, 10**10)``) is refused before any is made."""
    if isinstance(value, str | bytes) or not (_is_int(value) or isinstance(value, Iterable)):
        raise UserError(f"{name}: give an int, a list of ints or a range, got {_shown(value)}")
    if isinstance(value, Sized) and not _is_int(value) and _count(value) > MAX_VALUES:
        raise UserError(
            f"{name}={_shown(value)}: more than {MAX_VALUES} values; give a shorter range or list"
        )
    values = (value,) if isinstance(value, int) else tuple(itertools.islice(value, MAX_VALUES + 1))
    if len(values) > MAX_VALUES:
        raise UserError(f"{name}: more than {MAX_VALUES} values; give a shorter range or list")
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise UserError(f"{name}: give an int, a list of ints or a range, got {_shown(value)}")
    return tuple(sorted(set(values)))


def _grid(grid: str | tuple[int, int]) -> tuple[int, int]:
    if isinstance(grid, str):
        try:
            rows, cols = (int(part) for part in grid.lower().split("x", 1) if len(part) <= 6)
        except ValueError:
            raise UserError(f"grid={_shown(grid)}: write ROWSxCOLS, e.g. '5x7'") from None
    elif isinstance(grid, tuple | list) and len(grid) == 2 and all(_is_int(v) for v in grid):
        rows, cols = grid[0], grid[1]
    else:
        raise UserError(f"grid={_shown(grid)}: write ROWSxCOLS ('5x7') or a pair of ints ((5, 7))")
    from pipeline.generation.validate import MAX_SIDE

    if not (1 <= rows <= MAX_SIDE and 1 <= cols <= MAX_SIDE):
        raise UserError(f"grid={_shown(grid)}: rows and columns must be between 1 and {MAX_SIDE}")
    return rows, cols


def _slice(values: tuple[int, ...], level: int, levels: int) -> tuple[int, ...]:
    start = level * len(values) // levels
    end = max((level + 1) * len(values) // levels, start + 1)
    return values[start:end]


def curriculum(
    levels: int,
    hidden_slots: int | Iterable[int],
    decoy_budgets: int | Iterable[int],
    max_resistant_share: float = 0.0,
) -> tuple[Level, ...]:
    """``levels`` levels that raise H, B and the resistant-decoy share together."""
    if not _is_int(levels) or not 1 <= levels <= MAX_LEVELS:
        raise UserError(f"levels={_shown(levels)}: need an int between 1 and {MAX_LEVELS}")
    if (
        isinstance(max_resistant_share, bool)
        or not isinstance(max_resistant_share, int | float)
        or not 0.0 <= max_resistant_share < 1.0
    ):
        raise UserError(f"max_resistant_share={max_resistant_share}: need a share in [0, 1)")
    hs, bs = _values(hidden_slots, "hidden_slots"), _values(decoy_budgets, "decoy_budgets")
    return tuple(
        Level(
            _slice(hs, level, levels),
            _slice(bs, level, levels),
            round(max_resistant_share * level / (levels - 1), 6) if levels > 1 else max_resistant_share,
        )
        for level in range(levels)
    )


class TaskDataset(Sequence[GeneratedTask]):
    """``len()``, indexing, slicing and iteration over certified tasks generated on demand.
    ``generate(workers=n)`` makes them in ``n`` processes, in order. ``item_class`` is the
    class of its items (the public face's adds ``episode()`` and ``score()``)."""

    item_class: type[GeneratedTask] = GeneratedTask

    def __init__(
        self,
        domains: Sequence[str],
        size: int,
        seed: int,
        grid: tuple[int, int],
        candidates_per_slot: int,
        levels: tuple[Level, ...],
        settings: Any,
        salt: str = "",
        on_failure: str = "redraw",
        room_over_budget: int | None = ROOM_OVER_BUDGET,
    ) -> None:
        self.domains, self.size, self.seed = tuple(domains), size, seed
        self.on_failure, self.room_over_budget = on_failure, room_over_budget
        self.rows, self.cols = grid
        self.candidates_per_slot, self.levels = candidates_per_slot, levels
        self.settings, self.salt = settings, salt
        self._cache: OrderedDict[int, GeneratedTask] = OrderedDict()

    def __len__(self) -> int:
        return self.size

    def level_of(self, index: int) -> int:
        """The curriculum level of item ``index`` (items are ordered easiest first)."""
        return index * len(self.levels) // self.size

    def domain_of(self, index: int) -> str:
        """The domain of item ``index``, known without generating it (a re-draw keeps it)."""
        digest = hashlib.sha256(f"gridbench-dataset|{self.seed}|{index}|domain".encode()).digest()
        return self.domains[int.from_bytes(digest[:8], "big") % len(self.domains)]

    def key(self, index: int, redraw: int = 0) -> Any:
        """The task key of item ``index``: its domain, and H and B drawn from its level
        (``redraw`` > 0: the H and B that replace a draw that could not be certified)."""
        from pipeline.generation.keys import TaskKey

        level = self.levels[self.level_of(index)]
        tag = f"gridbench-dataset|{self.seed}|{index}" + (f"|redraw={redraw}" if redraw else "")
        digest = hashlib.sha256(tag.encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        domain = self.domain_of(index)
        hidden, budget = rng.choice(level.hidden_slots), rng.choice(level.decoy_budgets)
        candidates = candidates_for(self.candidates_per_slot, self.room_over_budget, budget)
        return TaskKey(domain, self.rows, self.cols, hidden, budget, candidates, self.seed, index, self.salt)

    def _settings(self, index: int) -> Any:
        share = self.levels[self.level_of(index)].min_resistant_share
        return dataclasses.replace(self.settings, min_resistant_share=share)

    def _make(self, index: int) -> GeneratedTask:
        """Generate item ``index``. A (domain, H, B) the generator cannot certify (large decoy
        budgets on large grids, see the README) is replaced by the item's next draw, up to
        ``MAX_REDRAWS`` times, deterministically; ``GeneratedTask.redraws`` says how often."""
        return self.made(index)[0]

    def made(self, index: int) -> tuple[GeneratedTask, Task]:
        """Item ``index`` (generated afresh, not kept) and the task object its ``task`` dict
        was written from (a writer of tables renders its prompt without reading it again)."""
        from pipeline.generation.build import generate_task
        from pipeline.generation.keys import GenerationError

        failures = []
        for redraw in range(MAX_REDRAWS + 1):
            key = self.key(index, redraw)
            try:
                made = generate_task(key, self._settings(index))
            except GenerationError:
                if self.on_failure == "raise":
                    raise
                failures.append(f"{key.domain} H={key.hidden_slots} B={key.decoy_budget}")
                continue
            item = self.item_class(
                index, self.level_of(index), made.key, made.task.to_dict(), made.answer.to_dict(), redraw
            )
            return item, made.task
        raise GenerationError(
            f"item {index}: none of {len(failures)} draws could be certified ({'; '.join(failures)}); "
            "lower decoy_budgets or raise hidden_slots for this grid"
        )

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"dataset indices are ints or slices, not {type(index).__name__}")
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} out of range for a dataset of {self.size} tasks")
        if index not in self._cache:
            self._cache[index] = self._make(index)
            while len(self._cache) > CACHE:
                self._cache.popitem(last=False)
        self._cache.move_to_end(index)
        return self._cache[index]

    def __iter__(self) -> Iterator[GeneratedTask]:
        for index in range(self.size):
            yield self[index]

    def generate(self, workers: int = 2) -> Iterator[GeneratedTask]:
        """Every item, in order, generated in ``workers`` processes (at most what this machine
        can run: ``pipeline.parallel.check_workers``), handed out in chunks so that memory does
        not grow with the dataset's size."""
        from pipeline.parallel import check_workers, parallel_imap

        workers = check_workers(workers, "workers")
        for start in range(0, self.size, GENERATE_CHUNK):
            jobs = [(self, i) for i in range(start, min(start + GENERATE_CHUNK, self.size))]
            yield from parallel_imap(_make_item, jobs, workers, "", show=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cache": OrderedDict()}

    def __repr__(self) -> str:
        return (
            f"TaskDataset({self.size} tasks, domains={list(self.domains)}, grid={self.rows}x{self.cols}, "
            f"seed={self.seed}, levels={len(self.levels)})"
        )


def _make_item(args: tuple[TaskDataset, int]) -> GeneratedTask:
    dataset, index = args
    return dataset._make(index)


def create_dataset(
    domains: str | Sequence[str] = ("course", "meal", "pc_build", "shopping", "travel", "workforce"),
    size: int = 100,
    seed: int = 0,
    grid: str | tuple[int, int] = "5x7",
    hidden_slots: int | Iterable[int] = range(1, 22),
    decoy_budgets: int | Iterable[int] = range(0, 26),
    candidates_per_slot: int = 25,
    levels: int | Sequence[Level] = 1,
    max_resistant_share: float = 0.0,
    settings: Any = None,
    salt: str = "",
    on_failure: str = "redraw",
    room_over_budget: int | None = ROOM_OVER_BUDGET,
    dataset_class: type[TaskDataset] = TaskDataset,
) -> TaskDataset:
    """``size`` certified tasks, generated lazily and deterministically (a ``dataset_class``).

    ``hidden_slots`` and ``decoy_budgets`` are ints, lists or ranges; ``levels`` is a number
    of curriculum levels (H, B and the resistant share rise together, up to
    ``max_resistant_share``) or a list of :class:`Level`; ``settings`` is a
    ``GenerationSettings`` (default: CP-SAT certificate, no MILP cross-check, for speed);
    ``salt`` makes the tasks impossible to regenerate without it; ``on_failure``: what to do
    when an item's (domain, H, B) cannot be certified (``redraw``: draw again, deterministically,
    and count it in the item's ``redraws``; ``raise``); ``room_over_budget``: K = max(
    candidates_per_slot, B + room_over_budget), or ``None`` for K = candidates_per_slot at every
    B (large budgets: B = 600 on 20x20 with K = 25). Every argument is checked here, before
    anything is generated."""
    from pipeline.generation.keys import GenerationSettings, TaskKey
    from pipeline.generation.validate import validate_key

    if not isinstance(domains, str | Sequence):
        raise UserError(f"domains={domains!r}: give a domain or a list of domains")
    names = (domains,) if isinstance(domains, str) else tuple(domains)
    if not names or not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        raise UserError(f"domains={list(names)}: give one or more distinct domains")
    if not _is_int(size) or not 1 <= size <= MAX_SIZE:
        raise UserError(f"size={_shown(size)}: need an int between 1 and {MAX_SIZE}")
    if not _is_int(candidates_per_slot) or not 2 <= candidates_per_slot <= MAX_CANDIDATES:
        raise UserError(
            f"candidates_per_slot={_shown(candidates_per_slot)}: need an int in 2..{MAX_CANDIDATES}"
        )
    if room_over_budget is not None and (
        not _is_int(room_over_budget) or not 0 <= room_over_budget <= MAX_CANDIDATES
    ):
        raise UserError(
            f"room_over_budget={_shown(room_over_budget)}: need an int in 0..{MAX_CANDIDATES} or None"
        )
    if not isinstance(salt, str) or len(salt) > 10_000:
        raise UserError("salt: give a string (at most 10,000 characters)")
    if not _is_int(seed) or not 0 <= seed < 2**63:
        raise UserError(f"seed={seed!r}: need an int in [0, 2^63)")
    if settings is None:
        settings = GenerationSettings()
    elif not isinstance(settings, GenerationSettings):
        raise UserError("settings: pass a gridbench.GenerationSettings")
    if on_failure not in FAILURE_MODES:
        raise UserError(f"on_failure={on_failure!r}: use one of {FAILURE_MODES}")
    rows, cols = _grid(grid)
    if isinstance(levels, bool) or not isinstance(levels, int | Sequence) or isinstance(levels, str):
        raise UserError(f"levels={_shown(levels)}: give a number of levels or a list of gridbench.Level")
    if isinstance(levels, int) and levels > size:
        raise UserError(f"levels={levels}: {levels} levels need at least as many tasks (size={size})")
    if not isinstance(levels, int) and len(levels) > MAX_LEVELS:
        raise UserError(f"levels: {len(levels)} levels, at most {MAX_LEVELS}")
    plan = (
        curriculum(levels, hidden_slots, decoy_budgets, max_resistant_share)
        if isinstance(levels, int)
        else tuple(levels)
    )
    if not plan or not all(isinstance(level, Level) for level in plan):
        raise UserError("levels: give a number of levels or a list of gridbench.Level")
    combinations = 0
    for level in plan:
        for name in ("hidden_slots", "decoy_budgets"):
            values = getattr(level, name)
            if not isinstance(values, tuple) or not values or not all(_is_int(v) for v in values):
                raise UserError(f"{_shown(level)}: {name} must be a non-empty tuple of ints")
            if len(values) > MAX_VALUES:
                raise UserError(f"a level's {name}: {len(values)} values, at most {MAX_VALUES}")
        combinations += len(level.hidden_slots) * len(level.decoy_budgets)
    if combinations > MAX_COMBINATIONS:
        raise UserError(
            f"hidden_slots x decoy_budgets: {combinations} (H, B) pairs, at most {MAX_COMBINATIONS} "
            "(each is checked for every domain first); narrow the ranges"
        )
    if len(plan) > size:
        raise UserError(f"levels: {len(plan)} levels need at least as many tasks (size={size})")
    for level in plan:
        dataclasses.replace(settings, min_resistant_share=level.min_resistant_share).validate()
        for domain in names:
            for hidden in level.hidden_slots:
                for budget in level.decoy_budgets:
                    candidates = candidates_for(candidates_per_slot, room_over_budget, budget)
                    validate_key(TaskKey(domain, rows, cols, hidden, budget, candidates, seed), settings)
    return dataset_class(
        names,
        size,
        seed,
        (rows, cols),
        candidates_per_slot,
        plan,
        settings,
        salt,
        on_failure,
        room_over_budget,
    )

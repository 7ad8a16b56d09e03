"""One task of an adaptive source: its key, how it is generated (in this process or a worker),
and the record that regenerates it.

Task ``k`` of rung ``level`` is a pure function of (seed, salt, the rung, ``k``): its domain
is drawn by a SHA-256 of them, its :class:`TaskKey` takes the rung's grid, H and B, and
``index = level * 2**40 + redraw * 2**32 + k``, and it is generated and certified by
:func:`pipeline.generation.build.generate_task` with the rung's ``min_depth`` -- exactly as a
release task (CP-SAT proof of uniqueness; the MILP cross-check when the settings ask). A key
that cannot be certified is replaced by the same task's next ``redraw``, deterministically.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gridbench.adaptive.ladder import Difficulty
from gridbench.procedural import GeneratedTask
from gridbench_core.errors import UserError
from pipeline.generation import GenerationError, GenerationSettings, TaskKey, candidates_for, generate_task

MAX_REDRAWS = 5
LEVEL_STRIDE = 2**40  # index = level * LEVEL_STRIDE + redraw * REDRAW_STRIDE + k
REDRAW_STRIDE = 2**32
MAX_TASKS_PER_LEVEL = REDRAW_STRIDE


@dataclass(frozen=True)
class AdaptiveTask(GeneratedTask):
    """A certified task handed out by an :class:`AdaptiveSource`: ``task`` and ``answer`` (the
    dicts of a release's two files), ``level`` (the rung), ``index`` (its number at that
    rung), ``key`` and ``settings`` (what regenerates it), and the CPU seconds it took."""

    difficulty: Difficulty | None = None
    settings: Mapping[str, Any] | None = None
    cpu_s: float = 0.0

    def record(self) -> dict[str, Any]:
        """What regenerates this task (:func:`regenerate`): its public key, the generation
        settings, the rung. JSON-ready; it holds no answer and no salt."""
        return {
            "task_id": self.task_id,
            "level": self.level,
            "difficulty": None if self.difficulty is None else self.difficulty.to_dict(),
            "key": self.key.public(),
            "settings": dict(self.settings or {}),
        }


@dataclass(frozen=True)
class Job:
    """What a worker needs to make task ``k`` of rung ``level``."""

    seed: int
    salt: str
    level: int
    k: int
    difficulty: Difficulty
    domains: tuple[str, ...]
    candidates_per_slot: int
    room_over_budget: int | None
    settings: GenerationSettings


def domain_of(seed: int, level: int, k: int, domains: Sequence[str]) -> str:
    """The domain of task ``k`` of rung ``level`` (a SHA-256, never Python's ``hash``)."""
    digest = hashlib.sha256(f"gridbench-adaptive|{seed}|{level}|{k}|domain".encode()).digest()
    return domains[int.from_bytes(digest[:8], "big") % len(domains)]


def key_of(job: Job, redraw: int = 0) -> TaskKey:
    """The task key of ``job`` (``redraw`` > 0: the key that replaces one that failed)."""
    rung = job.difficulty
    domain = domain_of(job.seed, job.level, job.k, job.domains)
    candidates = candidates_for(job.candidates_per_slot, job.room_over_budget, rung.decoy_budget)
    index = job.level * LEVEL_STRIDE + redraw * REDRAW_STRIDE + job.k
    return TaskKey(
        domain,
        rung.rows,
        rung.cols,
        rung.hidden_slots,
        rung.decoy_budget,
        candidates,
        job.seed,
        index,
        job.salt,
    )


def settings_of(job: Job) -> GenerationSettings:
    """The generation settings of ``job``: the source's, with its rung's ``min_depth``."""
    return dataclasses.replace(job.settings, min_depth=job.difficulty.min_depth)


def make_task(job: Job) -> AdaptiveTask:
    """Generate and certify the task of ``job`` (in this process or a worker's)."""
    start = time.process_time()
    settings = settings_of(job)
    failures = []
    for redraw in range(MAX_REDRAWS + 1):
        key = key_of(job, redraw)
        try:
            made = generate_task(key, settings)
        except GenerationError as error:
            failures.append(str(error)[:200])
            continue
        return AdaptiveTask(
            index=job.k,
            level=job.level,
            key=made.key,
            task=made.task.to_dict(),
            answer=made.answer.to_dict(),
            redraws=redraw,
            difficulty=job.difficulty,
            settings=dataclasses.asdict(settings),
            cpu_s=time.process_time() - start,
        )
    raise GenerationError(
        f"rung {job.level} ({job.difficulty.name}): task {job.k} could not be certified in "
        f"{len(failures)} draws (last: {failures[-1]}); remove or ease that rung of the ladder"
    )


def regenerate(record: Mapping[str, Any], salt: str = "") -> AdaptiveTask:
    """The task an :meth:`AdaptiveTask.record` describes, generated again (the same bytes;
    ``salt``: the source's, if it had one)."""
    try:
        key = TaskKey(**dict(record["key"]), salt=salt)
        settings = GenerationSettings(**dict(record["settings"]))
        level = int(record["level"])
    except (KeyError, TypeError, ValueError):
        raise UserError("record: give an AdaptiveTask.record() (key, settings, level)") from None
    made = generate_task(key, settings)
    data = record.get("difficulty")
    rung = None
    if isinstance(data, Mapping):
        from gridbench.adaptive.ladder import difficulty_of

        rung = difficulty_of(data, "record.difficulty")
    return AdaptiveTask(
        index=key.index % REDRAW_STRIDE,
        level=level,
        key=made.key,
        task=made.task.to_dict(),
        answer=made.answer.to_dict(),
        redraws=(key.index % LEVEL_STRIDE) // REDRAW_STRIDE,
        difficulty=rung,
        settings=dataclasses.asdict(settings),
    )


__all__ = ["AdaptiveTask", "Job", "domain_of", "key_of", "make_task", "regenerate"]

"""One task key in, one certified task out: sample, constrain, candidates, repair, certify."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from domains import get_domain
from pipeline.assemble import build_answer, build_task
from pipeline.candidates import allocate_decoys, draw_decoy, draw_filtered
from pipeline.certify import certify
from pipeline.constrain import draw_global_rules
from pipeline.draft import Draft
from pipeline.keys import GenerationError, GenerationSettings, TaskKey
from pipeline.measures import measure
from pipeline.repair import RepairFailed, RepairStats, make_unique
from pipeline.sample import sample_grid
from pipeline.validate import decoy_cell_count, validate_key
from solvers.cbc import crosscheck
from solvers.results import SolverSettings
from solvers.task import Answer, Task


@dataclass(frozen=True)
class CertifiedTask:
    """A task, its answer (with certificate and measures) and volatile timings.

    Timings stay out of the answer file so that files are byte-identical across runs.
    """

    key: TaskKey
    task: Task
    answer: Answer
    timings: dict[str, float] = field(default_factory=dict)


def _draft_decoys(draft: Draft, key: TaskKey, settings: GenerationSettings) -> str | None:
    """Place the B decoys; returns a reason when this draft cannot host them."""
    per_cell = key.candidates_per_slot - 1
    shares = allocate_decoys(draft, key.decoy_budget, decoy_cell_count(key, settings), per_cell)
    if key.decoy_budget and not shares:
        return "too few hidden cells can host a decoy under these bounds"
    want_deep = settings.prefer_deep_decoys and key.hidden_slots >= 2
    for cell, share in shares.items():
        for _ in range(share):
            if draw_decoy(draft, cell, want_deep, settings.temptation) is None:
                return f"cell {cell} cannot host a decoy"
    return None


def generate_task(key: TaskKey, settings: GenerationSettings | None = None) -> CertifiedTask:
    """Generate and certify the task of ``key``; raises :class:`GenerationError`."""
    settings = settings or GenerationSettings()
    validate_key(key, settings)
    domain = get_domain(key.domain)
    solver = SolverSettings(time_limit_s=settings.time_limit_s, workers=settings.solver_workers, seed=0)
    stats, reason, start = RepairStats(), "", time.perf_counter()
    for attempt in range(settings.max_attempts):
        draft = Draft(domain, key.rows, key.cols, key.rng("attempt", attempt))
        sample_grid(draft, key.hidden_slots, settings.max_slot_rules)
        draw_global_rules(draft, settings.sum_slack_share, settings.count_slack_probability)
        reason = _draft_decoys(draft, key, settings) or ""
        if reason:
            continue
        try:
            make_unique(draft, key.task_id, settings, solver, stats)
        except RepairFailed as error:
            reason = str(error)
            continue
        generate_ms = (time.perf_counter() - start) * 1000.0
        return _finish(draft, key, settings, solver, stats, attempt, generate_ms)
    raise GenerationError(
        f"task {key.canonical()}: no certified task after max_attempts={settings.max_attempts} "
        f"(last reason: {reason}); lower decoy_budget or raise max_repair_rounds"
    )


def _finish(draft: Draft, key: TaskKey, settings: GenerationSettings, solver: SolverSettings,
            stats: RepairStats, attempt: int, generate_ms: float) -> CertifiedTask:  # fmt: skip
    for cell in draft.hidden:
        count = key.candidates_per_slot - 1 - len(draft.decoys.get(cell, []))
        draw_filtered(draft, cell, count)
    task = build_task(draft, key.task_id, key.decoy_budget, key.candidates_per_slot)
    answer = build_answer(draft, key.task_id)
    certificate = certify(task, answer, solver)
    if not certificate["ok"]:
        raise GenerationError(f"task {key.task_id}: final certificate failed: "
                              f"{certificate['failures']}")  # fmt: skip
    measures, measures_ms = measure(task, answer, solver, settings.dfs_node_limit)
    timings = {"generate_ms": generate_ms, "certify_ms": certificate.pop("wall_ms"),
               "measures_ms": measures_ms}  # fmt: skip
    certificate.update({"seed": key.seed, "index": key.index, "attempt": attempt,
                        "repair_rounds": stats.rounds, "redraws": stats.redraws,
                        "tightenings": stats.tightenings})  # fmt: skip
    check: dict[str, Any] = {}
    if settings.crosscheck:
        check = crosscheck_answer(task, answer, solver)
        timings["crosscheck_ms"] = check.pop("wall_ms")
        if not check["ok"]:
            raise GenerationError(f"task {key.task_id}: the CBC cross-check disagrees with "
                                  f"CP-SAT: {check}")  # fmt: skip
    answer = Answer(answer.task_id, answer.truth, answer.roles, certificate, check, measures)
    return CertifiedTask(key, task, answer, timings)


def crosscheck_answer(task: Task, answer: Answer, solver: SolverSettings) -> dict[str, Any]:
    decoys = {(role.row, role.col): list(role.decoys) for role in answer.roles if role.decoys}
    return crosscheck(task, answer.truth_choice(), decoys, solver)

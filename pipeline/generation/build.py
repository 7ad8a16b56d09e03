"""One task key in, one certified task out: sample, candidates, constrain, repair, certify,
measure, cross-check. A draft that cannot be made unique, misses ``min_resistant_share`` or
``min_depth``, or
on which the two solvers disagree is discarded and the task re-drawn whole (a new attempt);
disagreements are kept as build events."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

from domains import get_domain
from gridbench_core.records import CrossCheck
from gridbench_core.task import Answer, Task
from pipeline.generation.assemble import build_answer, build_task
from pipeline.generation.bounds import place
from pipeline.generation.cages import draw_cages, widen_cages
from pipeline.generation.candidates import allocate_decoys, draw_exchangeable, draw_filtered
from pipeline.generation.constrain import draw_global_rules
from pipeline.generation.draft import Draft
from pipeline.generation.keys import GenerationError, GenerationSettings, TaskKey
from pipeline.generation.records import CertifiedTask
from pipeline.generation.repair import RepairFailed, RepairStats, make_unique
from pipeline.generation.resist import loosen, loosen_for_resistance, meets_targets
from pipeline.generation.sample import sample_grid
from pipeline.generation.seal import seal
from pipeline.generation.validate import decoy_cell_count, search_bits, validate_key
from solvers.checker import enumerate_completions, locally_valid_candidates
from solvers.cpsat import SOLVER_NAME, SOLVER_VERSION
from solvers.results import RETRY_FACTOR, SolverSettings, SolverTimeout, deterministic_settings


def draw_draft(key: TaskKey, settings: GenerationSettings, attempt: int) -> Draft:
    """Stages 1-3: the truth grid and slot rules, exchangeable candidates, global rules."""
    draft = Draft(
        get_domain(key.domain), key.rows, key.cols, key.rng("attempt", attempt), key.rng("labels", attempt)
    )
    sample_grid(draft, key.hidden_slots, settings.max_slot_rules)
    shares = allocate_decoys(
        draft, key.decoy_budget, decoy_cell_count(key, settings), key.candidates_per_slot - 1
    )
    for cell, share in shares.items():
        draw_exchangeable(draft, cell, share)
    if search_bits(key, settings) > settings.cage_bits:
        draft.cages = draw_cages(draft, settings.cage_cells, settings.cage_bits)
    draw_global_rules(draft, settings)
    return draft


def generate_task(key: TaskKey, settings: GenerationSettings | None = None) -> CertifiedTask:
    """Generate and certify the task of ``key``; raises :class:`GenerationError`."""
    settings = settings or GenerationSettings()
    validate_key(key, settings)
    # stopped by CP-SAT's deterministic time, the same on every machine (solvers.results); a
    # draft whose solves time out is tried once more with RETRY_FACTOR times the limit (still
    # the same on every machine) before it is given up: on the largest presets a hard draft
    # needs more than the limit to be proved unique (20x20 meal H150 B600, seed 1: all 8
    # drafts timed out at 10 units; the first one certifies at 40), and a task that needed
    # it is one verify proves on its own retry (pipeline.storage.verification)
    limits = (
        deterministic_settings(settings.time_limit_s, settings.solver_workers),
        deterministic_settings(settings.time_limit_s * RETRY_FACTOR, settings.solver_workers),
    )
    stats, reason, start = RepairStats(), "", time.perf_counter()
    events: list[dict[str, Any]] = []
    for attempt in range(settings.attempts):
        for solver in limits:
            try:
                made = _attempt(key, settings, solver, stats, attempt, start)
            except SolverTimeout as error:  # a time-out is never a proof: longer, then re-draw
                reason = f"{type(error).__name__}: {error}"
                continue
            break
        else:
            continue
        if isinstance(made, CertifiedTask):
            return CertifiedTask(made.key, made.task, made.answer, made.timings, tuple(events))
        if isinstance(made, dict):
            events.append(made)  # the two solvers disagreed on this draft: re-draw
            reason = made["reason"]
        else:
            reason = made
    raise GenerationError(
        f"task {key.task_id} ({key.domain} {key.rows}x{key.cols} H={key.hidden_slots} "
        f"B={key.decoy_budget}): no certified task after {settings.attempts} draws "
        f"(last reason: {reason}); lower decoy_budget, min_resistant_share or min_depth, or raise "
        "max_attempts / resistance_attempts (solver.time_limit_s for time-outs)"
    )


def _attempt(
    key: TaskKey,
    settings: GenerationSettings,
    solver: SolverSettings,
    stats: RepairStats,
    attempt: int,
    start: float,
) -> CertifiedTask | dict[str, Any] | str:
    """Draw draft ``attempt`` and make it a task: the task, a disagreement event (the MILP
    contradicted CP-SAT), or why the draft was given up. A time-out raises
    :class:`SolverTimeout`."""
    draft = draw_draft(key, settings, attempt)
    stats.counterexamples = []  # completions of this draft only
    try:
        if not settle_bounds(draft, key.task_id, settings, solver, stats):
            return (
                f"min_resistant_share={settings.min_resistant_share} or "
                f"min_depth={settings.min_depth!r} not met, even with every bound loosened"
            )
        return _finish(draft, key, settings, solver, stats, attempt, start)
    except RepairFailed as error:
        return f"{type(error).__name__}: {error}"


def settle_bounds(
    draft: Draft, task_id: str, settings: GenerationSettings, solver: SolverSettings, stats: RepairStats
) -> bool:
    """Stages 4 and 4b on a drawn draft: make it unique, loosen a caged draft's windows again,
    meet ``min_resistant_share`` and ``min_depth`` (False when they cannot be met), and keep
    ``min_margin``; its bounds are final and placed. Raises :class:`RepairFailed` or
    :class:`SolverTimeout` (the draft is re-drawn)."""
    try:
        make_unique(draft, task_id, settings, solver, stats)
    except RepairFailed:
        # a caged ring that its windows cannot pin: one more window per cage, then repair on
        # (tasks that converge without it are drawn as before)
        if not (draft.cages and widen_cages(draft, settings)):
            raise
        place(draft)
        make_unique(draft, task_id, settings, solver, stats)
    if draft.cages and settings.cage_loosen:
        # every bound, one-sided ones too: repair's deep cuts left at the truth would put it at
        # the bound of a count or repeat cap far more often than other passing completions
        # (15x15: the truth at a count_min bound 0.79 against a null of 0.56 when only windows
        # were loosened)
        loosen(draft, task_id, settings, solver, list(range(len(draft.bounds))), to_drawn=True)
    if not loosen_for_resistance(draft, task_id, settings, solver):
        return False
    if settings.min_margin > 1:
        make_unique(draft, task_id, settings, solver, stats)
        # the margin narrows bounds after the targets were met: a draft it takes below them is
        # re-drawn (hostile round 9: min_margin=3 shipped fixpoint releases at one_round depth,
        # which verify then refused)
        return meets_targets(draft, task_id, settings)
    return True


def _finish(
    draft: Draft,
    key: TaskKey,
    settings: GenerationSettings,
    solver: SolverSettings,
    stats: RepairStats,
    attempt: int,
    start: float,
) -> CertifiedTask | dict[str, Any]:
    """Seal a unique draft (certify, measure, cross-check): the task, or the disagreement
    event when the MILP cross-check contradicts CP-SAT."""
    for cell in draft.hidden:
        draw_filtered(draft, cell, key.candidates_per_slot - 1 - len(draft.decoys.get(cell, [])))
    task = build_task(draft, key.task_id, key.decoy_budget, key.candidates_per_slot)
    answer = build_answer(draft, key.task_id)
    generate_ms = (time.perf_counter() - start) * 1000.0
    milp = settings.crosscheck_solver if settings.crosscheck else None
    # a caged draft's last counterexamples often show a one-unit distance to ambiguity, which
    # spares the measure's CP-SAT optimisation (the slowest part of a large task); other drafts
    # are measured as they always were, so their bytes do not change
    witnesses = stats.counterexamples[::-1] if draft.cages else ()
    sealed = seal(task, answer, solver, settings.dfs_node_limit, milp, witnesses=witnesses)
    if sealed.unknown:
        raise SolverTimeout(f"the final certificate hit the time limit: {sealed.certificate.failures[:2]}")
    if not sealed.certificate.ok:
        raise GenerationError(f"task {key.task_id}: final certificate failed: {sealed.certificate.failures}")
    if sealed.crosscheck is not None and not sealed.crosscheck.ok:
        return disagreement(task, answer, sealed.crosscheck, attempt, settings.settle_limit)
    certificate = replace(
        sealed.certificate,
        seed=key.seed,
        index=key.index,
        attempt=attempt,
        repair_rounds=stats.rounds,
        tightenings=stats.tightenings,
        cell_redraws=stats.cell_redraws,
    )
    return CertifiedTask(
        key, task, sealed.answer(answer, certificate), {"generate_ms": generate_ms, **sealed.timings}
    )


def settle(task: Task, answer: Answer, limit: int) -> dict[str, Any]:
    """A third opinion where it is cheap: enumerate every locally valid completion."""
    space = math.prod(len(locally_valid_candidates(task, slot)) for slot in task.slots)
    if space > limit:
        return {"method": "none", "reason": f"{space} completions exceed settle_limit={limit}"}
    found = list(enumerate_completions(task, limit=2))
    unique = found == [answer.truth_choice()]
    return {
        "method": "enumeration",
        "completions_examined": space,
        "truth_unique": unique,
        "right": SOLVER_NAME if unique else "milp",
    }


def disagreement(task: Task, answer: Answer, check: CrossCheck, attempt: int, limit: int) -> dict[str, Any]:
    """The build event of a CP-SAT / MILP disagreement on one draft (which is re-drawn)."""
    verdict = settle(task, answer, limit)
    if verdict.get("right") == "milp":
        verdict["right"] = check.solver
    return {
        "kind": "crosscheck_disagreement",
        "attempt": attempt,
        "reason": f"{check.solver} disagrees with {SOLVER_NAME}",
        "primary": {"solver": SOLVER_NAME, "version": SOLVER_VERSION, "unique": True},
        "secondary": {
            "solver": check.solver,
            "version": check.solver_version,
            "statuses": check.statuses,
            "most_decoys_used": check.most_decoys_used,
        },
        "settled": verdict,
    }

"""Stage 4b: difficulty that cheap reasoning does not remove (``min_resistant_share`` and
``min_depth``).

Propagation on the linear rules is legitimate reasoning, and it eliminates most decoys when
bounds sit close to the truth. When a unique draft leaves fewer than the asked share of its
decoys *resistant* (standing at the propagation fixpoint), or is decided by a rung of the
reasoning ladder below ``min_depth`` (``solvers.ladder``), its bounds are loosened one rule at
a time, in random order, each by as much as uniqueness allows: CP-SAT gives the smallest
loosening of that rule that admits a second completion, and the rule is loosened by
``min_margin`` less (a rule that no loosening can make ambiguous is loosened until it no longer
prunes anything). Only bounds move; the candidates stay exchangeable. A draft that still
falls short is re-drawn whole by the caller.
"""

from __future__ import annotations

from dataclasses import replace

from gridbench_core.task import GlobalRule, Task
from pipeline.generation.assemble import build_task, candidate_ids, truth_choice
from pipeline.generation.bounds import Bound, place, radius, separation, short_of, virtual_rules
from pipeline.generation.draft import Draft
from pipeline.generation.keys import GenerationSettings
from pipeline.generation.repair import virtual_task
from solvers.checker import locally_valid_candidates
from solvers.cpsat import CpSatModel
from solvers.ladder import ONE_ROUND, SEARCH, SLOT, reasoning_depth, rung_index
from solvers.propagation import decoy_resistance, linear_rows
from solvers.results import INFEASIBLE, UNKNOWN, SolverSettings


def qualifies(draft: Draft) -> bool:
    """``min_resistant_share`` and a ``min_depth`` beyond one round apply to tasks with at
    least two cells holding decoys (one such cell is always decided by one round)."""
    return sum(1 for ids in draft.decoys.values() if ids) >= 2


def depth_target(draft: Draft, settings: GenerationSettings) -> int:
    """The rung the draft must reach: ``min_depth``, capped at what its decoys allow (slot
    checks decide a task without decoys, one round a task with one cell holding them)."""
    return target_rung(sum(1 for ids in draft.decoys.values() if ids), settings.min_depth)


def target_rung(cells: int, min_depth: str) -> int:
    """``min_depth``'s rung, capped at what ``cells`` cells holding decoys allow (verify
    checks a release's tasks against it from their roles)."""
    return min(rung_index(min_depth), SLOT if cells == 0 else ONE_ROUND if cells == 1 else SEARCH)


def resistant_enough(resistant: int, decoys: int, share: float) -> bool:
    """Whether ``resistant`` of ``decoys`` decoys reach the share ``share``."""
    return resistant >= share * decoys - 1e-9


def _resistance(task: Task, draft: Draft) -> tuple[int, int]:
    result = decoy_resistance(task, {cell: list(ids) for cell, ids in draft.decoys.items()})
    return result.resistant, result.decoys


def _vacuous_units(task: Task, rule: GlobalRule) -> int:
    """How far ``rule`` must loosen before it can prune no option at all."""
    options = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
    single = Task(
        task.task_id, task.domain, task.rows, task.cols, 0, task.grid, task.items, task.slots, (rule,)
    )
    units = 0
    for row in linear_rows(single, options):
        if row.upper:
            extreme = row.constant + sum(max(c.values()) for c in row.coefficients.values())
            units = max(units, extreme - row.bound)
        else:
            extreme = row.constant + sum(min(c.values()) for c in row.coefficients.values())
            units = max(units, row.bound - extreme)
    return units


def _vacuous_top(task: Task, rules: list[GlobalRule]) -> int:
    """A radius at which ``rules`` prune nothing, read off the options alone: one more than the
    widest range a group's measure can span over the locally valid options (the visible cells
    add the same to both ends). It does not depend on the truth: a radius that stopped at the
    truth's own distance to the extreme totals, ``max(Tmax - T, T - Tmin) + 1``, told T to an
    agent that computes Tmax and Tmin (one of two values) whenever no completion narrowed it."""
    options = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
    single = Task(
        task.task_id, task.domain, task.rows, task.cols, 0, task.grid, task.items, task.slots, tuple(rules)
    )
    span = 0
    for row in linear_rows(single, options):
        span = max(span, sum(max(c.values()) - min(c.values()) for c in row.coefficients.values()))
    return span + 1


def _widest(
    model: CpSatModel,
    task: Task,
    draft: Draft,
    bound: Bound,
    margin: int,
    top: int | None,
    jitter: float = 0.0,
) -> int:
    """The widest radius ``bound`` can take, up to ``top`` (None: a radius at which it prunes
    nothing, :func:`_vacuous_top`),
    with the virtual task still unique (and ``margin`` - 1 units of room): from the top, each
    second completion CP-SAT finds narrows it just enough to exclude that completion, until
    none is left; a solve that reaches its time limit keeps the radius last proven. Leaves the
    bound at that radius, in the draft and in ``model`` (the virtual task's; ``task``: the
    virtual task, for its cells and items)."""
    start = radius(bound)
    if top is None:
        rules = virtual_rules(draft, bound)
        vacuous = start + max(_vacuous_units(task, rule) for rule in rules) + 1
        top = max(vacuous, _vacuous_top(task, rules))
    width = top
    while width > start:
        bound.radius = width
        for rule in virtual_rules(draft, bound):
            model.set_bound(rule.name, rule.bound)
        result = model.other_completion()
        if result.status == INFEASIBLE:
            if width < top and bound.window:  # a completion set this edge: a radius short of it
                bound.radius = max(start, short_of(draft, width, jitter))
                for rule in virtual_rules(draft, bound):
                    model.set_bound(rule.name, rule.bound)
            return bound.radius
        if result.status == UNKNOWN:
            break  # not proven: the radius stays where it was proven
        grid = [list(row) for row in draft.truth]
        for (row, col), item in (result.solution or {}).items():
            grid[row][col] = item
        narrower = separation(draft, bound, grid, margin)
        width = start if narrower is None else min(width - 1, narrower)
    bound.radius = start
    for rule in virtual_rules(draft, bound):
        model.set_bound(rule.name, rule.bound)
    return start


LOOSEN_LIMIT = 1.0  # deterministic time of one loosening solve; past it the radius stays proven


def loosen(
    draft: Draft,
    task_id: str,
    settings: GenerationSettings,
    solver: SolverSettings,
    indices: list[int],
    to_drawn: bool = False,
    jitter: float | None = None,
) -> None:
    """Loosen the bounds at ``indices`` of a unique ``draft``, in random order, each as far as
    the virtual task's uniqueness (with ``min_margin``) allows -- or, ``to_drawn``, at most
    back to the radius it was drawn with (a caged draft's repair cuts deep; this undoes what
    uniqueness did not need). Each solve stops at :data:`LOOSEN_LIMIT` units of deterministic
    time (the same on every machine); the shown rules are placed."""
    task = virtual_task(draft, task_id)
    limited = replace(
        solver, deterministic_limit=min(LOOSEN_LIMIT, solver.deterministic_limit or LOOSEN_LIMIT)
    )
    model = CpSatModel(task, limited, truth_choice(draft))
    jitter = settings.width_jitter if jitter is None else jitter
    for index in draft.rng.sample(indices, len(indices)):
        bound = draft.bounds[index]
        top = bound.drawn if to_drawn else None
        _widest(model, task, draft, bound, settings.min_margin, top, jitter)
    place(draft)


def loosen_for_resistance(
    draft: Draft, task_id: str, settings: GenerationSettings, solver: SolverSettings
) -> bool:
    """Loosen every bound of a unique ``draft``, in random order, as far as uniqueness (with
    ``min_margin``) allows, when the resistant share or the depth asks for more than one
    round; True when the shown task then meets them (the caller re-draws the task when not).
    Radii are decided on the virtual task alone and the shown task is judged once at the end,
    so the truth's position inside the windows stays uniform."""
    share = settings.min_resistant_share if qualifies(draft) else 0.0
    depth = depth_target(draft, settings)
    if share <= 0 and depth <= ONE_ROUND:
        return True  # a task with decoys is never decided by slot checks alone
    # radii short of their edges first (a width at the edge tells that a completion lies just
    # outside the truth's box: docs/difficulty.md); a task that needs the edges to meet its
    # share or depth gets them, from there, rather than a re-draw
    for jitter in dict.fromkeys((settings.width_jitter, 0.0)):
        loosen(draft, task_id, settings, solver, list(range(len(draft.bounds))), jitter=jitter)
        if meets_targets(draft, task_id, settings):
            return True
    return False


def meets_targets(draft: Draft, task_id: str, settings: GenerationSettings) -> bool:
    """Whether the shown task of ``draft`` keeps ``min_resistant_share`` and reaches
    ``min_depth`` (each as far as its cells holding decoys allow)."""
    share = settings.min_resistant_share if qualifies(draft) else 0.0
    depth = depth_target(draft, settings)
    if share <= 0 and depth <= ONE_ROUND:
        return True
    order = {cell: candidate_ids(draft, cell) for cell in draft.hidden}
    task = build_task(draft, task_id, 0, 0, order=order)
    return (share <= 0 or resistant_enough(*_resistance(task, draft), share)) and (
        depth <= ONE_ROUND or reasoning_depth(task).rung >= depth
    )

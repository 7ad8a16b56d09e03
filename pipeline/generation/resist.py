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

from core.task import GlobalRule, Task
from pipeline.generation.assemble import build_task, candidate_ids, truth_choice
from pipeline.generation.draft import Draft
from pipeline.generation.keys import GenerationSettings
from solvers.checker import locally_valid_candidates
from solvers.cpsat import CpSatModel
from solvers.ladder import ONE_ROUND, SEARCH, SLOT, reasoning_depth, rung_index
from solvers.propagation import decoy_resistance, linear_rows
from solvers.results import FEASIBLE, UNKNOWN, SolverSettings, SolverTimeout


def qualifies(draft: Draft) -> bool:
    """``min_resistant_share`` and a ``min_depth`` beyond one round apply to tasks with at
    least two cells holding decoys (one such cell is always decided by one round)."""
    return sum(1 for ids in draft.decoys.values() if ids) >= 2


def depth_target(draft: Draft, settings: GenerationSettings) -> int:
    """The rung the draft must reach: ``min_depth``, capped at what its decoys allow (slot
    checks decide a task without decoys, one round a task with one cell holding them)."""
    wanted = rung_index(settings.min_depth)
    cells = sum(1 for ids in draft.decoys.values() if ids)
    return min(wanted, SLOT if cells == 0 else ONE_ROUND if cells == 1 else SEARCH)


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


def loosen_for_resistance(
    draft: Draft, task_id: str, settings: GenerationSettings, solver: SolverSettings
) -> bool:
    """Loosen bounds of a unique ``draft`` until the resistant share and the depth are met;
    True when met."""
    share = settings.min_resistant_share if qualifies(draft) else 0.0
    depth = depth_target(draft, settings)
    if share <= 0 and depth <= ONE_ROUND:
        return True  # a task with decoys is never decided by slot checks alone

    def met(task: Task) -> bool:
        if share > 0 and not resistant_enough(*_resistance(task, draft), share):
            return False
        return depth <= ONE_ROUND or reasoning_depth(task).rung >= depth

    order = {cell: candidate_ids(draft, cell) for cell in draft.hidden}
    truth = truth_choice(draft)
    for index in draft.rng.sample(range(len(draft.rules)), len(draft.rules)):
        task = build_task(draft, task_id, 0, 0, order=order)
        if met(task):
            return True
        rule = draft.rules[index]
        result = CpSatModel(task, solver, truth).loosening_to_ambiguity(rule.name)
        if result.status == UNKNOWN:
            raise SolverTimeout(f"loosening solve for {rule.name} returned UNKNOWN")
        if result.status == FEASIBLE and result.objective is not None:
            units = result.objective - settings.min_margin
        else:
            units = _vacuous_units(task, rule)
        if units > 0:
            bound = rule.bound + units if rule.is_upper_bound else max(0, rule.bound - units)
            draft.rules[index] = rule.with_bound(bound)
    return met(build_task(draft, task_id, 0, 0, order=order))

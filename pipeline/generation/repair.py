"""Stage 4: make a draft unique. Ask CP-SAT for a second completion; when it finds one, tighten
one bound (toward the truth, never past it) just enough to exclude that counterexample, and
ask again, for a bounded number of rounds.

Repair never re-draws a single decoy: a decoy re-drawn because it was compatible with the
truth would be selected *against* the truth, and a classifier learns that selection
(measured: re-drawn windows make the truth's category the rarest of its cell). When no bound
can exclude a counterexample (it matches the truth on every rule), every cell it changes is re-drawn
*whole* -- all of its locally valid candidates afresh, the truth chosen uniformly among them
again -- and the rules are drawn anew from the new truth grid, so the candidates stay
exchangeable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.generation.assemble import build_task, candidate_ids, truth_choice
from pipeline.generation.candidates import draw_exchangeable
from pipeline.generation.constrain import draw_global_rules, truth_measures
from pipeline.generation.draft import Cell, Draft
from pipeline.generation.keys import GenerationSettings
from pipeline.generation.sample import sample_passing
from solvers.checker import rule_groups, rule_measure
from solvers.cpsat import CpSatModel
from solvers.results import INFEASIBLE, UNKNOWN, SolverSettings, SolverTimeout


@dataclass
class RepairStats:
    """What the repair of one draft did: rounds, bound tightenings and cell redraws."""

    rounds: int = 0
    tightenings: int = 0
    cell_redraws: int = 0
    counterexamples: list[dict[Cell, str]] = field(default_factory=list)  # newest last


class RepairFailed(RuntimeError):
    """Uniqueness could not be reached by tightening bounds (the draft is discarded)."""


def make_unique(
    draft: Draft, task_id: str, settings: GenerationSettings, solver: SolverSettings, stats: RepairStats
) -> None:
    """Tighten bounds of ``draft`` until CP-SAT proves the truth unique (and, when
    ``min_margin`` > 1, still unique after loosening any one bound by min_margin - 1)."""
    for _ in range(settings.max_repair_rounds + 1):
        order = {cell: candidate_ids(draft, cell) for cell in draft.hidden}
        truth = truth_choice(draft)
        model = CpSatModel(build_task(draft, task_id, 0, 0, order=order), solver, truth)
        result = model.other_completion()
        if result.status == UNKNOWN:
            raise SolverTimeout("uniqueness solve returned UNKNOWN (time limit)")
        counterexample = result.solution
        if result.status == INFEASIBLE:
            counterexample = _margin_counterexample(model, settings.min_margin)
            if counterexample is None:
                return
        if stats.rounds == settings.max_repair_rounds:
            break
        stats.rounds += 1
        stats.counterexamples.append(dict(counterexample))  # type: ignore[arg-type]
        if _tighten(draft, counterexample, settings.min_margin):  # type: ignore[arg-type]
            stats.tightenings += 1
            continue
        changed = [cell for cell in draft.hidden if counterexample[cell] != truth[cell]]  # type: ignore[index]
        stats.cell_redraws += len(changed)
        redraw_cells(draft, changed, settings)
    raise RepairFailed(f"still not unique after {settings.max_repair_rounds} repair rounds")


def redraw_cells(draft: Draft, cells: list[Cell], settings: GenerationSettings) -> None:
    """Re-draw every candidate of ``cells`` (the truth chosen uniformly again) and then the
    rules, whose bounds follow the truth grid. A caged draft keeps what repair has done so
    far: each bound moves by as much as the truth's measure moved (its distance from the truth
    stays), instead of being drawn anew; with many rules, drawing them all again would undo
    every tightening at each redraw (small drafts keep their bytes: they draw anew)."""
    before = [truth_measures(draft, rule) for rule in draft.rules] if draft.cages else []
    for cell in cells:
        for item_id in [draft.truth[cell[0]][cell[1]], *draft.decoys.get(cell, [])]:
            draft.drop_item(item_id)
        share = len(draft.decoys.get(cell, []))
        rules = draft.slot_rules[cell]
        draft.truth[cell[0]][cell[1]] = draft.new_item(sample_passing(draft.domain, rules, draft.rng))
        draw_exchangeable(draft, cell, share)
    if not draft.cages:
        draw_global_rules(draft, settings)
        return
    for index, (rule, old) in enumerate(zip(draft.rules, before, strict=True)):
        new = truth_measures(draft, rule)
        shift = max(new) - max(old) if rule.is_upper_bound else min(new) - min(old)
        draft.rules[index] = rule.with_bound(max(0, rule.bound + shift))


def _margin_counterexample(model: CpSatModel, margin: int) -> dict[Cell, str] | None:
    """A second completion that loosening one bound by less than ``margin`` lets through."""
    if margin <= 1:
        return None
    result = model.least_loosening_to_ambiguity()
    if result.status == UNKNOWN:
        raise SolverTimeout("margin solve returned UNKNOWN")
    if result.objective is not None and result.objective < margin:
        return result.solution
    return None


def _tighten(draft: Draft, counterexample: dict[Cell, str], margin: int) -> bool:
    """Move one bound toward the truth just enough to exclude the counterexample; the rule is
    drawn at random among those that can."""
    grid = [list(row) for row in draft.truth]
    for (row, col), item_id in counterexample.items():
        grid[row][col] = item_id
    for index in draft.rng.sample(range(len(draft.rules)), len(draft.rules)):
        rule = draft.rules[index]
        other = [
            rule_measure(rule, [draft.items[grid[r][c]] for r, c in group])
            for group in rule_groups(rule, draft.rows, draft.cols)
        ]
        truth = truth_measures(draft, rule)
        if rule.is_upper_bound and max(other) > max(truth):
            draft.rules[index] = rule.with_bound(max(max(truth), max(other) - margin))
            return True
        if not rule.is_upper_bound and min(other) < min(truth):
            draft.rules[index] = rule.with_bound(min(min(truth), min(other) + margin))
            return True
    return False

"""Stage 4a: make a draft unique. Ask CP-SAT for a second completion; when it finds one,
repair from that counterexample (re-draw an offending decoy, or tighten a bound the truth
still meets) and ask again, for a bounded number of rounds."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.assemble import build_task, candidate_ids, truth_choice
from pipeline.candidates import draw_decoy
from pipeline.constrain import truth_measures
from pipeline.draft import Cell, Draft
from pipeline.keys import GenerationSettings
from solvers.checker import rule_groups, rule_measure
from solvers.cpsat import CpSatModel
from solvers.results import INFEASIBLE, UNKNOWN, SolverSettings


@dataclass
class RepairStats:
    rounds: int = 0
    redraws: int = 0
    tightenings: int = 0


class RepairFailed(RuntimeError):
    """Uniqueness could not be reached within the round limit (the draft is discarded)."""


def make_unique(draft: Draft, task_id: str, settings: GenerationSettings,
                solver: SolverSettings, stats: RepairStats) -> None:  # fmt: skip
    """Repair ``draft`` in place until CP-SAT proves the truth unique (and, when
    ``min_margin`` > 1, still unique after loosening any one bound by min_margin - 1).

    One round models the draft once, then asks for a second completion again and again,
    banning the decoys of each counterexample (assumption literals, no rebuild) until none is
    left; the banned decoys are re-drawn and the next round checks the new ones. From round
    ``tighten_from_round`` on, a bound the truth still meets may be tightened instead.
    """
    truth = truth_choice(draft)
    for round_number in range(settings.max_repair_rounds + 1):
        order = {cell: candidate_ids(draft, cell) for cell in draft.hidden}
        model = CpSatModel(build_task(draft, task_id, 0, 0, order=order), solver, truth)
        banned, first = _collect_conflicts(model, draft)
        if first is None:
            first = _margin_counterexample(model, draft, settings.min_margin)
            if first is None:
                return
            banned = [_pick_changed(draft, first)]
        if round_number == settings.max_repair_rounds:
            break
        stats.rounds += 1
        if round_number >= settings.tighten_from_round and _tighten(draft, first,
                                                                    settings.min_margin):
            stats.tightenings += 1
            continue
        _redraw(draft, banned, settings, stats)
    raise RepairFailed(f"still not unique after {settings.max_repair_rounds} repair rounds")


def _collect_conflicts(model: CpSatModel,
                       draft: Draft) -> tuple[list[tuple[Cell, str]], dict[Cell, str] | None]:
    """Ban decoys until no second completion is left; returns (banned, first counterexample)."""
    banned: list[tuple[Cell, str]] = []
    first = None
    while True:
        literals = [model.choice[cell][item_id].Not() for cell, item_id in banned]
        result = model.solve([model.forbid_truth, *literals])
        if result.status == UNKNOWN:
            raise RepairFailed("uniqueness solve returned UNKNOWN (time limit)")
        if result.status == INFEASIBLE:
            return banned, first
        first = first or result.solution
        banned.extend(_changed(draft, result.solution))  # type: ignore[arg-type]


def _changed(draft: Draft, counterexample: dict[Cell, str]) -> list[tuple[Cell, str]]:
    return [(cell, counterexample[cell]) for cell in draft.hidden
            if counterexample[cell] != draft.truth[cell[0]][cell[1]]]  # fmt: skip


def _pick_changed(draft: Draft, counterexample: dict[Cell, str]) -> tuple[Cell, str]:
    return draft.rng.choice(_changed(draft, counterexample))


def _redraw(draft: Draft, banned: list[tuple[Cell, str]], settings: GenerationSettings,
            stats: RepairStats) -> None:  # fmt: skip
    want_deep = settings.prefer_deep_decoys and len(draft.hidden) >= 2
    for cell, old in banned:
        draft.decoys[cell].remove(old)
        draft.drop_item(old)
        pushes = draft.redraws[cell] = draft.redraws.get(cell, 0) + 1
        if draw_decoy(draft, cell, want_deep, settings.temptation, pushes) is None:
            raise RepairFailed(f"cell {cell} can no longer host a decoy")
        stats.redraws += 1


def _margin_counterexample(model: CpSatModel, draft: Draft, margin: int) -> dict[Cell, str] | None:
    if margin <= 1:
        return None
    for rule in draft.rules:
        result = model.loosening_to_ambiguity(rule.name)
        if result.status == UNKNOWN:
            raise RepairFailed(f"margin solve for {rule.name} returned UNKNOWN")
        if result.objective is not None and result.objective < margin:
            return result.solution
    return None


def _tighten(draft: Draft, counterexample: dict[Cell, str], margin: int) -> bool:
    """Move one bound toward the truth just enough to exclude the counterexample."""
    grid = [list(row) for row in draft.truth]
    for (row, col), item_id in counterexample.items():
        grid[row][col] = item_id
    for index in draft.rng.sample(range(len(draft.rules)), len(draft.rules)):
        rule = draft.rules[index]
        other = [rule_measure(rule, [draft.items[grid[r][c]] for r, c in group])
                 for group in rule_groups(rule, draft.rows, draft.cols)]  # fmt: skip
        truth = truth_measures(draft, rule)
        if rule.is_upper_bound and max(other) > max(truth):
            draft.rules[index] = rule.with_bound(max(max(truth), max(other) - margin))
            return True
        if not rule.is_upper_bound and min(other) < min(truth):
            draft.rules[index] = rule.with_bound(min(min(truth), min(other) + margin))
            return True
    return False

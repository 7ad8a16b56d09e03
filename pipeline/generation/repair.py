"""Stage 4: make a draft unique. Ask CP-SAT for a second completion of the *virtual* task
(:mod:`pipeline.generation.bounds`: every bound symmetric around the truth); when it finds
one, narrow one bound's radius just enough to exclude that counterexample, and ask again, for
a bounded number of rounds. The bound is drawn at random among the windows that can exclude
it, and among the one-sided rules only when no window can (a tight one-sided bound would sit
near the truth). The shown task, each bound of which lies inside its virtual one, is then
unique too.

Repair never re-draws a single decoy: a decoy re-drawn because it was compatible with the
truth would be selected *against* the truth, and a classifier learns that selection
(measured: re-drawn windows make the truth's category the rarest of its cell). When no bound
can exclude a counterexample (it meets every bound as well as the truth does), every cell it
changes is re-drawn *whole* -- all of its locally valid candidates afresh, the truth chosen
uniformly among them again -- and the bounds, which follow the truth, keep their radii.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gridbench_core.task import Task
from pipeline.generation.assemble import build_task, candidate_ids, truth_choice
from pipeline.generation.bounds import place, radius, separation, short_of, virtual, virtual_rules
from pipeline.generation.candidates import draw_exchangeable
from pipeline.generation.draft import Cell, Draft
from pipeline.generation.keys import GenerationSettings
from pipeline.generation.sample import sample_passing
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


def virtual_task(draft: Draft, task_id: str, order: dict[Cell, list[str]] | None = None) -> Task:
    """The virtual task of ``draft`` (its bounds symmetric around the truth)."""
    order = order if order is not None else {cell: candidate_ids(draft, cell) for cell in draft.hidden}
    shown = build_task(draft, task_id, 0, 0, order=order)
    return replace(shown, global_constraints=tuple(virtual(draft)), instruction="")


def make_unique(
    draft: Draft, task_id: str, settings: GenerationSettings, solver: SolverSettings, stats: RepairStats
) -> None:
    """Narrow bounds of ``draft`` until CP-SAT proves its virtual task unique with
    ``min_margin`` - 1 units of room on every bound; the shown rules are placed again. The
    rounds allowed are ``max_repair_rounds`` plus two per bound (:func:`round_budget`)."""
    budget = round_budget(draft, settings)
    model: CpSatModel | None = None  # built anew only when cells are re-drawn
    used = 0  # this call's rounds (stats counts every call's)
    for _ in range(budget + 1):
        truth = truth_choice(draft)
        if model is None:
            model = CpSatModel(virtual_task(draft, task_id), solver, truth)
        result = model.other_completion()
        if result.status == UNKNOWN:
            raise SolverTimeout("uniqueness solve returned UNKNOWN (time limit)")
        counterexample: dict[Cell, str]
        if result.status == INFEASIBLE:
            found = _margin_counterexample(model, settings.min_margin)
            if found is None:
                place(draft)
                return
            counterexample = found
        else:
            counterexample = dict(result.solution or {})  # FEASIBLE: a completion
        if used >= budget:
            break
        used += 1
        stats.rounds += 1
        stats.counterexamples.append(dict(counterexample))
        index = tighten(draft, counterexample, settings.min_margin, settings.width_jitter)
        if index is not None:
            stats.tightenings += 1
            for rule in virtual_rules(draft, draft.bounds[index]):
                model.set_bound(rule.name, rule.bound)
            continue
        changed = [cell for cell in draft.hidden if counterexample[cell] != truth[cell]]
        stats.cell_redraws += len(changed)
        redraw_cells(draft, changed)
        model = None
    place(draft)
    raise RepairFailed(f"still not unique after {budget} repair rounds")


def round_budget(draft: Draft, settings: GenerationSettings) -> int:
    """Repair rounds allowed for ``draft``: ``max_repair_rounds`` plus two per bound (a round
    narrows one bound; a caged 20x20 task has some fifty of them and needs as many rounds)."""
    return settings.max_repair_rounds + 2 * len(draft.bounds)


def redraw_cells(draft: Draft, cells: list[Cell]) -> None:
    """Re-draw every candidate of ``cells`` (the truth chosen uniformly again). The bounds
    follow the new truth grid with the radii repair has given them."""
    for cell in cells:
        for item_id in [draft.truth[cell[0]][cell[1]], *draft.decoys.get(cell, [])]:
            draft.drop_item(item_id)
        share = len(draft.decoys.get(cell, []))
        rules = draft.slot_rules[cell]
        draft.truth[cell[0]][cell[1]] = draft.new_item(sample_passing(draft.domain, rules, draft.rng))
        draw_exchangeable(draft, cell, share)
    place(draft)


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


def tighten(draft: Draft, counterexample: dict[Cell, str], margin: int, jitter: float = 0.0) -> int | None:
    """Narrow one window's radius just enough to exclude the counterexample (among those that
    can: :func:`_least_cut`, or :func:`_deepest_cut` on a caged draft); the index of the bound
    narrowed, None when no window can (repair then re-draws the cells the counterexample
    changed). A one-sided bound is never narrowed: it can only cut a completion that is worse
    than the truth in its own direction, so narrowing it selects truths that are better than
    their decoys there (10x10 travel: the truth a museum or outdoor activity, the categories of
    its two count minimums, in 44% of cells against 34% of the options); a window cuts on
    either side, and a re-draw is symmetric."""
    grid = [list(row) for row in draft.truth]
    for (row, col), item_id in counterexample.items():
        grid[row][col] = item_id
    found = []
    for index, bound in enumerate(draft.bounds):
        if not bound.window:
            continue
        width = separation(draft, bound, grid, margin)
        if width is not None and width < radius(bound):  # its virtual bound lets it through
            found.append((index, width))
    if not found:
        return None
    # a caged draft has too many completions for cuts that spare every bound: the deepest cut
    # converges fastest (its windows are loosened again once it is unique: build.py); a small
    # draft keeps its bounds as loose as it can
    index, width = _deepest_cut(draft, found) if draft.cages else _least_cut(draft, found)
    draft.bounds[index].radius = short_of(draft, width, jitter)  # not pinned at the edge
    return index


def _deepest_cut(draft: Draft, candidates: list[tuple[int, int]]) -> tuple[int, int]:
    """The bound whose narrowing keeps the smallest share of its radius (ties at random)."""
    kept = [(width + 1) / (radius(draft.bounds[index]) + 1) for index, width in candidates]
    best = min(kept)
    tied = [pair for pair, share in zip(candidates, kept, strict=True) if share <= best + 1e-12]
    return tied[draft.rng.randrange(len(tied))]


def _least_cut(draft: Draft, candidates: list[tuple[int, int]]) -> tuple[int, int]:
    """The bound whose narrowing keeps the largest share of its radius (ties at random): the
    cuts spread over many bounds instead of pinning a few."""
    kept = [(width + 1) / (radius(draft.bounds[index]) + 1) for index, width in candidates]
    best = max(kept)
    tied = [pair for pair, share in zip(candidates, kept, strict=True) if share >= best - 1e-12]
    return tied[draft.rng.randrange(len(tied))]

"""Large decoy budgets: regions ("cages") of decoy cells with their own windows.

With many exchangeable decoys the domain's few grid-wide sums cannot make the truth unique:
combinations of swaps cancel on every rule. A key whose decoys allow more than about
``2**cage_bits`` completions therefore groups its decoy-holding cells, at random, into cages
of about ``cage_cells`` cells, and states for every cage a window (``sum_min`` and
``sum_max`` with ``scope: "cells"``, task format 2) on each of its domain's numeric
attributes, drawn like every other rule from the truth grid with a random slack. Each cage is
a small puzzle of its own: the windows together pin its cells, while each one alone leaves
many options standing (interval propagation settles little; probing or search is needed).

Nothing is changed to make the truth grid regular: the visible cells, the candidates and the
truth are drawn exactly as for small budgets (the truth uniformly among its cell's locally
valid candidates), so the bounds are the only thing that tells the truth apart, and each
cage's bound is a random draw from its own cells.
"""

from __future__ import annotations

import math

from core.task import GlobalRule
from core.vocabulary import RuleKind, Scope
from domains import NumericAttribute
from pipeline.generation.draft import Cell, Draft
from solvers.checker import rule_measure


def draw_cages(draft: Draft, size: int, free_bits: float = 0.0) -> list[tuple[Cell, ...]]:
    """Cells holding decoys, fewest decoys first (ties in random order); the first of them,
    whose completions number at most about ``2**free_bits``, stay free (bound by the grid-wide
    rules only, as in a small task: as many as fit, so that the free part is as hard as a small
    task can be made); the rest are dealt at random into round(n / size) cages (at least one;
    sizes differ by at most one), each sorted; cages in order of their first cell."""
    cells = sorted(cell for cell, ids in draft.decoys.items() if ids)
    draft.rng.shuffle(cells)
    cells.sort(key=lambda cell: len(draft.decoys[cell]))  # stable: the shuffle breaks ties
    bits = 0.0
    while cells and bits + math.log2(1 + len(draft.decoys[cells[0]])) <= free_bits:
        bits += math.log2(1 + len(draft.decoys[cells.pop(0)]))
    if not cells:
        return []
    draft.rng.shuffle(cells)
    count = max(1, round(len(cells) / size))
    cages = [sorted(cells[k::count]) for k in range(count)]
    return sorted(tuple(cage) for cage in cages)


def cage_attributes(draft: Draft) -> list[str]:
    """The attributes every cage bounds: each numeric attribute of the domain."""
    return [a.name for a in draft.domain.attributes if isinstance(a, NumericAttribute)]


def cage_rules(draft: Draft, slack_share: float) -> list[GlobalRule]:
    """Both sides of a window on every cage attribute, per cage: bound = the truth's total in
    the cage -/+ a random slack of up to ``slack_share`` of one item's range."""
    rules = []
    for number, cage in enumerate(draft.cages, 1):
        for attribute in cage_attributes(draft):
            numeric = draft.domain.numeric(attribute)
            probe = GlobalRule("", RuleKind.SUM_MIN, attribute, 0, Scope.CELLS, cells=cage)
            total = rule_measure(probe, [draft.truth_record(cell) for cell in cage])
            top = int((numeric.high - numeric.low) * slack_share)
            low = max(0, total - draft.rng.randint(0, max(0, top)))
            high = total + draft.rng.randint(0, max(0, top))
            name = f"region_{number}_{attribute}"
            rules.append(GlobalRule(f"{name}_min", RuleKind.SUM_MIN, attribute, low, Scope.CELLS, cells=cage))
            rules.append(
                GlobalRule(f"{name}_max", RuleKind.SUM_MAX, attribute, high, Scope.CELLS, cells=cage)
            )
    return rules

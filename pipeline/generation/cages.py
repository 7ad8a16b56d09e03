"""Large decoy budgets: regions ("cages") of decoy cells that need each other.

With many exchangeable decoys the domain's few grid-wide sums cannot make the truth unique:
combinations of swaps cancel on every rule. A key whose decoys allow more than about
``2**cage_bits`` completions therefore lays its decoy-holding cells (beyond a free part as
hard as a small task) on a random **ring**, and every run of ``cage_cells`` consecutive cells
of the ring is a cage: as many cages as caged cells, each cell in ``cage_cells`` of them
(three by default), consecutive cages sharing all but one cell, the last ones closing the
ring. Each cage gets a window (``sum_min`` and ``sum_max``, ``scope: "cells"``, task
format 2) on ``cage_attributes`` of its domain's wide numeric attributes, chosen at random, with an
initial radius of ``cage_spread`` standard deviations of the cage's total. Repair cuts deep to
converge, and the windows are then loosened back toward that radius as far as uniqueness
allows. A cage's own window leaves many combinations of its cells standing; the windows of
the cages it overlaps, and the grid's rules, decide between them (a Kakuro-like ring:
reasoning has to go round it).

Nothing is changed to make the truth grid regular: the visible cells, the candidates and the
truth are drawn exactly as for small budgets, and the windows are placed like every other
window (:mod:`pipeline.generation.bounds`), the truth at a uniform position inside them.
"""

from __future__ import annotations

import math

from core.task import GlobalRule
from core.vocabulary import RuleKind, Scope
from domains import NumericAttribute
from pipeline.generation.bounds import Bound, spread
from pipeline.generation.draft import Cell, Draft
from pipeline.generation.keys import GenerationSettings


def _free_and_caged(draft: Draft, free_bits: float) -> tuple[list[Cell], list[Cell]]:
    """Cells holding decoys, fewest decoys first (ties in random order): the first of them,
    whose completions number at most about ``2**free_bits``, stay free; the rest are caged."""
    cells = sorted(cell for cell, ids in draft.decoys.items() if ids)
    draft.rng.shuffle(cells)
    cells.sort(key=lambda cell: len(draft.decoys[cell]))  # stable: the shuffle breaks ties
    free, bits = [], 0.0
    while cells and bits + math.log2(1 + len(draft.decoys[cells[0]])) <= free_bits:
        bits += math.log2(1 + len(draft.decoys[cells[0]]))
        free.append(cells.pop(0))
    return free, cells


def draw_cages(draft: Draft, size: int, free_bits: float = 0.0) -> list[tuple[Cell, ...]]:
    """The cages of ``draft`` (see the module's docstring): each sorted, in order of their
    first cell. A lone caged cell takes the last free one with it (a cage of one cell would be
    a slot rule in disguise)."""
    free, caged = _free_and_caged(draft, free_bits)
    if len(caged) == 1 and free:
        caged.append(free[-1])
    if len(caged) < 2:
        return []
    draft.rng.shuffle(caged)
    if len(caged) <= size:
        return [tuple(sorted(caged))]
    found = {
        tuple(sorted(caged[(start + j) % len(caged)] for j in range(size))) for start in range(len(caged))
    }
    return sorted(found)


WIDE = 10  # a cage's window is on an attribute whose natural range spans at least this many units


def cage_attributes(draft: Draft, count: int) -> list[str]:
    """``count`` of the domain's numeric attributes, at random among the wide ones (a range of
    at least :data:`WIDE` units; the widest when there are too few), in the domain's order. A
    pair of cells summing a narrow attribute (1-5) ties too often for windows to tell its
    combinations apart, and repair cannot converge on such cages."""
    numeric = [a for a in draft.domain.attributes if isinstance(a, NumericAttribute)]
    wide = [a.name for a in numeric if a.high - a.low >= WIDE]
    if len(wide) < count:
        wide = [a.name for a in sorted(numeric, key=lambda a: a.low - a.high)[: max(count, len(wide))]]
    chosen = set(draft.rng.sample(wide, min(count, len(wide))))
    return [a.name for a in numeric if a.name in chosen]


def cage_bounds(draft: Draft, settings: GenerationSettings) -> list[Bound]:
    """A window per cage and chosen attribute: ``region_<n>_<attribute>_min`` and ``_max``."""
    bounds = []
    for number, cage in enumerate(draft.cages, 1):
        for attribute in cage_attributes(draft, settings.cage_attributes):
            name = f"region_{number}_{attribute}"
            rules = (
                GlobalRule(f"{name}_min", RuleKind.SUM_MIN, attribute, 0, Scope.CELLS, cells=cage),
                GlobalRule(f"{name}_max", RuleKind.SUM_MAX, attribute, 0, Scope.CELLS, cells=cage),
            )
            top = math.ceil(settings.cage_spread * spread(draft, rules[0]) - 1e-9)
            bounds.append(Bound(rules, max(0, top), draft.rng.random()))
    return bounds

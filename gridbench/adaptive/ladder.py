"""The difficulty ladder an adaptive source climbs: each rung a grid, H, B and the lowest
reasoning rung that may decide its tasks (``GenerationSettings.min_depth``).

A ladder is ordered easiest first; the source moves one step up or down it. The default is
the paper's 5x7 preset walked along its diagonal, from one hidden cell without decoys to its
hardest cell (H = 21, B = 25), with the ladder's depth demand rising alongside;
:func:`ladder` builds others (any grid, H, B and depth lists), and a ladder may change grid size
from one rung to the next.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gridbench_core.errors import UserError
from solvers.ladder import RUNGS

MAX_LEVELS = 1_000

# The paper's 5x7 preset, walked along its diagonal (docs/difficulty.md has the depth counts
# per B that the min_depth column follows: at B >= 15 most tasks already need probing).
DEFAULT_5X7: tuple[tuple[int, int, str], ...] = (
    (1, 0, "slot"),
    (5, 2, "one_round"),
    (7, 4, "one_round"),
    (11, 8, "fixpoint"),
    (11, 10, "fixpoint"),
    (15, 15, "fixpoint"),
    (15, 19, "probing"),
    (21, 21, "probing"),
    (21, 25, "probing"),
)


@dataclass(frozen=True)
class Difficulty:
    """One rung of the ladder: the grid, H hidden cells, decoy budget B, and ``min_depth``, the
    lowest rung of the reasoning ladder allowed to decide a task (``slot``: no demand)."""

    rows: int
    cols: int
    hidden_slots: int
    decoy_budget: int
    min_depth: str = "slot"

    @property
    def name(self) -> str:
        """``5x7 H=21 B=25 probing``."""
        return f"{self.rows}x{self.cols} H={self.hidden_slots} B={self.decoy_budget} {self.min_depth}"

    def to_dict(self) -> dict[str, Any]:
        """The rung as config data (``grid``, ``hidden_slots``, ``decoy_budget``, ``min_depth``)."""
        return {
            "grid": f"{self.rows}x{self.cols}",
            "hidden_slots": self.hidden_slots,
            "decoy_budget": self.decoy_budget,
            "min_depth": self.min_depth,
        }


def _int(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UserError(f"{name}={repr(value)[:40]}: need a whole number in {low}..{high}")
    return value


def _grid(value: Any, name: str) -> tuple[int, int]:
    from pipeline.generation.validate import MAX_SIDE

    if isinstance(value, str) and value.lower().count("x") == 1:
        left, right = value.lower().split("x")
        if left.strip().isdigit() and right.strip().isdigit() and len(value) <= 12:
            rows, cols = int(left), int(right)
            if 1 <= rows <= MAX_SIDE and 1 <= cols <= MAX_SIDE:
                return rows, cols
    raise UserError(f"{name}={repr(value)[:40]}: write ROWSxCOLS, e.g. '5x7' (sides 1..{MAX_SIDE})")


def difficulty_of(data: Any, name: str = "ladder[0]") -> Difficulty:
    """A rung from config data: a :class:`Difficulty`, or a mapping with ``grid`` (``5x7``),
    ``hidden_slots``, ``decoy_budget`` and optionally ``min_depth``; one line naming the
    field otherwise."""
    if isinstance(data, Difficulty):
        data = data.to_dict()
    if not isinstance(data, Mapping):
        raise UserError(f"{name}: give a mapping with grid, hidden_slots, decoy_budget[, min_depth]")
    unknown = sorted(set(map(str, data)) - {"grid", "hidden_slots", "decoy_budget", "min_depth"})
    if unknown:
        raise UserError(
            f"{name}.{unknown[0]}: unknown field; use grid, hidden_slots, decoy_budget, min_depth"
        )
    for field in ("grid", "hidden_slots", "decoy_budget"):
        if field not in data:
            raise UserError(f"{name}.{field}: missing")
    rows, cols = _grid(data["grid"], f"{name}.grid")
    hidden = _int(data["hidden_slots"], f"{name}.hidden_slots", 1, rows * cols)
    budget = _int(data["decoy_budget"], f"{name}.decoy_budget", 0, 10_000)
    depth = data.get("min_depth", "slot")
    if depth not in RUNGS:
        raise UserError(f"{name}.min_depth={repr(depth)[:40]}: use one of {list(RUNGS)}")
    return Difficulty(rows, cols, hidden, budget, depth)


def ladder_of(levels: Any) -> tuple[Difficulty, ...]:
    """A ladder from config data (a list of rungs, easiest first), each rung checked."""
    if levels is None:
        return default_ladder()
    if isinstance(levels, str | bytes | Mapping) or not isinstance(levels, Sequence):
        raise UserError("ladder: give a list of rungs ({grid, hidden_slots, decoy_budget, min_depth})")
    if not 1 <= len(levels) <= MAX_LEVELS:
        raise UserError(f"ladder: {len(levels)} rungs; give 1..{MAX_LEVELS}")
    return tuple(difficulty_of(level, f"ladder[{i}]") for i, level in enumerate(levels))


def ladder(
    grid: str = "5x7",
    hidden_slots: Iterable[int] = (1, 5, 7, 11, 11, 15, 15, 21, 21),
    decoy_budgets: Iterable[int] = (0, 2, 4, 8, 10, 15, 19, 21, 25),
    min_depths: Iterable[str] | None = None,
) -> tuple[Difficulty, ...]:
    """A ladder on one grid: rung ``i`` has ``hidden_slots[i]``, ``decoy_budgets[i]`` and
    ``min_depths[i]`` (default: ``slot`` everywhere). The lists must be as long as each other."""
    hs, bs = list(hidden_slots), list(decoy_budgets)
    depths = ["slot"] * len(hs) if min_depths is None else list(min_depths)
    if not len(hs) == len(bs) == len(depths):
        raise UserError(
            f"ladder: hidden_slots ({len(hs)}), decoy_budgets ({len(bs)}) and min_depths "
            f"({len(depths)}) need one value per rung each"
        )
    return ladder_of(
        [
            {"grid": grid, "hidden_slots": h, "decoy_budget": b, "min_depth": d}
            for h, b, d in zip(hs, bs, depths, strict=True)
        ]
    )


def default_ladder() -> tuple[Difficulty, ...]:
    """The paper's 5x7 preset along its diagonal, from H = 1, B = 0 to H = 21, B = 25 (its
    hardest cell), the depth demand rising from ``slot`` to ``probing``."""
    return tuple(Difficulty(5, 7, h, b, d) for h, b, d in DEFAULT_5X7)


__all__ = ["Difficulty", "default_ladder", "difficulty_of", "ladder", "ladder_of"]

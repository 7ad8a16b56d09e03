"""Episode settings: query and check budgets (unlimited, a number, or the paper's formula)
and tool failure injection."""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.errors import UserError

UNLIMITED = -1
MAX_ALPHA = 1_000_000.0  # check_alpha: global checks per hidden cell (the paper's is 1.0)
MAX_COUNT = 10**9  # a budget, an extra or a step limit: more than any episode can spend
MAX_SEED = 2**63 - 1  # an episode seed, like a release seed: 0..2**63-1


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class EnvSettings:
    """The budgets, tool failure injection and step limit of an episode."""

    query_budget: str | int = "unlimited"  # "unlimited" | int | "paper" (cell rules + H + extra)
    query_extra: int = 0
    check_budget: str | int = "unlimited"  # "unlimited" | int | "paper" (floor(alpha * H))
    check_alpha: float = 1.0
    failure_rate: float = 0.0
    seed: int = 0
    max_steps: int = 1_000_000

    def validate(self) -> None:
        """Raise :class:`UserError` naming the first invalid setting (a NaN or an infinity
        included: no budget or rate is meaningful there)."""
        for name in ("query_budget", "check_budget"):
            value = getattr(self, name)
            if not (value in ("unlimited", "paper") or (_whole(value) and 0 <= value <= MAX_COUNT)):
                shown = str(value)[:40] if _whole(value) else repr(str(value)[:40])  # -1 as -1, "x" as 'x'
                raise UserError(f"{name}={shown}: use 'unlimited', 'paper' or an integer in 0..{MAX_COUNT}")
        for name in ("failure_rate", "check_alpha"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise UserError(f"{name}={str(value)[:40]}: must be a finite number")
        if not 0.0 <= self.failure_rate < 1.0:
            raise UserError(f"failure_rate={self.failure_rate} must be in [0, 1)")
        if not 0.0 <= self.check_alpha <= MAX_ALPHA:
            raise UserError(f"check_alpha={self.check_alpha} must be in [0, {MAX_ALPHA:g}]")
        for name, low, high in (
            ("query_extra", 0, MAX_COUNT),
            ("max_steps", 1, MAX_COUNT),
            ("seed", 0, MAX_SEED),
        ):
            value = getattr(self, name)
            if not _whole(value) or not low <= value <= high:
                raise UserError(f"{name}={str(value)[:40]} must be a whole number in {low}..{high}")

    def queries_for(self, cell_rules: int, hidden: int) -> int:
        """The query budget of a hidden cell with ``cell_rules`` slot rules, or ``UNLIMITED``."""
        if self.query_budget == "unlimited":
            return UNLIMITED
        if self.query_budget == "paper":
            return cell_rules + hidden + self.query_extra
        return int(self.query_budget)

    def checks_for(self, hidden: int) -> int:
        """The global check budget of an episode with ``hidden`` hidden cells, or ``UNLIMITED``."""
        if self.check_budget == "unlimited":
            return UNLIMITED
        if self.check_budget == "paper":
            return int(self.check_alpha * hidden)
        return int(self.check_budget)

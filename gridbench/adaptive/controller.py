"""The rule that moves an adaptive source up and down its ladder, as a small state machine
of plain data (so that it is saved, restored and replayed exactly).

The controller keeps the rewards of the tasks handed out at the current rung (a task of
another rung, reported after a move, is counted in that rung's totals and otherwise
ignored). Once ``window`` of them are in, it looks at their mean after every report: at or
above ``target + band`` it climbs one rung, at or below ``target - band`` it steps down one,
and either way it starts a new window; in between it slides the window on. With a policy whose
success falls as the ladder rises, it settles where recent success is within ``band`` of
``target`` (a staircase: RLVE's adaptive environments and reasoning-gym's curricula work alike).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gridbench_core.errors import UserError


@dataclass(frozen=True)
class ControllerSettings:
    """``target`` success, the dead ``band`` around it, the ``window`` of rewards a decision
    reads, and the rung the source starts at."""

    target: float = 0.5
    band: float = 0.15
    window: int = 16
    start: int = 0

    def validate(self, levels: int) -> None:
        """One line naming the first setting out of range."""
        for name in ("target", "band"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise UserError(f"{name}={repr(value)[:40]}: need a number between 0 and 1")
        if (
            isinstance(self.window, bool)
            or not isinstance(self.window, int)
            or not 1 <= self.window <= 100_000
        ):
            raise UserError(f"window={repr(self.window)[:40]}: need a whole number of rewards in 1..100000")
        if isinstance(self.start, bool) or not isinstance(self.start, int) or not 0 <= self.start < levels:
            raise UserError(f"start={repr(self.start)[:40]}: need a rung of the ladder, 0..{levels - 1}")


@dataclass
class Controller:
    """Where the source is on its ladder, and the rewards that decide where it goes next."""

    settings: ControllerSettings
    levels: int
    level: int = 0
    recent: deque[float] = field(default_factory=deque)
    moves: list[tuple[int, int, int]] = field(default_factory=list)  # (report number, from, to)
    reports: int = 0
    totals: dict[int, list[float]] = field(default_factory=dict)  # rung -> [rewards, sum]

    def __post_init__(self) -> None:
        self.settings.validate(self.levels)
        if not self.moves and not self.reports:
            self.level = self.settings.start
        self.recent = deque(self.recent, maxlen=self.settings.window)

    def report(self, level: int, reward: float) -> int:
        """Take the reward of a task handed out at ``level``; returns the rung to hand out next."""
        if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
            raise UserError(f"reward={repr(reward)[:40]}: need a finite number between 0 and 1")
        if not 0.0 <= reward <= 1.0:
            raise UserError(f"reward={reward!r}: need a number between 0 and 1 (gridbench's rewards)")
        self.reports += 1
        count, total = self.totals.get(level, [0, 0.0])
        self.totals[level] = [count + 1, total + float(reward)]
        if level != self.level:
            return self.level
        self.recent.append(float(reward))
        if len(self.recent) < self.settings.window:
            return self.level
        mean = sum(self.recent) / len(self.recent)
        step = 0
        if mean >= self.settings.target + self.settings.band and self.level + 1 < self.levels:
            step = 1
        elif mean <= self.settings.target - self.settings.band and self.level > 0:
            step = -1
        if step:
            self.moves.append((self.reports, self.level, self.level + step))
            self.level += step
            self.recent.clear()
        return self.level

    def recent_success(self) -> float | None:
        """The mean of the current window (None before any reward at this rung)."""
        return sum(self.recent) / len(self.recent) if self.recent else None

    def state(self) -> dict[str, Any]:
        """Plain data that :meth:`from_state` turns back into this controller."""
        return {
            "level": self.level,
            "recent": list(self.recent),
            "moves": [list(move) for move in self.moves],
            "reports": self.reports,
            "totals": {str(k): list(v) for k, v in sorted(self.totals.items())},
        }

    @classmethod
    def from_state(cls, settings: ControllerSettings, levels: int, state: Any) -> Controller:
        """The controller a :meth:`state` describes; a damaged state is one line."""
        try:
            level, reports = int(state["level"]), int(state["reports"])
            recent = [float(r) for r in state["recent"]]
            moves = [(int(a), int(b), int(c)) for a, b, c in state["moves"]]
            totals = {int(k): [int(v[0]), float(v[1])] for k, v in dict(state["totals"]).items()}
        except (KeyError, TypeError, ValueError):
            raise UserError(
                "adaptive state: the controller's part is damaged (level, recent, moves)"
            ) from None
        if not 0 <= level < levels or len(recent) > settings.window:
            raise UserError(f"adaptive state: rung {level} or its window does not fit this ladder")
        return cls(settings, levels, level, deque(recent), moves, reports, totals)


__all__ = ["Controller", "ControllerSettings"]

"""Rule-free policies that read the visible cells and the candidates, never a rule: per cell
(how an option compares with the visible cells of its row, column and grid) and *joint* (the
options of a whole row, column or grid chosen together, so that the completed grid has some
regularity: equal row totals, equal column totals, hidden cells that look like the visible
ones, few repeated categories). A generator that makes the truth grid more regular than a
random draw (every row with one total, say) is read off by one of them.

Joint policies pick by coordinate descent: every cell with several options starts at the
option nearest its options' mean, then cells are revisited in order, each taking the option
that lowers the objective most given the others, until a sweep changes nothing (at most
``SWEEPS`` sweeps). Deterministic: ties go to the smaller id.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from domains import CategoricalAttribute, NumericAttribute, get_domain
from gridbench_core.task import Task
from solvers.checker import locally_valid_candidates

Cell = tuple[int, int]
SWEEPS = 12


@dataclass
class Board:
    """A task seen without its rules: every cell's options (one for a visible cell or a
    hidden cell its slot checks settle), numeric values scaled by the attribute's range."""

    task: Task
    numeric: list[str]
    categorical: list[str]
    options: dict[Cell, list[str]]
    scaled: dict[str, dict[str, float]]  # item id -> attribute -> value / range

    @staticmethod
    def of(task: Task) -> Board:
        """The board of ``task``."""
        domain = get_domain(task.domain)
        numeric = [a for a in domain.attributes if isinstance(a, NumericAttribute)]
        categorical = [a.name for a in domain.attributes if isinstance(a, CategoricalAttribute)]
        options: dict[Cell, list[str]] = {}
        for r, row in enumerate(task.grid):
            for c, item in enumerate(row):
                if item is not None:
                    options[(r, c)] = [item]
        for slot in task.slots:
            options[(slot.row, slot.col)] = locally_valid_candidates(task, slot)
        ids = {i for ids in options.values() for i in ids}
        scaled = {
            i: {a.name: float(task.items[i][a.name]) / float(a.high - a.low) for a in numeric}  # type: ignore[arg-type]
            for i in ids
        }
        return Board(task, [a.name for a in numeric], categorical, options, scaled)

    def open_cells(self) -> list[Cell]:
        """Cells with more than one option, row-major."""
        return sorted(cell for cell, ids in self.options.items() if len(ids) > 1)

    def visible(self) -> list[str]:
        """The ids of the visible cells."""
        return [i for row in self.task.grid for i in row if i is not None]


def _variance(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / len(values)


class Objective:
    """A score of a whole completion, kept up to date as single cells change (lower is
    better)."""

    def __init__(self, board: Board, choice: dict[Cell, str]) -> None:
        self.board = board

    def delta(self, cell: Cell, old: str, new: str) -> float:
        """How much the score changes when ``cell`` goes from ``old`` to ``new``."""
        raise NotImplementedError

    def apply(self, cell: Cell, old: str, new: str) -> None:
        """Record that ``cell`` went from ``old`` to ``new``."""
        raise NotImplementedError


class EqualLineTotals(Objective):
    """Every row (``axis`` 0) or column (1) with the same total, on every numeric attribute:
    the sum over attributes of the variance of the lines' totals."""

    axis = 0

    def __init__(self, board: Board, choice: dict[Cell, str]) -> None:
        super().__init__(board, choice)
        lines = board.task.rows if self.axis == 0 else board.task.cols
        self.totals = {a: [0.0] * lines for a in board.numeric}
        for cell, item in choice.items():
            for a in board.numeric:
                self.totals[a][cell[self.axis]] += board.scaled[item][a]
        self.sums = {a: sum(totals) for a, totals in self.totals.items()}  # summed anew on a move

    def delta(self, cell: Cell, old: str, new: str) -> float:
        change, line = 0.0, cell[self.axis]
        for a, totals in self.totals.items():
            d = self.board.scaled[new][a] - self.board.scaled[old][a]
            n, t, s1 = len(totals), totals[line], self.sums[a]
            # variance = S2 / n - (S1 / n)^2; only one line's total moves by d
            change += ((t + d) ** 2 - t * t) / n - ((s1 + d) ** 2 - s1 * s1) / (n * n)
        return change

    def apply(self, cell: Cell, old: str, new: str) -> None:
        for a, totals in self.totals.items():
            totals[cell[self.axis]] += self.board.scaled[new][a] - self.board.scaled[old][a]
            self.sums[a] = sum(totals)


class EqualColTotals(EqualLineTotals):
    """Every column with the same total, on every numeric attribute."""

    axis = 1


class LikeTheVisible(Objective):
    """The hidden cells' mean as close as can be to the visible cells' mean, per attribute."""

    def __init__(self, board: Board, choice: dict[Cell, str]) -> None:
        super().__init__(board, choice)
        visible, hidden = board.visible(), [choice[(s.row, s.col)] for s in board.task.slots]
        self.count = max(len(hidden), 1)
        self.target = {
            a: sum(board.scaled[i][a] for i in visible) / max(len(visible), 1) * len(hidden)
            for a in board.numeric
        }
        self.sums = {a: sum(board.scaled[i][a] for i in hidden) for a in board.numeric}

    def delta(self, cell: Cell, old: str, new: str) -> float:
        change = 0.0
        for a, total in self.sums.items():
            d = self.board.scaled[new][a] - self.board.scaled[old][a]
            change += ((total + d - self.target[a]) ** 2 - (total - self.target[a]) ** 2) / self.count**2
        return change

    def apply(self, cell: Cell, old: str, new: str) -> None:
        for a in self.sums:
            self.sums[a] += self.board.scaled[new][a] - self.board.scaled[old][a]


class FewestRepeats(Objective):
    """Categories spread out: the sum of squared counts of each value, in the grid and in
    every row and column."""

    def __init__(self, board: Board, choice: dict[Cell, str]) -> None:
        super().__init__(board, choice)
        self.counts: Counter[tuple[str, str, int, object]] = Counter()
        for cell, item in choice.items():
            for key in self._keys(cell, item):
                self.counts[key] += 1

    def _keys(self, cell: Cell, item: str) -> list[tuple[str, str, int, object]]:
        record = self.board.task.items[item]
        out: list[tuple[str, str, int, object]] = []
        for a in self.board.categorical:
            value = record[a]
            out += [(a, "grid", 0, value), (a, "row", cell[0], value), (a, "col", cell[1], value)]
        return out

    def delta(self, cell: Cell, old: str, new: str) -> float:
        if old == new:
            return 0.0
        leaving, coming = self._keys(cell, old), self._keys(cell, new)
        counts = self.counts
        change = 0
        for key in set(leaving + coming):  # the counts the move changes (an item's keys differ)
            now = counts[key]
            after = now - leaving.count(key) + coming.count(key)
            change += after * after - now * now
        return float(change)

    def apply(self, cell: Cell, old: str, new: str) -> None:
        for key in self._keys(cell, old):
            self.counts[key] -= 1
        for key in self._keys(cell, new):
            self.counts[key] += 1


JOINT_OBJECTIVES: dict[str, type[Objective]] = {
    "joint_equal_row_totals": EqualLineTotals,
    "joint_equal_col_totals": EqualColTotals,
    "joint_like_the_visible": LikeTheVisible,
    "joint_fewest_repeats": FewestRepeats,
}


def _start(board: Board) -> dict[Cell, str]:
    choice = {cell: ids[0] for cell, ids in board.options.items()}
    for cell in board.open_cells():
        ids = board.options[cell]
        centre = {a: sum(board.scaled[i][a] for i in ids) / len(ids) for a in board.numeric}
        choice[cell] = min(
            sorted(ids), key=lambda i: sum((board.scaled[i][a] - centre[a]) ** 2 for a in board.numeric)
        )
    return choice


def descend(board: Board, kind: type[Objective]) -> dict[Cell, str]:
    """Coordinate descent on the objective ``kind`` over the open cells' options."""
    choice = _start(board)
    objective = kind(board, choice)
    cells = board.open_cells()
    for _ in range(SWEEPS):
        moved = False
        for cell in cells:
            current = choice[cell]
            best, best_change = current, 0.0
            for option in sorted(board.options[cell]):
                change = objective.delta(cell, current, option)
                if change < best_change - 1e-12:
                    best, best_change = option, change
            if best != current:
                objective.apply(cell, current, best)
                choice[cell] = best
                moved = True
        if not moved:
            break
    return choice


def joint_picks(task: Task, board: Board | None = None) -> dict[str, dict[Cell, str]]:
    """Per joint policy, the option it picks in every cell with several options."""
    board = board or Board.of(task)
    out = {}
    for name, kind in JOINT_OBJECTIVES.items():
        choice = descend(board, kind)
        out[name] = {cell: choice[cell] for cell in board.open_cells()}
    return out


def _visible_z(board: Board, ids: list[str], pool: list[str]) -> list[float]:
    """Per option: the sum over numeric attributes of its z-score against ``pool`` (visible
    items), signed."""
    out = [0.0] * len(ids)
    for attribute in board.numeric:
        values = [board.scaled[i][attribute] for i in pool]
        if len(values) < 2:
            continue
        mean = sum(values) / len(values)
        spread = _variance(values) ** 0.5 or 1.0
        for k, item in enumerate(ids):
            out[k] += (board.scaled[item][attribute] - mean) / spread
    return out


def _neighbours(board: Board, cell: Cell) -> list[str]:
    r, c = cell
    return [
        i
        for (rr, cc), ids in board.options.items()
        if (rr == r or cc == c) and (rr, cc) != cell and len(ids) == 1
        for i in ids
    ]


def cell_picks(task: Task, board: Board | None = None) -> dict[str, dict[Cell, str]]:
    """Per-cell policies against the visible cells: the option most typical / most extreme
    against the visible grid, the option most / least like the visible cells of its row and
    column, the option inside the visible range on most attributes."""
    board = board or Board.of(task)
    visible = board.visible()
    out: dict[str, dict[Cell, str]] = {
        "visible_most_typical": {},
        "visible_most_extreme_high": {},
        "visible_most_extreme_low": {},
        "visible_inside_range": {},
        "neighbours_most_alike": {},
        "neighbours_least_alike": {},
    }
    for cell in board.open_cells():
        ids = sorted(board.options[cell])
        z = _visible_z(board, ids, visible)
        typical = [0.0] * len(ids)
        inside = [0.0] * len(ids)
        for attribute in board.numeric:
            values = [board.scaled[i][attribute] for i in visible] or [0.0]
            low, high = min(values), max(values)
            mean = sum(values) / len(values)
            for k, item in enumerate(ids):
                value = board.scaled[item][attribute]
                typical[k] -= (value - mean) ** 2
                inside[k] += float(low <= value <= high)
        near = _neighbours(board, cell)
        alike = [_likeness(board, item, near) for item in ids]
        out["visible_most_typical"][cell] = _best(ids, typical)
        out["visible_most_extreme_high"][cell] = _best(ids, z)
        out["visible_most_extreme_low"][cell] = _best(ids, [-v for v in z])
        out["visible_inside_range"][cell] = _best(ids, inside)
        out["neighbours_most_alike"][cell] = _best(ids, alike)
        out["neighbours_least_alike"][cell] = _best(ids, [-v for v in alike])
    return out


def _likeness(board: Board, item: str, near: list[str]) -> float:
    if not near:
        return 0.0
    items = board.task.items
    same = sum(items[item][a] == items[n][a] for a in board.categorical for n in near)
    distance = sum(abs(board.scaled[item][a] - board.scaled[n][a]) for a in board.numeric for n in near)
    return (same - distance) / len(near)


def _best(ids: list[str], scores: list[float]) -> str:
    """The id with the highest score (``ids`` sorted: ties go to the first)."""
    return ids[max(range(len(ids)), key=lambda k: (scores[k], -k))]


def rule_free_picks(task: Task) -> dict[str, dict[Cell, str]]:
    """Every visible-cell policy of this module, per cell: joint and per cell."""
    board = Board.of(task)
    return {**joint_picks(task, board), **cell_picks(task, board)}


__all__ = ["Board", "JOINT_OBJECTIVES", "cell_picks", "descend", "joint_picks", "rule_free_picks"]

"""What the visible cells say about each option of a cell, without reading a rule: features
for the audit's rule-free classifiers (trained on one build, tested on another).

Per numeric attribute: the option against the visible items of its row, its column and the
grid (differences and z-scores), the row's and the column's visible totals against the other
rows' and columns' (and their products with the option's z-score in its cell: the pattern of
a generator that balances rows), per categorical attribute how often the option's value
appears among the visible items of its row, column and grid, and which option each rule-free
policy of :mod:`pipeline.integrity.joint` picks.
"""

from __future__ import annotations

from pipeline.integrity.joint import Board

Cell = tuple[int, int]
Features = dict[str, float]


def _z(values: list[float]) -> list[float]:
    centre = sum(values) / len(values)
    spread = (sum((v - centre) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
    return [(v - centre) / spread for v in values]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def line_totals(board: Board, attribute: str, axis: int) -> list[float]:
    """The visible total of every row (``axis`` 0) or column (1)."""
    lines = board.task.rows if axis == 0 else board.task.cols
    totals = [0.0] * lines
    for r, row in enumerate(board.task.grid):
        for c, item in enumerate(row):
            if item is not None:
                totals[(r, c)[axis]] += board.scaled[item][attribute]
    return totals


def context_features(
    board: Board, cell: Cell, options: list[str], picks: dict[str, dict[Cell, str]]
) -> list[Features]:
    """The visible-context features of every option of ``cell`` (``picks``: the rule-free
    policies' choices)."""
    task, items = board.task, board.task.items
    row, col = cell
    visible = [(r, c, i) for r, line in enumerate(task.grid) for c, i in enumerate(line) if i is not None]
    rows: list[Features] = [{} for _ in options]
    for attribute in board.numeric:
        values = [board.scaled[i][attribute] for i in options]
        cell_z = _z(values)
        pools = {
            "row": [board.scaled[i][attribute] for r, _, i in visible if r == row],
            "col": [board.scaled[i][attribute] for _, c, i in visible if c == col],
            "grid": [board.scaled[i][attribute] for _, _, i in visible],
        }
        row_z = _z(line_totals(board, attribute, 0))[row] if task.rows > 1 else 0.0
        col_z = _z(line_totals(board, attribute, 1))[col] if task.cols > 1 else 0.0
        for k, value in enumerate(values):
            features = rows[k]
            for name, pool in pools.items():
                features[f"{attribute}.minus_visible_{name}_mean"] = value - _mean(pool)
            features[f"{attribute}.row_total_z_x_z"] = row_z * cell_z[k]
            features[f"{attribute}.col_total_z_x_z"] = col_z * cell_z[k]
            features[f"{attribute}.row_total_z"] = row_z
            features[f"{attribute}.col_total_z"] = col_z
    for attribute in board.categorical:
        for k, item in enumerate(options):
            category = items[item][attribute]
            same = [(r, c) for r, c, i in visible if items[i][attribute] == category]
            rows[k][f"{attribute}.same_in_row"] = float(sum(r == row for r, _ in same))
            rows[k][f"{attribute}.same_in_col"] = float(sum(c == col for _, c in same))
            rows[k][f"{attribute}.same_share_in_grid"] = len(same) / max(len(visible), 1)
    for name, chosen in picks.items():
        for k, item in enumerate(options):
            rows[k][f"pick.{name}"] = float(chosen.get(cell) == item)
    return rows


__all__ = ["context_features", "line_totals"]

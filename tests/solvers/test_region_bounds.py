"""The exact edge of the grid for a region's cells: a cell at row ``rows`` or column ``cols``
(one past the last) is outside, as is a negative one; the last row and column are inside.
(A planted ``<=`` for ``<`` in the reader's bound survived a test that only tried column 99.)"""

from __future__ import annotations

import copy

import pytest

from core.task import TaskFormatError
from core.task_io import task_from_dict
from tests.tiny import TASK

ROWS, COLS = TASK.rows, TASK.cols  # 2 x 3; hidden cells (0, 1) and (1, 2)


def _with_region(cells: list[list[int]]) -> dict:
    data = copy.deepcopy(TASK.to_dict())
    data["schema_version"] = "2"
    region = {"name": "region_cost_max", "kind": "sum_max", "attribute": "cost", "scope": "cells"}
    data["global_constraints"].append({**region, "bound": 100, "cells": cells})
    return data


def test_the_last_row_and_column_are_inside():
    task = task_from_dict(_with_region([[0, 1], [ROWS - 1, COLS - 1]]))
    assert task.global_constraints[-1].cells == ((0, 1), (ROWS - 1, COLS - 1))


@pytest.mark.parametrize(
    "cell", [[0, COLS], [ROWS, 0], [ROWS, COLS], [ROWS - 1, COLS], [-1, 1], [0, -1]], ids=str
)
def test_a_cell_one_past_the_edge_or_negative_is_refused(cell):
    cells = sorted([[0, 1], cell])
    with pytest.raises(TaskFormatError) as refused:
        task_from_dict(_with_region(cells))
    assert f"({cell[0]},{cell[1]})" in str(refused.value) or "must be" in str(refused.value)
    assert "\n" not in str(refused.value)

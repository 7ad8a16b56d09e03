"""Hand-built tasks that random drawing finds only by luck, given to the property tests as
explicit ``@example``s so that every run (and the CI profile) checks them."""

from __future__ import annotations

from core.task import GlobalRule, Slot, SlotRule, Task


def _item(item_id: str, cost: int, color: str, shape: str = "ring", weight: int = 1) -> dict:
    return {"id": item_id, "name": item_id, "cost": cost, "weight": weight, "color": color, "shape": shape}


def _task(name: str, grid, items: list[dict], slots, rules) -> Task:
    pool = {item["id"]: item for item in items}
    return Task(name, "toy", len(grid), len(grid[0]), 0, grid, pool, tuple(slots), tuple(rules))


# repeat_max per row: two visible reds in row 0 leave its hidden cell no red; row 1 has room.
# A model that builds the value rows from the hidden options only, or from one row for all
# rows, gets the rows wrong.
ROW_REPEAT = _task(
    "row-repeat",
    (("v00", "v01", None), ("v10", None, "v12")),
    [
        _item("v00", 1, "red"),
        _item("v01", 2, "red"),
        _item("v10", 1, "green"),
        _item("v12", 3, "blue"),
        _item("h0r", 0, "red"),
        _item("h0b", 4, "blue"),
        _item("h1r", 2, "red"),
        _item("h1g", 1, "green"),
    ],
    [Slot(0, 2, ("h0r", "h0b"), ()), Slot(1, 1, ("h1r", "h1g"), ())],
    [
        GlobalRule("color_per_row", "repeat_max", "color", 2, scope="row"),
        GlobalRule("cost", "sum_max", "cost", 12),
    ],
)

# the visible cells of row 0 alone break repeat_max: no completion, and propagation empties
# the row's hidden cell
VISIBLE_BREAKS = _task(
    "visible-breaks",
    (("v00", "v01", None), (None, "v11", "v12")),
    [
        _item("v00", 1, "red"),
        _item("v01", 2, "red"),
        _item("v11", 1, "green"),
        _item("v12", 3, "blue"),
        _item("h0b", 4, "blue"),
        _item("h0g", 0, "green"),
        _item("h1r", 2, "red"),
        _item("h1b", 1, "blue"),
    ],
    [Slot(0, 2, ("h0b", "h0g"), ()), Slot(1, 0, ("h1r", "h1b"), ())],
    [GlobalRule("color_per_row", "repeat_max", "color", 1, scope="row")],
)

# the truth (a0, b0) is unique; the only completion one loosening admits is (a1, b1), which
# needs total_cost loosened by 10 = cells x the largest cost: exactly the cap of the loosening
# variable (a smaller cap finds no loosening at all)
LOOSENING_CAP = _task(
    "loosening-cap",
    ((None, None),),
    [
        _item("a0", 0, "red", "ring"),
        _item("a1", 5, "red", "star"),
        _item("b0", 0, "red", "star"),
        _item("b1", 5, "red", "ring"),
    ],
    [Slot(0, 0, ("a0", "a1"), ()), Slot(0, 1, ("b0", "b1"), ())],
    [GlobalRule("total_cost", "sum_max", "cost", 0), GlobalRule("one_shape_each", "repeat_max", "shape", 1)],
)

# slot rules met exactly on their bounds (cost <= 3 by a 3, weight >= 2 by a 2) and categories
# in / not in their lists: the MILP's own slot check must keep exactly the checker's options
BOUNDARY = _task(
    "boundary",
    (("v", None, None),),
    [
        _item("v", 1, "red"),
        _item("on_cost", 3, "red", weight=2),
        _item("over_cost", 4, "red", weight=5),
        _item("on_weight", 0, "blue", weight=2),
        _item("under_weight", 0, "blue", weight=1),
        _item("green", 1, "green", weight=3),
        _item("red", 1, "red", weight=3),
    ],
    [
        Slot(
            0,
            1,
            ("on_cost", "over_cost", "on_weight", "under_weight"),
            (SlotRule("cost", "<=", 3), SlotRule("weight", ">=", 2)),
        ),
        Slot(
            0,
            2,
            ("green", "red", "on_weight"),
            (SlotRule("color", "in", ("green", "blue")), SlotRule("color", "not_in", ("blue",))),
        ),
    ],
    [GlobalRule("total_cost", "sum_max", "cost", 9)],
)

# at least 2 items with cost >= 0 (every item counts): the cost-0 option counts as much as any
THRESHOLD_ZERO = _task(
    "threshold-zero",
    (("v", None),),
    [_item("v", 3, "red"), _item("zero", 0, "red"), _item("two", 2, "blue")],
    [Slot(0, 1, ("zero", "two"), ())],
    [GlobalRule("counted", "count_min_threshold", "cost", 2, at_least=0)],
)

# a lower bound is the one to loosen: every other completion falls 2 or more short of the
# weight floor, so the least loosening is 2 units of total_weight (sum_min)
LOWER_LOOSENING = _task(
    "lower-loosening",
    ((None, None),),
    [
        _item("a0", 0, "red", weight=5),
        _item("a1", 0, "red", weight=3),
        _item("b0", 0, "red", weight=5),
        _item("b1", 0, "red", weight=3),
    ],
    [Slot(0, 0, ("a0", "a1"), ()), Slot(0, 1, ("b0", "b1"), ())],
    [GlobalRule("total_weight", "sum_min", "weight", 10)],
)

# a count compares values exactly, case included: the visible "Red" counts, so the hidden cell
# may not take a second "Red", while "red" is another value (a model that normalised the case
# would count "red" and let "Red" through)
CASED = _task(
    "cased",
    (("v", None),),
    [_item("v", 1, "Red"), _item("lower", 1, "red"), _item("upper", 2, "Red")],
    [Slot(0, 1, ("lower", "upper"), ())],
    [GlobalRule("red_max", "count_max", "color", 1, equals="Red")],
)

# the hidden cell's only candidate breaks its slot rule: no option, no completion; the MILP
# has no column at all (HiGHS calls that an empty model: no proof either way)
NO_OPTION = Task(
    "no-option",
    "toy",
    1,
    2,
    0,
    (("v", None),),
    {item["id"]: item for item in (_item("v", 1, "red"), _item("h", 0, "red"))},
    (Slot(0, 1, ("h",), (SlotRule("cost", ">=", 1),)),),
    (GlobalRule("total_cost", "sum_max", "cost", 5),),
)

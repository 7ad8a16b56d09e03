"""Stage 4b's arithmetic: a resistant share exactly at the target meets it (also where the
product share x decoys is a float a hair above the whole number), one short does not; a rule
of several groups prunes nothing once loosened by what its neediest group needs."""

from __future__ import annotations

from gridbench_core.task import GlobalRule
from pipeline.generation.resist import _vacuous_units, resistant_enough
from tests.tiny import TASK


def test_a_resistant_share_exactly_at_the_target_meets_it():
    assert resistant_enough(2, 4, 0.5)
    assert resistant_enough(3, 10, 0.3)  # 0.3 * 10 = 3.0000000000000004 in floating point
    assert resistant_enough(7, 10, 0.7)
    assert resistant_enough(0, 0, 0.5)
    assert not resistant_enough(1, 4, 0.5)
    assert not resistant_enough(2, 10, 0.3)


def test_a_rule_of_several_groups_loosens_to_nothing_by_its_neediest_group():
    """On the tiny task, a per-column weight cap of 5: column 0 is visible (5, no room
    needed), column 1 reaches 9 + 5 = 14 with C (9 more units), column 2 at most 1 + 8 = 9
    (4 more): the cap prunes nothing only 9 units looser, whichever group comes last."""
    rule = GlobalRule("col_weight_max", "sum_max", "weight", 5, "col")
    assert _vacuous_units(TASK, rule) == 9

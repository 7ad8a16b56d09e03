"""Workforce shifts: rows are days, columns are shifts."""

from domains.base import CategoricalAttribute as Cat
from domains.base import Domain
from domains.base import GlobalRuleTemplate as G
from domains.base import NumericAttribute as Num
from domains.base import SlotRuleTemplate as S
from domains.registry import register


@register
def workforce() -> Domain:
    return Domain(
        name="workforce",
        item_noun="worker",
        item_plural="workers",
        id_prefix="W",
        task_phrase="shift staffing",
        row_noun="day",
        col_noun="shift",
        attributes=(
            Num("skill", 1, 5),
            Num("hourly_cost", 20, 100),
            Num("experience", 1, 20),
            Cat("department", ("support", "sales", "operations", "security", "logistics",
                               "maintenance")),  # fmt: skip
            Num("reliability", 1, 5),
            Num("overtime_capacity", 0, 10),
        ),
        slot_rules=(
            S("min_skill", "skill", ">="),
            S("max_hourly_cost", "hourly_cost", "<="),
            S("min_experience", "experience", ">="),
        ),
        global_rules=(
            G("total_cost_max", "sum_max", "hourly_cost"),
            G("total_skill_min", "sum_min", "skill"),
            G("senior_shift_min", "count_min_threshold", "experience", at_least=12),
            G("same_department_max", "repeat_max", "department"),
            G("total_reliability_min", "sum_min", "reliability"),
            G("total_overtime_min", "sum_min", "overtime_capacity"),
            G("same_department_per_day_max", "repeat_max", "department", scope="row"),
        ),
        name_words=(
            "Alex", "Blair", "Casey", "Devon", "Emery", "Frankie", "Jordan", "Kai", "Logan",
            "Morgan", "Quinn", "Riley", "Sam", "Taylor",
        ),  # fmt: skip
    )

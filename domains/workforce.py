"""Workforce shifts: rows are days, columns are shifts."""

from domains.base import CategoricalAttribute as Cat
from domains.base import Domain
from domains.base import GlobalRuleTemplate as G
from domains.base import NumericAttribute as Num
from domains.base import SlotRuleTemplate as S
from domains.registry import register
from gridbench_core.vocabulary import RuleKind


@register
def workforce() -> Domain:
    """The shift staffing domain: workers over days and shifts."""
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
            Cat("department", ("support", "sales", "operations", "security", "logistics", "maintenance")),
            Num("reliability", 1, 5),
            Num("overtime_capacity", 0, 10),
        ),
        slot_rules=(
            S("min_skill", "skill", ">="),
            S("max_hourly_cost", "hourly_cost", "<="),
            S("min_experience", "experience", ">="),
        ),
        global_rules=(
            G("total_cost_max", RuleKind.SUM_MAX, "hourly_cost"),
            G("total_skill_min", RuleKind.SUM_MIN, "skill"),
            G("senior_shift_min", RuleKind.COUNT_MIN_THRESHOLD, "experience", at_least=12),
            G("same_department_max", RuleKind.REPEAT_MAX, "department"),
            G("total_reliability_min", RuleKind.SUM_MIN, "reliability"),
            G("total_overtime_min", RuleKind.SUM_MIN, "overtime_capacity"),
            G("same_department_per_day_max", RuleKind.REPEAT_MAX, "department", scope="row"),
        ),
        name_words=(
            "Alex",
            "Blair",
            "Casey",
            "Devon",
            "Emery",
            "Frankie",
            "Jordan",
            "Kai",
            "Logan",
            "Morgan",
            "Quinn",
            "Riley",
            "Sam",
            "Taylor",
        ),
    )

"""Course scheduling: rows are days, columns are class periods."""

from domains.base import CategoricalAttribute as Cat
from domains.base import Domain
from domains.base import GlobalRuleTemplate as G
from domains.base import NumericAttribute as Num
from domains.base import SlotRuleTemplate as S
from domains.registry import register
from gridbench_core.vocabulary import RuleKind

TEACHERS = (
    "Ada Brooks",
    "Ben Carter",
    "Chloe Diaz",
    "Dan Evans",
    "Eva Fischer",
    "Finn Garcia",
    "Gina Hall",
    "Hugo Ito",
    "Iris Jones",
    "Jack Kim",
    "Kara Lopez",
    "Liam Moore",
    "Maya Novak",
    "Noah Ortiz",
    "Olga Patel",
    "Paul Quinn",
)


@register
def course() -> Domain:
    """The course scheduling domain: courses over days and class periods."""
    return Domain(
        name="course",
        item_noun="course",
        item_plural="courses",
        id_prefix="C",
        task_phrase="course scheduling",
        row_noun="day",
        col_noun="class period",
        attributes=(
            Cat("category", ("math", "cs", "core", "elective", "lab", "seminar")),
            Num("difficulty", 1, 5),
            Num("credits", 1, 4),
            Num("price", 100, 500),
            Cat("teacher", TEACHERS),
            Num("workload", 1, 8),
        ),
        slot_rules=(
            S("max_difficulty", "difficulty", "<="),
            S("min_credits", "credits", ">="),
            S("max_price", "price", "<="),
        ),
        global_rules=(
            G("total_credits_min", RuleKind.SUM_MIN, "credits"),
            G("total_price_max", RuleKind.SUM_MAX, "price"),
            G("same_teacher_max", RuleKind.REPEAT_MAX, "teacher"),
            G("same_category_max", RuleKind.REPEAT_MAX, "category"),
            G("total_workload_max", RuleKind.SUM_MAX, "workload"),
            G("same_teacher_per_day_max", RuleKind.REPEAT_MAX, "teacher", scope="row"),
        ),
        name_words=(
            "Algebra",
            "Databases",
            "Ethics",
            "Workshop",
            "Analysis",
            "Perspectives",
            "Statistics",
            "Networks",
            "Writing",
            "Chemistry",
            "Design",
            "History",
        ),
    )

"""Meal planning: rows are days, columns are meals."""

from domains.base import CategoricalAttribute as Cat
from domains.base import Domain
from domains.base import GlobalRuleTemplate as G
from domains.base import NumericAttribute as Num
from domains.base import SlotRuleTemplate as S
from domains.registry import register
from gridbench_core.vocabulary import RuleKind

CHEFS = (
    "Chef Ames",
    "Chef Bell",
    "Chef Cruz",
    "Chef Dunn",
    "Chef Ellis",
    "Chef Ford",
    "Chef Gray",
    "Chef Hart",
)


@register
def meal() -> Domain:
    """The meal planning domain: dishes over days and meals."""
    return Domain(
        name="meal",
        item_noun="dish",
        item_plural="dishes",
        id_prefix="D",
        task_phrase="meal planning",
        row_noun="day",
        col_noun="meal",
        attributes=(
            Num("calories", 150, 900),
            Num("protein", 5, 60),
            Num("price", 5, 35),
            Cat("cuisine", ("asian", "mediterranean", "american", "mexican", "italian", "fusion")),
            Cat("chef", CHEFS),
            Num("spiciness", 1, 5),
        ),
        slot_rules=(
            S("max_calories", "calories", "<="),
            S("min_protein", "protein", ">="),
            S("max_price", "price", "<="),
        ),
        global_rules=(
            G("weekly_calories_max", RuleKind.SUM_MAX, "calories"),
            G("weekly_protein_min", RuleKind.SUM_MIN, "protein"),
            G("same_cuisine_max", RuleKind.REPEAT_MAX, "cuisine"),
            G("same_chef_max", RuleKind.REPEAT_MAX, "chef"),
            G("weekly_price_max", RuleKind.SUM_MAX, "price"),
            G("weekly_spiciness_max", RuleKind.SUM_MAX, "spiciness"),
            G("same_cuisine_per_day_max", RuleKind.REPEAT_MAX, "cuisine", scope="row"),
        ),
        name_words=(
            "Power Bowl",
            "Noodle Soup",
            "Grain Salad",
            "Taco Plate",
            "Risotto",
            "Curry",
            "Flatbread",
            "Stir Fry",
            "Stew",
            "Wrap",
            "Poke",
            "Frittata",
        ),
    )

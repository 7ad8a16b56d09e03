"""Grocery shopping: rows are days, columns are basket positions."""

from domains.base import CategoricalAttribute as Cat
from domains.base import Domain
from domains.base import GlobalRuleTemplate as G
from domains.base import NumericAttribute as Num
from domains.base import SlotRuleTemplate as S
from domains.registry import register
from gridbench_core.vocabulary import RuleKind

BRANDS = (
    "DailyChoice",
    "GreenField",
    "FarmFresh",
    "UrbanPantry",
    "SunHarvest",
    "PureLeaf",
    "HomeBasics",
    "NorthMill",
)


@register
def shopping() -> Domain:
    """The grocery shopping domain: products over days and basket positions."""
    return Domain(
        name="shopping",
        item_noun="product",
        item_plural="products",
        id_prefix="P",
        task_phrase="grocery shopping",
        row_noun="day",
        col_noun="basket position",
        attributes=(
            Cat("category", ("produce", "dairy", "snack", "protein", "grain", "beverage")),
            Num("price", 2, 25),
            Num("calories", 50, 800),
            Num("protein", 0, 40),
            Cat("brand", BRANDS),
            Num("weight", 200, 1500),
        ),
        slot_rules=(
            S("max_price", "price", "<="),
            S("min_calories", "calories", ">="),
            S("min_protein", "protein", ">="),
        ),
        global_rules=(
            G("weekly_budget_max", RuleKind.SUM_MAX, "price"),
            G("weekly_calories_min", RuleKind.SUM_MIN, "calories"),
            G("weekly_protein_min", RuleKind.SUM_MIN, "protein"),
            G("same_brand_max", RuleKind.REPEAT_MAX, "brand"),
            G("weekly_weight_max", RuleKind.SUM_MAX, "weight"),
            G("same_category_max", RuleKind.REPEAT_MAX, "category"),
            G("daily_budget_max", RuleKind.SUM_MAX, "price", scope="row"),
        ),
        name_words=(
            "Cream",
            "Oat Mix",
            "Apples",
            "Yogurt",
            "Rice",
            "Lentils",
            "Juice",
            "Crackers",
            "Cheese",
            "Spinach",
            "Tofu",
            "Granola",
        ),
    )

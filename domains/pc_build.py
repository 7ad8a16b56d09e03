"""PC building: rows are builds, columns are part positions."""

from domains.base import CategoricalAttribute as Cat
from domains.base import Domain
from domains.base import GlobalRuleTemplate as G
from domains.base import NumericAttribute as Num
from domains.base import SlotRuleTemplate as S
from domains.registry import register
from gridbench_core.vocabulary import RuleKind

BRANDS = ("NovaTech", "Corelink", "Voltix", "Quantis", "Arcwave", "Heliox", "Pyron", "Zentra")


@register
def pc_build() -> Domain:
    """The PC build planning domain: components over builds and part positions."""
    return Domain(
        name="pc_build",
        item_noun="component",
        item_plural="components",
        id_prefix="PC",
        task_phrase="PC build planning",
        row_noun="build",
        col_noun="part position",
        attributes=(
            Cat("category", ("cpu", "gpu", "ram", "storage", "motherboard", "cooling")),
            Num("price", 50, 1500),
            Num("performance", 10, 100),
            Num("power", 20, 450),
            Cat("brand", BRANDS),
            Num("compatibility", 60, 100),
        ),
        slot_rules=(
            S("max_price", "price", "<="),
            S("min_performance", "performance", ">="),
            S("max_power", "power", "<="),
        ),
        global_rules=(
            G("total_budget_max", RuleKind.SUM_MAX, "price"),
            G("total_power_max", RuleKind.SUM_MAX, "power"),
            G("same_brand_max", RuleKind.REPEAT_MAX, "brand"),
            G("same_category_max", RuleKind.REPEAT_MAX, "category"),
            G("high_performance_min", RuleKind.COUNT_MIN_THRESHOLD, "performance", at_least=75),
            G("total_compatibility_min", RuleKind.SUM_MIN, "compatibility"),
            G("build_power_max", RuleKind.SUM_MAX, "power", scope="row"),
        ),
        name_words=(
            "Compact Board",
            "Tower Cooler",
            "Gaming Card",
            "Fast Drive",
            "Dual Kit",
            "Octa Core",
            "Silent Fan",
            "Pro Board",
            "Turbo Card",
            "Cache Drive",
        ),
    )

"""A tiny domain for tests: small ranges, every rule kind and every scope."""

from domains.base import CategoricalAttribute as Cat
from domains.base import Domain
from domains.base import GlobalRuleTemplate as G
from domains.base import NumericAttribute as Num
from domains.base import SlotRuleTemplate as S
from domains.registry import register
from gridbench_core.vocabulary import RuleKind


@register
def toy() -> Domain:
    """The toy puzzle domain: tokens over rows and columns."""
    return Domain(
        name="toy",
        item_noun="token",
        item_plural="tokens",
        id_prefix="T",
        task_phrase="toy puzzle",
        row_noun="row",
        col_noun="column",
        attributes=(
            Num("cost", 0, 9),
            Num("weight", 1, 9),
            Cat("color", ("red", "green", "blue")),
            Cat("shape", ("circle", "square", "star", "ring")),
        ),
        slot_rules=(
            S("max_cost", "cost", "<="),
            S("min_weight", "weight", ">="),
        ),
        global_rules=(
            G("total_cost_max", RuleKind.SUM_MAX, "cost"),
            G("total_weight_min", RuleKind.SUM_MIN, "weight"),
            G("same_shape_max", RuleKind.REPEAT_MAX, "shape"),
            G("red_min", RuleKind.COUNT_MIN, "color", equals="red"),
            G("blue_max", RuleKind.COUNT_MAX, "color", equals="blue"),
            G("heavy_min", RuleKind.COUNT_MIN_THRESHOLD, "weight", at_least=7),
            G("row_cost_max", RuleKind.SUM_MAX, "cost", scope="row"),
            G("same_color_per_col_max", RuleKind.REPEAT_MAX, "color", scope="col"),
        ),
        name_words=("Pebble", "Bead", "Chip", "Marble", "Button"),
    )

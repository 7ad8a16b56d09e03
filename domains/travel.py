"""Travel itineraries: rows are days, columns are time blocks."""

from domains.base import CategoricalAttribute as Cat
from domains.base import Domain
from domains.base import GlobalRuleTemplate as G
from domains.base import NumericAttribute as Num
from domains.base import SlotRuleTemplate as S
from domains.registry import register
from gridbench_core.vocabulary import RuleKind

DISTRICTS = (
    "Old Town",
    "Harbor",
    "Hill District",
    "Riverside",
    "Market Quarter",
    "Arts Mile",
    "Garden Ward",
    "Station Row",
)


@register
def travel() -> Domain:
    """The travel itinerary domain: activities over days and time blocks."""
    return Domain(
        name="travel",
        item_noun="activity",
        item_plural="activities",
        id_prefix="A",
        task_phrase="travel itinerary planning",
        row_noun="day",
        col_noun="time block",
        attributes=(
            Cat("category", ("museum", "outdoor", "food", "show", "landmark", "market")),
            Num("cost", 10, 200),
            Num("duration", 1, 6),
            Num("crowd_level", 1, 5),
            Cat("location", DISTRICTS),
            Num("rating", 1, 5),
        ),
        slot_rules=(
            S("max_cost", "cost", "<="),
            S("max_duration", "duration", "<="),
            S("max_crowd", "crowd_level", "<="),
        ),
        global_rules=(
            G("total_budget_max", RuleKind.SUM_MAX, "cost"),
            G("museum_min", RuleKind.COUNT_MIN, "category", equals="museum"),
            G("outdoor_min", RuleKind.COUNT_MIN, "category", equals="outdoor"),
            G("location_repeat_max", RuleKind.REPEAT_MAX, "location"),
            G("daily_duration_max", RuleKind.SUM_MAX, "duration", scope="row"),
            G("rating_total_min", RuleKind.SUM_MIN, "rating"),
            G("total_duration_max", RuleKind.SUM_MAX, "duration"),
            G("crowd_total_max", RuleKind.SUM_MAX, "crowd_level"),
        ),
        name_words=(
            "Gallery Tour",
            "Harbor Walk",
            "Food Crawl",
            "Night Show",
            "Tower Visit",
            "Flea Market",
            "Boat Trip",
            "Park Hike",
            "Cooking Class",
            "Castle Visit",
        ),
    )

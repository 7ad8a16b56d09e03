"""Stage 3 on small hand-made drafts: a window's initial radius spans 0..2 x its share of the
attribute's range (that share on average), a domain that states both sides of a window gets
one window, and cages on a domain without wide attributes use its widest ones."""

from __future__ import annotations

import random

from domains import GlobalRuleTemplate, get_domain
from gridbench_core.vocabulary import RuleKind
from pipeline.generation.cages import cage_attributes
from pipeline.generation.constrain import initial_radius, rule_templates, unbounded
from pipeline.generation.draft import Draft
from pipeline.generation.keys import GenerationSettings


def _draft(domain: str, seed: int) -> Draft:
    return Draft(get_domain(domain), 2, 3, random.Random(seed))


def test_a_window_s_initial_radius_spans_twice_its_share_and_averages_it():
    """course's price spans 100..500: a share of 0.1 is 40 units, so the radius is uniform in
    0..80 (mean 40): over 300 draws it passes 60 and averages near 40."""
    settings = GenerationSettings(window_slack_share=0.1)
    templates = next(
        group for group in rule_templates(get_domain("course").global_rules) if group[0].attribute == "price"
    )
    rules = tuple(unbounded(template) for template in templates)
    assert len(rules) == 2
    radii = [initial_radius(_draft("course", seed), rules, settings) for seed in range(300)]
    assert 0 <= min(radii) and max(radii) <= 80
    assert max(radii) > 60
    assert 34 <= sum(radii) / len(radii) <= 46


def test_a_domain_that_states_both_sides_of_a_window_gets_one_window():
    """``x_max`` and ``x_min`` both in the domain: one window of the two (in the domain's
    order), never a second window of ``x_min`` with a made-up partner; other rules alone."""
    x_max = GlobalRuleTemplate("x_max", RuleKind.SUM_MAX, "price")
    x_min = GlobalRuleTemplate("x_min", RuleKind.SUM_MIN, "price")
    other = GlobalRuleTemplate("same_teacher_max", RuleKind.REPEAT_MAX, "teacher")
    assert rule_templates((x_max, other, x_min)) == [(x_max, x_min), (other,)]
    assert rule_templates((x_min, x_max)) == [(x_min, x_max)]


def test_cages_on_a_domain_without_wide_attributes_use_its_widest():
    """toy's numeric attributes are both narrower than WIDE (cost 0..9, weight 1..9): one cage
    attribute is cost (the widest), two are both, whatever the seed."""
    for seed in range(10):
        assert cage_attributes(_draft("toy", seed), 1) == ["cost"]
        assert cage_attributes(_draft("toy", seed), 2) == ["cost", "weight"]

"""Stage 3: the grid-wide rules, drawn after the candidates, as bounds without a tell.

Every grid-scope sum of the domain's vocabulary becomes a two-sided *window* (its ``sum_max``
and a ``sum_min`` partner, or the reverse): with one-sided caps only, every decoy would have
to be worse than the truth on some capped attribute, which a classifier learns; a window
refutes candidates on either side. The other rules keep their one-sided meaning. How each
bound is then placed around the truth (a radius that repair and resistance decide, an offset
drawn once) is :mod:`pipeline.generation.bounds`: the truth's position inside a window is
uniform and tells nothing.

Initial radii: a window's is uniform in 0..2 * ``window_slack_share`` of one item's range (a
width of that share on average); a one-sided rule's is ``one_sided_spread`` standard
deviations of its measure over random completions (so its slack spreads over the range the
other completions cover). Large decoy budgets add the cage windows of
:mod:`pipeline.generation.cages`.
"""

from __future__ import annotations

import math

from domains import GlobalRuleTemplate
from gridbench_core.task import GlobalRule
from gridbench_core.vocabulary import SUM_KINDS, RuleKind, Scope
from pipeline.generation.bounds import Bound, place, spread
from pipeline.generation.cages import cage_bounds
from pipeline.generation.draft import Draft
from pipeline.generation.keys import GenerationSettings


def partner_name(name: str) -> str:
    """The name of the other side of a window: ``total_price_max`` -> ``total_price_min``."""
    if name.endswith("_max"):
        return name[: -len("_max")] + "_min"
    if name.endswith("_min"):
        return name[: -len("_min")] + "_max"
    return name + "_window"


def _window_side(template: GlobalRuleTemplate) -> bool:
    return template.kind in SUM_KINDS and template.scope == Scope.GRID


def rule_templates(templates: tuple[GlobalRuleTemplate, ...]) -> list[tuple[GlobalRuleTemplate, ...]]:
    """The domain's rules as bounds: each grid-scope sum with the other side of its window (the
    domain's own rule on that side when it has one, else a partner), every other rule alone;
    in the domain's order."""
    sides = {(t.attribute, t.kind): t for t in templates if _window_side(t)}
    out: list[tuple[GlobalRuleTemplate, ...]] = []
    taken: set[str] = set()
    for template in templates:
        if template.name in taken:
            continue
        if not _window_side(template):
            out.append((template,))
            continue
        other_kind = RuleKind.SUM_MIN if template.kind == RuleKind.SUM_MAX else RuleKind.SUM_MAX
        other = sides.get((template.attribute, other_kind)) or GlobalRuleTemplate(
            partner_name(template.name), other_kind, template.attribute
        )
        taken.add(other.name)
        out.append((template, other))
    return out


def unbounded(template: GlobalRuleTemplate) -> GlobalRule:
    """The rule of ``template`` with bound 0 (to measure with)."""
    return GlobalRule(
        template.name,
        template.kind,
        template.attribute,
        0,
        template.scope,
        template.equals,
        template.at_least,
    )


def initial_radius(draft: Draft, rules: tuple[GlobalRule, ...], settings: GenerationSettings) -> int:
    """A new bound's radius before repair (see the module's docstring)."""
    if len(rules) == 2:
        attribute = draft.domain.numeric(rules[0].attribute)
        top = int((attribute.high - attribute.low) * settings.window_slack_share)
        return draft.rng.randint(0, 2 * max(0, top))
    return math.ceil(settings.one_sided_spread * spread(draft, rules[0]) - 1e-9)


def draw_global_rules(draft: Draft, settings: GenerationSettings) -> None:
    """A bound per rule group of the domain (windows included), then the cage windows of a
    caged draft; each with its initial radius and its offset, and the rules placed."""
    draft.bounds = []
    for group in rule_templates(draft.domain.global_rules):
        rules = tuple(unbounded(template) for template in group)
        draft.bounds.append(Bound(rules, initial_radius(draft, rules, settings), draft.rng.random()))
    draft.bounds += cage_bounds(draft, settings)
    place(draft)

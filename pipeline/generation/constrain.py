"""Stage 3: the grid-wide rules, drawn after the candidates, with bounds the truth meets.

Every grid-scope sum of the domain's vocabulary becomes a two-sided window (a ``sum_min``
and a ``sum_max`` on the same attribute, the format's existing kinds): with one-sided caps
only, every decoy would have to be worse than the truth on some capped attribute, which a
classifier learns; a window refutes candidates on either side, so the truth can be any of
its cell's exchangeable candidates. Window sides sit a random slack away from the truth's
sum (up to ``window_slack_share`` of one item's range); repair (stage 4) narrows them.
The other rules are one-sided, with the domain's meaning, and a small random slack.

Large decoy budgets (``GenerationSettings.cage_bits``): the cage windows of
:mod:`pipeline.generation.cages` follow the domain's rules.
"""

from __future__ import annotations

from core.task import GlobalRule
from core.vocabulary import SUM_KINDS, RuleKind, Scope
from domains import GlobalRuleTemplate
from pipeline.generation.cages import cage_rules
from pipeline.generation.draft import Draft
from pipeline.generation.keys import GenerationSettings
from solvers.checker import rule_groups, rule_measure


def truth_measures(draft: Draft, rule: GlobalRule) -> list[int]:
    """The rule's measure on the truth grid, per group of its scope."""
    return [
        rule_measure(rule, [draft.truth_record(cell) for cell in group])
        for group in rule_groups(rule, draft.rows, draft.cols)
    ]


def partner_name(name: str) -> str:
    """The name of the other side of a window: ``total_price_max`` -> ``total_price_min``."""
    if name.endswith("_max"):
        return name[: -len("_max")] + "_min"
    if name.endswith("_min"):
        return name[: -len("_min")] + "_max"
    return name + "_window"


def rule_templates(templates: tuple[GlobalRuleTemplate, ...]) -> list[GlobalRuleTemplate]:
    """The domain's rules, each grid-scope sum followed by its window partner (unless the
    domain already bounds that attribute from the other side)."""
    sides = {(t.attribute, t.kind) for t in templates if t.kind in SUM_KINDS and t.scope == Scope.GRID}
    out = []
    for template in templates:
        out.append(template)
        if template.kind not in SUM_KINDS or template.scope != Scope.GRID:
            continue
        other = RuleKind.SUM_MIN if template.kind == RuleKind.SUM_MAX else RuleKind.SUM_MAX
        if (template.attribute, other) not in sides:
            out.append(GlobalRuleTemplate(partner_name(template.name), other, template.attribute))
    return out


def _slack(draft: Draft, template: GlobalRuleTemplate, share: float, count_p: float) -> int:
    rng = draft.rng
    if template.kind in SUM_KINDS:
        attribute = draft.domain.numeric(template.attribute)
        top = int((attribute.high - attribute.low) * share)
        return rng.randint(0, max(0, top))
    return 1 if rng.random() < count_p else 0


def draw_global_rules(draft: Draft, settings: GenerationSettings) -> None:
    """One rule per template of the domain (windows included), then the cage windows of a
    caged draft; bound = truth measure +/- a random slack (a window side: up to
    ``window_slack_share`` of one item's range, ``cage_slack_share`` for a cage window)."""
    draft.rules = []
    for template in rule_templates(draft.domain.global_rules):
        window = template.kind in SUM_KINDS and template.scope == Scope.GRID
        share = settings.window_slack_share if window else settings.sum_slack_share
        draft.rules.append(draw_rule(draft, template, share, settings.count_slack_probability))
    draft.rules += cage_rules(draft, settings.cage_slack_share)


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


def draw_rule(
    draft: Draft, template: GlobalRuleTemplate, slack_share: float, count_slack_p: float
) -> GlobalRule:
    """The rule of ``template`` with its bound drawn from the truth grid: a sum's slack is up
    to ``slack_share`` of one item's range, a count's one unit with chance ``count_slack_p``."""
    rule = unbounded(template)
    measures = truth_measures(draft, rule)
    slack = _slack(draft, template, slack_share, count_slack_p)
    if rule.is_upper_bound:
        return rule.with_bound(max(measures) + slack)
    return rule.with_bound(max(0, min(measures) - slack))

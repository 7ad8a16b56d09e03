"""Stage 2: global rules whose bounds the truth meets, tight enough that decoys exist."""

from __future__ import annotations

from domains import GlobalRuleTemplate
from pipeline.draft import Draft
from solvers.checker import rule_groups, rule_measure
from solvers.task import GlobalRule


def truth_measures(draft: Draft, rule: GlobalRule) -> list[int]:
    """The rule's measure on the truth grid, per group of its scope."""
    return [rule_measure(rule, [draft.truth_record(cell) for cell in group])
            for group in rule_groups(rule, draft.rows, draft.cols)]  # fmt: skip


def _slack(draft: Draft, template: GlobalRuleTemplate, share: float, count_p: float) -> int:
    rng = draft.rng
    if template.kind in ("sum_max", "sum_min"):
        attribute = draft.domain.numeric(template.attribute)
        top = int((attribute.high - attribute.low) * share)
        return rng.randint(0, max(0, top))
    return 1 if rng.random() < count_p else 0


def draw_global_rules(draft: Draft, sum_slack_share: float, count_slack_p: float) -> None:
    """One rule per template of the domain, bound = truth measure +/- a small slack."""
    draft.rules = []
    for template in draft.domain.global_rules:
        rule = GlobalRule(template.name, template.kind, template.attribute, 0, template.scope,
                          template.equals, template.at_least)  # fmt: skip
        measures = truth_measures(draft, rule)
        slack = _slack(draft, template, sum_slack_share, count_slack_p)
        if rule.is_upper_bound:
            bound = max(measures) + slack
        else:
            bound = max(0, min(measures) - slack)
        draft.rules.append(rule.with_bound(bound))


def truth_slack(draft: Draft, rule: GlobalRule) -> int:
    """How far the truth is from the rule's bound in its tightest group."""
    measures = truth_measures(draft, rule)
    return rule.bound - max(measures) if rule.is_upper_bound else min(measures) - rule.bound

"""Stage 3: the grid-wide rules, drawn after the candidates, with bounds the truth meets.

Every grid-scope sum of the domain's vocabulary becomes a two-sided window (a ``sum_min``
and a ``sum_max`` on the same attribute, the format's existing kinds): with one-sided caps
only, every decoy would have to be worse than the truth on some capped attribute, which a
classifier learns; a window refutes candidates on either side, so the truth can be any of
its cell's exchangeable candidates. Window sides sit a random slack away from the truth's
sum (up to ``window_slack_share`` of one item's range); repair (stage 4) narrows them.
The other rules are one-sided, with the domain's meaning, and a small random slack.

Large decoy budgets (``GenerationSettings.balance_bits``): :func:`balance_rows` gives every
row the same total of a numeric attribute by changing visible cells only, stated as a row
window. Extra windows (:func:`extra_windows`) are rules the domain does not state but its
attributes allow: a grid window on a numeric attribute without one, or a count window on one
value of a categorical attribute; repair of a balanced draft adds every one that separates a
counterexample agreeing with the truth on every rule the draft has. Both are drawn like every
other rule, from the truth grid, with both sides, so they refute candidates on either side.
"""

from __future__ import annotations

from domains import CategoricalAttribute, Domain, GlobalRuleTemplate, NumericAttribute
from gridbench.vocabulary import SUM_KINDS, RuleKind, Scope
from pipeline.generation.draft import Draft
from solvers.checker import rule_groups, rule_measure
from solvers.task import GlobalRule


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


def _slug(value: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in value.lower()).strip("_")


def extra_windows(domain: Domain) -> list[tuple[GlobalRuleTemplate, ...]]:
    """The windows the domain's attributes allow beyond its own rules, in a fixed order: a
    grid sum window (min, max) on each numeric attribute the domain does not bound, then a grid
    count window on each value of each categorical attribute (a side the domain already states
    is left out of its pair)."""
    own = rule_templates(domain.global_rules)
    stated = {(t.attribute, t.kind, t.equals) for t in own if t.scope == Scope.GRID}
    names = {t.name for t in own}
    pairs: list[tuple[GlobalRuleTemplate, ...]] = []
    for attribute in domain.attributes:
        if isinstance(attribute, NumericAttribute) and (attribute.name, RuleKind.SUM_MAX, None) not in stated:
            pairs.append(
                (
                    GlobalRuleTemplate(f"total_{attribute.name}_min", RuleKind.SUM_MIN, attribute.name),
                    GlobalRuleTemplate(f"total_{attribute.name}_max", RuleKind.SUM_MAX, attribute.name),
                )
            )
    for attribute in domain.attributes:
        if not isinstance(attribute, CategoricalAttribute):
            continue
        for value in attribute.values:
            slug = _slug(value)  # "Chef Dunn" of attribute chef: chef_dunn
            base = slug if slug.startswith(f"{attribute.name}_") else f"{attribute.name}_{slug}"
            pair = tuple(
                GlobalRuleTemplate(f"{base}_{side}", kind, attribute.name, equals=value)
                for kind, side in ((RuleKind.COUNT_MIN, "min"), (RuleKind.COUNT_MAX, "max"))
                if (attribute.name, kind, value) not in stated
            )
            if pair:
                pairs.append(pair)
    if len({t.name for pair in pairs for t in pair} | names) != len(names) + sum(map(len, pairs)):
        raise ValueError(f"domain {domain.name}: an extra window's name repeats a rule name")
    return pairs


def _slack(draft: Draft, template: GlobalRuleTemplate, share: float, count_p: float) -> int:
    rng = draft.rng
    if template.kind in SUM_KINDS:
        attribute = draft.domain.numeric(template.attribute)
        top = int((attribute.high - attribute.low) * share)
        return rng.randint(0, max(0, top))
    return 1 if rng.random() < count_p else 0


def draw_global_rules(
    draft: Draft, window_slack_share: float, sum_slack_share: float, count_slack_p: float
) -> None:
    """One rule per template: the domain's (windows included), a row window on each balanced
    attribute (:func:`balance_rows`), then the draft's extra windows; bound = truth measure
    +/- a random slack (a window side: up to ``window_slack_share`` of one item's range)."""
    rows = [pair for attribute in draft.balanced if (pair := balance_rows(draft, attribute))]
    draft.rules = []
    for template in rule_templates(draft.domain.global_rules):
        window = template.kind in SUM_KINDS and template.scope == Scope.GRID
        share = window_slack_share if window else sum_slack_share
        draft.rules.append(draw_rule(draft, template, share, count_slack_p))
    for template in [t for pair in rows for t in pair] + draft.extra:
        draft.rules.append(draw_rule(draft, template, window_slack_share, count_slack_p))


def balance_rows(draft: Draft, attribute: str) -> tuple[GlobalRuleTemplate, GlobalRuleTemplate] | None:
    """Give every row of the truth grid the same total of ``attribute`` by changing the values
    of its visible (fixed) cells within the attribute's range, the common total drawn at
    random among those every row can reach; then a row window (both sides) can hold every
    row at once. Candidates are never touched. None (nothing changed) when the rows cannot all
    reach one total (a row without enough visible cells)."""
    numeric = draft.domain.numeric(attribute)
    hidden = set(draft.hidden)
    fixed = [[(r, c) for c in range(draft.cols) if (r, c) not in hidden] for r in range(draft.rows)]
    totals = [
        sum(int(draft.truth_record((r, c))[attribute]) for c in range(draft.cols) if (r, c) in hidden)
        for r in range(draft.rows)
    ]
    low = max(t + len(f) * numeric.low for t, f in zip(totals, fixed, strict=True))
    high = min(t + len(f) * numeric.high for t, f in zip(totals, fixed, strict=True))
    if low > high:
        return None
    target, rng = draft.rng.randint(low, high), draft.rng
    for total, cells in zip(totals, fixed, strict=True):
        records = [draft.truth_record(cell) for cell in cells]
        missing = target - total - sum(int(record[attribute]) for record in records)
        while missing:
            step = 1 if missing > 0 else -1
            movable = [
                record
                for record in records
                if numeric.low <= int(record[attribute]) + step <= numeric.high  # type: ignore[call-overload]
            ]
            record = rng.choice(movable)
            room = numeric.high - int(record[attribute]) if step > 0 else int(record[attribute]) - numeric.low  # type: ignore[call-overload]
            move = rng.randint(1, min(abs(missing), room))
            record[attribute] = int(record[attribute]) + step * move  # type: ignore[call-overload]
            missing -= step * move
    noun = _slug(draft.domain.row_noun)
    return (
        GlobalRuleTemplate(f"{attribute}_per_{noun}_min", RuleKind.SUM_MIN, attribute, scope=Scope.ROW),
        GlobalRuleTemplate(f"{attribute}_per_{noun}_max", RuleKind.SUM_MAX, attribute, scope=Scope.ROW),
    )


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

"""What the audit knows of each option of a cell with decoys, read from the task file only.

(a) *candidate-side*: the option's own values (scaled to the natural range), its rank and
    z-score within the cell, its slot margins, how common its categories are in the cell,
    its list position, id and name ranks, and which way the domain's sum rules push each
    attribute. No bound values, no visible cells.
(b) *everything an agent can read without a check tool*: (a) plus the bounds and the
    visible cells -- room left under each cap, the per-cell share of what a sum still needs.
(The visible-cell features of the rule-free classifiers are :mod:`pipeline.integrity.context`.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domains import CategoricalAttribute, NumericAttribute, get_domain
from gridbench_core.task import GlobalRule, Slot, Task
from gridbench_core.vocabulary import SUM_KINDS, RuleKind, Scope
from solvers.checker import remembered, rule_groups

Features = dict[str, float]
# the feature names (by their ends) the audit's policies read (:data:`pipeline.integrity.
# policies.POLICIES`), besides the cell-wide ones of (a): what ``lean`` features keep
READ_SUFFIXES = (".room", ".abs_gap_to_share", ".abs_residual_rank")
POLICY_SUFFIXES = (".rank", ".margin", *READ_SUFFIXES)


def atypicality(values: list[dict[str, float]]) -> list[float]:
    """How far each option lies from its cell's typical option: per numeric field, the
    distance to the cell's median scaled by the cell's range, summed. The "most typical"
    shortcut picks the smallest; the integrity audit uses the same numbers."""
    fields = sorted({f for row in values for f in row})
    out = [0.0] * len(values)
    for field in fields:
        column = sorted(row.get(field, 0.0) for row in values)
        half = len(column) // 2
        middle = column[half] if len(column) % 2 else (column[half - 1] + column[half]) / 2
        width = (column[-1] - column[0]) or 1.0
        for k, row in enumerate(values):
            out[k] += abs(row.get(field, 0.0) - middle) / width
    return out


def _ranks(values: list[float]) -> list[float]:
    """Average ranks scaled to [0, 1] (0.5 for a single option)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2
        start = end + 1
    top = max(len(values) - 1, 1)
    return [rank / top for rank in ranks]


def sum_directions(domain_name: str) -> dict[str, int]:
    """Per attribute, the domain's own preference: -1 when its sum is capped (cheaper looks
    better), +1 when it is a minimum (more looks better)."""
    out: dict[str, int] = {}
    for template in get_domain(domain_name).global_rules:
        if template.kind in SUM_KINDS:
            out.setdefault(template.attribute, -1 if template.kind == RuleKind.SUM_MAX else +1)
    return out


def _z(values: list[float]) -> list[float]:
    """Each value's distance from the mean in standard deviations (spread 0 counts as 1)."""
    centre = sum(values) / len(values)
    spread = (sum((v - centre) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
    return [(v - centre) / spread for v in values]


def _name_number(name: str) -> float:
    digits = "".join(ch for ch in name if ch.isdigit())
    return float(digits) / 1000.0 if digits else 0.0


def candidate_side_features(task: Task, slot: Slot, options: list[str], lean: bool = False) -> list[Features]:
    """Feature set (a) for every option of one cell. ``lean``: only what the audit's policies
    read (the ranks, margins, positions and typicality; the same values, in the same order)."""
    domain = get_domain(task.domain)
    records = [task.items[i] for i in options]
    directions = sum_directions(task.domain)
    rows: list[Features] = [{} for _ in options]
    rank_sum = [0.0] * len(options)
    numeric: list[dict[str, float]] = [{} for _ in options]
    for attribute in domain.attributes:
        name = f"{task.domain}.{attribute.name}"
        if isinstance(attribute, NumericAttribute):
            values = [float(r[attribute.name]) for r in records]
            span = float(attribute.high - attribute.low)
            ranks, z = _ranks(values), ([] if lean else _z(values))
            for k, value in enumerate(values):
                if lean:
                    rows[k][f"{name}.rank"] = ranks[k]
                    rows[k][f"{name}.margin"] = _margin(slot, attribute.name, value) / span
                else:
                    rows[k][f"{name}.value"] = (value - attribute.low) / span
                    rows[k][f"{name}.rank"] = ranks[k]
                    rows[k][f"{name}.z"] = z[k]
                    rows[k][f"{name}.directed_rank"] = ranks[k] * directions.get(attribute.name, 0)
                    rows[k][f"{name}.margin"] = _margin(slot, attribute.name, value) / span
                rank_sum[k] += ranks[k] * directions.get(attribute.name, 0)
                numeric[k][attribute.name] = value
        elif isinstance(attribute, CategoricalAttribute) and lean:
            for k, record in enumerate(records):  # a value's flag only when a policy reads it
                if (flag := f"{name}={record[attribute.name]}").endswith(POLICY_SUFFIXES):
                    rows[k][flag] = 1.0
        elif isinstance(attribute, CategoricalAttribute):
            counts = Counter(r[attribute.name] for r in records)
            for k, record in enumerate(records):
                rows[k][f"{name}.share_in_cell"] = counts[record[attribute.name]] / len(options)
                rows[k][f"{name}={record[attribute.name]}"] = 1.0
    typical = atypicality(numeric)
    position = {item_id: n for n, item_id in enumerate(slot.candidates)}
    id_ranks = _ranks([float(sum(j < i for j in options)) for i in options])
    names = [str(task.items[i]["name"]) for i in options]
    name_ranks = _ranks([float(sum(m < n for m in names)) for n in names])
    if lean:
        for k, item_id in enumerate(options):
            rows[k].update(
                {
                    "position": position[item_id] / max(len(slot.candidates) - 1, 1),
                    "id_rank": id_ranks[k],
                    "name_rank": name_ranks[k],
                    "directed_rank_sum": rank_sum[k],
                    "atypicality": typical[k],
                }
            )
        return rows
    for k, item_id in enumerate(options):
        rows[k].update(
            {
                "position": position[item_id] / max(len(slot.candidates) - 1, 1),
                "id_rank": id_ranks[k],
                "name_rank": name_ranks[k],
                "name_number": _name_number(str(task.items[item_id]["name"])),
                "directed_rank_sum": rank_sum[k],
                "atypicality": typical[k],
                "options": float(len(options)),
            }
        )
    return rows


def _margin(slot: Slot, attribute: str, value: float) -> float:
    total = 0.0
    for rule in slot.constraints:
        if rule.attribute == attribute and rule.op in ("<=", ">="):
            threshold = float(rule.value)  # type: ignore[arg-type]
            total += threshold - value if rule.op == "<=" else value - threshold
    return total


def readable_features(
    task: Task,
    slot: Slot,
    options: list[str],
    side: list[Features],
    all_options: dict[tuple[int, int], list[str]],
    lean: bool = False,
) -> list[Features]:
    """Feature set (b): (a) (``side``) plus what the bounds, the visible cells and the other
    hidden cells' options (``all_options``: every cell's locally valid candidates, which an
    agent reads with the query tool) say about each option. ``lean``: only what the audit's
    policies read of the bounds (room under a cap, the gap to a sum's share, the rank of the
    gap to its residual), without (a)."""
    if lean:  # of (a), only a key a policy of (b) reads (a categorical value's flag, if any)
        rows = [{k: v for k, v in row.items() if k.endswith(READ_SUFFIXES)} for row in side]
    else:
        rows = [dict(row) for row in side]
    domain = get_domain(task.domain)
    cell = (slot.row, slot.col)
    for rule in task.global_constraints:
        group = next((g for g in rule_groups(rule, task.rows, task.cols) if cell in g), None)
        if group is None:
            continue  # a region rule over other cells
        facts = _group_facts(task, rule, group, all_options, domain)
        if not lean or rule.kind in SUM_KINDS or rule.kind == RuleKind.REPEAT_MAX:
            for k, item_id in enumerate(options):
                rows[k].update(facts.features(task.items[item_id]))
        if rule.kind in SUM_KINDS:
            values = [int(task.items[i][rule.attribute]) for i in options]
            # the other hidden cells of the group (listed in its order): their options' mean,
            # largest and smallest value
            others = [spread for other, spread in facts.options if other != cell]
            _residual_features(rows, rule, facts.name, values, facts.room, others, facts.span, lean)
    return rows


@dataclass(frozen=True)
class _GroupFacts:
    """What every cell of one group of a rule reads alike (:func:`_group_facts`)."""

    name: str
    features: Callable[[dict[str, Any]], Features]
    room: int  # a sum's bound less its visible cells' values (0 for other rules)
    span: float  # a sum's attribute range (1 for other rules)
    options: list[tuple[tuple[int, int], tuple[float, int, int]]]  # a sum's open cells


def _group_facts(
    task: Task, rule: GlobalRule, group: tuple[tuple[int, int], ...], all_options: Any, domain: Any
) -> _GroupFacts:
    """The visible cells' part of ``rule`` over ``group`` and, for a sum, each open cell's
    options' mean, largest and smallest value: worked out once per task inside
    :func:`solvers.checker.task_memo`, where every cell of the group reads them."""

    def compute() -> _GroupFacts:
        visible = [task.items[task.grid[r][c]] for r, c in group if task.grid[r][c] is not None]  # type: ignore[index]
        open_cells = sum(1 for r, c in group if task.grid[r][c] is None)
        name = f"{task.domain}.{rule.name}"
        if rule.scope == Scope.CELLS:  # the cell's own region: one name in every task
            name = f"{task.domain}.region_{rule.attribute}_{'max' if rule.is_upper_bound else 'min'}"
        features = _rule_features(rule, name, visible, open_cells, domain)
        if rule.kind not in SUM_KINDS:
            return _GroupFacts(name, features, 0, 1.0, [])
        attribute = domain.numeric(rule.attribute)
        options = []
        for c in group:
            if c in all_options:
                values = [int(task.items[i][rule.attribute]) for i in all_options[c]]
                options.append((c, (sum(values) / len(values), max(values), min(values))))
        room = rule.bound - sum(int(v[rule.attribute]) for v in visible)
        return _GroupFacts(name, features, room, float(attribute.high - attribute.low), options)

    return remembered("readable group", (task, rule, all_options), group, compute)


def _residual_features(
    rows: list[Features],
    rule: GlobalRule,
    name: str,
    values: list[int],
    room: int,
    others: list[tuple[float, int, int]],
    span: float,
    lean: bool = False,
) -> None:
    """Arithmetic on a sum: what is left for this cell once the visible cells and the other
    hidden cells' average options are counted (``others``: each one's mean, largest and
    smallest option), how far each option is from it (and its rank in the cell), and the room
    interval propagation leaves."""
    residual = room - sum(mean for mean, _, _ in others)
    lowest, highest = room - sum(high for _, high, _ in others), room - sum(low for _, _, low in others)
    gaps = [abs(v - residual) for v in values]
    ranks = _ranks([float(g) for g in gaps])
    if lean:
        for k in range(len(values)):
            rows[k][f"{name}.abs_residual_rank"] = ranks[k]
        return
    for k, value in enumerate(values):
        slack = (highest - value) if rule.kind == RuleKind.SUM_MAX else (value - lowest)
        rows[k].update(
            {
                f"{name}.residual_gap": (value - residual) / span,
                f"{name}.abs_residual_gap": gaps[k] / span,
                f"{name}.abs_residual_rank": ranks[k],
                f"{name}.interval_slack": slack / span,
            }
        )


def _rule_features(
    rule: GlobalRule, name: str, visible: list[dict], open_cells: int, domain: Any
) -> Callable[[dict[str, Any]], Features]:
    """The features ``rule`` gives an option (a function of its record); what the visible cells
    contribute is counted once."""
    attribute = rule.attribute
    if rule.kind in SUM_KINDS:
        numeric = domain.numeric(attribute)
        span = float(numeric.high - numeric.low)
        need = (rule.bound - sum(int(v[attribute]) for v in visible)) / open_cells

        def gap(record: dict[str, Any]) -> Features:
            value = (int(record[attribute]) - need) / span
            return {f"{name}.gap_to_share": value, f"{name}.abs_gap_to_share": abs(value)}

        return gap
    if rule.kind == RuleKind.REPEAT_MAX:
        used = Counter(v[attribute] for v in visible)
        return lambda record: {f"{name}.room": float(rule.bound - used[record[attribute]])}
    if rule.kind == RuleKind.COUNT_MIN_THRESHOLD:
        at_least = int(rule.at_least or 0)
        need_share = (rule.bound - sum(1 for v in visible if int(v[attribute]) >= at_least)) / open_cells
        return lambda record: {f"{name}.meets_x_need": float(int(record[attribute]) >= at_least) * need_share}
    share = (rule.bound - sum(1 for v in visible if v[attribute] == rule.equals)) / open_cells
    return lambda record: {f"{name}.has_x_need": float(record[attribute] == rule.equals) * share}

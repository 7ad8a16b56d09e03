"""Stage 3: decoys (pass the cell's rules, break a global rule) and filtered items.

A decoy for a cell is drawn like the truth (natural ranges restricted by the slot rules),
then one attribute is moved so that, with the truth everywhere else, one global rule breaks.
"Deep" decoys are preferred: ones that a partial global check on the visible cells plus the
decoy cannot refute, so the agent has to reason about the other hidden cells.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from domains import CategoricalAttribute
from pipeline.draft import Cell, Draft, Record
from pipeline.sample import allowed_range, sample_passing
from solvers.checker import VIOLATED, rule_groups, rule_measure, rule_status, slot_rule_holds
from solvers.task import GlobalRule, Value

DEEP_TRIES = 12
STUBBORN_AFTER = 3  # re-draws of one cell after which it only uses its most robust targets


@dataclass(frozen=True)
class Target:
    """Values of ``attribute`` that make a decoy in ``cell`` break ``rule``."""

    rule: GlobalRule
    attribute: str
    values: tuple[Value, ...] = ()  # categorical choices
    low: int = 0  # numeric range (used when ``values`` is empty)
    high: int = -1

    def is_empty(self) -> bool:
        return not self.values and self.low > self.high


def _group_of(draft: Draft, rule: GlobalRule, cell: Cell) -> list[Cell]:
    return next(g for g in rule_groups(rule, draft.rows, draft.cols) if cell in g)


def decoy_targets(draft: Draft, cell: Cell) -> list[Target]:
    """Every way a decoy in ``cell`` can break one rule while the other cells hold truths."""
    targets = []
    for rule in draft.rules:
        others = [draft.truth_record(c) for c in _group_of(draft, rule, cell) if c != cell]
        target = _target(draft, cell, rule, others)
        if target is not None and not target.is_empty():
            targets.append(target)
    return targets


def _target(draft: Draft, cell: Cell, rule: GlobalRule, others: list[Record]) -> Target | None:
    attribute, bound = rule.attribute, rule.bound
    slot_rules = draft.slot_rules[cell]
    if rule.kind in ("sum_max", "sum_min", "count_min_threshold"):
        low, high = allowed_range(draft.domain, attribute, slot_rules)
        rest = rule_measure(rule, others)
        if rule.kind == "sum_max":
            return Target(rule, attribute, low=max(low, bound - rest + 1), high=high)
        if rule.kind == "sum_min":
            return Target(rule, attribute, low=low, high=min(high, bound - rest - 1))
        if rest >= bound:
            return None
        return Target(rule, attribute, low=low, high=min(high, int(rule.at_least or 0) - 1))
    domain_attribute = draft.domain.attribute(attribute)
    if not isinstance(domain_attribute, CategoricalAttribute):
        raise TypeError(f"rule {rule.name}: {rule.kind} needs a categorical attribute")
    values = [v for v in domain_attribute.values
              if all(slot_rule_holds(r, {attribute: v}) for r in slot_rules
                     if r.attribute == attribute)]  # fmt: skip
    count = {v: sum(1 for record in others if record[attribute] == v) for v in values}
    if rule.kind == "repeat_max":
        chosen = [v for v in values if count[v] >= bound]
    elif rule.kind == "count_max":
        chosen = [v for v in values if v == rule.equals and count[v] >= bound]
    else:  # count_min
        chosen = [v for v in values if v != rule.equals] if count.get(str(rule.equals), 0) < bound \
            else []  # fmt: skip
    return Target(rule, attribute, values=tuple(chosen)) if chosen else None


def is_shallow(draft: Draft, cell: Cell, record: Record) -> bool:
    """True when one partial global check of the visible cells plus this item refutes it."""
    grid: list[list[str | None]] = [
        [None if (r, c) in draft.slot_rules else draft.truth[r][c] for c in range(draft.cols)]
        for r in range(draft.rows)
    ]
    grid[cell[0]][cell[1]] = "__probe__"
    items = {**draft.items, "__probe__": record}
    return any(rule_status(rule, grid, items) == VIOLATED
               for rule in draft.rules if rule.is_upper_bound)  # fmt: skip


def breaks_alone(draft: Draft, cell: Cell, record: Record) -> bool:
    """True when the truth grid with ``record`` in ``cell`` breaks a global rule."""
    grid: list[list[str | None]] = [list(row) for row in draft.truth]
    grid[cell[0]][cell[1]] = "__probe__"
    items = {**draft.items, "__probe__": record}
    return any(rule_status(rule, grid, items) == VIOLATED for rule in draft.rules)


def _target_value(target: Target, rng: random.Random, pushes: int) -> Value:
    """A value that breaks the target rule, leaning away from the threshold: the farthest of
    ``2 + pushes`` draws, so that other decoys rarely compensate it in a combination. A cell
    whose decoys keep being re-drawn (``pushes``) gets decoys that break harder."""
    if target.values:
        return rng.choice(target.values)
    draws = [rng.randint(target.low, target.high) for _ in range(2 + pushes)]
    return max(draws) if target.rule.kind == "sum_max" else min(draws)


def _tempt(draft: Draft, cell: Cell, record: Record, target: Target, share: float) -> None:
    """Make the decoy look a little better than the truth (by up to a quarter of the
    attribute's range) on the summed attributes it does not use to break a rule, with
    probability ``share`` each, so that "pick the cheapest" and its kin are no shortcut: a
    decoy is tempting in many places and wrong in one. The small step keeps decoys from
    compensating each other's violations in combinations."""
    rng, truth = draft.rng, draft.truth_record(cell)
    preferred: dict[str, str] = {}
    for rule in draft.rules:
        if rule.kind in ("sum_max", "sum_min") and rule.attribute != target.attribute:
            preferred.setdefault(rule.attribute, rule.kind)
    for attribute, kind in sorted(preferred.items()):
        if rng.random() >= share:
            continue
        low, high = allowed_range(draft.domain, attribute, draft.slot_rules[cell])
        value, step = int(truth[attribute]), max(1, (high - low) // 4)
        if kind == "sum_max":
            low, high = max(low, value - step), value - 1
        else:
            low, high = value + 1, min(high, value + step)
        if low <= high:
            record[attribute] = rng.randint(low, high)


def _robust_targets(targets: list[Target]) -> list[Target]:
    """For a cell whose decoys keep being compensated by other decoys: the targets that are
    hardest to compensate (categorical counts first, then the widest numeric ranges)."""
    categorical = [t for t in targets if t.values]
    if categorical:
        return categorical
    widest = max(t.high - t.low for t in targets)
    return [t for t in targets if t.high - t.low == widest]


def draw_decoy(draft: Draft, cell: Cell, want_deep: bool, temptation: float = 0.0,
               pushes: int = 0) -> tuple[str, bool] | None:  # fmt: skip
    """Add one decoy to ``cell``; returns (id, shallow) or None when the cell cannot host."""
    targets = decoy_targets(draft, cell)
    if not targets:
        return None
    rng = draft.rng
    if pushes >= STUBBORN_AFTER:
        targets = _robust_targets(targets)
    fallback: Record | None = None
    for _ in range(DEEP_TRIES if want_deep else 1):
        target = rng.choice(targets)
        record = sample_passing(draft.domain, draft.slot_rules[cell], rng)
        _tempt(draft, cell, record, target, temptation)
        record[target.attribute] = _target_value(target, rng, pushes)
        if not breaks_alone(draft, cell, record):
            continue  # defensive: the target arithmetic and the checker must agree
        if not is_shallow(draft, cell, record):
            return _add_decoy(draft, cell, record), False
        fallback = fallback or record
    if fallback is None:
        return None
    return _add_decoy(draft, cell, fallback), True


def _add_decoy(draft: Draft, cell: Cell, record: Record) -> str:
    item_id = draft.new_item(record)
    draft.decoys.setdefault(cell, []).append(item_id)
    return item_id


def allocate_decoys(draft: Draft, budget: int, cell_count: int, per_cell: int) -> dict[Cell, int]:
    """Choose ``cell_count`` hidden cells that can host decoys and split the budget among
    them (each at least one, at most ``per_cell``). Empty dict when impossible."""
    if budget == 0:
        return {}
    rng = draft.rng
    hostable = [cell for cell in draft.hidden if decoy_targets(draft, cell)]
    cell_count = max(cell_count, -(-budget // per_cell))
    if len(hostable) < cell_count:
        return {}
    chosen = sorted(rng.sample(hostable, cell_count))
    shares = dict.fromkeys(chosen, 1)
    for _ in range(budget - cell_count):
        open_cells = [cell for cell in chosen if shares[cell] < per_cell]
        shares[rng.choice(open_cells)] += 1
    return shares


def draw_filtered(draft: Draft, cell: Cell, count: int) -> None:
    """Add ``count`` items that break at least one slot rule of ``cell``."""
    rng, rules = draft.rng, draft.slot_rules[cell]
    filtered = draft.filtered.setdefault(cell, [])
    for _ in range(count):
        rule = rng.choice(rules)
        attribute = draft.domain.numeric(rule.attribute)
        record = sample_passing(draft.domain, rules, rng)
        threshold = int(rule.value)  # type: ignore[arg-type]
        if rule.op == "<=":
            record[rule.attribute] = rng.randint(threshold + 1, attribute.high)
        else:
            record[rule.attribute] = rng.randint(attribute.low, threshold - 1)
        filtered.append(draft.new_item(record))

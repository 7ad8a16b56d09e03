"""Stage 1: the truth grid, the hidden cells and their slot rules.

Slot thresholds are drawn first and the hidden truth items are then drawn from the natural
ranges restricted by those thresholds, exactly as decoys and filtered items are later; so a
truth is not distinguishable from a decoy by how comfortably it passes its slot rules.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from domains import Domain, NumericAttribute
from gridbench_core.task import SlotRule
from pipeline.generation.draft import Draft, Record


def draw_threshold(attribute: NumericAttribute, op: str, rng: random.Random) -> int:
    """A slot threshold that leaves room on both sides within the natural range."""
    span = attribute.high - attribute.low
    if op == "<=":
        return rng.randint(attribute.low + span // 3, attribute.high - 1)
    return rng.randint(attribute.low + 1, attribute.high - span // 3)


def allowed_range(domain: Domain, name: str, rules: list[SlotRule]) -> tuple[int, int]:
    """The natural range of a numeric attribute narrowed by the cell's slot rules."""
    attribute = domain.numeric(name)
    low, high = attribute.low, attribute.high
    for rule in rules:
        if rule.attribute == name and rule.op == "<=":
            high = min(high, int(rule.value))  # type: ignore[arg-type]
        elif rule.attribute == name and rule.op == ">=":
            low = max(low, int(rule.value))  # type: ignore[arg-type]
    return low, high


def sample_passing(domain: Domain, rules: list[SlotRule], rng: random.Random) -> Record:
    """An item from the natural ranges that passes ``rules`` (violating attributes re-drawn
    uniformly inside the allowed range, which is the exact conditional for uniform draws)."""
    return passing_sampler(domain, rules)(rng)


def passing_sampler(domain: Domain, rules: list[SlotRule]) -> Callable[[random.Random], Record]:
    """:func:`sample_passing` for one cell's ``rules``, with their allowed ranges worked out
    once: the same draws from the same stream, for a cell that draws many items."""
    ranges = [(rule.attribute, *allowed_range(domain, rule.attribute, rules)) for rule in rules]
    sample = domain.item_drawer()

    def draw(rng: random.Random) -> Record:
        record = sample(rng)
        for name, low, high in ranges:
            value = record[name]
            if not (isinstance(value, int) and low <= value <= high):
                # randint's draw without its call layers (an empty range: randint's refusal)
                record[name] = low + rng._randbelow(high - low + 1) if low <= high else rng.randint(low, high)  # type: ignore[attr-defined]
        return record

    return draw


def draw_slot_rules(domain: Domain, max_rules: int, rng: random.Random) -> list[SlotRule]:
    """1 to ``max_rules`` slot rules on distinct attributes, in vocabulary order."""
    count = rng.randint(1, min(max_rules, len(domain.slot_rules)))
    chosen = sorted(rng.sample(range(len(domain.slot_rules)), count))
    rules = []
    for index in chosen:
        template = domain.slot_rules[index]
        attribute = domain.numeric(template.attribute)
        rules.append(SlotRule(template.attribute, template.op, draw_threshold(attribute, template.op, rng)))
    return rules


def sample_grid(draft: Draft, hidden_slots: int, max_slot_rules: int) -> None:
    """Fill ``draft`` with hidden cells, slot rules and a truth item in every cell."""
    rng, domain = draft.rng, draft.domain
    cells = draft.cells()
    draft.hidden = sorted(rng.sample(cells, hidden_slots))
    for cell in draft.hidden:
        draft.slot_rules[cell] = draw_slot_rules(domain, max_slot_rules, rng)
    draft.truth = [["" for _ in range(draft.cols)] for _ in range(draft.rows)]
    for cell in cells:
        rules = draft.slot_rules.get(cell, [])
        draft.truth[cell[0]][cell[1]] = draft.new_item(sample_passing(domain, rules, rng))

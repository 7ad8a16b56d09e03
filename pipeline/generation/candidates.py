"""Stage 2: the candidates of every hidden cell.

Exchangeable by construction: a cell that hosts decoys draws all of its locally valid
candidates (truth and decoys) independently from one distribution -- the natural ranges
narrowed by the cell's slot rules -- and only then is the truth chosen uniformly among them.
Nothing about a candidate (values, ranks, margins, position, id, name) depends on whether it
is the truth; the grid-wide rules drawn afterwards (stage 3) are what refutes the others.
Filtered candidates break at least one slot rule of their cell.
"""

from __future__ import annotations

import random

from domains.base import Plan, uniform_plan
from gridbench_core.task import SlotRule
from pipeline.generation.draft import Cell, Draft, Record
from pipeline.generation.sample import allowed_range, passing_sampler


def allocate_decoys(draft: Draft, budget: int, cell_count: int, per_cell: int) -> dict[Cell, int]:
    """Choose ``cell_count`` hidden cells and split the budget among them (each at least one,
    at most ``per_cell``). Empty dict when the budget is 0 or cannot be placed."""
    if budget == 0:
        return {}
    rng = draft.rng
    cell_count = max(cell_count, -(-budget // per_cell))
    if len(draft.hidden) < cell_count:
        return {}
    chosen = sorted(rng.sample(draft.hidden, cell_count))
    shares = dict.fromkeys(chosen, 1)
    for _ in range(budget - cell_count):
        open_cells = [cell for cell in chosen if shares[cell] < per_cell]
        shares[rng.choice(open_cells)] += 1
    return shares


def draw_exchangeable(draft: Draft, cell: Cell, decoys: int) -> None:
    """Draw ``decoys`` more locally valid items beside the cell's current truth (drawn from
    the same distribution by stage 1), then make a uniformly chosen one of them the truth."""
    rules = draft.slot_rules[cell]
    pool = [draft.truth[cell[0]][cell[1]]]
    draw, rng = passing_sampler(draft.domain, rules), draft.rng
    pool += [draft.new_item(draw(rng)) for _ in range(decoys)]
    truth = pool.pop(draft.rng.randrange(len(pool)))
    draft.truth[cell[0]][cell[1]] = truth
    draft.decoys[cell] = pool


def draw_filtered(draft: Draft, cell: Cell, count: int) -> None:
    """Add ``count`` items that break at least one slot rule of ``cell``."""
    rng, rules = draft.rng, draft.slot_rules[cell]
    filtered = draft.filtered.setdefault(cell, [])
    # per rule: the range of values that break it (``choice`` and ``randint`` draw through
    # ``_randbelow``, as below, so the stream is theirs; an empty range keeps randint's refusal)
    breaking = [(rule.attribute, *_breaking_range(draft, rule)) for rule in rules]
    if count and not breaking:  # choice's refusal, where the old loop met it
        raise IndexError("Cannot choose from an empty sequence")
    plan = uniform_plan(draft.domain)
    if plan is not None and type(rng) is random.Random:
        made = _filtered_records(draft, rng, plan, rules, breaking, count)
        if made is not None:
            filtered += made
            return
    draw, below = passing_sampler(draft.domain, rules), rng._randbelow  # type: ignore[attr-defined]
    for _ in range(count):
        name, low, high = breaking[below(len(breaking))]
        record = draw(rng)
        record[name] = low + below(high - low + 1) if low <= high else rng.randint(low, high)
        filtered.append(draft.new_item(record))


def _filtered_records(
    draft: Draft,
    rng: random.Random,
    plan: Plan,
    rules: list[SlotRule],
    breaking: list[tuple[str, int, int]],
    count: int,
) -> list[str] | None:
    """:func:`draw_filtered`'s items for a ``random.Random`` and the domain's uniform sampler,
    with every draw written out in one loop: the rule to break, the item drawer's values, the
    passing sampler's re-draws, then the breaking value, each as ``_randbelow`` draws it
    (``getrandbits(n.bit_length())`` until the draw is below ``n``). A 10x10 task has some
    thousand filtered items, and the call layers of the general loop were most of their cost.
    None when a range is empty (the general loop refuses it as ``randint`` does, where it is
    met). tests/pipeline/generation/test_sampling_stream.py holds both loops to the same items
    and the same generator state."""
    allowed = [allowed_range(draft.domain, rule.attribute, rules) for rule in rules]
    ranges = [
        (rule.attribute, low, high, high - low + 1) for rule, (low, high) in zip(rules, allowed, strict=True)
    ]
    breaks = [(name, low, high - low + 1) for name, low, high in breaking]
    if any(width < 1 for *_, width in ranges + breaks):  # type: ignore[operator]
        return None
    getrandbits, new_item = rng.getrandbits, draft.new_item
    rule_count, rule_bits = len(breaks), len(breaks).bit_length()
    made = []
    for _ in range(count):
        drawn = getrandbits(rule_bits)
        while drawn >= rule_count:
            drawn = getrandbits(rule_bits)
        broken, broken_low, broken_width = breaks[drawn]
        record: Record = {}
        for name, low, width, values, bits in plan:
            drawn = getrandbits(bits)
            while drawn >= width:
                drawn = getrandbits(bits)
            record[name] = low + drawn if values is None else values[drawn]
        for name, low, high, width in ranges:
            value = record[name]
            if not (isinstance(value, int) and low <= value <= high):
                bits = width.bit_length()
                drawn = getrandbits(bits)
                while drawn >= width:
                    drawn = getrandbits(bits)
                record[name] = low + drawn
        bits = broken_width.bit_length()
        drawn = getrandbits(bits)
        while drawn >= broken_width:
            drawn = getrandbits(bits)
        record[broken] = broken_low + drawn
        made.append(new_item(record))
    return made


def _breaking_range(draft: Draft, rule: SlotRule) -> tuple[int, int]:
    """The values of ``rule``'s attribute, in its natural range, that break ``rule``."""
    attribute = draft.domain.numeric(rule.attribute)
    threshold = int(rule.value)  # type: ignore[arg-type]
    return (threshold + 1, attribute.high) if rule.op == "<=" else (attribute.low, threshold - 1)

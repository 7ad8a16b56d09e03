"""Stage 2: the candidates of every hidden cell.

Exchangeable by construction: a cell that hosts decoys draws all of its locally valid
candidates (truth and decoys) independently from one distribution -- the natural ranges
narrowed by the cell's slot rules -- and only then is the truth chosen uniformly among them.
Nothing about a candidate (values, ranks, margins, position, id, name) depends on whether it
is the truth; the grid-wide rules drawn afterwards (stage 3) are what refutes the others.
Filtered candidates break at least one slot rule of their cell.
"""

from __future__ import annotations

from gridbench_core.task import SlotRule
from pipeline.generation.draft import Cell, Draft
from pipeline.generation.sample import passing_sampler


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
    draw = passing_sampler(draft.domain, rules)
    # per rule: the range of values that break it (``choice`` and ``randint`` draw through
    # ``_randbelow``, as below, so the stream is theirs; an empty range keeps randint's refusal)
    breaking = [(rule.attribute, *_breaking_range(draft, rule)) for rule in rules]
    if count and not breaking:  # choice's refusal, where the old loop met it
        raise IndexError("Cannot choose from an empty sequence")
    below = rng._randbelow  # type: ignore[attr-defined]
    for _ in range(count):
        name, low, high = breaking[below(len(breaking))]
        record = draw(rng)
        record[name] = low + below(high - low + 1) if low <= high else rng.randint(low, high)
        filtered.append(draft.new_item(record))


def _breaking_range(draft: Draft, rule: SlotRule) -> tuple[int, int]:
    """The values of ``rule``'s attribute, in its natural range, that break ``rule``."""
    attribute = draft.domain.numeric(rule.attribute)
    threshold = int(rule.value)  # type: ignore[arg-type]
    return (threshold + 1, attribute.high) if rule.op == "<=" else (attribute.low, threshold - 1)

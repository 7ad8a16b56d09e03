"""Propagation leaves out the rows that are entailed (their least favourable options still meet
the bound): the domains and the verdict must be those of revising every row, whatever the
domains it starts from (an empty cell included) and wherever a probe starts it."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from solvers.checker import locally_valid_candidates
from solvers.ladder import _Propagator
from solvers.propagation import LinearRow, entailed, linear_rows
from tests.strategies import small_tasks


def _every_row(rows: list[LinearRow], domains: dict, spread: list[int]) -> bool:
    """The reference: revise every row, entailed or not, until none changes anything."""
    changed = True
    while changed:
        changed = False
        for row, widest in zip(rows, spread, strict=True):
            result = _Propagator._revise(row, domains, widest)
            if result is None:
                return False
            changed = changed or bool(result)
    return True


def _from_cell(rows: list[LinearRow], domains: dict, spread: list[int], cell) -> bool:
    """The reference of a probe's start: the queue of the code before (every row of ``cell``,
    entailed or not, then every row of a cell that changes)."""
    rows_of: dict = {}
    for index, row in enumerate(rows):
        for each in row.coefficients:
            rows_of.setdefault(each, []).append(index)
    queue = list(rows_of.get(cell, []))
    queued = set(queue)
    while queue:
        index = queue.pop()
        queued.discard(index)
        changed = _Propagator._revise(rows[index], domains, spread[index])
        if changed is None:
            return False
        for each in changed:
            for other in rows_of[each]:
                if other not in queued:
                    queued.add(other)
                    queue.append(other)
    return True


def _holds(row: LinearRow, choice: dict) -> bool:
    total = row.constant + sum(row.coefficients[cell][option] for cell, option in choice.items())
    return total <= row.bound if row.upper else total >= row.bound


@given(small_tasks(), st.data())
def test_leaving_out_entailed_rows_changes_no_domain_and_no_verdict(task, data):
    options = {(s.row, s.col): locally_valid_candidates(task, s) for s in task.slots}
    rows = linear_rows(task, options)
    for row in rows:
        if entailed(row):  # truly: every combination of its options meets the bound
            cells = list(row.coefficients)
            for combo in itertools.product(*(row.coefficients[cell] for cell in cells)):
                assert _holds(row, dict(zip(cells, combo, strict=True))), row
    propagator = _Propagator(rows)
    # start from any sub-domains (an empty one included), from every row or from one cell's
    domains = {
        cell: set(data.draw(st.sets(st.sampled_from(ids)))) if ids else set() for cell, ids in options.items()
    }
    cell = data.draw(st.sampled_from([None, *options]))
    mine = {c: set(ids) for c, ids in domains.items()}
    reference = {c: set(ids) for c, ids in domains.items()}
    verdict = propagator.fixpoint(mine, cell)
    if cell is None:
        assert verdict == _every_row(rows, reference, propagator.spread)
        if verdict:
            assert mine == reference
    else:  # a probe's start: the rows of that cell, then what their changes reach
        assert verdict == _from_cell(rows, reference, propagator.spread, cell)
        if verdict:
            assert mine == reference

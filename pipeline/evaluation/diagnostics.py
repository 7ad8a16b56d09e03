"""How an episode went, not only whether it succeeded: trajectory diagnostics computed from its
calls and the task's answer (docs/evaluation.md, "Diagnostics", defines each with a worked
example).

- ``informed_step`` / ``informed_turn``: the first call (and model turn) after which what the
  agent had learnt decides the task at the rung of the reasoning ladder that decides it with
  every fact (its certified depth): the *view* -- each hidden cell's candidates that no fact
  rules out, and the rules whose attribute is known for every option and visible item they
  cover -- run through :func:`solvers.ladder.rung_domains` leaves every cell its truth alone
  (for a task of depth ``search``: the view has one completion, proved by CP-SAT). Null when
  the agent never knew enough.
- ``wasted_queries`` (a query whose answer the facts before it implied), ``wasted_checks`` (a
  slot check whose every rule's answer was known, or a global check of a grid already
  checked), ``wasted_calls`` (both).
- ``wrong_sets`` (set_slot of a candidate other than the cell's truth), ``first_wrong_step``
  and ``first_wrong_undone`` (whether that cell later lost that candidate).
- ``violations_introduced`` / ``violations_repaired`` / ``violations_at_end``: after each
  set_slot, the global rules the grid violates (the checker's partial-grid statuses) and the
  cells holding a candidate that breaks one of their slot rules; what appeared, went, stayed.
- ``ideal_calls``: the calls of a reference agent that reads once each attribute the rules
  need (per hidden cell, and for the visible items), places every cell once and calls done.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import polars as pl

from gridbench_core.task import Answer, GlobalRule, Slot, Task
from gridbench_core.vocabulary import RuleKind
from pipeline.evaluation.knowledge import Call, Knowledge, Value, cell_of
from solvers.checker import passes_slot, rule_excess, rule_groups, rule_measure
from solvers.ladder import FIXPOINT, PROBING, RUNGS, SEARCH, reasoning_depth, rung_domains
from solvers.propagation import propagate

Cell = tuple[int, int]

# The columns diagnose() adds to a results row (null in rows of runs made before them).
DIAGNOSTIC_COLUMNS: dict[str, Any] = {
    "depth_rung": pl.String,
    "informed_step": pl.Int64,
    "informed_turn": pl.Int64,
    "wasted_queries": pl.Int64,
    "wasted_checks": pl.Int64,
    "wasted_calls": pl.Int64,
    "wrong_sets": pl.Int64,
    "first_wrong_step": pl.Int64,
    "first_wrong_undone": pl.Boolean,
    "violations_introduced": pl.Int64,
    "violations_repaired": pl.Int64,
    "violations_at_end": pl.Int64,
    "queries_left": pl.Int64,
    "checks_left": pl.Int64,
    "ideal_calls": pl.Int64,
}


def task_rung(task: Task, answer: Answer) -> int:
    """The rung that decides ``task``: its certified depth, or the ladder's when not recorded."""
    depth = answer.measures.depth if answer.measures is not None else None
    return depth.rung if depth is not None else reasoning_depth(task).rung


def diagnose(task: Task, answer: Answer, calls: Sequence[Call]) -> dict[str, Any]:
    """The diagnostics of one episode (every column of :data:`DIAGNOSTIC_COLUMNS` but the
    budgets left, which the episode itself knows)."""
    rung = task_rung(task, answer)
    informed = informed_step(task, answer, calls, rung)
    wasted = wasted_calls(task, calls)
    return {
        "depth_rung": RUNGS[rung],
        "informed_step": informed,
        "informed_turn": calls[informed - 1].turn if informed is not None else None,
        **wasted,
        **wrong_moves(answer, calls),
        **violations(task, calls),
        "ideal_calls": ideal_calls(task),
    }


# Information sufficiency ---------------------------------------------------------------------


PROOF_WORK = 1.0  # CP-SAT's deterministic time for a proof of one completion (about a second)
OTHER = "\x00other"  # a category no rule names (a count_* rule's "not equal")


def favourable(rule: GlobalRule, known: Value | None, unique: str) -> Any:
    """The value of an option that is most favourable to ``rule`` among those its facts
    allow, as the rule reads it: the exact value when known; else the smallest possible value
    for a sum with a cap, the largest for a sum with a floor, a value that does not count for a
    count with a cap, the counted value when it is possible for a count with a floor; None when
    the facts bound nothing, and for a repeat limit (only exact values are used there). With the
    most favourable values the ladder reasons soundly: an option it rules out breaks the rule
    whatever its true value, and the others are judged against a best case at least as good
    as the truth."""
    exact = known.exact() if known is not None else None
    if exact is not None:
        return exact
    kind, attribute_known = rule.kind, known or Value()
    if kind == RuleKind.SUM_MAX:
        return attribute_known.low
    if kind == RuleKind.SUM_MIN:
        return attribute_known.high
    if kind == RuleKind.REPEAT_MAX:
        return None  # a value of its own would be sound but makes one row per option: not used
    if kind == RuleKind.COUNT_MAX:
        return OTHER
    if kind == RuleKind.COUNT_MIN:
        return rule.equals if attribute_known.status("=", rule.equals) is not False else OTHER
    threshold = int(rule.at_least or 0)  # count_min_threshold: counted when >= at_least
    high = attribute_known.high
    return threshold if high is None or high >= threshold else threshold - 1


def group_values(
    task: Task, knowledge: Knowledge, options: dict[Cell, list[str]], rule: GlobalRule, group: Sequence[Cell]
) -> dict[str, Any] | None:
    """The value every option and visible item of ``group`` takes for ``rule`` in the view
    (:func:`favourable` for an option, the value read for a visible item); None when one has
    none (the group cannot be used)."""
    values: dict[str, Any] = {}
    for row, col in group:
        if (row, col) in options:
            for item in options[(row, col)]:
                known = knowledge.values.get(((row, col), item, rule.attribute))
                value = favourable(rule, known, f"\x00{row},{col},{item}")
                if value is None:
                    return None
                values[item] = value
        else:
            item = str(task.grid[row][col])
            if (item, rule.attribute) not in knowledge.visible:
                return None
            values[item] = knowledge.visible[(item, rule.attribute)]
    return values


def view_task(task: Task, knowledge: Knowledge) -> Task | None:
    """The task as the agent's facts show it: each hidden cell's options (no fact rules them
    out), and each rule group whose every option has a most favourable value the facts allow
    (:func:`favourable`) and whose visible items were read, as a cell-scoped rule over an
    attribute of its own (``@<rule>``). None when some cell with several options is covered
    by no such group (then no reasoning can decide it)."""
    options = {cell: knowledge.options(cell) for cell in knowledge.slots}
    items: dict[str, dict[str, Any]] = {item: {"id": item} for ids in options.values() for item in ids}
    rules: list[GlobalRule] = []
    covered: set[Cell] = set()
    for number, rule in enumerate(task.global_constraints):
        for index, group in enumerate(rule_groups(rule, task.rows, task.cols)):
            values = group_values(task, knowledge, options, rule, group)
            if values is None:
                continue
            for item, value in values.items():
                items.setdefault(item, {"id": item})[f"@{number}"] = value
            rules.append(_group_rule(rule, f"@{number}", index, group))
            covered.update(group)
    if any(len(ids) > 1 and cell not in covered for cell, ids in options.items()):
        return None
    for rule in rules:  # every item has every attribute (a solver sizes its bounds over all)
        numeric = rule.kind in (RuleKind.SUM_MAX, RuleKind.SUM_MIN, RuleKind.COUNT_MIN_THRESHOLD)
        for record in items.values():
            record.setdefault(rule.attribute, 0 if numeric else OTHER)
    slots = tuple(Slot(cell[0], cell[1], tuple(options[cell]), ()) for cell in sorted(options))
    return Task(task.task_id, task.domain, task.rows, task.cols, 0, task.grid, items, slots, tuple(rules))


def _group_rule(rule: GlobalRule, attribute: str, index: int, group: Sequence[Cell]) -> GlobalRule:
    return GlobalRule(
        f"{rule.name}#{index}", rule.kind, attribute, rule.bound, "cells", rule.equals, rule.at_least,
        tuple(sorted(group)),
    )  # fmt: skip


def decides(view: Task, rung: int, truth: dict[Cell, str]) -> bool:
    """Whether the ladder's ``rung`` leaves every hidden cell of ``view`` its truth alone
    (``search``: the view has exactly one completion)."""
    options = {(s.row, s.col): list(s.candidates) for s in view.slots}
    domains: Mapping[Cell, Collection[str]]
    if rung <= FIXPOINT:
        result = propagate(view, options)
        domains = (options, result.after_one_round, result.fixpoint)[rung]
    else:
        domains = rung_domains(view)[PROBING]
    if all(list(domains[cell]) == [truth[cell]] for cell in domains):
        return True
    if rung < SEARCH or any(truth[cell] not in domains[cell] for cell in domains):
        return False
    from solvers.cpsat import CpSatModel
    from solvers.results import INFEASIBLE, SolverSettings

    # a proof CP-SAT does not find within its deterministic work limit counts as no decision
    settings = SolverSettings(time_limit_s=30.0, deterministic_limit=PROOF_WORK)
    return CpSatModel(view, settings, truth=truth).other_completion().status == INFEASIBLE


class Coverage:
    """Whether every hidden cell with several options is covered by a usable rule group (a
    view can be decided only then), kept up to date as facts arrive. Facts only accumulate,
    so a usable group stays usable and an option once ruled out stays out: only the groups of
    cells with new facts (all groups, after a read of visible items) that are not usable yet
    are judged again, and only those cells' options."""

    def __init__(self, task: Task, knowledge: Knowledge) -> None:
        self.task, self.knowledge = task, knowledge
        self.groups: list[tuple[GlobalRule, tuple[Cell, ...]]] = [
            (rule, tuple(group))
            for rule in task.global_constraints
            for group in rule_groups(rule, task.rows, task.cols)
        ]
        self.bounded: dict[tuple[Cell, str], bool] = {}  # (cell, rule): every option has a value
        self.of_cell: dict[Cell, list[int]] = {}
        for index, (_, group) in enumerate(self.groups):
            for cell in group:
                self.of_cell.setdefault(cell, []).append(index)
        self.usable = [False] * len(self.groups)
        self.visible = -1
        self.waiting = set(knowledge.slots)  # open cells no usable group covers yet
        knowledge.touched.update(knowledge.slots)

    def covered(self) -> bool:
        """Take in the new facts; whether every open cell is covered."""
        knowledge = self.knowledge
        touched = set(knowledge.touched)
        knowledge.touched.clear()
        indices = {index for cell in touched for index in self.of_cell.get(cell, [])}
        if len(knowledge.visible) != self.visible:
            self.visible = len(knowledge.visible)
            indices = set(range(len(self.groups)))
        for key in [key for key in self.bounded if key[0] in touched]:
            del self.bounded[key]
        options = {cell: knowledge.options(cell) for cell in knowledge.slots}
        for index in sorted(indices):
            rule, group = self.groups[index]
            if not self.usable[index] and self._usable(options, rule, group):
                self.usable[index] = True
                touched.update(cell for cell in group if cell in options)
        for cell in touched & self.waiting:
            if len(options[cell]) <= 1 or any(self.usable[i] for i in self.of_cell.get(cell, [])):
                self.waiting.discard(cell)
        return not self.waiting

    def _usable(self, options: dict[Cell, list[str]], rule: GlobalRule, group: Sequence[Cell]) -> bool:
        """:func:`group_values` is not None, from each cell's answer kept until it learns more."""
        for cell in group:
            if cell not in options:
                if (str(self.task.grid[cell[0]][cell[1]]), rule.attribute) not in self.knowledge.visible:
                    return False
                continue
            key = (cell, rule.name)
            if key not in self.bounded:
                self.bounded[key] = group_values(self.task, self.knowledge, options, rule, [cell]) is not None
            if not self.bounded[key]:
                return False
        return True


def informed_step(task: Task, answer: Answer, calls: Sequence[Call], rung: int) -> int | None:
    """The first step after which the agent's facts decide the task at ``rung`` (None: never).

    Facts only accumulate and every rung is monotone in them, so sufficiency, once reached,
    stays: a forward pass finds the first step at which every cell with several options is
    covered by a usable rule (necessary, and kept up to date cheaply); if the facts at the end
    decide the task, a binary search over the steps from there that taught something finds the
    first that does (each probe replays the calls from a copy of the facts at that point)."""
    truth = answer.truth_choice()
    knowledge = Knowledge(task)
    coverage = Coverage(task, knowledge)
    taught: list[int] = []
    start: Knowledge | None = None
    for call in calls:
        new = knowledge.read(call)
        if start is None:
            if (new or call.step == 1) and coverage.covered():
                start = knowledge.copy()
                taught.append(call.step)
        elif new:
            taught.append(call.step)
    if start is None:
        return None
    final = view_task(task, knowledge)
    if final is None or not decides(final, rung, truth):
        return None
    first = taught[0]

    def sufficient(step: int) -> bool:
        facts = start.copy()
        for call in calls[first:step]:
            facts.read(call)
        view = view_task(task, facts)
        return view is not None and decides(view, rung, truth)

    low, high = 0, len(taught) - 1  # taught[high] suffices; find the first that does
    while low < high:
        middle = (low + high) // 2
        if sufficient(taught[middle]):
            high = middle
        else:
            low = middle + 1
    return taught[low]


# Wasted calls, wrong moves, violations --------------------------------------------------------


def wasted_calls(task: Task, calls: Sequence[Call]) -> dict[str, int]:
    """Queries whose answer was implied, and checks whose answer was known (slot) or already
    given for the same grid (global)."""
    knowledge = Knowledge(task)
    grid = [list(row) for row in task.grid]
    checked: set[tuple[str | None, ...]] = set()
    queries = checks = 0
    for call in calls:
        if call.status == "ok":
            args = call.arguments
            if call.kind == "query":
                queries += knowledge.query_implied(call)
            elif call.kind == "slot_check":
                cell = cell_of(args)
                checks += knowledge.slot_check_implied(cell, knowledge.placed.get(cell) if cell else None)
            elif call.kind == "global_check":
                key = tuple(item for row in grid for item in row)
                checks += key in checked
                checked.add(key)
            elif call.kind == "set_slot" and cell_of(args) in knowledge.slots:
                grid[args["row"]][args["col"]] = args.get("id")
        knowledge.read(call)
    return {"wasted_queries": queries, "wasted_checks": checks, "wasted_calls": queries + checks}


def wrong_moves(answer: Answer, calls: Sequence[Call]) -> dict[str, Any]:
    """How many set_slot calls placed a candidate other than the truth; the first one, and
    whether its cell later lost that candidate (cleared or set to another)."""
    truth = answer.truth_choice()
    wrong, first, undone = 0, None, None
    for call in calls:
        cell = cell_of(call.arguments) if call.kind == "set_slot" and call.status == "ok" else None
        if cell not in truth:
            continue
        placed = call.arguments.get("id")
        if first is not None and not undone and cell == first[1] and placed != first[2]:
            undone = True
        if placed is not None and placed != truth[cell]:
            wrong += 1
            if first is None:
                first, undone = (call.step, cell, placed), False
    return {
        "wrong_sets": wrong,
        "first_wrong_step": first[0] if first else None,
        "first_wrong_undone": undone,
    }


class Violations:
    """The violations of a grid as set_slot changes it: the global rules the grid violates
    (the checker's statuses of a partial grid: upper bounds on the filled cells, lower bounds
    once the grid is complete), and ``slot (r, c)`` for each hidden cell holding a candidate
    that breaks one of its slot rules. Each rule group keeps its measure up to date as cells
    change: a sum of the checker's measure of each item (every kind but ``repeat_max`` adds up
    item by item), or the count of each value (``repeat_max``: the largest count)."""

    def __init__(self, task: Task) -> None:
        self.task, self.grid = task, [list(row) for row in task.grid]
        self.rules = task.global_constraints
        self.of_cell: dict[Cell, list[tuple[int, int]]] = {}
        self.totals: dict[tuple[int, int], Any] = {}
        self.weights: dict[tuple[int, str], Any] = {}  # (rule, item) -> its measure, or its value
        for r, rule in enumerate(self.rules):
            for g, group in enumerate(rule_groups(rule, task.rows, task.cols)):
                self.totals[(r, g)] = Counter() if rule.kind == RuleKind.REPEAT_MAX else 0
                for cell in group:
                    self.of_cell.setdefault(cell, []).append((r, g))
                    self._add(r, g, self.grid[cell[0]][cell[1]], 1)
        self.slots = {(s.row, s.col): s for s in task.slots}
        self.empty = sum(self.grid[r][c] is None for r, c in self.slots)
        self.bad_slots: set[Cell] = set()
        self.lower = [key for key in self.totals if not self.rules[key[0]].is_upper_bound]
        self.broken = {key for key in self.totals if self._broken(*key)}

    def _add(self, r: int, g: int, item: str | None, sign: int) -> None:
        if item is None or item not in self.task.items:
            return
        key = (r, item)
        if key not in self.weights:
            rule, record = self.rules[r], self.task.items[item]
            repeat = rule.kind == RuleKind.REPEAT_MAX
            self.weights[key] = record[rule.attribute] if repeat else rule_measure(rule, [record])
        if isinstance(self.totals[(r, g)], Counter):
            self.totals[(r, g)][self.weights[key]] += sign
        else:
            self.totals[(r, g)] += sign * self.weights[key]

    def _broken(self, r: int, g: int) -> bool:
        rule, total = self.rules[r], self.totals[(r, g)]
        if not rule.is_upper_bound and self.empty:
            return False  # pending until the grid is complete
        measure = max(total.values(), default=0) if isinstance(total, Counter) else total
        return rule_excess(rule, measure) > 0

    def set(self, cell: Cell, item: str | None) -> list[str]:
        """Put ``item`` in hidden ``cell``; the names violated now, sorted."""
        old = self.grid[cell[0]][cell[1]]
        was_complete = not self.empty
        self.empty += (item is None) - (old is None)
        self.grid[cell[0]][cell[1]] = item
        changed = list(self.of_cell.get(cell, []))
        for r, g in changed:
            self._add(r, g, old, -1)
            self._add(r, g, item, 1)
        if was_complete != (not self.empty):  # lower bounds switch between pending and judged
            changed += self.lower
        for key in changed:
            if self._broken(*key):
                self.broken.add(key)
            else:
                self.broken.discard(key)
        record = self.task.items.get(item) if item is not None else None
        self.bad_slots.discard(cell)
        if record is not None and not passes_slot(self.slots[cell], record):
            self.bad_slots.add(cell)
        names = {self.rules[r].name for r, _ in self.broken}
        return sorted(names | {f"slot ({r}, {c})" for r, c in self.bad_slots})


def violation_track(task: Task, calls: Sequence[Call]) -> list[tuple[int, list[str]]]:
    """(step, violated names) after every set_slot that changed the grid."""
    tracker = Violations(task)
    track = []
    for call in calls:
        cell = cell_of(call.arguments) if call.kind == "set_slot" and call.status == "ok" else None
        if cell in tracker.slots and tracker.grid[cell[0]][cell[1]] != call.arguments.get("id"):
            track.append((call.step, tracker.set(cell, call.arguments.get("id"))))
    return track


def violations(task: Task, calls: Sequence[Call]) -> dict[str, int]:
    """Violations introduced and repaired by the set_slot calls, and those left at the end."""
    before: set[str] = set()
    introduced = repaired = 0
    for _, names in violation_track(task, calls):
        now = set(names)
        introduced += len(now - before)
        repaired += len(before - now)
        before = now
    return {
        "violations_introduced": introduced,
        "violations_repaired": repaired,
        "violations_at_end": len(before),
    }


def ideal_calls(task: Task) -> int:
    """Calls of the reference agent: one query per hidden cell and attribute its slot rules
    or the rules covering it read, one ``get_{d}_item_attributes`` per attribute the rules
    read of visible cells, one set_slot per hidden cell, and done."""
    hidden = {(s.row, s.col): {rule.attribute for rule in s.constraints} for s in task.slots}
    visible: set[str] = set()
    for rule in task.global_constraints:
        for group in rule_groups(rule, task.rows, task.cols):
            for cell in group:
                if cell in hidden:
                    hidden[cell].add(rule.attribute)
                else:
                    visible.add(rule.attribute)
    return sum(len(attributes) for attributes in hidden.values()) + len(visible) + len(hidden) + 1

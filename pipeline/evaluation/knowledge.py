"""What an agent knows, call by call: the facts its tool results gave it about the candidates
of the hidden cells and the visible items (docs/evaluation.md, "Diagnostics").

An agent learns a candidate's attributes only from the query tool: a query of a hidden cell
returns the candidates whose ``field`` meets ``operator value``, with that field's value. So a
query tells, for every candidate of the cell, either its value of the field (it was returned)
or that the value fails the condition (it was not). A slot check of a placed candidate tells
which of the cell's slot rules it meets; ``get_{d}_item_info`` / ``get_{d}_item_attributes``
give the values of visible items. Everything else (global checks, set_slot) gives no fact
about an attribute. A value is known as a set of possible values: an interval with holes for
a number, a set of allowed or of excluded categories for a category.

Calls are read from an episode's trace (``{"tool", "arguments", "result"}`` per call, what
:class:`gridbench.env.Episode` records); only calls whose result is ``ok`` carry facts, and
their arguments are read the way the environment accepted them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gridbench_core.task import SlotRule, Task

Cell = tuple[int, int]
KINDS = {
    "candidate_from_attribute": "query",
    "item_info": "item_info",
    "item_attributes": "item_attributes",
    "slot_constraints": "slot_check",
    "global_constraints": "global_check",
}


@dataclass(frozen=True)
class Call:
    """One tool call of an episode as the diagnostics read it: its kind (``set_slot``,
    ``query``, ``slot_check``, ``global_check``, ``item_info``, ``item_attributes``, ``done``,
    or the common tool's name), its arguments as the environment read them ({} when they
    could not be read), its result's status and data, and the model turn it belongs to."""

    step: int
    kind: str
    arguments: dict[str, Any]
    status: str
    data: Any
    turn: int


def kind_of(name: Any, domain: str) -> str:
    """The kind of a tool name: a domain tool without its domain, a common tool as it is."""
    if not isinstance(name, str):
        return ""
    for suffix, kind in KINDS.items():
        if name in (f"query_{domain}_{suffix}", f"get_{domain}_{suffix}", f"check_{domain}_{suffix}"):
            return kind
    return name


def read_calls(trace: Sequence[Any], domain: str, turns: Sequence[int] | None = None) -> list[Call]:
    """The calls of an episode trace; ``turns`` gives each call's model turn (default: its
    step, for agents that act one call at a time)."""
    calls = []
    for index, raw in enumerate(trace):
        entry: dict[str, Any] = raw if isinstance(raw, dict) else {}
        result: dict[str, Any] = entry["result"] if isinstance(entry.get("result"), dict) else {}
        status = str(result.get("status", ""))
        arguments = _arguments(entry.get("arguments")) if status == "ok" else {}
        turn = turns[index] if turns is not None and index < len(turns) else index + 1
        calls.append(
            Call(index + 1, kind_of(entry.get("tool"), domain), arguments, status, result.get("data"), turn)
        )
    return calls


def cell_of(args: dict[str, Any]) -> Cell | None:
    """The (row, col) the arguments name, when both are integers."""
    row, col = args.get("row"), args.get("col")
    if type(row) is int and type(col) is int:  # not a bool
        return row, col
    return None


def _arguments(raw: Any) -> dict[str, Any]:
    """Arguments as the environment read them: numbers sent as text, lists sent as JSON text."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return {}
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ("row", "col"):
            out[key] = _integer(value)
        elif key in ("id", "field", "operator"):
            text = value.strip() if isinstance(value, str) else value
            out[key] = None if key == "id" and str(text).lower() in ("", "null", "none") else text
        elif key in ("ids", "value"):
            out[key] = _listed(value)
    return out


def _integer(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return value


def _listed(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] == "[":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return _integer(value)


@dataclass
class Value:
    """What is known of one attribute of one item: for a number an interval ``[low, high]``
    (None: unbounded) with excluded ``holes``; for a category the ``allowed`` set (None: any)
    and the ``excluded`` ones."""

    low: int | None = None
    high: int | None = None
    holes: set[int] = field(default_factory=set)
    allowed: frozenset[str] | None = None
    excluded: set[str] = field(default_factory=set)

    def copy(self) -> Value:
        """An independent copy."""
        return Value(self.low, self.high, set(self.holes), self.allowed, set(self.excluded))

    def exact(self) -> Any:
        """The value when it is known exactly, else None."""
        if self.low is not None and self.low == self.high:
            return self.low
        if self.allowed is not None and len(self.allowed) == 1:
            return next(iter(self.allowed))
        return None

    def learn(self, operator: str, value: Any, holds: bool) -> None:
        """Add the fact that ``operator value`` holds (or does not) of the value."""
        if isinstance(value, int) and not isinstance(value, bool):
            self._number(operator, value, holds)
        elif operator in ("=", "in", "not_in") and isinstance(value, str | list):
            chosen = _chosen(value)
            inside = holds if operator != "not_in" else not holds  # the value is in ``chosen``
            if inside:
                self.allowed = chosen if self.allowed is None else self.allowed & chosen
            else:
                self.excluded |= chosen
            if self.allowed is not None:
                self.allowed = frozenset(v for v in self.allowed if v not in self.excluded)

    def _number(self, operator: str, value: int, holds: bool) -> None:
        flipped = {"<=": ">", "<": ">=", ">=": "<", ">": "<="}
        operator = operator if holds else flipped.get(operator, "!=" if operator == "=" else operator)
        if operator == "=":
            self.low = value if self.low is None else max(self.low, value)
            self.high = value if self.high is None else min(self.high, value)
        elif operator == "!=":
            self.holes.add(value)
        elif operator in ("<=", "<"):
            top = value if operator == "<=" else value - 1
            self.high = top if self.high is None else min(self.high, top)
        elif operator in (">=", ">"):
            bottom = value if operator == ">=" else value + 1
            self.low = bottom if self.low is None else max(self.low, bottom)
        while self.low is not None and self.low in self.holes and (self.high is None or self.low < self.high):
            self.low += 1
        while (
            self.high is not None and self.high in self.holes and (self.low is None or self.high > self.low)
        ):
            self.high -= 1

    def status(self, operator: str, value: Any) -> bool | None:
        """Whether ``operator value`` holds of the value: True, False, or None (not known)."""
        if isinstance(value, int) and not isinstance(value, bool):
            return self._number_status(operator, value)
        if not isinstance(value, str | list | tuple):
            return None
        chosen = _chosen(value)
        inside: bool | None = None  # whether the value is in ``chosen``
        if not chosen:
            inside = False
        elif self.allowed is not None and self.allowed <= chosen:
            inside = True
        elif (self.allowed is not None and not self.allowed & chosen) or (chosen and chosen <= self.excluded):
            inside = False
        if inside is None or operator not in ("=", "in", "not_in"):
            return None
        return inside if operator != "not_in" else not inside

    def _number_status(self, operator: str, value: int) -> bool | None:
        low, high = self.low, self.high
        if operator == "=":
            if low == high == value:
                return True
            outside = (low is not None and value < low) or (high is not None and value > high)
            return False if outside or value in self.holes else None
        top = value if operator in ("<=", ">") else value - 1  # "value <= top" means "<=" / "<" hold
        if operator in ("<=", "<"):
            return (
                True if high is not None and high <= top else False if low is not None and low > top else None
            )
        bottom = value if operator in (">=", "<") else value + 1
        return (
            True
            if low is not None and low >= bottom
            else False
            if high is not None and high < bottom
            else None
        )


def _chosen(value: str | list[Any] | tuple[Any, ...]) -> frozenset[str]:
    """The categories a condition names (one, or a list)."""
    return frozenset([value] if isinstance(value, str) else [v for v in value if isinstance(v, str)])


class Knowledge:
    """The facts of the calls read so far (:meth:`read`), per (hidden cell, candidate) and per
    visible item, and which calls added none (``idle``)."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.slots = {(s.row, s.col): s for s in task.slots}
        self.values: dict[tuple[Cell, str, str], Value] = {}
        self.slot_facts: dict[tuple[Cell, str, int], bool] = {}
        self.visible: dict[tuple[str, str], Any] = {}  # (item, attribute) -> value
        self.visible_ids = {i for row in task.grid for i in row if i is not None}
        self.placed: dict[Cell, str | None] = {}  # what set_slot put in each cell (slot checks read it)
        self._options: dict[Cell, list[str]] = {}  # per cell, until a fact about it arrives
        self.touched: set[Cell] = set()  # cells with new facts since the caller last emptied it

    def copy(self) -> Knowledge:
        """An independent copy of the facts (the task is shared)."""
        other = Knowledge.__new__(Knowledge)
        other.task, other.slots, other.visible_ids = self.task, self.slots, self.visible_ids
        other.values = {key: value.copy() for key, value in self.values.items()}
        other.slot_facts, other.visible, other.placed = (
            dict(self.slot_facts),
            dict(self.visible),
            dict(self.placed),
        )
        other._options, other.touched = {}, set()
        return other

    def value(self, cell: Cell, item: str, attribute: str) -> Value:
        """What is known of ``attribute`` of candidate ``item`` in ``cell``."""
        key = (cell, item, attribute)
        if key not in self.values:
            self.values[key] = Value()
        return self.values[key]

    def read(self, call: Call) -> bool:
        """Add the facts of ``call``; whether it taught anything new (a fact, or a value)."""
        if call.status != "ok":
            return False
        args = call.arguments
        if call.kind == "set_slot":
            cell = cell_of(args)
            if cell in self.slots:
                self.placed[cell] = args.get("id")  # type: ignore[index]
            return False
        if call.kind == "query":
            return self._query(args, call.data)
        if call.kind == "slot_check":
            return self._slot_check(args, call.data)
        if call.kind in ("item_info", "item_attributes") and isinstance(call.data, dict):
            return self._visible(call.kind, args, call.data)
        return False

    def _query(self, args: dict[str, Any], data: Any) -> bool:
        cell, attribute = cell_of(args), args.get("field")
        if (
            cell is None
            or cell not in self.slots
            or not isinstance(attribute, str)
            or not isinstance(data, dict)
        ):
            return False
        returned = {
            c["id"]: c.get(attribute)
            for c in data.get("candidates") or []
            if isinstance(c, dict) and "id" in c
        }
        operator, value = (
            str(args.get("operator")),
            self._query_value(attribute, args.get("operator"), args.get("value")),
        )
        new = False
        for item in self.slots[cell].candidates:
            known = self.value(cell, item, attribute)
            before = (known.low, known.high, len(known.holes), known.allowed, len(known.excluded))
            if item in returned:
                known.learn("=", returned[item], True)
            else:
                known.learn(operator, value, False)
            new |= before != (known.low, known.high, len(known.holes), known.allowed, len(known.excluded))
        if new:
            self._forget(cell)
        return new

    def _forget(self, cell: Cell) -> None:
        """Drop what was derived about ``cell`` (a new fact about it arrived)."""
        self.touched.add(cell)
        self._options.pop(cell, None)

    def _query_value(self, attribute: str, operator: Any, value: Any) -> Any:
        sample = next(iter(self.task.items.values()), {}).get(attribute)
        if isinstance(sample, int) and isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        if operator in ("in", "not_in") and isinstance(value, str):
            return [value]
        return value

    def _slot_check(self, args: dict[str, Any], data: Any) -> bool:
        cell = cell_of(args)
        placed = self.placed.get(cell) if cell is not None else None
        if cell is None or placed is None or not isinstance(data, dict):
            return False
        new = False
        for index, result in enumerate(data.get("constraints") or []):
            if isinstance(result, dict) and isinstance(result.get("satisfied"), bool):
                key = (cell, placed, index)
                new |= key not in self.slot_facts
                self.slot_facts[key] = result["satisfied"]
        if new:
            self._forget(cell)
        return new

    def _visible(self, kind: str, args: dict[str, Any], data: dict[str, Any]) -> bool:
        if kind == "item_info":
            pairs = [(str(data.get("id")), k, v) for k, v in data.items() if k not in ("id", "name")]
        else:
            pairs = [(str(i), str(args.get("field")), v) for i, v in data.items()]
        new = False
        for item, attribute, value in pairs:
            new |= (item, attribute) not in self.visible
            self.visible[(item, attribute)] = value
        return new

    # What the facts decide ------------------------------------------------------------------

    def rule_status(self, cell: Cell, item: str, index: int, rule: SlotRule) -> bool | None:
        """Whether candidate ``item`` meets slot rule ``index`` of ``cell``, as far as known."""
        fact = self.slot_facts.get((cell, item, index))
        if fact is not None:
            return fact
        key = (cell, item, rule.attribute)
        return self.values[key].status(rule.op, rule.value) if key in self.values else None

    def options(self, cell: Cell) -> list[str]:
        """The candidates of ``cell`` that no fact rules out (none is known to break a slot rule)."""
        if cell not in self._options:
            rules = self.slots[cell].constraints
            self._options[cell] = [
                item
                for item in self.slots[cell].candidates
                if not any(self.rule_status(cell, item, k, rule) is False for k, rule in enumerate(rules))
            ]
        return self._options[cell]

    def query_implied(self, call: Call) -> bool:
        """Whether the answer of a query was implied by the facts before it: every candidate
        of the cell known to match or not, and every match's value known."""
        args = call.arguments
        cell, attribute = cell_of(args), args.get("field")
        if cell is None or cell not in self.slots or not isinstance(attribute, str):
            return False
        value = self._query_value(attribute, args.get("operator"), args.get("value"))
        for item in self.slots[cell].candidates:
            key = (cell, item, attribute)
            if key not in self.values:
                return False
            holds = self.values[key].status(str(args.get("operator")), value)
            if holds is None or (holds and self.values[key].exact() is None):
                return False
        return True

    def slot_check_implied(self, cell: Cell | None, item: str | None) -> bool:
        """Whether every slot rule's answer for the item placed in ``cell`` was known."""
        if cell is None or cell not in self.slots or item is None:
            return False
        rules = self.slots[cell].constraints
        return all(self.rule_status(cell, item, k, rule) is not None for k, rule in enumerate(rules))


def replay(task: Task, calls: Iterable[Call]) -> Knowledge:
    """The knowledge after ``calls``."""
    knowledge = Knowledge(task)
    for call in calls:
        knowledge.read(call)
    return knowledge

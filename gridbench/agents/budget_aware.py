"""A budget-aware baseline: read what the rules need with the query tools, reason on it
(interval propagation and search over what was read), and spend global checks only to
confirm. It shows that the paper's budgets never stop a perfect agent.

1. Read every visible item (free: ``get_{d}_item_info``).
2. Per hidden cell, spend its attribute queries on the fields the global rules use, the most
   selective first (a narrow sum window before a wide one, sums before categories). With one
   hidden cell a window is a per-cell interval, so the query itself filters (``field >= low``).
3. Keep the candidates that pass the cell's own rules (free: ``set_slot`` + slot check).
4. Model what is known -- the rules whose attribute was read for every option -- and search it
   (CP-SAT) for the completions; place the first, confirm with one global check, and try the
   next only if the check refutes it.
"""

from __future__ import annotations

import random
from typing import Any

from gridbench.agents.base import call, hidden_cells, passes_slot
from gridbench.env import Episode
from gridbench_core.task import GlobalRule, Slot, Task
from gridbench_core.vocabulary import RuleKind
from solvers.cpsat import CpSatModel
from solvers.results import FEASIBLE

Cell = tuple[int, int]
MAX_TRIES = 50  # completions tried with global checks before giving up


def _field_order(task: Task) -> list[str]:
    """The fields the rules use, the most telling first: grid-sum windows by their width
    relative to the bounds, then other sums, then counted and repeated categories."""
    windows: dict[str, list[int]] = {}
    for rule in task.global_constraints:
        if rule.kind in (RuleKind.SUM_MAX, RuleKind.SUM_MIN) and rule.scope == "grid":
            windows.setdefault(rule.attribute, []).append(rule.bound)

    def key(attribute: str) -> tuple[int, float]:
        bounds = windows.get(attribute)
        if bounds and len(bounds) == 2:
            return 0, (max(bounds) - min(bounds)) / max(max(bounds), 1)
        kinds = {r.kind for r in task.global_constraints if r.attribute == attribute}
        return (1 if kinds & {RuleKind.SUM_MAX, RuleKind.SUM_MIN, RuleKind.COUNT_MIN_THRESHOLD} else 2), 0.0

    return sorted({r.attribute for r in task.global_constraints}, key=lambda a: (key(a), a))


class BudgetAwareAgent:
    """Reads within the query budgets, reasons, and confirms with few global checks."""

    name = "budget_aware"

    def play(self, episode: Episode, rng: random.Random) -> None:
        """Read each hidden cell within its budget, search what was read for a completion, place it
        and confirm it with global checks, then call ``done``."""
        task = episode.task
        self.episode = episode
        self.items = self._visible_items()
        cells = hidden_cells(episode)
        fields = _field_order(task)
        options: dict[Cell, list[str]] = {}
        for cell in cells:
            options[cell] = self._read_cell(cell, fields, len(cells) == 1)
            options[cell] = [i for i in options[cell] if passes_slot(episode, cell, i)]
            call(episode, "set_slot", row=cell[0], col=cell[1], id=None)
        self._solve(task, options)
        call(episode, "done")

    # Reading -----------------------------------------------------------------------------

    def _visible_items(self) -> dict[str, dict[str, Any]]:
        task, items = self.episode.task, {}
        for item_id in {i for row in task.grid for i in row if i is not None}:
            result = call(self.episode, f"get_{task.domain}_item_info", id=item_id)
            if result["status"] == "ok":
                items[item_id] = dict(result["data"])
        return items

    def _budget(self, cell: Cell) -> int | None:
        result = call(self.episode, "get_hidden_slot_query_budget", row=cell[0], col=cell[1])
        return (
            None
            if result["status"] != "ok" or result["data"]["unlimited"]
            else int(result["data"]["remaining"])
        )

    def _read_cell(self, cell: Cell, fields: list[str], single: bool) -> list[str]:
        """Query the cell's fields within its budget; returns the ids still possible."""
        budget = self._budget(cell)
        known: set[str] | None = None
        for field in fields[: budget if budget is not None else len(fields)]:
            operator, value, interval = self._condition(cell, field, single)
            result = call(
                self.episode,
                f"query_{self.episode.task.domain}_candidate_from_attribute",
                row=cell[0],
                col=cell[1],
                field=field,
                operator=operator,
                value=value,
            )
            if result["status"] != "ok":
                break
            matched = set()
            for candidate in result["data"]["candidates"]:
                self.items.setdefault(candidate["id"], {"id": candidate["id"]})[field] = candidate[field]
                if interval is None or interval[0] <= candidate[field] <= interval[1]:
                    matched.add(candidate["id"])
            known = matched if known is None else known & matched
        return sorted(known or [])

    def _condition(self, cell: Cell, field: str, single: bool) -> tuple[str, Any, Any]:
        """(operator, value, interval kept): a filter when one hidden cell makes a window a
        per-cell interval, otherwise a condition every candidate meets."""
        numeric = self.episode.attributes.get(field) == "number"
        if single and numeric:
            low, high = self._single_cell_interval(cell, field)
            return ">=", low, (low, high)
        return (">=", 0, None) if numeric else ("not_in", [], None)

    def _single_cell_interval(self, cell: Cell, field: str) -> tuple[int, int]:
        task, low, high = self.episode.task, 0, 10**12
        visible = sum(
            int(v[field])
            for v in self.items.values()
            if field in v and v["id"] in {i for row in task.grid for i in row if i is not None}
        )
        for rule in task.global_constraints:
            if rule.attribute == field and rule.scope == "grid":
                if rule.kind == RuleKind.SUM_MAX:
                    high = min(high, rule.bound - visible)
                elif rule.kind == RuleKind.SUM_MIN:
                    low = max(low, rule.bound - visible)
        return low, high

    # Reasoning ---------------------------------------------------------------------------

    def _known_rules(self, options: dict[Cell, list[str]]) -> list[GlobalRule]:
        ids = [i for row in self.episode.task.grid for i in row if i is not None]
        ids += [i for found in options.values() for i in found]
        return [
            rule
            for rule in self.episode.task.global_constraints
            if all(rule.attribute in self.items.get(i, {}) for i in ids)
        ]

    def _solve(self, task: Task, options: dict[Cell, list[str]]) -> None:
        if any(not found for found in options.values()):
            return
        rules = self._known_rules(options)
        used = {i for found in options.values() for i in found}
        used |= {i for row in task.grid for i in row if i is not None}
        known = Task(
            task.task_id,
            task.domain,
            task.rows,
            task.cols,
            0,
            task.grid,
            {i: self.items[i] for i in used},
            tuple(Slot(r, c, tuple(options[(r, c)]), ()) for r, c in options),
            tuple(rules),
        )
        model = CpSatModel(known)
        tried: list[dict[Cell, str]] = []
        check = f"check_{task.domain}_global_constraints"
        for _ in range(MAX_TRIES):
            result = model.solve(self._exclude(model, tried))
            if result.status != FEASIBLE or result.solution is None:
                return
            for (row, col), item_id in result.solution.items():
                call(self.episode, "set_slot", row=row, col=col, id=item_id)
            verdict = call(self.episode, check)  # confirm; with every rule read, once is enough
            if verdict["status"] != "ok" or verdict["data"]["all_satisfied"]:
                return  # confirmed, or no check left: keep the best completion found
            tried.append(result.solution)

    def _exclude(self, model: CpSatModel, tried: list[dict[Cell, str]]) -> list[Any]:
        """Literals that forbid each completion already refuted by a global check."""
        return [model.excluding(solution) for solution in tried]

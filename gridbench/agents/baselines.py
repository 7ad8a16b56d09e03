"""Baseline policies: random, greedy_local, search (DFS with the tools), and shortcut
policies that audit integrity (they must do no better than chance on decoy cells)."""

from __future__ import annotations

import random
from collections.abc import Callable

from gridbench.agents.base import Agent, call, discover, hidden_cells, passes_slot, slot_passing
from gridbench.env import Episode
from gridbench_core.errors import UserError
from pipeline.integrity.features import atypicality


class RandomAgent:
    """A random candidate for each hidden cell, with no checks."""

    name = "random"

    def play(self, episode: Episode, rng: random.Random) -> None:
        """Place a random candidate in each hidden cell, then call ``done``."""
        for cell in hidden_cells(episode):
            candidates = discover(episode, cell)
            if candidates:
                call(episode, "set_slot", row=cell[0], col=cell[1], id=rng.choice(candidates)["id"])
        call(episode, "done")


class GreedyLocalAgent:
    """The first listed candidate that passes the cell's slot check."""

    name = "greedy_local"

    def play(self, episode: Episode, rng: random.Random) -> None:
        """Place in each hidden cell the first candidate that passes its slot check, then call ``done``."""
        for cell in hidden_cells(episode):
            for candidate in discover(episode, cell):
                if passes_slot(episode, cell, candidate["id"]):
                    break
        call(episode, "done")


class SearchAgent:
    """Depth-first search: slot checks prune filtered items, partial global checks prune
    decoys; when the check budget runs out it keeps going on slot checks alone."""

    name = "search"

    def play(self, episode: Episode, rng: random.Random) -> None:
        """Search the hidden cells depth first for a completion the checks accept, then call ``done``."""
        self.episode, self.cells = episode, hidden_cells(episode)
        self.options: dict[int, list[str]] = {}
        self.check_tool = f"check_{episode.task.domain}_global_constraints"
        self._dfs(0)
        call(episode, "done")

    def _consistent(self, at_leaf: bool) -> bool:
        result = call(self.episode, self.check_tool)
        if result["status"] != "ok":
            return True  # no check left (or it kept failing): cannot refute, go on
        data = result["data"]
        return bool(data["all_satisfied"]) if at_leaf else not data["violated"]

    def _dfs(self, depth: int) -> bool:
        if depth == len(self.cells):
            return True
        cell = self.cells[depth]
        if depth not in self.options:
            self.options[depth] = slot_passing(self.episode, cell)
        for item_id in self.options[depth]:
            call(self.episode, "set_slot", row=cell[0], col=cell[1], id=item_id)
            if self._consistent(depth + 1 == len(self.cells)) and self._dfs(depth + 1):
                return True
        if self.options[depth]:
            call(self.episode, "set_slot", row=cell[0], col=cell[1], id=None)
        return False


class ShortcutAgent:
    """Among the candidates that pass the slot check, pick by a surface feature."""

    def __init__(self, name: str) -> None:
        self.name = name

    def play(self, episode: Episode, rng: random.Random) -> None:
        """Place in each hidden cell the slot-passing candidate this shortcut picks, then call ``done``."""
        for cell in hidden_cells(episode):
            options = slot_passing(episode, cell)
            if options:
                call(episode, "set_slot", row=cell[0], col=cell[1], id=self._pick(episode, cell, options))
        call(episode, "done")

    def _pick(self, episode: Episode, cell: tuple[int, int], options: list[str]) -> str:
        if self.name == "shortcut_smallest_id":
            return min(options)
        if self.name == "shortcut_first_listed":
            return options[0]
        values: dict[str, dict[str, int]] = {item: {} for item in options}
        for field, kind in sorted(episode.attributes.items()):
            if kind == "number":
                for candidate in discover(episode, cell, field):
                    if candidate["id"] in values:
                        values[candidate["id"]][field] = int(candidate[field])
        scores = atypicality([{f: float(v) for f, v in values[i].items()} for i in options])
        return min(zip(scores, options, strict=True))[1]


AGENTS: dict[str, Callable[[], Agent]] = {
    "random": RandomAgent,
    "greedy_local": GreedyLocalAgent,
    "search": SearchAgent,
    "shortcut_smallest_id": lambda: ShortcutAgent("shortcut_smallest_id"),
    "shortcut_first_listed": lambda: ShortcutAgent("shortcut_first_listed"),
    "shortcut_most_typical": lambda: ShortcutAgent("shortcut_most_typical"),
}


def make_agent(name: str) -> Agent:
    """A new agent of the baseline policy ``name``; an unknown name is a :class:`UserError`."""
    if name not in AGENTS:
        raise UserError(f"unknown agent {name!r}; agents: {sorted(AGENTS)}")
    return AGENTS[name]()

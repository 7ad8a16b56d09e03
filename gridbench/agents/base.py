"""The agent interface and helpers shared by the baseline policies.

An agent plays an :class:`env.Episode` only through ``episode.call(tool, arguments)``, as an
LLM would through function calls; ``episode.task`` is read only for the public prompt
(instruction, grid, hidden cells), never for candidates' attributes or the answer.
"""

from __future__ import annotations

import random
from typing import Any, Protocol

from gridbench.env import Episode

RETRIES = 30  # re-tries of a call that failed by injected failure


class Agent(Protocol):
    """A policy that plays an episode through its tools only."""

    name: str

    def play(self, episode: Episode, rng: random.Random) -> None:
        """Play ``episode`` to its end, drawing any randomness from ``rng``."""
        ...


def call(episode: Episode, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool, re-trying injected failures a bounded number of times."""
    result = episode.call(tool, arguments)
    for _ in range(RETRIES):
        if result["status"] != "failed":
            break
        result = episode.call(tool, arguments)
    return result


def hidden_cells(episode: Episode) -> list[tuple[int, int]]:
    """Hidden cells in row-major order, read from the public grid."""
    return [(r, c) for r, row in enumerate(episode.task.grid) for c, cell in enumerate(row) if cell is None]


def discover(episode: Episode, cell: tuple[int, int], field: str | None = None) -> list[dict[str, Any]]:
    """Every candidate of a cell with one attribute (a condition that every value meets)."""
    d = episode.task.domain
    fields = episode.attributes
    field = field or next((f for f, kind in sorted(fields.items()) if kind == "number"), sorted(fields)[0])
    operator, value = (">=", 0) if fields[field] == "number" else ("not_in", [])
    result = call(
        episode,
        f"query_{d}_candidate_from_attribute",
        row=cell[0],
        col=cell[1],
        field=field,
        operator=operator,
        value=value,
    )
    return list(result["data"]["candidates"]) if result["status"] == "ok" else []


def passes_slot(episode: Episode, cell: tuple[int, int], item_id: str) -> bool:
    """Place ``item_id`` and ask the slot check (leaves the item placed)."""
    call(episode, "set_slot", row=cell[0], col=cell[1], id=item_id)
    result = call(episode, f"check_{episode.task.domain}_slot_constraints", row=cell[0], col=cell[1])
    return result["status"] == "ok" and bool(result["data"]["satisfied"])


def slot_passing(episode: Episode, cell: tuple[int, int]) -> list[str]:
    """The ids of ``cell``'s candidates that pass its slot check (the last one tried stays placed)."""
    return [c["id"] for c in discover(episode, cell) if passes_slot(episode, cell, c["id"])]

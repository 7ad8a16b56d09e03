"""Agents defined outside the package, as a user would (``agent._target_=...``)."""

from __future__ import annotations

import random


class FirstCandidate:
    """Synchronous: put the first listed candidate in every hidden cell, then done."""

    def __init__(self, note: str = "") -> None:
        self.note = note

    def play(self, episode, rng: random.Random) -> None:
        for slot in episode.task.slots:
            episode.call("set_slot", {"row": slot.row, "col": slot.col, "id": slot.candidates[0]})
        episode.call("done", {})


class AsyncDone:
    """Asynchronous: give up at once."""

    async def play(self, episode) -> None:
        episode.call("done", {})


class InterruptThird:
    """Asynchronous: finishes two episodes, then the user presses Ctrl-C."""

    played = 0

    async def play(self, episode) -> None:
        InterruptThird.played += 1
        if InterruptThird.played == 3:
            raise KeyboardInterrupt
        episode.call("done", {})

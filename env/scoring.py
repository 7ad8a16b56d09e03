"""Scoring of one episode against the answer file (SPEC section 6)."""

from __future__ import annotations

from typing import Any

from env.episode import Episode
from solvers.task import Answer


def score(episode: Episode, answer: Answer) -> dict[str, Any]:
    truth = answer.truth_choice()
    correct = sum(episode.grid[r][c] == item for (r, c), item in truth.items())
    decoy_roles = [role for role in answer.roles if role.decoys]
    return {
        "success": correct == len(truth),
        "fraction_correct": correct / len(truth) if truth else 1.0,
        "steps": episode.steps,
        "invalid_calls": episode.invalid,
        "failed_calls": episode.failures,
        "queries_used": episode.queries_used,
        "checks_used": episode.checks_used,
        "finished": episode.finished,
        "decoy_cells": len(decoy_roles),
        "decoy_cells_correct": sum(episode.grid[r.row][r.col] == r.truth for r in decoy_roles),
        "decoy_cells_chance": sum(1 / (1 + len(r.decoys)) for r in decoy_roles),
        "calls": dict(sorted(episode.calls.items())),
    }

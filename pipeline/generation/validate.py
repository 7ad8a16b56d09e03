"""Checks on a task key that run before any work, with messages naming the limit."""

from __future__ import annotations

import math

from domains import DomainError, get_domain
from pipeline.generation.keys import GenerationError, GenerationSettings, TaskKey

MAX_SIDE = 30  # rows and columns of a grid: what one process can draw and certify


def validate_key(key: TaskKey, settings: GenerationSettings) -> None:
    """Raise :class:`GenerationError` for a key that cannot give a task (checked before any
    work: a value of the wrong type or size is one line, never a crash, a hang or a grid of
    10^10 cells)."""
    if not isinstance(key, TaskKey) or not isinstance(settings, GenerationSettings):
        raise GenerationError("generate a task from a gridbench.TaskKey and gridbench.GenerationSettings")
    for name in ("rows", "cols", "hidden_slots", "decoy_budget", "candidates_per_slot", "seed", "index"):
        value = getattr(key, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise GenerationError(f"{name}={str(value)[:40]!r} must be a whole number")
    if not isinstance(key.domain, str) or not isinstance(key.salt, str):
        raise GenerationError("domain and salt must be strings")
    settings.validate()
    try:
        get_domain(key.domain)
    except DomainError as error:
        raise GenerationError(str(error)) from None
    if not (1 <= key.rows <= MAX_SIDE and 1 <= key.cols <= MAX_SIDE):
        raise GenerationError(f"grid {key.rows}x{key.cols}: rows and cols must be between 1 and {MAX_SIDE}")
    cells = key.rows * key.cols
    if not 1 <= key.hidden_slots <= cells:
        raise GenerationError(
            f"hidden_slots={key.hidden_slots} must be between 1 and the {cells} cells of a "
            f"{key.rows}x{key.cols} grid"
        )
    if key.decoy_budget < 0:
        raise GenerationError(f"decoy_budget={key.decoy_budget} must be >= 0")
    _validate_candidates(key, settings)


def _validate_candidates(key: TaskKey, settings: GenerationSettings) -> None:
    per_cell = key.candidates_per_slot - 1  # room for decoys next to the truth
    if key.candidates_per_slot > 200:
        raise GenerationError(
            f"candidates_per_slot={key.candidates_per_slot} (from decoy_budget={key.decoy_budget}) "
            "is more than 200; lower the decoy budget or spread it over more hidden cells"
        )
    if key.candidates_per_slot < 2:
        raise GenerationError(
            f"candidates_per_slot={key.candidates_per_slot} must be >= 2 (the truth and at "
            "least one other candidate)"
        )
    # no allocation places more than every hidden cell full (checked first: counting the
    # cells of an absurd budget would take for ever)
    cells = (
        decoy_cell_count(key, settings)
        if key.decoy_budget <= key.hidden_slots * per_cell
        else key.hidden_slots
    )
    capacity = cells * per_cell
    if key.decoy_budget > capacity:
        raise GenerationError(
            f"decoy_budget={key.decoy_budget} cannot be placed: allocation "
            f"{settings.allocation!r} uses {cells} of the {key.hidden_slots} hidden cells and "
            f"each holds at most candidates_per_slot-1={per_cell} decoys (limit {capacity}); "
            "raise candidates_per_slot or hidden_slots, or use allocation=spread"
        )


def search_bits(key: TaskKey, settings: GenerationSettings) -> float:
    """About log2 of the completions the key's decoys allow: the cells holding decoys times
    log2(1 + their average share). Decides, from the key alone, whether the decoy cells are caged."""
    cells = decoy_cell_count(key, settings)
    return cells * math.log2(1 + key.decoy_budget / cells) if cells else 0.0


def decoy_cell_count(key: TaskKey, settings: GenerationSettings) -> int:
    """How many hidden cells share the decoy budget under the allocation policy."""
    budget, hidden, per_cell = key.decoy_budget, key.hidden_slots, key.candidates_per_slot - 1
    if budget == 0:
        return 0
    if settings.allocation == "spread":
        return min(hidden, budget)
    if settings.allocation == "concentrated":
        return min(hidden, -(-budget // per_cell))
    paper = 1
    while paper * paper < budget:
        paper += 1  # ceil(sqrt(B)) without floats
    return min(hidden, max(paper, -(-budget // per_cell)))

"""Generation: one task key in, one certified task out (sample, candidates, constrain,
repair, resist, certify, measure, seal), and datasets of generated tasks
(docs/difficulty.md)."""

from pipeline.generation.build import generate_task
from pipeline.generation.keys import (
    ALLOCATION_POLICIES,
    GenerationError,
    GenerationSettings,
    TaskKey,
    candidates_for,
)
from pipeline.generation.records import CertifiedTask
from pipeline.generation.validate import decoy_cell_count, validate_key

__all__ = [
    "ALLOCATION_POLICIES",
    "CertifiedTask",
    "GenerationError",
    "GenerationSettings",
    "TaskKey",
    "candidates_for",
    "decoy_cell_count",
    "generate_task",
    "validate_key",
]

"""The pipeline stages: sample, constrain, candidates, repair, certify, measure, assemble."""

from pipeline.generation.build import CertifiedTask, crosscheck_answer, generate_task
from pipeline.generation.keys import ALLOCATION_POLICIES, GenerationError, GenerationSettings, TaskKey
from pipeline.generation.validate import decoy_cell_count, validate_key

__all__ = [
    "ALLOCATION_POLICIES", "CertifiedTask", "GenerationError", "GenerationSettings", "TaskKey",
    "crosscheck_answer", "decoy_cell_count", "generate_task", "validate_key",
]  # fmt: skip

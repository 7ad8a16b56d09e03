"""The pipeline: generation stages (``generation/``), release storage (``storage/``),
evaluation (``evaluation/``) and the Hydra entry points named after what they do.

The names below are loaded on first use, so that importing one room (writing a release, say)
does not import the solvers the generator needs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CertifiedTask": "pipeline.generation.records",
    "crosscheck_answer": "solvers.milp",
    "generate_task": "pipeline.generation.build",
    "ALLOCATION_POLICIES": "pipeline.generation.keys",
    "GenerationError": "pipeline.generation.keys",
    "GenerationSettings": "pipeline.generation.keys",
    "TaskKey": "pipeline.generation.keys",
    "decoy_cell_count": "pipeline.generation.validate",
    "validate_key": "pipeline.generation.validate",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)

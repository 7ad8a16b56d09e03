"""gridbench: certified, controllable grid-planning benchmarks for agents.

The stable API (names load on first use, so ``import gridbench`` is cheap)::

    import gridbench
    release = gridbench.load_release("outputs/releases/gridbench-v1.0.0")
    record = release.filter(domains=["course"])[0]
    episode = record.episode(gridbench.EnvSettings(failure_rate=0.1), seed=0)
    episode.call("get_current_grid_state")
    gridbench.score(record.task, submitted_grid)        # success, fraction_correct, wrong_cells
    made = gridbench.generate_task(gridbench.TaskKey("course", 5, 7, 11, 15, 25))
    tasks = gridbench.create_dataset(["course", "meal"], size=1000, seed=0, levels=3)
    tasks[0].task, tasks[0].answer, tasks[0].score(grid)   # generated and certified on first use
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "TaskKey": "pipeline.generation.keys",
    "GenerationSettings": "pipeline.generation.keys",
    "GenerationError": "pipeline.generation.keys",
    "generate_task": "pipeline.generation.build",
    "CertifiedTask": "pipeline.generation.records",
    "Release": "pipeline.storage.read",
    "ReleaseRecord": "pipeline.storage.read",
    "load_release": "pipeline.storage.read",
    "Episode": "env",
    "EnvSettings": "env",
    "openai_schemas": "env",
    "make_agent": "gridbench.agents.registry",
    "agent_spec": "gridbench.agents.registry",
    "UserError": "gridbench.errors",
    "SolverTimeout": "gridbench.errors",
    "score": "gridbench.scoring",
    "create_dataset": "gridbench.procedural",
    "curriculum": "gridbench.procedural",
    "Level": "gridbench.procedural",
    "TaskDataset": "gridbench.procedural",
    "GeneratedTask": "gridbench.procedural",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gridbench' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)

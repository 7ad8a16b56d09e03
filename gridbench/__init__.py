"""gridbench: certified, controllable grid-planning benchmarks for agents.

The public face: what users import, re-exported from the layers below it (docs/architecture.md)::

    import gridbench
    release = gridbench.load_release("outputs/releases/gridbench-v2.0.0")
    record = release.filter(domains=["course"])[0]
    episode = record.episode(gridbench.EnvSettings(failure_rate=0.1), seed=0)
    episode.call("get_current_grid_state")
    gridbench.score(record.task, submitted_grid)        # success, fraction_correct, wrong_cells
    made = gridbench.generate_task(gridbench.TaskKey("course", 5, 7, 11, 15, 25))
    tasks = gridbench.create_dataset(["course", "meal"], size=1000, seed=0, levels=3)
    tasks[0].task, tasks[0].answer, tasks[0].score(grid)   # generated and certified on first use
    source = gridbench.AdaptiveSource(["course"], seed=0)   # difficulty that follows the rewards
    item = source.next(); source.report(item, reward)
"""

from __future__ import annotations

from gridbench.adaptive import AdaptiveSource, AdaptiveTask, Difficulty
from gridbench.agents.registry import AgentSpec, agent_spec, make_agent
from gridbench.env import Episode, openai_schemas
from gridbench.procedural import GeneratedTask, Level, TaskDataset, create_dataset, curriculum
from gridbench.release import Release, ReleaseRecord, load_release
from gridbench.scoring import score
from gridbench_core.budgets import EnvSettings
from gridbench_core.errors import SolverTimeout, UserError
from pipeline.generation import CertifiedTask, GenerationError, GenerationSettings, TaskKey, generate_task


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed distribution's metadata at first use (reading
    it costs about 60 ms, which ``import gridbench`` does not pay)."""
    if name != "__version__":
        raise AttributeError(f"module 'gridbench' has no attribute {name!r}")
    from importlib import metadata

    try:
        version = metadata.version("gridbench")
    except metadata.PackageNotFoundError:  # a checkout on sys.path without an install
        version = "0+unknown"
    globals()["__version__"] = version
    return version


__all__ = [
    "AdaptiveSource",
    "AdaptiveTask",
    "AgentSpec",
    "CertifiedTask",
    "Difficulty",
    "EnvSettings",
    "Episode",
    "GeneratedTask",
    "GenerationError",
    "GenerationSettings",
    "Level",
    "Release",
    "ReleaseRecord",
    "SolverTimeout",
    "TaskDataset",
    "TaskKey",
    "UserError",
    "__version__",
    "agent_spec",
    "create_dataset",
    "curriculum",
    "generate_task",
    "load_release",
    "make_agent",
    "openai_schemas",
    "score",
]

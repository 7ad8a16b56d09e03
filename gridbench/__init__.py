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

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below are loaded at first use (``__getattr__``)
    from gridbench.adaptive import AdaptiveSource, AdaptiveTask, Difficulty
    from gridbench.agents.registry import AgentSpec, agent_spec, make_agent
    from gridbench.env import Episode, openai_schemas
    from gridbench.procedural import GeneratedTask, Level, TaskDataset, create_dataset, curriculum
    from gridbench.release import Release, ReleaseRecord, load_release
    from gridbench.scoring import score
    from gridbench_core.budgets import EnvSettings
    from gridbench_core.errors import SolverTimeout, UserError
    from pipeline.generation import CertifiedTask, GenerationError, GenerationSettings, TaskKey, generate_task

    __version__: str

# Each public name and the module it comes from. ``import gridbench`` loads none of them, so a
# command (``gridbench --help``, ``gridbench verify``) pays only for the modules it uses; the
# first use of a name loads its module (polars, the agents, the generator: about 0.4 s).
_SOURCES: dict[str, str] = {
    **dict.fromkeys(["AdaptiveSource", "AdaptiveTask", "Difficulty"], "gridbench.adaptive"),
    **dict.fromkeys(["AgentSpec", "agent_spec", "make_agent"], "gridbench.agents.registry"),
    **dict.fromkeys(["Episode", "openai_schemas"], "gridbench.env"),
    **dict.fromkeys(
        ["GeneratedTask", "Level", "TaskDataset", "create_dataset", "curriculum"], "gridbench.procedural"
    ),
    **dict.fromkeys(["Release", "ReleaseRecord", "load_release"], "gridbench.release"),
    "score": "gridbench.scoring",
    "EnvSettings": "gridbench_core.budgets",
    **dict.fromkeys(["SolverTimeout", "UserError"], "gridbench_core.errors"),
    **dict.fromkeys(
        ["CertifiedTask", "GenerationError", "GenerationSettings", "TaskKey", "generate_task"],
        "pipeline.generation",
    ),
}


def __getattr__(name: str) -> Any:
    """A public name, loaded from its module at first use (and kept); ``__version__``, read
    from the installed distribution's metadata (reading it costs about 60 ms); a subpackage
    (``gridbench.env``), imported."""
    if name == "__version__":
        value: Any = _version()
    elif name in _SOURCES:
        value = getattr(importlib.import_module(_SOURCES[name]), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module 'gridbench' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _one_blas_thread() -> None:
    """numpy's OpenBLAS starts a thread per further core when numpy is imported, and that
    thread spins about 0.08 s of CPU before it sleeps; nothing here multiplies matrices. Called
    first by the processes we own (a command, an MCP episode's server, the test session), so
    they, their fork servers and the processes they start run one; a value the user set stays.
    ``import gridbench`` alone never sets it: a library leaves its host's environment be."""
    import os

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("gridbench")
    except metadata.PackageNotFoundError:  # a checkout on sys.path without an install
        return "0+unknown"


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

"""A release's companion build: the same keys and generation settings with another seed, made
in memory, for the audit's transfer classifiers (trained on the companion, tested on the
release: nothing of the tested build is seen in training)."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from gridbench_core.errors import UserError
from gridbench_core.task import Answer, Task
from pipeline.generation.keys import GenerationSettings, TaskKey
from pipeline.storage.cache import make_tasks
from pipeline.storage.read import read_manifest, read_metadata


def recorded_settings(manifest: dict[str, Any]) -> GenerationSettings:
    """The generation settings a release's manifest records (keys this code does not know,
    from an older generator, are left out; no MILP cross-check: the audit needs none)."""
    config = manifest.get("config")
    if not isinstance(config, dict):
        raise UserError("manifest.json has no recorded config; the companion build needs one")
    generation = config.get("generation") or {}
    known = {f.name for f in fields(GenerationSettings)}
    values = {k: v for k, v in generation.items() if k in known}
    solver = config.get("solver") or {}
    settings = GenerationSettings(**values, time_limit_s=float(solver.get("time_limit_s", 10.0)))
    settings.validate()
    return replace(settings, crosscheck=False)


def companion_keys(release: Path, offset: int) -> list[TaskKey]:
    """Every task key of ``release`` (from metadata.parquet) with its seed moved by ``offset``."""
    frame = read_metadata(release)  # listed, bounded, its columns declared: never a hang
    return [
        TaskKey(
            str(row["domain"]),
            int(row["rows"]),
            int(row["cols"]),
            int(row["hidden_slots"]),
            int(row["decoy_budget"]),
            int(row["candidates_per_slot"]),
            int(row["seed"]) + offset,
            int(row["index"]),
        )
        for row in frame.iter_rows(named=True)
    ]


def companion_pairs(release: Path, offset: int, workers: int) -> list[tuple[Task, Answer]]:
    """The companion build of ``release`` (seed + ``offset``), generated in ``workers`` processes."""
    if offset == 0:
        raise UserError("transfer_seed_offset=0 would train on the audited build itself; use another")
    settings = recorded_settings(read_manifest(release))
    made, _ = make_tasks(companion_keys(release, offset), settings, None, workers, "companion build")
    return [(m.task, m.answer) for m in made]

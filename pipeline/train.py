"""`python -m pipeline.train` (make train): a large certified training set in Parquet shards.

    make train                                   # conf/apps/train.yaml: 100,000 tasks
    make train ARGS="size=10000 name=gridbench-train-10k"
    make verify ARGS="release=outputs/releases/gridbench-train-v1.0.0"   # shard by shard

Shards are made in `workers` processes (or on Ray with `executor=ray`); a build that is
killed resumes from the shards already written; the manifest is written last.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from gridbench.errors import UserError
from pipeline.cli import command, plain
from pipeline.config import register_configs
from pipeline.parallel import check_workers, parallel_imap
from pipeline.storage.read import shown
from pipeline.storage.shards import SHARDS_FORMAT, ShardJob, check_name, make_shard, sha256, shard_seed

register_configs()
MAX_TASKS = 100_000_000
MAX_SHARDS = 99_999  # shard folders are named with five digits


def shard_jobs(cfg: DictConfig, root: Path) -> list[ShardJob]:
    """The shards of the build ``cfg`` describes (every argument is checked first)."""
    import gridbench

    size, shard_size = int(cfg.size), int(cfg.shard_size)
    if size < 1 or shard_size < 1:
        raise UserError(f"size={size} and shard_size={shard_size} must be >= 1")
    if size > MAX_TASKS or -(-size // shard_size) > MAX_SHARDS:
        raise UserError(
            f"size={size}, shard_size={shard_size}: at most {MAX_TASKS} tasks in {MAX_SHARDS} shards"
        )
    parts = list(cfg.parts)
    if not parts:
        raise UserError(
            "parts: give at least one {grid, hidden_slots: [low, high], decoy_budgets: [low, high]}"
        )
    for part in parts:
        for name in ("hidden_slots", "decoy_budgets"):
            pair = list(part[name])
            if len(pair) != 2 or pair[0] > pair[1]:
                raise UserError(f"parts: {part.grid} {name}={pair}: give [low, high] with low <= high")
        # every (domain, H, B) of the part is checked now, before any shard is made
        gridbench.create_dataset(
            domains=list(cfg.domains),
            size=1,
            seed=int(cfg.seed),
            grid=str(part.grid),
            hidden_slots=range(part.hidden_slots[0], part.hidden_slots[1] + 1),
            decoy_budgets=range(part.decoy_budgets[0], part.decoy_budgets[1] + 1),
            candidates_per_slot=int(cfg.candidates_per_slot),
        )
    jobs = []
    for index, start in enumerate(range(0, size, shard_size)):
        part = parts[index % len(parts)]
        jobs.append(
            ShardJob(
                str(root),
                index,
                min(shard_size, size - start),
                shard_seed(int(cfg.seed), index),
                tuple(cfg.domains),
                str(part.grid),
                tuple(part.hidden_slots),
                tuple(part.decoy_budgets),
                int(cfg.candidates_per_slot),
                bool(cfg.crosscheck),
            )
        )
    return jobs


def card(name: str, version: str, domains: list[str], tasks: int, per_grid: dict[str, int]) -> str:
    """The dataset card: a Hugging Face header whose configurations read every shard."""
    import yaml

    from pipeline.storage.write import GENERATED_LICENCE, hub_header

    configs: list[dict[str, Any]] = [
        {
            "config_name": domain,
            "data_files": [{"split": "train", "path": f"shards/*/tasks-{domain}.parquet"}],
        }
        for domain in domains
    ]
    configs.append(
        {"config_name": "answers", "data_files": [{"split": "train", "path": "shards/*/answers.parquet"}]}
    )
    configs[0]["default"] = True
    header = hub_header(
        name,
        version,
        GENERATED_LICENCE.spdx,
        ["agents", "planning", "tool-use", "constraint-satisfaction", "gridbench", "training"],
        tasks,
        configs,
    )
    grids = ", ".join(f"{grid}: {count}" for grid, count in sorted(per_grid.items()))
    return (
        "---\n" + yaml.safe_dump(header, sort_keys=False) + "---\n\n"
        f"# {name} v{version}\n\nA training set of {tasks} certified gridbench tasks ({grids}), in "
        "Parquet shards: `shards/<k>/tasks-<domain>.parquet` and `shards/<k>/answers.parquet`. "
        "Rows decode to task and answer files with `pipeline.storage.tables.decode_task` / "
        "`decode_answer`; `make verify` re-proves every task, shard by shard.\n\n"
        f"{GENERATED_LICENCE.statement}\n"
    )


def build(cfg: DictConfig) -> int:
    """Make every missing shard, then write the manifest, card and licence; exit code."""
    from pipeline.storage.write import GENERATED_LICENCE

    check_name(str(cfg.name), str(cfg.version))
    check_workers(cfg.workers, "workers")
    root = Path(str(cfg.output_root)) / f"{cfg.name}-v{cfg.version}"
    if (root / "manifest.json").exists():
        raise UserError(f"{root} is complete already (it has a manifest); choose another version")
    jobs = shard_jobs(cfg, root)
    planned = {job.name for job in jobs}
    strays = sorted(p.name for p in root.glob("shards/[0-9]*") if p.name not in planned)
    if strays:
        raise UserError(
            f"{root}/shards/{strays[0]} is not a shard of this build (another configuration made "
            "it); build into a new version (version=...) or delete the folder"
        )
    root.mkdir(parents=True, exist_ok=True)
    if root.is_symlink() or (root / "shards").is_symlink():
        raise UserError(
            f"{shown(root)}: the build folder or its shards/ is a symlink; shards are not written through one"
        )
    for stale in root.glob("shards/.*.partial-*"):  # workers of a killed build
        shutil.rmtree(stale, ignore_errors=True)
    start = time.perf_counter()
    records = list(parallel_imap(make_shard, jobs, int(cfg.workers), f"train {root.name}", unit="shard"))
    files: dict[str, str] = {}
    per_domain: Counter[str] = Counter()
    per_grid: Counter[str] = Counter()
    for record in records:
        for file, digest in record["files"].items():
            files[f"shards/{record['shard']}/{file}"] = digest
        files[f"shards/{record['shard']}/shard.json"] = record["sha256"]
        per_domain.update(record["per_domain"])
        per_grid[record["grid"]] += record["tasks"]
    tasks = sum(r["tasks"] for r in records)
    for relative, data in (
        (
            "README.md",
            card(str(cfg.name), str(cfg.version), sorted(per_domain), tasks, dict(per_grid)).encode(),
        ),
        ("LICENSE", GENERATED_LICENCE.text.encode()),
    ):
        write_whole(root / relative, data)
        files[relative] = sha256(data)
    manifest = {
        "format": SHARDS_FORMAT,
        "name": str(cfg.name),
        "version": str(cfg.version),
        "config": plain(cfg),
        "counts": {
            "tasks": tasks,
            "shards": len(records),
            "per_domain": dict(sorted(per_domain.items())),
            "per_grid": dict(sorted(per_grid.items())),
            "redraws": sum(r["redraws"] for r in records),
        },
        "shards": [{"shard": r["shard"], "tasks": r["tasks"], "sha256": r["sha256"]} for r in records],
        "files": dict(sorted(files.items())),
    }
    partial = root / f".manifest.json.partial-{os.getpid()}"
    try:
        partial.write_text(json.dumps(manifest, indent=1, sort_keys=True))
        os.replace(partial, root / "manifest.json")
    except OSError:  # a full disk: no half-written manifest (the shards stay; a rerun resumes)
        partial.unlink(missing_ok=True)
        raise
    seconds = time.perf_counter() - start
    print(
        f"train {root}: {tasks} tasks in {len(records)} shards, {seconds:.1f}s "
        f"({tasks / max(seconds, 1e-9):.1f} tasks/s); {dict(sorted(per_grid.items()))}"
    )
    return 0


def write_whole(path: Path, data: bytes) -> None:
    """``data`` at ``path`` through a temporary file: a full disk leaves no half file."""
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)
        raise


main = command("train")(build)


if __name__ == "__main__":
    main()

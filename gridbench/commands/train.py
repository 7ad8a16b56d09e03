"""`python -m gridbench.commands.train` (make train): a large certified training set in Parquet shards.

    make train                                   # conf/apps/train.yaml: 100,000 tasks
    make train ARGS="size=10000 name=gridbench-train-10k"
    make verify ARGS="release=outputs/releases/gridbench-train-v2.0.0"   # shard by shard

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

from omegaconf import DictConfig

from gridbench_core.errors import UserError, deferred_interrupts, written
from pipeline.cli import command, plain
from pipeline.config import register_configs
from pipeline.parallel import check_workers, parallel_imap
from pipeline.storage.atomic import build_lock
from pipeline.storage.read import shown
from pipeline.storage.shards import (
    SHARDS_FORMAT,
    ShardJob,
    TrainPlan,
    card,
    check_name,
    longest_first,
    make_shard,
    sha256,
    shard_jobs,
)

register_configs()


def build(cfg: DictConfig) -> int:
    """Make every missing shard, then write the manifest, card and licence; exit code."""
    check_name(str(cfg.name), str(cfg.version))
    check_workers(cfg.workers, "workers")
    root = Path(str(cfg.output_root)) / f"{cfg.name}-v{cfg.version}"
    jobs = shard_jobs(TrainPlan.from_config(plain(cfg)), root)
    root.parent.mkdir(parents=True, exist_ok=True)
    # one build of a folder at a time: a second one would remove the first's shards in the
    # making (its stale-folder clean-up) and write the manifest over it
    with build_lock(root):
        return _build(cfg, root, jobs)


def _build(cfg: DictConfig, root: Path, jobs: list[ShardJob]) -> int:
    from pipeline.storage.card import GENERATED_LICENCE

    if (root / "manifest.json").exists():
        raise UserError(f"{shown(root)} is complete already (it has a manifest); choose another version")
    planned = {job.name for job in jobs}
    strays = sorted(p.name for p in root.glob("shards/[0-9]*") if p.name not in planned)
    if strays:
        raise UserError(
            f"{shown(root / 'shards' / strays[0])} is not a shard of this build (another configuration made "
            "it); build into a new version (version=...) or delete the folder"
        )
    root.mkdir(parents=True, exist_ok=True)
    linked = [p for p in (root, root / "shards", *root.glob("shards/*")) if p.is_symlink()]
    if linked:  # a shard folder too: a shard is replaced where it stands, never through a link
        raise UserError(
            f"{shown(linked[0])}: a symlink in the build folder; shards are not written through one "
            "(replace it with a folder, or delete it)"
        )
    for stale in root.glob("shards/.*.partial-*"):  # workers of a killed build
        shutil.rmtree(stale, ignore_errors=True)
    start = time.perf_counter()
    records = sorted(
        parallel_imap(
            make_shard,
            longest_first(jobs),
            int(cfg.workers),
            f"train {root.name}",
            unit="shard",
            ordered=False,
        ),
        key=lambda record: str(record["shard"]),
    )
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
        # complete once its manifest is in place, and said so as one step: a rerun would
        # refuse it ("complete already"), so a late Ctrl-C or SIGTERM names it as written
        with deferred_interrupts():
            os.replace(partial, root / "manifest.json")
            written(f"the training set at {shown(root)}")
    except OSError:  # a full disk: no half-written manifest (the shards stay; a rerun resumes)
        partial.unlink(missing_ok=True)
        raise
    seconds = time.perf_counter() - start
    print(
        f"train {shown(root)}: {tasks} tasks in {len(records)} shards, {seconds:.1f}s "
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

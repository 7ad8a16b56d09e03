"""Large training sets in Parquet shards (``python -m gridbench.commands.train``).

Layout of ``<output_root>/<name>-v<version>/``::

    shards/00000/tasks-<domain>.parquet   the shard's tasks of each domain (one row per task)
    shards/00000/answers.parquet          their answers
    shards/00000/shard.json               the shard's files with their digests (written last)
    manifest.json                         format gridbench-shards/1, config, counts, every file
    README.md, LICENSE                    the dataset card (Hugging Face configs over the shards)

A shard is made and written by one worker from a ``create_dataset`` of its own seed, in a
hidden temporary folder renamed into place when complete: memory stays bounded by a shard,
and a killed build resumes from the shards that are there. The same configuration gives the
same bytes. ``verify`` re-proves a sharded release shard by shard, in parallel.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridbench_core.errors import UserError
from pipeline.parallel import long_job
from pipeline.storage.safe import ReleaseError, load_json, read_bytes, read_json

SHARDS_FORMAT = "gridbench-shards/1"


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class ShardJob:
    """One shard to make: where, how many tasks, from which grid and ranges, with what seed."""

    root: str
    index: int
    count: int
    seed: int
    domains: tuple[str, ...]
    grid: str
    hidden_slots: tuple[int, int]
    decoy_budgets: tuple[int, int]
    candidates_per_slot: int
    crosscheck: bool

    @property
    def name(self) -> str:
        """The shard's folder name."""
        return f"{self.index:05d}"

    @property
    def key(self) -> str:
        """How a failure names the shard."""
        return f"shard {self.name} ({self.grid}, {self.count} tasks)"

    def recipe(self) -> dict[str, Any]:
        """What makes the shard what it is (recorded in ``shard.json``; a shard left by a build
        of another configuration is never taken for this one's)."""
        return {
            "count": self.count,
            "seed": self.seed,
            "domains": list(self.domains),
            "grid": self.grid,
            "hidden_slots": list(self.hidden_slots),
            "decoy_budgets": list(self.decoy_budgets),
            "candidates_per_slot": self.candidates_per_slot,
            "crosscheck": self.crosscheck,
        }


MAX_TASKS = 100_000_000
MAX_SHARDS = 99_999  # shard folders are named with five digits
# each part's (domain, H, B) keys are checked before any shard is made, by the build and by
# verify: a recorded config of hundreds of wide parts made verify check them for minutes
MAX_PARTS = 32
TABLE_BATCH = 50  # tasks of a shard turned into Arrow tables at a time (their dicts are dropped)


@dataclass(frozen=True)
class TrainPart:
    """One part of a training set: a grid and the ranges its tasks draw H and B from."""

    grid: str
    hidden_slots: tuple[int, int]
    decoy_budgets: tuple[int, int]


@dataclass(frozen=True)
class TrainPlan:
    """A sharded training set as ``make train`` builds it (``conf/apps/train.yaml``), read
    from a command's configuration or from a manifest's recorded one."""

    name: str
    version: str
    size: int
    seed: int
    domains: tuple[str, ...]
    parts: tuple[TrainPart, ...]
    shard_size: int
    candidates_per_slot: int
    crosscheck: bool

    @staticmethod
    def from_config(config: Any) -> TrainPlan:
        """The plan a plain mapping describes; :class:`UserError` naming what is missing or
        of the wrong type (a manifest's recorded config is untrusted)."""
        if not isinstance(config, dict):
            raise UserError("the configuration is not a mapping")
        try:
            parts = tuple(
                TrainPart(str(p["grid"]), _pair(p["hidden_slots"]), _pair(p["decoy_budgets"]))
                for p in config["parts"]
            )
            return TrainPlan(
                str(config["name"]),
                str(config["version"]),
                _whole(config["size"], "size"),
                _whole(config["seed"], "seed"),
                tuple(str(d) for d in config["domains"]),
                parts,
                _whole(config["shard_size"], "shard_size"),
                _whole(config["candidates_per_slot"], "candidates_per_slot"),
                bool(config["crosscheck"]),
            )
        except (KeyError, TypeError) as error:
            raise UserError(f"the configuration lacks or mistypes {str(error)[:60]}") from None


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{name}={str(value)[:40]!r} must be a whole number")
    return value


def _pair(value: Any) -> tuple[int, int]:
    pair = [_whole(v, "a range bound") for v in value]
    if len(pair) != 2:
        raise TypeError("a [low, high] range")
    return pair[0], pair[1]


def shard_jobs(plan: TrainPlan, root: Path) -> list[ShardJob]:
    """The shards of the build ``plan`` describes (every argument is checked first)."""
    from pipeline.generation.dataset import create_dataset

    size, shard_size = plan.size, plan.shard_size
    if size < 1 or shard_size < 1:
        raise UserError(f"size={size} and shard_size={shard_size} must be >= 1")
    if size > MAX_TASKS or -(-size // shard_size) > MAX_SHARDS:
        raise UserError(
            f"size={size}, shard_size={shard_size}: at most {MAX_TASKS} tasks in {MAX_SHARDS} shards"
        )
    if not plan.parts or len(plan.parts) > MAX_PARTS:
        raise UserError(
            f"parts: give 1 to {MAX_PARTS} parts, each {{grid, hidden_slots: [low, high], "
            "decoy_budgets: [low, high]}"
        )
    for part in plan.parts:
        for name in ("hidden_slots", "decoy_budgets"):
            low, high = getattr(part, name)
            if low > high:
                raise UserError(f"parts: {part.grid} {name}={[low, high]}: give [low, high] with low <= high")
        # every (domain, H, B) of the part is checked now, before any shard is made
        create_dataset(
            domains=list(plan.domains),
            size=1,
            seed=plan.seed,
            grid=part.grid,
            hidden_slots=range(part.hidden_slots[0], part.hidden_slots[1] + 1),
            decoy_budgets=range(part.decoy_budgets[0], part.decoy_budgets[1] + 1),
            candidates_per_slot=plan.candidates_per_slot,
        )
    jobs = []
    for index, start in enumerate(range(0, size, shard_size)):
        part = plan.parts[index % len(plan.parts)]
        jobs.append(
            ShardJob(
                str(root),
                index,
                min(shard_size, size - start),
                shard_seed(plan.seed, index),
                plan.domains,
                part.grid,
                part.hidden_slots,
                part.decoy_budgets,
                plan.candidates_per_slot,
                plan.crosscheck,
            )
        )
    return jobs


def longest_first(jobs: list[ShardJob]) -> list[ShardJob]:
    """``jobs`` in the order to hand them out: the most cells to fill first (a shard of 10x10
    tasks takes about three times one of 5x5), so that the last shard one worker is left with
    while the others wait is one of the shortest; ties in shard order. Only the order of the
    work changes: each shard's seed and bytes come from its index."""
    return sorted(jobs, key=lambda job: (-job.count * (job.hidden_slots[0] + job.hidden_slots[1]), job.index))


def shard_dataset(job: ShardJob) -> Any:
    """The dataset shard ``job`` draws its tasks from (``create_dataset``'s for the job's
    recipe, without checking its arguments again: :func:`shard_jobs` checked every part's, and
    each task's key is checked where it is generated). The build makes its tasks from it, and
    verify reads from it which task each item of a shard must be (its keys cost no
    generation)."""
    from pipeline.generation.dataset import TaskDataset, _grid, curriculum
    from pipeline.generation.keys import GenerationSettings

    hidden, budgets = job.hidden_slots, job.decoy_budgets
    levels = curriculum(1, range(hidden[0], hidden[1] + 1), range(budgets[0], budgets[1] + 1), 0.0)
    return TaskDataset(
        job.domains,
        job.count,
        job.seed,
        _grid(job.grid),
        job.candidates_per_slot,
        levels,
        GenerationSettings(crosscheck=job.crosscheck),
    )


def shard_files(per_domain: Any) -> set[str]:
    """The files a shard of ``per_domain`` tasks holds besides its record: one task table a
    domain, and the answers."""
    return {f"tasks-{domain}.parquet" for domain in per_domain} | {"answers.parquet"}


def card(name: str, version: str, domains: list[str], tasks: int, per_grid: dict[str, int]) -> str:
    """The dataset card: a Hugging Face header whose configurations read every shard."""
    import yaml

    from pipeline.storage.card import GENERATED_LICENCE, hub_header

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


def shard_seed(seed: int, index: int) -> int:
    """The ``create_dataset`` seed of shard ``index`` of a build with ``seed``."""
    return int.from_bytes(hashlib.sha256(f"gridbench-train|{seed}|{index}".encode()).digest()[:7], "big")


def finished_shard(root: Path, name: str) -> dict[str, Any] | None:
    """The record of a complete shard (its ``shard.json``, every file matching its digest), or
    None when the shard is missing or damaged."""
    relative = f"shards/{name}/shard.json"
    if not (root / relative).is_file():
        return None
    try:
        record = read_json(root, relative)
        # every file a shard of its counts holds (a record listing fewer is no finished shard)
        if set(record["files"]) != shard_files(record["per_domain"]) or sum(
            record["per_domain"].values()
        ) != record.get("tasks"):
            return None
        for file, digest in record["files"].items():
            if sha256(read_bytes(root, f"shards/{name}/{file}")) != digest:
                return None
        return {**record, "sha256": sha256(read_bytes(root, relative))}
    except (ReleaseError, KeyError, TypeError, AttributeError):
        return None


def generator_of(domains: tuple[str, ...]) -> dict[str, Any]:
    """What draws a shard's tasks besides its recipe: the generator's format (the cache's, which
    changes with the draw) and each domain's definition (:func:`pipeline.generation.keys.
    domain_fingerprint`). A build resumed by other code is refused rather than mixed."""
    from pipeline.generation.keys import GENERATOR_FORMAT, domain_fingerprint

    return {
        "generator": GENERATOR_FORMAT,
        "domains": {name: domain_fingerprint(name) for name in sorted(domains)},
    }


def make_shard(job: ShardJob) -> dict[str, Any]:
    """Generate and write one shard (in a worker); its record, as in ``shard.json``."""
    root = Path(job.root)
    made_by = generator_of(job.domains)
    done = finished_shard(root, job.name)
    if done is not None:
        if done.get("recipe") != job.recipe():
            raise UserError(
                f"{root}/shards/{job.name} was made by another configuration; build into a new "
                "version (version=...) or delete the folder"
            )
        if done.get("made_by") != made_by:  # a killed build resumed by other code
            raise UserError(
                f"{root}/shards/{job.name} was made by another version of the generator or of a "
                "domain (its tasks would not be this code's draw); build into a new version "
                "(version=...) or delete the folder"
            )
        return done
    with long_job():
        return _make_shard(job, root, made_by)


def _make_shard(job: ShardJob, root: Path, made_by: dict[str, Any]) -> dict[str, Any]:
    from gridbench_core.prompt import packaged_templates
    from pipeline.storage.tables import ANSWER, arrow_table, parquet_bytes, prompt_of, task_type

    dataset = shard_dataset(job)  # the one verify reads each row's key from
    # the rows become Arrow tables a batch at a time, so the worker does not hold a shard of
    # JSON dicts (far larger than their tables, and objects the collector scans)
    tasks: dict[str, list[dict[str, Any]]] = {}
    prompts: dict[str, list[tuple[str, Any]]] = {}  # rendered from the objects, which are dropped
    answers: list[dict[str, Any]] = []
    task_tables: dict[str, list[Any]] = {}
    answer_tables: list[Any] = []
    templates = packaged_templates()
    redraws = 0

    def convert() -> None:
        for domain, rows in tasks.items():
            if rows:
                task_tables.setdefault(domain, []).append(
                    arrow_table(rows, task_type(domain), domain, prompts[domain])
                )
                rows.clear()
                prompts[domain].clear()
        if answers:
            answer_tables.append(arrow_table(answers, ANSWER, "answers"))
            answers.clear()

    per_domain: dict[str, int] = {}
    for index in range(job.count):
        item, task = dataset.made(index)
        domain = item.task["domain"]
        tasks.setdefault(domain, []).append(item.task)
        prompts.setdefault(domain, []).append(prompt_of(task, templates))
        answers.append(item.answer)
        per_domain[domain] = per_domain.get(domain, 0) + 1
        redraws += item.redraws
        if len(answers) == TABLE_BATCH:
            convert()
    convert()
    files = {f"tasks-{domain}.parquet": parquet_bytes(task_tables[domain]) for domain in sorted(task_tables)}
    files["answers.parquet"] = parquet_bytes(answer_tables)
    record = {
        "recipe": job.recipe(),
        "shard": job.name,
        "grid": job.grid,
        "seed": job.seed,
        "tasks": job.count,
        "per_domain": dict(sorted(per_domain.items())),
        "redraws": redraws,
        "files": {name: sha256(data) for name, data in files.items()},
        "made_by": made_by,
    }
    final = root / "shards" / job.name
    partial = root / "shards" / f".{job.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    shard_json = json.dumps(record, indent=1, sort_keys=True).encode()
    try:
        partial.mkdir(parents=True)
        for name, data in files.items():
            (partial / name).write_bytes(data)
        (partial / "shard.json").write_bytes(shard_json)
    except OSError:  # a full disk: nothing half-written stays behind
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(final, ignore_errors=True)  # a damaged shard of an earlier, killed build
    os.replace(partial, final)
    return {**record, "sha256": sha256(shard_json)}


def read_shards_manifest(path: Path) -> dict[str, Any]:
    """The manifest of a sharded release (checked for shape)."""
    manifest = read_json(path, "manifest.json")
    if not isinstance(manifest, dict) or manifest.get("format") != SHARDS_FORMAT:
        raise ReleaseError(f"{path}/manifest.json: not a sharded release ({SHARDS_FORMAT})")
    if not isinstance(manifest.get("shards"), list) or not isinstance(manifest.get("files"), dict):
        raise ReleaseError(f"{path}/manifest.json: 'shards' and 'files' must be a list and a mapping")
    return manifest


def is_sharded(path: Path) -> bool:
    """Whether the folder at ``path`` holds a sharded release (its manifest says so). The
    manifest is read like any untrusted file (a FIFO, a link to ``/dev/zero`` or a huge file
    is not read at all); whatever is wrong with it is reported by the release's own checks."""
    try:
        data = load_json(read_bytes(path, "manifest.json"), "manifest.json")
    except ReleaseError:
        return False
    return isinstance(data, dict) and data.get("format") == SHARDS_FORMAT


def check_name(name: str, version: str) -> None:
    """Refuse a release name or version that could leave the output folder or cannot be shown
    (the rules of ``release.name`` and ``release.version``)."""
    from pipeline.storage.layout import NAME, VERSION

    for value, rule in ((name, NAME), (version, VERSION)):
        if not rule.match(value) or ".." in value:
            raise UserError(
                f"{ascii(value[:80])}{'...' if len(value) > 80 else ''}: a name is 1 to 64 letters, digits, "
                "'.', '_' and '-' (the first a letter or digit) and may not hold '/' or '..'; a version is "
                "semantic (1.0.0, or 1.0.0-rc.1)"
            )

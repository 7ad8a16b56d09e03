"""Release assembly: task and answer files, metadata.parquet, manifest.json, dataset card.

A release is written into a hidden temporary folder next to its final place and renamed
when complete, so an interrupted run never leaves a half release at the final path.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.evaluation.depth import depth_table
from pipeline.evaluation.integrity import audit, audit_markdown
from pipeline.generation.records import CertifiedTask
from pipeline.storage.safe import ReleaseError

RELEASE_FORMAT = "gridbench-release-1"
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
PACKAGES = ("gridbench", "ortools", "pulp", "polars", "pyarrow", "hydra-core", "omegaconf")
INT64_MAX = 2**63 - 1


# what is byte-identical for the same configuration and seed (the manifest's "deterministic")
DETERMINISTIC = ["tasks/", "answers/", "data/", "metadata.parquet", "schemas/", "README.md", "LICENSE"]
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
VERSION = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]{1,32})?$")


def release_dir(output_root: str | Path, name: str, version: str) -> Path:
    """``<output_root>/<name>-v<version>``, with the name and version checked so that the
    folder can only be a direct child of ``output_root``."""
    if not NAME.match(str(name)) or ".." in str(name):
        raise ReleaseError(
            f"release.name={str(name)[:80]!r}: use letters, digits, '.', '_' and '-' "
            "(no '/', no '..'), for example release.name=gridbench"
        )
    if not VERSION.match(str(version)):
        raise ReleaseError(
            f"release.version={str(version)[:80]!r}: use a semantic version, for "
            "example release.version=1.0.0"
        )
    root = Path(output_root).resolve()
    target = root / f"{name}-v{version}"
    if target.parent != root:
        raise ReleaseError(f"release {target} would not lie inside release.output_root={root}")
    return target


def is_release(path: Path) -> bool:
    """True for a folder holding a manifest of this format (what ``overwrite`` may replace)."""
    from pipeline.storage.safe import read_json

    try:
        manifest = read_json(path, "manifest.json")
    except ReleaseError:
        return False
    return isinstance(manifest, dict) and manifest.get("format") == RELEASE_FORMAT


def check_target(target: Path, overwrite: bool) -> None:
    """Refuse to build over an existing version unless asked, and never over something that
    is not a release (checked before any work, and again under the build lock)."""
    if target.is_symlink():
        raise ReleaseError(f"{target} is a symlink; a release is never written through one")
    if target.exists() and not overwrite:
        raise ReleaseError(
            f"release {target} already exists; bump release.version or pass release.overwrite=true"
        )
    if target.exists() and not is_release(target):
        raise ReleaseError(
            f"{target} exists and is not a release (no manifest.json of this "
            "format); release.overwrite=true replaces only a release"
        )


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))


def _layout(value: Any, depth: int) -> str:
    """Indented for the first two levels (a key per line, then an item, a slot, a grid row
    per line), compact below: readable, and encoded by the C encoder (an indented
    ``json.dumps`` runs the pure-Python one, 3 s of a 324-task release)."""
    if depth >= 2 or not isinstance(value, dict | list) or not value:
        return _COMPACT.encode(value)
    pad = "\n" + " " * (depth + 1)
    if isinstance(value, dict):
        parts = [f"{_COMPACT.encode(str(k))}: {_layout(v, depth + 1)}" for k, v in value.items()]
        return "{" + pad + ("," + pad).join(parts) + "\n" + " " * depth + "}"
    parts = [_layout(v, depth + 1) for v in value]
    return "[" + pad + ("," + pad).join(parts) + "\n" + " " * depth + "]"


def dumps(record: dict[str, Any]) -> bytes:
    """``record`` as UTF-8 JSON bytes with a final newline (two levels indented)."""
    return (_layout(record, 0) + "\n").encode("utf-8")


def sha256(data: bytes) -> str:
    """The SHA-256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def software_versions() -> dict[str, str]:
    """The versions of Python and of each package in ``PACKAGES`` ("unknown" when missing)."""
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = package_metadata.version(package)
        except package_metadata.PackageNotFoundError:
            versions[package] = "unknown"
    return versions


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    """One build of a version at a time: ``.<name>.lock`` holds the builder's pid; a lock whose
    process is gone (a killed build) is taken over."""
    lock = target.parent / f".{target.name}.lock"
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = lock.read_text().strip() if lock.is_file() else ""
            if owner.isdigit() and _alive(int(owner)) and int(owner) != os.getpid():
                raise ReleaseError(
                    f"another build of {target.name} is running (pid {owner}); "
                    "wait for it, or build another release.version"
                ) from None
            lock.unlink(missing_ok=True)
            continue
        os.write(descriptor, str(os.getpid()).encode())
        os.close(descriptor)
        break
    else:
        raise ReleaseError(f"cannot take the build lock {lock}; remove it if no build is running")
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def clean_stale_partials(target: Path) -> list[Path]:
    """Remove the temporary folders of killed builds of ``target`` (their pid is gone)."""
    removed = []
    for stale in target.parent.glob(f".{target.name}.partial-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)) and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
            removed.append(stale)
    if removed:
        print(
            f"removed {len(removed)} unfinished build folder(s) of killed runs: "
            f"{', '.join(p.name for p in removed)}"
        )
    return removed


@contextmanager
def atomic_folder(target: Path, overwrite: bool) -> Iterator[Path]:
    """Yield a temporary folder; on success it replaces ``target``, on failure it vanishes.
    The existence check and the rename happen under the build lock, so two concurrent builds
    cannot both succeed; a kill leaves only a ``.partial`` folder, cleaned by the next build."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(target):
        check_target(target, overwrite)
        clean_stale_partials(target)
        temporary = target.parent / f".{target.name}.partial-{os.getpid()}"
        shutil.rmtree(temporary, ignore_errors=True)
        temporary.mkdir()
        try:
            yield temporary
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        check_target(target, overwrite)
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        if target.exists():
            target.rename(old)
        temporary.rename(target)
        shutil.rmtree(old, ignore_errors=True)


def metadata_row(made: CertifiedTask, task_bytes: bytes, answer_bytes: bytes) -> dict[str, Any]:
    """The ``metadata.parquet`` row of one certified task: key, roles, certificate, measures, file digests."""
    task, answer, key = made.task, made.answer, made.key
    certificate, measures, check = answer.certificate, answer.measures, answer.crosscheck
    if certificate is None or measures is None:
        raise ReleaseError(f"task {task.task_id} has no certificate or measures; only sealed tasks ship")
    distance, propagation = measures.distance_to_ambiguity, measures.propagation
    return {
        "task_id": task.task_id,
        "domain": task.domain,
        "rows": task.rows,
        "cols": task.cols,
        "hidden_slots": task.hidden_slots,
        "decoy_budget": task.decoy_budget,
        "candidates_per_slot": task.candidates_per_slot,
        "seed": key.seed,
        "index": key.index,
        "n_decoys": sum(len(r.decoys) for r in answer.roles),
        "n_filtered": sum(len(r.filtered) for r in answer.roles),
        "unique": certificate.uniqueness == "INFEASIBLE",
        "certificate_status": "ok" if certificate.ok else "failed",
        "crosscheck_status": "not_run" if check is None else "ok" if check.ok else "failed",
        "repair_rounds": certificate.repair_rounds,
        "tightenings": certificate.tightenings,
        "cell_redraws": certificate.cell_redraws,
        "task_redraws": certificate.attempt,
        "search_space": measures.search_space if measures.search_space <= INT64_MAX else None,
        "log10_search_space": measures.log10_search_space,
        "shallow_decoys": measures.shallow_decoys,
        "dfs_nodes": measures.dfs_nodes,
        "dfs_capped": measures.dfs_capped,
        "distance_units": distance.units,
        "distance_share": distance.share,
        "distance_rule": distance.rule,
        "decoys_one_round": propagation.one_round,
        "decoys_fixpoint": propagation.fixpoint,
        "resistant_decoys": propagation.resistant,
        "resistant_share": (
            round(propagation.resistant / propagation.decoys, 6) if propagation.decoys else None
        ),
        "decided_by_propagation": propagation.decided,
        "depth": measures.depth.rung if measures.depth else None,
        "depth_rung": measures.depth.name if measures.depth else None,
        "task_sha256": sha256(task_bytes),
        "answer_sha256": sha256(answer_bytes),
    }


METADATA_SCHEMA = {
    "task_id": pl.String,
    "domain": pl.String,
    "rows": pl.Int64,
    "cols": pl.Int64,
    "hidden_slots": pl.Int64,
    "decoy_budget": pl.Int64,
    "candidates_per_slot": pl.Int64,
    "seed": pl.Int64,
    "index": pl.Int64,
    "n_decoys": pl.Int64,
    "n_filtered": pl.Int64,
    "unique": pl.Boolean,
    "certificate_status": pl.String,
    "crosscheck_status": pl.String,
    "repair_rounds": pl.Int64,
    "tightenings": pl.Int64,
    "cell_redraws": pl.Int64,
    "task_redraws": pl.Int64,
    "search_space": pl.Int64,
    "log10_search_space": pl.Float64,
    "shallow_decoys": pl.Int64,
    "dfs_nodes": pl.Int64,
    "dfs_capped": pl.Boolean,
    "distance_units": pl.Int64,
    "distance_share": pl.Float64,
    "distance_rule": pl.String,
    "decoys_one_round": pl.Int64,
    "decoys_fixpoint": pl.Int64,
    "resistant_decoys": pl.Int64,
    "resistant_share": pl.Float64,
    "decided_by_propagation": pl.Boolean,
    "depth": pl.Int64,
    "depth_rung": pl.String,
    "task_sha256": pl.String,
    "answer_sha256": pl.String,
}


PUBLIC = (
    "This release is **public**: its answers are in `answers/`, and anyone with this code can "
    "regenerate every task and answer from `manifest.json`. For a held-out test set, build "
    "with `release.salt_env=NAME` and keep `answers/` and `data/answers.parquet` back."
)
PRIVATE = (
    "This release is **salted**: a secret mixed into every task's seed means its answers "
    "cannot be regenerated from its configuration (`manifest.json` holds only the salt's "
    "SHA-256). `verify` re-proves it without the salt."
)


@dataclass(frozen=True)
class DataLicence:
    """Where a release's data comes from and under which licence: its Hugging Face / SPDX
    id, the ``LICENSE`` file written into the release, the card's licence paragraph
    (attribution included) and its paragraph on how the candidates were made."""

    spdx: str
    text: str
    statement: str
    about: str = (
        "A cell's locally valid candidates (truth and decoys) are drawn from one distribution and\n"
        "the truth is chosen uniformly among them; grid-wide rules drawn afterwards (two-sided\n"
        "windows on the grid sums, caps and counts) refute the others. Nothing about a candidate\n"
        "tells the truth apart: the audit below measures it."
    )
    public: str = PUBLIC


GENERATED_LICENCE = DataLicence(
    "cc-by-4.0",
    "The tasks, answers and tables of this release are licensed under the Creative Commons\n"
    "Attribution 4.0 International licence (CC BY 4.0):\n"
    "https://creativecommons.org/licenses/by/4.0/legalcode\n\n"
    "They were generated by gridbench, whose code is licensed under the Apache License 2.0.\n",
    "The data (tasks, answers, tables) is licensed **CC BY 4.0**: use, share and adapt it, "
    "commercially too, including for training, with attribution. The code that generated it "
    "(gridbench) is Apache-2.0.",
)


def write_release(
    target: Path,
    tasks: list[CertifiedTask],
    name: str,
    version: str,
    config: dict[str, Any],
    overwrite: bool,
    extra_files: dict[str, bytes] | None = None,
    audit_splits: int = 0,
    licence: DataLicence = GENERATED_LICENCE,
) -> dict[str, Any]:
    """Write the whole release atomically; returns the manifest. The dataset card carries the
    integrity audit: policies always, classifiers when ``audit_splits`` > 0; ``data/`` holds
    the same tasks and answers as Parquet tables (one configuration per domain)."""
    ordered = sorted(
        tasks,
        key=lambda m: (m.task.domain, m.task.hidden_slots, m.task.decoy_budget, m.key.index, m.task.task_id),
    )
    events = [{"task_id": made.task.task_id, **event} for made in ordered for event in made.events]
    with atomic_folder(target, overwrite) as folder:
        files: dict[str, str] = {}
        rows, timings = [], []
        task_dicts: dict[str, list[dict[str, Any]]] = {}
        answer_dicts: list[dict[str, Any]] = []
        for made in ordered:
            task_dict, answer_dict = made.task.to_dict(), made.answer.to_dict()
            task_dicts.setdefault(made.task.domain, []).append(task_dict)
            answer_dicts.append(answer_dict)
            task_bytes, answer_bytes = dumps(task_dict), dumps(answer_dict)
            for kind, data in (("tasks", task_bytes), ("answers", answer_bytes)):
                relative = f"{kind}/{made.task.domain}/{made.task.task_id}.json"
                files[relative] = _write(folder / relative, data)
            rows.append(metadata_row(made, task_bytes, answer_bytes))
            timings.append(
                {"task_id": made.task.task_id, **{k: float(v) for k, v in sorted(made.timings.items())}}
            )
        frame = pl.DataFrame(rows, schema=METADATA_SCHEMA)
        # written through Python, so that a full disk is an OSError (polars reports its own)
        files["metadata.parquet"] = _write(
            folder / "metadata.parquet", parquet_bytes(frame, statistics=False)
        )
        files["timings.parquet"] = _write(folder / "timings.parquet", parquet_bytes(pl.DataFrame(timings)))
        for schema in ("task.schema.json", "answer.schema.json"):
            files[f"schemas/{schema}"] = _write(
                folder / "schemas" / schema, (SCHEMA_DIR / schema).read_bytes()
            )
        for relative, data in data_tables(task_dicts, answer_dicts).items():
            files[relative] = _write(folder / relative, data)
        files["LICENSE"] = _write(folder / "LICENSE", licence.text.encode())
        for relative, data in sorted((extra_files or {}).items()):
            files[relative] = _write(folder / relative, data)
        report = audit([(m.task, m.answer) for m in ordered], audit_splits)
        salted = bool((config.get("release") or {}).get("salted")) if isinstance(config, dict) else False
        card = dataset_card(name, version, frame, audit_markdown(report), salted, licence)
        files["README.md"] = _write(folder / "README.md", card.encode())
        manifest = {
            "format": RELEASE_FORMAT,
            "name": name,
            "version": version,
            "config": config,
            "software": software_versions(),
            "counts": {**counts(frame), "crosscheck_disagreements": len(events)},
            "build_events": events,
            "deterministic": list(DETERMINISTIC),
            "files": dict(sorted(files.items())),
        }
        (folder / "manifest.json").write_bytes(dumps(manifest))
    return manifest


def data_tables(tasks: dict[str, list[dict[str, Any]]], answers: list[dict[str, Any]]) -> dict[str, bytes]:
    """``data/tasks/<domain>.parquet`` for each domain and ``data/answers.parquet``."""
    from pipeline.storage.tables import ANSWER, table_bytes, task_type

    out = {
        f"data/tasks/{domain}.parquet": table_bytes(rows, task_type(domain), f"data/tasks/{domain}")
        for domain, rows in sorted(tasks.items())
    }
    out["data/answers.parquet"] = table_bytes(answers, ANSWER, "data/answers")
    return out


def size_category(tasks: int) -> str:
    """The Hugging Face size category of ``tasks`` rows."""
    for limit, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (10**6, "100K<n<1M"),
    ):
        if tasks < limit:
            return label
    return "1M<n<10M"


def hub_header(
    name: str, version: str, spdx: str, tags: list[str], tasks: int, configs: list[dict[str, Any]]
) -> dict[str, Any]:
    """The fields of a dataset card's Hugging Face YAML header, in their order (releases and
    sharded training sets)."""
    return {
        "license": spdx,
        "pretty_name": f"{name} v{version}",
        "language": ["en"],
        "task_categories": ["text-generation"],
        "tags": tags,
        "size_categories": [size_category(tasks)],
        "configs": configs,
    }


def card_header(name: str, version: str, domains: list[str], tasks: int, licence: DataLicence) -> str:
    """The Hugging Face YAML header of the dataset card: licence, configurations (one per
    domain for the tasks, one for the answers, the metadata as the default), tags."""
    import yaml

    def config(config_name: str, path: str, default: bool = False) -> dict[str, Any]:
        entry: dict[str, Any] = {"config_name": config_name}
        if default:
            entry["default"] = True
        entry["data_files"] = [{"split": "test", "path": path}]
        return entry

    header = hub_header(
        name,
        version,
        licence.spdx,
        ["agents", "planning", "tool-use", "constraint-satisfaction", "benchmark", "gridbench"],
        tasks,
        [
            config("metadata", "metadata.parquet", default=True),
            *(config(domain, f"data/tasks/{domain}.parquet") for domain in domains),
            config("answers", "data/answers.parquet"),
        ],
    )
    return "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True) + "---\n\n"


def parquet_bytes(frame: pl.DataFrame, **options: Any) -> bytes:
    """The Parquet file of ``frame`` as bytes (the same bytes polars writes to a path)."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer, **options)
    return buffer.getvalue()


def _write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return sha256(data)


def counts(frame: pl.DataFrame) -> dict[str, Any]:
    """The release's counts: tasks, tasks per domain, certified, cross-checked, decoys."""
    per_domain = Counter(frame["domain"].to_list())
    return {
        "tasks": frame.height,
        "per_domain": dict(sorted(per_domain.items())),
        "certified": int((frame["certificate_status"] == "ok").sum()),
        "crosscheck_ok": int((frame["crosscheck_status"] == "ok").sum()),
        "decoys": int(frame["n_decoys"].sum()),
    }


def hb_table(frame: pl.DataFrame, value: str, fmt: str) -> str:
    """A Markdown table over H (rows) and B (columns): the task count, or the mean of ``value``
    formatted with ``fmt``."""
    budgets = sorted(set(frame["decoy_budget"].to_list()))
    lines = ["| H \\ B | " + " | ".join(str(b) for b in budgets) + " |", "|---|" + "---|" * len(budgets)]
    for hidden in sorted(set(frame["hidden_slots"].to_list())):
        cells = []
        for budget in budgets:
            part = frame.filter((pl.col("hidden_slots") == hidden) & (pl.col("decoy_budget") == budget))
            if value == "count":
                cells.append(str(part.height))
            else:
                mean = part[value].mean() if part.height else None
                cells.append(format(mean, fmt) if mean is not None else "-")
        lines.append(f"| {hidden} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def dataset_card(
    name: str,
    version: str,
    frame: pl.DataFrame,
    integrity: str = "",
    salted: bool = False,
    licence: DataLicence = GENERATED_LICENCE,
) -> str:
    """The release's README.md (dataset card): the Hugging Face header, contents, loading,
    licence, per-(H, B) tables and the ``integrity`` audit text."""
    stats = counts(frame)
    domains = ", ".join(f"{d} ({n})" for d, n in stats["per_domain"].items())
    header = card_header(name, version, list(stats["per_domain"]), stats["tasks"], licence)
    first = next(iter(stats["per_domain"]), "course")
    return (
        header
        + f"""# {name} v{version}

Certified grid-planning tasks for agents. Each task is an R x C schedule with H hidden
cells; each hidden cell offers candidates: the truth, decoys (pass the cell's rules but break
a grid-wide rule) and filtered items (break the cell's rules). H is the horizon, the decoy
budget B the difficulty. Every answer is proven unique by OR-Tools CP-SAT
(`answers/*/*.json` -> `certificate`) and cross-checked by an independent MILP model solved
by HiGHS or CBC (`crosscheck`).

{licence.about}

{PRIVATE if salted else licence.public}

- tasks: {stats["tasks"]} ({domains}); certified: {stats["certified"]};
  MILP cross-check ok: {stats["crosscheck_ok"]}; decoys: {stats["decoys"]}
- `tasks/<domain>/<task_id>.json`: what the agent sees (no answer)
- `answers/<domain>/<task_id>.json`: truth grid, candidate roles, certificates, measures
- `data/tasks/<domain>.parquet` and `data/answers.parquet`: the same files as tables, one row
  per task (the configurations above); a task row also has `prompt`, the system and user
  message an LLM agent starts from (unlimited budgets, no injected failures)
- `metadata.parquet`: one row per task; `timings.parquet`: build wall times (not reproducible)
- `manifest.json`: configuration, software versions, counts, build events, SHA-256 of every file
- `schemas/`: JSON Schemas of the task and answer files; `LICENSE`: the data licence

## Load

```python
from datasets import load_dataset                      # Hugging Face datasets (offline too)
tasks = load_dataset("<this folder or repo>", "{first}", split="test")
answers = load_dataset("<this folder or repo>", "answers", split="test")

import polars as pl                                    # or polars / DuckDB on data/*.parquet
meta = pl.read_parquet("metadata.parquet")

import gridbench                                       # the files, with episodes and scoring
release = gridbench.load_release("<this folder>")
record = release.filter(domains=["{first}"])[0]        # record.task, record.answer: the JSON files
```

A table row holds the task file with a fixed encoding of the shapes a table cannot hold
(open-key dicts as key/value lists, a slot rule's value as number or strings);
`pipeline.storage.tables.decode_task(row)` gives back the file exactly.

## Licence

{licence.statement}

## Tasks per (H, B) cell

{hb_table(frame, "count", "")}

## Mean log10 of the locally valid search space

{hb_table(frame, "log10_search_space", ".2f")}

## Mean canonical DFS nodes

{hb_table(frame, "dfs_nodes", ".0f")}

## Difficulty beyond propagation

Interval propagation on the linear rules (each hidden cell against the most favourable
options of the others, to the fixpoint) is cheap, legitimate reasoning. Share of each task's
decoys that survive it (*resistant* decoys, refuted only by search), mean per (H, B):

{hb_table(frame, "resistant_share", ".2f")}

Of the {int((frame["n_decoys"] > 0).sum())} tasks with decoys, propagation alone decides
{int(frame.filter(pl.col("n_decoys") > 0)["decided_by_propagation"].fill_null(False).sum())}.
Decoys eliminated by one round: {_share(frame, "decoys_one_round")}; by the fixpoint:
{_share(frame, "decoys_fixpoint")}. `generation.min_resistant_share` asks for more.

## Reasoning depth

The lowest rung of a ladder of reference reasoners that decides each task (`depth` in
`metadata.parquet`): `slot` checks only, `one_round` of interval propagation, the
`fixpoint` of propagation, the fixpoint with `probing` (try each option of a cell, propagate,
drop it when a cell is left empty), or full `search`. Tasks per rung by B, and the share that
needs more than the fixpoint (95% Wilson interval); `generation.min_depth` asks for a rung:

{depth_section(frame)}

## Integrity audit

{integrity}
Re-prove every task: `python -m pipeline.verify release=<this folder>`.
"""
    )


def depth_section(frame: pl.DataFrame) -> str:
    """The card's depth table, or a line saying the release has no depth recorded."""
    if "depth" not in frame.columns or frame["depth"].null_count() == frame.height:
        return "(not recorded: the release was built before the reasoning ladder)"
    return depth_table(frame)


def _share(frame: pl.DataFrame, column: str) -> str:
    decoys = int(frame["n_decoys"].sum())
    return f"{int(frame[column].fill_null(0).sum()) / decoys:.1%}" if decoys else "n/a"

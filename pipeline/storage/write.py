"""Release assembly: task and answer files, metadata.parquet, manifest.json, dataset card.

A release is written into a hidden temporary folder next to its final place and renamed
when complete, so an interrupted run never leaves a half release at the final path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from gridbench_core.paths import SCHEMA_DIR
from gridbench_core.prompt import packaged_templates
from pipeline.generation.records import CertifiedTask
from pipeline.integrity import audit, audit_markdown, reading
from pipeline.storage.atomic import _write, atomic_folder
from pipeline.storage.card import GENERATED_LICENCE, DataLicence, dataset_card
from pipeline.storage.layout import DETERMINISTIC, RELEASE_FORMAT, dumps, software_versions
from pipeline.storage.metadata import METADATA_SCHEMA, counts, metadata_row, parquet_bytes
from pipeline.storage.tables import prompt_of


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
    workers: int = 1,
) -> dict[str, Any]:
    """Write the whole release atomically; returns the manifest. The dataset card carries the
    integrity audit: policies always, classifiers when ``audit_splits`` > 0; ``data/`` holds
    the same tasks and answers as Parquet tables (one configuration per domain). The audit
    reads the tasks in ``workers`` processes (the same card for any number)."""
    ordered = sorted(
        tasks,
        key=lambda m: (m.task.domain, m.task.hidden_slots, m.task.decoy_budget, m.key.index, m.task.task_id),
    )
    events = [{"task_id": made.task.task_id, **event} for made in ordered for event in made.events]
    pairs = [(m.task, m.answer) for m in ordered]
    # the audit's workers read the tasks while this process writes the files and the tables
    with (
        atomic_folder(target, overwrite) as folder,
        reading(pairs, workers=workers, features=audit_splits > 0) as started,
    ):
        files: dict[str, str] = {}
        rows, timings = [], []
        task_dicts: dict[str, list[dict[str, Any]]] = {}
        prompts: dict[str, list[tuple[str, Any]]] = {}
        templates = packaged_templates()
        answer_dicts: list[dict[str, Any]] = []
        for made in ordered:
            task_dict, answer_dict = made.task.to_dict(), made.answer.to_dict()
            task_dicts.setdefault(made.task.domain, []).append(task_dict)
            prompts.setdefault(made.task.domain, []).append(prompt_of(made.task, templates))
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
        for relative, data in data_tables(task_dicts, answer_dicts, prompts).items():
            files[relative] = _write(folder / relative, data)
        files["LICENSE"] = _write(folder / "LICENSE", licence.text.encode())
        for relative, data in sorted((extra_files or {}).items()):
            files[relative] = _write(folder / relative, data)
        report = audit(pairs, audit_splits, workers=workers, started=started)
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


def prepare_writing() -> None:
    """Load now what writing a release loads on its first table, while the workers generate.

    pyarrow looks for pandas the first time it converts Python values (to tell a pandas Series
    from a list) and imports it when installed: 0.3-0.5 s of CPU taken from the workers. A
    release's tables are built from lists and dicts only, so in this command's own process
    pyarrow is shown no pandas for that one look (:class:`_Absent`) and does not look again when
    converting; a later ``to_pandas`` still imports it (the shim retries when it must)."""
    import sys

    import pyarrow as pa

    hidden = [] if "pandas" in sys.modules else [_Absent("pandas")]  # imported already: shown
    sys.meta_path[:0] = hidden
    try:
        pa.array([0])
    finally:
        for finder in hidden:
            sys.meta_path.remove(finder)


class _Absent:
    """A meta path finder for which the package ``name`` (and its modules) is not installed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname == self.name or fullname.startswith(self.name + "."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def data_tables(
    tasks: dict[str, list[dict[str, Any]]],
    answers: list[dict[str, Any]],
    prompts: dict[str, list[tuple[str, Any]]] | None = None,
) -> dict[str, bytes]:
    """``data/tasks/<domain>.parquet`` for each domain and ``data/answers.parquet``
    (``prompts``: per domain, the prompt column rendered from the task objects)."""
    from pipeline.storage.tables import ANSWER, table_bytes, task_type

    out = {
        f"data/tasks/{domain}.parquet": table_bytes(
            rows, task_type(domain), f"data/tasks/{domain}", None if prompts is None else prompts[domain]
        )
        for domain, rows in sorted(tasks.items())
    }
    out["data/answers.parquet"] = table_bytes(answers, ANSWER, "data/answers")
    return out

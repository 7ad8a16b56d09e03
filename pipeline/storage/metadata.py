"""``metadata.parquet``: one row per task (key, roles, certificate, measures, file digests)
with a declared schema, and the counts a manifest records."""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

import polars as pl

from pipeline.generation.records import CertifiedTask
from pipeline.storage.layout import sha256
from pipeline.storage.safe import ReleaseError
from pipeline.storage.tables import INT64_MAX


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
        # the rule the nearest second completion breaks, and the share (units over that rule's
        # bound, which names it), stay in the answer: the side of the bound it names is the side
        # the truth keeps, and reading it picked the truth +0.04-0.05 over chance (round 8)
        "distance_units": distance.units,
        "decoys_one_round": propagation.one_round,
        "decoys_fixpoint": propagation.fixpoint,
        "resistant_decoys": propagation.resistant,
        "resistant_share": (
            round(propagation.resistant / propagation.decoys, 6) if propagation.decoys else None
        ),
        "decided_by_propagation": propagation.decided,
        "depth": measures.depth.rung if measures.depth else None,
        "depth_rung": measures.depth.name if measures.depth else None,
        "search_nodes": measures.effort.search_nodes if measures.effort else None,
        "search_capped": measures.effort.search_capped if measures.effort else None,
        "joint_bits": measures.effort.joint_bits if measures.effort else None,
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
    "decoys_one_round": pl.Int64,
    "decoys_fixpoint": pl.Int64,
    "resistant_decoys": pl.Int64,
    "resistant_share": pl.Float64,
    "decided_by_propagation": pl.Boolean,
    "depth": pl.Int64,
    "depth_rung": pl.String,
    "search_nodes": pl.Int64,
    "search_capped": pl.Boolean,
    "joint_bits": pl.Float64,
    "task_sha256": pl.String,
    "answer_sha256": pl.String,
}


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


def parquet_bytes(frame: pl.DataFrame, **options: Any) -> bytes:
    """The Parquet file of ``frame`` as bytes (the same bytes polars writes to a path)."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer, **options)
    return buffer.getvalue()

"""What a release says about itself, checked against what it holds (``verify``).

Beyond the digests of its files, a manifest claims counts (tasks, per domain, certified,
cross-checked, decoys, solver disagreements), build events, the configuration it was built
from, a name and a version, software versions and the list of deterministic files. Each claim
is recomputed from the files: the configuration must make exactly these tasks (their domains,
grid, H, B, K, seed and index, and, for an unsalted release, their ids); the dataset card and
the licence are written again and compared; the JSON Schemas must be this code's; timings
must be possible. What the release alone cannot prove (an imported licence, the classifier
audit of the card, the ids of a salted release) is named as unverified, never passed over.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from gridbench_core.paths import SCHEMA_DIR
from pipeline.storage.layout import DETERMINISTIC, NAME, VERSION
from pipeline.storage.parquet import read_arrow_table
from pipeline.storage.safe import ReleaseError, read_bytes, read_json, unsafe_text

MANIFEST_KEYS = {
    "format",
    "name",
    "version",
    "config",
    "software",
    "counts",
    "build_events",
    "deterministic",
    "files",
}
COUNT_KEYS = {"tasks", "per_domain", "certified", "crosscheck_ok", "decoys", "crosscheck_disagreements"}
TIMING_COLUMN = re.compile(r"^[a-z][a-z_]{0,40}_ms\Z")
TIMING_MAX_MS = 7 * 24 * 3600 * 1000.0  # a week for one task: anything above is not a timing
MAX_LIST = 10_000  # values of a recorded H or B list (a preset has at most a few dozen)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _short(value: Any) -> str:
    return str(value)[:80]


def check_claims(
    path: Path,
    manifest: dict[str, Any],
    sound: set[str],
    meta: pl.DataFrame | None,
    failures: list[str],
    notes: list[str],
    build_schema: Any = None,
) -> None:
    """Every claim of ``manifest`` against the release at ``path`` (``sound``: the files whose
    digests matched; ``meta``: ``metadata.parquet`` once checked against the files, or None;
    ``build_schema``: the structured config a build's recorded one must fit, when the caller
    has it). Failures and the names of what cannot be verified are appended."""
    _shape(manifest, failures)
    _counts(manifest, meta, failures)
    _events(manifest, meta, failures)
    _config(manifest, meta, failures, notes, build_schema)
    _generation(path, manifest, sound, meta, failures)
    _schemas(path, manifest["files"], sound, failures)
    _timings(path, manifest["files"], sound, meta, failures)
    _card_and_licence(path, manifest, sound, meta, failures, notes)


def _shape(manifest: dict[str, Any], failures: list[str]) -> None:
    unknown = sorted(set(manifest) - MANIFEST_KEYS)
    if unknown:
        failures.append(f"manifest.json: unknown keys {[_short(k) for k in unknown[:5]]}")
    name, version = manifest.get("name"), manifest.get("version")
    if not isinstance(name, str) or not NAME.match(name) or ".." in name:
        failures.append(f"manifest.json: name {_short(name)!r} is not a release name")
    if not isinstance(version, str) or not VERSION.match(version):
        failures.append(f"manifest.json: version {_short(version)!r} is not a semantic version")
    software = manifest.get("software")
    if not isinstance(software, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and not unsafe_text(k, 64) and not unsafe_text(v, 64)
        for k, v in software.items()
    ):
        failures.append("manifest.json: 'software' must map package names to short version strings")
    if manifest.get("deterministic") != DETERMINISTIC:
        failures.append(f"manifest.json: 'deterministic' must list {DETERMINISTIC}")
    if not isinstance(manifest.get("config"), dict):
        failures.append("manifest.json: 'config' must be the configuration the release was built from")


def _counts(manifest: dict[str, Any], meta: pl.DataFrame | None, failures: list[str]) -> None:
    counts = manifest["counts"]
    missing, unknown = sorted(COUNT_KEYS - set(counts)), sorted(set(counts) - COUNT_KEYS)
    if missing or unknown:
        failures.append(f"manifest.json: counts lacks {missing} or has unknown keys {unknown[:5]}")
    for key in sorted(COUNT_KEYS - {"per_domain"}):
        if key in counts and (not _is_int(counts[key]) or counts[key] < 0):
            failures.append(f"manifest.json: counts.{key}={_short(counts[key])} is not a whole number")
    per_domain = counts.get("per_domain")
    if not isinstance(per_domain, dict) or not all(_is_int(v) for v in per_domain.values()):
        failures.append(
            f"manifest.json: counts.per_domain={_short(per_domain)!r} must map each domain to a number"
        )
    events = manifest.get("build_events")
    if not isinstance(events, list):
        failures.append("manifest.json: 'build_events' must be a list")
    elif counts.get("crosscheck_disagreements") != len(events):
        claimed = _short(counts.get("crosscheck_disagreements"))
        failures.append(
            f"manifest.json: counts.crosscheck_disagreements={claimed} but build_events holds {len(events)}"
        )
    if meta is None:
        return
    held = {
        "certified": int((meta["certificate_status"] == "ok").sum()),
        "crosscheck_ok": int((meta["crosscheck_status"] == "ok").sum()),
        "decoys": int(meta["n_decoys"].sum()),
    }
    for key, value in held.items():
        if counts.get(key) != value:
            failures.append(
                f"manifest.json: counts.{key}={_short(counts.get(key))} but the files give {value}"
            )


def _events(manifest: dict[str, Any], meta: pl.DataFrame | None, failures: list[str]) -> None:
    events = manifest.get("build_events")
    if not isinstance(events, list):
        return
    redraws = dict(zip(meta["task_id"], meta["task_redraws"], strict=True)) if meta is not None else {}
    for number, event in enumerate(events):
        where = f"manifest.json: build_events[{number}]"
        if not isinstance(event, dict) or event.get("kind") != "crosscheck_disagreement":
            failures.append(f"{where} is not a cross-check disagreement record")
            continue
        task_id: Any = event.get("task_id")
        attempt: Any = event.get("attempt")
        if not isinstance(task_id, str) or (meta is not None and task_id not in redraws):
            failures.append(f"{where} names {_short(task_id)!r}, which is not a task of the release")
        elif (
            not _is_int(attempt)
            or attempt < 0
            or (meta is not None and (not _is_int(redraws[task_id]) or attempt >= redraws[task_id]))
        ):
            failures.append(
                f"{where}: attempt {_short(attempt)!r} is not a draft before the task's final draw"
            )
        texts = [v for v in json_strings(event) if unsafe_text(v, 1000)]
        if texts:
            failures.append(f"{where} holds text that cannot be shown ({unsafe_text(texts[0], 1000)})")


def json_strings(value: Any) -> list[str]:
    """Every string in a JSON value (keys too), without recursion."""
    out, stack = [], [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, dict):
            out.extend(str(k) for k in node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def _config(
    manifest: dict[str, Any],
    meta: pl.DataFrame | None,
    failures: list[str],
    notes: list[str],
    build_schema: Any = None,
) -> None:
    config = manifest.get("config")
    if not isinstance(config, dict):
        return
    release = config.get("release")
    if not isinstance(release, dict):
        failures.append("manifest.json: config.release is missing")
        return
    for key in ("name", "version"):
        if release.get(key) != manifest.get(key):
            failures.append(
                f"manifest.json: config.release.{key}={_short(release.get(key))!r} but the "
                f"manifest says {_short(manifest.get(key))!r}"
            )
    _statuses(release, meta, failures)
    if "grid" in config:
        _build_config(config, failures, build_schema)
        _generated(config, release, meta, failures, notes)
    elif "source" in config:
        notes.append(
            "config: an import (source files are not in the release, so the tasks cannot be "
            "traced back to them; each is re-proved)"
        )
        if meta is not None and (meta["seed"] != 0).any():
            failures.append("metadata.parquet: an imported task has a seed other than 0")
    else:
        failures.append("manifest.json: config describes neither a build (grid) nor an import (source)")


# what the build writes beside the options (pipeline.config.salt_record)
SALT_KEYS = ("salted", "salt_sha256")


def _build_config(config: dict[str, Any], failures: list[str], schema: Any) -> None:
    """A build's recorded config is one the release command takes: no unknown key anywhere
    (``generation`` is checked on its own), every value of its type, the grid's name its
    shape, the solver's limits positive, no list naming a domain, H or B twice (hostile
    round 8: an unknown key with a U+202E in it, ``grid.name=7x7`` on a 5x7 grid, a negative
    time limit and a domain listed twice all passed)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    recorded = {key: value for key, value in config.items() if key != "generation"}
    if isinstance(recorded.get("release"), dict):  # written by the build beside the options
        recorded["release"] = {k: v for k, v in recorded["release"].items() if k not in SALT_KEYS}
    try:
        if schema is not None:
            OmegaConf.merge(OmegaConf.structured(schema), recorded)
    except (OmegaConfBaseException, ValueError, TypeError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        failures.append(f"manifest.json: config is not one the release command takes ({_short(first)})")
        return
    grid, solver, release = config["grid"], config.get("solver"), config.get("release")
    if isinstance(grid, dict) and grid.get("name") != f"{grid.get('rows')}x{grid.get('cols')}":
        failures.append(
            f"manifest.json: config.grid.name={_short(grid.get('name'))!r} is not its "
            f"{_short(grid.get('rows'))}x{_short(grid.get('cols'))} shape"
        )
    if not isinstance(solver, dict) or not (
        isinstance(solver.get("time_limit_s"), int | float)
        and not isinstance(solver.get("time_limit_s"), bool)
        and solver["time_limit_s"] > 0
        and _is_int(solver.get("workers"))
        and solver["workers"] >= 1
    ):
        failures.append("manifest.json: config.solver needs time_limit_s > 0 and workers >= 1")
    lists = (("grid", "hidden_slots"), ("grid", "decoy_budgets"), ("release", "domains"))
    for group, key in lists:
        values = (grid if group == "grid" else release or {}).get(key)
        if isinstance(values, list) and len(values) != len({json.dumps(v) for v in values}):
            failures.append(f"manifest.json: config.{group}.{key} names one value twice")


def _generation(
    path: Path, manifest: dict[str, Any], sound: set[str], meta: pl.DataFrame | None, failures: list[str]
) -> None:
    """A built release's generation settings: recorded, every one known and valid, and what
    the tasks can be checked to meet, met (the slot rules per cell, the search counts, and
    :func:`_targets`). Hostile round 8 swapped in ``min_depth=fixpoint`` and
    ``min_resistant_share=0.5`` for a release that met neither, deleted the block, or wrote
    ``min_depth=telepathy``, and verify passed each."""
    from dataclasses import fields

    from pipeline.generation.keys import GenerationError, GenerationSettings

    config = manifest.get("config")
    if not isinstance(config, dict) or "grid" not in config:
        return  # an import, or no config (said elsewhere)
    generation = config.get("generation")
    if not isinstance(generation, dict):
        failures.append("manifest.json: config.generation is missing (the settings the tasks were made with)")
        return
    unknown = sorted(set(generation) - {f.name for f in fields(GenerationSettings)})
    if unknown:
        failures.append(f"manifest.json: config.generation.{_short(unknown[0])} is not a generation setting")
        return
    try:
        settings = GenerationSettings(**generation)
        settings.validate()
    except (GenerationError, TypeError, ValueError) as error:
        failures.append(f"manifest.json: config.generation does not validate ({_short(str(error))})")
        return
    _slot_rule_counts(path, sound, settings.max_slot_rules, failures)
    if meta is None:
        return
    _search_counts(meta, settings.dfs_node_limit, failures)
    if "data/answers.parquet" in sound:
        _targets(path, meta, settings, failures)


def _slot_rule_counts(path: Path, sound: set[str], most: int, failures: list[str]) -> None:
    """Every hidden cell of the task tables holds 1..``most`` slot rules, as generation draws
    them (hostile round 9: max_slot_rules=1 beside cells of three slot rules passed)."""
    overfull = 0
    for name in sorted(n for n in sound if n.startswith("data/tasks/") and n.endswith(".parquet")):
        try:
            table = read_arrow_table(read_bytes(path, name), name).select(["slots"]).to_pylist()
        except (ReleaseError, KeyError, ValueError):
            continue  # the table's own check names what is wrong with it
        overfull += sum(
            1
            for row in table
            for slot in row["slots"] or ()
            if not 1 <= len(slot.get("constraints") or ()) <= most
        )
    if overfull:
        failures.append(
            f"data/tasks: {overfull} hidden cells hold a number of slot rules outside 1..config."
            f"generation.max_slot_rules={most}"
        )


def _search_counts(meta: pl.DataFrame, limit: int, failures: list[str]) -> None:
    """Each task's canonical search count fits ``dfs_node_limit``: capped exactly above it
    (hostile round 9: dfs_node_limit=2 beside uncapped counts of 32 passed)."""
    miscounted = meta.filter(
        (pl.col("dfs_nodes") > limit + 1) | (pl.col("dfs_capped") != (pl.col("dfs_nodes") > limit))
    ).height
    if miscounted:
        failures.append(
            f"metadata.parquet: {miscounted} tasks' canonical search counts do not fit "
            f"config.generation.dfs_node_limit={limit}"
        )


def _targets(path: Path, meta: pl.DataFrame, settings: Any, failures: list[str]) -> None:
    """Each task at least ``min_depth`` deep (capped by its cells holding decoys, as generation
    caps it), ``min_resistant_share`` met where it applies, and the answers cross-checked by
    ``crosscheck_solver``."""
    from pipeline.generation.resist import resistant_enough, target_rung

    try:
        rows = (
            read_arrow_table(read_bytes(path, "data/answers.parquet"), "data/answers.parquet")
            .select(["task_id", "roles", "crosscheck"])
            .to_pylist()
        )
    except (ReleaseError, KeyError, ValueError):
        return  # the table's own check names what is wrong with it
    by_id = {row["task_id"]: row for row in meta.iter_rows(named=True)}
    shallow, unresisted, solvers = [], [], set()
    for row in rows:
        found = by_id.get(row["task_id"])
        if found is None:
            continue
        cells = sum(1 for role in row["roles"] or () if isinstance(role, dict) and role.get("decoys"))
        if found["depth"] is None or found["depth"] < target_rung(cells, settings.min_depth):
            shallow.append(row["task_id"])
        share = settings.min_resistant_share if cells >= 2 else 0.0
        decoys = found["n_decoys"] if _is_int(found["n_decoys"]) else 0  # a null: the metadata check names it
        if share > 0 and not resistant_enough(found["resistant_decoys"] or 0, decoys, share):
            unresisted.append(row["task_id"])
        if isinstance(row["crosscheck"], dict):
            solvers.add(row["crosscheck"].get("solver"))
    if shallow:
        failures.append(
            f"metadata.parquet: {len(shallow)} tasks are decided below config.generation.min_depth="
            f"{settings.min_depth!r} (e.g. {shallow[0]})"
        )
    if unresisted:
        failures.append(
            f"metadata.parquet: {len(unresisted)} tasks keep fewer resistant decoys than "
            f"config.generation.min_resistant_share={settings.min_resistant_share} (e.g. {unresisted[0]})"
        )
    others = sorted(str(name) for name in solvers - {settings.crosscheck_solver})
    if others:
        failures.append(
            f"answers: cross-checked by {_short(others[0])}, not config.generation.crosscheck_solver="
            f"{settings.crosscheck_solver!r}"
        )


def _same_policies(computed: str, shipped: str) -> bool:
    """Whether a card's audit section (``shipped``, classifiers included) is the audit re-run
    without classifiers (``computed``) but for its classifier and transfer sections and its
    verdict (which the classifiers join): the decoy-cell line and every other section the same."""

    def parts(text: str) -> tuple[str, list[str]]:
        blocks = re.split(r"(?m)^(?=### )", text)
        lines = [line for line in blocks[0].splitlines() if line.strip()]
        kept = [b.rstrip() for b in blocks[1:] if not b.startswith(("### Classifiers", "### Transfer"))]
        return (lines[0] if lines else ""), kept

    ours, theirs = parts(computed), parts(shipped)
    return bool(ours[0]) and ours == theirs


def _statuses(release: dict[str, Any], meta: pl.DataFrame | None, failures: list[str]) -> None:
    """Only certified tasks ship, and each carries the cross-check its config asked for."""
    if meta is None:
        return
    uncertified = meta.filter((pl.col("certificate_status") != "ok") | ~pl.col("unique")).height
    if uncertified:
        failures.append(f"metadata.parquet: {uncertified} tasks claim no certificate, which no build ships")
    crosscheck = release.get("crosscheck")
    if not isinstance(crosscheck, bool):  # "yes", or deleted: the check below was skipped (round 8)
        failures.append(
            f"manifest.json: config.release.crosscheck={_short(crosscheck)!r}: must be true or false"
        )
    else:
        expected = "ok" if crosscheck else "not_run"
        wrong = meta.filter(pl.col("crosscheck_status") != expected).height
        if wrong:
            failures.append(
                f"metadata.parquet: {wrong} tasks' cross-check is not {expected!r}, as "
                f"config.release.crosscheck={str(crosscheck).lower()} says"
            )


def _int_list(value: Any) -> list[int] | None:
    if (
        not isinstance(value, list)
        or not value
        or len(value) > MAX_LIST
        or not all(_is_int(v) for v in value)
    ):
        return None
    return value


def _generated(
    config: dict[str, Any],
    release: dict[str, Any],
    meta: pl.DataFrame | None,
    failures: list[str],
    notes: list[str],
) -> None:
    """A built release: its recorded grid, domains, H, B, seed and tasks per cell make exactly
    the tasks it holds."""
    grid: dict[str, Any] = config["grid"] if isinstance(config["grid"], dict) else {}
    hidden: Any = _int_list(grid.get("hidden_slots"))
    budgets: Any = _int_list(grid.get("decoy_budgets"))
    domains: Any = release.get("domains")
    per_cell: Any = release.get("tasks_per_cell")
    seed: Any = release.get("seed")
    room: Any = grid.get("room_over_budget")
    shape_ok = (
        hidden is not None
        and budgets is not None
        and all(_is_int(grid.get(k)) and grid[k] >= 1 for k in ("rows", "cols", "candidates_per_slot"))
        and isinstance(domains, list)
        and 0 < len(domains) <= 100
        and all(isinstance(d, str) for d in domains)
        and _is_int(per_cell)
        and 1 <= per_cell <= 100_000
        and _is_int(seed)
        and (room is None or _is_int(room))
    )
    if not shape_ok:
        failures.append("manifest.json: config.grid / config.release do not describe a build")
        return
    expected = len(set(domains)) * len(set(hidden)) * len(set(budgets)) * per_cell
    if meta is not None and meta.height != expected:
        failures.append(
            f"manifest.json: its config makes {expected} tasks "
            f"({len(set(domains))} domains x {len(set(hidden))} H x {len(set(budgets))} B x "
            f"{per_cell}), the release holds {meta.height}"
        )
    salted = bool(release.get("salted"))
    if salted:
        notes.append("task ids: a salted release (its ids come from a secret salt); each task is re-proved")
    if meta is None:
        return
    wrong: list[str] = []
    keys: set[tuple[Any, ...]] = set()
    for row in meta.iter_rows(named=True):
        budget = row["decoy_budget"]
        candidates = (
            grid["candidates_per_slot"] if room is None else max(grid["candidates_per_slot"], budget + room)
        )
        checks = {
            "domain": row["domain"] in domains,
            "rows": row["rows"] == grid["rows"],
            "cols": row["cols"] == grid["cols"],
            "hidden_slots": row["hidden_slots"] in hidden,
            "decoy_budget": budget in budgets,
            "candidates_per_slot": row["candidates_per_slot"] == candidates,
            "seed": row["seed"] == seed,
            "index": _is_int(row["index"]) and 0 <= row["index"] < per_cell,
        }
        bad = [name for name, ok in checks.items() if not ok]
        key = (row["domain"], row["hidden_slots"], budget, row["index"])
        if key in keys:
            bad.append("a repeated (domain, H, B, index)")
        keys.add(key)
        if not bad and not salted and row["task_id"] != _task_id(row, candidates):
            bad.append("task_id (not the id its key gives)")
        if not bad and salted and row["task_id"] == _task_id(row, candidates):
            # hostile round 8: salted=true written into a public release, whose card then said
            # it is private and cannot be regenerated
            bad.append("task_id (the public id its key gives, in a release that says it is salted)")
        if bad:
            wrong.append(f"{row['task_id']}: {', '.join(bad)}")
    if wrong:
        failures.append(
            f"metadata.parquet: {len(wrong)} tasks are not what the recorded config makes "
            f"({wrong[0]}{'; ...' if len(wrong) > 1 else ''})"
        )


def _task_id(row: dict[str, Any], candidates: int) -> str:
    from pipeline.generation.keys import TaskKey

    key = TaskKey(
        row["domain"],
        row["rows"],
        row["cols"],
        row["hidden_slots"],
        row["decoy_budget"],
        candidates,
        row["seed"],
        row["index"],
    )
    return key.task_id


def _schemas(path: Path, listed: dict[str, str], sound: set[str], failures: list[str]) -> None:
    expected = {f"schemas/{kind}.schema.json" for kind in ("task", "answer")}
    for extra in sorted(n for n in listed if n.startswith("schemas/") and n not in expected):
        failures.append(f"{extra}: not a schema of this release format")
    for relative in sorted(expected):
        if relative not in listed:
            failures.append(f"manifest.json: {relative} is not listed")
        elif (
            relative in sound
            and read_bytes(path, relative) != (SCHEMA_DIR / relative.split("/")[1]).read_bytes()
        ):
            failures.append(f"{relative}: not the JSON Schema of this release format (replaced or edited)")


def _timings(
    path: Path, listed: dict[str, str], sound: set[str], meta: pl.DataFrame | None, failures: list[str]
) -> None:
    """``timings.parquet``: one row per task, every column a possible wall time in ms."""
    if "timings.parquet" not in listed:
        failures.append("manifest.json: timings.parquet is not listed")
        return
    if "timings.parquet" not in sound:
        return
    try:
        table = read_arrow_table(read_bytes(path, "timings.parquet"), "timings.parquet")
    except ReleaseError as error:
        failures.append(str(error))
        return
    import pyarrow as pa

    names = table.schema.names
    if (
        not names
        or names[0] != "task_id"
        or table.schema.field(0).type not in (pa.string(), pa.large_string())
        or not all(TIMING_COLUMN.match(n) and table.schema.field(n).type == pa.float64() for n in names[1:])
    ):
        failures.append("timings.parquet: its columns are not task_id and wall times (*_ms, float)")
        return
    ids = table.column("task_id").to_pylist()
    if meta is not None and sorted(str(i) for i in ids) != sorted(meta["task_id"].to_list()):
        failures.append(f"timings.parquet: its rows ({len(ids)}) are not the release's tasks, once each")
    for name in names[1:]:
        values = [v for v in table.column(name).to_pylist() if v is not None]
        bad = [v for v in values if not math.isfinite(v) or not 0.0 <= v <= TIMING_MAX_MS]
        if bad:
            failures.append(
                f"timings.parquet: {name} holds {len(bad)} impossible times (e.g. {bad[0]}); "
                f"a time is between 0 and {TIMING_MAX_MS:.0f} ms"
            )


def _card_and_licence(
    path: Path,
    manifest: dict[str, Any],
    sound: set[str],
    meta: pl.DataFrame | None,
    failures: list[str],
    notes: list[str],
) -> None:
    """``LICENSE`` is the licence a build writes (an import's is its source's, which the
    release cannot prove: named as unverified); ``README.md`` is the card the release's own
    files give, written again and compared."""
    from pipeline.storage.agentce import licence_of
    from pipeline.storage.card import GENERATED_LICENCE

    config: dict[str, Any] = manifest["config"] if isinstance(manifest.get("config"), dict) else {}
    imported = "source" in config
    for relative in ("LICENSE", "README.md"):
        if relative not in manifest["files"]:
            failures.append(f"manifest.json: {relative} is not listed")
    if "LICENSE" not in sound:
        return
    try:
        text = read_bytes(path, "LICENSE").decode("utf-8")
    except UnicodeDecodeError:
        failures.append("LICENSE: not UTF-8 text")
        return
    if imported:
        licence = licence_of(text)
        notes.append("LICENSE: the imported data's own licence, copied from its source (not in the release)")
    else:
        licence = GENERATED_LICENCE
        if text != licence.text:
            failures.append("LICENSE: not the licence a build writes (CC BY 4.0); the text was changed")
    if "README.md" in sound and meta is not None and isinstance(manifest.get("name"), str):
        _card(path, manifest, config, sound, meta, licence, failures, notes)


def _card(
    path: Path,
    manifest: dict[str, Any],
    config: dict[str, Any],
    sound: set[str],
    meta: pl.DataFrame,
    licence: Any,
    failures: list[str],
    notes: list[str],
) -> None:
    from gridbench_core.task_io import answer_from_dict, task_from_dict
    from pipeline.integrity import audit, audit_markdown
    from pipeline.storage.card import EARLIER_VERIFY_LINES, VERIFY_LINE, dataset_card

    names = [f"{d}/{t}.json" for d, t in zip(meta["domain"], meta["task_id"], strict=True)]
    if not all(f"tasks/{n}" in sound and f"answers/{n}" in sound for n in names):
        notes.append("README.md: not compared (task or answer files failed their checks)")
        return
    pairs = (  # one at a time: the audit keeps only its decoy cells, whatever the release's size
        (task_from_dict(read_json(path, f"tasks/{n}")), answer_from_dict(read_json(path, f"answers/{n}")))
        for n in names
    )
    try:
        report = audit(pairs, 0)  # the classifiers (audit_splits > 0) are not re-run: policies only
    except Exception:  # a malformed file fails with its own message elsewhere
        notes.append("README.md: not compared (a task or answer file does not parse)")
        return
    release: dict[str, Any] = config["release"] if isinstance(config.get("release"), dict) else {}
    splits = release.get("audit_splits", 0)
    splits = splits if _is_int(splits) and 0 <= splits <= 1000 else 0
    card = dataset_card(
        str(manifest["name"]),
        str(manifest.get("version")),
        meta,
        audit_markdown(report),
        bool(release.get("salted")),
        licence,
    )
    shipped = read_bytes(path, "README.md").decode("utf-8", "replace")
    for earlier in EARLIER_VERIFY_LINES:  # a card written before the commands moved
        if card.replace(VERIFY_LINE, earlier) == shipped:
            card = shipped
    if splits:
        notes.append(f"README.md: its classifier audit (release.audit_splits={splits}) is not re-run")
        marker = "## Integrity audit"
        if marker not in shipped or not _same_policies(card.split(marker)[1], shipped.split(marker, 1)[1]):
            # hostile round 8 replaced the whole audit section by "Verdict: pass" in a card whose
            # classifiers are not re-run: what is re-run (its decoy cells and the policies) is
            # compared; only the classifiers, and the verdict they join, are taken as written
            failures.append(
                "README.md: its integrity audit's decoy cells or policy tables are not what this "
                "release's files give"
            )
        card, shipped = card.split(marker)[0], shipped.split(marker)[0]
    if card != shipped:
        line = next(
            (
                i
                for i, (a, b) in enumerate(zip(card.splitlines(), shipped.splitlines(), strict=False), 1)
                if a != b
            ),
            min(len(card.splitlines()), len(shipped.splitlines())) + 1,
        )
        failures.append(f"README.md: not the card this release's files give (it differs at line {line})")

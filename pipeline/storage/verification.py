"""Re-prove a shipped release from its files alone. The release is untrusted input:

1. Files: every listed path is relative and inside the release and names a regular file; no
   symlink or special file anywhere; every file matches its digest; nothing unlisted.
2. Release: the manifest's counts match the files; each task lives in the folder of its
   domain under its own id, once; `metadata.parquet` describes exactly these files; the
   `data/` tables hold exactly these files, each row decoding to its file.
3. Each task: the JSON Schemas; the answer belongs to the task; candidates are unique and of
   the promised number; the instruction is exactly what the task data renders to; then the
   proofs (CP-SAT, and the MILP cross-check when asked), and every difficulty measure the
   answer claims, derived again (``claimed.py``).

Every failure is one line naming the file or the task and the reason; nothing raises.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import polars as pl

from domains import DomainError
from gridbench_core.errors import UserError
from gridbench_core.paths import SCHEMA_DIR
from gridbench_core.task import Answer, Task, TaskFormatError
from gridbench_core.task_io import answer_from_dict, task_from_dict
from pipeline.generation.instruction import rendered_instruction
from pipeline.generation.keys import GenerationSettings
from pipeline.generation.seal import Sealed, seal
from pipeline.parallel import long_job, parallel_imap
from pipeline.storage.claimed import measure_claims
from pipeline.storage.claims import check_claims, json_strings
from pipeline.storage.layout import sha256
from pipeline.storage.parquet import read_arrow_table, read_table_rows
from pipeline.storage.read import has_manifest, read_manifest
from pipeline.storage.safe import ReleaseError, parsed_once, pinned, read_bytes, read_json, unsafe_text, walk
from pipeline.storage.settings import VerifySettings
from pipeline.storage.shards import (
    TrainPlan,
    card,
    is_sharded,
    read_shards_manifest,
    shard_dataset,
    shard_files,
    shard_jobs,
)
from pipeline.storage.tables import (
    ANSWER,
    decode_answer,
    decode_task,
    read_task_rows,
    schema_of,
    task_prompt,
    task_type,
)
from solvers.checker import task_memo
from solvers.cpsat import CpSatModel
from solvers.milp import crosscheck_answer
from solvers.results import RETRY_FACTOR, UNKNOWN, SolverSettings


@dataclass
class VerifyReport:
    """What verifying a release (plain or sharded) found: its tasks, and the failures per
    task and per file (anything not tied to one task: digests, manifest claims, a malformed
    row). A sharded release also names its shards with the rows each holds."""

    tasks: dict[str, str] = field(default_factory=dict)  # task_id -> domain
    failures: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    file_failures: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)  # what the release alone cannot prove
    shards: dict[str, int] = field(default_factory=dict)  # a sharded release: shard -> rows

    @property
    def ok(self) -> bool:
        """Whether nothing failed."""
        return not self.failures and not self.file_failures

    @property
    def proved(self) -> int:
        """Tasks with no failure."""
        return sum(1 for task_id in self.tasks if not self.failures.get(task_id))


def check_files(path: Path, manifest: dict[str, Any], report: VerifyReport) -> set[str]:
    """Digests, unlisted files, symlinks and special files; returns the files that are sound."""
    present, problems = walk(path)
    report.file_failures += problems
    sound = set()
    for relative, digest in sorted(manifest["files"].items()):
        try:
            data = read_bytes(path, relative)
        except ReleaseError as error:
            report.file_failures.append(
                str(error) + (" (listed in the manifest)" if "missing" in str(error) else "")
            )
            continue
        if sha256(data) != digest:
            report.file_failures.append(f"{relative}: digest mismatch (file changed)")
        else:
            sound.add(relative)
    for extra in sorted(present - set(manifest["files"]) - {"manifest.json"}):
        report.file_failures.append(f"{extra}: not listed in the manifest")
    return sound


# what a release may list (hostile round 8 listed .git/hooks/post-checkout and SOLUTIONS.md with
# their digests: verify passed, and `hub` would have uploaded them to a public dataset)
RELEASE_FILES = {
    "metadata.parquet",
    "timings.parquet",
    "README.md",
    "LICENSE",
    "data/answers.parquet",
    "schemas/answer.schema.json",
    "schemas/task.schema.json",
}
PAIRED = ("tasks/", "answers/")  # their own checks name a misplaced one
RELEASE_PATTERN = re.compile(r"^(?:(?:tasks|answers)/[^/]+/[^/]+\.json|data/tasks/[^/]+\.parquet)\Z")


def check_release(
    path: Path,
    manifest: dict[str, Any],
    report: VerifyReport,
    sound: set[str] | None = None,
    build_schema: Any = None,
) -> list[str]:
    """Counts, folders, metadata and tables against the files (a table or metadata file whose
    digest failed, not in ``sound``, is not decompressed); returns the task files to prove."""
    listed = manifest["files"]
    damaged = set() if sound is None else set(listed) - sound
    tasks = sorted(name for name in listed if name.startswith("tasks/"))
    answers = {name for name in listed if name.startswith("answers/")}
    failures = report.file_failures
    counts = manifest["counts"]
    if counts["tasks"] != len(tasks):
        failures.append(
            f"manifest.json: counts.tasks={counts['tasks']} but {len(tasks)} task files are listed"
        )
    if not tasks:
        failures.append("manifest.json: the release lists no task")
    per_domain = Counter(name.split("/")[1] for name in tasks if name.count("/") == 2)
    if counts.get("per_domain") != dict(per_domain):
        failures.append(
            f"manifest.json: counts.per_domain={counts.get('per_domain')} but the task files "
            f"give {dict(sorted(per_domain.items()))}"
        )
    for name in tasks:
        if name.count("/") != 2 or not name.endswith(".json"):
            failures.append(f"{name}: task files live at tasks/<domain>/<task_id>.json")
        elif "answers/" + name[len("tasks/") :] not in answers:
            failures.append(f"{name}: its answer file is not listed")
    for name in sorted(answers):
        if "tasks/" + name[len("answers/") :] not in listed:
            failures.append(f"{name}: an answer without a task file")
    config = manifest.get("config")
    imported = isinstance(config, dict) and "source" in config
    allowed = RELEASE_FILES | ({"import_report.json"} if imported else set())
    for name in sorted(listed):
        if name not in allowed and not RELEASE_PATTERN.match(name) and not name.startswith(PAIRED):
            failures.append(
                f"{name[:120]}: listed, but not a file of the release format (tasks/, answers/, data/, "
                "schemas/, metadata.parquet, timings.parquet, README.md, LICENSE; an import's "
                "import_report.json): a release ships and uploads only those"
            )
    with parsed_once():  # the metadata, the tables and the card read every task file
        meta = _check_metadata(path, listed, tasks, failures, damaged)
        _check_tables(path, listed, tasks, failures, damaged)
        check_claims(path, manifest, set(listed) - damaged, meta, failures, report.unverified, build_schema)
    return task_files(listed)


def _check_tables(
    path: Path, listed: dict[str, str], tasks: list[str], failures: list[str], damaged: set[str]
) -> None:
    """``data/``: one table per domain holding exactly that domain's task files, and one
    holding every answer file, each row decoding to its file."""
    by_domain: dict[str, dict[str, str]] = defaultdict(dict)
    for name in tasks:
        if name.count("/") == 2:
            by_domain[name.split("/")[1]][name.rsplit("/", 1)[-1][: -len(".json")]] = name
    expected = {f"data/tasks/{domain}.parquet": files for domain, files in by_domain.items()}
    answers = {
        task_id: "answers/" + name[len("tasks/") :]
        for files in by_domain.values()
        for task_id, name in files.items()
    }
    expected["data/answers.parquet"] = answers
    for extra in sorted(n for n in listed if n.startswith("data/") and n not in expected):
        failures.append(f"{extra}: a table of no domain of this release")
    for table, files in sorted(expected.items()):
        if table not in listed:
            failures.append(f"manifest.json: {table} is not listed (rebuild the release to add data/ tables)")
            continue
        if table in damaged:
            continue  # its digest failed already: an untrusted file is not decompressed
        try:
            kind = (
                ANSWER
                if table == "data/answers.parquet"
                else task_type(table.split("/")[-1][: -len(".parquet")])
            )
        except ValueError:
            failures.append(f"{table}: a table of a domain this code does not know")
            continue
        try:
            raw = read_bytes(path, table)
            if kind is ANSWER:
                rows = read_table_rows(raw, table, schema_of(kind))
            else:
                rows = read_task_rows(raw, table, table.split("/")[-1][: -len(".parquet")])
        except ReleaseError as error:
            failures.append(str(error))
            continue
        decode = decode_answer if table == "data/answers.parquet" else decode_task
        seen: set[str] = set()
        for number, row in enumerate(rows):
            task_id = row.get("task_id")
            if task_id not in files or task_id in seen:
                failures.append(
                    f"{table}: row {number} ({str(task_id)[:40]}) is not one of its files, or repeats"
                )
                continue
            seen.add(task_id)
            try:
                data = read_json(path, files[task_id])
                same = decode(row) == data
                prompt = kind is ANSWER or "prompt" not in row or row["prompt"] == task_prompt(data)
            except Exception as error:  # a damaged row or file: say which
                failures.append(f"{table}: row {number} ({task_id}) unreadable ({type(error).__name__})")
                continue
            if not same:
                failures.append(f"{table}: row {number} ({task_id}) differs from {files[task_id]}")
            elif not prompt:
                failures.append(
                    f"{table}: row {number} ({task_id}): its prompt is not the one its task renders"
                )
        if len(seen) != len(files):
            failures.append(f"{table}: {len(files) - len(seen)} of its {len(files)} files have no row")


def _check_metadata(
    path: Path, listed: dict[str, str], tasks: list[str], failures: list[str], damaged: set[str]
) -> pl.DataFrame | None:
    """``metadata.parquet``: the declared columns, one row per task, and every value what the
    task and answer files give (it is the index ``load_release`` filters on). The frame when
    it has the declared columns and one row per task (the claims are checked against it)."""
    from pipeline.storage.metadata import METADATA_SCHEMA

    if "metadata.parquet" not in listed:
        failures.append("manifest.json: metadata.parquet is not listed")
        return None
    if "metadata.parquet" in damaged:
        return None  # its digest failed already: an untrusted file is not decompressed
    try:
        table = read_arrow_table(read_bytes(path, "metadata.parquet"), "metadata.parquet")
        meta = pl.from_arrow(table)
    except ReleaseError as error:
        failures.append(str(error))
        return None
    except Exception as error:  # polars raises several kinds for a damaged file
        failures.append(f"metadata.parquet: unreadable ({type(error).__name__})")
        return None
    assert isinstance(meta, pl.DataFrame)
    if dict(meta.schema) != METADATA_SCHEMA:
        failures.append(
            "metadata.parquet: its columns are not the declared ones (a column added, dropped or retyped)"
        )
        return None
    expected = {name.rsplit("/", 1)[-1][: -len(".json")]: name for name in tasks}
    ids = meta["task_id"].to_list() if "task_id" in meta.columns else None
    if ids is None or not all(isinstance(i, str) for i in ids) or sorted(ids) != sorted(expected):
        failures.append(f"metadata.parquet: its rows ({meta.height}) are not the {len(tasks)} tasks listed")
        return None
    for row in meta.iter_rows(named=True):
        name = expected[row["task_id"]]
        answer = "answers/" + name[len("tasks/") :]
        if row.get("task_sha256") != listed.get(name) or row.get("answer_sha256") != listed.get(answer):
            failures.append(f"metadata.parquet: the digests of {row['task_id']} differ from its files")
            continue
        wrong = _metadata_differs(path, row, name, answer)
        if wrong:
            failures.append(f"metadata.parquet: {row['task_id']}: {wrong} differ from its files")
        if row.get("domain") != name.split("/")[1]:
            failures.append(
                f"metadata.parquet: {row['task_id']} is in domain {row.get('domain')!r} "
                f"but its file is under {name.split('/')[1]}/"
            )
    return meta


def _metadata_differs(path: Path, row: dict[str, Any], name: str, answer: str) -> str:
    """The columns of a metadata row that are not what the task and answer files give ("" when
    all are); the build's seed and index are those of the answer's certificate (an import has
    none: its own are checked against its config)."""
    from types import SimpleNamespace

    from pipeline.generation.records import CertifiedTask
    from pipeline.storage.metadata import metadata_row

    try:
        task_bytes, answer_bytes = read_bytes(path, name), read_bytes(path, answer)
        task = task_from_dict(read_json(path, name))
        made = answer_from_dict(read_json(path, answer))
        certificate = made.certificate  # a build records its key's seed and index there
        key = SimpleNamespace(
            seed=row["seed"] if certificate is None or certificate.seed is None else certificate.seed,
            index=row["index"] if certificate is None or certificate.index is None else certificate.index,
        )
        expected = metadata_row(CertifiedTask(key, task, made), task_bytes, answer_bytes)  # type: ignore[arg-type]
    except Exception:  # a file that does not parse fails elsewhere, with its own message
        return ""
    # the column types are checked with the schema, so values compare as values here
    return ", ".join(sorted(k for k, v in expected.items() if row.get(k) != v))


@functools.cache
def _schemas() -> dict[str, Any]:
    return {kind: json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text()) for kind in ("task", "answer")}


@functools.cache
def _validators() -> dict[str, jsonschema.Draft202012Validator]:
    return {kind: jsonschema.Draft202012Validator(schema) for kind, schema in _schemas().items()}


@functools.cache
def _fast_validators() -> dict[str, Any]:
    import jsonschema_rs

    return {kind: jsonschema_rs.Draft202012Validator(schema) for kind, schema in _schemas().items()}


_JSON_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})


def _plain_json(data: Any) -> bool:
    """Whether ``data`` holds only what JSON text parses to (exact types, string keys): the
    fast validator reads a tuple as an array and a whole ``Decimal`` as an integer, where
    ``jsonschema`` refuses both, so anything else is left to ``jsonschema``."""
    stack = [data]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind not in _JSON_TYPES:
            return False
        if kind is dict:
            if any(type(key) is not str for key in value):
                return False
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
    return True


def schema_errors(kind: str, data: Any) -> list[str]:
    """Where ``data`` breaks the JSON Schema of a ``kind`` file (``task`` or ``answer``), at
    most five, each one line. A document is judged by ``jsonschema-rs`` first (the same draft,
    2020-12, in compiled code: a 10x10 task in 0.2 ms against 50 ms, most of what verify spent
    on a task); one it does not pass, or cannot read, is judged again by ``jsonschema``, whose
    errors are the ones reported, so what the two accept is held equal by
    tests/pipeline/storage/test_schema_validators.py."""
    try:
        if _plain_json(data) and _fast_validators()[kind].is_valid(data):
            return []
    except Exception:  # noqa: S110 - a value it cannot convert: jsonschema judges the document
        pass
    return [
        f"schema error in {kind} file at {list(problem.path)[:6]}: {problem.message[:160]}"
        for problem in itertools.islice(_validators()[kind].iter_errors(data), 5)
    ]


def consistency(task: Task, answer: Answer) -> list[str]:
    """The answer must describe this task: same id, visible cells, candidates and budget."""
    problems = []
    if answer.task_id != task.task_id:
        problems.append(f"answer is for task {ascii(answer.task_id[:40])}")
    if len(answer.truth) != task.rows or any(len(row) != task.cols for row in answer.truth):
        return [*problems, f"the answer's truth grid is not {task.rows} x {task.cols} (short or ragged)"]
    for r, row in enumerate(task.grid):
        for c, cell in enumerate(row):
            if cell is not None and answer.truth[r][c] != cell:
                problems.append(f"truth changes visible cell ({r},{c})")
    slots = {(s.row, s.col): s for s in task.slots}
    for role in answer.roles:
        slot = slots.get((role.row, role.col))
        if slot is None:
            problems.append(f"role for ({role.row},{role.col}) which is not hidden")
        elif set(slot.candidates) != {role.truth, *role.decoys, *role.filtered}:
            problems.append(f"roles of ({role.row},{role.col}) do not match its candidates")
        if answer.truth[role.row][role.col] != role.truth:
            problems.append(f"truth grid and roles disagree at ({role.row},{role.col})")
    decoys = sum(len(role.decoys) for role in answer.roles)
    if decoys != task.decoy_budget:
        problems.append(f"{decoys} decoys but decoy_budget={task.decoy_budget}")
    return problems


ID_LIMIT = 100  # characters of a task or item id (a build's: 8 to 25)
TEXT_LIMIT = 200  # characters of an item name, a category, a rule name


def unsafe_strings(task: Task) -> list[str]:
    """The ids, names and other words of a task that cannot be shown to a person or a model
    safely: control characters (terminal escapes), bidirectional overrides, invisible
    formatting characters, absurd lengths. At most three, each quoted with escapes."""
    found: list[str] = []

    def check(value: Any, limit: int, what: str) -> None:
        why = unsafe_text(value, limit) if isinstance(value, str) else ""
        if why and len(found) < 3:
            found.append(f"{what} {ascii(value[:40])} cannot be shown safely: {why}")

    check(task.task_id, ID_LIMIT, "task id")
    for item_id, item in task.items.items():
        check(item_id, ID_LIMIT, "item id")
        for key, value in item.items():
            check(str(key), TEXT_LIMIT, "an attribute name")
            if key != "id":
                check(value, TEXT_LIMIT, f"item {ascii(item_id[:40])} {ascii(str(key)[:40])}")
    for rule in task.global_constraints:
        for word in (rule.name, rule.attribute, rule.equals):
            check(word, TEXT_LIMIT, "a global rule's")
    for slot in task.slots:
        for slot_rule in slot.constraints:
            words = slot_rule.value if isinstance(slot_rule.value, tuple) else ()
            for word in (slot_rule.attribute, *words):
                check(word, TEXT_LIMIT, f"a slot rule of ({slot.row},{slot.col})")
    return found


def task_shape(task: Task, task_rel: str) -> list[str]:
    """Folder, candidates, text that can be shown, and instruction: what the schema cannot say."""
    problems = unsafe_strings(task)
    domain, file_id = task_rel.split("/")[1], task_rel.rsplit("/", 1)[-1][: -len(".json")]
    if task.domain != domain or task.task_id != file_id:
        problems.append(f"file {task_rel} holds task {task.task_id} of domain {task.domain}")
    for slot in task.slots:
        if len(set(slot.candidates)) != len(slot.candidates):
            problems.append(f"cell ({slot.row},{slot.col}) lists a candidate twice")
        if task.candidates_per_slot and len(slot.candidates) != task.candidates_per_slot:
            problems.append(
                f"cell ({slot.row},{slot.col}) has {len(slot.candidates)} candidates, "
                f"not candidates_per_slot={task.candidates_per_slot}"
            )
    try:
        rendered = rendered_instruction(task)
    except DomainError as error:
        return [*problems, str(error)]
    if task.instruction != rendered:
        problems.append("the instruction is not what the task's rules render to (edited?)")
    used = {item for row in task.grid for item in row if item is not None}
    used |= {item for slot in task.slots for item in slot.candidates}
    unused = sorted(set(task.items) - used)
    if unused:
        problems.append(
            f"{len(unused)} item(s) that no cell shows or offers, e.g. {ascii(unused[0][:40])} (a task "
            "lists only the items of its grid and its candidates: text an agent reads and no rule needs)"
        )
    return problems


CERTIFICATE_CLAIMS = (
    "ok",
    "solver",
    "truth_feasible",
    "uniqueness",
    "decoys_refuted",
    "decoys_checked",
    "filtered_checked",
    "failures",
)


def certificate_claims(recorded: Any, proved: Any) -> list[str]:
    """What the answer's certificate record says that the re-proof does not give (each
    verdict, status and count); its solver's version must be text that can be shown. An
    answer without a certificate record claims nothing (the proofs are run here anyway)."""
    if recorded is None:
        return []
    out = [
        f"certificate.{key} records {str(getattr(recorded, key))[:60]} but the re-proof gives "
        f"{str(getattr(proved, key))[:60]}"
        for key in CERTIFICATE_CLAIMS
        if getattr(recorded, key) != getattr(proved, key)
    ]
    return out + _unsafe_texts([("certificate.solver_version", recorded.solver_version)])


def _unsafe_texts(texts: list[tuple[str, Any]]) -> list[str]:
    """A failure for each (what, value) whose value is not text that can be shown."""
    out = []
    for what, value in texts:
        why = unsafe_text(value, 64) if isinstance(value, str) else "not text"
        if why:
            out.append(f"{what} {ascii(str(value)[:40])} cannot be shown safely: {why}")
    return out


# what a recorded MILP cross-check must say of a task whose certificate the re-proof holds
CROSSCHECK_PROVED = (
    ("truth_feasible", True),
    ("unique", True),
    ("decoys_infeasible", True),
    ("most_decoys_used", 0),
    ("ok", True),
)


def crosscheck_claims(recorded: Any) -> list[str]:
    """What the answer's cross-check record says against a task that CP-SAT has just proved
    (the truth feasible, unique, every decoy wrong): each verdict must be the proved one, no
    second completion recorded, its solver's name and version and every status text that can
    be shown. An answer without a cross-check record claims nothing. Found by an outside
    audit: a record claiming ``unique`` false and a status with a direction override passed."""
    if recorded is None:
        return []
    out = [
        f"crosscheck.{key} records {str(getattr(recorded, key))[:40]} but the task is proved "
        f"({key} {expected}): the record contradicts the proofs"
        for key, expected in CROSSCHECK_PROVED
        if getattr(recorded, key) != expected or type(getattr(recorded, key)) is not type(expected)
    ]
    if recorded.counterexample is not None:
        out.append("crosscheck.counterexample records a second completion, but uniqueness is proved")
    texts = [("crosscheck.solver", recorded.solver), ("crosscheck.solver_version", recorded.solver_version)]
    statuses = recorded.statuses if isinstance(recorded.statuses, dict) else {"": recorded.statuses}
    for key, value in statuses.items():
        texts += [("crosscheck.statuses", key), ("crosscheck.statuses", value)]
    return out + _unsafe_texts(texts)


def prove_one(args: tuple[Any, ...]) -> tuple[str, str, list[str]]:
    """Load one task/answer pair and return (task_id, domain, failure reasons): ``(root,
    task_rel, answer_rel, solver, milp[, digests])``. ``milp`` names the cross-check solver
    (``highs`` or ``cbc``), or None for CP-SAT alone; ``digests`` (the manifest's, of the two
    files) pins what is proved to those bytes (:func:`pipeline.storage.safe.pinned`)."""
    root, task_rel, answer_rel, solver, milp, *rest = args
    try:
        with pinned(Path(root), rest[0] if rest else {}) as pin:
            task_id, domain, reasons = _prove(Path(root), task_rel, answer_rel, solver, milp)
        return task_id, domain, reasons + pin.failures(reasons)
    except ReleaseError as error:
        return task_rel, "?", [str(error)]
    except (
        TaskFormatError,
        KeyError,
        TypeError,
        ValueError,
        OverflowError,
        IndexError,
        AttributeError,
    ) as error:
        return task_rel, "?", [f"malformed: {type(error).__name__}: {str(error)[:200]}"]


def _prove(
    root: Path, task_rel: str, answer_rel: str, solver: SolverSettings, milp: str | None
) -> tuple[str, str, list[str]]:
    return prove_data(read_json(root, task_rel), read_json(root, answer_rel), task_rel, solver, milp)


def prove_data(
    task_data: Any, answer_data: Any, task_rel: str, solver: SolverSettings, milp: str | None
) -> tuple[str, str, list[str]]:
    """Schema, shape and consistency checks and the proofs of one task given as parsed JSON
    (``task_rel``: where it lives, ``tasks/<domain>/<task_id>.json``); the failure reasons.

    A solve that runs out of time (UNKNOWN) proves nothing either way, and on a loaded machine
    a sound task can meet one: a task whose reasons name an UNKNOWN is proved once more, whole,
    with ``RETRY_FACTOR`` times every limit, and the second answer stands (a second time-out
    stays a failure, named as one: never a pass)."""
    found = _prove_data_once(task_data, answer_data, task_rel, solver, milp)
    if not any(UNKNOWN in reason for reason in found[2]):
        return found
    limit = solver.deterministic_limit
    longer = dataclasses.replace(
        solver,
        time_limit_s=solver.time_limit_s * RETRY_FACTOR,
        deterministic_limit=None if limit is None else limit * RETRY_FACTOR,
    )
    return _prove_data_once(task_data, answer_data, task_rel, longer, milp)


def _prove_data_once(
    task_data: Any, answer_data: Any, task_rel: str, solver: SolverSettings, milp: str | None
) -> tuple[str, str, list[str]]:
    reasons = schema_errors("task", task_data) + schema_errors("answer", answer_data)
    if reasons:
        named = task_data.get("task_id") if isinstance(task_data, dict) else None
        return (named if isinstance(named, str) and len(named) < 100 else task_rel), "?", reasons[:5]
    task, answer = task_from_dict(task_data), answer_from_dict(answer_data)
    reasons += task_shape(task, task_rel) + consistency(task, answer)
    if reasons:
        return task.task_id, task.domain, reasons
    # the certificate and the measures' claims read one task and one model: what both derive
    # from the task (its candidates, rows, propagation) is found once
    with task_memo():
        model = CpSatModel(task, solver, answer.truth_choice())
        sealed = seal(task, answer, solver, milp=milp, model=model)
        reasons += list(sealed.certificate.failures)
        if sealed.certificate.ok:
            reasons += certificate_claims(answer.certificate, sealed.certificate)
            reasons += crosscheck_claims(answer.crosscheck)
            reasons += measure_claims(task, answer, solver, model)
    if milp and sealed.crosscheck is None:  # certificate failed: cross-check it on its own
        sealed = Sealed(sealed.certificate, None, crosscheck_answer(task, answer, solver, milp))
    check = sealed.crosscheck
    if check is not None and not check.ok and UNKNOWN in check.statuses.values():
        reasons.append(
            f"{check.solver} could not decide within {solver.time_limit_s:g} s ({check.statuses}): "
            "a time-out, not a proof either way; verify again with a longer limit "
            f"(solver.time_limit_s={solver.time_limit_s * RETRY_FACTOR:g})"
        )
        return task.task_id, task.domain, reasons
    if check is not None and not check.ok:
        second = f", second solution {check.counterexample}" if check.counterexample else ""
        reasons.append(f"{check.solver} disagrees: {check.statuses}{second}")
    return task.task_id, task.domain, reasons


def verify_release(path: Path, settings: VerifySettings) -> VerifyReport:
    """Every check on the release at ``path``, plain or sharded (``make train``; told by its
    manifest). A folder without a manifest raises :class:`ReleaseError` (not a release);
    anything wrong inside one is a failure."""
    report = VerifyReport()
    if is_sharded(path):
        check_sharded(path, settings, report)
        return report
    solver, milp = settings.solver, settings.milp
    try:
        manifest = read_manifest(path)
    except ReleaseError as error:
        if not has_manifest(path):
            raise
        report.file_failures.append(str(error))
        return report
    sound = check_files(path, manifest, report)
    tasks = [
        name
        for name in task_files(manifest["files"])
        if name in sound and "answers/" + name[len("tasks/") :] in sound
    ]
    digests = {relative: manifest["files"][relative] for relative in sound}
    jobs = []
    for rel in tasks:
        answer = "answers/" + rel[len("tasks/") :]
        jobs.append((str(path), rel, answer, solver, milp, {rel: digests[rel], answer: digests[answer]}))
    proofs = parallel_imap(prove_one, jobs, settings.workers, f"verify {path.name}", primed=True)
    try:
        next(proofs)  # every proof is handed to the workers: this process checks the files,
        # the tables and the card (its audit: a few seconds) while they start and prove; every
        # read, here and in the workers, is of the bytes whose digests were checked
        with pinned(path, digests) as pin:
            check_release(path, manifest, report, sound, settings.build_schema)
        report.file_failures += pin.failures(report.file_failures)
        seen: dict[str, str] = {}
        for task_id, domain, reasons in proofs:
            if task_id in seen and not reasons:
                reasons = [f"the task id appears twice ({seen[task_id]} and again)"]
            seen.setdefault(task_id, domain)
            report.tasks[task_id] = domain
            if reasons:
                report.failures[task_id].extend(reasons)
    finally:
        proofs.close()  # an error (or Ctrl-C) stops the workers still proving
    return report


def task_files(listed: Mapping[str, Any]) -> list[str]:
    """The task files of a manifest's ``files`` that are proved: ``tasks/<domain>/<id>.json``
    (a name of another shape is a failure of :func:`check_release`), sorted."""
    return sorted(name for name in listed if name.startswith("tasks/") and name.count("/") == 2)


def verify_shard(args: tuple[Any, ...]) -> dict[str, Any]:
    """Re-prove every task of one shard: its tables' schemas, and each task with CP-SAT (and
    the MILP when ``milp`` names one). Returns the shard's name, rows per domain, the
    [task id, domain] of every row, tasks proved, the failures of named tasks ([task id,
    reason]) and the others (a malformed row is a failure of that row, not of the run).
    ``(root, name, files, solver, milp[, digests[, job]])``: ``digests`` (the manifest's, of
    the shard's files) pins what is read to those bytes (:func:`pipeline.storage.safe.pinned`);
    ``job`` (the :class:`~pipeline.storage.shards.ShardJob` the recorded config makes of this
    shard) ties each row to the item of the shard's recipe it must be (:func:`_recipe_keys`)."""
    root, name, files, solver, milp, *rest = args
    with long_job(), pinned(Path(root), rest[0] if rest else {}) as pin:
        out = _verify_shard(root, name, files, solver, milp, rest[1] if len(rest) > 1 else None)
    out["failures"] += pin.failures(out["failures"])
    return out


def _verify_shard(
    root: str, name: str, files: dict[str, str], solver: SolverSettings, milp: str | None, job: Any = None
) -> dict[str, Any]:
    base = Path(root)
    out: dict[str, Any] = {
        "shard": name,
        "per_domain": {},
        "tasks": [],
        "proved": 0,
        "failures": [],
        "task_failures": [],
        "redraws": 0,
    }
    failures: list[str] = out["failures"]
    task_failures: list[list[str]] = out["task_failures"]
    answers: dict[str, dict[str, Any]] = {}
    limit = GenerationSettings().dfs_node_limit  # what every shard's canonical count is taken to
    relative = f"shards/{name}/answers.parquet"
    try:
        for row in read_arrow_table(read_bytes(base, relative), relative, schema_of(ANSWER)).to_pylist():
            task_id = str(row["task_id"])
            if task_id in answers:  # a reader of the table would get two answers for it
                failures.append(f"{relative}: task {task_id[:40]} has more than one answer row")
            answers[task_id] = decode_answer(row)
    except (ReleaseError, KeyError, TypeError, ValueError) as error:
        failures.append(f"{relative}: {str(error)[:300]}")
        return out
    keys = _recipe_keys(job, list(answers.values()), relative, out) if job is not None else {}
    seen: set[str] = set()
    for file in sorted(f for f in files if f.startswith("tasks-") and f.endswith(".parquet")):
        domain = file[len("tasks-") : -len(".parquet")]
        relative = f"shards/{name}/{file}"
        try:
            rows = read_task_rows(read_bytes(base, relative), relative, domain)
        except (UserError, ValueError) as error:  # an unreadable table, or of no known domain
            message = str(error)
            failures.append((message if relative in message else f"{relative}: {message}")[:300])
            continue
        out["per_domain"][domain] = len(rows)
        if job is not None and rows and "prompt" not in rows[0]:  # every shard's table has one
            failures.append(f"{relative}: no prompt column (a training shard's task table has one)")
        for number, row in enumerate(rows):
            try:
                task = decode_task(row)
                task_id = str(task.get("task_id"))
                out["tasks"].append([task_id, domain])
                if task_id in seen or task_id not in answers:
                    task_failures.append([task_id, f"{relative}: row {number} repeats or has no answer"])
                    continue
                seen.add(task_id)
                key = keys.get(task_id)
                if key is not None:
                    wrong = [name for name in _KEY_FIELDS if task.get(name) != getattr(key, name)]
                    wrong += [] if domain == key.domain else ["table (tasks-<domain>)"]
                    if wrong:
                        task_failures.append(
                            [task_id, f"{relative}: row {number}: its {', '.join(wrong)} are not its key's"]
                        )
                if "prompt" in row and row["prompt"] != task_prompt(task):
                    task_failures.append(
                        [task_id, f"{relative}: row {number}: its prompt is not the one its task renders"]
                    )
                _, _, reasons = prove_data(
                    task, answers[task_id], f"tasks/{domain}/{task_id}.json", solver, milp
                )
                reasons += _shard_count(answers[task_id], limit)
            except (TaskFormatError, UserError, KeyError, TypeError, ValueError, OverflowError) as error:
                failures.append(f"{relative}: row {number} malformed: {str(error)[:200]}")
                continue
            task_failures.extend([task_id, f"{relative}: {reason}"] for reason in reasons)
            out["proved"] += not reasons
    extra = sorted(set(answers) - seen)
    if extra:
        failures.append(
            f"shards/{name}/answers.parquet: {len(extra)} answers of no task ({extra[0][:40]}, ...)"
        )
    return out


# what a task's key fixes and its task file repeats
_KEY_FIELDS = ("domain", "rows", "cols", "hidden_slots", "decoy_budget", "candidates_per_slot")


def _recipe_keys(
    job: Any, answers: list[dict[str, Any]], relative: str, out: dict[str, Any]
) -> dict[str, Any]:
    """The keys of the shard's rows: each answer is item ``i`` of the dataset the shard's
    recipe draws from, ``i`` its certificate's index (with the shard's seed), and its task id
    that of the item's key or of one of its re-draws; every item of the recipe once; the
    cross-check the recipe asks for. Failures go into ``out`` (its ``redraws`` counts the
    re-draws the ids show); returns task id -> key for the rows that are their item."""
    from pipeline.generation.dataset import MAX_REDRAWS

    task_failures = out["task_failures"]
    dataset, keys, items = shard_dataset(job), {}, set()
    for answer in answers:
        task_id = str(answer.get("task_id"))
        certificate = answer.get("certificate")
        seed, index = (
            (certificate.get("seed"), certificate.get("index"))
            if isinstance(certificate, dict)
            else (None, None)
        )
        if (
            seed != job.seed
            or not isinstance(index, int)
            or isinstance(index, bool)
            or not 0 <= index < job.count
        ):
            task_failures.append(
                [
                    task_id,
                    f"{relative}: its certificate's seed and index name no item of the shard "
                    f"(seed {job.seed}, items 0..{job.count - 1})",
                ]
            )
            continue
        if index in items:
            task_failures.append([task_id, f"{relative}: a second answer of item {index}"])
            continue
        items.add(index)
        for redraw in range(MAX_REDRAWS + 1):
            key = dataset.key(index, redraw)
            if key.task_id == task_id:
                keys[task_id] = key
                out["redraws"] += redraw
                break
        else:
            task_failures.append(
                [
                    task_id,
                    f"{relative}: not a task the shard's recipe draws (its id is no key of item {index})",
                ]
            )
        if bool(answer.get("crosscheck")) != job.crosscheck:  # {} when none was run
            task_failures.append(
                [
                    task_id,
                    f"{relative}: {'no' if job.crosscheck else 'a'} cross-check record, where the "
                    f"recipe says crosscheck={str(job.crosscheck).lower()}",
                ]
            )
    if len(items) != job.count:
        out["failures"].append(
            f"{relative}: answers of {len(items)} of the {job.count} items the shard's recipe makes"
        )
    return keys


def _shard_count(answer: dict[str, Any], limit: int) -> list[str]:
    """A shard's canonical count is taken to ``limit``, the node limit every shard is built
    with (the generator's default): capped exactly one above it, or at most it (the count
    itself is derived again by :func:`prove_data`, which cannot tell a count capped at N from
    one that stopped at N - 1 in a tree of exactly N nodes: this says which limit it was)."""
    measures = answer.get("measures")
    if not isinstance(measures, dict):
        return []
    nodes, capped = measures.get("dfs_nodes"), measures.get("dfs_capped")
    if isinstance(nodes, int) and capped is (nodes > limit) and nodes <= limit + 1:
        return []
    return [
        f"measures.dfs_nodes claims {str(nodes)[:20]} (capped: {str(capped)[:8]}), which does not fit the "
        f"shards' dfs_node_limit={limit}"
    ]


def check_sharded(path: Path, settings: VerifySettings, report: VerifyReport) -> None:
    """Every check on a sharded release, into ``report`` (use :func:`verify_release`, which
    calls this for a sharded release): the manifest's files and digests; its shards are the
    ones its recorded config makes, each made by that config's recipe; then each shard's tables
    and proofs (shards in parallel); and the manifest's counts against what the shards hold (no
    task id twice)."""
    manifest = read_shards_manifest(path)
    sound = check_files(path, manifest, report)
    # every later read, here and in the workers, is of the bytes whose digests were checked
    with pinned(path, {relative: manifest["files"][relative] for relative in sound}) as pin:
        _check_shards(path, settings, report, manifest, sound)
    report.file_failures += pin.failures(report.file_failures)


def _check_shards(
    path: Path, settings: VerifySettings, report: VerifyReport, manifest: dict[str, Any], sound: set[str]
) -> None:
    failures = report.file_failures
    plan: dict[str, Any] = {}  # shard name -> the ShardJob the recorded config makes of it
    try:
        if any("${" in text for text in json_strings(manifest.get("config"))):
            raise UserError("an interpolation (${...}) in a recorded config is never resolved")
        config = TrainPlan.from_config(manifest.get("config"))
        plan = {job.name: job for job in shard_jobs(config, path)}
        failures += _sharded_claims(path, manifest, config, sound)
    except UserError as error:
        failures.append(f"manifest.json: its config does not describe a build ({str(error)[:200]})")
    except Exception as error:  # whatever is wrong with it, the config cannot be trusted
        failures.append(f"manifest.json: its config does not describe a build ({type(error).__name__})")
    names: list[str] = []
    entries: dict[str, dict[str, Any]] = {}
    for entry in manifest["shards"]:
        if not isinstance(entry, dict) or not re.fullmatch(r"[0-9]{5}", str(entry.get("shard"))):
            failures.append(f"manifest.json: a shard entry is not {{shard: NNNNN, ...}}: {str(entry)[:80]}")
            continue
        names.append(str(entry["shard"]))
        entries[str(entry["shard"])] = entry
    if len(set(names)) != len(names):
        failures.append("manifest.json: a shard is listed twice")
    if plan and sorted(set(names)) != sorted(plan):
        failures.append(f"manifest.json: lists {len(set(names))} shards; its config makes {len(plan)}")
    jobs: list[Any] = []
    grids: Counter[str] = Counter()
    records: dict[str, dict[str, Any]] = {}
    shipped = {"README.md", "LICENSE"}  # every file a build lists: the card, and each shard's
    for name in sorted(set(names)):
        record_path = f"shards/{name}/shard.json"
        if record_path not in sound:
            failures.append(f"{record_path}: missing, unlisted or changed")
            continue
        record = read_json(path, record_path)
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("files"), dict)
            or not isinstance(record.get("tasks"), int)
        ):
            failures.append(f"{record_path}: not a shard record")
            continue
        if entries[name].get("tasks") != record["tasks"] or entries[name].get("sha256") != sha256(
            read_bytes(path, record_path)
        ):
            failures.append(f"manifest.json: its entry of shard {name} is not the shard's record")
        job = plan.get(name)
        if plan and (job is None or record.get("recipe") != job.recipe()):
            failures.append(f"{record_path}: the shard was not made by the manifest's config")
            job = None
        failures += _record_claims(record_path, record, job)
        listed = {f"shards/{name}/{file}" for file in record["files"]}
        shipped |= listed | {record_path}
        if not listed <= sound:
            missing = sorted(listed - sound)[0]
            failures.append(f"{missing}: a file of shard {name} is missing, unlisted or changed")
            continue
        records[name] = record
        grids[job.grid if job is not None else str(record.get("grid"))] += record["tasks"]
        pins = {relative: manifest["files"][relative] for relative in listed}
        jobs.append((str(path), name, record["files"], settings.solver, settings.milp, pins, job))
    files: dict[str, Any] = manifest["files"]  # a mapping: read_shards_manifest checked its shape
    # a shard listed or planned whose record could not be read is named above already
    unread = tuple(f"shards/{name}/" for name in (set(names) | set(plan)) - set(records))
    foreign = sorted(f for f in set(files) - shipped if not f.startswith(unread))
    if foreign:  # listed with its digest, but no shard's and not the card: read by no check
        failures.append(
            f"manifest.json: lists {foreign[0][:80]}, which is no file of a shard or of the card "
            f"({len(foreign)} such)"
        )
    rows = redraws = 0
    per_domain: Counter[str] = Counter()
    ids: Counter[str] = Counter()
    for result in parallel_imap(verify_shard, jobs, settings.workers, f"verify {path.name}", unit="shard"):
        failures += result["failures"]
        for task_id, reason in result["task_failures"]:
            report.failures[task_id].append(reason)
        for task_id, domain in result["tasks"]:
            report.tasks[task_id] = domain
            ids[task_id] += 1
        per_domain.update(result["per_domain"])
        report.shards[result["shard"]] = sum(result["per_domain"].values())
        rows += report.shards[result["shard"]]
        record = records[result["shard"]]
        for key, value in (("per_domain", result["per_domain"]), ("redraws", result["redraws"])):
            if _json(record.get(key)) != _json(value):
                failures.append(
                    f"shards/{result['shard']}/shard.json: {key} is {str(record.get(key))[:80]}, "
                    f"the shard holds {value}"
                )
        redraws += result["redraws"]
    repeated = [task_id for task_id, n in ids.items() if n > 1]
    if repeated:
        failures.append(f"{len(repeated)} task ids appear in more than one row ({repeated[0][:40]}, ...)")
    counts: dict[str, Any] = manifest["counts"] if isinstance(manifest.get("counts"), dict) else {}
    claimed = {
        "tasks": rows,
        "shards": len(set(names)),
        "per_domain": dict(sorted(per_domain.items())),
        "per_grid": dict(sorted(grids.items())),
        "redraws": redraws,
    }
    for key, value in claimed.items():
        if _json(counts.get(key)) != _json(value):  # 200.0 is not the count 200
            failures.append(
                f"manifest.json: counts.{key} is {str(counts.get(key))[:80]}, the shards hold {value}"
            )


def _json(value: Any) -> str:
    """``value`` as JSON text: the same claim, of the same types (True is not 1, 2.0 is not 2)."""
    return json.dumps(value, sort_keys=True, default=str)


def _record_claims(record_path: str, record: dict[str, Any], job: Any) -> list[str]:
    """What a shard record says of its shard that its recipe fixes: its grid, seed and tasks,
    and its files (one task table for each domain it counts, of the recipe's domains, and the
    answers). What the rows hold (per domain, re-draws) is compared once they are read."""
    failures = []
    per_domain = record.get("per_domain")
    if not isinstance(per_domain, dict) or set(record["files"]) != shard_files(per_domain):
        failures.append(
            f"{record_path}: its files are not one task table per domain it counts and the answers"
        )
    elif job is not None and not set(per_domain) <= set(job.domains):
        failures.append(f"{record_path}: counts tasks of a domain its recipe does not draw")
    if job is not None:
        for key, value in (("grid", job.grid), ("seed", job.seed), ("tasks", job.count)):
            if _json(record.get(key)) != _json(value):
                failures.append(
                    f"{record_path}: {key} is {str(record.get(key))[:40]}, its recipe's is {value}"
                )
    return failures


def _sharded_claims(path: Path, manifest: dict[str, Any], config: TrainPlan, sound: set[str]) -> list[str]:
    """The name and version the manifest and its config give, the card written again from the
    counts, and the licence a build writes."""
    from pipeline.storage.card import GENERATED_LICENCE

    failures = []
    for key in ("name", "version"):
        if manifest.get(key) != getattr(config, key) or unsafe_text(str(manifest.get(key)), 64):
            failures.append(f"manifest.json: {key} {str(manifest.get(key))[:40]!r} is not its config's")
    counts: dict[str, Any] = manifest["counts"] if isinstance(manifest.get("counts"), dict) else {}
    if "LICENSE" in sound and read_bytes(path, "LICENSE") != GENERATED_LICENCE.text.encode():
        failures.append("LICENSE: not the licence a build writes (CC BY 4.0); the text was changed")
    per_domain, per_grid = counts.get("per_domain"), counts.get("per_grid")
    if "README.md" in sound and isinstance(per_domain, dict) and isinstance(per_grid, dict):
        text = card(
            str(config.name), str(config.version), sorted(per_domain), counts.get("tasks", 0), per_grid
        )
        if read_bytes(path, "README.md") != text.encode():
            failures.append("README.md: not the card this release's manifest gives (edited?)")
    for relative in ("README.md", "LICENSE"):
        if relative not in manifest.get("files", {}):
            failures.append(f"manifest.json: {relative} is not listed")
    return failures

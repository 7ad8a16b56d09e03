"""The release's JSON files as Parquet tables with declared, stable nested types.

``data/tasks/<domain>.parquet`` (one row per task; the item struct has the domain's own
attributes) and ``data/answers.parquet`` (one row per answer). Every column has a declared
Arrow type, so a value that is null in one row and a number in another is still one type,
and a grid with a hidden cell at (0, 0) (a leading null) is an ordinary nullable list.

The JSON shapes that a table cannot hold as they are get a fixed encoding, undone by
:func:`decode_task` / :func:`decode_answer` (``decode(row) == the JSON file``, tested):

- a dict with open keys (``crosscheck.statuses``, ``measures.decoy_direction``, a
  counterexample) is a list of ``{"key", "value"}``;
- a slot rule's ``value`` (a number for ``<=`` / ``>=``, a list of strings for ``in`` /
  ``not_in``) is ``{"number", "strings"}``;
- a key that the JSON leaves out when it has no value (``equals``, ``at_least``,
  ``counterexample``, an imported task's ``origin`` and ``source_instruction``) is null;
- an empty record (``"crosscheck": {}`` when no MILP ran) is a null struct.

A task table has one column more than its file: ``prompt``, the conversation an LLM agent
starts from (system and user message, as :mod:`gridbench_core.prompt` renders them
for the episode's default settings: unlimited budgets, no injected failures), ready for a
chat template or TRL. It is derived from the task, so :func:`decode_task` leaves it out and
``verify`` checks it against a fresh rendering.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from domains import NumericAttribute, get_domain
from gridbench_core.errors import UserError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gridbench_core.prompt import PromptTemplates
    from gridbench_core.task import Task

# A tiny type language: enough to declare the files' shapes once and to encode and decode
# by walking the declaration.


@dataclass(frozen=True)
class Scalar:
    """A number, string or boolean."""

    arrow: pa.DataType


@dataclass(frozen=True)
class ListOf:
    """A JSON array of one type."""

    item: Any


@dataclass(frozen=True)
class Field:
    """A key of an object: ``optional`` keys are left out of the JSON when null; a
    ``derived`` column is not in the JSON at all (computed from it, skipped when decoding)."""

    name: str
    type: Any
    optional: bool = False
    derived: bool = False


@dataclass(frozen=True)
class Record:
    """A JSON object with known keys; ``empty_is_null``: ``{}`` is stored as a null struct."""

    fields: tuple[Field, ...]
    empty_is_null: bool = False


@dataclass(frozen=True)
class OpenMap:
    """A JSON object with open keys, stored as a list of ``{"key", "value"}``."""

    value: Any


@dataclass(frozen=True)
class NumberOrStrings:
    """An integer or a list of strings (a slot rule's value)."""


INT, STR, BOOL, FLOAT = Scalar(pa.int64()), Scalar(pa.string()), Scalar(pa.bool_()), Scalar(pa.float64())


def arrow_type(kind: Any) -> pa.DataType:
    """The Arrow type of a declared type."""
    if isinstance(kind, Scalar):
        return kind.arrow
    if isinstance(kind, ListOf):
        return pa.list_(arrow_type(kind.item))
    if isinstance(kind, Record):
        return pa.struct([pa.field(f.name, arrow_type(f.type)) for f in kind.fields])
    if isinstance(kind, OpenMap):
        return pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", arrow_type(kind.value))]))
    if isinstance(kind, NumberOrStrings):
        return pa.struct([pa.field("number", pa.int64()), pa.field("strings", pa.list_(pa.string()))])
    raise TypeError(kind)


def encode(value: Any, kind: Any, where: str) -> Any:
    """``value`` (JSON) as the Python value of its Arrow column; a key the declaration does
    not know is an error naming it and where it is (nothing is dropped silently)."""
    try:
        return encoder(kind)(value)
    except _Unknown:
        _name_unknown(value, kind, where)
        raise


def _name_unknown(value: Any, kind: Any, where: str) -> None:
    """Raise the error that names the first key of ``value`` that ``kind`` does not declare
    (in the order of the declaration, a record's own keys before its fields')."""
    if value is None or isinstance(kind, (Scalar, NumberOrStrings)):
        return
    if isinstance(kind, ListOf):
        for item in value:
            _name_unknown(item, kind.item, f"{where}[]")
    elif isinstance(kind, OpenMap):
        for key, item in value.items():
            _name_unknown(item, kind.value, f"{where}.{key}")
    elif not (kind.empty_is_null and value == {}):
        known = {f.name for f in kind.fields}
        unknown = sorted(set(value) - known)
        if unknown:
            raise UserError(
                f"{where}: key {unknown[0]!r} has no column in the release tables "
                f"(known: {sorted(known)}); add it to pipeline/storage/tables.py"
            )
        for f in kind.fields:
            _name_unknown(value.get(f.name), f.type, f"{where}.{f.name}")


class _Unknown(Exception):
    """A key :func:`encoder`'s function does not know (:func:`encode` names it)."""


@functools.cache
def encoder(kind: Any) -> Callable[[Any], Any]:
    """:func:`encode` for ``kind`` as one function of the value, made once a kind: no dispatch
    on the kind and no error path built at every value (a row of a 10x10 task table holds
    some thousands). A key the declaration does not know raises :class:`_Unknown`."""
    if isinstance(kind, Scalar):
        if kind is FLOAT:
            return lambda value: None if value is None else float(value)
        return _same
    if isinstance(kind, ListOf):
        item = kind.item
        if isinstance(item, Scalar) and item is not FLOAT:
            return lambda value: None if value is None else list(value)
        inner = encoder(item)
        if isinstance(item, Record) and _flat(item):
            known = frozenset(f.name for f in item.fields)
            superset = known.issuperset

            def flat_records(value: Any) -> Any:
                if value is None:
                    return None
                if all(map(superset, value)):
                    return value
                return [inner(v) for v in value]

            return flat_records
        return lambda value: None if value is None else [inner(v) for v in value]
    if isinstance(kind, OpenMap):
        inner = encoder(kind.value)
        return lambda value: (
            None if value is None else [{"key": str(k), "value": inner(v)} for k, v in value.items()]
        )
    if isinstance(kind, NumberOrStrings):
        return lambda value: (
            None
            if value is None
            else {"strings": list(value), "number": None}
            if isinstance(value, list)
            else {"number": value}
        )
    fields = tuple((f.name, encoder(f.type)) for f in kind.fields)
    known = frozenset(name for name, _ in fields)
    empty_is_null = kind.empty_is_null

    def record(value: Any) -> Any:
        if value is None or (empty_is_null and value == {}):
            return None
        if not known.issuperset(value):
            raise _Unknown
        get = value.get
        return {name: function(get(name)) for name, function in fields}

    return record


def _same(value: Any) -> Any:
    return value


def _flat(kind: Record) -> bool:
    """A record of plain scalars (no float conversion, no optional keys, not nullable)."""
    return not kind.empty_is_null and all(
        isinstance(f.type, Scalar) and f.type is not FLOAT and not f.optional for f in kind.fields
    )


def decode(value: Any, kind: Any) -> Any:
    """The JSON value a column value encodes (the inverse of :func:`encode`)."""
    if isinstance(kind, Record):
        if value is None:
            return {} if kind.empty_is_null else None
        out = {}
        for f in kind.fields:
            item = value.get(f.name)
            if f.derived or (item is None and f.optional):
                continue
            out[f.name] = decode(item, f.type)
        return out
    if value is None:
        return None
    if isinstance(kind, ListOf):
        return [decode(v, kind.item) for v in value]
    if isinstance(kind, OpenMap):
        return {entry["key"]: decode(entry["value"], kind.value) for entry in value}
    if isinstance(kind, NumberOrStrings):
        return list(value["strings"]) if value.get("strings") is not None else value["number"]
    return value


# The declarations -----------------------------------------------------------------------

PROMPT = ListOf(Record((Field("role", STR), Field("content", STR))))
SLOT_RULE = Record((Field("attribute", STR), Field("op", STR), Field("value", NumberOrStrings())))
GLOBAL_RULE = Record(
    (
        Field("name", STR),
        Field("kind", STR),
        Field("attribute", STR),
        Field("scope", STR),
        Field("bound", INT),
        Field("equals", STR, optional=True),
        Field("at_least", INT, optional=True),
        Field("cells", ListOf(ListOf(INT)), optional=True),  # scope cells (task format 2)
    )
)
SLOT = Record(
    (
        Field("row", INT),
        Field("col", INT),
        Field("candidates", ListOf(STR)),
        Field("constraints", ListOf(SLOT_RULE)),
    )
)


def item_type(domain: str) -> Record:
    """An item of ``domain``: id, name and the domain's attributes, each with its type."""
    attributes = get_domain(domain).attributes
    return Record(
        (
            Field("id", STR),
            Field("name", STR),
            *(Field(a.name, INT if isinstance(a, NumericAttribute) else STR) for a in attributes),
        )
    )


def task_type(domain: str) -> Record:
    """A task file of ``domain``."""
    return Record(
        (
            Field("schema_version", STR),
            Field("task_id", STR),
            Field("domain", STR),
            Field("rows", INT),
            Field("cols", INT),
            Field("hidden_slots", INT),
            Field("decoy_budget", INT),
            Field("candidates_per_slot", INT),
            Field("grid", ListOf(ListOf(STR))),
            Field("items", ListOf(item_type(domain))),
            Field("slots", ListOf(SLOT)),
            Field("global_constraints", ListOf(GLOBAL_RULE)),
            Field("instruction", STR),
            Field("origin", STR, optional=True),
            Field("source_instruction", STR, optional=True),
            Field("prompt", PROMPT, derived=True),
        )
    )


def task_prompt(
    task: dict[str, Any], templates: PromptTemplates | None = None
) -> list[dict[str, str]] | None:
    """The ``prompt`` column of a task: the system and user message of an episode with the
    default settings (unlimited budgets, no injected failures); None for a task that is not
    one (the table still holds it; verify refuses it for its own reasons). ``templates``:
    the packaged ones, when the caller has read them already."""
    from gridbench_core.task import TaskFormatError
    from gridbench_core.task_io import task_from_dict

    try:
        parsed = task_from_dict(task)
    except (TaskFormatError, KeyError, TypeError, ValueError):
        return None
    return prompt_of(parsed, templates)[1]


def prompt_of(task: Task, templates: PromptTemplates | None = None) -> tuple[str, list[dict[str, str]]]:
    """``(task id, prompt column)`` of a task object a writer holds (what :func:`task_prompt`
    gives for its file), for :func:`table_bytes`' ``prompts``: the writer keeps this, not the
    object, until the table is written."""
    from gridbench_core.budgets import EnvSettings
    from gridbench_core.prompt import packaged_templates, render_task

    return task.task_id, render_task(templates or packaged_templates(), task, EnvSettings())


CERTIFICATE = Record(
    (
        Field("ok", BOOL),
        Field("solver", STR),
        Field("solver_version", STR),
        Field("solver_seed", INT),
        Field("workers", INT),
        Field("truth_feasible", STR),
        Field("uniqueness", STR),
        Field("decoys_refuted", STR),
        Field("decoys_checked", INT),
        Field("filtered_checked", INT),
        Field("failures", ListOf(STR)),
        Field("seed", INT),
        Field("index", INT),
        Field("attempt", INT),
        Field("repair_rounds", INT),
        Field("tightenings", INT),
        Field("cell_redraws", INT),
    ),
    empty_is_null=True,
)
CROSSCHECK = Record(
    (
        Field("solver", STR),
        Field("solver_version", STR),
        Field("truth_feasible", BOOL),
        Field("unique", BOOL),
        Field("decoys_infeasible", BOOL),
        Field("most_decoys_used", INT),
        Field("statuses", OpenMap(STR)),
        Field("ok", BOOL),
        Field("counterexample", OpenMap(STR), optional=True),
    ),
    empty_is_null=True,
)
MEASURES = Record(
    (
        Field("search_space", INT),
        Field("log10_search_space", FLOAT),
        Field("shallow_decoys", INT),
        Field("dfs_nodes", INT),
        Field("dfs_capped", BOOL),
        Field(
            "distance_to_ambiguity", Record((Field("units", INT), Field("share", FLOAT), Field("rule", STR)))
        ),
        Field(
            "propagation",
            Record(
                (
                    Field("decoys", INT),
                    Field("one_round", INT),
                    Field("fixpoint", INT),
                    Field("resistant", INT),
                    Field("rounds", INT),
                    Field("decided", BOOL),
                )
            ),
        ),
        Field("decoy_direction", OpenMap(ListOf(INT))),
        Field(
            "depth",
            Record((Field("rung", INT), Field("name", STR), Field("open_after", ListOf(INT)))),
            optional=True,
        ),
        Field(
            "effort",
            Record((Field("search_nodes", INT), Field("search_capped", BOOL), Field("joint_bits", FLOAT))),
            optional=True,
        ),
    ),
    empty_is_null=True,
)
ROLE = Record(
    (
        Field("row", INT),
        Field("col", INT),
        Field("truth", STR),
        Field("decoys", ListOf(STR)),
        Field("filtered", ListOf(STR)),
    )
)
ANSWER = Record(
    (
        Field("schema_version", STR),
        Field("task_id", STR),
        Field("truth", ListOf(ListOf(STR))),
        Field("roles", ListOf(ROLE)),
        Field("certificate", CERTIFICATE),
        Field("crosscheck", CROSSCHECK),
        Field("measures", MEASURES),
    )
)


def schema_of(kind: Record, derived: bool = True) -> pa.Schema:
    """The Arrow schema of a table whose rows are ``kind`` (without its derived columns: the
    schema of a table made before they existed)."""
    return pa.schema([pa.field(f.name, arrow_type(f.type)) for f in kind.fields if derived or not f.derived])


def read_task_rows(data: bytes, relative: str, domain: str) -> list[dict[str, Any]]:
    """The rows of a task table, checked against its declared schema; a table made before
    the ``prompt`` column existed is read too (its rows have no prompt)."""
    from pipeline.storage.parquet import read_table_rows
    from pipeline.storage.safe import ReleaseError

    kind = task_type(domain)
    try:
        return read_table_rows(data, relative, schema_of(kind))
    except ReleaseError as error:
        try:
            return read_table_rows(data, relative, schema_of(kind, derived=False))
        except ReleaseError:
            raise error from None


INT64_MAX = 2**63 - 1


def _fit_answer(row: dict[str, Any]) -> dict[str, Any]:
    """An answer row whose ``measures.search_space`` exceeds int64 (a 20x20 task with 600
    decoys: 25**25) with that value null: :func:`decode_answer` recomputes it from the roles,
    and ``log10_search_space`` keeps its size."""
    measures = row.get("measures")
    if not isinstance(measures, dict) or not isinstance(measures.get("search_space"), int):
        return row
    if measures["search_space"] <= INT64_MAX:
        return row
    return {**row, "measures": {**measures, "search_space": None}}


def table_bytes(
    rows: list[dict[str, Any]],
    kind: Record,
    where: str,
    prompts: Sequence[tuple[str, list[dict[str, str]] | None]] | None = None,
) -> bytes:
    """The Parquet file of ``rows`` (JSON dicts of one kind): same rows, same bytes.
    ``prompts``: a task table's prompt column, one ``(task id, prompt)`` a row, when the writer
    rendered it from the task objects it holds (:func:`prompt_of`; else each row is read again)."""
    return parquet_bytes([arrow_table(rows, kind, where, prompts)])


def arrow_table(
    rows: list[dict[str, Any]],
    kind: Record,
    where: str,
    prompts: Sequence[tuple[str, list[dict[str, str]] | None]] | None = None,
) -> pa.Table:
    """The Arrow table of ``rows`` that :func:`table_bytes` writes (a writer of many rows
    converts them a batch at a time and drops the dicts: :func:`parquet_bytes` of the batches
    is the file of all the rows, byte for byte)."""
    if kind is ANSWER:
        rows = [_fit_answer(row) for row in rows]
    encoded = [encode(row, kind, f"{where} {row.get('task_id', '?')}") for row in rows]
    if any(f.derived and f.name == "prompt" for f in kind.fields):
        from gridbench_core.prompt import packaged_templates

        if prompts is None:
            templates = packaged_templates()  # read once for the table
            prompts = [(str(row.get("task_id")), task_prompt(row, templates)) for row in rows]
        elif [task_id for task_id, _ in prompts] != [row.get("task_id") for row in rows]:
            raise ValueError(f"{where}: the prompts are not the rows' prompts")
        for out, (_, prompt) in zip(encoded, prompts, strict=True):
            out["prompt"] = prompt
    return pa.Table.from_pylist(encoded, schema=schema_of(kind))


def parquet_bytes(tables: Sequence[pa.Table]) -> bytes:
    """The Parquet file of the rows of ``tables`` (made by :func:`arrow_table`, one kind), in
    order, as one table of one chunk: the file does not depend on how the rows were batched."""
    table = tables[0] if len(tables) == 1 else pa.concat_tables(tables).combine_chunks()
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", write_statistics=False)
    return sink.getvalue()


def read_table(data: bytes) -> list[dict[str, Any]]:
    """The rows of a Parquet file's bytes, as Python values."""
    return pq.read_table(io.BytesIO(data)).to_pylist()


def decode_task(row: dict[str, Any]) -> dict[str, Any]:
    """The task file a row of ``data/tasks/<domain>.parquet`` (or of the Hugging Face
    dataset of that configuration) came from."""
    return decode(row, task_type(str(row["domain"])))


def decode_answer(row: dict[str, Any]) -> dict[str, Any]:
    """The answer file a row of ``data/answers.parquet`` came from (a search space beyond
    int64, stored as null, is recomputed from the roles)."""
    answer = decode(row, ANSWER)
    measures = answer.get("measures")
    if isinstance(measures, dict) and "search_space" in measures and measures["search_space"] is None:
        measures["search_space"] = math.prod(1 + len(role["decoys"]) for role in answer["roles"])
    return answer


def item_attributes_match(task: dict[str, Any]) -> None:
    """Every item attribute of the task's domain is present (a missing one would come back
    as null); raises naming the item and the attribute."""
    names = [a.name for a in get_domain(str(task["domain"])).attributes]
    for item in task.get("items", ()):
        missing = [n for n in names if n not in item]
        if missing:
            raise UserError(f"task {task.get('task_id')}: item {item.get('id')} has no {missing[0]!r}")

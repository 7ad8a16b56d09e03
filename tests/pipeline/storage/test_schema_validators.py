"""verify judges a task or answer file by ``jsonschema-rs`` first and by ``jsonschema`` when
that one refuses it (pipeline/storage/verification.py: ``schema_errors``): the pair must say
exactly what ``jsonschema`` alone says, on every document. The documents here are the files of
a real release, damaged at random places (a value replaced by one of another type or out of
range, a key deleted or added, an item appended), so the paths the schema constrains are the
ones hit."""

from __future__ import annotations

import copy
import decimal
import functools
import itertools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gridbench_core.paths import SCHEMA_DIR
from pipeline.storage.verification import schema_errors


@functools.cache
def _reference_validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text()))


def reference(kind: str, data: Any) -> list[str]:
    """What ``jsonschema`` alone reports (the messages verify has always given)."""
    validator = _reference_validator(kind)
    return [
        f"schema error in {kind} file at {list(problem.path)[:6]}: {problem.message[:160]}"
        for problem in itertools.islice(validator.iter_errors(data), 5)
    ]


@pytest.fixture(scope="module")
def documents(tiny_release: Path) -> list[tuple[str, Any]]:
    out = []
    for kind, folder in (("task", "tasks"), ("answer", "answers")):
        for path in sorted((tiny_release / folder).rglob("*.json")):
            out.append((kind, json.loads(path.read_text())))
    return out


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**63, 2**64 + 1, 1.0, 0.5, -0.0, float("nan"), float("inf")]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["", "x", "sum_max", "grid", "cells", "ortools-cp-sat", "\udc80", "\x1b[2J"]),
    st.lists(st.integers(min_value=-3, max_value=3), max_size=3),
    st.dictionaries(st.sampled_from(["id", "name", "row", "col", "x"]), st.integers(), max_size=2),
)


def _places(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into ``value`` (the root included)."""
    out = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _places(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _places(child, (*path, index))
    return out


def _damage(document: Any, data: st.DataObject) -> Any:
    document = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        places = [p for p in _places(document) if p]
        if not places:
            break
        path = data.draw(st.sampled_from(places))
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        action = data.draw(st.sampled_from(["replace", "replace", "delete", "add", "append"]))
        if action == "replace":
            parent[last] = data.draw(VALUES)
        elif action == "delete" and isinstance(parent, dict):
            del parent[last]
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(["extra", "id", "value", "cells", "equals"]))] = data.draw(
                VALUES
            )
        elif action == "append" and isinstance(parent[last], list):
            parent[last].append(data.draw(VALUES))
    return document


def test_the_release_s_files_pass_both(documents):
    assert documents
    for kind, document in documents:
        assert schema_errors(kind, document) == [] == reference(kind, document)


@given(data=st.data())
def test_a_damaged_file_is_judged_as_jsonschema_judges_it(documents, data):
    kind, document = data.draw(st.sampled_from(documents))
    damaged = _damage(document, data)
    assert schema_errors(kind, damaged) == reference(kind, damaged)


def test_values_json_text_cannot_hold_are_judged_as_jsonschema_judges_them(documents):
    """A tuple where an array goes and a whole Decimal where an integer goes pass jsonschema-rs
    and fail jsonschema (found by an outside audit): in-memory documents get jsonschema's word."""
    task = next(document for kind, document in documents if kind == "task")
    for damaged in (
        {**task, "grid": tuple(task["grid"])},
        {**task, "rows": decimal.Decimal(task["rows"])},
    ):
        found = schema_errors("task", damaged)
        assert found and found == reference("task", damaged)


@pytest.mark.parametrize("kind", ["task", "answer"])
@pytest.mark.parametrize("document", [None, [], "task", 7, {}, {"task_id": 2**80}])
def test_documents_of_the_wrong_shape_are_judged_as_jsonschema_judges_them(kind, document):
    found = schema_errors(kind, document)
    assert found and found == reference(kind, document)

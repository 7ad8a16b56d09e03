"""The release's JSON layout (``pipeline.storage.layout.dumps``) writes exactly what the
standard encoder writes for each value it encodes compactly, with its C encoder made once."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.storage import layout

_REFERENCE = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))


def _reference_layout(value: Any, depth: int) -> str:
    """The layout with ``JSONEncoder.encode`` at every compact value (the definition)."""
    if depth >= 2 or not isinstance(value, dict | list) or not value:
        return _REFERENCE.encode(value)
    pad = "\n" + " " * (depth + 1)
    if isinstance(value, dict):
        parts = [f"{_REFERENCE.encode(str(k))}: {_reference_layout(v, depth + 1)}" for k, v in value.items()]
        return "{" + pad + ("," + pad).join(parts) + "\n" + " " * depth + "}"
    parts = [_reference_layout(v, depth + 1) for v in value]
    return "[" + pad + ("," + pad).join(parts) + "\n" + " " * depth + "]"


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
)
_KEYS = st.text(alphabet=st.characters(codec="utf-8"), max_size=6) | st.integers(-5, 5) | st.booleans()
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300)
@given(record=st.dictionaries(st.text(max_size=6), _VALUES, max_size=5) | _VALUES)
def test_dumps_is_the_reference_layout_byte_for_byte(record):
    expected = (_reference_layout(record, 0) + "\n").encode("utf-8")
    assert layout.dumps(record) == expected


def test_an_unencodable_value_is_the_standard_type_error():
    for value in ({"a": {"b": {object()}}}, [[1, {2j}]]):
        try:
            layout.dumps(value)
        except TypeError as error:
            assert "is not JSON serializable" in str(error)
        else:
            raise AssertionError("an unencodable value was written")

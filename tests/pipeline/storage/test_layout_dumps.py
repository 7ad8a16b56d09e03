"""The release's JSON layout (``pipeline.storage.layout.dumps``) writes exactly what the
standard encoder writes for each value it encodes compactly, with its C encoder made once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.storage import layout

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
    fast = layout.dumps(record)
    # the reference: the same layout with ``JSONEncoder.encode`` at every compact value (the
    # module's path where json has no C encoder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout, "_C_COMPACT", None)
        expected = layout.dumps(record)
    assert fast == expected


def test_an_unencodable_value_is_the_standard_type_error():
    for value in ({"a": {"b": {object()}}}, [[1, {2j}]]):
        try:
            layout.dumps(value)
        except TypeError as error:
            assert "is not JSON serializable" in str(error)
        else:
            raise AssertionError("an unencodable value was written")

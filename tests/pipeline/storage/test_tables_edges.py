"""The answers table at the edge of int64: a search space of exactly 2**63 - 1 is stored as
the number (readers of the table see it), one more is stored as null and recomputed from the
roles when decoded."""

from __future__ import annotations

from pipeline.storage.tables import ANSWER, INT64_MAX, decode_answer, read_table, table_bytes
from tests.tiny import ANSWER as TINY


def _answer(space: int) -> dict:
    # the table does not check the claim against the roles: the tiny answer carries it
    answer = TINY.to_dict()
    answer["measures"] = {"search_space": space, "log10_search_space": 18.964889}
    return answer


def test_a_search_space_of_exactly_int64_max_is_stored_as_the_number():
    (row,) = read_table(table_bytes([_answer(INT64_MAX)], ANSWER, "a"))
    assert row["measures"]["search_space"] == INT64_MAX
    assert decode_answer(row)["measures"]["search_space"] == INT64_MAX
    (row,) = read_table(table_bytes([_answer(INT64_MAX + 1)], ANSWER, "a"))
    assert row["measures"]["search_space"] is None
    assert decode_answer(row)["measures"]["search_space"] == 9  # (1 + 2) x (1 + 2), from the roles

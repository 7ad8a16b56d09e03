"""The prompt reads as English: one hidden cell is "1 hidden cell"."""

from __future__ import annotations

import pytest

import gridbench
from gridbench.agents.llm import load_templates, render
from gridbench.env import EnvSettings, Episode
from gridbench_core.task_io import task_from_dict


@pytest.mark.parametrize(("hidden", "text"), [(1, "1 hidden cell)"), (2, "2 hidden cells)")])
def test_the_count_of_hidden_cells_agrees_with_its_noun(hidden, text):
    item = gridbench.create_dataset(
        domains="course", size=1, seed=0, hidden_slots=[hidden], decoy_budgets=[0]
    )[0]
    episode = Episode(task_from_dict(item.task), EnvSettings())
    user = render(load_templates(), episode)[1]["content"]
    assert text in user.splitlines()[0]
    state = episode.call("get_current_grid_state", {})
    assert state["message"] == f"{hidden} hidden cell{'s' if hidden != 1 else ''} still empty"


def test_the_query_budgets_of_the_cells_read_low_to_high():
    """The paper's budget with 4 extra queries on the tiny task: its cells have 1 and 2 slot
    rules and H = 2, so 7 and 8 queries; the prompt says "7 to 8" (8 before 7 is how a set
    of the two happens to iterate)."""
    from gridbench_core.prompt import packaged_templates, render_task
    from tests.tiny import TASK

    messages = render_task(packaged_templates(), TASK, EnvSettings(query_budget="paper", query_extra=4))
    text = "\n".join(message["content"] for message in messages)
    assert "each hidden cell allows 7 to 8 attribute queries" in text
    assert "8 to 7" not in text


def test_an_id_of_exactly_the_limit_is_shown_whole_and_a_longer_one_cut():
    from gridbench_core.prompt import ID_CHARS, quoted

    assert quoted("x" * ID_CHARS) == '"' + "x" * ID_CHARS + '"'
    assert quoted("x" * (ID_CHARS + 1)) == '"' + "x" * ID_CHARS + '..."'


def test_an_instruction_with_a_control_character_keeps_its_line_breaks():
    """The bell and a direction override are escaped; the instruction's lines stay lines."""
    from gridbench_core.prompt import plain_text

    assert plain_text("line one\nline\x07 two\u202e") == "line one\nline\\x07 two\\u202e"
    assert plain_text("line one\nline two") == "line one\nline two"

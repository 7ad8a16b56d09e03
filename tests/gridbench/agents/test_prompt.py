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

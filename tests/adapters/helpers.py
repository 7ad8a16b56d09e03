"""Shared by the adapter tests: a small release, scripted moves, and an Inspect policy."""

from __future__ import annotations

import json
from typing import Any

from gridbench_core.task_io import answer_from_dict, task_from_dict


def truth_of(record: Any) -> dict[tuple[int, int], str]:
    return answer_from_dict(record.answer).truth_choice()


def scripted_moves(record: Any) -> list[tuple[str, dict[str, Any]]]:
    """Fixed moves (not adaptive): a look at the grid, an invalid call that fits the schema
    (a fixed cell), a query, a wrong candidate then the truth twice in every hidden cell (so
    that injected failures leave some cells wrong and some right), a global check, done."""
    task = task_from_dict(record.task)
    truth = truth_of(record)
    fixed = next((r, c) for r in range(task.rows) for c in range(task.cols) if task.grid[r][c] is not None)
    first = task.slots[0]
    numeric = sorted(k for k, v in task.items[first.candidates[0]].items() if isinstance(v, int | float))
    moves: list[tuple[str, dict[str, Any]]] = [
        ("get_current_grid_state", {}),
        ("set_slot", {"row": fixed[0], "col": fixed[1], "id": None}),
        (
            f"query_{task.domain}_candidate_from_attribute",
            {"row": first.row, "col": first.col, "field": numeric[0], "operator": ">=", "value": 0},
        ),
    ]
    for slot in task.slots:
        wrong = next((c for c in slot.candidates if c != truth[(slot.row, slot.col)]), None)
        if wrong is not None:
            moves.append(("set_slot", {"row": slot.row, "col": slot.col, "id": wrong}))
        for _ in range(2):
            moves.append(("set_slot", {"row": slot.row, "col": slot.col, "id": truth[(slot.row, slot.col)]}))
    moves += [(f"check_{task.domain}_global_constraints", {}), ("done", {})]
    return moves


def solving_moves(record: Any) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("set_slot", {"row": r, "col": c, "id": item}) for (r, c), item in sorted(truth_of(record).items())
    ] + [("done", {})]


def inspect_policy(moves_by_task: dict[str, list[tuple[str, dict[str, Any]]]]):
    """A mockllm ``custom_outputs`` callable: reads the task id from the first user message and
    plays that task's moves in order, one tool call per turn, then answers with text."""
    from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage

    def policy(messages, tools, tool_choice, config):
        task_id = messages[1].text.split()[1]
        done = sum(isinstance(m, ChatMessageTool) for m in messages)
        moves = moves_by_task[task_id]
        if done < len(moves):
            name, arguments = moves[done]
            output = ModelOutput.for_tool_call("mockllm/model", name, arguments)
        else:
            output = ModelOutput.from_content("mockllm/model", "finished")
        # set usage so that mockllm does not count tokens with tiktoken (a download)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    return policy


def loads(text: str) -> Any:
    return json.loads(text)

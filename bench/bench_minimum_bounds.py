"""Do a count minimum's shown bound and radius say which completions are likelier? (A tell an
outside audit found on 2026-12-07: a radius cut at the truth's count T drew the bound uniformly
on 0..T, so P(bound | T') = 1 / (T' + 1) favoured completions of smaller counts.)

For every grid-wide ``count_min`` / ``count_min_threshold`` rule of the given releases or
training sets, and every hidden cell whose slot-valid options fall on both sides of it, three
readers score each option from the task file alone (the other cells taken uniformly over their
slot-valid options):

- ``pass``: the chance that the completion meets the rule (what the rule says);
- ``far side``: that it meets the rule with a slack of at most the radius R, which anyone can
  compute (``one_sided_spread`` standard deviations of the rule's count over the options): the
  reader docs/difficulty.md describes, and the best one when the offset is uniform on 0..R;
- ``cut at T``: the likelihood of the shown bound if R had been cut at each completion's count,
  1 / (min(R, T') + 1) (the old draw's likelihood).

It prints each reader's top-1 accuracy over chance, and ``cut at T`` minus ``far side``, with 95%
intervals. On 7,920 cells (5x5, 5x7 and 5x10 releases and two training sets, seeds 7331,
90210 and 424242): the old draw +0.006 [+0.003, +0.010], the best reader ``cut at T`` at +0.028
over chance; the new draw -0.003 [-0.007, +0.000], the best reader ``far side`` at +0.023.

    .venv/bin/python bench/bench_minimum_bounds.py outputs/releases/gridbench-v2.0.0 [more ...]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solvers.checker import slot_violations  # noqa: E402

SPREAD = 12.0  # conf/generation/default.yaml: one_sided_spread


def pairs(root: Path):  # type: ignore[no-untyped-def]
    """(task, answer) dicts of a release (JSON files) or a training set (Parquet shards)."""
    from pipeline.storage.tables import decode_answer, decode_task, read_table

    if (root / "shards").is_dir():
        answers, tasks = {}, []
        for shard in sorted((root / "shards").iterdir()):
            for row in read_table((shard / "answers.parquet").read_bytes()):
                answer = decode_answer(row)
                answers[answer["task_id"]] = answer
            for table in sorted(shard.glob("tasks-*.parquet")):
                tasks += [decode_task(row) for row in read_table(table.read_bytes())]
        return [(task, answers[task["task_id"]]) for task in tasks]
    found = []
    for path in sorted((root / "tasks").glob("*/*.json")):
        answer = root / "answers" / path.parent.name / path.name
        found.append((json.loads(path.read_text()), json.loads(answer.read_text())))
    return found


def counts(rule: dict, record: dict) -> int:
    if rule["kind"] == "count_min":
        return int(record[rule["attribute"]] == rule["equals"])
    return int(record[rule["attribute"]] >= rule["at_least"])


def scores(tasks) -> dict[str, list[float]]:  # type: ignore[no-untyped-def]
    from gridbench_core.task_io import task_from_dict

    out: dict[str, list[float]] = {"chance": [], "pass": [], "far side": [], "cut at T": []}
    for raw, answer in tasks:
        task = task_from_dict(raw)
        truth = {(role["row"], role["col"]): role["truth"] for role in answer["roles"]}
        options = [
            [c for c in slot.candidates if not slot_violations(slot.constraints, task.items[c])]
            for slot in task.slots
        ]
        for rule in raw["global_constraints"]:
            if rule["kind"] not in ("count_min", "count_min_threshold") or rule["scope"] != "grid":
                continue
            bound = rule["bound"]
            visible = sum(counts(rule, task.items[i]) for row in task.grid for i in row if i is not None)
            shares = [float(np.mean([counts(rule, task.items[c]) for c in cell])) for cell in options]
            variance = sum(p * (1 - p) for cell, p in zip(options, shares, strict=True) if len(cell) > 1)
            radius = math.ceil(SPREAD * math.sqrt(variance) - 1e-9)
            for index, (slot, cell) in enumerate(zip(task.slots, options, strict=True)):
                if len(cell) < 2 or len({counts(rule, task.items[c]) for c in cell}) < 2:
                    continue
                others = np.array([1.0])
                for j, p in enumerate(shares):
                    if j != index:
                        others = np.convolve(others, np.array([1 - p, p]))
                read: dict[str, dict[str, float]] = {"pass": {}, "far side": {}, "cut at T": {}}
                for option in cell:
                    totals = visible + counts(rule, task.items[option]) + np.arange(len(others))
                    cut = np.minimum(radius, totals)
                    read["pass"][option] = float((others * (totals >= bound)).sum())
                    near = (totals >= bound) & (totals - bound <= radius)
                    read["far side"][option] = float((others * near).sum())
                    inside = (totals >= bound) & (totals - bound <= cut)
                    read["cut at T"][option] = float((others * inside / (cut + 1)).sum())
                right = truth[(slot.row, slot.col)]
                out["chance"].append(1 / len(cell))
                for name, score in read.items():
                    best = max(score.values())
                    top = [c for c in cell if math.isclose(score[c], best, rel_tol=1e-12, abs_tol=1e-15)]
                    out[name].append((right in top) / len(top))
    return out


def interval(values: np.ndarray) -> str:
    mean, error = values.mean(), values.std(ddof=1) / math.sqrt(len(values))
    return f"{mean:+.3f} [{mean - 1.96 * error:+.3f}, {mean + 1.96 * error:+.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("releases", nargs="+", type=Path, help="release or training-set folders")
    args = parser.parse_args()
    tasks = [pair for root in args.releases for pair in pairs(root)]
    read = {name: np.array(values) for name, values in scores(tasks).items()}
    cells = len(read["chance"])
    print(f"{len(tasks)} tasks, {cells} cells whose options fall on both sides of a count minimum")
    if cells < 2:
        return
    for name in ("pass", "far side", "cut at T"):
        print(f"  {name:10s} over chance {interval(read[name] - read['chance'])}")
    excess = interval(read["cut at T"] - read["far side"])
    print(f"  cut at T - far side   {excess}   (0: the bound says no more)")


if __name__ == "__main__":
    main()

"""``min_margin`` above 1 narrows the bounds once more after ``min_depth`` and
``min_resistant_share`` were met; hostile round 9 found fixpoint releases built with
``min_margin=3`` holding tasks decided at one round (3 of these 24 keys), which verify then
refused. A draft the margin takes below its targets is re-drawn."""

from __future__ import annotations

from pipeline.generation.build import generate_task
from pipeline.generation.keys import GenerationSettings, TaskKey
from solvers.ladder import FIXPOINT, ONE_ROUND, SLOT

DOMAINS = ["course", "meal", "travel", "shopping", "workforce", "pc_build"]


def test_a_margin_above_one_keeps_the_depth_asked_for():
    settings = GenerationSettings(min_depth="fixpoint", min_margin=3)
    for i in range(24):
        key = TaskKey(DOMAINS[i % 6], 5, 7, [5, 7, 11][i % 3], [2, 8][i % 2], 25, i, 0)
        made = generate_task(key, settings)
        cells = sum(1 for role in made.answer.roles if role.decoys)
        target = SLOT if cells == 0 else ONE_ROUND if cells == 1 else FIXPOINT
        assert made.answer.measures.depth.rung >= target, key

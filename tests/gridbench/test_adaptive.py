"""The adaptive source: deterministic given its seed and the rewards, saved and restored, moving
up under high reward and down under low, every task certified (re-proved by verify's own
code) and regenerated from its record; hostile arguments are one line each."""

from __future__ import annotations

import json

import pytest

import gridbench
from gridbench.adaptive import AdaptiveSource, Controller, ControllerSettings, from_config, ladder, regenerate
from gridbench_core.errors import UserError
from pipeline.storage.verification import prove_data
from solvers.results import SolverSettings

# a small ladder of toy and course tasks: quick to generate, three rungs of rising H and B
LADDER = ladder(
    "4x4", hidden_slots=[2, 3, 4], decoy_budgets=[0, 2, 3], min_depths=["slot", "slot", "one_round"]
)


def source(**kwargs) -> AdaptiveSource:
    args = {"domains": ["toy", "course"], "seed": 3, "ladder": LADDER, "window": 2, **kwargs}
    return AdaptiveSource(**args)


def play(src: AdaptiveSource, rewards: list[float]) -> list[tuple[int, str]]:
    out = []
    for reward in rewards:
        item = src.next()
        out.append((item.level, item.task_id))
        src.report(item, reward)
    return out


def test_the_same_seed_and_rewards_give_the_same_tasks_and_other_rewards_other_rungs():
    rewards = [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    first, second = play(source(), rewards), play(source(), rewards)
    assert first == second
    other = play(source(), [0.0] * len(rewards))
    assert [level for level, _ in other] == [0] * len(rewards)
    assert [level for level, _ in first] != [level for level, _ in other]
    assert play(source(seed=4), rewards)[0] != first[0]


def test_difficulty_moves_up_under_high_reward_and_down_under_low():
    src = source()
    play(src, [1.0] * 4)
    assert src.level == 2 and src.stats()["moves"] == [(2, 0, 1), (4, 1, 2)]
    play(src, [1.0] * 4)  # the top rung: stays
    assert src.level == 2
    play(src, [0.0] * 2)
    assert src.level == 1
    play(src, [0.5] * 6)  # inside the band: stays
    assert src.level == 1
    play(src, [0.0] * 2)
    assert src.level == 0


def test_a_reward_of_another_rung_counts_in_its_totals_and_moves_nothing():
    src = source()
    early = src.next()
    play(src, [1.0, 1.0])
    assert src.level == 1
    src.report(early, 0.0)  # handed out at rung 0, reported after the move
    assert src.level == 1 and src.controller.recent_success() is None
    assert src.stats()["success_by_level"][0] == pytest.approx(2 / 3)


def test_state_saved_as_json_and_restored_continues_the_same_sequence():
    rewards = [1.0, 1.0, 0.0, 1.0, 1.0]
    src = source()
    play(src, rewards)
    pending = src.next()  # handed out, not yet reported: the restored source knows it
    state = json.loads(json.dumps(src.state_dict()))
    restored = source()
    restored.load_state_dict(state)
    restored.report(pending.task_id, 1.0)
    src.report(pending, 1.0)
    more = [0.0, 1.0, 1.0, 0.0]
    assert play(restored, more) == play(src, more)
    assert restored.state_dict() == src.state_dict()


def test_every_task_is_certified_as_a_release_task_and_regenerates_from_its_record():
    src = source(settings=gridbench.GenerationSettings(crosscheck=True))
    solver = SolverSettings(time_limit_s=30.0, workers=1, seed=0)
    for item in [src.next() for _ in range(2)] + [src.next() for _ in range(2)]:
        rel = f"tasks/{item.task['domain']}/{item.task_id}.json"
        task_id, _, reasons = prove_data(item.task, item.answer, rel, solver, "highs")
        assert task_id == item.task_id and reasons == [], reasons
        certificate = item.answer["certificate"]
        assert (
            certificate["ok"]
            and certificate["uniqueness"] == "INFEASIBLE"
            and item.answer["crosscheck"]["ok"]
        )
        record = json.loads(json.dumps(item.record()))
        again = regenerate(record)
        assert (again.task, again.answer) == (item.task, item.answer)
        assert again.level == item.level and again.difficulty == item.difficulty
        assert item.score(item.answer["truth"])["success"]


def test_the_prefetch_pool_hands_out_the_same_tasks_as_making_them_inline():
    rewards = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    with source(workers=1, prefetch=2) as pooled:
        from_pool = play(pooled, rewards)
        assert pooled.stats()["handed"] == len(rewards)
    assert from_pool == play(source(), rewards)


def test_the_pool_makes_the_current_rungs_tasks_before_its_neighbours():
    """The pool runs its queue in order: a neighbour's task never waits in the queue ahead of
    one of the current rung's (it would delay the task a trainer waits for)."""

    def queue(src: AdaptiveSource) -> list[int]:
        """The rungs of the tasks queued and not started, in the pool's order."""
        return [key[0] for key, f in src._futures.items() if not f.running() and not f.done()]

    with source(workers=1, prefetch=3, start=1) as pooled:
        rewards = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0]
        for reward in rewards:
            order = queue(pooled)
            level = pooled.level
            assert order == sorted(order, key=lambda rung: rung != level), order
            pooled.report(pooled.next(), reward)
        assert pooled.stats()["handed"] == len(rewards)
        assert {level for level, _ in pooled._futures} <= {0, 1, 2}


def test_from_config_reads_the_shipped_config_and_names_a_misspelt_key():
    import yaml

    from gridbench_core import paths

    config = yaml.safe_load((paths.CONF_DIR / "adaptive" / "default.yaml").read_text())
    src = from_config(config, workers=0)
    assert src.difficulty.name == "5x7 H=1 B=0 slot" and len(src.ladder) == 9
    assert src.ladder[-1].name == "5x7 H=21 B=25 probing"
    with pytest.raises(UserError, match=r"adaptive\.targte: unknown key"):
        from_config({"targte": 0.5})
    with pytest.raises(UserError, match=r"adaptive\.generation\.min_depth"):
        from_config({"generation": {"min_depth": "probing"}})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": 1.5}, r"target=1\.5: need a number between 0 and 1"),
        ({"window": 0}, r"window=0: need a whole number"),
        ({"start": 9}, r"start=9: need a rung of the ladder, 0\.\.2"),
        (
            {"ladder": [{"grid": "4x4", "hidden_slots": 99, "decoy_budget": 0}]},
            r"ladder\[0\]\.hidden_slots=99",
        ),
        ({"ladder": [{"grid": "4y4", "hidden_slots": 2, "decoy_budget": 0}]}, r"ladder\[0\]\.grid='4y4'"),
        (
            {"ladder": [{"grid": "4x4", "hidden_slots": 2, "decoy_budget": 0, "depth": 1}]},
            r"ladder\[0\]\.depth",
        ),
        (
            {"ladder": [{"grid": "4x4", "hidden_slots": 2, "decoy_budget": 0, "min_depth": "deep"}]},
            "min_depth",
        ),
        ({"ladder": "5x7"}, "ladder: give a list of rungs"),
        ({"domains": ["nope"]}, "nope"),
        ({"workers": 10**6}, r"workers=1000000: use 1\.\."),
        ({"prefetch": 0}, r"prefetch=0"),
        ({"seed": -1}, r"seed=-1"),
    ],
)
def test_bad_arguments_are_one_line_naming_them(kwargs, message):
    with pytest.raises(UserError, match=message):
        source(**kwargs)


def test_bad_reports_and_states_are_refused_and_change_nothing():
    src = source()
    item = src.next()
    for reward in (float("nan"), 2.0, -0.1, True, "1"):
        with pytest.raises(UserError, match="reward="):
            src.report(item, reward)
    with pytest.raises(UserError, match="is not a task this source handed out"):
        src.report("course-000000000000", 1.0)
    src.report(item, 1.0)
    with pytest.raises(UserError, match="has not had a reward yet"):
        src.report(item, 1.0)  # once per task
    state = src.state_dict()
    with pytest.raises(UserError, match="another seed"):
        source(seed=5).load_state_dict(state)
    with pytest.raises(UserError, match="not a state_dict"):
        src.load_state_dict({"version": 99})
    broken = json.loads(json.dumps(state))
    broken["controller"]["level"] = 7
    with pytest.raises(UserError, match="rung 7"):
        source().load_state_dict(broken)
    assert src.state_dict() == state


def test_the_controller_holds_inside_the_band_and_slides_its_window():
    controller = Controller(ControllerSettings(target=0.5, band=0.2, window=4), levels=3)
    for reward in (1.0, 0.0, 1.0, 0.0, 1.0):  # windows of 0.5: inside the band
        controller.report(0, reward)
    assert controller.level == 0 and controller.recent_success() == 0.5
    controller.report(0, 1.0)  # the window slides to 1, 0, 1, 1 = 0.75 >= 0.7: up
    assert controller.level == 1 and controller.moves == [(6, 0, 1)] and controller.recent_success() is None


def test_a_window_exactly_at_either_edge_of_the_band_moves():
    """``target + band`` climbs and ``target - band`` steps down (both edges count; 0.5 and
    0.25 are exact in binary, so the means are exactly the edges)."""
    controller = Controller(ControllerSettings(target=0.5, band=0.25, window=4), levels=3)
    for reward in (1.0, 1.0, 1.0, 0.0):  # 0.75
        controller.report(0, reward)
    assert controller.level == 1 and controller.moves == [(4, 0, 1)]
    for reward in (0.0, 0.0, 0.0, 1.0):  # 0.25
        controller.report(1, reward)
    assert controller.level == 0 and controller.moves == [(4, 0, 1), (8, 1, 0)]


def test_a_state_with_a_full_window_restores_and_decides_alike():
    """After ``window`` rewards inside the band the window is full; its state restores, and the
    restored controller moves on the next reward exactly as the original does."""
    settings = ControllerSettings(target=0.5, band=0.2, window=4)
    controller = Controller(settings, levels=3)
    for reward in (0.0, 1.0, 0.0, 1.0):  # 0.5; the next 1.0 slides it to 1, 0, 1, 1 = 0.75: up
        controller.report(0, reward)
    state = json.loads(json.dumps(controller.state()))
    assert len(state["recent"]) == 4
    restored = Controller.from_state(settings, 3, state)
    assert restored.state() == controller.state()
    assert restored.report(0, 1.0) == controller.report(0, 1.0) == 1


def test_a_rung_may_hide_every_cell_of_its_grid_but_no_more():
    from gridbench.adaptive.ladder import difficulty_of

    assert difficulty_of({"grid": "2x3", "hidden_slots": 6, "decoy_budget": 0}).hidden_slots == 6
    with pytest.raises(UserError, match=r"hidden_slots=7: need a whole number in 1\.\.6"):
        difficulty_of({"grid": "2x3", "hidden_slots": 7, "decoy_budget": 0})

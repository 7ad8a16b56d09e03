"""The shared test helpers hold where the interpreter is fragile."""

from __future__ import annotations

import asyncio
import gc
import logging

from tests import ROOT, parse_source


def _abandoned_task() -> None:
    """An asyncio task whose exception nobody retrieved, left in a cycle: freed by a later
    collection, whose finalizer logs (what a harness test interrupted by Ctrl-C leaves)."""

    async def interrupted() -> None:
        raise KeyboardInterrupt

    loop = asyncio.new_event_loop()
    task = loop.create_task(interrupted())
    try:
        loop.run_until_complete(task)
    except KeyboardInterrupt:
        pass
    loop.close()
    cycle: list[object] = [task]
    cycle.append(cycle)


def test_parsing_survives_garbage_whose_finalizer_runs_python(caplog):
    source = (ROOT / "solvers" / "cpsat.py").read_text()
    threshold = gc.get_threshold()
    gc.set_threshold(50)  # a collection inside every parse (CPython 3.11.7: 190 of 200 failed)
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):  # the finalizer logs, as it did
            for _ in range(30):
                _abandoned_task()
                assert parse_source(source).body
    finally:
        gc.set_threshold(*threshold)
        gc.collect()


COMPOSITIONS = [
    ("config", "", ["grid=10x10", "grid.hidden_slots=[2,4]", "release.name=x", "release.domains=[toy]"]),
    ("config", "", ["release.name='with spaces'", "solver.time_limit_s=nan", "release.crosscheck=false"]),
    ("config", "", ["release.workers=1", "grid.decoy_budgets=[0]", "generation.max_attempts=3"]),
    ("evaluate", "apps", ["+experiment=paper", "release=/x", "workers=1"]),
    ("config", "", ["domain=toy", "grid=5x5", "release.output_root=/tmp/x/${release.name}"]),
    ("verify", "apps", ["release=/tmp/somewhere", "verify.workers=1", "solver.workers=2"]),
    ("evaluate", "apps", ["agent=search", "release=/x", "+agent.kwargs.depth=3", "workers=1"]),
    ("evaluate", "apps", ["release=/x", "failure_rates=[0.0,0.5]", "env.check_budget=paper"]),
    ("train", "apps", ["size=8", "shard_size=4", "domains=[course,toy]", "hydra.job.name=x"]),
    # a plain value before a forced addition or a dict value of the same key: Hydra's order
    ("config", "", ["release.name=b", "++release.name=a", "grid=5x5"]),
    ("config", "", ["release.name=b", "release={name:a}"]),
]


def test_the_compose_helper_gives_what_hydra_composes():
    """``compose_config`` composes a structure once and sets plain values on a copy: for group
    choices, additions, Hydra's keys, lists, strings, NaN and interpolations alike, the result
    is Hydra's whole composition of the line (values, struct flag, unresolved text), and a line
    Hydra refuses is refused."""
    import json

    import pytest
    from hydra.errors import ConfigCompositionException
    from omegaconf import OmegaConf

    from tests.helpers_release import _compose, compose_config

    def seen(cfg) -> tuple[str, bool, bool]:
        text = json.dumps(OmegaConf.to_container(cfg, resolve=False), sort_keys=True)
        return text, OmegaConf.is_struct(cfg), OmegaConf.is_readonly(cfg) is True

    for name, folder, overrides in COMPOSITIONS:
        assert seen(compose_config(overrides, name, folder)) == seen(_compose(overrides, name, folder))
    with pytest.raises(ConfigCompositionException, match="agent.kwargs.depth"):
        compose_config(["release=/x", "agent.kwargs.depth=3"], "evaluate", "apps")
    with pytest.raises(ConfigCompositionException, match="agent.kwargs.a"):  # added after it is set
        compose_config(["release=/x", "agent.kwargs.a=2", "+agent.kwargs.a=1"], "evaluate", "apps")

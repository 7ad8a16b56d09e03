"""Shared test helpers: hypothesis settings and small hand-built tasks."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

import gridbench

# as a command's process does: set before the workers start, so that they and the processes
# the tests start (about 80 of them import numpy) inherit it
gridbench._one_blas_thread()

settings.register_profile(
    "default",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
# `make mutate` (tests/mutation/mutate.py): derandomized as in CI (the same examples on every
# run), a third of the examples (a mutant runs every property test that calls it: at 100
# examples they were most of a survivor's time) and no shrinking (a mutant is killed by the
# first failing example; shrinking it only costs)
settings.register_profile(
    "mutation",
    parent=settings.get_profile("ci"),
    max_examples=35,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default"))


def _shared_release(tmp_path_factory, name: str, build) -> Path:
    """The release ``build(folder, name)`` makes, built once per session. With
    ``GRIDBENCH_TEST_RELEASES`` set (``make mutate``, for groups whose modules the build never
    calls) it is built once into that folder by the first session and read by every later one:
    each mutant's run would otherwise build the same bytes again."""
    cache = os.environ.get("GRIDBENCH_TEST_RELEASES")
    if not cache:
        return build(tmp_path_factory.mktemp(name), name)
    final = Path(cache) / name
    if not (final / f"{name}-v2.0.0" / "manifest.json").exists():
        Path(cache).mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=cache, prefix=f".{name}-"))
        build(staging, name)
        try:
            staging.rename(final)  # atomic: a session running beside this one sees all or nothing
        except OSError:  # that session finished first: its copy is the same bytes
            shutil.rmtree(staging, ignore_errors=True)
    return final / f"{name}-v2.0.0"


@pytest.fixture(scope="session")
def tiny_release(tmp_path_factory) -> Path:
    """A four-task release (toy and course) shared by the hostile suites; they change copies."""
    from tests.hostile import build_tiny

    return _shared_release(tmp_path_factory, "tiny", build_tiny)


@pytest.fixture(scope="session")
def small_release(tmp_path_factory) -> Path:
    """The eight-task release of ``build_small`` (toy and course, H = 2 and 4, B = 0 and 3),
    shared by the suites that only read it or change copies."""
    from tests.helpers_release import build_small

    return _shared_release(tmp_path_factory, "small", build_small)


def build_sharded(root: Path, name: str = "sharded") -> Path:
    """A sharded training set of eight tasks in two shards (a 4x4 and a 5x5 part; course and
    toy) built as ``make train`` builds one: small enough to copy and damage per test."""
    from gridbench.commands.train import build
    from tests.helpers_release import compose_config

    parts = (
        "parts=[{grid: 4x4, hidden_slots: [1, 3], decoy_budgets: [0, 3]},"
        " {grid: 5x5, hidden_slots: [2, 4], decoy_budgets: [0, 4]}]"
    )
    overrides = [f"name={name}", "size=8", "shard_size=4", "domains=[course,toy]"]
    overrides += ["candidates_per_slot=6", parts, f"output_root={root}", "workers=1"]
    assert build(compose_config(overrides, "train", "apps")) == 0
    return root / f"{name}-v2.0.0"


@pytest.fixture(scope="session")
def sharded_release(tmp_path_factory) -> Path:
    """The two-shard release of :func:`build_sharded`, shared; tests damage copies."""
    return _shared_release(tmp_path_factory, "sharded", build_sharded)


@pytest.fixture
def crosschecks(monkeypatch) -> list[str]:
    """The MILP solver named by every cross-check the test runs, in order (each still runs)."""
    import pipeline.generation.seal as seal_module

    asked: list[str] = []
    real = seal_module.crosscheck_answer

    def spy(task, answer, solver, name):
        asked.append(name)
        return real(task, answer, solver, name)

    monkeypatch.setattr(seal_module, "crosscheck_answer", spy)
    return asked


# The modules that take longest (seconds of `pytest --durations=0`, on two busy cores; measured
# again 2026-12-06), longest first. pytest-xdist hands whole modules to its workers in
# collection order (addopts: --dist loadscope --no-loadscope-reorder): started first, the long
# ones no longer leave one worker running alone at the end. Only the order changes; a module
# missing here runs after these, in its usual place.
LONGEST_FIRST = (
    "tests/test_docs_blocks.py",
    "tests/pipeline/storage/test_verify_hostile.py",
    "tests/pipeline/test_command_line_edges.py",
    "tests/solvers/test_solver_agreement.py",
    "tests/gridbench/agents/test_llm_runner.py",
    "tests/adapters/test_mcp_edges.py",
    "tests/adapters/test_mcp.py",
    "tests/solvers/test_timeouts.py",
    "tests/gridbench/agents/test_llm_hostile.py",
    "tests/pipeline/generation/test_large_budgets.py",
    "tests/adapters/test_parity.py",
    "tests/pipeline/evaluation/test_evaluate_report.py",
    "tests/pipeline/generation/test_exchangeability.py",
    "tests/pipeline/storage/test_bounded_reads.py",
    "tests/pipeline/storage/test_claims_hostile.py",
    "tests/test_install.py",
    "tests/pipeline/evaluation/test_report_edges.py",
    "tests/pipeline/storage/test_release.py",
    "tests/pipeline/test_parallel.py",
    "tests/pipeline/generation/test_paths.py",
    "tests/pipeline/evaluation/test_eval_hostile.py",
    "tests/pipeline/integrity/test_audit_workers.py",
    "tests/solvers/test_propagation.py",
    "tests/solvers/test_ladder.py",
    "tests/pipeline/storage/test_verify_sharded.py",
    "tests/pipeline/test_train.py",
    "tests/pipeline/test_bad_config.py",
    "tests/pipeline/storage/test_verify_checks.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {module: n for n, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable


# A command's fork server imports the module of its first pool's jobs (pipeline.parallel); a
# test session starts pools of every kind from one process, so each later kind's workers
# would import their module again (verify's, the harness's: about half a second a worker, 17 s
# of the suite). The session's server imports them all once; the jobs and workers are the
# same.
SESSION_PRELOAD = (
    "pipeline.storage.verification",
    "gridbench.agents.harness",
    "gridbench.commands.import_agentce",
    "gridbench.commands.train",
)


def pytest_unconfigure(config):
    """The interpreter's exit ends with a garbage collection over everything the session made:
    about 2.5 s in the worker that finishes last, the suite's last seconds (measured: 2.7 s
    from its last exit handler to the controller's summary, 0.2 s frozen). Frozen, what is
    left is freed without that pass (exit handlers still run; nothing is written after)."""
    import gc

    gc.freeze()


def pytest_configure(config):
    """Also: Ctrl-C as Python has it by default. A shell runs a command started with ``&``
    with SIGINT ignored (``make test &``, ``nohup ... &`` in a script), an ignored signal stays
    ignored across exec, and the processes the signal tests start would never see the Ctrl-C
    they send (7 tests failed, others waited out their timeouts). Handled here, SIGINT is
    back to its default in every process the session starts."""
    import signal

    import pipeline.parallel

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)

    extra = tuple(module for module in SESSION_PRELOAD if module not in pipeline.parallel.PRELOAD)
    pipeline.parallel.PRELOAD = (*pipeline.parallel.PRELOAD, *extra)

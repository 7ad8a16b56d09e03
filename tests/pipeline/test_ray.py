"""executor=ray on a local Ray instance (num_cpus=2): the same bytes as the local pool for
release, verify and evaluate; failed Ray tasks retried, then reported by their jobs' keys."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from pipeline.parallel import Executor, ExecutorError, _batches, parallel_imap, use_executor
from tests import ROOT
from tests.helpers_release import compose_config, small_release_overrides

RAY = Executor("ray", num_cpus=2)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["executor=spark"], "executor='spark': use local or ray"),
        pytest.param(["executor=ray", "ray.address=auto"], "cannot reach Ray", marks=pytest.mark.slow),
        pytest.param(["executor=ray", "ray.batch_size=-1"], "ray.batch_size", marks=pytest.mark.slow),
        pytest.param(
            ["executor=ray", "ray.address=127.0.0.1:1"], "nothing answers there", marks=pytest.mark.slow
        ),
    ],
)
def test_executor_errors_are_one_line(args, needle, tmp_path):
    """First in the module: `auto` must not find the instance the fixture below starts."""
    if "ray.address=auto" in args and pytest.importorskip("ray").is_initialized():
        pytest.skip("a Ray instance is running in this process")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "gridbench.commands.verify",
            f"release={tmp_path}",
            *args,
            f"hydra.run.dir={tmp_path}/h",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        # a temp dir of its own: `auto` must not find the instance the fixture above started
        env={"PATH": "/usr/bin:/bin", "RAY_ADDRESS": "", "RAY_TMPDIR": str(tmp_path)},
    )
    assert out.returncode == 2 and needle in out.stderr and "Traceback" not in out.stderr


@pytest.fixture(scope="module")
def on_ray():
    """One local Ray instance for the module (starting one costs seconds). Ray is imported here,
    where a test runs on it, not when the module is collected (a third of a second in every
    test worker)."""
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the jobs below, by value
    with use_executor(RAY):
        yield
    assert not ray.is_initialized()


@dataclass(frozen=True)
class Job:
    key: str
    marker: str = ""


def double(n: int) -> int:
    return 2 * n


def always_fails(job: Job) -> str:
    raise ValueError(f"job {job.key} is broken")


def fails_once(job: Job) -> str:
    marker = Path(job.marker)
    if not marker.exists():
        marker.write_text("failed once")
        raise RuntimeError("a transient failure")
    return job.key


def _build(root: Path, name: str) -> Path:
    from gridbench.commands.release import build

    overrides = small_release_overrides(root, name, workers=2)
    # the same output and cell paths for both builds, so the manifests can be compared whole
    assert build(compose_config(overrides)) == 0
    return root / f"{name}-v2.0.0"


def _files(release: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(release)): p.read_bytes()
        for p in sorted(release.rglob("*"))
        if p.is_file() and p.name != "timings.parquet"
    }


@pytest.fixture(scope="module")
def ray_release(on_ray, tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("ray"), "same")


@pytest.mark.slow  # starting Ray costs ~14 s; `make test-slow` runs it
def test_release_and_verify_on_ray_give_the_local_bytes(ray_release, tmp_path):
    from gridbench.commands.verify import verify

    with use_executor(Executor()):  # the local pool inside the Ray block
        local = _files(_build(tmp_path / "local", "same"))
    on = _files(ray_release)
    manifest = "manifest.json"
    assert set(on) == set(local)
    assert {k: v for k, v in on.items() if k != manifest} == {k: v for k, v in local.items() if k != manifest}
    # the manifests differ only in the output paths they record
    ours = on[manifest].decode().replace(str(ray_release.parent), "ROOT")
    theirs = local[manifest].decode().replace(str(tmp_path / "local"), "ROOT")
    digest = [line for line in ours.splitlines() if "timings.parquet" not in line]
    assert digest == [line for line in theirs.splitlines() if "timings.parquet" not in line]
    assert verify(compose_config([f"release={ray_release}", "verify.workers=2"], "verify", "apps")) == 0


@pytest.mark.slow
def test_evaluate_on_ray_gives_the_local_rows(ray_release, tmp_path):
    from gridbench.commands.evaluate import evaluate

    def run(runs: Path) -> pl.DataFrame:
        cfg = compose_config(
            [f"release={ray_release}", "agent=search", f"output_root={runs}", "failure_rates=[0.0,0.3]"],
            "evaluate",
            "apps",
        )
        assert evaluate(cfg) == 0
        rows = pl.read_parquet(runs / ray_release.name / "search" / "results.parquet")
        return rows.drop("wall_ms").sort("episode_id")

    on_ray_rows = run(tmp_path / "runs-ray")
    with use_executor(Executor()):
        local_rows = run(tmp_path / "runs-local")
    assert on_ray_rows.height == 16 and on_ray_rows.equals(local_rows)


@pytest.mark.slow  # starting Ray costs ~14 s; `make test-slow` runs it
def test_results_come_back_in_order_in_batches(on_ray):
    jobs = list(range(101))
    assert list(parallel_imap(double, jobs, 2, "", show=False)) == [2 * n for n in jobs]
    assert sorted(parallel_imap(double, jobs, 2, "", ordered=False, show=False)) == [2 * n for n in jobs]


@pytest.mark.slow  # starting Ray costs ~14 s; `make test-slow` runs it
def test_a_failing_job_is_retried_then_reported_by_its_key(on_ray, tmp_path):
    jobs = [Job(f"task-{i}", str(tmp_path / f"marker-{i}")) for i in range(6)]
    assert list(parallel_imap(fails_once, jobs, 2, "", show=False)) == [job.key for job in jobs]
    with pytest.raises(ExecutorError, match=r"after 2 retries; its jobs: .*task-\d.*job task-\d is broken"):
        list(parallel_imap(always_fails, [Job(f"task-{i}") for i in range(3)], 2, "", show=False))


def test_batches_keep_ray_tasks_few_and_cover_every_job():
    jobs = list(range(1000))
    batches = _batches(jobs, cpus=2, batch_size=0)
    assert len(batches) == 8 and [j for b in batches for j in b] == jobs
    assert [len(b) for b in _batches(jobs[:5], cpus=64, batch_size=0)] == [1] * 5
    assert [len(b) for b in _batches(jobs[:7], cpus=2, batch_size=3)] == [3, 3, 1]


ANCHORS = ROOT.parent / "shared" / "anchors" / "agentce_5x5"


@pytest.mark.slow
@pytest.mark.skipif(not list(ANCHORS.glob("*.json")), reason="../shared/anchors is not beside the checkout")
def test_import_on_ray_gives_the_local_bytes(on_ray, tmp_path):
    import shutil

    from gridbench.commands.import_agentce import run_import

    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(next(ANCHORS.glob("travel*.json")), source)
    shutil.copy(ANCHORS / "LICENSE", source)

    def run(out: Path) -> dict[str, bytes]:
        cfg = compose_config([f"source={source}", f"release.output_root={out}"], "import_agentce", "apps")
        assert run_import(cfg) == 0
        release = out / "agentce-5x5-v1.0.0"
        return {
            str(p.relative_to(release)): p.read_bytes()
            for p in release.rglob("*")
            if p.is_file() and p.name not in ("manifest.json", "timings.parquet")
        }

    on = run(tmp_path / "ray")
    with use_executor(Executor()):
        local = run(tmp_path / "local")
    assert on == local and any(name.startswith("tasks/travel/") for name in on)

"""The other commands against settings that make no sense on this machine or leave their root:
each is one line before any work (verify, import, audit, train, release)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridbench_core.errors import UserError
from tests.helpers_release import compose_config
from tests.hostile import snapshot, tiny_overrides

VERIFY = [
    (["verify.workers=100000"], "verify.workers=100000"),
    (["verify.workers=0"], "verify.workers=0"),
    (["solver.time_limit_s=nan"], "solver.time_limit_s=nan"),
    (["solver.time_limit_s=inf"], "solver.time_limit_s=inf"),
    (["verify.crosscheck_solver=gurobi"], "verify.crosscheck_solver"),
]


@pytest.mark.parametrize(("overrides", "message"), VERIFY, ids=[o[0][0] for o in VERIFY])
def test_verify_refuses_settings_before_reading(overrides, message, tiny_release):
    from gridbench.commands.verify import verify

    with pytest.raises(UserError, match=message):
        verify(compose_config([f"release={tiny_release}", *overrides], "verify", "apps"))


RELEASE = [
    (["release.workers=100000"], "release.workers=100000"),
    (["solver.time_limit_s=nan"], "solver.time_limit_s=nan"),
    (["release.name=${oc.env:H19_NAME}"], "release.name="),
    (["release.version=${oc.env:H19_NAME}"], "release.version="),
    (["release.name=a\\x1b"], "release.name="),
]


@pytest.mark.parametrize(("overrides", "message"), RELEASE, ids=[o[0][0] for o in RELEASE])
def test_release_refuses_settings_before_any_work(overrides, message, tmp_path, monkeypatch):
    from gridbench.commands.release import build

    monkeypatch.setenv("H19_NAME", "../../escape")
    base = [o for o in tiny_overrides(tmp_path / "out") if o.split("=")[0] != overrides[0].split("=")[0]]
    with pytest.raises(UserError, match=message):
        build(compose_config([*base, *overrides]))
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "escape-v2.0.0").exists()


def test_import_refuses_workers_beyond_the_machine(tmp_path):
    from gridbench.commands.import_agentce import run_import

    cfg = compose_config(
        [f"release.output_root={tmp_path}/out", "release.workers=100000"], "import_agentce", "apps"
    )
    with pytest.raises(UserError, match="release.workers=100000"):
        run_import(cfg)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("overrides", [["splits=1000000000"], ["splits=-1"], ["seed=-1"]])
def test_audit_refuses_absurd_splits(overrides, tiny_release, tmp_path):
    from gridbench.commands.audit import run_audit

    cfg = compose_config([f"release={tiny_release}", f"output={tmp_path}/audit", *overrides], "audit", "apps")
    with pytest.raises(UserError, match=overrides[0].split("=")[0]):
        run_audit(cfg)
    assert not (tmp_path / "audit").exists()


def _train(root: Path, *extra: str):
    from gridbench.commands.train import build

    cfg = compose_config(
        [
            "size=2",
            "shard_size=2",
            "domains=[toy]",
            "candidates_per_slot=6",
            "parts=[{grid: 5x5, hidden_slots: [2, 2], decoy_budgets: [0, 1]}]",
            f"output_root={root}",
            *extra,
        ],
        "train",
        "apps",
    )
    return build(cfg)


@pytest.mark.parametrize(
    "extra", [["name='a\u202eb'"], ["name=x" + "y" * 100], ["version=1"], ["workers=100000"], ["name=../up"]]
)
def test_train_refuses_names_and_sizes_before_any_shard(extra, tmp_path):
    with pytest.raises(UserError):
        _train(tmp_path / "out", *extra)
    assert not (tmp_path / "out").exists()


def test_train_never_writes_through_a_linked_shards_folder(tmp_path):
    root = tmp_path / "out" / "gridbench-train-v2.0.0"
    root.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "shards").symlink_to(tmp_path / "elsewhere")
    before = snapshot(tmp_path / "elsewhere")
    with pytest.raises(UserError, match="symlink"):
        _train(tmp_path / "out")
    assert snapshot(tmp_path / "elsewhere") == before


def test_release_into_an_output_root_that_is_a_file_is_refused_before_any_task(tmp_path, monkeypatch):
    """Hostile round 8: the tasks were made, then the write failed."""
    from gridbench.commands.release import build
    from pipeline.storage import cache

    made = []
    monkeypatch.setattr(cache, "generate_task", lambda *args, **kwargs: made.append(args) or 1 / 0)
    (tmp_path / "file").write_text("not a folder")
    base = [o for o in tiny_overrides(tmp_path / "file" / "out") if not o.startswith("release.cache_root=")]
    with pytest.raises(UserError, match="is not a folder"):
        build(compose_config([*base, f"release.cache_root={tmp_path / 'cache'}", "release.workers=1"]))
    assert not made

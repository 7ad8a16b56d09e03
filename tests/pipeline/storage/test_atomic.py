"""The atomic folder a release is written into: on success it replaces its target, on any
way out of the block (an error, Ctrl-C, a worker's exit) it vanishes and no target appears."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.storage.atomic import atomic_folder


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit, ValueError])
def test_a_block_left_by_an_error_or_ctrl_c_leaves_no_partial_folder(tmp_path, stop):
    target = tmp_path / "release"
    with pytest.raises(stop), atomic_folder(target, overwrite=False) as folder:
        (folder / "new.txt").write_text("new")
        raise stop()
    assert not target.exists()
    assert not [name for name in _leftovers(tmp_path) if ".partial-" in name]


def test_a_finished_block_replaces_the_target(tmp_path):
    target = tmp_path / "release"
    with atomic_folder(target, overwrite=False) as folder:
        (folder / "new.txt").write_text("new")
    assert [p.name for p in target.iterdir()] == ["new.txt"]
    assert not [name for name in _leftovers(tmp_path) if ".partial-" in name or ".old-" in name]

"""The atomic folder a release is written into: on success it replaces its target, on any
way out of the block (an error, Ctrl-C, a worker's exit) it vanishes and no target appears."""

from __future__ import annotations

import os
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


def test_only_partial_folders_of_processes_that_are_gone_are_cleaned(tmp_path):
    """A killed build's partial folder (its pid gone) is removed; a live process's (another
    build of the same name writing now) is left alone."""
    import subprocess
    import sys

    from pipeline.storage.atomic import clean_stale_partials

    target = tmp_path / "release"
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = tmp_path / f".release.partial-{int(gone.stdout)}"
    live = tmp_path / f".release.partial-{os.getpid()}"
    for folder in (dead, live):
        folder.mkdir()
        (folder / "task.json").write_text("{}")
    assert clean_stale_partials(target) == [dead]
    assert not dead.exists() and (live / "task.json").exists()

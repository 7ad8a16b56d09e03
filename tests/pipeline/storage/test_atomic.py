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


def test_the_lock_of_a_killed_build_is_taken_over(tmp_path):
    """Planted bug q48 (round 7): the lock of a dead pid was removed but never taken again."""
    import subprocess
    import sys

    from pipeline.storage.atomic import atomic_folder

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    target = tmp_path / "r-v1.0.0"
    (tmp_path / ".r-v1.0.0.lock").write_text(dead.stdout.strip())
    with atomic_folder(target, overwrite=False) as folder:
        (folder / "manifest.json").write_text("{}")
    assert (target / "manifest.json").is_file() and not (tmp_path / ".r-v1.0.0.lock").exists()


def test_a_target_that_appears_during_the_build_is_checked_again(tmp_path):
    """Planted bug q49 (round 7): without the second check, a folder made at the target while
    the build ran (not a release) was replaced."""
    from pipeline.storage.atomic import atomic_folder
    from pipeline.storage.safe import ReleaseError

    target = tmp_path / "r-v1.0.0"
    with pytest.raises(ReleaseError):
        with atomic_folder(target, overwrite=False) as folder:
            (folder / "manifest.json").write_text("{}")
            target.mkdir()
            (target / "mine.txt").write_text("a user's own file")
    assert (target / "mine.txt").read_text() == "a user's own file"
    assert not list(tmp_path.glob(".r-v1.0.0.partial-*"))


def test_only_a_release_of_this_format_may_be_overwritten_and_versions_are_whole(tmp_path):
    """Planted bugs q53 and q54 (round 7): overwrite replaced any folder whose manifest had a
    format key, and a version with trailing text was accepted."""
    import json

    from gridbench_core.errors import UserError
    from pipeline.storage.layout import RELEASE_FORMAT, check_target, release_dir
    from pipeline.storage.safe import ReleaseError

    target = tmp_path / "data-v1.0.0"
    target.mkdir()
    (target / "manifest.json").write_text(json.dumps({"format": "my-own-data"}))
    with pytest.raises((ReleaseError, UserError)):
        check_target(target, overwrite=True)
    (target / "manifest.json").write_text(json.dumps({"format": RELEASE_FORMAT}))
    check_target(target, overwrite=True)  # a release of this format: replaced when asked
    for version in ("1.0.0 junk", "1.0.0\n", "1.0.0/x"):
        with pytest.raises((ReleaseError, UserError)):
            release_dir(tmp_path, "data", version)
    assert release_dir(tmp_path, "data", "1.0.0-rc.1") == tmp_path / "data-v1.0.0-rc.1"

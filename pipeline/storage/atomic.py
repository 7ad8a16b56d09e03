"""Writing a release atomically: a build lock taken over when its process is gone, a hidden
temporary folder renamed when complete, and whole files or none on a full disk."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gridbench_core.errors import deferred_interrupts, written
from pipeline.storage.layout import check_target, sha256
from pipeline.storage.safe import ReleaseError


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def build_lock(target: Path) -> Iterator[None]:
    """One build of a version at a time: ``.<name>.lock`` holds the builder's pid; a lock whose
    process is gone (a killed build) is taken over."""
    lock = target.parent / f".{target.name}.lock"
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = lock.read_text().strip() if lock.is_file() else ""
            if owner.isdigit() and _alive(int(owner)) and int(owner) != os.getpid():
                raise ReleaseError(
                    f"another build of {target.name} is running (pid {owner}); "
                    "wait for it, or build another release.version"
                ) from None
            lock.unlink(missing_ok=True)
            continue
        os.write(descriptor, str(os.getpid()).encode())
        os.close(descriptor)
        break
    else:
        raise ReleaseError(f"cannot take the build lock {lock}; remove it if no build is running")
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def clean_stale_partials(target: Path) -> list[Path]:
    """Remove the temporary folders of killed builds of ``target`` (their pid is gone)."""
    removed = []
    for stale in target.parent.glob(f".{target.name}.partial-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)) and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
            removed.append(stale)
    if removed:
        print(
            f"removed {len(removed)} unfinished build folder(s) of killed runs: "
            f"{', '.join(p.name for p in removed)}"
        )
    return removed


@contextmanager
def atomic_folder(target: Path, overwrite: bool) -> Iterator[Path]:
    """Yield a temporary folder; on success it replaces ``target``, on failure it vanishes.
    The existence check and the rename happen under the build lock, so two concurrent builds
    cannot both succeed; a kill leaves only a ``.partial`` folder, cleaned by the next build."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(target):
        check_target(target, overwrite)
        clean_stale_partials(target)
        temporary = target.parent / f".{target.name}.partial-{os.getpid()}"
        shutil.rmtree(temporary, ignore_errors=True)
        temporary.mkdir()
        try:
            yield temporary
            check_target(target, overwrite)  # again: something may have appeared there meanwhile
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        if target.exists():
            target.rename(old)
        # in place and said so as one step: a Ctrl-C or SIGTERM from here on names the release
        # as written (its command exits 0), rather than "run the command again" (which refused)
        with deferred_interrupts():
            temporary.rename(target)
            written(f"the release at {target}")
        shutil.rmtree(old, ignore_errors=True)


def _write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return sha256(data)

"""Reading a release: its manifest (checked for shape), and its tasks with their answers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pipeline.storage.safe import ReleaseError, checked_relative, read_json
from pipeline.storage.write import RELEASE_FORMAT
from solvers.task import Answer, Task
from solvers.task_io import answer_from_dict, task_from_dict

DIGEST = re.compile(r"^[0-9a-f]{64}$")


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the release at ``path``; a folder without one is not a release, and a
    manifest of the wrong shape is refused, naming what is wrong."""
    if not path.is_dir() or not (path / "manifest.json").exists():
        raise ReleaseError(
            f"{path} is not a release (no manifest.json); pass release=PATH to a "
            "folder written by `make release`"
        )
    manifest = read_json(path, "manifest.json")
    if not isinstance(manifest, dict):
        raise ReleaseError(f"{path}/manifest.json: must be a JSON object, got {type(manifest).__name__}")
    if manifest.get("format") != RELEASE_FORMAT:
        raise ReleaseError(
            f"{path}/manifest.json: release format {str(manifest.get('format'))[:40]!r} "
            f"is not known; this code reads {RELEASE_FORMAT!r}"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise ReleaseError(f"{path}/manifest.json: 'files' must map each file to its SHA-256")
    for relative, digest in files.items():
        checked_relative(relative)
        if not isinstance(digest, str) or not DIGEST.match(digest):
            raise ReleaseError(f"{path}/manifest.json: the digest of {relative} is not a SHA-256")
    counts = manifest.get("counts")
    if not isinstance(counts, dict) or not isinstance(counts.get("tasks"), int):
        raise ReleaseError(f"{path}/manifest.json: 'counts.tasks' must be an integer")
    return manifest


def release_pairs(release: Path) -> list[tuple[Task, Answer]]:
    """Every (task, answer) of a release, in file order."""
    manifest = read_manifest(release)
    pairs = []
    for relative in sorted(name for name in manifest["files"] if name.startswith("tasks/")):
        task = task_from_dict(read_json(release, relative))
        answer = answer_from_dict(read_json(release, "answers/" + relative[len("tasks/") :]))
        pairs.append((task, answer))
    return pairs

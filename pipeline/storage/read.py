"""Reading a release: its manifest, and its tasks with their answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.storage.write import RELEASE_FORMAT, ReleaseError
from solvers.task import Answer, Task
from solvers.task_io import answer_from_dict, task_from_dict


def read_manifest(path: Path) -> dict[str, Any]:
    manifest_path = path / "manifest.json"
    if not path.is_dir() or not manifest_path.is_file():
        raise ReleaseError(f"{path} is not a release (no manifest.json); pass release=PATH to a "
                           "folder written by `make release`")  # fmt: skip
    try:
        manifest = json.loads(manifest_path.read_text())
    except ValueError as error:
        raise ReleaseError(f"{manifest_path} is not valid JSON: {error}") from None
    if manifest.get("format") != RELEASE_FORMAT:
        raise ReleaseError(f"{manifest_path}: release format {manifest.get('format')!r} is not "
                           f"known; this code reads {RELEASE_FORMAT!r}")  # fmt: skip
    return manifest


def release_pairs(release: Path) -> list[tuple[Task, Answer]]:
    """Every (task, answer) of a release, in file order."""
    manifest = read_manifest(release)
    pairs = []
    for relative in sorted(name for name in manifest.get("files", {}) if name.startswith("tasks/")):
        task = task_from_dict(json.loads((release / relative).read_text()))
        answer_path = release / "answers" / relative[len("tasks/"):]
        pairs.append((task, answer_from_dict(json.loads(answer_path.read_text()))))
    return pairs

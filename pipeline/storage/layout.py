"""What a release folder is: its format, name and version rules, where it lives, the
files whose bytes are reproducible, the JSON layout of its files, digests and the software it
records."""

from __future__ import annotations

import hashlib
import json
import platform
import re
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

from pipeline.storage.safe import ReleaseError

RELEASE_FORMAT = "gridbench-release-1"


PACKAGES = ("gridbench", "ortools", "pulp", "polars", "pyarrow", "hydra-core", "omegaconf")


# what is byte-identical for the same configuration and seed (the manifest's "deterministic")
DETERMINISTIC = ["tasks/", "answers/", "data/", "metadata.parquet", "schemas/", "README.md", "LICENSE"]


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


VERSION = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]{1,32})?\Z")


def release_dir(output_root: str | Path, name: str, version: str) -> Path:
    """``<output_root>/<name>-v<version>``, with the name and version checked so that the
    folder can only be a direct child of ``output_root``."""
    if not NAME.match(str(name)) or ".." in str(name):
        raise ReleaseError(
            f"release.name={str(name)[:80]!r}: use letters, digits, '.', '_' and '-' "
            "(no '/', no '..'), for example release.name=gridbench"
        )
    if not VERSION.match(str(version)):
        raise ReleaseError(
            f"release.version={str(version)[:80]!r}: use a semantic version, for "
            "example release.version=1.0.0"
        )
    root = Path(output_root).resolve()
    target = root / f"{name}-v{version}"
    if target.parent != root:
        raise ReleaseError(f"release {target} would not lie inside release.output_root={root}")
    return target


def is_release(path: Path) -> bool:
    """True for a folder holding a manifest of this format (what ``overwrite`` may replace)."""
    from pipeline.storage.safe import read_json

    try:
        manifest = read_json(path, "manifest.json")
    except ReleaseError:
        return False
    return isinstance(manifest, dict) and manifest.get("format") == RELEASE_FORMAT


def check_target(target: Path, overwrite: bool) -> None:
    """Refuse to build over an existing version unless asked, and never over something that
    is not a release (checked before any work, and again under the build lock)."""
    if target.is_symlink():
        raise ReleaseError(f"{target} is a symlink; a release is never written through one")
    for folder in (target.parent, *target.parent.parents):  # checked before the tasks are made
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                raise ReleaseError(
                    f"release.output_root: {folder} is not a folder; point release.output_root at a "
                    "folder (it is created when missing)"
                )
            break
    if target.exists() and not overwrite:
        raise ReleaseError(
            f"release {target} already exists; bump release.version or pass release.overwrite=true"
        )
    if target.exists() and not is_release(target):
        raise ReleaseError(
            f"{target} exists and is not a release (no manifest.json of this "
            "format); release.overwrite=true replaces only a release"
        )


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))
# the C encoder ``_COMPACT.encode`` makes anew at every call (a task file encodes some two
# hundred values apart), made once: the same bytes, without circular-reference markers (a
# record is a tree)
_C_MAKE = getattr(json.encoder, "c_make_encoder", None)  # None without json's C speed-ups
_C_COMPACT = _C_MAKE and _C_MAKE(
    None, _COMPACT.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
)


def _compact(value: Any) -> str:
    """``value`` as ``_COMPACT.encode`` writes it."""
    if _C_COMPACT is None:
        return _COMPACT.encode(value)
    return "".join(_C_COMPACT(value, 0))


def _layout(value: Any, depth: int) -> str:
    """Indented for the first two levels (a key per line, then an item, a slot, a grid row
    per line), compact below: readable, and encoded by the C encoder (an indented
    ``json.dumps`` runs the pure-Python one, 3 s of a 324-task release)."""
    if depth >= 2 or not isinstance(value, dict | list) or not value:
        return _compact(value)
    pad = "\n" + " " * (depth + 1)
    if isinstance(value, dict):
        parts = [f"{_compact(str(k))}: {_layout(v, depth + 1)}" for k, v in value.items()]
        return "{" + pad + ("," + pad).join(parts) + "\n" + " " * depth + "}"
    parts = [_layout(v, depth + 1) for v in value]
    return "[" + pad + ("," + pad).join(parts) + "\n" + " " * depth + "]"


def dumps(record: dict[str, Any]) -> bytes:
    """``record`` as UTF-8 JSON bytes with a final newline (two levels indented)."""
    return (_layout(record, 0) + "\n").encode("utf-8")


def sha256(data: bytes) -> str:
    """The SHA-256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def software_versions() -> dict[str, str]:
    """The versions of Python and of each package in ``PACKAGES`` ("unknown" when missing)."""
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = package_metadata.version(package)
        except package_metadata.PackageNotFoundError:
            versions[package] = "unknown"
    return versions

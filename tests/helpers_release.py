"""Helpers for release tests: compose configs with Hydra, build small releases, tamper."""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, ListConfig

from gridbench_core.paths import CONF_DIR as CONF
from pipeline.config import register_configs
from tests import ROOT

register_configs()


def run_module(module: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` from the repository root, output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def compose_config(overrides: list[str], name: str = "config", folder: str = ""):
    """Hydra's composition of ``name`` (in ``conf/<folder>``) with ``overrides``. Tests compose
    the same configurations again and again, differing only in their temporary folders and in
    plain values (about 330 compositions of 38 structures, 23 s of the quick suite): each
    structure (the overrides that choose, add or delete config groups, or set Hydra's keys) is
    composed once by Hydra, and a copy of it gets the plain values set by Hydra's own step
    for them (:func:`_with_values`) and the test's folders back (stood in for while composing).
    A line with any other addition, deletion or dict value, and a composition that fails, is
    composed as given."""
    folders: list[str] = []

    def stand_in(match: re.Match[str]) -> str:
        if match.group(0) not in folders:
            folders.append(match.group(0))
        return f"{_STAND_IN}{folders.index(match.group(0))}__"

    shape = tuple(o if o.lstrip("+~").startswith("hydra") else _TEMPORARY.sub(stand_in, o) for o in overrides)
    try:
        config = _with_values(shape, name, folder)
    except Exception:
        return _compose(list(overrides), name, folder)
    if folders:
        _put_back(config, folders)
    return config


# a test's temporary folder (pytest's tmp_path and tmp_path_factory, with or without xdist)
_TEMPORARY = re.compile(
    re.escape(tempfile.gettempdir()) + r"/pytest-of-[^/]+/pytest-\d+/(?:popen-gw\d+/)?[^/,\]]+"
)
_STAND_IN = "/__gridbench_test_folder_"


def _compose(overrides: list[str], name: str, folder: str):
    with initialize_config_dir(config_dir=str(CONF / folder), version_base=None):
        return compose(config_name=name, overrides=overrides)


@functools.cache
def _composed(shape: tuple[str, ...], name: str, folder: str):
    return _compose(list(shape), name, folder)


def _with_values(shape: tuple[str, ...], name: str, folder: str):
    """The composition of ``shape``: Hydra composes its structure (cached), then sets its plain
    values on a copy, in their order, as Hydra's composition does after building the defaults
    list (``ConfigLoaderImpl._apply_overrides_to_config``, in struct mode: an unknown key or a
    wrong type raises, and the caller then composes the whole line)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(shape))
    is_plain = [_plain_value(p, folder) for p in parsed]
    plain = [p for p, flag in zip(parsed, is_plain, strict=True) if flag]
    structure = tuple(text for text, flag in zip(shape, is_plain, strict=True) if not flag)
    config = copy.deepcopy(_composed(structure, name, folder))
    ConfigLoaderImpl._apply_overrides_to_config(plain, config)
    return config


class _WholeLine(Exception):
    """A line whose config overrides are not all plain values: Hydra composes it whole."""


def _plain_value(override, folder: str) -> bool:
    """Whether ``override`` is a plain value Hydra sets after composing (True), or part of the
    structure (False: a config group choice, addition or deletion, as Hydra's defaults list
    tells them, by the whole key; a sweep; a key of Hydra's). Any other config override (an
    addition, a forced one, a deletion, a dict value) is applied by Hydra in the line's order
    among the plain values, so the line is composed whole (:class:`_WholeLine`)."""
    key = str(override.key_or_group)
    if (
        override.is_sweep_override()
        or override.package is not None
        or key.startswith("hydra")
        or "/" in key
        or (_is_group(folder, key) and not isinstance(override.value(), dict))
    ):
        return False
    value_like = override.is_add() or override.is_force_add() or override.is_delete()
    if value_like or isinstance(override.value(), dict):
        raise _WholeLine(override.input_line)
    return True


@functools.cache
def _is_group(folder: str, key: str) -> bool:
    """Whether ``key`` names a config group on the search path of ``conf/<folder>``."""
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_dir(config_dir=str(CONF / folder), version_base=None):
        return bool(GlobalHydra.instance().config_loader().repository.group_exists(key))


def _put_back(node, folders: list[str]) -> None:
    """Every string of the composed ``node`` with the stand-ins replaced by ``folders``."""
    keys = list(node.keys()) if isinstance(node, DictConfig) else range(len(node))
    for key in keys:
        child = node._get_node(key)
        if isinstance(child, (DictConfig, ListConfig)):
            _put_back(child, folders)
            continue
        value = child._value()
        if isinstance(value, str) and _STAND_IN in value:
            for number, path in enumerate(folders):
                value = value.replace(f"{_STAND_IN}{number}__", path)
            node[key] = value


def small_release_overrides(root: Path, name: str = "small", workers: int = 1) -> list[str]:
    return [
        "release.domains=[toy,course]",
        "grid=5x5",
        "grid.hidden_slots=[2,4]",
        "grid.decoy_budgets=[0,3]",
        "grid.candidates_per_slot=6",
        f"release.name={name}",
        f"release.output_root={root}",
        f"release.cache_root={root}/cache-{name}",
        f"release.workers={workers}",
    ]


def build_small(root: Path, name: str = "small", workers: int = 1) -> Path:
    from gridbench.commands.release import build

    cfg = compose_config(small_release_overrides(root, name, workers))
    assert build(cfg) == 0
    return root / f"{name}-v2.0.0"


def copy_release(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def redigest(release: Path, tables: bool = True) -> None:
    """Re-sign the release as a careful attacker would -- the data/ tables rebuilt from the
    JSON files (``tables``), the digests in metadata.parquet, then those of the manifest -- so
    that only the deeper checks and the proofs can catch an edit."""
    import polars as pl

    def digest(relative: str) -> str | None:
        path = release / relative
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None

    meta_path = release / "metadata.parquet"
    if meta_path.is_file():
        meta = pl.read_parquet(meta_path)
        meta = meta.with_columns(
            pl.Series(
                "task_sha256",
                [digest(f"tasks/{d}/{t}.json") for d, t in zip(meta["domain"], meta["task_id"], strict=True)],
            ),
            pl.Series(
                "answer_sha256",
                [
                    digest(f"answers/{d}/{t}.json")
                    for d, t in zip(meta["domain"], meta["task_id"], strict=True)
                ],
            ),
        )
        meta.write_parquet(meta_path)
    if tables:
        _rebuild_tables(release)
    manifest_path = release / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for relative in manifest["files"]:
        manifest["files"][relative] = digest(relative) or manifest["files"][relative]
    manifest_path.write_text(json.dumps(manifest))


def _rebuild_tables(release: Path) -> None:
    """Rewrite data/ from the JSON files where they still parse (an attack on the JSON that a
    table cannot hold leaves the tables as they were)."""
    from pipeline.storage.tables import ANSWER, table_bytes, task_type

    tasks: dict[str, list[dict]] = {}
    answers = []
    try:
        for path in sorted((release / "tasks").glob("*/*.json")):
            task = json.loads(path.read_text())
            tasks.setdefault(path.parent.name, []).append(task)
            answer = release / "answers" / path.parent.name / path.name
            if answer.is_file():
                answers.append(json.loads(answer.read_text()))
        built = {f"data/tasks/{d}.parquet": table_bytes(rows, task_type(d), d) for d, rows in tasks.items()}
        built["data/answers.parquet"] = table_bytes(answers, ANSWER, "answers")
    except Exception:
        return
    for relative, data in built.items():
        if (release / relative).is_file():
            (release / relative).write_bytes(data)


def rerender(task: dict) -> dict:
    """The task's instruction rendered again from its (edited) rules."""
    from domains import get_domain
    from gridbench_core.task_io import task_from_dict
    from pipeline.generation.instruction import write_instruction

    parsed = task_from_dict({**task, "instruction": ""})
    task["instruction"] = write_instruction(
        get_domain(parsed.domain),
        parsed.rows,
        parsed.cols,
        list(parsed.global_constraints),
        {(s.row, s.col): list(s.constraints) for s in parsed.slots},
    )
    return task


def task_with_decoys(release: Path) -> tuple[Path, Path]:
    for task_path in sorted((release / "tasks").rglob("*.json")):
        data = json.loads(task_path.read_text())
        if data["decoy_budget"] > 0:
            answer = release / "answers" / task_path.relative_to(release / "tasks")
            return task_path, answer
    raise AssertionError("no task with decoys")

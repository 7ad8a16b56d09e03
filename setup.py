"""Packaging hook (the metadata is in pyproject.toml): a built wheel carries copies of the
top-level ``conf/`` and ``schemas/`` in ``gridbench_core/_data/``, where
``gridbench_core.paths`` finds them, so an installed ``gridbench`` command works from any
folder. A checkout (and an editable install) reads the top-level folders themselves."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithData(build_py):
    """``build_py`` that also copies conf/ and schemas/ (links followed) into gridbench_core/_data/."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for name in ("conf", "schemas"):
            target = Path(self.build_lib) / "gridbench_core" / "_data" / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(
                ROOT / name, target, symlinks=False, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )


setup(cmdclass={"build_py": BuildWithData})

"""Where things are: the packaged configuration and schemas, and the default output folders.

Every default path of the project is defined here and nowhere else. The YAML files name them
through the ``path`` resolver (``release: ${path:release}``, registered by the commands), the
config dataclasses and the adapters import them.

``conf/`` and ``schemas/`` live at the top of a checkout; a built wheel carries copies in
``core/_data/`` (``setup.py`` copies them at build time), so an installed ``gridbench`` works
from any folder. Output folders are relative to the folder a command runs in.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import UserError

_HERE = Path(__file__).resolve().parent

OUTPUTS = Path("outputs")
RELEASES = OUTPUTS / "releases"  # make release / gridbench release
RUNS = OUTPUTS / "runs"  # make eval: runs/<release>/<run>
REPORTS = OUTPUTS / "reports"  # make report: reports/<release>
VIEWS = OUTPUTS / "views"  # make view: views/<release> (the results explorer)
CACHE = OUTPUTS / "cache"  # finished (H, B) sweep keys of a release build, reused by a rebuild
HYDRA = OUTPUTS / "hydra"  # Hydra's own run folders
DEFAULT_NAME = "gridbench-v2.0.0"  # conf/release/default.yaml's name and version (a test checks)
RELEASE = RELEASES / DEFAULT_NAME  # the release every command reads by default

DEFAULTS = {
    "outputs": OUTPUTS,
    "releases": RELEASES,
    "runs": RUNS,
    "reports": REPORTS,
    "views": VIEWS,
    "cache": CACHE,
    "hydra": HYDRA,
    "release": RELEASE,
    "release_runs": RUNS / DEFAULT_NAME,
}


def default(name: str) -> str:
    """The default path called ``name`` (a key of :data:`DEFAULTS`), as the YAML resolver
    ``${path:name}`` gives it."""
    if name not in DEFAULTS:
        raise UserError(f"${{path:{name}}}: no such default path; use one of {', '.join(DEFAULTS)}")
    return str(DEFAULTS[name])


def _data(name: str) -> Path:
    packaged = _HERE / "_data" / name
    if packaged.is_dir():
        return packaged
    return _HERE.parent / name


CONF_DIR = _data("conf")  # the Hydra configuration (conf/ of a checkout)
SCHEMA_DIR = _data("schemas")  # the JSON Schemas of tasks and answers (schemas/ of a checkout)


def require_data() -> None:
    """Raise one clear line when the configuration or the schemas are missing (a broken
    install), instead of Hydra's or a file read's traceback later."""
    for folder in (CONF_DIR, SCHEMA_DIR):
        if not folder.is_dir():
            raise UserError(
                f"{folder} is missing: this install of gridbench lacks its configuration; "
                "reinstall it (pip install --force-reinstall gridbench) or run from a checkout"
            )

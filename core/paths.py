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
DEFAULT_NAME = "gridbench-v2.0.0"  # conf/release/default.yaml's name and version (a test checks)
RELEASE = RELEASES / DEFAULT_NAME  # the release every command reads by default

DEFAULTS = {
    "outputs": OUTPUTS,
    "releases": RELEASES,
    "runs": RUNS,
    "reports": REPORTS,
    "views": VIEWS,
    "cache": CACHE,
    "release": RELEASE,
    "release_runs": RUNS / DEFAULT_NAME,
}


def default(name: str) -> str:
    """The default path called ``name`` (a key of :data:`DEFAULTS`), as the YAML resolver
    ``${path:name}`` gives it."""
    if name not in DEFAULTS:
        raise UserError(f"${{path:{name}}}: no such default path; use one of {', '.join(DEFAULTS)}")
    return str(DEFAULTS[name])


def _is_checkout(folder: Path) -> bool:
    """Whether ``folder`` is the checkout this code runs from (its ``pyproject.toml`` names
    the gridbench project), not merely a folder that holds our packages, such as
    ``site-packages`` (whose top-level ``conf/`` would be someone else's)."""
    project = folder / "pyproject.toml"
    try:
        with open(project, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b'\nname = "gridbench"\n' in head


def _data(name: str) -> Path:
    """``conf/`` or ``schemas/``: an installed wheel's own copy (``core/_data/``), else the
    top-level folder of the checkout this code runs from; never a folder of that name that
    merely sits beside the packages. A missing one is named by :func:`require_data`."""
    packaged = _HERE / "_data" / name
    if not (_HERE / "_data").exists() and _is_checkout(_HERE.parent):
        return _HERE.parent / name
    return packaged


CONF_DIR = _data("conf")  # the Hydra configuration (conf/ of a checkout)
SCHEMA_DIR = _data("schemas")  # the JSON Schemas of tasks and answers (schemas/ of a checkout)
# What every command needs of them: the configs of the commands, the groups they name by
# default, and the schemas (a wheel with some of these missing is a broken install)
REQUIRED_DATA = (
    "conf/config.yaml",
    "conf/release/default.yaml",
    "conf/grid/5x7.yaml",
    "conf/domain/course.yaml",
    "conf/solver/default.yaml",
    "conf/generation/default.yaml",
    "conf/agent/search.yaml",
    "conf/agent/llm.yaml",
    *(
        f"conf/apps/{name}.yaml"
        for name in ("audit", "evaluate", "hub", "import_agentce", "report", "train", "verify", "view")
    ),
    "schemas/task.schema.json",
    "schemas/answer.schema.json",
)


def require_data() -> None:
    """Raise one clear line when the configuration or the schemas are missing or damaged (a
    broken install), instead of Hydra's or a file read's traceback later."""
    import json

    import yaml

    folders = {"conf": CONF_DIR, "schemas": SCHEMA_DIR}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for relative in REQUIRED_DATA:
        folder, _, rest = relative.partition("/")
        path = folders[folder] / rest
        try:
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".json":
                json.loads(text)
            elif not isinstance(yaml.load(text, Loader=loader), dict):
                raise ValueError("not a mapping")
        except FileNotFoundError:
            problem = "is missing"
        except (OSError, ValueError, yaml.YAMLError) as error:
            problem = f"is damaged ({type(error).__name__})"
        else:
            continue
        raise UserError(
            f"{path} {problem}: this install of gridbench lacks its configuration; "
            "reinstall it (pip install --force-reinstall gridbench) or run from a checkout"
        )

"""Import OpenEnv's server package without its Gradio web interface, which this adapter never
serves: ``openenv.core.env_server`` imports ``web_interface`` (and with it ``gradio``, about
3 s of the 4.5 s the adapter took to import here) only to re-export two names, while
``create_app`` builds the web interface (``ENABLE_WEB_INTERFACE=true``) by importing it itself.

Imported for its effect, before any ``openenv`` import. If the package is already imported,
nothing changes. Otherwise it is imported with ``web_interface`` held back (its ``__init__``
catches the ``ModuleNotFoundError``, as it does where Gradio is missing) and the two names are
then served on first use (a module ``__getattr__``): ``create_web_interface_app`` and
``WebInterfaceManager`` of the package are OpenEnv's own, imported only when someone asks.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

PACKAGE = "openenv.core.env_server"
WEB = f"{PACKAGE}.web_interface"
NAMES = ("create_web_interface_app", "WebInterfaceManager")


def _import_without_web() -> None:
    if PACKAGE in sys.modules or WEB in sys.modules:
        return
    sys.modules[WEB] = None  # type: ignore[assignment]  # "import halted": ModuleNotFoundError
    try:
        package = importlib.import_module(PACKAGE)
    finally:
        if sys.modules.get(WEB, "") is None:
            del sys.modules[WEB]
    for name in NAMES:
        if package.__dict__.get(name, "") is None:
            del package.__dict__[name]

    def __getattr__(name: str) -> Any:
        if name in NAMES:
            return getattr(importlib.import_module(WEB), name)
        raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}")

    package.__dict__["__getattr__"] = __getattr__  # PEP 562: asked only for a name not in the package


_import_without_web()

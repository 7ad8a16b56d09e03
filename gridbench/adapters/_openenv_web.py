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
import importlib.abc
import sys
import threading
from typing import Any

PACKAGE = "openenv.core.env_server"
WEB = f"{PACKAGE}.web_interface"
NAMES = ("create_web_interface_app", "WebInterfaceManager")


class _HoldBack(importlib.abc.MetaPathFinder):
    """Refuses ``web_interface`` to the thread importing the package here, and only to it:
    another thread importing it meanwhile (OpenEnv's ``create_app`` with the web UI on) gets
    it as usual, where a ``None`` in ``sys.modules`` would have refused it too."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == WEB and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{WEB} held back by gridbench (imported on first use)", name=WEB)
        return None


def _import_without_web() -> None:
    if PACKAGE in sys.modules or WEB in sys.modules:
        return
    holdback = _HoldBack()
    sys.meta_path.insert(0, holdback)
    try:
        package = importlib.import_module(PACKAGE)
    finally:
        sys.meta_path.remove(holdback)
    for name in NAMES:
        if package.__dict__.get(name, "") is None:
            del package.__dict__[name]

    def __getattr__(name: str) -> Any:
        if name not in NAMES:
            raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(WEB), name)
        except ModuleNotFoundError:  # no Gradio: None, as OpenEnv's own import leaves them
            value = None
        package.__dict__[name] = value
        return value

    package.__dict__["__getattr__"] = __getattr__  # PEP 562: asked only for a name not in the package


_import_without_web()

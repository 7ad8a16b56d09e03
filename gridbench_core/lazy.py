"""Third-party modules loaded on first use, so that importing a layer costs nothing until its
solver or table library is needed (``import gridbench`` stays quick although it re-exports
names whose modules use OR-Tools or Arrow)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, executed when one of its attributes is first read (the standard
    library's ``LazyLoader``); an already imported module is returned as it is."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module

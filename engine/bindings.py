"""egglog's low-level bindings, loaded without the ``egglog`` package's high-level API.

``import egglog`` runs the package's ``__init__``, which builds the high-level Python API and
imports its pretty-printer and ``black`` (~250-400 ms of start-up). satfuse speaks only to the
compiled ``egglog.bindings`` extension, so that file is loaded directly; a process that already
imported egglog shares the same module object (it is registered as ``egglog.bindings``).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType


def load() -> ModuleType:
    mod = sys.modules.get("egglog.bindings")
    if mod is not None:
        return mod
    pkg = importlib.util.find_spec("egglog")  # finds the package without running its __init__
    if pkg is None or not pkg.submodule_search_locations:
        raise ImportError("satfuse needs egglog (pip install 'egglog>=13.2,<14')")
    for folder in pkg.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "bindings" + suffix)
            if os.path.exists(path):
                loader = importlib.machinery.ExtensionFileLoader("egglog.bindings", path)
                spec = importlib.util.spec_from_file_location("egglog.bindings", path, loader=loader)
                mod = importlib.util.module_from_spec(spec)
                loader.exec_module(mod)
                sys.modules["egglog.bindings"] = mod
                return mod
    from egglog import bindings  # an unusual install layout: take the ordinary route

    return bindings


bindings = load()

__all__ = ["bindings", "load"]

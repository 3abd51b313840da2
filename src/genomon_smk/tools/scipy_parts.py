"""scipy's functions from the modules that define them, without the packages' __init__."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types


def function(package: str, module: str, name: str, public_name: str | None = None):
    """``package.public_name`` (default: name), taken as ``name`` from ``package.module`` without
    running ``package/__init__.py`` when the package is not imported yet: the very object its
    public namespace re-exports, for less import time. scipy.special's and scipy.optimize's
    __init__ import much that our tools never call (the array-API layer, with numpy.f2py and
    numpy.testing; linprog, shgo, HiGHS): 0.14-0.19 CPU s of an identify job. Once the package
    itself is imported it finds the submodule already loaded. A scipy whose private module moved
    gives the public name (the pinned one is tested to give the same object)."""
    try:
        return getattr(_submodule(package, module), name)
    except (ImportError, AttributeError):
        return getattr(importlib.import_module(package), public_name or name)


def _submodule(package: str, name: str):
    module = f"{package}.{name}"
    if package in sys.modules or module in sys.modules:
        return importlib.import_module(module)
    spec = importlib.util.find_spec(package)
    bare = types.ModuleType(package)
    bare.__spec__, bare.__path__ = spec, list(spec.submodule_search_locations)
    sys.modules[package] = bare
    try:
        return importlib.import_module(module)
    finally:
        if sys.modules.get(package) is bare:
            del sys.modules[package]

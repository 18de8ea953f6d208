"""PyTensor's internals the package relies on: the folder of its numba cache.

PyTensor caches the numba functions it compiles in ``pytensor.link.numba.cache.NUMBA_CACHE_PATH``
(``base_compiledir/numba``), fixed when the module is imported; it has no setting for the folder alone.
:func:`use_numba_cache` points it at another folder (what
:func:`cogtestbed.inference.reproducible.unique_numba_symbols` needs: a folder whose every entry was
compiled with random function ids).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

#: The PyTensor version this shim was written against (``locks/test.txt``, ``locks/demo.txt``).
LOCKED = "2.38.2"


def _cache() -> Any:
    return importlib.import_module("pytensor.link.numba.cache")


def numba_cache() -> Path:
    """The folder PyTensor caches its numba functions in."""
    return Path(_cache().NUMBA_CACHE_PATH)


def use_numba_cache(folder: Path) -> None:
    """Cache PyTensor's numba functions compiled from here on in ``folder`` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    _cache().NUMBA_CACHE_PATH = folder


def problems() -> list[str]:
    """What no longer holds of the internals this shim relies on in the installed PyTensor ([] where all
    does): the locked version, ``NUMBA_CACHE_PATH`` a path the cache locator reads at every call."""
    import inspect

    import pytensor

    out = [] if pytensor.__version__ == LOCKED else [f"pytensor {pytensor.__version__} is installed; the shim is "
                                                     f"for {LOCKED}"]
    module = _cache()
    if not isinstance(getattr(module, "NUMBA_CACHE_PATH", None), Path):
        out.append("pytensor.link.numba.cache.NUMBA_CACHE_PATH is not a path")
    if "return NUMBA_CACHE_PATH" not in inspect.getsource(module):
        out.append("PyTensor's numba cache locator no longer reads NUMBA_CACHE_PATH")
    return out


__all__ = ["LOCKED", "numba_cache", "problems", "use_numba_cache"]

"""numba's internals the package relies on: the per-process counter of function ids.

numba names a compiled function's machine-code symbol after an id drawn from
``numba.core.bytecode.FunctionIdentity._unique_ids``, a per-process :class:`itertools.count` (1, 2, 3, …);
it has no public setting for it (numba report #10486).  :func:`cogtestbed.inference.reproducible.unique_numba_symbols`
replaces it with random ids through :func:`draw_ids_from`.  Everything else the package takes from numba
is public (a dispatcher's cache folder: ``dispatcher.stats.cache_path``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

#: The numba version this shim was written against (``locks/test.txt``, ``locks/demo.txt``).
LOCKED = "0.68.1"


def _identity() -> Any:
    from numba.core.bytecode import FunctionIdentity

    return FunctionIdentity


def counts_ids() -> bool:
    """Whether numba still numbers compiled functions with its per-process counter (1, 2, 3, …), i.e.
    :func:`draw_ids_from` has not replaced it in this process."""
    return isinstance(_identity()._unique_ids, itertools.count)


def draw_ids_from(draw: Callable[[], int]) -> None:
    """Give every numba function compiled from here on the id ``draw()`` returns (instead of the
    per-process counter); ``draw`` must never return None."""
    _identity()._unique_ids = iter(draw, None)


def problems() -> list[str]:
    """What no longer holds of the internals this shim relies on in the installed numba ([] where all
    does): the locked version, ``FunctionIdentity._unique_ids`` a counter read by
    ``FunctionIdentity.from_function`` through ``next(cls._unique_ids)``."""
    import inspect

    import numba

    out = [] if numba.__version__ == LOCKED else [f"numba {numba.__version__} is installed; the shim is for {LOCKED}"]
    identity = _identity()
    ids = identity.__dict__.get("_unique_ids")
    if not isinstance(ids, itertools.count | type(iter(int, None))):
        out.append(f"FunctionIdentity._unique_ids is a {type(ids).__name__}, not an id iterator")
    source = inspect.getsource(identity.from_function)
    if "next(cls._unique_ids)" not in source:
        out.append("FunctionIdentity.from_function no longer draws its id with next(cls._unique_ids)")
    return out


__all__ = ["LOCKED", "counts_ids", "draw_ids_from", "problems"]

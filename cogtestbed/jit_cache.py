"""Loading compiled kernels from numba's on-disk cache without setting up the compiler.

Before every load from its on-disk cache, numba refreshes its typing and lowering contexts
(``Cache.load_overload`` calls ``BaseContext.refresh``): it imports and registers every
implementation module numba has, and through ``numba.np.arraymath`` scipy.linalg's BLAS for
``np.dot``.  In a fresh process that is about 0.3–0.5 s of CPU, more than all the fits of a CogBench
file.  A function loaded from the cache needs none of it to run: its machine code is linked against
numba's C helpers (installed when the target context is built), the NRT memory manager and the
hash-secret symbols that ``numba.cpython.hashing`` injects when imported.

:func:`light_cache_loads` makes cache loads set up only those three.  The first real compilation
still refreshes both contexts itself (``CompilerBase.__init__``), so compiling is unchanged; so is
every loaded function, byte for byte.  It is process-wide (numba's dispatchers are), so it is the
command line's to call, like :func:`cogtestbed.heap.keep_freed_memory`; it does nothing where numba's
cache class lacks the methods it relies on (another numba release), where loads stay as they were.
"""

from __future__ import annotations

from typing import Any

#: Attributes of ``numba.core.caching.Cache`` the light load relies on.
_CACHE_API = ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")


def _light_load_overload(self: Any, sig: Any, target_context: Any) -> Any:
    """``Cache.load_overload`` with the NRT and hash symbols set up instead of a full context refresh."""
    import numba.cpython.hashing  # noqa: F401  (injects the _numba_hashsecret_* symbols on import)
    from numba.core.runtime import rtsys

    rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        return self._load_overload(sig, target_context)
    return None  # an I/O error swallowed by the guard: compile instead (numba's own behaviour)


def light_cache_loads() -> bool:
    """Make numba's cache loads skip the context refresh (see the module docstring).

    Returns whether the light load is in place.  Idempotent.
    """
    from numba.core import caching

    cache = caching.Cache
    if cache.load_overload is _light_load_overload:
        return True
    if not all(hasattr(cache, name) for name in _CACHE_API):
        return False
    cache.load_overload = _light_load_overload
    return True

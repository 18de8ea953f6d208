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
every loaded function, byte for byte.

Unpickling a loaded function's environments (``numba.core.environment._rebuild_env``) imports the
module each one was compiled in, for its globals: for numba's own implementation modules
(``numba.np.arraymath``, ``numba.np.arrayobj``, ...) that is another ~0.15 s of CPU in a fitting call.
Those globals are read only by object-mode code, which none of numba's implementations of nopython
functions is, so the light load gives an environment of a numba module not yet imported the module's
name alone (what ``Environment.__reduce__`` pickles again); the project's own modules, and any module
already imported, get their globals as before.  It is process-wide (numba's dispatchers are), so it is the
command line's to call, like :func:`cogtestbed.heap.keep_freed_memory`; it does nothing where numba's
cache class lacks the methods it relies on (another numba release), where loads stay as they were.

A loaded kernel that calls BLAS or LAPACK (``np.dot`` / ``@`` in the BFGS drivers) makes numba's C helpers
import ``scipy.linalg.cython_blas`` (``cython_lapack``) on its first call, for the function pointers those
modules export.  Importing them the usual way runs the ``scipy.linalg`` package first, all of it (and,
through scipy's array-API layer, ``numpy.f2py`` and ``numpy.testing``): about 0.25 s of CPU for two capsule
tables.  :func:`preload_scipy_blas` loads the two extension modules from their files under their own names
instead (0.01 s); the helpers find them in ``sys.modules`` and take the same functions of the same library,
so every result is unchanged.  ``import scipy.linalg`` later in the process works as before (its own Cython
modules import the preloaded ones by name); only the package's ``cython_blas`` attribute stays unset.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import Any

#: Attributes of ``numba.core.caching.Cache`` the light load relies on.
_CACHE_API = ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")

#: The Cython modules numba's C helpers take BLAS and LAPACK functions from (scipy's names).
SCIPY_BLAS_MODULES = ("scipy.linalg.cython_blas", "scipy.linalg.cython_lapack")

#: Modules whose environments are rebuilt without importing them (numba's nopython implementations).
_LIGHT_ENV_PREFIX = "numba."


def compiled_pays(size: int, minimum: int, dispatcher: Any) -> bool:
    """Whether a pass over ``size`` items takes the compiled ``dispatcher``: from ``minimum`` items
    (below it, loading the compiled code from the cache, tens of ms once per process, costs more than
    numpy spends), or at any size once the dispatcher is loaded."""
    return size >= minimum or bool(dispatcher.signatures)


def _light_rebuild_env(modname: str, consts: Any, env_name: str) -> Any:
    """``numba.core.environment._rebuild_env`` without importing a numba implementation module."""
    from numba.core import environment

    env = environment.lookup_environment(env_name)
    if env is not None:
        return env
    if not (modname or "").startswith(_LIGHT_ENV_PREFIX) or modname in sys.modules:
        return _FULL_REBUILD_ENV[0](modname, consts, env_name)
    env = environment.Environment({"__name__": modname})
    env.consts[:] = consts
    env.env_name = env_name
    environment.Environment._memo[env_name] = env
    return env


#: numba's own ``_rebuild_env``, kept when the light one replaces it.
_FULL_REBUILD_ENV: list[Any] = []
# ``Environment.__reduce__`` names whatever ``_rebuild_env`` the module holds: pickles (cache files
# written after a light load) keep naming numba's function, so any process reads them as before.
_light_rebuild_env.__module__ = "numba.core.environment"
_light_rebuild_env.__qualname__ = _light_rebuild_env.__name__ = "_rebuild_env"


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
    from numba.core import caching, environment

    cache = caching.Cache
    if cache.load_overload is _light_load_overload:
        return True
    if not all(hasattr(cache, name) for name in _CACHE_API) or not _env_api_present(environment):
        return False
    cache.load_overload = _light_load_overload
    _FULL_REBUILD_ENV.append(environment._rebuild_env)
    environment._rebuild_env = _light_rebuild_env
    preload_scipy_blas()
    return True


def preload_scipy_blas() -> bool:
    """Load :data:`SCIPY_BLAS_MODULES` from their files without the ``scipy.linalg`` package (see
    the module docstring); whether both are loaded.  Nothing changes where ``scipy.linalg`` is
    already imported, or where scipy's layout differs (a file not found, a module that fails to
    load): numba's helpers then import them the usual way."""
    if "scipy.linalg" in sys.modules:
        return all(name in sys.modules for name in SCIPY_BLAS_MODULES)
    spec = importlib.util.find_spec("scipy")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for name in SCIPY_BLAS_MODULES:
        if name not in sys.modules and not _load_extension(name, [Path(f, "linalg") for f in folders]):
            return False
    return True


def _load_extension(name: str, folders: list[Path]) -> bool:
    """Import the extension module ``name`` from the first of ``folders`` holding its file."""
    stem = name.rpartition(".")[2]
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = folder / f"{stem}{suffix}"
            if not path.is_file():
                continue
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                return False
            try:
                module = importlib.util.module_from_spec(spec)  # the library is loaded here
                sys.modules[name] = module
                spec.loader.exec_module(module)
            except Exception:  # noqa: BLE001 - left to the usual import, which reports it
                sys.modules.pop(name, None)
                return False
            return True
    return False


def _env_api_present(environment: Any) -> bool:
    """Whether numba's environment module has what :func:`_light_rebuild_env` relies on."""
    env = getattr(environment, "Environment", None)
    return all(hasattr(environment, name) for name in ("_rebuild_env", "lookup_environment")) and hasattr(
        env, "_memo")

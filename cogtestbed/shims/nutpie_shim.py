"""nutpie's internals the package relies on (issue 73): its progress kinds off notebooks, the shapes its
compilation fixes, and a compiled model's coordinates.

``nutpie.sample`` reports progress through a template callback only inside a notebook; on a terminal
it draws its own indicatif bar, and it has no public parameter for a callback there.
:func:`template_progress` makes the terminal's bar a template callback while a block runs, by
standing in for ``nutpie.sample._lib`` (the compiled extension the sampler builds its progress kind
from: ``_lib.ProgressType.indicatif(rate)`` becomes ``_lib.ProgressType.template_callback(rate,
template, cores, callback)``); the sampling itself is untouched.  :func:`stored_shapes`: the shapes
``nutpie.compile_pymc._compute_shapes`` fixes in a compilation (what a compiled model may be reused
for); :func:`with_coords`: a compiled model with other coordinates (its ``_coords`` field: ``with_data``
re-points the data but keeps the coordinates of the model it was compiled from).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import Any

#: The nutpie version this shim was written against (``locks/test.txt``, ``locks/demo.txt``).
LOCKED = "0.16.8"


@contextlib.contextmanager
def template_progress(template: str, cores: int, callback: Callable[[str], None]) -> Iterator[None]:
    """While the block runs, nutpie's terminal progress bar is replaced by ``callback(formatted)``,
    called with ``template`` rendered (nutpie's template language) every progress interval."""
    module: Any = importlib.import_module("nutpie.sample")
    real = module._lib
    kinds = real.ProgressType

    class _Kinds:
        none = kinds.none
        template_callback = kinds.template_callback

        @staticmethod
        def indicatif(rate: int) -> Any:
            return kinds.template_callback(rate, template, cores, callback)

    class _Lib:
        ProgressType = _Kinds

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    module._lib = _Lib()
    try:
        yield
    finally:
        module._lib = real


def stored_shapes(pm_model: Any) -> dict[str, Any] | None:
    """The shapes nutpie's compilation computes and fixes for ``pm_model``'s stored variables (name → shape);
    None where the installed nutpie has no such function."""
    try:
        from nutpie.compile_pymc import _compute_shapes
    except ImportError:  # pragma: no cover - another nutpie
        return None
    return dict(_compute_shapes(pm_model))


def with_coords(compiled: Any, coords: dict[str, Any]) -> Any:
    """``compiled`` (a nutpie compiled PyMC model, a dataclass) with the coordinates ``coords``."""
    import dataclasses

    return dataclasses.replace(compiled, _coords=coords)


def problems() -> list[str]:
    """What no longer holds of the internals this shim relies on in the installed nutpie ([] where all
    does): the locked version, ``nutpie.sample._lib.ProgressType`` with ``none``, ``indicatif`` and
    ``template_callback``, and the sampler building its terminal bar from ``_lib.ProgressType.indicatif``."""
    import inspect

    import nutpie

    module: Any = importlib.import_module("nutpie.sample")
    version = getattr(nutpie, "__version__", None)
    out = [] if version == LOCKED else [f"nutpie {version} is installed; the shim is for {LOCKED}"]
    kinds = getattr(getattr(module, "_lib", None), "ProgressType", None)
    out += [f"nutpie.sample._lib.ProgressType has no {name}" for name in ("none", "indicatif", "template_callback")
            if not hasattr(kinds, name)]
    sampler = getattr(module, "_BackgroundSampler", None)
    source = inspect.getsource(sampler) if sampler is not None else ""
    if "_lib.ProgressType.indicatif(progress_rate)" not in source:
        out.append("nutpie's sampler no longer builds its terminal bar from _lib.ProgressType.indicatif")
    compile_pymc: Any = importlib.import_module("nutpie.compile_pymc")
    if not callable(getattr(compile_pymc, "_compute_shapes", None)):
        out.append("nutpie.compile_pymc has no _compute_shapes")
    import dataclasses

    model_cls = getattr(compile_pymc, "CompiledPyMCModel", None)
    if model_cls is None or "_coords" not in {f.name for f in dataclasses.fields(model_cls)}:
        out.append("nutpie's CompiledPyMCModel has no _coords field")
    return out


__all__ = ["LOCKED", "problems", "stored_shapes", "template_progress", "with_coords"]

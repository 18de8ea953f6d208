"""Samplers as registered kinds: what :func:`~cogtestbed.inference.hierarchical.fit_hierarchical`
dispatches to by name, each with its provenance.

A :class:`SamplerKind` names a sampler, the distribution that implements it (its provenance: name and
version, and for the package's own sampler the commit of the checkout where there is one) and three
functions: ``setup(job)`` (a compiled model, a sampler's steps: whatever one fit's runs share),
``sample(job, state, draws, progress)`` (one run: an ArviZ ``InferenceData``) and, optionally,
``prepare(model, trials, hierarchical)`` (the model the sampler needs, before PyMC builds it).  The
kinds live in one :class:`~cogtestbed.plugins.Registry` (``SAMPLERS`` of
:mod:`~cogtestbed.inference.hierarchical_sampling`): the package's own (``nutpie``, ``pymc``, ``gibbs``:
experimental), the ``cogtestbed.samplers`` entry points of other distributions, and those registered in
the process; nothing branches on a sampler's name.  Every posterior a kind makes carries
:meth:`SamplerKind.provenance` in its ``attrs`` (and its ``posterior`` group's).
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogtestbed.plugins import named_instance

#: The entry-point group through which other distributions register samplers.
ENTRY_POINT_GROUP = "cogtestbed.samplers"


@dataclass(frozen=True)
class SamplingJob:
    """One fit's sampling problem: the PyMC model (built), the model object it came from, the table and
    the sampler settings every run of the fit shares."""

    pm_model: Any
    model: Any
    trials: Any
    hierarchical: bool
    tune: int
    chains: int
    seed: int
    cores: int
    target_accept: float
    progressbar: bool


def _never(_state: Any) -> bool:
    return False


@dataclass(frozen=True)
class SamplerKind:
    """A sampler ``fit_hierarchical(..., sampler=name)`` can run (module docstring).

    ``library``: the distribution implementing it (its version is the provenance); ``available()``:
    whether it can run here; ``compiled(state)``: whether ``setup`` found its compilation cached (the
    progress estimate); ``experimental``: not the default anywhere, kept only by a measured decision.
    ``sample`` returns the whole run or raises: a sampler that answers Ctrl-C by returning its draws so far (as
    nutpie's and PyMC's own ``sample`` do) must raise :class:`KeyboardInterrupt` instead, or the fit reports part
    of a run as its posterior (the package's samplers: ``hierarchical_sampling._wait``, ``_whole_run``)."""

    name: str
    description: str
    library: str
    setup: Callable[[SamplingJob], Any]
    sample: Callable[[SamplingJob, Any, int, Any], Any]
    prepare: Callable[[Any, Any, bool], Any] | None = None
    available: Callable[[], bool] = lambda: True
    compiled: Callable[[Any], bool] = _never
    experimental: bool = False

    def provenance(self) -> dict[str, str]:
        """``sampler``, ``sampler_library``, ``sampler_version`` (the installed version; with the commit of
        the checkout where the library is this package run from git) and ``sampler_experimental``."""
        out = {"sampler": self.name, "sampler_library": self.library, "sampler_version": _version(self.library),
               "sampler_experimental": str(self.experimental).lower()}
        commit = _commit() if self.library == "cogtestbed" else None
        if commit:
            out["sampler_commit"] = commit
        return out


def _version(library: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(library)
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def _commit() -> str | None:
    """The git commit of the checkout this package runs from (None: not a checkout, or no git)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,  # noqa: S607
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


#: A loaded entry point (or registered value) checked: a :class:`SamplerKind` named as registered.
as_sampler = named_instance("sampler", SamplerKind)


def provenance_of(idata: Any) -> dict[str, str]:
    """The sampler provenance :func:`stamp` wrote into ``idata`` ({} where none was written)."""
    return {k: str(v) for k, v in getattr(idata, "attrs", {}).items() if str(k).startswith("sampler")}


def stamp(idata: Any, kind: SamplerKind) -> Any:
    """Write ``kind``'s provenance into ``idata``'s attrs and its posterior group's; returns ``idata``."""
    prov = kind.provenance()
    idata.attrs.update(prov)
    if "posterior" in idata.groups():
        idata.posterior.attrs.update(prov)
    return idata


__all__ = ["ENTRY_POINT_GROUP", "SamplerKind", "SamplingJob", "as_sampler", "provenance_of", "stamp"]

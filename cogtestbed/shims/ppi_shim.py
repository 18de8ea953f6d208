"""ppi_py's internals the package relies on: the PPI correlation its power analysis uses.

``ppi_py.ppi_power_analysis._get_ppi_corr`` is the correlation between labels and predictions that
:func:`ppi_py.ppi_power` sizes a design from (Pearson's r, capped below 1); ppi_py has no public function for
it, and the mix plan (:mod:`cogtestbed.planning.kinds.mix.mix`) prints the same figure the power analysis uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The ppi-python version this shim was written against (the one in ``locks/*.txt``).
LOCKED = "0.2.3"


def ppi_correlation(labels: np.ndarray, predicted: np.ndarray) -> float:
    """ppi_py's PPI correlation of paired ``labels`` and ``predicted`` values (both centred on the labels' mean)."""
    from ppi_py.ppi_power_analysis import _get_ppi_corr

    centre = float(np.mean(labels))
    return float(_get_ppi_corr(labels - centre, predicted - centre, np.eye(1)))


def problems() -> list[str]:
    """What no longer holds of the internal this shim relies on in the installed ppi_py ([] where all does)."""
    from importlib import metadata

    from ppi_py import ppi_power_analysis

    version = metadata.version("ppi-python")
    out = [] if version == LOCKED else [f"ppi-python {version} is installed; the shim is for {LOCKED}"]
    corr: Any = getattr(ppi_power_analysis, "_get_ppi_corr", None)
    if corr is None:
        out.append("ppi_py.ppi_power_analysis has no _get_ppi_corr")
    return out


__all__ = ["LOCKED", "ppi_correlation", "problems"]

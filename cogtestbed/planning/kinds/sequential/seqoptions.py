"""The options of a sequential plan, checked before anything heavy is imported (a refused ``--looks`` request in
well under a second, from a cold command line): the number of looks (:data:`MAX_LOOKS`) and the spending
function's name (``obrien-fleming``, ``pocock`` or ``hsd:γ``, :func:`hsd_gamma`).  The spending functions
themselves are in :mod:`~cogtestbed.planning.kinds.sequential.sequential`.

Imports nothing heavy.
"""

from __future__ import annotations

import math

from cogtestbed.errors import InputError

#: A spending function's name: ``obrien-fleming``, ``pocock`` or ``hsd:γ`` (Hwang–Shih–DeCani, |γ| ≤ 40).
Spending = str
SPENDING_FUNCTIONS: tuple[str, ...] = ("obrien-fleming", "pocock", "hsd:GAMMA")
#: Largest |γ| of a Hwang–Shih–DeCani spending function (beyond it e^{−γ} over- or underflows usefully).
HSD_GAMMA_MAX = 40.0


def hsd_gamma(spending: str) -> float | None:
    """γ of a ``hsd:γ`` name (None for another family); a malformed γ raises ValueError (one line)."""
    if not isinstance(spending, str) or not spending.startswith("hsd:"):
        return None
    try:
        gamma = float(spending[4:])
    except ValueError:
        raise InputError(f"a Hwang-Shih-DeCani spending function is hsd:GAMMA with a number GAMMA, got {spending!r}")\
            from None
    if not (math.isfinite(gamma) and abs(gamma) <= HSD_GAMMA_MAX):
        raise InputError(f"the gamma of {spending!r} must be a number from -{HSD_GAMMA_MAX:g} to {HSD_GAMMA_MAX:g}")
    return gamma


def check_spending(spending: str) -> str:
    """``spending`` if it names a spending function, else ValueError (one line)."""
    if spending in ("obrien-fleming", "pocock") or hsd_gamma(spending) is not None:
        return spending
    raise InputError(f"`spending` must be one of {', '.join(SPENDING_FUNCTIONS)}, got {spending!r}")


#: Most looks a plan may take.
MAX_LOOKS = 20


def check_looks(looks: int, spending: str) -> None:
    """Refuse a look count or spending function the design cannot use (one line)."""
    if not 2 <= looks <= MAX_LOOKS:
        raise InputError(f"`looks` must be an integer from 2 to {MAX_LOOKS} (a sequential design looks at least "
                         f"twice), got {looks}")
    check_spending(spending)

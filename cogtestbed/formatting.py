"""Numbers and designs written for people: what every table, verdict and progress line prints.

* counts as integers (``9000``, never ``9e+03``);
* other numbers to 3 significant digits in plain notation (``0.0123``, ``2416``), scientific only
  below 1e-3 or from 1e6 on;
* a rate estimated from ``n`` simulations with its 95 % Wilson interval (``0.14 [0.10, 0.19]``),
  which stays informative at 0 and 1 where a binomial SE is 0 (``0 [0, 0.018]``, never ``± 0.000``);
* a design by its fields (``40 contexts × 5 repetitions``).

Pure Python (no numpy): the command line formats with it before importing anything numerical.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

#: z of the two-sided 95 % interval around a simulated rate.
Z95 = 1.959963984540054
#: Plain notation is used for magnitudes in [PLAIN_LOW, PLAIN_HIGH).
PLAIN_LOW, PLAIN_HIGH = 1e-3, 1e6


def num(x: Any, digits: int = 3) -> str:
    """``x`` for a person: an integer as an integer, a float to ``digits`` significant digits, a
    missing or non-finite value as ``n/a``, a mapping or list item by item (never a raw dict)."""
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, Mapping):
        return ", ".join(f"{k} {num(v, digits)}" for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return ", ".join(num(v, digits) for v in x)
    if isinstance(x, int) or type(x).__name__.startswith(("int", "uint")):
        return str(int(x))
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not math.isfinite(f):
        return "n/a" if math.isnan(f) else ("inf" if f > 0 else "-inf")
    if f == 0:
        return "0"
    mag = abs(f)
    if not PLAIN_LOW <= mag < PLAIN_HIGH:
        return f"{f:.{digits - 1}e}"
    decimals = max(0, digits - 1 - math.floor(math.log10(mag)))
    text = f"{f:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def count(x: Any) -> str:
    """A count (subjects, trials, calls) as an integer; ``n/a`` when missing."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return str(int(round(float(x))))


def wilson(hits: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial rate ``hits / n`` (``(0, 1)`` when ``n`` is 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if hits <= 0 else lo), (1.0 if hits >= n else hi)


def rate_text(rate: float | None, sims: int | None) -> str:
    """A simulated rate with its Monte-Carlo SE √(p(1−p)/sims) and 95 % Wilson interval:
    ``0.14 ± 0.025 MC SE [0.10, 0.19] (200 sims)``; at a rate of 0 or 1 (where that SE is 0) the
    interval alone: ``0 [0, 0.019] (200 sims)``."""
    if rate is None or sims is None or sims <= 0 or not math.isfinite(float(rate)):
        return "n/a (no simulations)"
    p = float(rate)
    lo, hi = wilson(p * sims, int(sims))
    se = f" ± {num(math.sqrt(p * (1 - p) / sims), 2)} MC SE" if 0 < p < 1 else ""
    return f"{num(rate)}{se} [{num(lo, 2)}, {num(hi, 2)}] ({sims} sims)"


#: How a design field is named in a label (plural noun); fields not listed are written ``name=value``.
FIELD_NOUNS = {
    "n_contexts": "contexts", "n_reps": "repetitions", "trials_per_session": "trials per session",
    "visits_per_casino": "visits per casino", "balloons_per_type": "balloons per type", "n_days": "days",
    "n_trials": "trials", "subjects": "subjects", "runs": "runs", "n_subjects": "subjects",
}


def field_text(name: str, value: Any) -> str:
    """One design field for a label: ``40 contexts`` for a known count, else ``name=value``."""
    noun = FIELD_NOUNS.get(name)
    if noun is None:
        return f"{name}={num(value) if isinstance(value, (int, float)) else value}"
    if value == 1 and noun.endswith("s") and " " not in noun:
        noun = {"repetitions": "repetition", "runs": "run", "subjects": "subject", "contexts": "context",
                "days": "day", "trials": "trial"}.get(noun, noun)
    elif value == 1 and noun.startswith(("trials per", "visits per", "balloons per")):
        noun = re.sub(r"^(\w+)s ", r"\1 ", noun)
    return f"{count(value)} {noun}"


def design_text(fields: Mapping[str, Any]) -> str:
    """A design named by its fields, joined by ``×``: ``40 contexts × 5 repetitions, 1 run``.

    ``subjects`` and ``runs`` (the study's units, not design fields) follow after a comma."""
    design = [field_text(k, v) for k, v in fields.items() if k not in ("subjects", "runs", "n_subjects")]
    units = [field_text(k, v) for k, v in fields.items() if k in ("subjects", "n_subjects", "runs")]
    return ", ".join(p for p in (" × ".join(design), ", ".join(units)) if p)


__all__ = ["count", "design_text", "field_text", "num", "rate_text", "wilson"]


def chosen_design_phrase(evaluated: list[dict[str, Any]]) -> str:
    """How a plan names its choice: "cheapest design" among several designs evaluated, "the one
    design tried" where it evaluated only one (nothing was compared, so nothing is cheapest)."""
    designs = {str(row.get("design")) for row in evaluated}
    return "the one design tried" if len(designs) <= 1 else "cheapest design"

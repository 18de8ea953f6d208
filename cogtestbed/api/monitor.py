"""The anytime-valid monitor on a user's own values: ``ct.monitor`` (the e-process and confidence sequence a
monitored ``run`` records, :mod:`cogtestbed.runs.monitor_run`, on any per-subject values)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogtestbed.api.checks import public
from cogtestbed.errors import InputError

__all__ = ["MonitorPath", "monitor"]


@dataclass(frozen=True)
class MonitorPath:
    """Every step of a monitor: ``steps`` (one dict a subject: ``subject``, ``observation``, ``e_value``,
    ``lower``, ``upper``, ``estimate``, ``decision``), where it ``stop``-ped (the 1-based subject of the first
    ``efficacy`` or ``futility`` decision; None: it would go on) and why (``decision``), and the last confidence
    sequence ``interval`` (None where empty).

    Attributes
    ----------
    steps : list of dict
        Every step's e-value, confidence sequence, estimate and decision.
    stop : int, optional
        The step that stopped (None: none).
    decision : str
        ``efficacy``, ``futility`` or ``continue``.
    interval : (float, float), optional
        The last confidence interval.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> path = ct.monitor([0.6, 0.5, 0.7, 0.6, 0.55, 0.65, 0.6, 0.7], bounds=(-0.2, 1.0))
    >>> path.decision, len(path.steps)
    ('efficacy', 7)
    """

    steps: list[dict[str, Any]]
    stop: int | None
    decision: str
    interval: tuple[float, float] | None

    @property
    def e_values(self) -> list[float]:
        """The e-value after each subject (``K_t``; the null is rejected once it reaches ``1 / level``)."""
        return [s["e_value"] for s in self.steps]

    def table(self) -> Any:
        """The steps as a pandas DataFrame, one row a subject."""
        import pandas as pd

        return pd.DataFrame(self.steps)


@public(paths=("plan",))
def monitor(values: Sequence[float | None], bounds: tuple[float, float] | None = None, level: float = 0.05,
            bet: float | None = None, halfwidth: float = 0.0, symmetry_scale: float | None = None,
            cap: int | None = None, outside: str = "stop", null_interval: tuple[float, float] | None = None,
            plan: str | os.PathLike[str] | None = None) -> MonitorPath:
    """Monitor per-subject values with the betting e-process and its confidence sequence, as a monitored run
    does (Waudby-Smith & Ramdas 2023; :mod:`cogtestbed.planning.kinds.monitor.eprocess`).

    Parameters
    ----------
    values : sequence of float or None
        Each subject's statistic in the order the subjects came, less its null value (None: a subject
        without an estimate, skipped).
    bounds : (float, float), optional
        The range every value lies in (``lo < 0 < hi``); the e-process is valid only on bounded values.
        Required unless ``plan`` gives it.
    level : float
        The type-I error α: the null is rejected once the e-value reaches ``1 / level``, at any look.
    bet : float, optional
        A constant bet fixed before the data (a plan's Kelly bet, on the rescaled scale), mixed with the
        adaptive hedged bets; None: the hedged bets only.
    halfwidth : float
        The null is the interval ``0 ± halfwidth`` of means (0: the mean 0).
    symmetry_scale : float, optional
        Test symmetry about 0 of ``clip(value / symmetry_scale, -1, 1)`` instead of the mean (a pair of
        exchangeable LLMs' differences).
    cap : int, optional
        The most subjects: ``futility`` there without a rejection (None: no cap).
    outside : {"stop", "clip"}
        A value outside ``bounds``: refused (``stop``) or clipped to them (``clip``).
    null_interval : (float, float), optional
        The null is this interval ``[a, b]`` of means (a composite null, e.g. a per-subject MLE's null means
        over a nuisance region), instead of ``0 ± halfwidth``.
    plan : path, optional
        A ``plan.json`` of ``cogtestbed plan --monitor`` (or its folder): its checked monitor's bounds, level,
        bet, null, scale, cap and ``outside``, instead of the arguments above.

    Returns
    -------
    MonitorPath
        Every step's e-value, confidence sequence, estimate and decision; the ``stop`` and the last
        ``interval``.

    Raises
    ------
    InputError
        Bad bounds, level, bet, null or cap (before anything is computed), a value outside the bounds with
        ``outside="stop"``, or a plan without a monitor or edited after it was planned.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> path = ct.monitor([0.6, 0.5, 0.7, 0.6, 0.55, 0.65, 0.6, 0.7], bounds=(-0.2, 1.0))
    >>> path.stop, path.decision
    (7, 'efficacy')
    >>> [round(e, 1) for e in path.e_values]
    [1.2, 1.7, 2.7, 4.6, 7.8, 14.7, 27.5]
    >>> [round(x, 2) for x in path.interval]
    [0.1, 1.0]
    """
    from cogtestbed.runs.monitor_run import steps as monitor_steps

    if plan is not None:
        from cogtestbed.planning.plan_report import load_plan

        design = load_plan(Path(plan)).get("monitor")
        if design is None:
            raise InputError(f"monitor(): plan {plan} has no monitor to run (write one with a monitor plan)")
    else:
        design = _given_design(len(values), bounds, level, bet, halfwidth, symmetry_scale, cap, outside,
                               null_interval)
    observed = [math.nan if v is None else float(v) for v in values]
    rows = monitor_steps(design, observed) if observed else []
    if cap is None and plan is None:  # no cap: only a rejection stops
        rows = [{**r, "decision": "continue" if r["decision"] == "futility" else r["decision"]} for r in rows]
    stop = next((r["subject"] for r in rows if r["decision"] != "continue"), None)
    if stop is not None:
        rows = rows[:stop]
    last = rows[-1] if rows else None
    interval = None if last is None or last["lower"] is None else (last["lower"], last["upper"])
    return MonitorPath(rows, stop, "continue" if stop is None else rows[-1]["decision"], interval)


def _given_design(n: int, bounds: tuple[float, float] | None, level: float, bet: float | None, halfwidth: float,
                  symmetry_scale: float | None, cap: int | None, outside: str,
                  null_interval: tuple[float, float] | None) -> dict[str, Any]:
    """:func:`monitor`'s design from its arguments (no plan), sealed and checked as a plan's is."""
    from cogtestbed.planning.kinds.monitor.monitor_file import checked_monitor, sealed

    if bounds is None:
        raise InputError("monitor(): bounds are required without a plan (the range every value lies in)")
    center = 0.0
    if null_interval is not None:
        from cogtestbed.planning.kinds.monitor.monitor_composite import center_width

        center, halfwidth = center_width(null_interval)
    return checked_monitor(sealed({"bounds": list(bounds), "level": level, "planned_bet": bet,
                                   "halfwidth": halfwidth, "symmetry_scale": symmetry_scale, "null_center": center,
                                   "null_interval": None if null_interval is None else list(null_interval),
                                   "cap": cap if cap is not None else max(n, 1), "outside": outside}), "monitor()")

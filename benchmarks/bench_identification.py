"""Per-subject cost of a fit's flag and intervals, before and after the lazy profile (issue 68).

Every subject of each family is fitted once; then, alternating on the same subject, it is judged

* ``eager``: the baseline — every parameter's interval (two Brent root findings each) and then the
  flag from them, as every identified fit did before (``identification.py`` at ``--baseline``,
  loaded from git);
* ``flag``: :class:`~cogtestbed.inference.identification.SubjectProfile`'s flag alone (the profile at
  the ends of each range; an interval only for a flagged parameter's reason): what a fit that
  shows no interval (``fit_identified(intervals=False)``) pays;
* ``intervals``: the flag and every interval from one lazy profile (``fit_identified()``'s rows).

It prints, per family, the median CPU milliseconds per subject of the fit and of each way, the
profile fits each runs, whether the flags and reasons equal the eager ones (exactly: ``equal``) and
how far the interval ends lie from the eager ones (``ends``: the largest distance, in root-finding
tolerances, ``PROFILE_XTOL`` of the search range; issue 72 finds the inside of an interval from the
local quadratic model, :mod:`cogtestbed.inference.profile_root`).  CPU time (``time.process_time``):
the machine may be loaded; the load average is printed with it.

    python benchmarks/bench_identification.py [--subjects 6] [--baseline b537d09] [--only TEXT]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

from cogtestbed.inference import identification
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

ROOT = Path(__file__).resolve().parents[1]
DISSONANT = {"tau": 0.9, "beta_first": 2.0, "beta_label": 1.0, "beta_anchor": 0.5, "kappa": 8.0, "theta": 3.0,
             "beta_pos": 0.5, "noise": 0.02}
#: family: (experiment, model, agent, true parameters or None for the agent's defaults)
FAMILIES: dict[str, tuple[str, str, str, dict[str, float] | None]] = {
    "RW± (96 trials)": ("instrumental-learning", "rw-pm", "rw-pm", {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 5.0}),
    "hyperbolic (staircase)": ("temporal-discounting", "hyperbolic", "hyperbolic",
                               {"k": float(np.exp(-3.0)), "temperature": 0.05}),
    "prospect theory (98 trials)": ("risky-choice", "prospect-theory", "prospect-theory",
                                    {"lambda": 1.5, "alpha": 0.8, "theta": 1.0}),
    "revealed-belief dissonant (10 parameters)": ("revealed-belief", "dissonant", "dissonant", DISSONANT),
}


def baseline_module(rev: str) -> types.ModuleType:
    """``cogtestbed/inference/identification.py`` as it was at git revision ``rev``."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:cogtestbed/inference/identification.py"],
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType("identification_baseline")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"identification.py@{rev}", "exec"), module.__dict__)
    return module


class Counted:
    """Counts the profile fits a way runs (wraps ``profile_nll`` of a module)."""

    def __init__(self, module: types.ModuleType) -> None:
        self.n, self.module, self.inner = 0, module, module.profile_nll
        module.profile_nll = self

    def __call__(self, *args: Any, **kw: Any) -> Any:
        self.n += 1
        return self.inner(*args, **kw)


def eager(base: types.ModuleType, model: Any, data: Any, fit: Any) -> tuple[Any, dict[str, tuple[float, float]]]:
    ivs = base.profile_intervals(model, data, fit)
    return base.unidentified_reason(model, data, fit, intervals=ivs), {k: (v.lower, v.upper) for k, v in ivs.items()}


LAZY_FITS = {"n": 0}


def lazy(model: Any, data: Any, fit: Any, with_intervals: bool) -> tuple[Any, dict[str, tuple[float, float]]]:
    prof = identification.SubjectProfile(model, data, fit)
    ivs = prof.intervals() if with_intervals else {}
    reason = identification.unidentified_reason(model, data, fit, profile=prof)
    LAZY_FITS["n"] += prof.profile_fits  # the local fits of issue 72 run no profile_nll
    return reason, {k: (v.lower, v.upper) for k, v in ivs.items()}


def distance(model: Any, got: dict[str, tuple[float, float]], want: dict[str, tuple[float, float]]) -> float:
    """The largest distance of an interval end from the eager one, in root-finding tolerances
    (``PROFILE_XTOL`` of the search range, on the search scale)."""
    worst = 0.0
    for p in model.parameters:
        ends = p.search_bounds()
        xtol = identification.PROFILE_XTOL * (ends[1] - ends[0])
        for a, b in zip(got[p.name], want[p.name], strict=True):
            ca, cb = (min(max(p.to_search(max(v, p.lower)), ends[0]), ends[1]) for v in (a, b))
            worst = max(worst, abs(ca - cb) / xtol)
    return worst


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    t0 = time.process_time()
    out = fn(*args)
    return 1000 * (time.process_time() - t0), out


def family(name: str, base: types.ModuleType, n: int, seed: int) -> None:
    experiment, model_name, agent, params = FAMILIES[name]
    model = get_experiment(experiment).model(model_name)
    trials = simulate(experiment, agent, n + 1, seed, params=params)
    data = model.subject_data(trials)
    keys = list(data)
    warm = model.fit_subject(data[keys[0]])  # compile the kernels and drivers
    eager(base, model, data[keys[0]], warm)
    lazy(model, data[keys[0]], warm, True)
    old_count = Counted(base)
    ms: dict[str, list[float]] = {"fit": [], "eager": [], "flag": [], "intervals": []}
    fits: dict[str, list[int]] = {"eager": [], "flag": [], "intervals": []}
    same, flagged, worst = True, 0, 0.0
    for i, key in enumerate(keys[1:]):
        t, fit = timed(model.fit_subject, data[key])
        ms["fit"].append(t)
        ways = ["eager", "flag", "intervals"] if i % 2 == 0 else ["intervals", "flag", "eager"]  # alternate
        got = {}
        for way in ways:
            counter = old_count.__dict__ if way == "eager" else LAZY_FITS
            before = counter["n"]
            if way == "eager":
                t, got[way] = timed(eager, base, model, data[key], fit)
            else:
                t, got[way] = timed(lazy, model, data[key], fit, way == "intervals")
            ms[way].append(t)
            fits[way].append(counter["n"] - before)
        same &= got["eager"][0] == got["intervals"][0] == got["flag"][0]
        worst = max(worst, distance(model, got["intervals"][1], got["eager"][1]))
        flagged += got["eager"][0] is not None
    med = {k: statistics.median(v) for k, v in ms.items()}
    print(f"{name:<44}{n:>4}{med['fit']:>9.0f}{med['eager']:>11.0f}{med['intervals']:>11.0f}{med['flag']:>9.0f}"
          f"{statistics.mean(fits['eager']):>9.1f}{statistics.mean(fits['intervals']):>9.1f}"
          f"{statistics.mean(fits['flag']):>7.1f}{flagged:>6}{'yes' if same else 'NO':>7}{worst:>7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subjects", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", default="b537d09", help="git revision of the eager identification.py")
    parser.add_argument("--only", default="", help="only the families whose name contains this text")
    args = parser.parse_args()
    base = baseline_module(args.baseline)
    print(f"load average {os.getloadavg()[0]:.1f} (CPU ms per subject, medians; profile fits per subject, means)")
    print(f"{'family':<44}{'n':>4}{'fit ms':>9}{'eager ms':>11}{'lazy all':>11}{'flag ms':>9}"
          f"{'eager #':>9}{'all #':>9}{'flag #':>7}{'flags':>6}{'equal':>7}{'ends':>7}")
    for name in FAMILIES:
        if args.only in name:
            family(name, base, args.subjects, args.seed)


if __name__ == "__main__":
    main()

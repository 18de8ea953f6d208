"""The monitor validated on every experiment's declared plan questions ("for every experiment's
declared plan questions, ≥ 2,000 simulated null studies looked at after every subject").

A declared plan question is a study an experiment declares (:attr:`ExperimentSpec.studies
<cogtestbed.experiments.spec.ExperimentSpec.studies>`) of kind ``power`` (a model parameter's effect: one LLM,
and with ``groups=2`` the difference between two LLMs) or ``metric-power`` (a metric difference between two
agent settings: two LLMs).  :func:`declared_questions` reads them through the contracts, not a hand list, and
says of each which property the monitor's validity needs and whether the declaration gives it (a statistic
bounded by the parameters' declared range; per-unit metric values, whose pair differences are symmetric under
exchangeability) — a question without it is reported with its reason, not simulated.

:func:`validate_question` sizes and measures a question from simulated pools alone (no planner search, no
pricing): a *pilot* pool under the effect gives the fixed size's normal approximation and with it the longest
study; the *choosing* pools fix the fixed t-test's size (the smallest reaching the target power on their
studies), the monitor's rule and cap and the group-sequential design; the *measuring* pools, of other seed
streams, give every figure reported (:mod:`~cogtestbed.planning.kinds.monitor.monitor_pools`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

#: Units per pilot pool (under the effect only): the fixed size's normal approximation.
PILOT_UNITS = 60
#: A question whose fixed design needs more units than this is reported, not simulated (its pools would cost
#: ``3 · 30 · units`` simulated units per hypothesis).
MAX_UNITS = 120
#: The shortest study simulated: a bet of at most 1.99× per unit reaches 1/α = 20 only after 5 units.
MIN_LENGTH = 12


@dataclass(frozen=True)
class Question:
    """One declared plan question: its name (``experiment kind[:i] (groups)``), the study (None where the
    monitor cannot be valid for it) and the property its validity needs or the reason it is not monitored."""

    name: str
    spec: Any
    needs: str


def declared_questions(exp: Any, groups: tuple[int, ...] = (1,)) -> list[Question]:
    """``exp``'s declared ``power`` (each of ``groups``: 1, one LLM; 2, two LLMs) and ``metric-power`` studies as
    monitor questions (see the module docstring)."""
    from cogtestbed.errors import InputError
    from cogtestbed.planning.kinds.monitor.monitor_kind import statistic_bounds
    from cogtestbed.studies.driver import declared_studies, spec_from_decl
    from cogtestbed.studies.model_studies import effect_scale

    out: list[Question] = []
    for name, decl in declared_studies(exp):
        if decl.kind == "metric-power" and decl.compare is not None:
            spec: Any = spec_from_decl(exp, decl, reps=1)
            how = exp.metrics.comparability(spec.metric)
            label = f"{exp.name} {name}: {spec.metric} between two LLMs"
            if how.test == "z":
                out.append(Question(label, None, "not monitored: one pooled estimate with a standard error per "
                                                 "LLM, no per-unit values to look at"))
            else:
                out.append(Question(label, spec, "exchangeability of the two LLMs' units under the null (pair "
                                                 "differences symmetric about 0)"))
        elif decl.kind == "power" and decl.parameter is not None:
            for g in groups:
                spec = spec_from_decl(exp, decl, reps=1, groups=g)  # a PowerStudy
                label = f"{exp.name} {name}: {spec.models[0]} {spec.effect} {spec.effect_size:g}, " + \
                    ("one LLM" if g == 1 else "between two LLMs")
                model = exp.model(spec.models[0])
                try:
                    lo, hi = statistic_bounds(model, spec.effect, effect_scale(model, spec.effect))
                except InputError as exc:
                    out.append(Question(label, None, f"not monitored: {exc}"))
                    continue
                needs = (f"every estimate in [{lo:g}, {hi:g}] (declared bounds) and its null mean in the null "
                         "interval (the declared nuisance region's, else the simulated bias)" if g == 1
                         else "exchangeability of the two LLMs' subjects under the null")
                out.append(Question(label, spec, needs))
    return out


def validate_question(spec: Any, power: float = 0.8, sims: int = 2000, seed: int = 0,
                      max_units: int = MAX_UNITS, pool_factor: int | None = None) -> dict[str, Any]:
    """The three designs of one question measured on simulated pools (see the module docstring; a one-LLM
    question with a declared nuisance region tests its composite null, simulated to three times the size of the
    fixed test valid for it): the monitor section
    (:func:`~cogtestbed.planning.kinds.monitor.monitor_kind.designs_on_pools`) with the fixed t-test at its chosen size
    (``fixed``), CPU seconds and the units simulated; a question whose fixed size exceeds
    ``max_units`` (by the pilot's normal approximation) gives ``{"reason"}`` instead.  ``pool_factor``: each
    measuring sub-pool holds this many longest studies (default the plan's ``POOL_FACTOR``; more: a smaller MC
    error of every fresh figure, the studies of a sub-pool sharing fewer units)."""
    import numpy as np
    from scipy import stats

    from cogtestbed.planning.kinds.monitor.monitor_composite import composite_null, has_region
    from cogtestbed.planning.kinds.monitor.monitor_gs import fixed_size, prefix_table
    from cogtestbed.planning.kinds.monitor.monitor_kind import MAX_FACTOR, designs_on_pools, valid_fixed_guess
    from cogtestbed.planning.kinds.monitor.monitor_pools import BATCHES, POOL_FACTOR, choose_size, draw_pools, studies
    from cogtestbed.planning.kinds.sequential.seqplan import direction

    start = time.process_time()
    metric = getattr(spec, "metric", None) is not None
    trials, runs = spec.trials[0], 1 if metric else int(spec.runs[0])
    pilot = draw_pools(spec, trials, runs, PILOT_UNITS, seed, "pilot", null=False).effect
    pilot = pilot[np.isfinite(pilot)]
    z = float(stats.norm.isf(spec.level / 2) + stats.norm.ppf(power))
    mean, sd = float(np.mean(pilot)), float(np.std(pilot, ddof=1))
    guess = math.ceil((z * sd / abs(mean)) ** 2) + 2 if mean != 0 else math.inf
    if not guess <= max_units:
        return {"reason": f"the fixed design needs about {guess} units (pilot mean {mean:+.3g}, SD {sd:.3g}): more "
                          f"than {max_units}, not simulated", "cpu_s": time.process_time() - start}
    composite = None
    if not metric and spec.groups == 1 and has_region(spec):  # the null over the declared nuisance region
        composite = composite_null(spec, trials, runs, seed)
        guess = max(guess, math.ceil(valid_fixed_guess(spec, trials, runs, seed, composite, power)))
    factor = POOL_FACTOR if pool_factor is None else int(pool_factor)
    choose_n = choose_size(BATCHES * POOL_FACTOR * max(MIN_LENGTH, math.ceil(MAX_FACTOR * guess)))
    choose = draw_pools(spec, trials, runs, choose_n, seed, "choose")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 7_475]))
    top = min(choose_n, max_units)  # the fixed size is searched on studies as long as the choosing pool allows
    if composite is None:
        n_fix, reached = fixed_size(prefix_table(studies(choose.effect, sims, top, rng, batches=1)[0]), top,
                                    spec.level, power, direction(spec))
    else:  # the fixed test valid for the composite null: one-sided against the interval's end on the effect's side
        dirn = direction(spec) or 1.0
        end = composite["interval"][1 if dirn > 0 else 0]
        top = min(choose_n, math.ceil(MAX_FACTOR * guess))
        n_fix, reached = fixed_size(prefix_table(dirn * (studies(choose.effect, sims, top, rng, batches=1)[0] - end)),
                                    top, 2 * spec.level, power, 1.0)
    length = min(choose_n, max(MIN_LENGTH, math.ceil(MAX_FACTOR * (n_fix if composite is None else guess))))
    pool_n = BATCHES * factor * length
    measure = draw_pools(spec, trials, runs, pool_n, seed, "measure")
    out = designs_on_pools(spec, choose, measure, n_fix, length, power, sims, seed, composite=composite)
    units = (PILOT_UNITS + 2 * (choose_n + pool_n)) * (2 if metric or spec.groups == 2 else 1)
    return {**out, "fixed": {**out["fixed_measured"], "reached": reached}, "pilot_guess": guess, "trials": trials,
            "runs": runs, "pool_factor": factor, "simulated_units": units, "cpu_s": time.process_time() - start}


__all__ = ["MAX_UNITS", "MIN_LENGTH", "PILOT_UNITS", "Question", "declared_questions", "validate_question"]

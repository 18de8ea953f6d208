"""``plan --fit hierarchical``: the chosen design re-measured with the hierarchical fit the researcher reports.

A hierarchical fit (PyMC through nutpie, :func:`cogtestbed.inference.hierarchical.fit_hierarchical`)
of one simulated study takes seconds to minutes where a per-subject MLE takes milliseconds, so the
plan does **not** search designs with it: the design is chosen with the per-subject MLE's t-test
(simulated on hundreds of studies per design), then ``sims`` (default :data:`HIERARCHICAL_SIMS`)
fresh studies at the chosen design (seeds of their own: ``seed +`` :data:`FIT_SEED_OFFSET`) are
simulated exactly as the power study simulates them and fitted hierarchically, as
``cogtestbed fit MODEL RUN/trials.parquet --method hierarchical`` fits a run.  The study's test is the
power study's hierarchical test (:func:`cogtestbed.validation.studies.model_studies.task_power`): the
effect's contrast of the population-level parameters, rejected when its central (1 − α) posterior
interval excludes 0.  Measured: that test's power, the bias of the posterior median against the
effect it estimates (the contrast at the population medians, :func:`population_effect`) and the
interval's coverage of it, each with its Monte-Carlo SE: a verification of one design, not a search
(20 studies give the power to ± 0.09 at 0.8).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.validation.studies.study_kinds import PlannedStudy, PowerStudy

#: Fitters ``plan --fit`` knows: the per-subject MLE (the search's, default) and the hierarchical model.
FIT_METHODS = ("mle", "hierarchical")
#: Fresh studies ``plan --fit hierarchical`` fits at the chosen design by default (each a PyMC fit).
HIERARCHICAL_SIMS = 20
#: Added to the study's seed for the hierarchical verification's studies (seeds neither the search
#: nor the recovery's fresh studies used).
FIT_SEED_OFFSET = 9_999_991
#: Posterior draws, tuning steps and chains of each verification fit (the plan's study defaults;
#: the run's own ``cogtestbed fit --method hierarchical`` defaults to more).
FIT_DRAWS, FIT_TUNE, FIT_CHAINS = 500, 500, 2


def check_fit(fit: str, spec: PlannedStudy, looks: int | str | None, sims: int | None) -> None:
    """Refuse a fitter ``plan`` cannot plan with (one line)."""
    if fit not in FIT_METHODS:
        raise InputError(f"--fit must be one of {', '.join(FIT_METHODS)}, got {fit!r}")
    if sims is not None and fit != "hierarchical":
        raise InputError("--fit-sims sets how many studies --fit hierarchical fits: add --fit hierarchical "
                         "(or drop it)")
    if sims is not None and sims < 2:
        raise InputError(f"--fit-sims must be at least 2 (a power and a bias need several studies), got {sims}")
    if fit == "mle":
        return
    if not isinstance(spec, PowerStudy):
        raise InputError("--fit hierarchical plans a model target's fit: it goes with --model and --effect (a metric "
                         "or test target fits no model)")
    if looks is not None:
        raise InputError("--fit hierarchical verifies a fixed design; a sequential plan's looks test per-subject MLEs "
                         "(drop --looks or --fit hierarchical)")


def population_effect(spec: PowerStudy, model: Any) -> float:
    """The effect at the population medians the power study simulates (the estimand of the
    hierarchical test's population contrast)."""
    from cogtestbed.validation.studies.model_studies import population_medians

    assert spec.effect is not None
    medians = population_medians(spec, model)
    return float(np.asarray(model.contrast(spec.effect, {k: np.array([v]) for k, v in medians.items()}))[0])


def verify_hierarchical(spec: PowerStudy, exp: Any, point: Any, sims: int = HIERARCHICAL_SIMS,
                        workers: int = 1) -> dict[str, Any]:
    """``sims`` fresh studies at ``point`` fitted hierarchically: the hierarchical test's power, its
    estimate's bias and its interval's coverage, each with its MC SE (``plan.json``'s ``fit_check``)."""
    from cogtestbed.validation.design.plan import PowerEvaluator

    start = time.perf_counter()
    hier = spec.model_copy(update={"method": "hierarchical", "seed": spec.seed + FIT_SEED_OFFSET,
                                   "draws": FIT_DRAWS, "tune": FIT_TUNE, "chains": FIT_CHAINS})
    evaluator = PowerEvaluator(hier, workers, "fit check: hierarchical fits of fresh studies at")
    est = evaluator.ensure_and_close(point, sims)
    rows = evaluator.table(point)
    return summarise(rows, est.hits, est.sims, population_effect(spec, exp.model(spec.models[0])), spec.level,
                     spec.effect_size, time.perf_counter() - start)


def summarise(rows: Any, hits: int, n: int, estimand: float, level: float, effect_size: float,
              seconds: float) -> dict[str, Any]:
    """The verification's figures from its studies' rows (estimate, lo, hi per study)."""
    est = rows["estimate"].to_numpy(float)
    ok = np.isfinite(est)
    power = hits / n if n else float("nan")
    bias = float(np.mean(est[ok]) - estimand) if ok.any() else None
    bias_se = float(np.std(est[ok], ddof=1) / math.sqrt(ok.sum())) if ok.sum() > 1 else None
    has = rows["lo"].notna() & rows["hi"].notna()
    covered = ((rows["lo"] <= estimand) & (estimand <= rows["hi"]))[has]
    cov = float(covered.mean()) if has.any() else None
    return {"fit": "hierarchical", "test": str(rows["test"].iloc[0]) if len(rows) else None, "studies": int(n),
            "power": power, "power_mc_se": math.sqrt(power * (1 - power) / n) if n else None,
            "estimand": estimand, "estimand_kind": "the effect at the population medians",
            "effect_bias": bias, "effect_bias_mc_se": bias_se,
            "bias_share": None if bias is None or not effect_size else abs(bias) / abs(effect_size),
            "coverage": cov, "coverage_mc_se": None if cov is None else math.sqrt(cov * (1 - cov) / int(has.sum())),
            "coverage_level": 1 - level, "draws": FIT_DRAWS, "tune": FIT_TUNE, "chains": FIT_CHAINS,
            "seconds": round(seconds, 2),
            "note": (f"a verification of the chosen design, not a search: the design was chosen with the per-subject "
                     f"MLE's t-test; {n} fresh studies at it were fitted hierarchically (each a PyMC fit, "
                     f"{FIT_CHAINS} chains x {FIT_DRAWS} draws) and the population effect's {1 - level:.0%} posterior "
                     "interval tested")}


def fit_check_lines(check: dict[str, Any]) -> list[str]:
    """The verification in lines for the terminal and report.md."""
    from cogtestbed.formatting import num

    se = check.get("power_mc_se")
    power = f"{check['power']:.2f} ± {se:.2f} (MC SE)" if se is not None else f"{check['power']:.2f}"
    bias = "no estimate" if check.get("effect_bias") is None else (
        f"{num(check['effect_bias'])} ± {num(check.get('effect_bias_mc_se') or float('nan'))} against "
        f"{num(check['estimand'])}")
    cov = "-" if check.get("coverage") is None else (f"{check['coverage']:.2f} ± {check['coverage_mc_se']:.2f} "
                                                     f"(nominal {check['coverage_level']:.2f})")
    return [f"hierarchical fit at this design (--fit hierarchical, {check['studies']} fresh studies): power {power}, "
            f"effect bias {bias}, interval coverage {cov}", f"  {check['note']}"]

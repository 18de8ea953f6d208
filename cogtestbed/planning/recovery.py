"""Recovery at a plan's chosen design: fresh studies (seeds no power simulation used) that score the
per-subject recovery of the parameters (r, bias, RMSE), the effect's bias and the coverage of its
interval against the population mean of the effect (the t-test's estimand).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.no_data import pearson_r
from cogtestbed.planning.space import Point
from cogtestbed.studies.study_data import design_for_trials
from cogtestbed.studies.study_kinds import MetricPowerStudy, PlannedStudy, PowerStudy

#: Draws of the simulated population used to compute the population mean of the effect (the
#: estimand of the t-test of a model-level power study) for the coverage of its interval.
ESTIMAND_DRAWS = 100_000

#: Data sets simulated at the chosen design to score per-subject recovery (r, bias, RMSE).
RECOVERY_REPS = 4


# ----------------------------------------------------------------------------- recovery at the design
def recovery_at(spec: PlannedStudy, exp: ExperimentSpec, point: Point, power_rows: pd.DataFrame) -> dict[str, Any]:
    """How well the chosen design recovers what the target is about.

    Model level: per-subject true vs MLE of every parameter and of the effect (r, bias, RMSE) over
    :data:`RECOVERY_REPS` data sets simulated as the power study simulates them, plus the bias of the
    effect's estimate and the coverage of its (1 − level) t-interval across ``power_rows`` (the plan
    passes fresh studies at the design, not those that chose it: :meth:`Planner.fresh_table`),
    both against the population mean of the effect (the t-test's estimand, from
    :data:`ESTIMAND_DRAWS` simulated subjects).  Metric level: mean and SD of the estimated
    difference.  Test level: rejection rate and median p-value.
    """
    if isinstance(spec, PowerStudy):
        return _model_recovery(spec, exp, point, power_rows)
    if isinstance(spec, MetricPowerStudy):
        d = power_rows["difference"].to_numpy(float)
        return {"metric": spec.metric, "mean_difference": float(np.nanmean(d)),
                "sd_difference": float(np.nanstd(d, ddof=1)) if d.size > 1 else float("nan"),
                "mean_a": float(power_rows["estimate_a"].mean()), "mean_b": float(power_rows["estimate_b"].mean())}
    return {"test": spec.test, "rejection_rate": float(power_rows["rejected"].mean()),
            "median_p": float(power_rows["p_value"].median())}


def _model_recovery(spec: PowerStudy, exp: ExperimentSpec, point: Point, rows: pd.DataFrame) -> dict[str, Any]:
    """The model level of :func:`recovery`: per-parameter (and effect) recovery over
    :data:`RECOVERY_REPS` simulated data sets, and the effect's bias and interval coverage across the
    fresh studies ``rows`` against the estimand (:func:`effect_estimand`)."""
    from cogtestbed.studies.model_studies import power_parameters

    assert spec.effect is not None
    model = exp.model(spec.models[0])
    design = design_for_trials(exp, point.trials, point.design(spec.design))
    root = np.random.SeedSequence([spec.seed, 1_000_003])
    pop_seq, *seqs = root.spawn(1 + RECOVERY_REPS)
    population = power_parameters(spec, model, ESTIMAND_DRAWS, np.random.default_rng(pop_seq), each=True)
    estimand = effect_estimand(spec, model, population, pop_seq)
    true_all, est_all = _recovery_draws(spec, exp, model, point, design, seqs)
    per = _parameter_recovery(spec, model, true_all, est_all)
    covered = (rows["lo"] <= estimand) & (estimand <= rows["hi"])
    has = rows["lo"].notna() & rows["hi"].notna()
    two = {"effect_on_test_scale": estimand} if spec.groups == 2 else {}  # the bias's yardstick
    return {"effect": spec.effect, "estimand": estimand, "effect_size": spec.effect_size, **two,
            **test_and_scale(spec, model),
            "effect_bias": float(rows["estimate"].mean() - estimand),
            "effect_bias_mc_se": float(rows["estimate"].std(ddof=1) / math.sqrt(len(rows))) if len(rows) > 1
            else None, "studies": int(len(rows)), "lapse_fit": spec.lapse_fit,
            "random_lapses": spec.lapse is not None and float(spec.lapse.random) > 0,
            "coverage": float(covered[has].mean()) if has.any() else float("nan"),
            "coverage_level": 1 - spec.level, "interval": str(rows["test"].iloc[0]),
            "subjects_scored": int(true_all[model.parameters.names[0]].size), "parameters": per}


def test_and_scale(spec: PowerStudy, model: Any) -> dict[str, str]:
    """Which test a model-level power study runs (``test_name``: Welch's t-test, or the Brunner–Munzel
    rank test where the model declares the parameter rank-tested; a one-sample t-test for one group)
    and the scale of its estimand (``estimand_scale``: the test's scale, :func:`~cogtestbed.studies.
    model_studies.effect_scale`, against the effect as asked on the parameter's own scale)."""
    from cogtestbed.studies.model_studies import effect_scale, two_group_test

    assert spec.effect is not None
    what = f"log {spec.effect}" if effect_scale(model, spec.effect) == "log" else spec.effect
    if spec.groups == 2:
        rank = two_group_test(model, spec.effect) == "rank"
        name = "Brunner-Munzel rank test" if rank else "Welch t-test"
        scale = f"the difference of the groups' mean {what} (the test's scale)"
        if rank:  # the rank test's own estimate is a shift of ranks' scale, not a difference of means
            scale = (f"the difference of the groups' mean {what} (the estimand; the rank test tests "
                     f"P(second > first) = 1/2 and estimates the Hodges-Lehmann shift of {what})")
    else:
        name, scale = "one-sample t-test", f"the mean shift of {what} (the test's scale)"
    return {"test_name": name, "estimand_scale": f"{scale}; the effect asked: {spec.effect} {spec.effect_size:+g}"
                                                 " on its own scale"}


def _recovery_draws(spec: PowerStudy, exp: ExperimentSpec, model: Any, point: Point, design: Any,
                    seqs: Sequence[np.random.SeedSequence]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(true, MLE) values of every model parameter, one entry per simulated subject over the data sets
    (one per seed of ``seqs``) simulated at ``point`` (with its ``design``) as the power study simulates
    them and fitted as its test fits them (``--lapse-fit`` included); each subject's estimate aligned
    with its truth."""
    from cogtestbed.studies.model_studies import power_parameters
    from cogtestbed.studies.study_data import fitted_model, seed_of, simulate_model

    true_parts, est_parts = [], []
    for seq in seqs:
        param_seq, sim_seq = seq.spawn(2)
        true = power_parameters(spec, model, point.subjects, np.random.default_rng(param_seq))
        trials = simulate_model(spec, exp, model.name, true, point.subjects, seed_of(sim_seq), design, point.runs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits = fitted_model(spec, model).fit_mle(trials)  # the fit the plan's test uses (--lapse-fit)
        order = {s: i for i, s in enumerate(sorted(trials["subject"].unique()))}
        idx = np.array([order[s] for s in fits["subject"]])
        true_parts.append({p: np.asarray(v)[idx] for p, v in true.items()})
        est_parts.append({p: fits[p].to_numpy(float) for p in model.parameters.names})
    true_all = {p: np.concatenate([t[p] for t in true_parts]) for p in model.parameters.names}
    est_all = {p: np.concatenate([e[p] for e in est_parts]) for p in model.parameters.names}
    return true_all, est_all


def _parameter_recovery(spec: PowerStudy, model: Any, true_all: Mapping[str, np.ndarray],
                        est_all: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """r, bias and RMSE (:func:`_r_bias_rmse`) of every free parameter and of the effect (a contrast of
    the parameters when it is none of them); a log-scaled parameter scored as ``log NAME``."""
    assert spec.effect is not None
    names = [*model.parameters.names, spec.effect] if spec.effect not in model.parameters.names else \
        list(model.parameters.names)
    per: dict[str, Any] = {}
    for name in names:
        if name in model.parameters.names:
            t, e = true_all[name], est_all[name]
        else:
            t = np.asarray(model.contrast(name, true_all), float)
            e = np.asarray(model.contrast(name, est_all), float)
        if name in spec.fixed:
            continue
        if name in model.parameters.names and model.parameters[name].transform == "log":
            t, e = np.log(t), np.log(e)  # multiplicative errors (β) are scored on the log scale
            name = f"log {name}"
        per[name] = _r_bias_rmse(t, e)
    return per


def effect_estimand(spec: PowerStudy, model: Any, population: Mapping[str, np.ndarray],
                    seq: np.random.SeedSequence) -> float:
    """What the power study's test estimates, from a large simulated ``population`` (the shifted
    group): its mean on the test's scale
    (:func:`~cogtestbed.studies.model_studies.effect_scale`) minus, for one group, its
    value before the effect (:func:`~cogtestbed.studies.model_studies.one_sample_null`),
    for two groups the first group's (simulated at the base medians, or the fixed reference
    sample's mean)."""
    from cogtestbed.studies.model_studies import effect_scale, on_scale, one_sample_null, power_parameters

    assert spec.effect is not None
    scale = effect_scale(model, spec.effect)
    shifted = float(np.mean(on_scale(model.contrast(spec.effect, population), scale)))
    if spec.groups == 1:
        return shifted - one_sample_null(spec, model)
    if spec.reference is not None:
        return shifted - float(np.nanmean(spec.reference.values))
    base = power_parameters(spec.model_copy(update={"effect_size": 0.0}), model, ESTIMAND_DRAWS,
                            np.random.default_rng(seq.spawn(1)[0]), each=True)
    return shifted - float(np.mean(on_scale(model.contrast(spec.effect, base), scale)))


def _r_bias_rmse(true: np.ndarray, est: np.ndarray) -> dict[str, float]:
    ok = np.isfinite(true) & np.isfinite(est)
    t, e = true[ok], est[ok]
    r = pearson_r(t, e).or_nan()  # NaN (null in JSON) where undefined: no variation, under 3 pairs
    err = e - t
    return {"r": r, "bias": float(err.mean()) if err.size else float("nan"),
            "rmse": float(np.sqrt((err ** 2).mean())) if err.size else float("nan")}

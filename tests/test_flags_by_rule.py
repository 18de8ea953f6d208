"""Identification flags by rule (:mod:`cogtestbed.inference.identification`): whether an interval is
open at an end of its range is the profile compared with the χ² cut :data:`OPEN_END_TOL` inside that
end, not where a root search stopped; an interval open at one finite bound (an estimate on it
included) is flagged one-sided and counted by the summaries."""

from __future__ import annotations

import numpy as np
import pytest

import cogtestbed as ct
from cogtestbed.inference.identification import ONE_SIDED, UNBOUNDED, at_bound
from cogtestbed.inference.summary import mle_summary
from cogtestbed.registry import experiment_names, get_experiment


def _prior_population(experiment: str, model_name: str, n: int, seed: int, **kw: object) -> tuple[object, object]:
    model = get_experiment(experiment).model(model_name)
    rng = np.random.default_rng(seed)
    params = {p.name: [float(p.inside(p.to_constrained(rng.normal(p.prior_mean, p.prior_sd)))) for _ in range(n)]
              for p in model.parameters}
    return model, ct.simulate(experiment, model_name, subjects=n, seed=seed, params=params, **kw)


def _covered_share(lo: np.ndarray, hi: np.ndarray, lower: float, upper: float) -> np.ndarray:
    return (np.minimum(hi, upper) - np.maximum(lo, lower)) / (upper - lower)


def test_no_unflagged_rw_pm_subject_has_an_interval_covering_99_percent_of_a_bounded_range() -> None:
    model, trials = _prior_population("instrumental-learning", "rw-pm", 24, seed=5)
    fits = model.fit_identified(trials)
    bounded = [p for p in model.parameters if np.isfinite(p.upper - p.lower)]
    assert bounded
    wide = np.zeros(len(fits), bool)
    for p in bounded:
        wide |= _covered_share(fits[f"{p.name}_lo95"].to_numpy(float), fits[f"{p.name}_hi95"].to_numpy(float),
                               p.lower, p.upper) >= 0.99
    assert wide.any()  # the population has such subjects
    assert not (wide & fits["identified"].to_numpy(bool)).any()
    # and the summary counts each kind of flag
    summary = mle_summary(fits, list(model.parameters.names), model.parameters)
    kinds = summary["flag_reasons"]
    assert sum(kinds.values()) == int((~fits["identified"]).sum())
    assert set(kinds) <= {UNBOUNDED, ONE_SIDED, "fit failed"}


def test_an_estimate_on_a_declared_bound_is_one_sided_not_identified() -> None:
    model = get_experiment("instrumental-learning").model("rw-pm")
    trials = ct.simulate("instrumental-learning", "rw-pm", subjects=6, seed=2,
                         params={"alpha_pos": 1.0, "alpha_neg": 0.3, "beta": 8.0})
    fits = model.fit_identified(trials)
    p = model.parameters["alpha_pos"]
    on = at_bound(fits["alpha_pos"].to_numpy(float), p)
    assert on.any()
    assert not fits.loc[on, "identified"].any()
    reasons = fits.loc[on, "null_reason"].astype(str)
    assert reasons.str.startswith(ONE_SIDED).any() or reasons.str.startswith(UNBOUNDED).all()
    one_sided = fits["null_reason"].astype(str).str.startswith(ONE_SIDED)
    assert (fits.loc[one_sided, "alpha_pos_hi95"] == 1.0).all() or (fits.loc[one_sided, "alpha_pos_lo95"] == 0.0).any()


def _matrix_cases() -> list[tuple[str, str]]:
    return [(e, m) for e in experiment_names() for m in get_experiment(e).models]


@pytest.mark.slow
@pytest.mark.parametrize(("experiment", "model_name"), _matrix_cases())
def test_across_the_matrix_no_unit_on_a_declared_bound_is_marked_identified(experiment: str, model_name: str) -> None:
    exp = get_experiment(experiment)
    model = exp.model(model_name)
    rng = np.random.default_rng(0)
    names = list(model.parameters.names)
    # every parameter at a bound for half the subjects, prior draws for the rest
    params = {p.name: [float(p.upper if np.isfinite(p.upper) else p.lower) if i % 2 == 0
                       else float(p.inside(p.to_constrained(rng.normal(p.prior_mean, p.prior_sd)))) for i in range(6)]
              for p in model.parameters}
    agent = model_name if model_name in exp.agents else next(iter(exp.agents))
    try:
        trials = ct.simulate(experiment, agent, subjects=6, seed=1,
                             params=params if agent == model_name else None)
    except ct.InputError:
        pytest.skip("no agent simulates this model's parameters")
    fits = model.fit_identified(trials, intervals=False)
    fitted = fits[fits[names].notna().all(axis=1)]
    for p in model.parameters:
        on = at_bound(fitted[p.name].to_numpy(float), p)
        assert not fitted.loc[on, "identified"].any(), (p.name, fitted.loc[on, [p.name, "null_reason"]])


def test_on_the_rw_pm_power_plan_population_no_wide_interval_is_unflagged_no_bound_estimate_identified() -> None:
    """The population the RW± power plan simulates (medians at the defaults moved by optimism bias 0.2, subjects
    scattered by the power study's SD, 96 trials), fitted with the flags: every subject whose 95 % interval covers
    ≥ 99 % of a bounded parameter's range is flagged, and none with an estimate on a declared bound is identified
    (``benchmarks/studies/flag_shares.py`` prints the shares for every experiment)."""
    from study_scripts import load_study

    flags = load_study("flag_shares")
    model, fits = flags.population_fits("instrumental-learning", "rw-pm", 10, seed=3, effect=("optimism_bias", 0.2),
                                        trials=96)
    assert len(fits) == 10 and fits["alpha_pos"].notna().all()
    assert flags.wide_unflagged(model, fits) == 0
    assert flags.on_bound_identified(model, fits) == 0
    # the checks can fail: one subject given a whole-range interval, or an estimate on a bound, and marked identified
    wide = fits.copy()
    wide.loc[wide.index[0], ["alpha_pos_lo95", "alpha_pos_hi95", "identified"]] = [0.0, 1.0, True]
    assert flags.wide_unflagged(model, wide) == 1 + flags.wide_unflagged(model, fits.iloc[1:])
    bound = fits.copy()
    bound.loc[bound.index[0], ["alpha_neg", "identified"]] = [1.0, True]
    assert flags.on_bound_identified(model, bound) == 1


def test_the_flag_study_prints_both_checks_and_says_when_one_fails() -> None:
    """``flag_shares.py``'s closing lines: the RW± power-plan population's unflagged near-whole-range
    intervals, and across every row measured the subjects on a declared bound marked identified; each line
    says "holds" at 0 and "FAILS" otherwise, and counts each unit once."""
    from study_scripts import load_study

    flags = load_study("flag_shares")
    row = {"experiment": "bart", "model": "target", "fitted": 30, "flagged": 0.1, "one_sided": 0.1,
           "wide_unflagged": 0, "on_bound_identified": 0}
    rw = {**row, "experiment": "instrumental-learning", "model": "rw-pm (plan)", "fitted": 100, "flagged": 0.118,
          "one_sided": 0.05}
    lines = flags.check_lines([row, {**row, "experiment": "instrumental-learning", "model": "rw-pm"}], rw)
    assert lines[0].startswith("RW± power-plan population (100 fitted subjects, optimism_bias 0.2, 96 trials; "
                               "11.8% flagged, 5.0% one-sided)")
    assert lines[0].endswith("covering ≥ 99 % of a bounded range: 0 (holds)")
    assert lines[1].startswith("across the matrix (2 experiment × model units, 160 fitted subjects)")
    assert "marked identified: 0 (holds)" in lines[1]
    bad = flags.check_lines([{**row, "on_bound_identified": 2}], {**rw, "wide_unflagged": 1})
    assert bad[0].endswith(": 1 (FAILS)") and "marked identified: 2 (FAILS)" in bad[1]
    assert len(flags.check_lines([row], None)) == 1  # no RW± row: the matrix line alone

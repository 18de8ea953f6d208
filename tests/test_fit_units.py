"""Issue 46, the fits: no traceback from a likelihood at its bounds, no silent pooling of simulated
subjects, no ridge called an estimate (seeded reproductions)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.cli import run_cli
from cogtestbed.inference.discounting import HyperbolicModel
from cogtestbed.inference.optim import search_objective
from cogtestbed.inference.probabilistic import GeneralisedBayes
from cogtestbed.trials import manifest_path

RIDGE = {"k": 42.169650, "temperature": 0.001778}  # issue 46's ridge: a node of the start grid


def _td_subjects(n: int = 30, seed: int = 1) -> pd.DataFrame:
    k = np.exp(np.random.default_rng(0).uniform(np.log(0.005), np.log(1.0), n))
    return ct.simulate("temporal-discounting", "hyperbolic", subjects=n, seed=seed,
                       params={"k": k, "temperature": 0.05})


# ----------------------------------------------------------------------------- item 1: the crash
@pytest.mark.parametrize("seed", [44, 67])
def test_the_discounting_mle_fits_the_subject_that_divided_by_zero(seed: int) -> None:
    """One subject (true k 0.0574, 11-12 answers): BFGS stepped to z ≈ −1274 for τ, exp underflowed
    to τ = 0 and the kernel divided by it (ZeroDivisionError in _fit_numba)."""
    trials = ct.simulate("temporal-discounting", "hyperbolic", subjects=1, seed=seed, params={"k": 0.0574})
    fit = HyperbolicModel().fit_mle(trials).iloc[0]
    assert np.isfinite(fit["nll"]) and 0.0 <= fit["k"] <= 100.0 and 0.0 <= fit["temperature"] <= 10.0


def test_likelihoods_are_defined_at_their_zero_bound() -> None:
    """τ = 0 (discounting) and σ = 0 (probabilistic reasoning) are the parameters' lower bounds: the
    kernels give the deterministic / degenerate limit there instead of dividing by zero, and the
    search objective survives exp's underflow (z = −1e4)."""
    td = HyperbolicModel()
    data = next(iter(td.subject_data(_td_subjects(1)).values()))
    ll, grad = td.pointwise(np.array([0.1, 0.0]), data)
    assert np.all(np.isfinite(ll)) and np.all(grad == 0.0) and ll.max() == 0.0
    deterministic = np.exp(ll)
    assert set(np.round(deterministic, 6)) <= {0.0, 0.5, 1.0}
    f, g = search_objective(td._kernel())(np.array([-1e4, -1e4]), td.objective_args(data))
    assert np.isfinite(f) and np.all(np.isfinite(g))

    gb = GeneralisedBayes()
    trials = ct.simulate("probabilistic-reasoning", "generalised-bayes", subjects=1, seed=0)
    pdata = next(iter(gb.subject_data(trials).values()))
    ll, grad = gb.pointwise(np.array([1.0, 1.0, 0.0, 0.0]), pdata)
    assert np.all(np.isneginf(ll) | np.isposinf(ll)) and np.all(grad == 0.0)
    f, g = search_objective(gb._kernel())(np.array([0.0, 0.0, 0.0, -1e4]), gb.objective_args(pdata))
    assert np.isposinf(f) or np.isneginf(f)


# ----------------------------------------------------------------------------- item 2: units
def test_fit_on_simulated_subjects_with_their_own_parameters_returns_one_unit_each() -> None:
    trials = _td_subjects()
    fits = ct.fit("temporal-discounting", trials, model="hyperbolic")
    assert len(fits) == 30 and fits["subject"].tolist() == list(range(30))
    assert fits.attrs["units"]["unit"] == "subject" and fits.attrs["units"]["n_units"] == 30
    assert "never pooled" in fits.attrs["units"]["unit_reason"]
    assert (fits["unit"] == "subject").all() and (fits["n_sessions"] == 1).all()
    assert fits["n_obs"].max() <= 13  # one staircase each, not 324 pooled answers


def test_runs_of_one_agent_are_pooled_where_the_experiment_says_and_only_then() -> None:
    trials = _td_subjects(6)
    same = trials.assign(param_k=0.1, param_temperature=0.05)  # the same agent run 6 times
    pooled = ct.fit("temporal-discounting", same, model="hyperbolic")
    assert len(pooled) == 1 and pooled.attrs["units"]["unit"] == "agent" and pooled["n_sessions"].iloc[0] == 6
    assert len(ct.fit("temporal-discounting", same, model="hyperbolic", unit="subject")) == 6
    assert len(ct.fit("temporal-discounting", same, model="hyperbolic", separate_runs=True)) == 6
    with pytest.raises(ct.InputError, match="never pooled"):
        ct.fit("temporal-discounting", trials, model="hyperbolic", unit="agent")
    with pytest.raises(ct.InputError, match="`unit`"):
        ct.fit("temporal-discounting", trials, model="hyperbolic", unit="everything")
    # an experiment that fits subjects: auto is subject; session splits a subject's sessions
    rw = ct.simulate("instrumental-learning", "rw", subjects=3, seed=0)
    assert ct.fit("instrumental-learning", rw, model="rw").attrs["units"]["unit"] == "subject"
    two = pd.concat([rw, rw.assign(session=1)], ignore_index=True)
    assert len(ct.fit("instrumental-learning", two, model="rw", unit="session")) == 6


def test_the_cli_states_its_units_as_python_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "td.parquet"
    ct.simulate("temporal-discounting", "hyperbolic", subjects=8, seed=3, output=path,
                params={"k": [0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0]})  # a per-subject list with output=
    assert run_cli(["fit", "hyperbolic", str(path), "-o", str(tmp_path / "fit"), "--method", "mle", "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert summary["unit"] == "subject" and summary["n_units"] == summary["n_subjects"] == 8
    assert "8 subjects fitted: each subject on its own" in captured.err
    python = ct.fit(None, path, model="hyperbolic")
    assert python.attrs["units"] == {k: summary[k] for k in ("unit", "n_units", "unit_reason")}
    assert len(pd.read_csv(tmp_path / "fit" / "mle.csv")) == 8
    manifest = json.loads(manifest_path(path).read_text())
    assert manifest["params"]["k"] == [0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    assert manifest["params"]["temperature"] == 0.05


# ----------------------------------------------------------------------------- item 3: identification
def test_ridge_subjects_carry_their_interval_and_summaries_keep_every_subject() -> None:
    """The seeded reproduction: subjects whose every answer one large k explains come back at the
    start-grid node k = 42.169650, τ = 0.001778 (NLL ≈ 0), converged.  Their data pin k from below
    only: each carries its likelihood-ratio interval, k ≥ 0.47 up to the declared bound 100, and is
    flagged one-sided (the data say "at least 0.47", not a value); the summary is the median over
    every fitted subject."""
    from cogtestbed.inference.base import mle_summary

    fits = ct.fit("temporal-discounting", _td_subjects(), model="hyperbolic")
    ridge = fits[np.isclose(fits["k"], RIDGE["k"], rtol=1e-6) & np.isclose(fits["temperature"], RIDGE["temperature"],
                                                                            rtol=1e-3)]
    assert len(ridge) >= 4 and ridge["converged"].all()
    assert not ridge["identified"].any()
    assert ridge["null_reason"].str.match(r"^(one-sided interval: k's|unbounded interval: temperature's)").all()
    assert ridge["k_hi95"].eq(100.0).all() and ridge["k_lo95"].between(0.3, 0.7).all()
    assert (fits["k_lo95"] <= fits["k"]).all() and (fits["k"] <= fits["k_hi95"]).all()
    flagged = fits[~fits["identified"]]
    assert len(flagged) and flagged["null_reason"].str.match(r"^(fit failed|unbounded interval|one-sided interval): "
                                                             ).all()
    summary = mle_summary(fits, ("k", "temperature"))
    fitted = fits[fits["k"].notna()]
    assert summary["median"]["k"] == pytest.approx(float(fitted["k"].median()))
    assert summary["median"]["k"] < 1.0  # the ridge no longer drags the summary: it is a median of all
    assert summary["flagged"] == pytest.approx((~fitted["identified"]).mean())


def test_a_failed_fit_and_a_shared_plateau_are_reasons_a_bound_is_not() -> None:
    from cogtestbed.inference.base import MLEResult
    from cogtestbed.inference.identification import shared_estimates, unidentified_reason

    model = HyperbolicModel()
    data = model.subject_data(_td_subjects(2))
    fit = model.fit_subject(data[0])
    failed = MLEResult(fit.params, fit.nll, fit.n_obs, False, 2)
    assert unidentified_reason(model, data[0], failed).startswith("fit failed: the search did not converge")
    shared = shared_estimates(model, {0: [0.3, 0.01], 1: [0.3, 0.01]}, data)
    assert set(shared) == {0, 1} and "fit failed: shared exactly by 2 subjects" in shared[0]
    assert shared_estimates(model, {0: [0.3, 0.01], 1: [0.3, 0.01]}, {0: data[0], 1: data[0]}) == {}


def test_an_interval_open_at_one_bound_is_flagged_one_sided() -> None:
    """A learning rate at 1 whose profile falls off below it: reported [lower, 1] and flagged one-sided
    (the data say "at least lower", not a value); an interval over the whole range is flagged unbounded;
    one closed at both ends is not flagged."""
    from cogtestbed.inference.identification import ProfileInterval, parameter_flag, profile_interval
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    model = get_experiment("instrumental-learning").model("rw-pm")
    alpha = model.parameters["alpha_pos"]
    assert parameter_flag(alpha, 0.55, 1.0).startswith("one-sided interval: alpha_pos")
    assert "open at its upper bound: the data say at least 0.55" in parameter_flag(alpha, 0.55, 1.0)
    assert "open at its lower bound: the data say at most 0.3" in parameter_flag(alpha, 0.0, 0.3)
    assert parameter_flag(alpha, 0.2, 0.9) is None
    assert parameter_flag(alpha, 0.0, 1.0).startswith("unbounded interval: alpha_pos")
    assert ProfileInterval(0.2, 1.0, False, True).unbounded(alpha) is False
    assert ProfileInterval(0.2, 1.0, False, True).one_sided(alpha) is True
    trials = simulate("instrumental-learning", "rw-pm", 1, 7, params={"alpha_pos": 0.95, "alpha_neg": 0.3,
                                                                      "beta": 8.0})
    data = model.subject_data(trials)[0]
    fit = model.fit_subject(data)
    iv = profile_interval(model, data, fit, 2)
    assert iv.lower < fit.params["beta"] < iv.upper  # β's interval brackets its estimate
    from cogtestbed.inference.identification import LR_HALF_CHI2, profile_nll

    if not iv.reaches_lower:  # the end is where the profile rises by χ²₁(0.95)/2
        rise = profile_nll(model, data, 2, iv.lower, 5)[0] - fit.nll
        assert rise == pytest.approx(LR_HALF_CHI2, abs=0.1)


def test_recovery_reports_flags_and_coverage_beside_all_subject_statistics() -> None:
    """The issue-46 command (30 subjects, seed 2, MLE) at 6 reps: every row carries its interval,
    the statistics are over all 180 subjects, the flag share and interval coverage beside them."""
    study = ct.recover("hyperbolic", experiment="temporal-discounting", subjects=30, reps=6, seed=2, method="mle",
                       workers=1)
    table = study.table
    k_rows = table[table["parameter"] == "k"]
    assert k_rows["lo95"].notna().all() and (k_rows["lo95"] <= k_rows["estimate"]).all()
    k = next(iter(study.summary.values()))["parameters"]["k"]
    assert k["n_identified"] + k["n_unidentified"] == k["n"] == 180
    assert k["flagged"] == pytest.approx(k["n_unidentified"] / 180)
    assert 0.8 <= k["coverage95"] <= 1.0
    assert "NOT identified" not in study.verdict and "LR 95% interval coverage" in study.verdict
    # issue 68: each parameter's flags once, counted by kind (not every subject's reason, as make demo's text was)
    params = next(iter(study.summary.values()))["parameters"]
    counted = [f"{v['n_unidentified']}/{v['n']} flagged (" + ", ".join(f"{n} {why}" for why, n in
                                                                     v["unidentified_reasons"].items()) + ")"
               for v in params.values() if v.get("n_unidentified")]
    assert counted and all(study.verdict.count(c) == 1 for c in counted)
    assert "likelihood-ratio 95% interval covers" not in study.verdict and "search range" not in study.verdict


def test_plot_recovery_draws_every_subject_on_its_declared_scale(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trials = _td_subjects()
    fits = ct.fit("temporal-discounting", trials, model="hyperbolic")
    seen: list = []
    original = plt.Figure.savefig

    def spy(fig, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.extend(fig.axes)
        return original(fig, *args, **kwargs)

    plt.Figure.savefig = spy  # type: ignore[method-assign]
    try:
        figures = ct.plot_recovery(trials, fits, directory=tmp_path)
    finally:
        plt.Figure.savefig = original  # type: ignore[method-assign]
    assert all(Path(f).exists() for f in figures) and len(figures) == 1
    k_ax = next(ax for ax in seen if ax.get_xlabel().startswith("true k"))
    assert k_ax.get_xscale() == "log" and k_ax.get_yscale() == "log"
    drawn = sum(len(c.get_offsets()) for c in k_ax.collections)
    assert drawn == 30
    pooled = ct.fit("temporal-discounting", trials.assign(param_k=0.1, param_temperature=0.05), model="hyperbolic")
    with pytest.raises(ct.InputError, match="one fitted unit per subject"):
        ct.plot_recovery(trials, pooled, directory=tmp_path)


def test_metrics_returns_the_documented_typed_dict() -> None:
    import inspect
    from typing import get_type_hints

    result = ct.metrics("temporal-discounting", _td_subjects(3))
    assert isinstance(result, dict)
    hints = get_type_hints(ct.MetricsReport)
    assert {"metrics", "per_run", "n_invalid", "flags", "experiment", "source"} <= set(hints)
    assert set(result) <= set(hints) and result["experiment"] == "temporal-discounting"
    assert inspect.signature(ct.metrics).return_annotation == "MetricsReport"


@pytest.mark.slow
def test_no_model_likelihood_raises_at_the_corners_of_its_box() -> None:
    """The class of issue 46's crash, for every model of every experiment: the search objective at
    search coordinates ±1e4 (exp's underflow to a zero bound, its overflow to a cap) and ±π/2 (the
    sine map's bounds) never raises; a non-finite value there is rejected by the line search."""
    import itertools

    from cogtestbed.registry import experiment_names, get_experiment

    corners = [-1e4, 0.0, 1e4, -np.pi / 2, np.pi / 2]
    rng = np.random.default_rng(0)
    for name in experiment_names():
        exp = get_experiment(name)
        for model_name, model in exp.models.items():
            if model.kernel() is None or model_name not in exp.generators:
                continue
            trials = ct.simulate(name, exp.generators[model_name].agent, subjects=1, seed=0)
            data = next(iter(model.subject_data(trials).values()))
            objective, args = search_objective(model._kernel()), model.objective_args(data)
            k = len(model.parameters)
            points = (itertools.product(corners, repeat=k) if k <= 4
                      else (rng.choice(corners, k) for _ in range(400)))
            for z in points:
                objective(np.asarray(z, dtype=np.float64), args)  # raises on a division by zero

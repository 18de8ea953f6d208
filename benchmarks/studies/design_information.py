"""The design check's predicted SE against the recovered RMSE, per experiment's default design and model.

For each experiment (its first declared model unless ``--all-models``) the check
(:func:`cogtestbed.identifiability`) predicts each parameter's SE for one subject of ``--sessions``
sessions of the default design at the prior median, on the unconstrained scale.  ``--subjects`` subjects are
then simulated at that very point and fitted by maximum likelihood, one by one; the RMSE of their
unconstrained estimates around the truth is printed beside the prediction, with their ratio.  The
prediction is asymptotic: it is expected within ±25 % where the MLE is regular (an interior, pinned estimate,
many observations a parameter).  ``regular`` is decided by the check before any fit: one subject's sessions are
of full rank in the parameter (``identifiable``), their unconstrained SE at the prior median is at most half the
prior's SD (:data:`DATA_OVER_PRIOR`: the likelihood, not the prior's range, sets the estimate's spread), every
simulated session's observed information is positive definite (``regular_share`` 1: the log-likelihood
locally quadratic), no estimate reached a bound (``at_bound``: the share of subjects), and the estimates' errors
are not far from normal (``normal_p``: D'Agostino and Pearson's test, :func:`scipy.stats.normaltest`, p at least
:data:`NORMAL_LEVEL`): the asymptotic SE describes an estimate whose sampling distribution is normal, so a skewed
or heavy-tailed spread of estimates means the MLE is not yet in that regime.  The rule is the same for every row and
reads no ratio.

The RMSE of ``--subjects`` subjects is a Monte Carlo figure: ``ratio_lo``/``ratio_hi`` is the ratio's 95 % interval
from it (RMSE² of n normal errors is the true MSE times χ²ₙ/n; the predicted SE's own Monte Carlo error, a few
per cent at the check's 16 simulated sessions, ``--chains`` to shrink it, is left out), and the last line counts the
regular rows whose interval meets the ±25 % band as well as those whose ratio lies in it.  ``bias`` is the mean
error in predicted SEs and ``sd_ratio`` the errors' SD over the predicted SE: the RMSE holds the bias besides the
spread (ratio² = sd_ratio² + bias²), and the asymptotic SE does not — a maximum-likelihood estimate of a scale from
few observations sits low (the BART's log noise, 45 balloons a session).

    .venv/bin/python benchmarks/studies/design_information.py --subjects 60
    .venv/bin/python benchmarks/studies/design_information.py --experiment horizon --sessions 100
    .venv/bin/python benchmarks/studies/design_information.py --experiment bart --subjects 300 --chains 256 --seed 2
"""

from __future__ import annotations

import argparse
import math
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: no BLAS threads spinning
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from cogtestbed.identifiability import DEFAULT_CHAINS, identifiability  # noqa: E402
from cogtestbed.inference.identification import at_bound  # noqa: E402
from cogtestbed.registry import experiment_names, get_experiment  # noqa: E402
from cogtestbed.simulation import as_sessions, simulate  # noqa: E402

#: Ratios RMSE / predicted SE inside this band count as agreeing (±25 %).
BAND = (0.75, 1.25)
#: A regular row's unconstrained SE at the prior median is at most this share of the prior's SD.
DATA_OVER_PRIOR = 0.5
#: A regular row's errors are not rejected as normal at this level (:func:`scipy.stats.normaltest`).
NORMAL_LEVEL = 0.01


def ratio_interval(ratio: float, n: int) -> tuple[float, float]:
    """The 95 % interval of a ratio RMSE / SE whose RMSE is of ``n`` normal errors (χ²ₙ/n)."""
    from scipy import stats

    if n < 2 or not math.isfinite(ratio):
        return float("nan"), float("nan")
    return (ratio * math.sqrt(n / stats.chi2.ppf(0.975, n)), ratio * math.sqrt(n / stats.chi2.ppf(0.025, n)))


def normal_p(err: np.ndarray) -> float:
    """D'Agostino and Pearson's normality test's p on the finite errors (NaN: fewer than 20, too few to test)."""
    from scipy import stats

    fin = err[np.isfinite(err)]
    return float(stats.normaltest(fin).pvalue) if len(fin) >= 20 and np.ptp(fin) > 0 else float("nan")


def compare(experiment: str, model: str, subjects: int, sessions: int, seed: int,
            chains: int = DEFAULT_CHAINS) -> pd.DataFrame:
    """One experiment x model: the predicted SE (the check's ``chains`` simulated subjects) and the recovered
    RMSE per parameter (unconstrained scale)."""
    exp = get_experiment(experiment)
    fitter = exp.model(model)
    check = identifiability(exp, model, sessions=sessions, draws=0, chains=chains, seed=seed)
    truth = check.table.set_index("parameter")["prior_median"]
    gen = exp.generator(model)
    runs = simulate(exp, gen.agent, subjects * sessions, seed + 1, gen.agent_params(truth.to_dict()))
    table = runs if sessions == 1 else as_sessions(runs, sessions)
    fits = fitter.fit_mle(table, intervals=False)
    rows = []
    for p in fitter.parameters:
        est = fits[p.name].to_numpy(dtype=float)
        err = p.to_unconstrained(est) - p.to_unconstrained(truth[p.name])
        rmse = float(np.sqrt(np.nanmean(err ** 2)))
        predicted = float(check.table.set_index("parameter").loc[p.name, "se_unconstrained"])
        ratio = rmse / predicted if predicted > 0 and math.isfinite(predicted) else float("nan")
        lo, hi = ratio_interval(ratio, int(np.isfinite(err).sum()))
        bias = float(np.nanmean(err)) / predicted if predicted > 0 else float("nan")  # in predicted SEs
        spread = float(np.nanstd(err)) / predicted if predicted > 0 else float("nan")
        rows.append({"experiment": experiment, "model": model, "sessions": sessions, "parameter": p.name,
                     "predicted_se": predicted, "rmse": rmse, "ratio": ratio, "sd_ratio": spread, "bias": bias,
                     "ratio_lo": lo, "ratio_hi": hi,
                     "at_bound": float(np.mean(at_bound(est, p))), "normal_p": normal_p(err), "identified": bool(
                         check.table.set_index("parameter").loc[p.name, "identifiable"]),
                     "data_over_prior": predicted / p.prior_sd, "regular_share": check.regular_share})
    out = pd.DataFrame(rows)
    return out.assign(regular=out["identified"] & (out["data_over_prior"] <= DATA_OVER_PRIOR)
                      & (out["regular_share"] == 1.0) & (out["at_bound"] == 0)
                      & ~(out["normal_p"] < NORMAL_LEVEL))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", action="append", help="Experiment (repeatable; default: every one).")
    ap.add_argument("--all-models", action="store_true", help="Every declared model, not the first.")
    ap.add_argument("--subjects", type=int, default=60)
    ap.add_argument("--sessions", type=int, default=1, help="Sessions a subject.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chains", type=int, default=DEFAULT_CHAINS,
                    help="Simulated subjects of the check's prediction (its Monte Carlo error: about 1/sqrt(2 x this) "
                         "of the SE at one session each).")
    args = ap.parse_args()
    parts = []
    for name in args.experiment or experiment_names():
        models = list(get_experiment(name).models)
        for model in models if args.all_models else models[:1]:
            part = compare(name, model, args.subjects, args.sessions, args.seed, args.chains)
            print(part.to_string(index=False, float_format=lambda x: f"{x:.3g}"), flush=True)
            parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    plain = out[(out["at_bound"] == 0) & out["identified"]]
    regular = out[out["regular"].astype(bool)]
    print(f"\nidentified parameters with no estimate at a bound: {len(plain)}; RMSE within ±25 % of the predicted "
          f"SE: {int(plain['ratio'].between(*BAND).sum())}")
    outside = regular[~regular["ratio"].between(*BAND)]
    meets = (regular["ratio_hi"] >= BAND[0]) & (regular["ratio_lo"] <= BAND[1])
    print(f"regular parameters (decided before any fit): {len(regular)}; RMSE within ±25 % of the "
          f"predicted SE: {len(regular) - len(outside)}; outside: "
          + (", ".join(f"{r.experiment}/{r.parameter} {r.ratio:.3g} [{r.ratio_lo:.2f}, {r.ratio_hi:.2f}]"
                       for r in outside.itertuples()) or "none")
          + f"; the ratio's 95 % interval meets the band: {int(meets.sum())} of {len(regular)}")


if __name__ == "__main__":
    main()

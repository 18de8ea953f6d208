"""Hierarchical PyMC model of the collider judgments (an extension of Dettki 2025, which fits points only).

Subject s has CBN parameters θ_s = (b, m, p_c) (3p) or (b, m1, m2, p_c) (4p), each
σ(μ + σ_pop·z_s) with non-centred offsets z_s ~ N(0, 1) (declared by
:func:`cogtestbed.inference.hierarchical.subject_parameters`, so names follow that contract:
``b_mu``, ``b_sigma``, ``b_z``, ``b``, ``b_pop`` …).  A judgment y ∈ [0, 1] of task t has mean
μ = CBN_t(θ_s) (the closed forms of :mod:`cogtestbed.inference.cbn`) and a
**zero-one-inflated Beta** likelihood, which respects the bounded scale and the exact 0s and
100s that slider data contain:

    P(y = 0) = π0,   P(y = 1) = π1,   y ∈ (0, 1) ~ (1 − π0 − π1) · Beta(μκ, (1 − μ)κ)

with population-level (π0, π1, π_cont) ~ Dirichlet(1, 1, 8) and κ ~ LogNormal(2, 1)
(κ: Beta precision).  ``pooling``: ``partial`` (hierarchical), ``none`` (independent subjects,
``u_s ~ N(prior_mean, prior_sd)``), ``complete`` (one θ for everyone).  The same response model
is the ``cbn`` agent's with ``kappa`` > 0 and ``pi0``/``pi100``, so simulated humans come from
exactly this model (SBC).

The likelihood is one numba kernel (:func:`zoib_pointwise_kernel`: the 11 closed forms with
their analytic derivatives per subject, lgamma/ψ once per (subject, task) cell, the Beta
log-density and its gradient per judgment) wrapped by
:func:`~cogtestbed.inference.hierarchical.pointwise_loglik_op`; its reference, the same model as pytensor
expressions, is ``tests/test_causal_hierarchical.py``'s.  Study:
the thesis's human fit, :func:`hierarchical_human_study` (partial / no / complete pooling on the 48
RW17 subjects, diagnostics, PSIS-LOO with Pareto k and exact refits of k > 0.7 judgments); its
simulation-based calibration runs on the generic study driver (``cogtestbed sbc collider --model cbn-3p``),
which draws κ and π from :meth:`~cogtestbed.inference.causal.CBNModel.sample_nuisance`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.errors import InputError
from cogtestbed.inference.cbn import M1, M2, M_, N_GRAD_COLUMNS, PC, B, noisy_or_table_grad, valid_judgments
from cogtestbed.numerics import digamma
from cogtestbed.parameters import ParameterSet

#: μ is clipped to this interval before entering the Beta (σ(·) can round to 0 or 1).
MU_CLIP = 1e-6
#: Ratings within C of 0 or 1 (but not exactly 0 / 1, the inflation endpoints) are treated as
#: censored Beta observations: a double cannot hold a Beta draw of small shape that lies closer
#: to an endpoint (1 − 1e-30 rounds to 1), so its density there is not observable.  The tail
#: probability uses the leading term of the incomplete beta function, I_C(b, a) ≈
#: C^b (1 − C)^a / (b·B(a, b)) (relative error O(κC)).  Human ratings (multiples of 5) never fall
#: there; synthetic Beta responses do (SBC found the resulting bias in m).
CENSOR = 1e-6
LOG_C = math.log(CENSOR)
LOG_1MC = math.log1p(-CENSOR)
PARAMS = {"3p": ParameterSet((B, M_, PC), "cbn-3p"), "4p": ParameterSet((B, M1, M2, PC), "cbn-4p")}
INFLATION_PRIOR = (1.0, 1.0, 8.0)
LOG_KAPPA_PRIOR = (2.0, 1.0)


# ----------------------------------------------------------------------------- numba likelihood
#: Columns of the kernel's parameter matrix (one row per subject; globals are broadcast).
THETA_COLUMNS = ("b", "m1", "m2", "p_c", "kappa", "pi0", "pi1")


@njit(cache=True)
def zoib_pointwise_kernel(theta: np.ndarray, obs_subject: np.ndarray, y: np.ndarray,
                          task: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-judgment zero-one-inflated Beta log-likelihood and its exact gradient.

    ``theta`` (n_subjects, 7) in :data:`THETA_COLUMNS` order (κ, π0, π1 repeated on every row),
    ``obs_subject`` sorted.  ℓ = log π0 (y = 0), log π1 (y = 1), else
    log(1 − π0 − π1) + log Beta(y; μκ, (1 − μ)κ) with μ = CBN_task(θ_s) clipped to
    [MU_CLIP, 1 − MU_CLIP] (zero gradient where clipped); y within :data:`CENSOR` of an
    endpoint is censored (see there).  Beta: ∂ℓ/∂α = log y − ψ(α) + ψ(κ),
    ∂ℓ/∂β = log(1 − y) − ψ(β) + ψ(κ), ∂ℓ/∂μ = κ(∂ℓ/∂α − ∂ℓ/∂β), ∂ℓ/∂κ = μ∂ℓ/∂α + (1 − μ)∂ℓ/∂β.
    This is the kernel of :func:`~cogtestbed.inference.hierarchical.pointwise_loglik_op`.
    """
    n = y.shape[0]
    ll = np.empty(n)
    grad = np.zeros((n, theta.shape[1]))
    table = np.empty((11, N_GRAD_COLUMNS + 1))
    # Per (subject, task) cell: μ, log B-normaliser, ∂/∂α and ∂/∂β without the log y terms
    # (they do not depend on y, so lgamma/ψ run 11 times per subject, not once per judgment).
    cell = np.empty((11, 5))
    last = -1
    kappa = pi0 = pi1 = pic = 1.0
    for i in range(n):
        s = obs_subject[i]
        if s != last:
            noisy_or_table_grad(theta[s, 0], theta[s, 1], theta[s, 2], theta[s, 3], table)
            kappa, pi0, pi1 = theta[s, 4], theta[s, 5], theta[s, 6]
            pic = 1.0 - pi0 - pi1
            lgk, pk = math.lgamma(kappa), digamma(kappa)
            for t in range(11):
                mu = table[t, 0]
                cell[t, 4] = 0.0 if mu < MU_CLIP or mu > 1.0 - MU_CLIP else 1.0
                mu = min(max(mu, MU_CLIP), 1.0 - MU_CLIP)
                a, bb = mu * kappa, (1.0 - mu) * kappa
                cell[t, 0] = mu
                cell[t, 1] = math.log(pic) + lgk - math.lgamma(a) - math.lgamma(bb)
                cell[t, 2] = pk - digamma(a)
                cell[t, 3] = pk - digamma(bb)
            last = s
        yi = y[i]
        if yi <= 0.0:
            ll[i] = math.log(pi0)
            grad[i, 5] = 1.0 / pi0
            continue
        if yi >= 1.0:
            ll[i] = math.log(pi1)
            grad[i, 6] = 1.0 / pi1
            continue
        t = task[i]
        mu = cell[t, 0]
        a, bb = mu * kappa, (1.0 - mu) * kappa
        if yi >= 1.0 - CENSOR:
            # right-censored: log P(Y > 1 − C) ≈ b·log C + a·log(1 − C) − log b − log B(a, b)
            ll[i] = cell[t, 1] + bb * LOG_C + a * LOG_1MC - math.log(bb)
            da = LOG_1MC + cell[t, 2]
            db = LOG_C - 1.0 / bb + cell[t, 3]
        elif yi <= CENSOR:
            # left-censored: log P(Y < C) ≈ a·log C + b·log(1 − C) − log a − log B(a, b)
            ll[i] = cell[t, 1] + a * LOG_C + bb * LOG_1MC - math.log(a)
            da = LOG_C - 1.0 / a + cell[t, 2]
            db = LOG_1MC + cell[t, 3]
        else:
            ly, l1y = math.log(yi), math.log1p(-yi)
            ll[i] = cell[t, 1] + (a - 1.0) * ly + (bb - 1.0) * l1y
            da = ly + cell[t, 2]
            db = l1y + cell[t, 3]
        dmu = kappa * (da - db) * cell[t, 4]
        for j in range(N_GRAD_COLUMNS):
            grad[i, j] = dmu * table[t, j + 1]
        grad[i, 4] = mu * da + (1.0 - mu) * db
        grad[i, 5] = -1.0 / pic
        grad[i, 6] = -1.0 / pic
    return ll, grad


def model_data(trials: pd.DataFrame) -> dict[str, Any]:
    """Subject ids, per-observation subject index, task index and y."""
    v = valid_judgments(trials)
    subjects = pd.unique(v["subject"])
    index = {s: i for i, s in enumerate(subjects)}
    return {
        "subjects": list(subjects),
        "obs_subject": v["subject"].map(index).to_numpy(np.int64),
        "task": v["task_index"].to_numpy(np.int64),
        "y": np.clip(v["y"].to_numpy(np.float64), 0.0, 1.0),
    }




def _zoib_op() -> Any:
    from cogtestbed.inference.hierarchical import pointwise_loglik_op

    return pointwise_loglik_op(zoib_pointwise_kernel, "collider-zoib")


def build_model(trials: pd.DataFrame, scheme: str = "3p", pooling: str = "partial") -> Any:
    """The ``pm.Model`` (``pooling``: partial / none / complete; ``scheme``: 3p / 4p).

    The likelihood is :func:`zoib_pointwise_kernel` wrapped by
    :func:`~cogtestbed.inference.hierarchical.pointwise_loglik_op` (numba value + analytic
    gradient; the pure-pytensor graph of ``tests/test_causal_hierarchical.py`` computes the
    same numbers, but compiled ~10× slower per gradient
    and took ~50 s to compile).  Trial arrays are ``pm.Data`` so one compiled sampler serves every
    data set of the same shape (SBC).
    """
    import pymc as pm
    import pytensor.tensor as pt

    from cogtestbed.inference.hierarchical import constrain, observe_pointwise, subject_parameters

    if scheme not in PARAMS:
        raise InputError(f"scheme must be 3p or 4p, got {scheme!r}")
    if pooling not in ("partial", "none", "complete"):
        raise InputError(f"pooling must be partial, none or complete, got {pooling!r}")
    params = PARAMS[scheme]
    d = model_data(trials)
    n_sub = len(d["subjects"])
    coords = {"subject": d["subjects"], "obs": np.arange(len(d["y"]))}
    op = _zoib_op()
    with pm.Model(coords=coords) as model:
        obs_subject = pm.Data("obs_subject", d["obs_subject"], dims="obs")
        task = pm.Data("task", d["task"], dims="obs")
        ones = pt.ones(n_sub)
        if pooling == "complete":
            theta = {}
            for p in params:
                u = pm.Normal(f"{p.name}_mu", p.prior_mean, p.prior_sd)
                theta[p.name] = pm.Deterministic(p.name, constrain(p, u)) * ones
        else:
            sp = subject_parameters(params, hierarchical=pooling == "partial")
            theta = {p.name: sp[p.name] for p in params}
        m1 = theta["m"] if scheme == "3p" else theta["m1"]
        m2 = theta["m"] if scheme == "3p" else theta["m2"]
        kappa = pm.LogNormal("kappa", *LOG_KAPPA_PRIOR)
        pi = pm.Dirichlet("pi", a=np.array(INFLATION_PRIOR))
        mat = pt.stack([theta["b"], m1, m2, theta["p_c"], kappa * ones, pi[0] * ones, pi[1] * ones],
                       axis=1)

        # y is pm.Data too: a cached nutpie compilation is re-pointed at new data with
        # ``with_data``, which only reaches shared variables (a NumPy ``observed`` would stay frozen).
        y_data = pm.Data("y_data", d["y"], dims="obs")
        observe_pointwise("y", op, mat, obs_subject, y_data, task)
    model.cogtestbed_key = ("collider-zoib", scheme, pooling)
    return model


# ----------------------------------------------------------------------------- human hierarchical fit
def _pareto_k(loo_result: Any) -> dict[str, Any]:
    k = np.asarray(loo_result.pareto_k)
    return {"k_max": float(k.max()), "n_k_gt_0.7": int((k > 0.7).sum()), "n_k_gt_0.5": int((k > 0.5).sum()),
            "n": int(k.size), "good_k": float(getattr(loo_result, "good_k", 0.7))}


def exact_loo_refits(trials: pd.DataFrame, pooling: str, obs: list[int], draws: int = 1000, tune: int = 1000,
                     chains: int = 4, seed: int = 0, scheme: str = "3p") -> list[float]:
    """Exact leave-one-judgment-out elpd of the judgments ``obs`` (positions in
    :func:`~cogtestbed.inference.causal_hierarchical.model_data` order) by refitting without each
    one (the "reloo" remedy for PSIS's Pareto k > 0.7, Vehtari, Gelman & Gabry 2017 §2.1):
    elpd_i = log mean_s p(y_i | θ^(s)), θ^(s) drawn from the posterior without y_i."""
    from scipy.special import logsumexp

    from cogtestbed.inference.hierarchical import fit_hierarchical

    v = valid_judgments(trials)
    d = model_data(trials)
    out = []
    for i in obs:
        rest = v.drop(index=v.index[i])
        fit = fit_hierarchical(build_model(rest, scheme, pooling), rest, draws=draws, tune=tune, chains=chains,
                               seed=seed, warn=True, log_likelihood=False)
        post = fit.idata.posterior
        s = list(post.coords["subject"].values).index(d["subjects"][d["obs_subject"][i]])

        cols = ["b", "m", "m", "p_c"] if scheme == "3p" else ["b", "m1", "m2", "p_c"]
        subj = [(post[c].values[..., s] if post[c].ndim == 3 else post[c].values).reshape(-1) for c in cols]
        pi = post["pi"].values.reshape(-1, 3)
        theta = np.column_stack([*subj, post["kappa"].values.reshape(-1), pi[:, 0], pi[:, 1]])
        ll = zoib_pointwise_kernel(theta, np.arange(len(theta)), np.full(len(theta), d["y"][i]),
                                   np.full(len(theta), d["task"][i]))[0]
        out.append(float(logsumexp(ll) - np.log(len(ll))))
    return out


def hierarchical_human_study(human: pd.DataFrame, draws: int = 1000, tune: int = 1000, chains: int = 4,
                             seed: int = 0, reloo: bool = True) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Partial, no and complete pooling fits of the 48 RW17 subjects (3p, zero-one-inflated Beta;
    :mod:`cogtestbed.inference.causal_hierarchical`), their diagnostics, population summaries and
    PSIS-LOO comparisons per judgment and per subject, with Pareto-k diagnostics.

    Returns (per-judgment table: subject, task, y and the pointwise elpd and Pareto k of each
    model, summary).  LOO per judgment is the primary comparison (the 20 judgments of a subject
    are exchangeable, no sequence); leave-one-subject-out is reported too, but for no pooling it
    asks the prior to predict a new subject and its Pareto k is high by construction.  With
    ``reloo`` every judgment with Pareto k > 0.7 is refitted exactly (:func:`exact_loo_refits`)
    and ``loo_per_judgment_reloo`` gives the corrected elpd (PSIS for the rest).
    """
    from cogtestbed.inference.hierarchical import compare_loo, fit_hierarchical, loo

    fits = {pool: fit_hierarchical(build_model(human, "3p", pool), human, draws=draws, tune=tune, chains=chains,
                                   seed=seed, warn=True) for pool in ("partial", "none", "complete")}
    d = model_data(human)
    table = pd.DataFrame({"subject": np.asarray(d["subjects"])[d["obs_subject"]], "task": d["task"], "y": d["y"]})
    summary: dict[str, Any] = {"diagnostics": {k: {kk: v for kk, v in f.diagnostics.as_dict().items()}
                                               for k, f in fits.items()}}
    post = fits["partial"].idata.posterior
    pop: dict[str, Any] = {}
    for name in ("b_pop", "m_pop", "p_c_pop", "b_sigma", "m_sigma", "p_c_sigma", "kappa"):
        x = post[name].values.reshape(-1)
        pop[name] = {"mean": float(x.mean()), "q05": float(np.quantile(x, 0.05)), "q95": float(np.quantile(x, 0.95))}
    pis = post["pi"].values.reshape(-1, 3)
    for j, name in enumerate(("pi0", "pi1")):
        pop[name] = {"mean": float(pis[:, j].mean()), "q05": float(np.quantile(pis[:, j], 0.05)),
                     "q95": float(np.quantile(pis[:, j], 0.95))}
    lad = (post["m"] - post["b"]).values.reshape(-1, post.sizes["subject"])
    pop["lad_subject_mean"] = {"mean": float(lad.mean(1).mean()), "q05": float(np.quantile(lad.mean(1), 0.05)),
                               "q95": float(np.quantile(lad.mean(1), 0.95))}
    summary["partial_population"] = pop
    cpost = fits["complete"].idata.posterior
    summary["complete_pooling"] = {n: float(cpost[n].values.mean()) for n in ("b", "m", "p_c", "kappa")}
    for by_subject, label in ((False, "loo_per_judgment"), (True, "loo_per_subject")):
        cmp = compare_loo(fits, by_subject=by_subject)
        summary[label] = {str(k): {"rank": int(r["rank"]), "elpd": float(r["elpd_loo"]), "se": float(r["se"]),
                                   "d_elpd": float(r["elpd_diff"]), "dse": float(r["dse"]), "p_loo": float(r["p_loo"]),
                                   "warning": bool(r["warning"])} for k, r in cmp.iterrows()}
        for pool, f in fits.items():
            res = loo(f, by_subject=by_subject)
            summary[label][pool].update(_pareto_k(res))
            if not by_subject:
                table[f"elpd_{pool}"] = np.asarray(res.loo_i)
                table[f"k_{pool}"] = np.asarray(res.pareto_k)
    if reloo:
        fixed: dict[str, Any] = {}
        for pool in fits:
            bad = [int(i) for i in np.flatnonzero(table[f"k_{pool}"].to_numpy() > 0.7)]
            exact = exact_loo_refits(human, pool, bad, draws=draws, tune=tune, chains=chains, seed=seed)
            elpd = table[f"elpd_{pool}"].to_numpy().copy()
            psis = elpd[bad].copy()
            elpd[bad] = exact
            table[f"elpd_reloo_{pool}"] = elpd
            fixed[pool] = {"elpd": float(elpd.sum()), "se": float(np.sqrt(len(elpd) * elpd.var())),
                           "refitted": bad, "psis_elpd_i": psis.round(3).tolist(),
                           "exact_elpd_i": np.round(exact, 3).tolist()}
        best = max(fixed, key=lambda k: fixed[k]["elpd"])
        for pool, f in fixed.items():
            diff = table[f"elpd_reloo_{best}"].to_numpy() - table[f"elpd_reloo_{pool}"].to_numpy()
            f["d_elpd"], f["dse"] = float(diff.sum()), float(np.sqrt(len(diff) * diff.var()))
        summary["loo_per_judgment_reloo"] = fixed
    # Which judgments are influential (k > 0.7 under partial or no pooling)?
    infl = table[(table["k_partial"] > 0.7) | (table["k_none"] > 0.7)]
    summary["influential_judgments"] = {
        "n": int(len(infl)), "y_values": sorted(map(float, infl["y"].round(2).unique())),
        "tasks": sorted(map(int, infl["task"].unique())),
        "rows": infl.head(20).round(3).to_dict("records")}
    return table, summary

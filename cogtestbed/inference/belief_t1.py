"""Belief-coherence test T1 (Yamin et al. 2026, §3; Prop. 3.4): is the decision A independent of θ
given the reported belief p?  T1c (:func:`t1_lr`, multinomial-logit likelihood ratio), T1a
(:func:`t1_cmi`, kNN conditional mutual information with a local-permutation null) and T1b
(:func:`t1_nested`, cross-validated gradient boosting with placebo or bootstrap rules).  See
:mod:`cogtestbed.inference.belief` for the whole battery."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.inference.belief_table import (
    CMI_K,
    CV_FOLDS,
    GB_DEPTH,
    GB_TREES,
    LEVEL,
    N_BOOT,
    N_PERM,
    PERM_BLOCK,
    T1B_PLACEBOS,
    T1B_RULE,
    T1B_RULES,
    BeliefTableError,
    null_result,
    paired_rows,
    test_result,
)


# ----------------------------------------------------------------------------- T1c
def mnl_loglik(y: np.ndarray, x: np.ndarray, max_iter: int = 50, tol: float = 1e-10,
               start: np.ndarray | None = None) -> tuple[float, bool, np.ndarray]:
    """Maximised log-likelihood of a multinomial logit of classes ``y`` (0..C−1, all present) on
    design ``x`` (n, d), by Newton–Raphson with step halving; returns (loglik, converged).

    Separation shows as a coefficient norm beyond 50 (flagged as not converged).  ``start``: the
    initial coefficients (d, C−1); the fitted ones are returned too.
    """
    n, d = x.shape
    c = int(y.max()) + 1
    m = c - 1
    beta = np.zeros(d * m) if start is None else np.asarray(start, dtype=np.float64).T.reshape(-1).copy()
    onehot = np.zeros((n, c))
    onehot[np.arange(n), y] = 1.0

    def loglik(b: np.ndarray) -> tuple[float, np.ndarray]:
        eta = np.concatenate([np.zeros((n, 1)), x @ b.reshape(m, d).T], axis=1)
        top = eta.max(axis=1, keepdims=True)
        logp = eta - top - np.log(np.exp(eta - top).sum(axis=1, keepdims=True))
        return float((onehot * logp).sum()), np.exp(logp)

    ll, prob = loglik(beta)
    for _ in range(max_iter):
        resid = onehot[:, 1:] - prob[:, 1:]
        grad = (resid.T @ x).reshape(-1)
        hess = np.empty((d * m, d * m))
        for j in range(m):
            for k in range(m):
                w = prob[:, j + 1] * ((j == k) - prob[:, k + 1])
                hess[j * d:(j + 1) * d, k * d:(k + 1) * d] = (x * w[:, None]).T @ x
        try:
            step = np.linalg.solve(hess + 1e-10 * np.eye(d * m), grad)
        except np.linalg.LinAlgError:
            return ll, False, beta.reshape(m, d).T
        t = 1.0
        while True:
            new = beta + t * step
            ll_new, prob_new = loglik(new)
            if ll_new >= ll - 1e-12 or t < 1e-6:
                break
            t *= 0.5
        done = abs(ll_new - ll) < tol
        beta, ll, prob = new, ll_new, prob_new
        if done:
            return ll, bool(np.linalg.norm(beta) < 50.0), beta.reshape(m, d).T
    return ll, False, beta.reshape(m, d).T


def t1_lr_arrays(a: np.ndarray, p: np.ndarray, theta: np.ndarray) -> dict[str, Any]:
    """T1c on arrays: LR statistic, df, p-value and convergence of A ~ p vs A ~ (p, θ)."""
    from scipy import stats  # here, not at the top: a first simulate need not import scipy.stats (0.5 s)
    classes, y = np.unique(a, return_inverse=True)
    if classes.size < 2:
        return {"statistic": 0.0, "df": 0, "p_value": 1.0, "converged": True}
    ones = np.ones_like(p)
    ll0, ok0, b0 = mnl_loglik(y, np.column_stack([ones, p]))
    # the nested fit starts from the null fit with a zero θ coefficient (a few Newton steps)
    ll1, ok1, _ = mnl_loglik(y, np.column_stack([ones, p, theta.astype(np.float64)]),
                             start=np.vstack([b0, np.zeros((1, b0.shape[1]))]))
    stat = max(2.0 * (ll1 - ll0), 0.0)
    df = classes.size - 1
    return {"statistic": stat, "df": df, "p_value": float(stats.chi2.sf(stat, df)), "converged": ok0 and ok1}


def t1_lr(table: pd.DataFrame, level: float = LEVEL, renormalise: bool = False, average: bool = False,
          **_: Any) -> dict[str, Any]:
    """T1c: likelihood-ratio test of the multinomial logit A ~ p vs A ~ (p, θ)."""
    rows = paired_rows(table, renormalise, average)
    if rows.empty:
        return null_result("t1_lr: no valid pair of a π0 belief and a decision", level, converged=True)
    r = t1_lr_arrays(rows["a"].to_numpy(), rows["p"].to_numpy(), rows["theta"].to_numpy())
    return test_result(r["statistic"], r["p_value"], level, df=r["df"], converged=r["converged"], n=len(rows))


# ----------------------------------------------------------------------------- T1a
def _count_within(key: np.ndarray, centre: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """For sorted ``key``: number of entries in [centre − radius, centre + radius]."""
    return np.searchsorted(key, centre + radius, side="right") - np.searchsorted(key, centre - radius, side="left")


#: Widening of kNN radii when counting on a shifted sort key (see :func:`cmi_knn`).
RADIUS_SLACK = 1e-12


def cmi_knn(a: np.ndarray, theta: np.ndarray, p: np.ndarray, k: int = CMI_K) -> float:
    """kNN estimate of I(A; θ | p) for discrete A, θ and continuous p (see module docstring).

    ξ_i = ψ(k̃_i) − ψ(n_Ap,i) − ψ(n_θp,i) + ψ(n_p,i) (Mesner & Shalizi 2020): ρ_i is the distance in p to the
    k-th neighbour with the same (A, θ); k̃_i = k, or the number of ties when ρ_i = 0; the n count
    the other points (i excluded) within ρ_i (≤) with the same A, the same θ, and overall.  Points alone in
    their (A, θ) cell are skipped.
    """
    from scipy import special  # here, not at the top: a first simulate need not import scipy.stats (0.5 s)
    n = p.size
    if n < 2:
        return 0.0
    cell = a.astype(np.int64) * 2 + theta.astype(np.int64)
    off = 4.0  # p lies in [0, 1] and radii are at most 1: groups never overlap after the shift
    order = np.lexsort((p, cell))
    key = cell[order] * off + p[order]
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    start = np.searchsorted(cell[order], cell, side="left")
    stop = np.searchsorted(cell[order], cell, side="right")
    size = stop - start
    offsets = np.concatenate([np.arange(-k, 0), np.arange(1, k + 1)])
    idx = pos[:, None] + offsets[None, :]
    inside = (idx >= start[:, None]) & (idx < stop[:, None])
    dist = np.where(inside, np.abs(p[order][np.clip(idx, 0, n - 1)] - p[:, None]), np.inf)
    dist.sort(axis=1)
    k_eff = np.minimum(k, size - 1)
    use = k_eff >= 1
    rho = np.where(use, dist[np.arange(n), np.maximum(k_eff - 1, 0)], 0.0)
    ties = _count_within(key, cell * off + p, np.zeros(n)) - 1
    k_tilde = np.where(rho > 0, k_eff, ties)
    # searching a shifted key: widen by far more than its rounding error (~1e-15) so that points
    # at exactly ρ in p count, as in the definition
    radius = np.where(rho > 0, rho + RADIUS_SLACK, 0.0)

    def counts(groups: np.ndarray) -> np.ndarray:
        o = np.lexsort((p, groups))
        gk = groups[o] * off + p[o]
        return _count_within(gk, groups * off + p, radius) - 1

    n_a = counts(a.astype(np.int64))
    n_t = counts(theta.astype(np.int64))
    n_p = counts(np.zeros(n, dtype=np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):  # rows alone in their cell are masked below
        xi = special.digamma(np.maximum(k_tilde, 1)) - special.digamma(n_a) - special.digamma(n_t) \
            + special.digamma(n_p)
    return float(np.mean(np.where(use, xi, 0.0)))


def local_permutation(p: np.ndarray, theta: np.ndarray, group: np.ndarray, rng: np.random.Generator,
                      block: int = PERM_BLOCK) -> np.ndarray:
    """θ permuted among contexts of similar p: contexts (``group``; θ is drawn once per context)
    sorted by their mean p (ties broken at random) exchange θ within consecutive blocks of
    ``block`` contexts; every row of a context keeps its context's (new) θ."""
    n_groups = int(group.max()) + 1
    mean_p = np.bincount(group, p, n_groups) / np.maximum(np.bincount(group, minlength=n_groups), 1)
    theta_g = np.zeros(n_groups, dtype=theta.dtype)
    theta_g[group] = theta
    order = np.lexsort((rng.random(n_groups), mean_p))
    blocks = np.arange(n_groups) // block
    shuffled = order[np.lexsort((rng.random(n_groups), blocks))]
    new = np.empty_like(theta_g)
    new[order] = theta_g[shuffled]
    return new[group]


#: Half-width of T1a's tie-breaking jitter: every report p gets p + U(−w, w), one seeded draw per
#: row in the table's key order.  Repeated reports of a context tie exactly (its θ is shared too)
#: and LLMs round to .05; the mixed estimator's tie rule then leaves a large downward bias on null
#: data (−.17 with five tied repetitions, −.06 with reports rounded to .05; 200 × 5, k = 3).  A
#: jitter of half the .05 resolution removes it (+.0003 in both cases; tiny jitters, 1e-9, leave
#: −.024 on tied repetitions): ``benchmarks/studies/belief_cmi_ties.py`` measures the candidates.
CMI_JITTER = 0.025
#: T1a's decision rules: ``permutation`` (default; the local-permutation p-value) and ``paper``
#: (the bootstrap interval's lower end above 0, App. F / Table 1, at one-sided level α).
T1A_RULES = ("permutation", "paper")
T1A_RULE = "permutation"


def jittered(p: np.ndarray, rng: np.random.Generator, width: float = CMI_JITTER) -> np.ndarray:
    """``p`` + U(−width, width) (:data:`CMI_JITTER`): ties broken below the reports' resolution."""
    return p + rng.uniform(-width, width, p.size) if width > 0 else p.astype(np.float64)


def _cluster_draw(group: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row indices of one bootstrap sample of whole contexts (``group``; θ is shared within one)."""
    uniq, inv = np.unique(group, return_inverse=True)
    members = np.argsort(inv, kind="stable")
    starts = np.searchsorted(inv[members], np.arange(uniq.size))
    sizes = np.bincount(inv, minlength=uniq.size)
    pick = rng.integers(0, uniq.size, uniq.size)
    return np.concatenate([members[starts[c]:starts[c] + sizes[c]] for c in pick])


def t1_cmi_arrays(a: np.ndarray, p: np.ndarray, theta: np.ndarray, group: np.ndarray, *, k: int = CMI_K,
                  n_boot: int = N_BOOT, n_perm: int = N_PERM, seed: int = 0, level: float = LEVEL,
                  jitter: float = CMI_JITTER, calibrate: bool = False) -> dict[str, Any]:
    """T1a on arrays (rows in key order): the kNN CMI of the jittered reports (:data:`CMI_JITTER`),
    its bootstrap interval and both rules (:data:`T1A_RULES`).

    Bootstrap: whole contexts resampled (their rows share θ), each replicate jittered afresh (a
    duplicated row would otherwise tie again); the interval is estimate ± 1.96·SD of the
    replicates, the symmetric form of the paper's Table 1 intervals, so it contains its estimate;
    the paper's rule rejects when estimate − z_{1−α}·SD > 0 (one-sided at α; the paper's 95 %
    interval is this rule at α = .025).  Permutation: θ locally permuted among contexts of similar
    p (:func:`local_permutation`), the same jittered reports; p = (1 + #{null ≥ est})/(1 + B).
    ``calibrate``: the isotonic-calibrated belief p_iso of App. F (isotonic regression of θ on p,
    refitted in every replicate and permutation) in place of p.
    """
    from scipy import stats  # here, not at the top: a first simulate need not import scipy.stats (0.5 s)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    q = jittered(_calibrated(p, theta) if calibrate else p, rng, jitter)
    est = cmi_knn(a, theta, q, k)
    boots = np.empty(n_boot)
    for b in range(n_boot):
        i = _cluster_draw(group, rng)
        pb = _calibrated(p[i], theta[i]) if calibrate else p[i]
        boots[b] = cmi_knn(a[i], theta[i], jittered(pb, rng, jitter), k)
    null = np.empty(n_perm)
    for b in range(n_perm):
        t_perm = local_permutation(p, theta, group, rng)
        q_perm = jittered(_calibrated(p, t_perm), rng, jitter) if calibrate else q
        null[b] = cmi_knn(a, t_perm, q_perm, k)
    p_value = (1.0 + np.sum(null >= est)) / (1.0 + n_perm) if n_perm else math.nan
    sd = float(np.std(boots, ddof=1)) if n_boot > 1 else math.nan
    lo, hi = est - 1.959963984540054 * sd, est + 1.959963984540054 * sd
    bound = est - float(stats.norm.ppf(1.0 - level)) * sd
    return {"estimate": est, "interval": (float(lo), float(hi)), "p_value": float(p_value), "boot_sd": sd,
            "boot_bias": float(np.mean(boots) - est) if n_boot else math.nan, "paper_bound": float(bound),
            "reject_paper": bool(bound > 0.0), "n_small_cells": _small_cells(a, theta, k)}


def _calibrated(p: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """App. F's isotonic-calibrated belief: the increasing fit of θ on p, clipped to [0, 1]."""
    from sklearn.isotonic import IsotonicRegression

    return np.asarray(IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(p, theta).predict(p))


def _small_cells(a: np.ndarray, theta: np.ndarray, k: int) -> int:
    """Rows whose (A, θ) cell has k or fewer rows: the estimator uses k = cell size − 1 for them."""
    cell = a.astype(np.int64) * 2 + theta.astype(np.int64)
    size = np.bincount(cell)[cell]
    return int(np.sum(size <= k))


def t1_cmi(table: pd.DataFrame, level: float = LEVEL, k: int = CMI_K, n_boot: int = N_BOOT,
           n_perm: int = N_PERM, seed: int = 0, renormalise: bool = False, average: bool = False,
           rule: str = T1A_RULE, calibrate: bool = False, **_: Any) -> dict[str, Any]:
    """T1a: kNN CMI I(A; θ | p) with the bootstrap interval, decided by ``rule`` (:data:`T1A_RULES`);
    ``calibrate``: on App. F's isotonic-calibrated belief (Table 5)."""
    if rule not in T1A_RULES:
        raise BeliefTableError(f"T1a rule must be one of {', '.join(T1A_RULES)}, got {rule!r}")
    name = "t1_cmi_isotonic" if calibrate else "t1_cmi"
    rows = paired_rows(table, renormalise, average)
    if len(rows) < 2:
        return null_result(f"{name}: {len(rows)} valid pairs of a π0 belief and a decision (needs 2)", level, k=k)
    if k > len(rows) - 1:
        raise BeliefTableError(f"`k` {k} exceeds the data: {len(rows)} paired rows allow k <= {len(rows) - 1}")
    r = t1_cmi_arrays(rows["a"].to_numpy(), rows["p"].to_numpy(), rows["theta"].to_numpy(),
                      rows["group"].to_numpy(), k=k, n_boot=n_boot, n_perm=n_perm, seed=seed, level=level,
                      calibrate=calibrate)
    reject = r["reject_paper"] if rule == "paper" else bool(r["p_value"] < level)
    flags = [f"{name}: {r['n_small_cells']} rows sit in (A, θ) cells of k = {k} or fewer rows and use "
             "k = cell size − 1"] if r["n_small_cells"] else []
    return test_result(r["estimate"], r["p_value"], level, r["interval"], reject=reject, k=k,
                   reject_permutation=bool(r["p_value"] < level), reject_paper=r["reject_paper"],
                   paper_bound=r["paper_bound"], boot_sd=r["boot_sd"], boot_bias=r["boot_bias"],
                   jitter=CMI_JITTER, rule=rule, n=len(rows), flags=flags)


# ----------------------------------------------------------------------------- T1b
def classifier(backend: str, seed: int) -> Any:
    if backend == "catboost":
        try:
            from catboost import CatBoostClassifier
        except ImportError:
            raise BeliefTableError("`backend` catboost (T1b's paper learner) needs the catboost package: "
                                   "pip install 'cogtestbed[catboost]'") from None
        return CatBoostClassifier(depth=6, iterations=1000, verbose=False, random_seed=seed, thread_count=1,
                                  allow_writing_files=False)  # no catboost_info/ in the working directory
    if backend != "sklearn":
        raise InputError(f"backend must be 'sklearn' or 'catboost', got {backend!r}")
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(max_iter=GB_TREES, max_depth=GB_DEPTH, learning_rate=0.1,
                                          min_samples_leaf=10, early_stopping=False, random_state=seed)


def cv_log_loss(features: np.ndarray, y: np.ndarray, groups: np.ndarray, backend: str, seed: int,
                folds: int = CV_FOLDS) -> np.ndarray:
    """Per-row out-of-fold log-loss of a gradient-boosting classifier, folds grouped by context."""
    import sklearn.ensemble  # noqa: F401  (loads the OpenMP runtime, so that the limit below reaches it)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # small fits: threads only contend on a shared machine
        return _cv_log_loss(features, y, groups, backend, seed, folds)


def _cv_log_loss(features: np.ndarray, y: np.ndarray, groups: np.ndarray, backend: str, seed: int,
                 folds: int) -> np.ndarray:
    from sklearn.model_selection import GroupKFold

    classes = np.unique(y)
    loss = np.empty(y.size)
    n_folds = min(folds, np.unique(groups).size)
    for train, test in GroupKFold(n_splits=n_folds).split(features, y, groups):
        prob = np.full((test.size, classes.size), 1e-15)
        seen = np.unique(y[train])
        if seen.size == 1:
            prob[:, np.searchsorted(classes, seen[0])] = 1.0
        else:
            model = classifier(backend, seed).fit(features[train], y[train])
            prob[:, np.searchsorted(classes, np.asarray(model.classes_).ravel())] = model.predict_proba(features[test])
        prob = np.clip(prob, 1e-15, 1.0)
        prob /= prob.sum(axis=1, keepdims=True)
        loss[test] = -np.log(prob[np.arange(test.size), np.searchsorted(classes, y[test])])
    return loss


def t1_nested_arrays(a: np.ndarray, p: np.ndarray, theta: np.ndarray, group: np.ndarray, *,
                     context: np.ndarray | None = None, backend: str = "sklearn", n_boot: int = N_BOOT,
                     seed: int = 0, level: float = LEVEL, placebos: int = T1B_PLACEBOS) -> dict[str, Any]:
    """T1b on arrays: % log-loss improvement of A ~ (p, θ) over A ~ p (+ context features), its
    95 % context-bootstrap CI (the paper's rule), and the placebo-controlled t test
    (:data:`T1B_RULES`) against ``placebos`` locally permuted θ̃ fitted on the same folds."""
    if placebos < 2:
        raise InputError(f"T1b needs at least 2 placebos (the t test has placebos - 1 df), got {placebos}")
    base = p[:, None] if context is None else np.column_stack([p, context])
    l0 = cv_log_loss(base, a, group, backend, seed)
    l1 = cv_log_loss(np.column_stack([base, theta]), a, group, backend, seed)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    placebo_losses = np.array([cv_log_loss(np.column_stack([base, local_permutation(p, theta, group, rng)]), a,
                                           group, backend, seed).mean() for _ in range(placebos)])
    return {**nested_rules(group, l0, l1, placebo_losses, n_boot, seed, level),
            "log_loss": (float(l0.mean()), float(l1.mean()), float(placebo_losses.mean()))}


def nested_rules(group: np.ndarray, l0: np.ndarray, l1: np.ndarray, placebo_losses: np.ndarray, n_boot: int,
                 seed: int, level: float = LEVEL) -> dict[str, Any]:
    """Both T1b rules from the per-row out-of-fold log-losses of A ~ p (``l0``) and A ~ (p, θ)
    (``l1``) and the mean out-of-fold log-loss of each placebo fit A ~ (p, θ̃_m)
    (``placebo_losses``): the paper's % improvement with its 95 % context-bootstrap percentile CI
    (p-value: bootstrap share ≤ 0, +1 smoothed) and :func:`placebo_t_test`."""
    est = 100.0 * (l0.mean() - l1.mean()) / l0.mean()
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    boots = _context_bootstrap(group, l0, l1, n_boot, rng)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    placebo_improvements = 100.0 * (l0.mean() - placebo_losses) / l0.mean()
    return {"estimate": float(est), "interval": (float(lo), float(hi)),
            "p_value": float((1.0 + np.sum(boots <= 0.0)) / (1.0 + n_boot)),
            "placebo": placebo_t_test(float(est), placebo_improvements, level)}


def placebo_t_test(improvement: float, placebo_improvements: np.ndarray, level: float = LEVEL) -> dict[str, Any]:
    """T1b's placebo rule (:data:`T1B_RULES`): d = X_0 − X̄ (the improvement of θ minus the mean of
    the M placebos'), t = d / (s·√(1 + 1/M)) with s the placebos' SD, one-sided p-value from Student
    t with M − 1 df, and the two-sided (1 − 2·``level``) interval of d, whose lower end exceeds 0
    exactly when p < ``level``.  Placebos that all score the same (the model ignores the feature)
    leave s = 0: p = 1 unless d > 0."""
    from scipy import stats  # here, not at the top: a first simulate need not import scipy.stats (0.5 s)
    m = placebo_improvements.size
    diff = improvement - float(placebo_improvements.mean())
    se = float(placebo_improvements.std(ddof=1)) * math.sqrt(1.0 + 1.0 / m)
    if se > 0.0:
        p_value = float(stats.t.sf(diff / se, m - 1))
        half = float(stats.t.ppf(1.0 - level, m - 1)) * se
    else:
        p_value, half = (0.0 if diff > 0.0 else 1.0), 0.0
    return {"estimate": float(placebo_improvements.mean()), "difference": diff,
            "interval": (diff - half, diff + half), "p_value": p_value, "placebos": m,
            "improvements": [float(x) for x in placebo_improvements]}


def _context_bootstrap(group: np.ndarray, l0: np.ndarray, l1: np.ndarray, n_boot: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Context-bootstrap replicates of the % improvement of θ (losses ``l1``) over p (``l0``):
    100·(S0 − S1)/S0 with the context sums weighted by one multinomial draw per replicate."""
    uniq, inv = np.unique(group, return_inverse=True)
    s0, s1 = np.bincount(inv, l0), np.bincount(inv, l1)
    boots = np.empty(n_boot)
    for b in range(n_boot):
        w = np.bincount(rng.integers(0, uniq.size, uniq.size), minlength=uniq.size)
        boots[b] = 100.0 * (w @ s0 - w @ s1) / (w @ s0)
    return boots


def _context_features(table: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    import json

    ev = table.loc[table["phase"] == "decision", ["subject", "context_id", "evidence"]].drop_duplicates(
        ["subject", "context_id"])
    merged = rows[["subject", "context_id"]].merge(ev, on=["subject", "context_id"], how="left")
    frame = pd.DataFrame([json.loads(e) for e in merged["evidence"]])
    return pd.get_dummies(frame, dtype=np.float64).to_numpy()


def t1_nested(table: pd.DataFrame, level: float = LEVEL, backend: str = "sklearn", context: bool = False,
              n_boot: int = N_BOOT, seed: int = 0, renormalise: bool = False, average: bool = False,
              rule: str = T1B_RULE, placebos: int = T1B_PLACEBOS, **_: Any) -> dict[str, Any]:
    """T1b: nested prediction A ~ p vs A ~ (p, θ) (``context``: A ~ (p, x) vs A ~ (p, x, θ)), decided
    by ``rule`` (:data:`T1B_RULES`, ``placebos`` fits for the placebo rule); both rules' intervals,
    p-values and decisions are in ``rules``."""
    if rule not in T1B_RULES:
        raise InputError(f"T1b rule must be one of {', '.join(T1B_RULES)}, got {rule!r}")
    rows = paired_rows(table, renormalise, average)
    if rows["group"].nunique() < 2:
        return null_result("t1_nested: fewer than 2 contexts with a valid π0 belief and decision (grouped CV needs 2)",
                     level, rule=rule, backend=backend)
    ctx = _context_features(table, rows) if context else None
    r = t1_nested_arrays(rows["a"].to_numpy(), rows["p"].to_numpy(), rows["theta"].to_numpy(),
                         rows["group"].to_numpy(), context=ctx, backend=backend, n_boot=n_boot, seed=seed,
                         level=level, placebos=placebos)
    pl = r["placebo"]
    rules = {"paper": {"estimate": r["estimate"], "lo": r["interval"][0], "hi": r["interval"][1],
                       "p_value": r["p_value"], "reject": bool(r["interval"][0] > 0)},
             "placebo": {"estimate": pl["difference"], "lo": pl["interval"][0], "hi": pl["interval"][1],
                         "p_value": pl["p_value"], "reject": bool(pl["p_value"] < level),
                         "placebos": pl["placebos"], "placebo_improvements": pl["improvements"]}}
    return test_result(r["estimate"], rules[rule]["p_value"], level, r["interval"], reject=rules[rule]["reject"],
                   placebo_estimate=pl["estimate"], reject_paper=rules["paper"]["reject"],
                   reject_placebo=rules["placebo"]["reject"], log_loss_p=r["log_loss"][0],
                   log_loss_p_theta=r["log_loss"][1], log_loss_p_placebo=r["log_loss"][2], rule=rule,
                   rules=rules, backend=backend, context=context, folds=CV_FOLDS, n=len(rows))


# ----------------------------------------------------------------------------- T2

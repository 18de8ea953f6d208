"""Rationality tests of belief coherence (Yamin et al. 2026, §3) as plain functions of a trial table.

Data unit: one row per (subject, context, repetition) pairing the π0 belief p_E with the decision
A ∈ {No, Yes, Defer} (separate calls) and θ.  Every test returns a dict with ``estimate``, an
interval ``lo`` / ``hi`` and/or ``p_value``, and ``reject`` at ``level``; in the metrics result
(:func:`belief_metrics`) its numbers and bools are the headline and its tables and settings
(T2's pairs, T3's variants, accuracy by variant, the T1b backend) are under ``details``:

* ``t1_cmi`` (T1a): kNN estimate of I(A; θ | p_E) with k = 3 — the mixed discrete/continuous
  Frenzel–Pompe / KSG estimator with Mesner & Shalizi's (2020) tie rule — on reports jittered by
  U(−.025, .025) (:data:`CMI_JITTER`: the tie rule alone is biased far below 0 when repetitions tie
  or reports are rounded to .05); a context-bootstrap interval estimate ± 1.96·SD (the symmetric form
  of Table 1's, so it contains its estimate) with the paper's rule (lower end above 0) as
  ``rule="paper"``, and a local-permutation null (θ exchanged among contexts of similar p_E; Runge
  2018), whose p-value is the default decision; ``t1_cmi_isotonic``: the same on App. F's
  isotonic-calibrated belief (Table 5);
* ``t1_nested`` (T1b): cross-validated log-loss of A ~ p vs A ~ (p, θ) by gradient boosting with
  grouped folds (group = context), % improvement with a context-bootstrap CI (rule: lower > 0),
  and a placebo-controlled option (the same model on a locally permuted θ, paired bootstrap);
* ``t1_lr`` (T1c): likelihood-ratio test of the multinomial logit A ~ 1 + p against
  A ~ 1 + p + θ (exact Newton–Raphson, χ² with (#actions − 1) df);
* ``t2``: monotone pairwise shares (Prop. 3.6, Eq. 5) in K quantile bins of p_E, one-sided exact
  (Fisher) tests for every bin pair that violates the direction, % of violating pairs; directions
  "increasing" (the paper) or "either" (Prop. 3.6: reject only if both directions are rejected);
  optional Holm correction; the decision calibrates the smallest mid-p over all tests by
  permuting decisions (exact at flat shares; the paper's "any pair significant" is an option);
* ``t3``: prompt consistency — RMSE between each variant's repetition-averaged reports and π0's
  (Table 3's caption; the per-repetition reading as ``reading="per-rep"``), with the within-π0 SD
  and their ratio (``None`` when the SD is 0: noise-free reports leave it undefined); one
  permutation test of the largest variant statistic, all belief labels exchanged within contexts
  (exact under exchangeable reports, no multiplicity correction);
* ``t4``: law of iterated expectations (Eq. 6) — median Δ_LIE/p with a bootstrap CI, against a
  cross-validated random-forest baseline trained on patients drawn from the ground truth; blocks
  with p_E = 0 (Δ/p undefined) are dropped and counted (``dropped_p0_zero``);
* ``accuracy``: RMSE of p_E against p* by variant, with a bias test.

Every test reads the table in call-key order (:func:`canonical_table`), so a permuted table gives
identical numbers; a test without usable input is null with its reason (:func:`_null`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from cogtestbed.errors import DataError, InputError
from cogtestbed.metrics_result import MetricOption

#: Default test level.
LEVEL = 0.05
#: kNN neighbours of the CMI estimator (the paper's k).
CMI_K = 3
#: Bootstrap resamples of the paper's CMI CI and of the other intervals.
N_BOOT = 500
#: Permutations of the local-permutation and prompt-consistency nulls.
N_PERM = 200
#: Contexts per block of the local permutation of θ (contexts sorted by their mean p_E).
PERM_BLOCK = 5
#: Quantile bins of T2 (K = 5 fits the multiples of 10 % in the paper's Table 2).
T2_BINS = 5
#: T2's decision rules: ``permutation`` (default) — the smallest one-sided mid-p over all (choice
#: pair, bin pair) tests, calibrated by permuting decisions across rows: size α at flat shares (the
#: least-favourable null), below α where shares are strictly monotone; ``any-pair`` — the paper's
#: reading, reject when any single exact test is significant (no correction across the tests).
T2_RULES = ("permutation", "any-pair")
T2_RULE = "permutation"
#: Folds of the grouped cross-validation of T1b (the paper does not give the count).
CV_FOLDS = 5
#: T1b's decision rules: ``placebo`` (default) — a placebo-controlled comparison: M placebos θ̃_m
#: (:data:`T1B_PLACEBOS`) drawn by the local permutation of T1a (θ exchanged among contexts of
#: similar p; Runge 2018), each fitted by the same grouped-CV model on the same folds; under the null
#: (A ⊥ θ | p) θ and the θ̃_m are exchangeable given p, so their cross-validated improvements
#: X_0, X_1, …, X_M are exchangeable, and the statistic (X_0 − X̄_{1..M}) / (s_{1..M}·√(1 + 1/M)) is
#: Student-t with M − 1 df when the improvements are jointly normal (an equicorrelated normal
#: vector: the shared part cancels in both the difference and s), which covers the fold-level noise
#: of the fits that a bootstrap over contexts misses; reject when its one-sided p-value < α.
#: ``paper`` — reject when the lower end of the 95 % context-bootstrap CI of improvement(θ) exceeds
#: 0 (one-sided 2.5 %, and conservative: under the null an uninformative θ only adds variance, so
#: the improvement is negative; .013 at α = .05, 200 × 5).
T1B_RULES = ("placebo", "paper")
T1B_RULE = "placebo"
#: Placebo fits of T1b's placebo rule (M; the t statistic has M − 1 df).  Four balance cost and
#: power: each placebo is one more grouped-CV fit (six in all with A ~ p and A ~ (p, θ)); the
#: one-sided t critical value falls from 2.35·√1.25 (M = 4) to 1.86·√1.11 (M = 9).
T1B_PLACEBOS = 4
#: Patients simulated per context for the T4 random-forest baseline, and its forest size.
T4_BASELINE_PATIENTS = 10
RF_TREES = 50
#: Gradient boosting of T1b: the default is scikit-learn's histogram gradient boosting (100 trees of
#: depth 3, single-threaded), not the paper's learner; App. E's CatBoost (depth 6, 1,000 iterations)
#: is the named variant ``backend="catboost"`` (the ``catboost`` extra: 269 MB installed; T1b with
#: its 4 placebos at 200 × 5 takes 13.5 s CPU against 2.1 s for the default,
#: ``benchmarks/studies/belief_t1b_catboost.py``).
GB_TREES, GB_DEPTH = 100, 3
#: Δ_LIE/p below this is rounding error (a coherent agent's mixture differs from p in the 16th digit).
LIE_TOL = 1e-9
DECISION_CODES = {"No": 0, "Yes": 1, "Defer": 2}
PAIRS = (("Y/(N+Y)", 1, 0), ("Y/(D+Y)", 1, 2), ("D/(N+D)", 2, 0))


# ----------------------------------------------------------------------------- table checks
#: The key of one call: a belief per (subject, context, rep, variant), one decision and one LIE
#: distribution per (subject, context, rep), a conditional belief per state of z.  Analyses sort by
#: it, so that a permuted table gives the same numbers to the last bit.
ROW_KEYS = ("subject", "context_id", "rep", "phase", "variant", "aux_state")
#: Bounds of the options (:func:`check_options`): resamples and permutations are timed loops.
MAX_RESAMPLES = 100_000
MAX_T2_BINS = 100
MAX_PLACEBOS = 100
PROB_PHASES = ("belief", "lie_cond")


class BeliefTableError(DataError):
    """A belief-coherence table or option the tests cannot use (one line: what, where, why)."""


def check_options(level: float = LEVEL, k: int = CMI_K, n_boot: int = N_BOOT, n_perm: int = N_PERM,
                  t2_bins: int = T2_BINS, t1b_placebos: int = T1B_PLACEBOS, seed: int = 0, **_: Any) -> None:
    """Refuse options no test can honour (one line each): level in (0, 1); k ≥ 1 (k within the data
    is checked by T1a); 1 ≤ n_boot, n_perm ≤ :data:`MAX_RESAMPLES`; 2 ≤ t2_bins ≤ :data:`MAX_T2_BINS`;
    2 ≤ t1b_placebos ≤ :data:`MAX_PLACEBOS`; seed ≥ 0."""
    if not 0.0 < float(level) < 1.0:
        raise BeliefTableError(f"--level must lie in (0, 1), got {level}")
    bounds = {"k": (k, 1, None), "n_boot": (n_boot, 1, MAX_RESAMPLES), "n_perm": (n_perm, 1, MAX_RESAMPLES),
              "t2_bins": (t2_bins, 2, MAX_T2_BINS), "t1b_placebos": (t1b_placebos, 2, MAX_PLACEBOS),
              "seed": (seed, 0, None)}
    for name, (value, low, high) in bounds.items():
        if int(value) != value or value < low or (high is not None and value > high):
            span = f">= {low}" if high is None else f"in {low}..{high}"
            raise BeliefTableError(f"--{name.replace('_', '-')} must be an integer {span}, got {value}")


def canonical_table(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The table sorted by :data:`ROW_KEYS` with answers that carry no number marked invalid, and
    the flags saying so; refuses (:class:`BeliefTableError`, one line naming row and value) a
    table whose keys repeat (the belief/decision merge would become a cross product), a belief row
    without a finite ``p_true``, or a decision outside No / Yes / Defer."""
    need = {"phase", "variant", "context_id", "rep", "p_elicited", "decision", "theta", "p_true", "subject",
            "valid"}
    missing = need - set(table.columns)
    if missing:
        raise BeliefTableError(f"not a belief-coherence trial table: lacks {', '.join(sorted(missing))}")
    keys = [c for c in ROW_KEYS if c in table.columns]
    text = ("phase", "variant", "aux_state")
    frame = pd.DataFrame({c: (table[c].astype("string").fillna("") if c in text
                              else pd.to_numeric(table[c], errors="coerce").fillna(-1)).to_numpy() for c in keys})
    dup = frame.duplicated(keep=False).to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        where = ", ".join(f"{c}={table[c].iloc[i]}" for c in keys if frame[c].iloc[i] != "")
        raise BeliefTableError(f"belief-coherence table: {int(dup.sum())} rows repeat a call's key "
                               f"({', '.join(keys)}), e.g. row {i} ({where}): one row per call is expected "
                               "(one belief per context, rep and variant; one decision per context and rep)")
    order = frame.sort_values(keys, kind="stable").index.to_numpy()
    out = table.iloc[order].reset_index(drop=True)
    phase = out["phase"].astype("string")
    valid = out["valid"].fillna(False).astype(bool).to_numpy()
    prob = phase.isin(PROB_PHASES).fillna(False).to_numpy()
    p_true = pd.to_numeric(out["p_true"], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(prob & ~np.isfinite(p_true))
    if bad.size:
        i = int(bad[0])
        raise BeliefTableError(f"belief-coherence table: {bad.size} {'/'.join(PROB_PHASES)} rows have no finite "
                               f"p_true (the ground truth), e.g. row {order[i]} (subject {out['subject'].iloc[i]}, "
                               f"context_id {out['context_id'].iloc[i]}): p_true = {out['p_true'].iloc[i]}")
    decision = out["decision"].astype("string")
    is_dec = (phase == "decision").fillna(False).to_numpy()
    unknown = np.flatnonzero(is_dec & valid & decision.notna().to_numpy()
                             & ~decision.isin(list(DECISION_CODES)).fillna(False).to_numpy())
    if unknown.size:
        i = int(unknown[0])
        raise BeliefTableError(f"belief-coherence table: row {order[i]} has decision {decision.iloc[i]!r}; "
                               f"expected one of {', '.join(DECISION_CODES)}")
    p = pd.to_numeric(out["p_elicited"], errors="coerce").to_numpy(dtype=np.float64)
    empty = valid & ((prob & ~np.isfinite(p)) | (is_dec & decision.isna().to_numpy()))
    flags = []
    if empty.any():
        out["valid"] = valid & ~empty
        flags.append(f"{int(empty.sum())} rows marked valid carry no answer (NaN p_elicited or no decision): "
                     "counted as invalid")
    return out, flags


def _null(reason: str, level: float, **extra: Any) -> dict[str, Any]:
    """The result of a test with no usable input: every number null, the reason as a flag."""
    return {"estimate": None, "p_value": None, "reject": None, "n": 0, **extra, "flags": [reason]}


# ----------------------------------------------------------------------------- data
def paired_rows(table: pd.DataFrame, renormalise: bool = False, average: bool = False) -> pd.DataFrame:
    """One row per (subject, context, rep) with p (π0 report), a (0 No, 1 Yes, 2 Defer), θ, p*.

    Rows whose belief or decision call was invalid are dropped; ``group`` identifies the
    (subject, context) for grouped resampling and cross-validation.  ``average`` replaces each
    report by the mean π0 report of its (subject, context) over the repetitions, the
    repetition-averaged belief p̄ of the errors-in-variables problem (θ is drawn once per
    context; report noise in p̄ shrinks by √r but does not vanish, so T1 keeps some excess size).
    """
    need = {"phase", "variant", "context_id", "rep", "p_elicited", "decision", "theta", "p_true", "subject"}
    missing = need - set(table.columns)
    if missing:
        raise InputError(f"not a belief-coherence trial table: lacks {', '.join(sorted(missing))}")
    col = "p_renormalised" if renormalise else "p_elicited"
    keys = ["subject", "context_id", "rep"]
    belief = table.loc[(table["phase"] == "belief") & (table["variant"] == "pi0") & table["valid"],
                       [*keys, col, "theta", "p_true"]].rename(columns={col: "p"})
    decision = table.loc[(table["phase"] == "decision") & table["valid"], [*keys, "decision"]]
    rows = belief.merge(decision, on=keys, how="inner", validate="one_to_one").dropna(subset=["p", "decision"])
    rows = rows.sort_values(keys, kind="stable")
    rows["a"] = rows["decision"].astype(str).map(DECISION_CODES).astype(np.int64)
    rows["p"] = rows["p"].astype(np.float64)
    rows["theta"] = rows["theta"].astype(np.int64)
    rows["group"] = group_ids(rows)
    if average:
        rows["p"] = rows.groupby("group")["p"].transform("mean")
    return rows.reset_index(drop=True)


def group_ids(frame: pd.DataFrame) -> np.ndarray:
    """Dense id of each row's (subject, context)."""
    key = frame["subject"].to_numpy(np.int64) * (int(frame["context_id"].max()) + 1 if len(frame) else 1) \
        + frame["context_id"].to_numpy(np.int64)
    return pd.factorize(key)[0]


def _result(estimate: float, p_value: float | None, level: float, interval: tuple[float, float] | None = None,
            reject: bool | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"estimate": _f(estimate)}
    if interval is not None:
        out["lo"], out["hi"] = _f(interval[0]), _f(interval[1])
    out["p_value"] = None if p_value is None else _f(p_value)
    if reject is None:
        reject = p_value is not None and bool(p_value < level)
    out["reject"] = bool(reject)
    out.update(extra)
    return out


def _f(x: Any) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


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
        return _null("t1_lr: no valid pair of a π0 belief and a decision", level, converged=True)
    r = t1_lr_arrays(rows["a"].to_numpy(), rows["p"].to_numpy(), rows["theta"].to_numpy())
    return _result(r["statistic"], r["p_value"], level, df=r["df"], converged=r["converged"], n=len(rows))


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
        return _null(f"{name}: {len(rows)} valid pairs of a π0 belief and a decision (needs 2)", level, k=k)
    if k > len(rows) - 1:
        raise BeliefTableError(f"--k {k} exceeds the data: {len(rows)} paired rows allow k <= {len(rows) - 1}")
    r = t1_cmi_arrays(rows["a"].to_numpy(), rows["p"].to_numpy(), rows["theta"].to_numpy(),
                      rows["group"].to_numpy(), k=k, n_boot=n_boot, n_perm=n_perm, seed=seed, level=level,
                      calibrate=calibrate)
    reject = r["reject_paper"] if rule == "paper" else bool(r["p_value"] < level)
    flags = [f"{name}: {r['n_small_cells']} rows sit in (A, θ) cells of k = {k} or fewer rows and use "
             "k = cell size − 1"] if r["n_small_cells"] else []
    return _result(r["estimate"], r["p_value"], level, r["interval"], reject=reject, k=k,
                   reject_permutation=bool(r["p_value"] < level), reject_paper=r["reject_paper"],
                   paper_bound=r["paper_bound"], boot_sd=r["boot_sd"], boot_bias=r["boot_bias"],
                   jitter=CMI_JITTER, rule=rule, n=len(rows), flags=flags)


# ----------------------------------------------------------------------------- T1b
def _classifier(backend: str, seed: int) -> Any:
    if backend == "catboost":
        try:
            from catboost import CatBoostClassifier
        except ImportError:
            raise BeliefTableError("--backend catboost (T1b's paper learner) needs the catboost package: "
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
            model = _classifier(backend, seed).fit(features[train], y[train])
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
        return _null("t1_nested: fewer than 2 contexts with a valid π0 belief and decision (grouped CV needs 2)",
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
    return _result(r["estimate"], rules[rule]["p_value"], level, r["interval"], reject=rules[rule]["reject"],
                   placebo_estimate=pl["estimate"], reject_paper=rules["paper"]["reject"],
                   reject_placebo=rules["placebo"]["reject"], log_loss_p=r["log_loss"][0],
                   log_loss_p_theta=r["log_loss"][1], log_loss_p_placebo=r["log_loss"][2], rule=rule,
                   rules=rules, backend=backend, context=context, folds=CV_FOLDS, n=len(rows))


# ----------------------------------------------------------------------------- T2
def quantile_bins(p: np.ndarray, k: int) -> np.ndarray:
    """Bin index of each p in K quantile bins; tied edges merge (fewer bins, in order)."""
    edges = np.unique(np.quantile(p, np.linspace(0.0, 1.0, k + 1)[1:-1]))
    return np.searchsorted(edges, p, side="right")


def fisher_one_sided(hits_j: np.ndarray, tot_j: np.ndarray, hits_k: np.ndarray, tot_k: np.ndarray,
                     mid: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Fisher exact p-values of 2 × 2 tables (bin j: ``hits_j`` of ``tot_j``; bin k).

    X = hits in bin j given both margins is hypergeometric (M = tot_j + tot_k, n = hits_j + hits_k,
    N = tot_j).  Returns (P(X ≥ x), P(X ≤ x)): small when s_j > s_k, resp. s_j < s_k.  ``mid``
    gives Lancaster's mid-p, P(X > x) + ½P(X = x) (resp. P(X < x) + ½P(X = x)), whose null
    distribution is centred on uniform instead of stochastically larger (Lancaster 1961).
    A table with an empty bin gets p = 1.  Arrays of any (broadcastable) shape.
    """
    big_m, succ = tot_j + tot_k, hits_j + hits_k
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = stats.hypergeom.sf(hits_j - 1, big_m, succ, tot_j)
        lower = stats.hypergeom.cdf(hits_j, big_m, succ, tot_j)
        if mid:
            half = 0.5 * stats.hypergeom.pmf(hits_j, big_m, succ, tot_j)
            upper, lower = upper - half, lower - half
    empty = (tot_j == 0) | (tot_k == 0)
    return np.where(empty, 1.0, upper), np.where(empty, 1.0, lower)


def _share_counts(a: np.ndarray, bins: np.ndarray, nb: int, a1: int, a2: int) -> tuple[np.ndarray, np.ndarray]:
    """Per bin (last axis): rows choosing ``a1`` and rows choosing ``a1`` or ``a2``; ``a`` may be
    (B, n) for B permuted decision vectors."""
    a2d = np.atleast_2d(a)
    offset = (np.arange(a2d.shape[0]) * nb)[:, None] + bins[None, :]
    size = a2d.shape[0] * nb
    hits = np.bincount(offset[a2d == a1], minlength=size).reshape(-1, nb)
    tot = hits + np.bincount(offset[a2d == a2], minlength=size).reshape(-1, nb)
    return hits, tot


def pair_violations(a: np.ndarray, bins: np.ndarray, a1: int, a2: int, mid: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
    """One-sided exact p-values of every bin pair j < k for s = Pr(a1 | a1 or a2).

    Returns (p_increasing, p_decreasing): p-values of H0 s_j ≤ s_k (a violation of increasing
    shares) and of H0 s_j ≥ s_k, by Fisher's exact test (:func:`fisher_one_sided`; ``mid``: mid-p).
    ``a`` may be (B, n): then each is (B, n_bin_pairs).
    """
    nb = int(bins.max()) + 1 if bins.size else 0
    hits, tot = _share_counts(a, bins, nb, a1, a2)
    j, k = np.triu_indices(nb, 1)
    p_inc, p_dec = fisher_one_sided(hits[:, j], tot[:, j], hits[:, k], tot[:, k], mid)
    return (p_inc[0], p_dec[0]) if np.ndim(a) == 1 else (p_inc, p_dec)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values."""
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p)
    adj = np.maximum.accumulate(np.minimum((m - np.arange(m)) * p[order], 1.0))
    out = np.empty(m)
    out[order] = adj
    return out


def t2_statistic(a: np.ndarray, bins: np.ndarray, direction: str = "increasing") -> np.ndarray:
    """T2's global statistic: the smallest one-sided mid-p over the three choice pairs and all bin
    pairs (``either``: per choice pair the larger of its two directions' minima, the
    intersection-union rule).  ``a``: (n,) or (B, n) decision vectors; returns one value per vector."""
    a2d = np.atleast_2d(a)
    per_pair = []
    for _, a1, a2 in PAIRS:
        p_inc, p_dec = pair_violations(a2d, bins, a1, a2, mid=True)
        if p_inc.shape[1] == 0:
            per_pair.append(np.ones(a2d.shape[0]))
            continue
        low_inc, low_dec = p_inc.min(axis=1), p_dec.min(axis=1)
        per_pair.append(low_inc if direction == "increasing" else np.maximum(low_inc, low_dec))
    return np.min(per_pair, axis=0)


def t2_permutation_p(a: np.ndarray, bins: np.ndarray, direction: str, n_perm: int, rng: np.random.Generator,
                     chunk: int = 100) -> tuple[float, float]:
    """(observed :func:`t2_statistic`, its permutation p-value (1 + #{T_b ≤ T})/(1 + B)).

    Decisions are permuted across rows, which is exact when the choice shares are flat in p_E
    (A ⊥ p_E, e.g. Remark 3.4's random agent): the least-favourable point of the monotone null,
    since strictly monotone shares make violations rarer than under flat shares (conservative in
    the interior).  The permutation distribution of the minimum handles the 3 × K(K−1)/2 tests.
    """
    obs = float(t2_statistic(a, bins, direction)[0])
    count = 0
    for start in range(0, n_perm, chunk):
        perms = rng.permuted(np.broadcast_to(a, (min(chunk, n_perm - start), a.size)), axis=1)
        count += int(np.sum(t2_statistic(perms, bins, direction) <= obs * (1.0 + 1e-9)))
    return obs, (1.0 + count) / (1.0 + n_perm)


def t2_arrays(a: np.ndarray, p: np.ndarray, *, k: int = T2_BINS, direction: str = "increasing",
              use_holm: bool = False, level: float = LEVEL, rule: str = T2_RULE, n_perm: int = N_PERM,
              seed: int = 0) -> dict[str, Any]:
    """T2 on arrays: per choice pair the % of bin pairs with a significant violation (exact Fisher,
    Holm within the pair with ``use_holm``) and the decision's p-value by ``rule`` (:data:`T2_RULES`)."""
    if direction not in ("increasing", "either"):
        raise InputError(f"direction must be 'increasing' or 'either', got {direction!r}")
    if rule not in T2_RULES:
        raise InputError(f"T2 rule must be one of {', '.join(T2_RULES)}, got {rule!r}")
    if rule == "permutation" and n_perm < 1:
        raise InputError(f"the T2 permutation rule needs n_perm >= 1, got {n_perm}")
    bins = quantile_bins(p, k)
    out: dict[str, Any] = {}
    p_all = []
    for name, a1, a2 in PAIRS:
        p_inc, p_dec = pair_violations(a, bins, a1, a2)
        if use_holm:
            p_inc, p_dec = holm(p_inc), holm(p_dec)
        n_pairs = p_inc.size
        pct_inc = 100.0 * float(np.mean(p_inc < level)) if n_pairs else 0.0
        pct_dec = 100.0 * float(np.mean(p_dec < level)) if n_pairs else 0.0
        min_inc = float(p_inc.min()) if n_pairs else 1.0
        min_dec = float(p_dec.min()) if n_pairs else 1.0
        # "either": monotone decreasing is rational too, so a pair is rejected only when both
        # directions are (intersection-union test: p = max of the two)
        p_pair = min_inc if direction == "increasing" else max(min_inc, min_dec)
        p_all.append(p_pair)
        out[name] = {"pct_violating": pct_inc if direction == "increasing" else min(pct_inc, pct_dec),
                     "pct_violating_increasing": pct_inc, "pct_violating_decreasing": pct_dec,
                     "p_value": p_pair, "n_bin_pairs": int(n_pairs)}
    p_min = float(min(p_all))
    if rule == "permutation":
        rng = np.random.default_rng(np.random.SeedSequence([seed, 6]))
        statistic, p_value = t2_permutation_p(np.asarray(a, dtype=np.int64), bins, direction, n_perm, rng)
    else:
        statistic, p_value = p_min, p_min
    return {"pairs": out, "p_value": float(p_value), "p_min": p_min, "statistic": statistic, "rule": rule,
            "n_bins": int(bins.max()) + 1 if bins.size else 0}


def t2(table: pd.DataFrame, level: float = LEVEL, t2_bins: int = T2_BINS, direction: str = "increasing",
       use_holm: bool = False, renormalise: bool = False, average: bool = False, rule: str = T2_RULE,
       n_perm: int = N_PERM, seed: int = 0, **_: Any) -> dict[str, Any]:
    """T2: monotone pairwise choice shares (Prop. 3.6).  ``estimate`` is the largest % of violating
    bin pairs over the three choice pairs (exact Fisher tests at ``level``, Holm within a pair
    with ``use_holm``).  Decision (``rule``): ``permutation`` calibrates the smallest mid-p over all
    tests by permuting decisions (size α at flat shares, :func:`t2_permutation_p`); ``any-pair``
    is the paper's reading, reject when any single test is significant (no correction across
    the 3 × K(K−1)/2 tests, so above α at flat shares)."""
    rows = paired_rows(table, renormalise, average)
    if rows.empty:
        return _null("t2: no valid pair of a π0 belief and a decision", level, rule=rule)
    if np.unique(quantile_bins(rows["p"].to_numpy(), t2_bins)).size < 2:
        return _null("t2: every report falls in one quantile bin, so no bin pair can be compared", level,
                     rule=rule)
    r = t2_arrays(rows["a"].to_numpy(), rows["p"].to_numpy(), k=t2_bins, direction=direction,
                  use_holm=use_holm, level=level, rule=rule, n_perm=n_perm, seed=seed)
    est = max(v["pct_violating"] for v in r["pairs"].values())
    flags = [] if r["n_bins"] == t2_bins else [f"t2: tied quantile edges merged {t2_bins} bins into {r['n_bins']}"]
    return _result(est, r["p_value"], level, pairs=r["pairs"], n_bins=r["n_bins"], direction=direction,
                   holm=use_holm, rule=rule, p_min=r["p_min"], flags=flags)


# ----------------------------------------------------------------------------- T3
#: T3's readings of the RMSE against π0: ``averaged`` (default; Table 3's caption: "pairwise RMSE
#: between repetition-averaged elicited probabilities", √mean_x (mean_v(x) − mean_π0(x))²) or
#: ``per-rep`` (each repetition's report against the π0 mean of its context).
T3_READINGS = ("averaged", "per-rep")
T3_READING = "averaged"


def t3(table: pd.DataFrame, level: float = LEVEL, n_perm: int = N_PERM, seed: int = 0,
       reading: str = T3_READING, **_: Any) -> dict[str, Any]:
    """T3: prompt consistency.  Per variant: RMSE against π0 (``reading``, :data:`T3_READINGS`),
    next to the within-π0 SD across repetitions, and the statistic
    mean over contexts of (mean_variant − mean_π0)².  Decision: one permutation test of the largest
    statistic over the variants, exchanging all belief labels (π0 and every variant) within each
    context — exact when the variants are exchangeable with π0 (H0), so no multiplicity
    correction is needed; each variant's own permutation p-value is reported too."""
    bel = table.loc[(table["phase"] == "belief") & table["valid"],
                    ["subject", "context_id", "rep", "variant", "p_elicited"]].dropna()
    bel = bel.assign(group=group_ids(bel))
    pi0 = bel[bel["variant"] == "pi0"]
    if pi0.empty:
        return _null("t3: no valid π0 belief", level)
    mean0 = pi0.groupby("group")["p_elicited"].mean()
    sd0 = float(np.sqrt(pi0.groupby("group")["p_elicited"].var(ddof=1).mean())) if len(pi0) else math.nan
    names = sorted(set(bel["variant"]) - {"pi0"})
    if not names:
        return _result(math.nan, None, level, sd_pi0=sd0, variants={}, flags=["t3: no prompt variants"])
    bel = bel[bel["group"].isin(mean0.index)]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    p_each, p_global = _variant_permutation(bel, names, n_perm, rng)
    if reading not in T3_READINGS:
        raise BeliefTableError(f"T3 reading must be one of {', '.join(T3_READINGS)}, got {reading!r}")
    variants: dict[str, Any] = {}
    for v, p_v in zip(names, p_each, strict=True):
        alt = bel[bel["variant"] == v]
        if reading == "averaged":
            mean_v = alt.groupby("group")["p_elicited"].mean()
            diff = mean_v.to_numpy() - mean0.loc[mean_v.index].to_numpy()
        else:
            diff = alt["p_elicited"].to_numpy() - mean0.loc[alt["group"]].to_numpy()
        rmse = float(np.sqrt(np.mean(diff**2)))
        variants[v] = {"rmse": rmse, "p_value": float(p_v), "ratio_to_sd": rmse / sd0 if sd0 > 0 else None}
    est = max(x["rmse"] for x in variants.values())
    return _result(est, p_global, level, sd_pi0=sd0, variants=variants, reading=reading)


def _variant_permutation(bel: pd.DataFrame, names: list[str], n_perm: int, rng: np.random.Generator
                         ) -> tuple[np.ndarray, float]:
    """Permutation p-values of S_v = mean_x (mean_v(x) − mean_π0(x))² per variant v and of max_v S_v,
    all belief labels exchanged within each context x: (1 + #{S_b ≥ S})/(1 + B)."""
    codes = {"pi0": 0, **{v: i + 1 for i, v in enumerate(names)}}
    both = bel.assign(lab=bel["variant"].map(codes)).sort_values(["group", "lab", "rep"], kind="stable")
    g = pd.factorize(both["group"])[0]
    y = both["p_elicited"].to_numpy(dtype=np.float64)
    lab = both["lab"].to_numpy(dtype=np.int64)
    m1, ng = len(names) + 1, int(g.max()) + 1
    n = np.bincount(g * m1 + lab, minlength=ng * m1).reshape(ng, m1).astype(np.float64)
    both_seen = (n[:, 1:] > 0) & (n[:, [0]] > 0)

    def stat(labels: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.bincount(g * m1 + labels, y, ng * m1).reshape(ng, m1) / n
        d2 = np.where(both_seen, (means[:, 1:] - means[:, [0]]) ** 2, 0.0)
        return d2.sum(axis=0) / np.maximum(both_seen.sum(axis=0), 1)

    obs = stat(lab)
    count = np.zeros(len(names))
    count_max = 0
    for _ in range(n_perm):
        s = stat(lab[np.lexsort((rng.random(lab.size), g))])  # labels shuffled within each context
        count += s >= obs - 1e-15
        count_max += int(s.max() >= obs.max() - 1e-15)
    return (1.0 + count) / (1.0 + n_perm), (1.0 + count_max) / (1.0 + n_perm)


# ----------------------------------------------------------------------------- T4
def _aux_distribution(reported: Any, true: Any, key: tuple[Any, ...]) -> dict[str, float]:
    """The reported P_E(z | x) of one LIE block, refused in one line unless it is a JSON object over
    exactly the states of ``aux_true`` with finite values in [0, 1] (sums other than one are kept as
    reported, as a belief answer's are)."""
    import json

    where = f"aux_reported of subject {key[0]}, context_id {key[1]}, rep {key[2]}"
    try:
        dist = json.loads(str(reported))
        states = list(json.loads(str(true)))
    except (TypeError, ValueError):
        raise BeliefTableError(f"belief-coherence table: {where} is not a JSON object: "
                               f"{str(reported)[:80]!r}") from None
    if not isinstance(dist, dict) or sorted(dist) != sorted(states):
        raise BeliefTableError(f"belief-coherence table: {where} = {str(reported)[:80]} does not cover exactly the "
                               f"states {states}")
    for state, value in dist.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
            raise BeliefTableError(f"belief-coherence table: {where}: P({state}) = {value!r} is not a probability "
                                   "in [0, 1]")
    return {s: float(v) for s, v in dist.items()}


def lie_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Per (subject, context, rep): p0 = π0 report, Σ_j P_E(θ|x,z_j) P_E(z_j|x), and truth."""
    import json

    keys = ["subject", "context_id", "rep"]
    if "aux_reported" not in table.columns or not (table["phase"] == "lie_aux").any():
        return pd.DataFrame(columns=[*keys, "p0", "mixture", "ratio"])
    p0 = table.loc[(table["phase"] == "belief") & (table["variant"] == "pi0") & table["valid"],
                   [*keys, "p_elicited"]].rename(columns={"p_elicited": "p0"})
    aux = table.loc[(table["phase"] == "lie_aux") & table["valid"], [*keys, "aux_reported", "aux_true"]]
    cond = table.loc[(table["phase"] == "lie_cond") & table["valid"], [*keys, "aux_state", "p_elicited", "p_true"]]
    # each (subject, context, rep)'s conditional reports and truths by state, as plain dicts (a
    # MultiIndex look-up per row costs more than the rest of the loop)
    wide = _rows_by_key(cond.pivot_table(index=keys, columns="aux_state", values="p_elicited", aggfunc="first"))
    truth = _rows_by_key(cond.pivot_table(index=keys, columns="aux_state", values="p_true", aggfunc="first"))
    rows = []
    for rec in aux.itertuples(index=False):
        key = (rec.subject, rec.context_id, rec.rep)
        conds = wide.get(key)
        if conds is None:
            continue
        dist = _aux_distribution(rec.aux_reported, rec.aux_true, key)
        if any(pd.isna(conds.get(s)) for s in dist):
            continue
        mixture = sum(float(conds[s]) * w for s, w in dist.items())
        true_z = json.loads(str(rec.aux_true))
        rows.append((*key, mixture, json.dumps({s: float(truth[key][s]) for s in true_z}), rec.aux_true))
    frame = pd.DataFrame(rows, columns=[*keys, "mixture", "p_cond_true", "p_z_true"])
    out = frame.merge(p0, on=keys, how="inner")
    out = out.dropna(subset=["p0"]).sort_values(keys, kind="stable").reset_index(drop=True)
    zero = (out["p0"] == 0.0).to_numpy()
    out = out.loc[~zero].reset_index(drop=True)
    out["ratio"] = np.abs(out["p0"] - out["mixture"]) / out["p0"]
    out.attrs["dropped_p0_zero"] = int(zero.sum())
    return out


def _rows_by_key(frame: pd.DataFrame) -> dict[tuple[Any, ...], dict[Any, Any]]:
    """``frame``'s rows as ``{index tuple: {column: value}}``."""
    return dict(zip(frame.index, frame.to_dict("records"), strict=True))


def rf_baseline(lie: pd.DataFrame, table: pd.DataFrame, seed: int,
                patients: int = T4_BASELINE_PATIENTS) -> float | None:
    """Median Δ̂_LIE/p̂ of cross-validated random forests fitted to patients drawn from the
    ground truth of the table's contexts (z ~ P*(z|x), θ ~ P*(θ|x,z)): p̂(x), p̂(x,z), P̂(z|x).
    None where the table's LIE blocks hold fewer than two distinct contexts: the forests are
    cross-validated by context (grouped folds), which needs two at least."""
    import json

    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import GroupKFold, cross_val_predict

    rng = np.random.default_rng(np.random.SeedSequence([seed, 4]))
    ctx = lie.drop_duplicates(["subject", "context_id"])
    ev = table.loc[table["phase"] == "belief", ["subject", "context_id", "evidence"]].drop_duplicates(
        ["subject", "context_id"])
    ctx = ctx.merge(ev, on=["subject", "context_id"], how="left").drop_duplicates("evidence")
    x_frame = pd.get_dummies(pd.DataFrame([json.loads(e) for e in ctx["evidence"]]), dtype=np.float64)
    x_ctx = x_frame.to_numpy()
    zs = list(json.loads(str(ctx["p_z_true"].iloc[0])))
    pz = np.array([[json.loads(str(r))[s] for s in zs] for r in ctx["p_z_true"]])
    pc = np.array([[json.loads(str(r))[s] for s in zs] for r in ctx["p_cond_true"]])
    n_ctx = len(ctx)
    if n_ctx < 2:
        return None
    c_idx = np.repeat(np.arange(n_ctx), patients)
    cum = np.cumsum(pz[c_idx], axis=1)
    z = np.minimum((rng.random(c_idx.size)[:, None] > cum).sum(axis=1), len(zs) - 1)
    theta = (rng.random(c_idx.size) < pc[c_idx, z]).astype(int)
    x = x_ctx[c_idx]
    z_onehot = np.eye(len(zs))[z]

    def forest() -> RandomForestClassifier:
        return RandomForestClassifier(n_estimators=RF_TREES, min_samples_leaf=5, random_state=seed, n_jobs=1)

    cv = GroupKFold(n_splits=min(CV_FOLDS, n_ctx))
    p_x = cross_val_predict(forest(), x, theta, cv=cv, groups=c_idx, method="predict_proba")[:, -1]
    p_z = cross_val_predict(forest(), x, z, cv=cv, groups=c_idx, method="predict_proba")
    m = forest().fit(np.column_stack([x, z_onehot]), theta)
    mix = np.zeros(c_idx.size)
    for j in range(min(len(zs), p_z.shape[1])):
        zj = np.zeros_like(z_onehot)
        zj[:, j] = 1.0
        mix += p_z[:, j] * m.predict_proba(np.column_stack([x, zj]))[:, -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(p_x - mix) / p_x
    per_ctx = pd.Series(ratio).groupby(c_idx).mean()
    return float(np.nanmedian(per_ctx.to_numpy()))


def t4(table: pd.DataFrame, level: float = LEVEL, n_boot: int = N_BOOT, seed: int = 0, baseline: bool = True,
       **_: Any) -> dict[str, Any]:
    """T4: median Δ_LIE/p with a context-bootstrap CI; reject when the CI's lower bound exceeds
    the random-forest baseline (0 without a baseline); p-value = bootstrap share ≤ baseline."""
    lie = lie_rows(table)
    dropped = int(lie.attrs.get("dropped_p0_zero", 0))
    if lie.empty:
        why = "no LIE phases in the table" if not (table["phase"] == "lie_aux").any() else \
            f"no complete valid LIE block with p_E > 0 ({dropped} dropped for p_E = 0)"
        return _null(f"t4: {why}", level, dropped_p0_zero=dropped)
    ratio = lie["ratio"].to_numpy()
    est = float(np.median(ratio))
    rng = np.random.default_rng(np.random.SeedSequence([seed, 5]))
    g = group_ids(lie)
    members = [np.flatnonzero(g == i) for i in range(g.max() + 1)]
    boots = np.empty(n_boot)
    for b in range(n_boot):
        pick = rng.integers(0, len(members), len(members))
        boots[b] = np.median(ratio[np.concatenate([members[i] for i in pick])])
    lo, hi = np.quantile(boots, [0.025, 0.975])
    base = rf_baseline(lie, table, seed) if baseline else 0.0
    if base is None:  # no cross-validated baseline to test against: no test (the estimate stands)
        return _null("t4: the random-forest baseline needs LIE blocks in two distinct contexts at least "
                     "(cross-validated by context); the table has one", level, estimate=est, n=len(lie),
                     dropped_p0_zero=dropped)
    p_value = (1.0 + np.sum(boots <= base + LIE_TOL)) / (1.0 + n_boot)
    flags = [f"t4: {dropped} blocks with p_E = 0 dropped (Δ_LIE/p undefined)"] if dropped else []
    return _result(est, p_value, level, (float(lo), float(hi)), reject=bool(lo > base + LIE_TOL), baseline=base,
                   n=len(lie), dropped_p0_zero=dropped, flags=flags)


# ----------------------------------------------------------------------------- accuracy
def accuracy(table: pd.DataFrame, level: float = LEVEL, **_: Any) -> dict[str, Any]:
    """RMSE of p_E against p* per variant (π0 the estimate); bias test of π0 (mean p_E − p*,
    t-test on context means)."""
    bel = table.loc[(table["phase"] == "belief") & table["valid"]].dropna(subset=["p_elicited"])
    if not (bel["variant"] == "pi0").any():
        return _null("accuracy: no valid π0 belief", level)
    err = bel["p_elicited"].astype(float) - bel["p_true"].astype(float)
    by_variant = {str(v): float(np.sqrt(np.mean(e**2))) for v, e in err.groupby(bel["variant"])}
    pi0 = bel["variant"] == "pi0"
    ctx_bias = err[pi0].groupby([bel.loc[pi0, "subject"], bel.loc[pi0, "context_id"]]).mean()
    p_value = float(stats.ttest_1samp(ctx_bias, 0.0).pvalue) if len(ctx_bias) > 1 and ctx_bias.std() > 0 else 1.0
    return _result(by_variant.get("pi0", math.nan), p_value, level, by_variant=by_variant,
                   bias=float(ctx_bias.mean()) if len(ctx_bias) else math.nan)


# ----------------------------------------------------------------------------- all metrics
#: The tests as plain functions of a trial table (each returns ``p_value`` and ``reject``).
TESTS: dict[str, Callable[..., dict[str, Any]]] = {
    "t1_cmi": t1_cmi, "t1_cmi_isotonic": functools.partial(t1_cmi, calibrate=True), "t1_nested": t1_nested,
    "t1_lr": t1_lr, "t2": t2, "t3": t3, "t4": t4, "accuracy": accuracy,
}

METRIC_OPTIONS = {
    "level": MetricOption("level", "test level α", LEVEL, None, float),
    "k": MetricOption("k", "neighbours of the kNN CMI (T1a)", CMI_K, None, int),
    "n_boot": MetricOption("n_boot", "bootstrap resamples", N_BOOT, None, int),
    "n_perm": MetricOption("n_perm", "permutations (T1a local permutation, T2, T3)", N_PERM, None, int),
    "t2_bins": MetricOption("t2_bins", "quantile bins K of T2", T2_BINS, None, int),
    "t1a_rule": MetricOption("t1a_rule", "T1a decision: permutation (local-permutation p-value) or paper "
                             "(bootstrap interval's lower end above 0, one-sided at the level)", T1A_RULE, T1A_RULES),
    "t3_reading": MetricOption("t3_reading", "T3 RMSE: averaged (Table 3: repetition-averaged reports) or per-rep",
                               T3_READING, T3_READINGS),
    "direction": MetricOption("direction", "T2 monotone direction: increasing (paper) or either",
                              "increasing", ("increasing", "either")),
    "holm": MetricOption("holm", "Holm correction within each T2 choice pair (the % violating)", "no",
                         ("yes", "no")),
    "t2_rule": MetricOption("t2_rule", "T2 decision: permutation-calibrated smallest mid-p, or any-pair (paper)",
                            T2_RULE, T2_RULES),
    "t1b_rule": MetricOption("t1b_rule", "T1b decision: placebo (improvement of θ against those of locally "
                             "permuted θ̃, t test) or paper (95 % CI of the improvement above 0)", T1B_RULE,
                             T1B_RULES),
    "t1b_placebos": MetricOption("t1b_placebos", "placebo fits of T1b's placebo rule (t with placebos - 1 df)",
                                 T1B_PLACEBOS, None, int),
    "backend": MetricOption("backend", "T1b learner: sklearn (default: histogram gradient boosting, 100 trees of "
                            "depth 3) or catboost (the paper's, App. E: depth 6, 1,000 iterations; the catboost "
                            "extra)", "sklearn", ("sklearn", "catboost")),
    "context": MetricOption("context", "T1b with context features (A~(p,x) vs A~(p,x,θ))", "no", ("yes", "no")),
    "baseline": MetricOption("baseline", "T4 random-forest baseline", "yes", ("yes", "no")),
    "average_reps": MetricOption("average_reps", "T1/T2 on the context's mean π0 report over repetitions "
                                 "(repetition-averaged belief)", "no", ("yes", "no")),
    "renormalise": MetricOption("renormalise", "use Yes/(No+Yes) instead of the reported Yes", "no",
                                ("yes", "no")),
    "seed": MetricOption("seed", "seed of bootstraps and permutations", 0, None, int),
}


def _run_test(name: str, table: pd.DataFrame, level: float = LEVEL, k: int = CMI_K, n_boot: int = N_BOOT,
              n_perm: int = N_PERM, t2_bins: int = T2_BINS, direction: str = "increasing", holm: str = "no",
              t2_rule: str = T2_RULE, t1b_rule: str = T1B_RULE, t1b_placebos: int = T1B_PLACEBOS,
              backend: str = "sklearn", context: str = "no", baseline: str = "yes", renormalise: str = "no",
              average_reps: str = "no", seed: int = 0, t1a_rule: str = T1A_RULE,
              t3_reading: str = T3_READING) -> dict[str, Any]:
    """Test ``name`` of :data:`TESTS` with the metrics options (:data:`METRIC_OPTIONS`)."""
    renorm = renormalise == "yes"
    avg = average_reps == "yes"
    calls: dict[str, Callable[[], dict[str, Any]]] = {
        "t1_cmi": lambda: t1_cmi(table, level, k=k, n_boot=n_boot, n_perm=n_perm, seed=seed, renormalise=renorm,
                                 average=avg, rule=t1a_rule),
        "t1_cmi_isotonic": lambda: t1_cmi(table, level, k=k, n_boot=n_boot, n_perm=n_perm, seed=seed,
                                          renormalise=renorm, average=avg, rule=t1a_rule, calibrate=True),
        "t1_nested": lambda: t1_nested(table, level, backend=backend, context=context == "yes", n_boot=n_boot,
                                       seed=seed, renormalise=renorm, average=avg, rule=t1b_rule,
                                       placebos=t1b_placebos),
        "t1_lr": lambda: t1_lr(table, level, renormalise=renorm, average=avg),
        "t2": lambda: t2(table, level, t2_bins=t2_bins, direction=direction, use_holm=holm == "yes",
                         renormalise=renorm, average=avg, rule=t2_rule, n_perm=n_perm, seed=seed),
        "t3": lambda: t3(table, level, n_perm=n_perm, seed=seed, reading=t3_reading),
        "t4": lambda: t4(table, level, n_boot=n_boot, seed=seed, baseline=baseline == "yes"),
        "accuracy": lambda: accuracy(table, level),
    }
    if name not in calls:
        raise InputError(f"unknown belief-coherence test {name!r}; choose one of {', '.join(calls)}")
    return calls[name]()


def split_headline(result: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(headline, details) of one test's result: numbers, bools and undefined (``None``) values
    are headline leaves; tables (mappings) and settings (strings) are details."""
    head = {k: v for k, v in result.items() if v is None or isinstance(v, (bool, int, float, np.number))}
    return head, {k: v for k, v in result.items() if k not in head and k != "flags"}


def belief_test(name: str) -> Callable[..., dict[str, Any]]:
    """The headline entry of test ``name`` alone: ``fn(table, **metrics options)``, the cheap path of
    the size and power studies (one test instead of all of :func:`belief_metrics`)."""
    def run(table: pd.DataFrame, **options: Any) -> dict[str, Any]:
        check_options(**options)
        return split_headline(_run_test(name, canonical_table(table)[0], **options))[0]

    run.__name__ = run.__qualname__ = f"belief_test_{name}"
    return run


def belief_metrics(table: pd.DataFrame, **options: Any) -> dict[str, Any]:
    """All tests (pooled over subjects: a mixture of RUMs whose types are independent of θ is a
    RUM) plus per-subject T1c and accuracy; ``options`` are :data:`METRIC_OPTIONS`.

    ``metrics`` holds each test's numbers and bools (:func:`split_headline`), ``details`` its
    tables and settings; the per-subject rows are split the same way."""
    check_options(**options)
    level = float(options.get("level", LEVEL))
    table, flags = canonical_table(table)
    results = {name: _run_test(name, table, **options) for name in TESTS}
    flags += [f for m in results.values() for f in m.pop("flags", [])]
    incoherent = table.loc[table["phase"].isin(["belief", "lie_cond"]) & table["valid"], "coherent"]
    if len(incoherent) and not incoherent.all():
        flags.append(f"{int((~incoherent.astype(bool)).sum())} belief answers do not sum to one "
                     "(recorded as reported; see p_renormalised)")
    if not results["t1_lr"].get("converged", True):
        flags.append("t1_lr: a multinomial logit did not converge (separation?)")
    split = {name: split_headline(r) for name, r in results.items()}
    per_subject = []
    for subject, part in table.groupby("subject", sort=True):
        lr = split_headline(t1_lr(part, level, renormalise=options.get("renormalise", "no") == "yes",
                                  average=options.get("average_reps", "no") == "yes"))
        acc = split_headline(accuracy(part, level))
        per_subject.append({"subject": int(subject), "t1_lr": lr[0], "accuracy": acc[0],
                            "details": {"accuracy": acc[1]}})
    return {"metrics": {name: h for name, (h, _) in split.items()}, "per_subject": per_subject,
            "n_invalid": int((~table["valid"]).sum()), "flags": flags,
            "details": {name: d for name, (_, d) in split.items() if d}}

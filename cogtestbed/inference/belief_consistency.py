"""Belief-coherence tests T2–T4 and accuracy (Yamin et al. 2026, §3): monotone decision shares in
belief (T2, Prop. 3.6, Eq. 5), prompt consistency across elicitation variants (T3), the law of
iterated expectations (T4, Eq. 6) and the accuracy of the reports against the ground truth.  See
:mod:`cogtestbed.inference.belief` for the whole battery."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.inference.belief_table import (
    CV_FOLDS,
    LEVEL,
    LIE_TOL,
    N_BOOT,
    N_PERM,
    PAIRS,
    RF_TREES,
    T2_BINS,
    T2_RULE,
    T2_RULES,
    T4_BASELINE_PATIENTS,
    BeliefTableError,
    group_ids,
    null_result,
    paired_rows,
    test_result,
)


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
    from scipy import stats  # here, not at the top: a first simulate need not import scipy.stats (0.5 s)
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
        return null_result("t2: no valid pair of a π0 belief and a decision", level, rule=rule)
    if np.unique(quantile_bins(rows["p"].to_numpy(), t2_bins)).size < 2:
        return null_result("t2: every report falls in one quantile bin, so no bin pair can be compared", level,
                     rule=rule)
    r = t2_arrays(rows["a"].to_numpy(), rows["p"].to_numpy(), k=t2_bins, direction=direction,
                  use_holm=use_holm, level=level, rule=rule, n_perm=n_perm, seed=seed)
    est = max(v["pct_violating"] for v in r["pairs"].values())
    flags = [] if r["n_bins"] == t2_bins else [f"t2: tied quantile edges merged {t2_bins} bins into {r['n_bins']}"]
    return test_result(est, r["p_value"], level, pairs=r["pairs"], n_bins=r["n_bins"], direction=direction,
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
        return null_result("t3: no valid π0 belief", level)
    mean0 = pi0.groupby("group")["p_elicited"].mean()
    sd0 = float(np.sqrt(pi0.groupby("group")["p_elicited"].var(ddof=1).mean())) if len(pi0) else math.nan
    names = sorted(set(bel["variant"]) - {"pi0"})
    if not names:
        return test_result(math.nan, None, level, sd_pi0=sd0, variants={}, flags=["t3: no prompt variants"])
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
    return test_result(est, p_global, level, sd_pi0=sd0, variants=variants, reading=reading)


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
        return null_result(f"t4: {why}", level, dropped_p0_zero=dropped)
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
        return null_result("t4: the random-forest baseline needs LIE blocks in two distinct contexts at least "
                     "(cross-validated by context); the table has one", level, estimate=est, n=len(lie),
                     dropped_p0_zero=dropped)
    p_value = (1.0 + np.sum(boots <= base + LIE_TOL)) / (1.0 + n_boot)
    flags = [f"t4: {dropped} blocks with p_E = 0 dropped (Δ_LIE/p undefined)"] if dropped else []
    return test_result(est, p_value, level, (float(lo), float(hi)), reject=bool(lo > base + LIE_TOL), baseline=base,
                   n=len(lie), dropped_p0_zero=dropped, flags=flags)


# ----------------------------------------------------------------------------- accuracy
def accuracy(table: pd.DataFrame, level: float = LEVEL, **_: Any) -> dict[str, Any]:
    """RMSE of p_E against p* per variant (π0 the estimate); bias test of π0 (mean p_E − p*,
    t-test on context means)."""
    from scipy import stats  # here, not at the top: a first simulate need not import scipy.stats (0.5 s)
    bel = table.loc[(table["phase"] == "belief") & table["valid"]].dropna(subset=["p_elicited"])
    if not (bel["variant"] == "pi0").any():
        return null_result("accuracy: no valid π0 belief", level)
    err = bel["p_elicited"].astype(float) - bel["p_true"].astype(float)
    by_variant = {str(v): float(np.sqrt(np.mean(e**2))) for v, e in err.groupby(bel["variant"])}
    pi0 = bel["variant"] == "pi0"
    ctx_bias = err[pi0].groupby([bel.loc[pi0, "subject"], bel.loc[pi0, "context_id"]]).mean()
    p_value = float(stats.ttest_1samp(ctx_bias, 0.0).pvalue) if len(ctx_bias) > 1 and ctx_bias.std() > 0 else 1.0
    return test_result(by_variant.get("pi0", math.nan), p_value, level, by_variant=by_variant,
                   bias=float(ctx_bias.mean()) if len(ctx_bias) else math.nan)


# ----------------------------------------------------------------------------- all metrics
#: The tests as plain functions of a trial table (each returns ``p_value`` and ``reject``).

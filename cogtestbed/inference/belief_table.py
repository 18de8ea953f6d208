"""The belief-coherence table and what every test shares (Yamin et al. 2026, §3): the options and
their bounds, the canonical call-key order, the paired (belief, decision) rows and the shape of a
test's result.  The tests are :mod:`cogtestbed.inference.belief_t1` (T1a–c) and
:mod:`cogtestbed.inference.belief_consistency` (T2–T4, accuracy); :mod:`cogtestbed.inference.belief`
names them all."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import DataError, InputError

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
        raise BeliefTableError(f"`level` must lie in (0, 1), got {level}")
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


def null_result(reason: str, level: float, **extra: Any) -> dict[str, Any]:
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


def test_result(estimate: float, p_value: float | None, level: float, interval: tuple[float, float] | None = None,
                reject: bool | None = None, **extra: Any) -> dict[str, Any]:
    """One test's result: the estimate, its interval (``lo``, ``hi``), p-value and decision (``reject``:
    p < level unless given), with ``extra`` fields; NaNs become ``None``."""
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


#: Columns :func:`paired_arrays` reads as integers (a table whose key columns are not integer-typed is
#: read by :func:`canonical_table` and :func:`paired_rows` instead).
_INT_KEYS = ("subject", "context_id", "rep", "theta")


def paired_arrays(table: pd.DataFrame, renormalise: bool = False) -> dict[str, np.ndarray] | None:
    """:func:`paired_rows` of :func:`canonical_table`'s table as arrays (``subject``, ``a``, ``p``, ``theta``,
    ``group``; the same rows in the same order, the same values), read from the π0 belief and decision rows
    alone with array operations: a simulated study's table (about 8 rows a trial) is neither sorted nor
    merged whole.  The rows it reads are checked as :func:`canonical_table` checks them (a repeated key, a
    belief without a finite ``p_true``, a decision outside No / Yes / Defer: :class:`BeliefTableError`);
    ``None`` where the table's keys or θ are not integer columns (read it the general way)."""
    if not all(c in table.columns and pd.api.types.is_integer_dtype(table[c].dtype) for c in _INT_KEYS):
        return None
    col = "p_renormalised" if renormalise else "p_elicited"
    phase = table["phase"]
    valid = table["valid"].fillna(False).to_numpy(dtype=bool)
    belief = np.flatnonzero(((phase == "belief") & (table["variant"] == "pi0")).fillna(False).to_numpy(dtype=bool))
    decision = np.flatnonzero((phase == "decision").fillna(False).to_numpy(dtype=bool))
    keys = np.stack([table[c].to_numpy(dtype=np.int64) for c in ("subject", "context_id", "rep")], axis=1)
    if keys.size and keys.min() < 0:
        return None
    span = keys.max(axis=0) + 1 if keys.size else np.ones(3, dtype=np.int64)
    code = (keys[:, 0] * span[1] + keys[:, 1]) * span[2] + keys[:, 2]
    p_true = pd.to_numeric(table["p_true"], errors="coerce").to_numpy(dtype=np.float64)
    _check_read_rows(table, code, belief, decision, valid, p_true)
    p = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=np.float64)
    dec = table["decision"].iloc[decision]
    a = dec.map(DECISION_CODES).astype("Float64").fillna(np.nan).to_numpy(dtype=np.float64)
    bel = belief[valid[belief] & np.isfinite(p[belief])]
    dcs = decision[valid[decision] & np.isfinite(a)]
    a_of = np.full(len(table), np.nan)
    a_of[decision] = a
    _, ib, idc = np.intersect1d(code[bel], code[dcs], assume_unique=True, return_indices=True)
    rb, rd = bel[ib], dcs[idc]
    sub, ctx = keys[rb, 0], keys[rb, 1]
    pair = sub * span[1] + ctx
    group = np.cumsum(np.r_[False, pair[1:] != pair[:-1]]) if pair.size else np.zeros(0, dtype=np.int64)
    return {"subject": sub, "a": a_of[rd].astype(np.int64), "p": p[rb],
            "theta": table["theta"].to_numpy(dtype=np.int64)[rb], "group": group.astype(np.int64)}


def _check_read_rows(table: pd.DataFrame, code: np.ndarray, belief: np.ndarray, decision: np.ndarray,
                     valid: np.ndarray, p_true: np.ndarray) -> None:
    """:func:`canonical_table`'s refusals, on the π0 belief and decision rows :func:`paired_arrays` reads."""
    for rows, what in ((belief, "π0 belief"), (decision, "decision")):
        uniq, first, counts = np.unique(code[rows], return_index=True, return_counts=True)
        if uniq.size < rows.size:
            i = int(rows[first[np.flatnonzero(counts > 1)[0]]])
            raise BeliefTableError(f"belief-coherence table: {int(rows.size - uniq.size)} {what} rows repeat a "
                                   f"call's key (subject, context_id, rep), e.g. row {i} (subject "
                                   f"{table['subject'].iloc[i]}, context_id {table['context_id'].iloc[i]}, rep "
                                   f"{table['rep'].iloc[i]}): one row per call is expected")
    bad = belief[~np.isfinite(p_true[belief])]
    if bad.size:
        i = int(bad[0])
        raise BeliefTableError(f"belief-coherence table: {bad.size} belief rows have no finite p_true (the ground "
                               f"truth), e.g. row {i} (subject {table['subject'].iloc[i]}, context_id "
                               f"{table['context_id'].iloc[i]}): p_true = {table['p_true'].iloc[i]}")
    dec = table["decision"].iloc[decision]
    unknown = decision[valid[decision] & dec.notna().to_numpy() & ~dec.isin(list(DECISION_CODES)).fillna(False)
                       .to_numpy(dtype=bool)]
    if unknown.size:
        i = int(unknown[0])
        raise BeliefTableError(f"belief-coherence table: row {i} has decision {table['decision'].iloc[i]!r}; "
                               f"expected one of {', '.join(DECISION_CODES)}")

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
identical numbers; a test without usable input is null with its reason
(:func:`~cogtestbed.inference.belief_table.null_result`).

The tests live in :mod:`~cogtestbed.inference.belief_table` (table checks, options, shared rows),
:mod:`~cogtestbed.inference.belief_t1` (T1a–c) and :mod:`~cogtestbed.inference.belief_consistency`
(T2–T4, accuracy); this module names them all (importers keep ``belief.NAME``) and holds the battery.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.inference.belief_consistency import (
    T3_READING,
    T3_READINGS,
    accuracy,
    fisher_one_sided,
    holm,
    lie_rows,
    pair_violations,
    quantile_bins,
    rf_baseline,
    t2,
    t2_arrays,
    t2_permutation_p,
    t2_statistic,
    t3,
    t4,
)
from cogtestbed.inference.belief_t1 import (
    CMI_JITTER,
    RADIUS_SLACK,
    T1A_RULE,
    T1A_RULES,
    classifier,
    cmi_knn,
    cv_log_loss,
    jittered,
    local_permutation,
    mnl_loglik,
    nested_rules,
    placebo_t_test,
    t1_cmi,
    t1_cmi_arrays,
    t1_lr,
    t1_lr_arrays,
    t1_nested,
    t1_nested_arrays,
)
from cogtestbed.inference.belief_table import (
    CMI_K,
    CV_FOLDS,
    DECISION_CODES,
    GB_DEPTH,
    GB_TREES,
    LEVEL,
    LIE_TOL,
    MAX_PLACEBOS,
    MAX_RESAMPLES,
    MAX_T2_BINS,
    N_BOOT,
    N_PERM,
    PAIRS,
    PERM_BLOCK,
    PROB_PHASES,
    RF_TREES,
    ROW_KEYS,
    T1B_PLACEBOS,
    T1B_RULE,
    T1B_RULES,
    T2_BINS,
    T2_RULE,
    T2_RULES,
    T4_BASELINE_PATIENTS,
    BeliefTableError,
    canonical_table,
    check_options,
    group_ids,
    null_result,
    paired_arrays,
    paired_rows,
    test_result,
)
from cogtestbed.metrics_result import MetricComparison, MetricOption

#: The family's public names: this module's own and those of its parts, re-exported.
__all__ = [
    "accuracy", "belief_metrics", "belief_test", "BeliefTableError", "canonical_table", "check_options",
    "classifier", "CMI_JITTER", "CMI_K", "cmi_knn", "CV_FOLDS", "cv_log_loss", "DECISION_CODES", "fisher_one_sided",
    "GB_DEPTH", "GB_TREES", "group_ids", "holm", "jittered", "LEVEL", "lie_rows", "LIE_TOL", "local_permutation",
    "MAX_PLACEBOS", "MAX_RESAMPLES", "MAX_T2_BINS", "METRIC_OPTIONS", "mnl_loglik", "N_BOOT", "N_PERM",
    "nested_rules", "null_result", "pair_violations", "paired_rows", "PAIRS", "PERM_BLOCK", "placebo_t_test",
    "PROB_PHASES", "quantile_bins", "RADIUS_SLACK", "rf_baseline", "RF_TREES", "ROW_KEYS", "split_headline",
    "t1_cmi", "t1_cmi_arrays", "t1_lr", "t1_lr_arrays", "t1_nested", "t1_nested_arrays", "T1A_RULE", "T1A_RULES",
    "T1B_PLACEBOS", "T1B_RULE", "T1B_RULES", "t2", "t2_arrays", "T2_BINS", "t2_permutation_p", "T2_RULE", "T2_RULES",
    "t2_statistic", "t3", "T3_READING", "T3_READINGS", "t4", "T4_BASELINE_PATIENTS", "test_result", "TESTS",
    "COMPARISONS", "unit_statistic",
]

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


#: Options a unit statistic never reads: only the estimate is computed (no interval, no null distribution).
_ESTIMATE_ONLY = {"n_boot": 0, "n_perm": 0}


def unit_statistic(name: str) -> Callable[..., dict[int, float]]:
    """``fn(table, **metrics options) -> {subject: estimate}``: test ``name``'s estimate on each subject's
    own rows (T1a's kNN CMI, T3's largest RMSE, T1c's LR statistic, accuracy's π0 RMSE), without its
    bootstrap or permutations; NaN where the subject's rows do not define it (too few pairs, no
    variant).  The per-run statistic a comparison of two groups' subjects tests
    (:data:`COMPARISONS`): the paper aggregates five seeds (runs) per model (§5), each a subject here.
    T1a reads the table's paired rows once (:func:`_t1_cmi_by_subject`)."""
    def run(table: pd.DataFrame, **options: Any) -> dict[int, float]:
        check_options(**options)
        if name == "t1_cmi":
            return _t1_cmi_by_subject(table, **options)
        table = canonical_table(table)[0]
        out = {}
        for subject, part in table.groupby("subject", sort=True):
            value = _run_test(name, part, **{**options, **_ESTIMATE_ONLY}).get("estimate")
            out[int(subject)] = float(value) if value is not None else float("nan")
        return out

    run.__name__ = run.__qualname__ = f"belief_unit_{name}"
    return run


def _t1_cmi_by_subject(table: pd.DataFrame, k: int = CMI_K, seed: int = 0, renormalise: str = "no",
                       average_reps: str = "no", **_: Any) -> dict[int, float]:
    """T1a's estimate (:func:`t1_cmi_arrays`, the same jitter draw as :func:`t1_cmi` on the subject's
    table alone) of every subject, the paired rows built once (:func:`paired_arrays`, else
    :func:`canonical_table` and :func:`paired_rows`); NaN for a subject with fewer than k + 1 pairs."""
    rows = paired_arrays(table, renormalise == "yes") if average_reps != "yes" else None
    if rows is None:
        frame = paired_rows(canonical_table(table)[0], renormalise == "yes", average_reps == "yes")
        rows = {c: frame[c].to_numpy() for c in ("subject", "a", "p", "theta", "group")}
    out = {int(s): float("nan") for s in sorted(pd.unique(table["subject"]))}
    subject = np.asarray(rows["subject"], dtype=np.int64)
    cuts = np.flatnonzero(np.r_[True, subject[1:] != subject[:-1], True])
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=False):
        if hi - lo > k:
            part = {c: np.asarray(v[lo:hi]) for c, v in rows.items()}
            out[int(subject[lo])] = float(t1_cmi_arrays(part["a"], part["p"], part["theta"], part["group"], k=k,
                                                        n_boot=0, n_perm=0, seed=seed)["estimate"])
    return out


_PERMUTATION = ("permutation test of the difference of the two groups' mean per-subject {what} (subjects "
                "exchanged between the groups; exact when the groups' subjects are exchangeable under the null: "
                "independent runs of the same design, identically distributed)")
_NOT_PER_SUBJECT = "{what}: no per-subject value{why}, and the pooled {kind} has no standard error"

#: How each headline test is compared between two groups (two LLMs, an LLM and a reference agent): the
#: tests with an estimate on one subject's rows by a permutation test of the per-subject estimates
#: (:func:`unit_statistic`); the others say why not.
COMPARISONS: dict[str, MetricComparison] = {
    "t1_cmi": MetricComparison("permutation", _PERMUTATION.format(what="T1a kNN CMI estimate"),
                               unit_statistic("t1_cmi")),
    "t3": MetricComparison("permutation", _PERMUTATION.format(what="T3 RMSE (largest over the variants)"),
                           unit_statistic("t3")),
    "t1_lr": MetricComparison("permutation", _PERMUTATION.format(what="T1c likelihood-ratio statistic"),
                              unit_statistic("t1_lr")),
    "accuracy": MetricComparison("permutation", _PERMUTATION.format(what="π0 RMSE against p*"),
                                 unit_statistic("accuracy")),
    "t1_cmi_isotonic": MetricComparison("none", _NOT_PER_SUBJECT.format(
        what="T1a on isotonic beliefs", why=" (the calibration is fitted on the pooled table)", kind="estimate")),
    "t1_nested": MetricComparison("none", _NOT_PER_SUBJECT.format(
        what="T1b", why=" (a cross-validated boosted fit per subject is too costly to simulate)",
        kind="improvement")),
    "t2": MetricComparison("none", "T2: its estimate is a share of significant bin-pair tests, which grows with "
                           "the sample, not an effect size; no test of a difference between groups"),
    "t4": MetricComparison("none", _NOT_PER_SUBJECT.format(
        what="T4", why=" (the LIE phases and the random-forest baseline are pooled)", kind="median ratio")),
}


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

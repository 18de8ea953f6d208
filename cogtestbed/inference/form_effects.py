"""Prompt forms as a random factor: between-form SD, the forms-aware effect test, generalisability.

Subjects (or runs) are nested in prompt forms (each subject sees one form; forms are a sample
of the wordings one could have used).  A per-subject value ``y`` (an MLE estimate, a contrast, a
metric) is summarised per form by its mean ``m_k`` and the squared standard error of that mean
``v_k = s_k² / n_k``, and the form means are pooled by a random-effects analysis:

* the **between-form SD** τ (the default, :data:`FORM_SD_ESTIMATOR`): the one-way random-effects
  ANOVA estimate with the within-form variance pooled over forms (Henderson's method I; Searle,
  Casella & McCulloch 1992, §3.5), ``τ̂² = max(0, (MSB − MSW) / n₀)`` with
  ``n₀ = (N − Σn_k²/N) / (K − 1)``; with balanced forms it is the REML estimate (the same section),
  and its interval is the exact F interval of ``τ²/σ²`` (``F = MSB/MSW`` on ``K − 1, N − K`` df)
  times MSW.  Chosen by the bias figures of docs/prompt-forms.md: the estimators below
  plug each form's own ``v_k = s_k²/n_k`` (9 df at 10 subjects a form) into weights as if it were
  known, which inflates Q (at τ = 0 their 95 % Q-profile interval excluded 0 in 8 % of Gaussian
  studies at K = 8, 14 % at K = 16, for a nominal 2.5 %) and with it their estimates;
* **DerSimonian & Laird (1986)** (:func:`dl_tau2`, the earlier default):
  ``τ̂² = max(0, (Q − (K − 1)) / (Σw − Σw²/Σw))`` with ``w = 1/v`` and ``Q = Σ w (m − m̄_w)²``;
  the weighted mean ``μ̂(τ²) = Σ w* m / Σ w*``, ``w* = 1/(v + τ̂²)``; REML on the same ``v_k``
  (:func:`reml_tau2`) and the median-unbiased Q-profile estimate (:func:`median_tau2`) beside it;
* the **effect test** of ``μ = μ₀`` on the K form means: ``t = (m̄ − μ₀) / (s_m / √K)`` on
  ``t_{K−1}`` (Clark's 1973 by-item analysis).  It coincides with the Hartung–Knapp–Sidik–Jonkman
  test only when that test's weights ``w*`` are equal (equal ``v_k``; with the per-form ``v_k``
  used here they are not, so HKSJ is a different test).  The spread of the form means holds the
  form variance, so it enters the SE; the t is exact only when the K form means are independent
  and normal with one variance (balanced forms, as :func:`~cogtestbed.environments.forms.assign_forms`
  gives, *and* normal per-subject values): per-subject MLEs are skewed and pile up at parameter
  bounds, so it is approximate and its size is measured (docs/prompt-forms.md).  Equal weights rather than
  ``w*``: with 10 subjects a form, ``v_k`` is itself noisy and weighting by it inflated the size
  (measured: 4 of 20 null studies rejected); τ̂ and its interval use the weights ``w*``.  The
  *naive* test (:func:`naive_test`, a one-sample t over subjects) ignores forms and rejects too
  often when they vary;
* the **Q-profile interval** of τ (Viechtbauer 2007, :func:`q_profile_interval`): the τ² at which
  the generalised ``Q(τ²) = Σ w*(m − μ̂(τ²))²`` equals the χ²_{K−1} quantiles;
* the **generalisability coefficient** (G-theory, one facet, subjects nested in forms, p:f):
  from the one-way random-effects ANOVA variance components σ²_f (forms: the default τ̂²) and
  σ²_{p:f} (subjects within forms, residual included), ``G = σ²_{p:f} / (σ²_{p:f} + σ²_f)``, the share of a
  subject's variance that is not due to the wording it saw (1: the wording does not matter), and
  ``G_study = σ²_{p:f}/n / (σ²_{p:f}/n + σ²_f/K)`` of the study mean over K forms × n subjects.

Forms with one subject have no ``s_k``: their ``v_k`` uses the pooled within-form variance
(:data:`POOLED_FOR_SINGLETONS`, a choice of ours the papers do not make).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats

from cogtestbed.errors import InputError

#: Forms with a single subject take the pooled within-form variance (their own is undefined).
POOLED_FOR_SINGLETONS = True
#: The default estimator of the between-form SD (``between_form_sd``; module docstring).
FORM_SD_ESTIMATOR = "one-way random-effects ANOVA (pooled within-form variance; REML for balanced forms)"


@dataclass(frozen=True)
class RandomEffects:
    """A random-effects analysis across forms (module docstring); ``None`` fields carry a reason
    in ``notes`` (fewer than two forms, no within-form variance)."""

    k: int
    n: int
    mu: float | None
    se: float | None
    df: int
    t: float | None
    p_value: float | None
    tau: float | None
    tau_low: float | None
    tau_high: float | None
    q: float | None
    level: float
    per_form: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: DerSimonian–Laird's estimate of the between-form SD (:func:`dl_tau2`; the earlier default),
    #: beside ``tau`` (:data:`FORM_SD_ESTIMATOR`)
    tau_dl: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {"k_forms": self.k, "n": self.n, "mean": self.mu, "se": self.se, "df": self.df, "t": self.t,
                "p_value": self.p_value, "between_form_sd": self.tau, "between_form_sd_estimator": FORM_SD_ESTIMATOR,
                "between_form_sd_dl": self.tau_dl, "between_form_sd_interval": [self.tau_low, self.tau_high],
                "level": self.level, "q": self.q, "per_form": self.per_form, "notes": self.notes}


def form_summaries(values: ArrayLike, forms: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                           np.ndarray]:
    """(form ids, n_k, mean m_k, v_k = s_k²/n_k) of finite ``values`` grouped by ``forms``."""
    y = np.asarray(values, dtype=np.float64)
    f = np.asarray(forms, dtype=np.int64)
    ok = np.isfinite(y)
    y, f = y[ok], f[ok]
    ids, inv = np.unique(f, return_inverse=True)
    n = np.bincount(inv, minlength=len(ids)).astype(np.float64)
    m = np.bincount(inv, weights=y, minlength=len(ids)) / np.maximum(n, 1)
    ss = np.bincount(inv, weights=(y - m[inv]) ** 2, minlength=len(ids))
    s2 = np.where(n > 1, ss / np.maximum(n - 1, 1), np.nan)
    dof = float(np.sum(n - 1))
    pooled = float(ss.sum() / dof) if dof > 0 else float("nan")
    if POOLED_FOR_SINGLETONS:
        s2 = np.where(np.isnan(s2), pooled, s2)
    return ids, n, m, s2 / n


def oneway_anova(n: np.ndarray, m: np.ndarray, v: np.ndarray) -> tuple[float, float, float, int, int]:
    """(MSB, MSW, n₀, K − 1, N − K) of the one-way ANOVA of subjects in forms, from
    :func:`form_summaries`' ``n_k``, ``m_k`` and ``v_k = s_k²/n_k`` (a singleton's pooled ``v_k``
    carries no within-form sum of squares)."""
    big_n, k = float(n.sum()), len(n)
    ssw = float(np.sum((n - 1) * n * v))
    grand = float(np.sum(n * m) / big_n)
    msb = float(np.sum(n * (m - grand) ** 2)) / (k - 1)
    n0 = (big_n - float(np.sum(n**2)) / big_n) / (k - 1)
    return msb, ssw / (big_n - k), n0, k - 1, int(big_n) - k


def anova_tau2(n: np.ndarray, m: np.ndarray, v: np.ndarray) -> float:
    """The default τ̂² (:data:`FORM_SD_ESTIMATOR`): ``max(0, (MSB − MSW) / n₀)``, the one-way
    random-effects ANOVA estimate (Searle, Casella & McCulloch 1992, §3.5; REML when the forms are
    balanced and it is positive)."""
    msb, msw, n0, _, _ = oneway_anova(n, m, v)
    return max(0.0, (msb - msw) / n0)


def anova_interval(n: np.ndarray, m: np.ndarray, v: np.ndarray, level: float = 0.95,
                   ) -> tuple[float, float]:
    """The interval of τ from the F pivot ``(MSB/MSW) / (1 + n₀ τ²/σ²) ~ F_{K−1, N−K}`` (exact for
    ``τ²/σ²`` with balanced forms and normal values; Searle, Casella & McCulloch 1992, §3.5d), its
    ends times MSW; it excludes 0 exactly when the ANOVA F test rejects at ``1 − level`` / 2."""
    msb, msw, n0, df1, df2 = oneway_anova(n, m, v)
    a = (1 - level) / 2
    f = msb / msw
    ends = [max(0.0, (f / float(stats.f.ppf(q, df1, df2)) - 1) / n0) * msw for q in (1 - a, a)]
    return math.sqrt(ends[0]), math.sqrt(ends[1])


def _pooled_mean(m: np.ndarray, v: np.ndarray, tau2: float) -> tuple[float, np.ndarray]:
    w = 1.0 / (v + tau2)
    return float(np.sum(w * m) / np.sum(w)), w


def dl_tau2(m: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    """(DerSimonian–Laird τ̂², Cochran's Q) of form means ``m`` with variances ``v``."""
    w = 1.0 / v
    mw = float(np.sum(w * m) / np.sum(w))
    q = float(np.sum(w * (m - mw) ** 2))
    c = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    return max(0.0, (q - (len(m) - 1)) / c) if c > 0 else 0.0, q


def reml_tau2(m: np.ndarray, v: np.ndarray) -> float:
    """The REML estimate of τ² (Viechtbauer 2005, eq. 9: the restricted likelihood of the form means
    ``m`` with variances ``v + τ²``, maximised over τ² ≥ 0)."""

    def nll(tau2: float) -> float:
        w = 1.0 / (v + tau2)
        mu = float(np.sum(w * m) / np.sum(w))
        return 0.5 * float(np.sum(np.log(v + tau2)) + math.log(float(np.sum(w))) + np.sum(w * (m - mu) ** 2))

    hi = 10.0 * float(np.var(m)) + float(np.max(v)) + 1e-12
    fit = optimize.minimize_scalar(nll, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-10})
    return float(fit.x) if nll(float(fit.x)) < nll(0.0) else 0.0


def median_tau2(m: np.ndarray, v: np.ndarray) -> float:
    """The median-unbiased estimate of τ²: where the generalised Q equals the median of χ²_{K−1}
    (the Q-profile at level 0; Viechtbauer 2007's construction), 0 when Q(0) is below it."""
    return _q_root(m, v, float(stats.chi2.ppf(0.5, len(m) - 1)))


def _q_root(m: np.ndarray, v: np.ndarray, target: float) -> float:
    """τ² at which the generalised Q statistic equals ``target`` (0 where Q at τ² = 0 is below it)."""

    def gen_q(tau2: float) -> float:
        mu, w = _pooled_mean(m, v, tau2)
        return float(np.sum(w * (m - mu) ** 2))

    if gen_q(0.0) <= target:
        return 0.0
    hi = max(1.0, float(np.var(m)) * 10 + float(np.max(v)))
    while gen_q(hi) > target:
        hi *= 4
    return float(optimize.brentq(lambda t2: gen_q(t2) - target, 0.0, hi, xtol=1e-12))


def q_profile_interval(m: np.ndarray, v: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The Q-profile interval of τ (Viechtbauer 2007): τ² where the generalised Q equals the
    upper and lower χ²_{K−1} quantiles (0 where even τ² = 0 gives a Q below the quantile)."""
    k = len(m)
    a = (1 - level) / 2
    lo2 = _q_root(m, v, float(stats.chi2.ppf(1 - a, k - 1)))
    hi2 = _q_root(m, v, float(stats.chi2.ppf(a, k - 1)))
    return math.sqrt(lo2), math.sqrt(hi2)


def form_random_effects(values: ArrayLike, forms: ArrayLike, null: float = 0.0,
                        level: float = 0.95) -> RandomEffects:
    """The random-effects analysis of per-subject ``values`` across their ``forms`` (module
    docstring): pooled mean, forms-aware test of ``mean = null``, between-form SD
    (:data:`FORM_SD_ESTIMATOR`) with its F interval."""
    ids, n, m, v = form_summaries(values, forms)
    k = len(ids)
    per_form = [{"form": int(i), "n": int(c), "mean": float(mm),
                 "se": float(math.sqrt(vv)) if np.isfinite(vv) else None}
                for i, c, mm, vv in zip(ids, n, m, v, strict=True)]
    empty = RandomEffects(k, int(n.sum()), None, None, max(k - 1, 0), None, None, None, None, None, None, level,
                          per_form)
    if k < 2:
        return RandomEffects(**{**empty.__dict__, "notes": ["fewer than two forms: no between-form analysis"]})
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        return RandomEffects(**{**empty.__dict__, "notes": ["no within-form variance (one subject per form, or "
                                                              "identical values)"]})
    tau2_dl, q = dl_tau2(m, v)
    mu = float(m.mean())
    se = float(np.std(m, ddof=1)) / math.sqrt(k)
    t = (mu - null) / se if se > 0 else float("nan")
    p = float(2 * stats.t.sf(abs(t), k - 1)) if np.isfinite(t) else None
    lo, hi = anova_interval(n, m, v, level)
    return RandomEffects(k, int(n.sum()), mu, se, k - 1, t if np.isfinite(t) else None, p,
                         math.sqrt(anova_tau2(n, m, v)), lo, hi, q, level, per_form, tau_dl=math.sqrt(tau2_dl))


@dataclass(frozen=True)
class CorrectedTest:
    """The forms-aware test of a bias-corrected effect (:func:`bias_corrected_test`)."""

    mean: float | None
    bias: float
    bias_se: float
    se: float | None
    df: float | None
    t: float | None
    p_value: float | None


def bias_corrected_test(values: ArrayLike, forms: ArrayLike, bias: float, bias_se: float, bias_n: int,
                        null: float = 0.0, df_method: str = "hsu") -> CorrectedTest:
    """The forms-aware test of ``mean − bias = null``: the t on the K form means of
    :func:`form_random_effects` with the estimator's ``bias`` (measured by ``bias_n`` simulated
    subjects under the null, SE ``bias_se``) subtracted.  Both variances enter the SE,
    ``se² = s_m²/K + bias_se²``.  Degrees of freedom: ``df_method="hsu"`` (the default) Hsu's
    conservative ``K − 1`` (the smaller of the two samples' df); ``"satterthwaite"`` Welch–Satterthwaite's
    ``(a + b)² / (a²/(K − 1) + b²/(bias_n − 1))`` with ``a = s_m²/K``, ``b = bias_se²``, which assumes the
    bias estimate independent of the form means; it is not (both come from the study's fits: the
    bias is simulated at the fitted medians), and at RW±'s 96 trials it rejected 0.066 ± 0.008 of
    1,000 null studies, Hsu's df 0.046 (docs/prompt-forms.md).  A per-subject
    estimator biased at the study's design (RW±'s MLE of α⁺ − α⁻ at 96 trials) otherwise shows its
    bias as an effect: the uncorrected test's size is then above α whatever its degrees of freedom."""
    ids, _, m, _ = form_summaries(values, forms)
    k = len(ids)
    if k < 2 or bias_n < 2 or not math.isfinite(bias) or not math.isfinite(bias_se):
        return CorrectedTest(float(m.mean()) if k else None, bias, bias_se, None, None, None, None)
    a = float(np.var(m, ddof=1)) / k
    b = float(bias_se) ** 2
    se = math.sqrt(a + b)
    if se == 0:
        return CorrectedTest(float(m.mean()), bias, bias_se, 0.0, None, None, None)
    if df_method not in ("hsu", "satterthwaite"):
        raise InputError(f"df_method must be hsu or satterthwaite, got {df_method!r}")
    df = float(k - 1)
    if df_method == "satterthwaite":
        df = (a + b) ** 2 / (a**2 / (k - 1) + b**2 / (bias_n - 1))
    t = (float(m.mean()) - bias - null) / se
    return CorrectedTest(float(m.mean()), bias, bias_se, se, df, t, float(2 * stats.t.sf(abs(t), df)))


@dataclass(frozen=True)
class NaiveTest:
    """The one-sample t-test over subjects that ignores forms."""

    n: int
    mean: float | None
    se: float | None
    p_value: float | None


def naive_test(values: ArrayLike, null: float = 0.0) -> NaiveTest:
    """One-sample t-test of ``mean = null`` over the finite ``values`` (forms ignored)."""
    y = np.asarray(values, dtype=np.float64)
    y = y[np.isfinite(y)]
    if y.size < 2 or float(np.std(y, ddof=1)) == 0.0:
        return NaiveTest(int(y.size), float(y.mean()) if y.size else None, None, None)
    se = float(np.std(y, ddof=1) / math.sqrt(y.size))
    t = (float(y.mean()) - null) / se
    return NaiveTest(int(y.size), float(y.mean()), se, float(2 * stats.t.sf(abs(t), y.size - 1)))


def generalisability(values: ArrayLike, forms: ArrayLike) -> dict[str, Any]:
    """Variance components (one-way random-effects ANOVA, p:f) and the G coefficients of the
    module docstring; nulls with a reason where there are fewer than two forms or no residual."""
    ids, n, m, _ = form_summaries(values, forms)
    y = np.asarray(values, dtype=np.float64)
    f = np.asarray(forms, dtype=np.int64)
    ok = np.isfinite(y)
    y, f = y[ok], f[ok]
    k, total = len(ids), int(n.sum())
    if k < 2 or total - k < 1:
        return {"g": None, "g_study": None, "var_form": None, "var_subject": None,
                "reason": "fewer than two forms or no subject beyond one per form"}
    grand = float(y.mean())
    ms_between = float(np.sum(n * (m - grand) ** 2) / (k - 1))
    resid = y - m[np.searchsorted(ids, f)]
    ms_within = float(np.sum(resid**2) / (total - k))
    n0 = (total - float(np.sum(n**2)) / total) / (k - 1)
    var_form = max(0.0, (ms_between - ms_within) / n0)
    var_subject = ms_within
    if var_form + var_subject == 0:
        return {"g": None, "g_study": None, "var_form": 0.0, "var_subject": 0.0, "reason": "no variance"}
    per_form_n = total / k
    g_study = (var_subject / total) / (var_subject / total + var_form / k) if var_subject > 0 else 0.0
    return {"g": var_subject / (var_subject + var_form), "g_study": g_study, "var_form": var_form,
            "var_subject": var_subject, "subjects_per_form": per_form_n}


def _numbers(mapping: Any, prefix: str = "") -> dict[str, float]:
    """The numeric leaves of a (nested) metrics mapping, as ``a.b`` keys (bools left out)."""
    out: dict[str, float] = {}
    if not isinstance(mapping, dict):
        return out
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_numbers(value, name + "."))
        elif isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_)):
            out[name] = float(value)
    return out


def form_metrics(table: Any, metrics_fn: Any, result: Any, level: float = 0.95) -> dict[str, Any]:
    """What a table with a ``form`` column says per prompt form: each form's headline metrics
    (``metrics_fn`` on its rows), and for every numeric per-unit value the random-effects analysis
    across forms (between-form SD with its Q-profile interval) and the G coefficients."""
    forms = sorted(int(f) for f in table["form"].dropna().unique())
    per_form = {str(f): _numbers(metrics_fn(table[table["form"] == f])["metrics"]) for f in forms}
    if result.get("per_subject") is not None:
        unit, unit_rows = "subject", result["per_subject"]
        form_of = table.groupby("subject", sort=True)["form"].first()
    else:  # a run is the position of its (subject, session) pair in sorted order
        unit, unit_rows = "run", result.get("per_run") or []
        form_of = table.groupby(["subject", "session"], sort=True)["form"].first().reset_index(drop=True)
    between: dict[str, Any] = {}
    rows = [r for r in unit_rows if isinstance(r, dict) and r.get(unit) in form_of.index]
    keys = sorted({k for r in rows for k, v in r.items() if k not in (unit, "subject", "session")
                   and isinstance(v, (int, float)) and not isinstance(v, bool)})
    f = form_of.loc[[r[unit] for r in rows]].to_numpy(dtype=np.int64)
    for key in keys:
        values = np.array([float(r[key]) if isinstance(r.get(key), (int, float)) else np.nan for r in rows])
        re = form_random_effects(values, f, level=level)
        between[key] = {"between_form_sd": re.tau, "interval": [re.tau_low, re.tau_high], "level": level,
                        "mean_of_forms": re.mu, "per_form": re.per_form, "notes": re.notes,
                        **generalisability(values, f)}
    return {"forms": forms, "per_form": per_form, "between_forms": between}

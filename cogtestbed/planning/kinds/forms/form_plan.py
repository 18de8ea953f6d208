"""Planning prompt forms × subjects jointly, by dollars.

The forms-aware test of an effect δ is the t-test on the K form means
(:func:`~cogtestbed.inference.form_effects.form_random_effects`); with n subjects in each form a
form mean has variance ``τ² + σ²/n`` (τ: the between-form SD of the effect, σ: the SD of one
subject's estimate within a form), so the test's power is that of a noncentral t:

    power(K, n) = P(|T_{K−1}(λ)| > t_{K−1, 1−α/2}),   λ = δ / sqrt((τ² + σ²/n) / K).

More subjects shrink only ``σ²/n``: with τ > 0 the power of K forms is capped at
``λ_max = δ√K/τ`` however many subjects are bought, and one form (K = 1) leaves no degree of
freedom to estimate τ at all, so no number of subjects in one form tests the effect over
wordings (the naive test's count is shown beside it, with the warning that its size is not α).

σ and τ come from, in this order: a pilot table run across forms (``pilot``: the per-subject
estimates' pooled within-form SD and the one-way ANOVA τ, the package's default form-SD
estimator), else the study itself: τ is the
SD of the true effect over the forms' offsets (exact, by :data:`TAU_DRAWS` draws of the offset
distribution, no fitting) and σ the SD of the MLE estimates of :data:`SIGMA_SUBJECTS` simulated
subjects of one form.  The same simulated estimates give the effect the test sees: their mean less the
null (``estimand``), which the power is computed at — a per-subject MLE of a learning-rate contrast is
shrunk toward 0 (RW± optimism bias 0.2 at 96 trials: about 0.17), so a power at the asked δ would
overstate it.  A pilot has no known truth: its plan uses the asked δ.  Each subject costs
``dollars_per_subject`` (one session's dry-run price).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.environments.forms import FORM_COLUMN
from cogtestbed.errors import InputError
from cogtestbed.inference.form_effects import form_random_effects, form_summaries
from cogtestbed.registry import get_experiment
from cogtestbed.studies.form_studies import STUDY_STARTS, FormStudySpec, effect_values

#: Draws of the form offsets whose effect SD is τ (MC error of τ about 0.2 %).
TAU_DRAWS = 200_000
#: Simulated subjects of one form whose MLE estimates give σ and the estimand (their mean's MC SE σ/√600,
#: about 5 % of RW± optimism bias 0.2's).
SIGMA_SUBJECTS = 600
#: Added to a simulated forms plan's seed for the fresh subjects its printed powers are measured on
#: (:mod:`~cogtestbed.planning.kind_protocols`).
FRESH_OFFSET = 9_500_041
#: Quantile midpoints of χ² over which :func:`forms_power` averages (error < 1e-4 in power).
_MIDPOINTS = (np.arange(4000) + 0.5) / 4000
#: Most subjects per form a plan considers.
MAX_PER_FORM = 2_000
#: A pilot in which at least this share of subjects has an estimate of the effect's parameters at a
#: bound of its range does not identify the form SD (the spread across forms then measures where
#: the optimiser stopped, not the wording).  A choice of ours.
PILOT_BOUND_SHARE = 0.5


@dataclass(frozen=True)
class EffectScales:
    """σ (one subject's SD within a form) and τ (between-form SD) of the effect, and where from;
    a τ estimated from a pilot carries its F interval (``tau_interval`` at ``level``) and
    the reasons, if any, why the pilot does not identify it (``problems``: :func:`pilot_problems`)."""

    sigma: float
    tau: float
    source: str
    tau_interval: tuple[float, float] | None = None
    level: float = 0.95
    problems: tuple[str, ...] = ()
    #: The effect the test sees: the mean simulated estimate less the null (None: a pilot's, the asked δ).
    estimand: float | None = None
    estimand_mc_se: float | None = None

    @property
    def identified(self) -> bool:
        """Whether τ is an estimate a plan may use (no :attr:`problems`)."""
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sigma": self.sigma, "tau": self.tau, "source": self.source}
        if self.estimand is not None:
            out.update({"estimand": self.estimand, "estimand_mc_se": self.estimand_mc_se})
        if self.tau_interval is not None:
            out.update({"tau_interval": list(self.tau_interval), "level": self.level,
                        "identified": self.identified, "problems": list(self.problems)})
        return out


def forms_power(effect: float, sigma: float, tau: float, k: int, n: int, alpha: float = 0.05) -> float | None:
    """Power of the forms-aware test with ``k`` forms × ``n`` subjects (module docstring); None for k < 2."""
    if k < 2:
        return None
    lam = abs(effect) / math.sqrt((tau**2 + sigma**2 / n) / k)
    df = k - 1
    crit = float(stats.t.ppf(1 - alpha / 2, df))
    # T = (Z + λ) / sqrt(V/df), V ~ χ²_df: average the normal tail over V's quantiles (scipy's nct
    # returns NaN for large λ)
    scale = np.sqrt(stats.chi2.ppf(_MIDPOINTS, df) / df)
    return float(np.mean(stats.norm.sf(crit * scale - lam) + stats.norm.cdf(-crit * scale - lam)))


def naive_subjects(effect: float, sigma: float, target: float, alpha: float = 0.05) -> int:
    """Subjects the naive z-test over subjects (forms ignored) needs for ``target`` power."""
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(target)
    return max(2, math.ceil((z * sigma / effect) ** 2))


def simulated_scales(spec: FormStudySpec, seed: int) -> EffectScales:
    """τ: the SD of the true effect over the offsets' distribution; σ: the SD of the effect's MLE
    over :data:`SIGMA_SUBJECTS` simulated subjects of one form (no offset)."""
    from cogtestbed.simulation import simulate

    exp = get_experiment(spec.experiment)
    model = exp.model(spec.model)
    rng = np.random.default_rng(seed)
    shifted = {k: np.full(TAU_DRAWS, float(v)) for k, v in spec.params.items()}
    for name, sd in spec.forms.sd.items():
        p = model.parameters[name]
        z = np.asarray(p.to_unconstrained(np.float64(spec.params[name])), dtype=np.float64)
        shifted[name] = np.asarray(p.to_constrained(z + rng.normal(0.0, sd, TAU_DRAWS)), dtype=np.float64)
    tau = float(np.std(effect_values(spec, pd.DataFrame(shifted), model)))
    table = simulate(exp, spec.agent, SIGMA_SUBJECTS, seed, spec.params, design=spec.design)
    fits = model.fit_mle(table, n_starts=STUDY_STARTS)
    values = effect_values(spec, fits, model)
    sigma = float(np.nanstd(values, ddof=1))
    finite = int(np.isfinite(values).sum())
    return EffectScales(sigma, tau, f"simulated: τ exact over the offsets, σ and the estimand from {SIGMA_SUBJECTS} "
                                    "MLE fits", estimand=float(np.nanmean(values)) - spec.null,
                        estimand_mc_se=sigma / math.sqrt(max(finite, 1)))


def pilot_scales(spec: FormStudySpec, table: pd.DataFrame, level: float = 0.95) -> EffectScales:
    """σ and τ of the effect from a pilot table with a ``form`` column (the model fitted to it):
    τ by :data:`~cogtestbed.inference.form_effects.FORM_SD_ESTIMATOR` with its F interval at
    ``level``, σ the pooled within-form SD."""
    if FORM_COLUMN not in table.columns:
        raise InputError("the pilot table has no 'form' column: run the pilot with `forms`")
    model = get_experiment(spec.experiment).model(spec.model)
    fits = model.fit_mle(table)
    forms = table.groupby("subject", sort=True)[FORM_COLUMN].first().loc[fits["subject"]].to_numpy(dtype=np.int64)
    values = effect_values(spec, fits, model)
    re = form_random_effects(values, forms, level=level)
    if re.tau is None or re.tau_low is None or re.tau_high is None:
        raise InputError(f"the pilot cannot estimate the form SD: {'; '.join(re.notes)}")
    _, n, _, v = form_summaries(values, forms)
    sigma = float(math.sqrt(np.sum(v * n * (n - 1)) / max(1.0, float(np.sum(n - 1)))))
    return EffectScales(sigma, float(re.tau), f"pilot: {re.k} forms × {re.n} subjects (one-way ANOVA τ)",
                        (float(re.tau_low), float(re.tau_high)), level,
                        pilot_problems(spec, fits, model, float(re.tau), (float(re.tau_low), float(re.tau_high))))


def effect_max_sd(spec: FormStudySpec, model: Any) -> float:
    """The largest SD the study's effect can have: half its range (``Σ |w_p| (upper_p − lower_p)``
    over a contrast's parameters); infinite where a parameter is unbounded."""
    weights = model.contrasts[spec.contrast] if spec.contrast is not None else {str(spec.parameter): 1.0}
    params = model.parameters
    return 0.5 * sum(abs(float(w)) * (params[p].upper - params[p].lower) for p, w in weights.items())


def pilot_problems(spec: FormStudySpec, fits: pd.DataFrame, model: Any, tau: float,
                   interval: tuple[float, float]) -> tuple[str, ...]:
    """Why a pilot's τ is no estimate a plan may use (empty: it is one): at least
    :data:`PILOT_BOUND_SHARE` of its subjects have an estimate of the effect's parameters at a bound
    of their range; τ came out 0 (the forms' means differ no more than their within-form noise
    predicts, so the pilot cannot tell the form SD from 0); or τ's ``interval`` holds every SD the
    effect can have (:func:`effect_max_sd`), so the pilot says nothing about it."""
    from cogtestbed.studies.recovery_checks import at_bound

    names = list(model.contrasts[spec.contrast]) if spec.contrast is not None else [str(spec.parameter)]
    hit = np.zeros(len(fits), dtype=bool)
    for name in names:
        hit |= at_bound(fits[name].to_numpy(dtype=np.float64), model.parameters[name])
    problems = []
    if len(fits) and hit.mean() >= PILOT_BOUND_SHARE:
        problems.append(f"{int(hit.sum())} of {len(fits)} pilot subjects have an estimate of {' or '.join(names)} at "
                        "a bound of its range: the spread across forms measures where the fit stopped, not the wording")
    low, high = interval
    if tau <= 0.0:
        problems.append(f"τ = 0 (upper end {high:.3g}): the forms' means differ no more than their within-form "
                        "noise predicts, so the pilot cannot tell the form SD from 0")
    widest = effect_max_sd(spec, model)
    if low <= 0.0 and high >= widest:
        problems.append(f"τ's interval [0, {high:.3g}] holds every SD the effect can have (at most {widest:.3g}, half "
                        "its range): the pilot says nothing about the form SD")
    return tuple(problems)


def _cheapest_n(effect: float, s: EffectScales, k: int, target: float, alpha: float, max_n: int) -> int | None:
    lo, hi = 2, max_n
    if (forms_power(effect, s.sigma, s.tau, k, hi, alpha) or 0.0) < target:
        return None
    while lo < hi:  # power rises with n
        mid = (lo + hi) // 2
        if (forms_power(effect, s.sigma, s.tau, k, mid, alpha) or 0.0) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def plan_forms(effect: float, scales: EffectScales, forms_grid: Sequence[int], target: float = 0.8,
               alpha: float = 0.05, dollars_per_subject: float | None = None,
               max_per_form: int = MAX_PER_FORM) -> dict[str, Any]:
    """The cheapest forms × subjects design reaching ``target`` power for each K of ``forms_grid``,
    the choice among them (by dollars, else by subjects), and what one form would need."""
    rows: list[dict[str, Any]] = []
    one_form: dict[str, Any] | None = None
    for k in sorted(set(int(x) for x in forms_grid)):
        if k < 1:
            raise InputError(f"`forms` grid: a count of forms must be >= 1, got {k}")
        if k == 1:
            n_naive = naive_subjects(effect, scales.sigma, target, alpha)
            one_form = {"forms": 1, "reachable": False,
                        "why": "one form leaves no degree of freedom for the between-form variance: no number of "
                               "subjects tests the effect over wordings",
                        "naive_subjects": n_naive,
                        "naive_note": "the naive test over subjects ignores forms; its size exceeds alpha when the "
                                      "form SD is above 0"}
            continue
        n = _cheapest_n(effect, scales, k, target, alpha, max_per_form)
        cap = forms_power(effect, scales.sigma, scales.tau, k, max_per_form, alpha)
        row: dict[str, Any] = {"forms": k, "subjects_per_form": n, "subjects": None if n is None else k * n,
                               "power": None if n is None else forms_power(effect, scales.sigma, scales.tau, k, n,
                                                                            alpha),
                               "power_at_most_subjects": cap}
        if n is not None and scales.tau_interval is not None:  # the same design if τ is at its upper bound
            row["power_at_tau_high"] = forms_power(effect, scales.sigma, scales.tau_interval[1], k, n, alpha)
        row["dollars"] = None if n is None or dollars_per_subject is None else k * n * dollars_per_subject
        if n is None:
            row["why"] = f"power stays below {target} up to {max_per_form} subjects per form (cap {cap:.3f})"
        rows.append(row)
    feasible = [r for r in rows if r["subjects"] is not None]
    key = "dollars" if dollars_per_subject is not None else "subjects"
    chosen = min(feasible, key=lambda r: (r[key], r["forms"])) if feasible else None
    return {"effect": effect, "target_power": target, "alpha": alpha, "scales": scales.as_json(),
            "dollars_per_subject": dollars_per_subject, "designs": rows, "chosen": chosen, "one_form": one_form,
            "method": "noncentral t of the test on form means (cogtestbed.planning.kinds.forms.form_plan)"}


def power_mc_se(effect: float, scales: EffectScales, k: int, n: int, alpha: float) -> float:
    """The Monte-Carlo SE of :func:`forms_power` at simulated scales: the delta method through the estimand's
    SE (``estimand_mc_se``) and σ's (``σ/√(2(m − 1))`` for the m subjects behind it; τ is exact)."""
    m = max(2.0, (scales.sigma / scales.estimand_mc_se) ** 2) if scales.estimand_mc_se else math.inf
    parts = []
    sigma_se = scales.sigma / math.sqrt(2 * (m - 1))
    for d_eff, d_sig, se in ((1e-4, 0.0, scales.estimand_mc_se or 0.0), (0.0, 1e-4, sigma_se)):
        up = forms_power(effect + d_eff, scales.sigma + d_sig, scales.tau, k, n, alpha) or 0.0
        down = forms_power(effect - d_eff, scales.sigma - d_sig, scales.tau, k, n, alpha) or 0.0
        parts.append((up - down) / 2e-4 * se)
    return float(math.hypot(*parts))


def report_fresh(plan: dict[str, Any], fresh: EffectScales, alpha: float) -> None:
    """Every design's printed power at σ and the estimand measured on fresh subjects (``fresh``: none of them
    chose a design), with its MC SE (:func:`power_mc_se`); the choosing subjects' power kept as
    ``search_power`` and their scales as ``search_scales``."""
    assert fresh.estimand is not None
    for row in plan["designs"]:
        n = row["subjects_per_form"]
        row["search_power"] = row["power"]
        if n is not None:
            row["power"] = forms_power(fresh.estimand, fresh.sigma, fresh.tau, row["forms"], n, alpha)
            row["power_mc_se"] = power_mc_se(fresh.estimand, fresh, row["forms"], n, alpha)
    plan["search_scales"], plan["scales"] = plan["scales"], fresh.as_json()
    plan["power_at"] = fresh.estimand
    plan["scales"]["source"] += " (fresh subjects: none chose the design)"


def plan_forms_study(experiment: str, model: str, effect: tuple[str, float], forms_grid: Sequence[int],
                     form_sd: dict[str, float], *, params: dict[str, float] | None = None, target: float = 0.8,
                     alpha: float = 0.05, pricer: Any = None, pilot: pd.DataFrame | None = None, seed: int = 0,
                     design: Any = None) -> dict[str, Any]:
    """``cogtestbed plan … --forms 1,2,4,8 --form-sd P=SD``: σ and τ of ``effect`` (from ``pilot``,
    a table run across forms, else simulated), each K's cheapest design and the choice; a session
    is priced by ``pricer`` (:class:`~cogtestbed.planning.pricing.Pricer`, ``None``: subjects only)."""
    from cogtestbed.environments.forms import FormDesign, FormError
    from cogtestbed.studies.form_studies import form_study_spec

    exp = get_experiment(experiment)
    grid = sorted(set(int(k) for k in forms_grid))
    declared = len(exp.prompt_forms)
    if not grid or grid[0] < 1 or grid[-1] > declared:
        raise FormError(f"`forms` {','.join(map(str, grid))}: counts of forms from 1 to the {declared} "
                        f"{exp.name} declares")
    if pilot is None and not form_sd:
        raise FormError("a forms plan needs `form_sd` PARAM=SD (the wording effect to plan for) or `pilot`")
    k_max = max(2, grid[-1])
    spec = form_study_spec(experiment, model, FormDesign(tuple(range(k_max)), form_sd), 2 * k_max, params,
                           effect, design, alpha)
    scales = pilot_scales(spec, pilot) if pilot is not None else simulated_scales(spec, seed)
    dollars = None
    if pricer is not None:
        design_obj = design if design is not None else exp.design_cls()
        dollars = pricer.per_session(design_obj).dollars
    size = effect[1]
    plan = plan_forms(size if scales.estimand is None else scales.estimand, scales, grid, target, alpha, dollars)
    plan["power_at"], plan["effect"] = plan["effect"], size  # the power's effect (the estimand where simulated)
    if pilot is None:  # the designs were chosen on these subjects: their powers are printed from fresh ones
        report_fresh(plan, simulated_scales(spec, seed + FRESH_OFFSET), alpha)
    return {"experiment": experiment, "model": model, "effect": {effect[0]: size}, "form_sd": dict(form_sd),
            **plan}

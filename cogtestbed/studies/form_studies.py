"""Studies of prompt forms as a random factor: does the analysis recover a known wording effect,
and does the forms-aware effect test keep its size when forms vary (the naive test beside it)?

Each replicate simulates ``n_per_form`` synthetic subjects in each of K prompt forms with a known
form SD (:class:`~cogtestbed.environments.forms.FormDesign`: every form shifts a parameter by a
Normal(0, SD) offset on its unconstrained scale), fits every subject by MLE, and analyses

* the **effect**: a model contrast (e.g. RW±'s optimism bias α⁺ − α⁻) or a parameter, per subject,
  tested against ``null`` by the forms-aware random-effects test
  (:func:`~cogtestbed.inference.form_effects.form_random_effects`) and by the naive one-sample t
  over subjects (:func:`~cogtestbed.inference.form_effects.naive_test`);
* the **form SD**: the between-form SD of the per-subject estimates of the shifted parameter on its
  unconstrained scale (the default estimator,
  :data:`~cogtestbed.inference.form_effects.FORM_SD_ESTIMATOR`), with its F interval, against the
  true SD; also DerSimonian–Laird's, and the default on the estimates off the parameter's bounds
  (``sd_PARAM_offbound``): a bound's clipped logit (±6.9) moves with the offset and makes the form
  means spread about 1.6 times the true SD (RW± α⁺ at 96 trials, docs/prompt-forms.md).

The forms-aware test corrects the estimator's bias (``bias_sims`` > 0, the default): a per-subject
MLE can be biased at the study's design (RW±'s α⁺ − α⁻ at CogBench's 96 trials: −0.018 when the
truth is 0), and a test on form means has the power to see that bias as an effect.  The bias is
measured in each replicate by a parametric bootstrap under the null (:func:`null_bias`:
``bias_sims`` subjects simulated at the fitted population medians projected onto the null, fitted
as the study's subjects are) and subtracted
(:func:`~cogtestbed.inference.form_effects.bias_corrected_test`, Hsu's K − 1 df); the same test with
Welch–Satterthwaite df (``aware_satterthwaite``) and the uncorrected test (``aware_uncorrected``) are
reported beside it.

Rejection rates come with their Monte-Carlo SE ``sqrt(p(1 − p)/R)``; coverage likewise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.environments.base import Design
from cogtestbed.environments.forms import FORM_COLUMN, FormDesign
from cogtestbed.errors import InputError
from cogtestbed.inference.form_effects import bias_corrected_test, form_random_effects, generalisability, naive_test
from cogtestbed.registry import get_experiment

#: Starts of each subject's MLE in these studies (the model's own default is the fit command's):
#: a test's size does not hinge on the last digit of an estimate, and 1,000 replicates must run.
STUDY_STARTS = 2
#: Estimates this close to a bound are clipped there before the unconstrained transform (the logit
#: of an α at 0 or 1 is infinite); a choice of ours.
BOUND_EPS = 1e-3
#: Subjects simulated under the null in each replicate to measure the estimator's bias (its MC SE,
#: σ/√200 ≈ 0.017 for RW±'s α⁺ − α⁻, enters the test's SE); a choice of ours.
BIAS_SIMS = 200


@dataclass(frozen=True)
class FormStudySpec:
    """One forms study: experiment, generating agent and fitted model, parameters, forms and SDs,
    the effect (``contrast`` of the model or ``parameter``) and its null value."""

    experiment: str
    agent: str
    model: str
    forms: FormDesign
    n_per_form: int
    params: Mapping[str, float] = field(default_factory=dict)
    contrast: str | None = None
    parameter: str | None = None
    null: float = 0.0
    design: Design | None = None
    alpha: float = 0.05
    level: float = 0.95
    #: Subjects simulated under the null to correct the estimator's bias (0: no correction).
    bias_sims: int = BIAS_SIMS


def effect_values(spec: FormStudySpec, fits: pd.DataFrame, model: Any) -> np.ndarray:
    """The study's effect (its contrast or parameter) of each row of ``fits`` (estimates by name)."""
    if spec.contrast is not None:
        weights = model.contrasts[spec.contrast]
        return np.sum([w * fits[name].to_numpy(dtype=np.float64) for name, w in weights.items()], axis=0)
    return fits[str(spec.parameter)].to_numpy(dtype=np.float64)


def _unconstrained(model: Any, name: str, values: np.ndarray) -> np.ndarray:
    p = model.parameters[name]
    lo, hi = p.lower + BOUND_EPS, p.upper - BOUND_EPS
    return np.asarray(p.to_unconstrained(np.clip(values, lo, hi)), dtype=np.float64)


def null_parameters(spec: FormStudySpec, fits: pd.DataFrame, model: Any) -> dict[str, float]:
    """The agent's parameters under the null: the median of each fitted parameter, projected onto
    the null (a contrast Σ wₚθₚ moved to ``spec.null`` along its weights; a parameter set to it),
    kept inside the parameters' bounds."""
    values = {name: float(np.nanmedian(fits[name].to_numpy(dtype=np.float64))) for name in model.parameters.names}
    if spec.contrast is not None:
        weights = model.contrasts[spec.contrast]
        gap = sum(w * values[p] for p, w in weights.items()) - spec.null
        norm = sum(w * w for w in weights.values())
        for p, w in weights.items():
            values[p] -= gap * w / norm
    elif spec.parameter is not None:
        values[str(spec.parameter)] = spec.null
    for p in model.parameters:
        values[p.name] = float(np.clip(values[p.name], p.lower + BOUND_EPS, p.upper - BOUND_EPS))
    generator = get_experiment(spec.experiment).generators[spec.model]
    return {**dict(spec.params), **{k: float(v) for k, v in generator.agent_params(values).items()}}


def null_bias(spec: FormStudySpec, fits: pd.DataFrame, model: Any, seed: int) -> tuple[float, float, int]:
    """(bias, its MC SE, subjects) of the effect's estimator under the null: ``spec.bias_sims``
    subjects simulated at :func:`null_parameters` (no form offsets), fitted as the study fits."""
    from cogtestbed.simulation import simulate

    table = simulate(get_experiment(spec.experiment), spec.agent, spec.bias_sims, seed,
                     null_parameters(spec, fits, model), design=spec.design)
    values = effect_values(spec, model.fit_mle(table, n_starts=STUDY_STARTS), model)
    values = values[np.isfinite(values)]
    if values.size < 2:
        return float("nan"), float("nan"), int(values.size)
    return float(values.mean() - spec.null), float(values.std(ddof=1) / math.sqrt(values.size)), int(values.size)


def form_replicate(spec: FormStudySpec, seed: int) -> dict[str, Any]:
    """One replicate (module docstring): the two tests' p-values and the form-SD estimates."""
    from cogtestbed.simulation import simulate

    exp = get_experiment(spec.experiment)
    model = exp.model(spec.model)
    n = spec.forms.k * spec.n_per_form
    table = simulate(exp, spec.agent, n, seed, spec.params, design=spec.design, forms=spec.forms)
    fits = model.fit_mle(table, n_starts=STUDY_STARTS)
    form_of = table.groupby("subject", sort=True)[FORM_COLUMN].first()
    forms = form_of.loc[fits["subject"]].to_numpy(dtype=np.int64)
    row: dict[str, Any] = {"seed": seed, "aware_p": None, "naive_p": None}
    if spec.contrast is not None or spec.parameter is not None:
        effect = effect_values(spec, fits, model)
        aware = form_random_effects(effect, forms, spec.null, spec.level)
        row.update({"aware_p": aware.p_value, "aware_uncorrected_p": aware.p_value,
                    "naive_p": naive_test(effect, spec.null).p_value, "mean": aware.mu,
                    "effect_form_sd": aware.tau, "g": generalisability(effect, forms)["g"]})
        if spec.bias_sims > 0:
            bias_seed = int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
            bias, bias_se, n_sim = null_bias(spec, fits, model, bias_seed)
            corrected = bias_corrected_test(effect, forms, bias, bias_se, n_sim, spec.null)
            welch = bias_corrected_test(effect, forms, bias, bias_se, n_sim, spec.null, "satterthwaite")
            row.update({"aware_p": corrected.p_value, "aware_satterthwaite_p": welch.p_value, "bias": bias,
                        "bias_se": bias_se, "aware_df": corrected.df, "satterthwaite_df": welch.df})
    for name, sd in spec.forms.sd.items():
        raw = fits[name].to_numpy(dtype=np.float64)
        re = form_random_effects(_unconstrained(model, name, raw), forms, level=spec.level)
        p = model.parameters[name]
        off = (raw > p.lower + BOUND_EPS) & (raw < p.upper - BOUND_EPS)  # estimates off the parameter's bounds
        re_off = form_random_effects(_unconstrained(model, name, raw[off]), forms[off], level=spec.level)
        row.update({f"sd_{name}_true": sd, f"sd_{name}_hat": re.tau, f"sd_{name}_low": re.tau_low,
                    f"sd_{name}_high": re.tau_high, f"sd_{name}_dl": re.tau_dl,
                    f"sd_{name}_offbound": re_off.tau})
    return row


def run_form_study(spec: FormStudySpec, n_studies: int, seed: int,
                   progress: Callable[[int], None] | None = None) -> pd.DataFrame:
    """``n_studies`` replicates with seeds drawn from ``SeedSequence(seed)``; one row each."""
    seeds = np.random.SeedSequence(seed).generate_state(n_studies, dtype=np.uint32)
    rows = []
    for i, s in enumerate(seeds):
        rows.append(form_replicate(spec, int(s)))
        if progress is not None:
            progress(i + 1)
    return pd.DataFrame(rows)


def _rate(hits: np.ndarray) -> dict[str, float | int | None]:
    r = int(hits.size)
    if r == 0:
        return {"rate": None, "mc_se": None, "n": 0}
    p = float(hits.mean())
    k = int(hits.sum())  # one-sided 95% Clopper-Pearson upper bound: the plan's acceptance bound
    upper = 1.0 if k >= r else float(stats.beta.ppf(0.95, k + 1, r - k))
    return {"rate": p, "mc_se": math.sqrt(p * (1 - p) / r), "n": r, "upper95": upper}


def summarise_form_study(spec: FormStudySpec, results: pd.DataFrame) -> dict[str, Any]:
    """Rejection rates of both tests (with MC SE; replicates without a p-value are left out and
    counted), and for each form SD its mean estimate and the coverage of its interval."""
    out: dict[str, Any] = {"n_studies": len(results), "alpha": spec.alpha, "k_forms": spec.forms.k,
                           "n_per_form": spec.n_per_form}
    tests = [t for t in ("aware", "aware_satterthwaite", "aware_uncorrected", "naive") if f"{t}_p" in results.columns]
    if "bias" in results.columns:
        out["bias_correction"] = {"simulated_subjects": spec.bias_sims,
                                  "mean_bias": float(np.nanmean(results["bias"].to_numpy(dtype=np.float64)))}
    for test in tests if (spec.contrast or spec.parameter) else ():
        p = results[f"{test}_p"].to_numpy(dtype=np.float64)
        ok = np.isfinite(p)
        out[f"{test}_rejection"] = {**_rate(p[ok] < spec.alpha), "without_p": int((~ok).sum())}
    for name, sd in spec.forms.sd.items():
        lo = results[f"sd_{name}_low"].to_numpy(dtype=np.float64)
        hi = results[f"sd_{name}_high"].to_numpy(dtype=np.float64)
        ok = np.isfinite(lo) & np.isfinite(hi)
        extra = {f"mean_{k}": float(np.nanmean(results[f"sd_{name}_{k}"])) for k in ("dl", "offbound")
                 if f"sd_{name}_{k}" in results.columns}
        out[f"form_sd_{name}"] = {"true": sd, "mean_estimate": float(np.nanmean(results[f"sd_{name}_hat"])), **extra,
                                  "excludes_0": float(np.mean(lo[ok] > 0)) if ok.any() else None,
                                  "coverage": _rate((lo[ok] <= sd) & (sd <= hi[ok])), "level": spec.level}
    return out


def form_study_spec(experiment: str, model: str, forms: FormDesign, subjects: int,
                    params: Mapping[str, float] | None = None, effect: tuple[str, float] | None = None,
                    design: Design | None = None, alpha: float = 0.05) -> FormStudySpec:
    """The forms study of ``model`` (generated by its declared agent) with ``subjects`` subjects in
    all, split evenly over the forms.  ``params``: the model's parameters (defaults otherwise).
    ``effect`` ``(NAME, SIZE)``: a contrast of the model (SIZE split half up, half down over its
    ±1 parameters around ``params``) or a parameter (SIZE added to it); the test's null is the value
    without the effect.  Each form-SD parameter must be a parameter of the model (its recovery is
    read from the model's estimates)."""
    exp = get_experiment(experiment)
    m = exp.model(model)
    if subjects < 2 * forms.k:
        raise InputError(f"`subjects` {subjects}: a forms study needs at least 2 subjects per form "
                         f"({2 * forms.k} for {forms.k} forms)")
    unknown = [p for p in forms.sd if p not in m.parameters.names]
    if unknown:
        raise InputError(f"`form_sd` {', '.join(unknown)}: not a parameter of model {model!r} "
                         f"({', '.join(m.parameters.names)})")
    values = {**{p.name: p.default for p in m.parameters}, **dict(params or {})}
    contrast = parameter = None
    null = 0.0
    if effect is not None:
        name, size = effect
        if name in m.contrasts:
            contrast = name
            for p, w in m.contrasts[name].items():
                values[p] = values[p] + float(np.sign(w)) * size / 2
            null = 0.0
        elif name in m.parameters.names:
            parameter, null = name, float(values[name])
            values[name] = values[name] + size
        else:
            raise InputError(f"`effect` {name}: not a contrast ({', '.join(m.contrasts) or 'none'}) or parameter "
                             f"of model {model!r}")
    m.parameters.validate(values)
    generator = exp.generators[model]
    agent_values = {k: float(v) for k, v in generator.agent_params(values).items()}
    return FormStudySpec(experiment, generator.agent, model, forms, subjects // forms.k, agent_values,
                         contrast=contrast, parameter=parameter, null=null, design=design, alpha=alpha)

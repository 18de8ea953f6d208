"""Tasks of the model-level studies: parameter recovery, model recovery, power and SBC.

Each task function takes ``(spec, exp, task, design, rng, sim_seq, fit_seed)`` (see
:func:`cogtestbed.studies.driver.run_task`), simulates data from a model through its
generator (:func:`~cogtestbed.studies.driver.simulate_model`) and returns tidy rows.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.inference.base import CognitiveModel
from cogtestbed.inference.hierarchical import (
    SD_SCALE,
    ConvergenceWarning,
    fit_hierarchical,
    loo,
    sample_hierarchical_prior,
)
from cogtestbed.parameters import Parameter
from cogtestbed.studies.study_data import (
    SBC_RANKS,
    TaskFn,
    draw_true_parameters,
    fitted_model,
    rank_test,
    seed_of,
    simulate_model,
    simulate_runs,
    simulate_runs_chunked,
    study_chunk,
)
from cogtestbed.studies.study_kinds import (
    ModelRecoveryStudy,
    ModelStudy,
    PowerStudy,
    RecoveryStudy,
    ReferenceSample,
    SbcStudy,
)


def _estimates_mle(model: CognitiveModel, trials: pd.DataFrame) -> pd.DataFrame:
    """Long per-(subject, parameter) estimates, each with its likelihood-ratio 95 % interval
    (``lo95``, ``hi95``) and whether the data pin that parameter and why not (:meth:`CognitiveModel.fit_mle`
    with ``identify``: the subject's fit failed, or this parameter's interval is unbounded;
    ``subject_identified``: every parameter of the subject pinned)."""
    from cogtestbed.inference.identification import FIT_FAILED, parameter_flag

    fits = model.fit_mle(trials, identify=True)
    failed = [r if isinstance(r, str) and r.startswith(FIT_FAILED) else None for r in fits["unidentified_reason"]]
    parts = []
    for p in model.parameters:
        lo, hi = fits[f"{p.name}_lo95"].to_numpy(float), fits[f"{p.name}_hi95"].to_numpy(float)
        reasons = [f or parameter_flag(p, a, b) for f, a, b in zip(failed, lo, hi, strict=True)]
        parts.append(pd.DataFrame({"subject": fits["subject"].to_numpy(), "parameter": p.name,
                                   "estimate": fits[p.name].to_numpy(float), "lo95": lo, "hi95": hi,
                                   "identified": [r is None for r in reasons],
                                   "unidentified_reason": pd.Series(reasons, dtype=object),
                                   "subject_identified": fits["identified"].to_numpy(bool),
                                   "_o": np.arange(len(fits))}))
    long = pd.concat(parts, ignore_index=True)
    return long.sort_values(["_o"], kind="stable").drop(columns="_o").reset_index(drop=True)


def _estimates_mle_streamed(spec: ModelStudy, exp: ExperimentSpec, model: str, fitter: CognitiveModel,
                            true: Mapping[str, Any], n: int, seed: int, design: Any, runs: int) -> pd.DataFrame:
    """:func:`_estimates_mle` of ``model``'s data at ``true`` (:func:`simulate_model`), simulated and fitted
    :func:`~cogtestbed.studies.study_data.study_chunk` subjects at a time, so a task's memory is
    one chunk's trials and the estimates: the per-subject fits are independent, so the rows are
    those of one fit of the whole table."""
    gen = exp.generator(model)
    params = {**gen.agent_params(true), **spec.params}
    chunk = study_chunk(exp, gen.agent, params, design, runs)
    if n <= chunk:
        return _estimates_mle(fitter, simulate_runs(exp, gen.agent, n, seed, params, design, runs, spec.lapse))
    parts = simulate_runs_chunked(exp, gen.agent, n, seed, params, design, runs, spec.lapse, chunk)
    return pd.concat([_estimates_mle(fitter, part) for part in parts], ignore_index=True)


def _fit_bayes(model: CognitiveModel, trials: pd.DataFrame, spec: ModelStudy, seed: int) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit_hierarchical(model, trials, draws=spec.draws, tune=spec.tune, chains=spec.chains,
                                seed=seed, sampler=spec.sampler_backend, warn=False)


def _estimates_bayes(model: CognitiveModel, fit: Any) -> pd.DataFrame:
    summ = fit.subject_summary()
    return summ[summ["parameter"].isin(model.parameters.names)].rename(columns={"mean": "estimate"})


def _with_contrasts(df: pd.DataFrame, model: CognitiveModel, cols: Iterable[str]) -> pd.DataFrame:
    """Append rows for each named contrast (computed from true values and point estimates)."""
    if not model.contrasts:
        return df
    wide = df.pivot_table(index="subject", columns="parameter", values=list(cols), aggfunc="first")
    extra = []
    # a contrast is pinned where every parameter of its subject is
    per_subject = (df.drop_duplicates("subject").set_index("subject") if "subject_identified" in df.columns
                   else None)
    for name in model.contrasts:
        row = pd.DataFrame({"subject": wide.index, "parameter": name})
        for c in cols:
            row[c] = np.asarray(model.contrast(name, {p: wide[(c, p)] for p in model.parameters.names}))
        if per_subject is not None:
            ok = per_subject.loc[wide.index, "subject_identified"].to_numpy(dtype=bool)
            flagged = df[~df["identified"].astype(bool)].drop_duplicates("subject")
            why = flagged.set_index("subject")["unidentified_reason"]
            row["identified"] = ok
            row["unidentified_reason"] = pd.Series(
                [None if k else why.get(s) for s, k in zip(wide.index, ok, strict=True)], dtype=object)
            row["subject_identified"] = ok
        extra.append(row)
    return pd.concat([df, *extra], ignore_index=True)


def _population_rows(model: CognitiveModel, pop: Mapping[str, float], fit: Any) -> pd.DataFrame:
    """Recovery rows of the population medians ``{p}_pop`` (true = the drawn population value)."""
    post = fit.idata.posterior
    rows = []
    for p in model.parameters:
        var = f"{p.name}_pop"
        if var not in post or var not in pop:
            continue
        d = post[var].values.ravel()
        q = np.quantile(d, [0.25, 0.75, 0.05, 0.95])
        rows.append({"subject": "population", "parameter": var, "true": float(pop[var]),
                     "estimate": float(d.mean()), "lo50": q[0], "hi50": q[1], "lo90": q[2], "hi90": q[3]})
    return pd.DataFrame(rows)


def task_recovery(spec: RecoveryStudy, exp: ExperimentSpec, task: Mapping[str, Any], design: Any,
                  rng: np.random.Generator, sim_seq: np.random.SeedSequence, fit_seed: int) -> pd.DataFrame:
    model = exp.model(spec.models[0])
    n = int(task["n_subjects"])
    pop, true = draw_true_parameters(spec, model, n, rng)
    fitter = fitted_model(spec, model)
    fit = None
    if spec.method == "mle":
        est = _estimates_mle_streamed(spec, exp, model.name, fitter, true, n, seed_of(sim_seq), design,
                                      int(task["runs"]))
        cols = ["true", "estimate", "lo95", "hi95", "identified", "unidentified_reason", "subject_identified"]
    else:
        trials = simulate_model(spec, exp, model.name, true, n, seed_of(sim_seq), design, int(task["runs"]))
        fit = _fit_bayes(fitter, trials, spec, fit_seed)
        est = _estimates_bayes(fitter, fit)
        cols = ["true", "estimate", "lo50", "hi50", "lo90", "hi90"]
    for name in set(fitter.parameters.names) - set(model.parameters.names):  # a fitted lapse rate ε
        true[name] = np.full(n, spec.lapse.random if spec.lapse is not None else 0.0)
    order = {s: i for i, s in enumerate(sorted(est["subject"].unique()))}
    est = est.assign(true=[true[p][order[s]] for s, p in zip(est["subject"], est["parameter"], strict=True)])
    # Contrast intervals need draws: Bayesian contrasts carry point values only.
    est = _with_contrasts(est[["subject", "parameter", *cols]], model,
                          ["true", "estimate"] if fit is not None or spec.method == "mle" else cols)
    if fit is not None and spec.population and spec.sampler in ("prior", "population"):
        est = pd.concat([est, _population_rows(fitter, pop, fit)], ignore_index=True)
        est["subject"] = est["subject"].astype(str)  # one type per column (Parquet)
    # Fixed parameters are not recovered; log-scale parameters are scored on the log scale.
    fixed = [*spec.fixed, *(f"{p}_pop" for p in spec.fixed)]
    est = est[~est["parameter"].isin(fixed)].reset_index(drop=True)
    logs = {q for p in model.parameters if p.transform == "log" for q in (p.name, f"{p.name}_pop")}
    est["scale"] = np.where(est["parameter"].isin(list(logs)), "log", "natural")
    if fit is not None:  # every row carries its fit's sampler diagnostics
        d = fit.diagnostics
        est = est.assign(**d.columns(), fit_seconds=d.seconds)
    return est


def task_model_recovery(spec: ModelRecoveryStudy, exp: ExperimentSpec, task: Mapping[str, Any], design: Any,
                        rng: np.random.Generator, sim_seq: np.random.SeedSequence,
                        fit_seed: int) -> pd.DataFrame:
    gen = exp.model(task["generator"])
    n = int(task["n_subjects"])
    own = set(gen.parameters.names)  # each generating model draws only the parameters it has
    mine = spec.model_copy(update={"fixed": {k: v for k, v in spec.fixed.items() if k in own},
                                   "ranges": {k: v for k, v in spec.ranges.items() if k in own}})
    _, true = draw_true_parameters(mine, gen, n, rng)
    trials = simulate_model(spec, exp, gen.name, true, n, seed_of(sim_seq), design, int(task["runs"]))
    rows: list[dict[str, Any]] = []
    for name in spec.models:
        model = fitted_model(spec, exp.model(name))
        if spec.method == "mle":
            fits = model.fit_mle(trials)
            rows.extend({"generator": gen.name, "model": name, "subject": subject, "aic": aic, "bic": bic,
                         "elpd_loo": np.nan}
                        for subject, aic, bic in zip(fits["subject"], fits["aic"], fits["bic"], strict=True))
        else:
            fit = _fit_bayes(model, trials, spec, fit_seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = loo(fit)
            rows.append({"generator": gen.name, "model": name, "subject": "all", "aic": np.nan,
                         "bic": np.nan, "elpd_loo": float(res.elpd_loo)})
    out = pd.DataFrame(rows)
    out["subject"] = out["subject"].astype(str)
    return out


def effect_shift(spec: PowerStudy, model: CognitiveModel) -> dict[str, float]:
    """Each parameter's move of its population median by ``effect_size`` along the named contrast
    (minimum-norm shift: α⁺ − α⁻ = d gives α⁺ + d/2, α⁻ − d/2), on the natural scale."""
    from cogtestbed.parameters import contrast_shift

    return {} if spec.effect is None else contrast_shift(model.contrasts, spec.effect, spec.effect_size)


def population_medians(spec: PowerStudy, model: CognitiveModel) -> dict[str, float]:
    """The population medians of a power study: ``spec.base`` (defaults otherwise; a population's
    posterior medians, :meth:`~cogtestbed.inference.population.Population.medians`) moved by
    ``effect_size`` along the named contrast (:func:`effect_shift`)."""
    if spec.from_population is not None:
        median = spec.from_population.medians(model.parameters)
    else:
        median = {p.name: float(spec.base.get(p.name, p.default)) for p in model.parameters}
    for name, step in effect_shift(spec, model).items():
        median[name] += step
    return median


def power_parameters(spec: PowerStudy, model: CognitiveModel, n: int, rng: np.random.Generator,
                     each: bool = False, draw: int | None = None) -> dict[str, np.ndarray]:
    """Subject parameters whose population medians carry the effect.

    The medians start at ``spec.base`` (defaults otherwise) and move by ``effect_size`` along
    the named contrast (minimum-norm shift: α⁺ − α⁻ = d gives α⁺ = b + d/2, α⁻ = b − d/2);
    subjects scatter around them with SD ``sd_between`` on the unconstrained scale (:func:`scatter`).
    From a population (``spec.from_population``): one posterior draw of its group parameters
    (``draw``, else drawn from ``rng``; ``each``: one per subject, the posterior predictive an
    estimand averages over), its medians moved by the effect, its subjects scattered by that draw's
    SDs (:meth:`~cogtestbed.inference.population.Population.sample`).
    """
    if spec.from_population is not None:
        _, out = spec.from_population.sample(model.parameters, n, rng, shift=effect_shift(spec, model), each=each,
                                             draw=draw)
        return {**out, **{name: np.full(n, float(v)) for name, v in spec.fixed.items()}}
    params = model.parameters
    median = population_medians(spec, model)
    out = {}
    for p in params:
        if not p.lower <= median[p.name] <= p.upper:
            raise InputError(f"effect pushes {p.name} to {median[p.name]:.3g}, outside its bounds")
        if p.name in spec.fixed:
            out[p.name] = np.full(n, float(spec.fixed[p.name]))
            continue
        out[p.name] = scatter(p, median[p.name], spec.sd_between, rng.normal(size=n))
    return out


def scatter(p: Parameter, median: float, sd: float, z: np.ndarray) -> np.ndarray:
    """Subject values of ``p``: ``median`` moved by ``sd·z`` on the parameter's unconstrained
    (transformed) scale, a value beyond a bound reflected back inside it on that scale.

    The logit maps the real line onto [a, b], so nothing is reflected there; an identity-scale
    parameter with bounds (``mu_p`` in [−1, 2]) or a log-scale one with an upper bound
    (``sigma_dec`` in [0, 5]) would otherwise give subjects outside the bounds, which the agents
    refuse.  A draw inside the bounds is the plain normal draw.
    """
    u = fold(np.asarray(p.to_unconstrained(median) + sd * np.asarray(z, dtype=np.float64)),
             *transformed_bounds(p))
    return np.clip(np.asarray(p.to_constrained(u), dtype=np.float64), p.lower, p.upper)


def transformed_bounds(p: Parameter) -> tuple[float, float]:
    """``p``'s bounds on its unconstrained scale (±∞ where the transform sends a bound there)."""
    if p.transform == "logit":
        return -math.inf, math.inf
    if p.transform == "log":
        return -math.inf, math.log(p.upper - p.lower) if math.isfinite(p.upper) else math.inf
    return p.lower, p.upper


def fold(u: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``u`` reflected into [lo, hi] at its finite ends (repeatedly, for a draw several widths out)."""
    if math.isfinite(lo) and math.isfinite(hi):
        width = hi - lo
        t = np.mod(u - lo, 2.0 * width)
        return lo + np.where(t <= width, t, 2.0 * width - t)
    if math.isfinite(lo):
        return np.where(u < lo, 2.0 * lo - u, u)
    if math.isfinite(hi):
        return np.where(u > hi, 2.0 * hi - u, u)
    return u


def detected(p_value: float, estimate: float, effect_size: float, level: float) -> bool:
    """A two-sided test's rejection, counted as a detection.

    At effect 0 every rejection counts (so the rate is the type-I error rate, ≈ level); at a
    non-zero effect only rejections in the effect's direction do (a wrong-sign rejection is a
    type-III error, not power).
    """
    if not p_value < level:
        return False
    return effect_size == 0 or bool(np.sign(estimate) == np.sign(effect_size))


def effect_scale(model: CognitiveModel, effect: str) -> str:
    """The scale a two-group test compares ``effect`` on: ``log`` for a log-transformed parameter
    (a discount rate k, an inverse temperature: its per-subject MLE is skewed and bounded below, its
    log near-normal, and a ridge estimate at the upper bound does not dominate a mean), ``natural``
    for any other parameter and for contrasts (a difference of parameters)."""
    if effect in model.parameters.names and model.parameters[effect].transform == "log":
        return "log"
    return "natural"


def two_group_test(model: CognitiveModel, effect: str) -> str:
    """The bounded-estimate rule: how a two-group MLE power test compares ``effect``.  ``rank``
    (Brunner–Munzel, :func:`~cogtestbed.studies.study_data.rank_test`) for a parameter the
    model declares in ``rank_tested_parameters`` (its per-subject MLE runs to a bound of the search
    often, so a mean on any scale is led by how far the optimiser ran, and a power curve can fall as
    subjects are added); ``welch`` (Welch's t-test on :func:`effect_scale`) for any other parameter and
    every contrast.  A choice of cogtestbed, not a paper's."""
    return "rank" if effect in getattr(model, "rank_tested_parameters", ()) else "welch"


def on_scale(values: Any, scale: str) -> np.ndarray:
    """``values`` on the test's scale (:func:`effect_scale`)."""
    x = np.asarray(values, dtype=np.float64)
    return np.log(x) if scale == "log" else x


def reference_sample(model: CognitiveModel, effect: str, trials: pd.DataFrame, source: str) -> ReferenceSample:
    """A fixed first group for a two-group power study (an LLM against a human sample): the
    per-subject MLE of ``model`` on ``trials`` (any trial table of the experiment), as ``effect``
    on the test's scale, and the median of each parameter's estimates as the simulated group's base."""
    fits = model.fit_mle(trials)
    return reference_from_estimates(model, effect, {p: fits[p].to_numpy(float) for p in model.parameters.names}, source)


def reference_from_estimates(model: CognitiveModel, effect: str, estimates: Mapping[str, np.ndarray],
                             source: str) -> ReferenceSample:
    """A fixed first group from per-subject estimates already made (a fit's, or a population's own
    participants, :mod:`cogtestbed.studies.conditional`)."""
    values = on_scale(model.contrast(effect, dict(estimates)), effect_scale(model, effect))
    values = values[np.isfinite(values)]  # as the test keeps them (and JSON carries no NaN)
    if len(values) < 2:  # refused here in one line (inside the model's validator it reads as a pydantic error)
        raise InputError(f"the sample from {source} has fewer than 2 fitted subjects: no two-group test")
    medians = {p: float(np.nanmedian(np.asarray(estimates[p], float))) for p in model.parameters.names}
    return ReferenceSample(source=source, values=tuple(float(v) for v in values), medians=medians)


#: Normal quantiles that stand for a population's subjects when :func:`one_sample_null` takes the
#: mean of an effect before it moves (deterministic, so every study and run compares with one value).
NULL_QUANTILES = 4096


def power_subjects(spec: PowerStudy, exp: ExperimentSpec, model: CognitiveModel, design: Any, runs: int, n: int,
                   seq: np.random.SeedSequence) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """(trial table, true parameters) of ``n`` fresh subjects of a power study, their parameters drawn as
    :func:`power_parameters` draws them and their sessions simulated at ``design`` × ``runs``; the random numbers
    from ``seq`` (the parameters' child, then the simulation's)."""
    param_seq, sim_seq = seq.spawn(2)
    true = power_parameters(spec, model, n, np.random.default_rng(param_seq))
    return simulate_model(spec, exp, model.name, true, n, seed_of(sim_seq), design, runs), true


def one_sample_null(spec: PowerStudy, model: CognitiveModel) -> float:
    """What a one-sample test compares the effect with, on the test's scale (:func:`effect_scale`):
    the mean of the effect over the population before the effect moves it (``effect_size`` 0:
    medians at ``spec.base`` or the defaults, subjects scattered by ``sd_between`` as
    :func:`power_parameters` scatters them), taken over :data:`NULL_QUANTILES` normal quantiles.

    A contrast whose parts share a distribution (optimism bias at equal learning rates) gives 0,
    the test against 0 it always was; a parameter that cannot be 0 (a discount rate k) is tested
    against its value before the effect, not against 0, which every design would "detect".  This
    reading of a one-sample effect is the package's default, not a paper's.
    """
    scale = effect_scale(model, spec.effect)
    if spec.from_population is not None:
        values = _population_null_values(spec, model)
    else:
        medians = population_medians(spec.model_copy(update={"effect_size": 0.0}), model)
        z = _null_quantiles()
        values = {p.name: (np.full(z.size, float(spec.fixed[p.name])) if p.name in spec.fixed
                           else scatter(p, medians[p.name], spec.sd_between, z)) for p in model.parameters}
    null = float(np.mean(on_scale(model.contrast(spec.effect, values), scale)))
    return 0.0 if abs(null) < 1e-12 else null


#: Normal quantiles per posterior draw of a population's :func:`one_sample_null`.
POPULATION_NULL_QUANTILES = 64


def _population_null_values(spec: PowerStudy, model: CognitiveModel) -> dict[str, np.ndarray]:
    """Subjects standing for a population before the effect: every posterior draw at
    :data:`POPULATION_NULL_QUANTILES` normal quantiles (deterministic: the posterior predictive's
    mean without Monte-Carlo error beyond the draws kept)."""
    pop = spec.from_population
    assert pop is not None
    z = np.asarray(stats.norm.ppf((np.arange(POPULATION_NULL_QUANTILES) + 0.5) / POPULATION_NULL_QUANTILES))
    out = {}
    for p in model.parameters:
        if p.name in spec.fixed:
            out[p.name] = np.full(pop.n_draws * z.size, float(spec.fixed[p.name]))
            continue
        mu, sigma = np.asarray(pop.mu[p.name], float), np.asarray(pop.sigma[p.name], float)
        out[p.name] = p.inside(p.to_constrained((mu[:, None] + sigma[:, None] * z[None, :]).ravel()))
    return out


@functools.cache
def _null_quantiles() -> np.ndarray:
    """The :data:`NULL_QUANTILES` normal quantiles :func:`one_sample_null` averages over."""
    return np.asarray(stats.norm.ppf((np.arange(NULL_QUANTILES) + 0.5) / NULL_QUANTILES))


def one_sample_values(spec: PowerStudy, model: CognitiveModel, estimates: Mapping[str, Any],
                      null: float | None = None) -> np.ndarray:
    """Per-subject estimates of the effect minus :func:`one_sample_null` (``null``, when the caller
    has it), on the test's scale: what a one-sample test compares with 0."""
    values = on_scale(model.contrast(spec.effect, estimates), effect_scale(model, spec.effect))
    null = one_sample_null(spec, model) if null is None else null
    return values - null if null else values


def population_null(spec: PowerStudy, model: CognitiveModel) -> float:
    """The effect at the population medians before it moves (natural scale): what the hierarchical
    one-sample test compares the population contrast with (0 for a contrast of equal medians)."""
    medians = population_medians(spec.model_copy(update={"effect_size": 0.0}), model)
    return float(np.asarray(model.contrast(spec.effect, {k: np.array([v]) for k, v in medians.items()}))[0])


def _group_values(spec: PowerStudy, model: CognitiveModel, fitter: CognitiveModel, exp: ExperimentSpec,
                  true: Mapping[str, np.ndarray], n: int, seq: np.random.SeedSequence, design: Any,
                  runs: int) -> np.ndarray:
    """One simulated group's per-subject MLE of the effect, on the test's scale."""
    trials = simulate_model(spec, exp, model.name, true, n, seed_of(seq), design, runs)
    fits = fitter.fit_mle(trials)
    return on_scale(model.contrast(spec.effect, {p: fits[p].to_numpy() for p in model.parameters.names}),
                    effect_scale(model, spec.effect))


def _group_draws(spec: PowerStudy, model: CognitiveModel, fitter: CognitiveModel, exp: ExperimentSpec,
                 true: Mapping[str, np.ndarray], n: int, seq: np.random.SeedSequence, design: Any, runs: int,
                 fit_seed: int) -> np.ndarray:
    """One simulated group's posterior draws of the effect's population value (hierarchical fit)."""
    trials = simulate_model(spec, exp, model.name, true, n, seed_of(seq), design, runs)
    post = _fit_bayes(fitter, trials, spec, fit_seed).idata.posterior
    return np.asarray(model.contrast(spec.effect, {p: post[f"{p}_pop"].values.ravel()
                                                   for p in model.parameters.names if f"{p}_pop" in post}))


def _people_values(spec: PowerStudy, model: CognitiveModel, fitter: CognitiveModel, exp: ExperimentSpec,
                   rng: np.random.Generator, seq: np.random.SeedSequence, draw: int | None) -> np.ndarray:
    """The first group of an LLM-against-people study: ``spec.people`` people drawn
    afresh from the population's posterior draw ``draw`` (no effect, no LLM lapses), each playing
    the experiment's own design at ``spec.people_trials`` trials (:func:`people_design`), fitted
    per subject as the LLM's are.  They do not depend on the LLM's design, so a repetition's people
    are simulated and fitted once per process for every design a plan tries (:data:`_PEOPLE`)."""
    key = (spec.model_dump_json(include={"experiment", "models", "effect", "people", "people_trials", "seed",
                                         "lapse_fit", "params"}),
           spec.from_population.name if spec.from_population is not None else "", tuple(seq.spawn_key),
           seq.entropy if isinstance(seq.entropy, int) else str(seq.entropy), draw)
    if key not in _PEOPLE:
        people = spec.model_copy(update={"effect_size": 0.0, "lapse": None})
        n = int(spec.people or 0)
        design = people_design(exp, spec.people_trials)
        true = power_parameters(people, model, n, rng, draw=draw)
        _PEOPLE[key] = _group_values(people, model, fitter, exp, true, n, seq, design, 1)
        while len(_PEOPLE) > PEOPLE_CACHE:
            _PEOPLE.pop(next(iter(_PEOPLE)))
    return _PEOPLE[key]


def forget_people() -> None:
    """Empty this process's fitted people (:func:`_people_values`): a timing of a study's first task
    then fits them as that task does (:func:`~cogtestbed.planning.estimate.plan_look_line`)."""
    _PEOPLE.clear()


#: Repetitions whose people a process keeps (:func:`_people_values`).
PEOPLE_CACHE = 2000
_PEOPLE: dict[Any, np.ndarray] = {}


#: LLM subjects of a study against people simulated and fitted together.  Block ``j`` of a repetition
#: is seeded by its index alone (the ``j``-th child of the group's stream) and its subjects' parameters
#: are the ``j``-th ten of the group's subject-major draws, so a larger design's LLM subjects extend a
#: smaller one's block by block, and a plan fits each block once for every size.
LLM_BLOCK = 10
#: Columns of a power task's row that carry its groups' per-subject values back to a plan (a task
#: asked with ``reuse``), dropped from the rows it keeps.
REUSE_PREFIX = "reuse_"


def _llm_block_values(spec: PowerStudy, model: CognitiveModel, fitter: CognitiveModel, exp: ExperimentSpec,
                      shape: tuple[int, int, Any, bool], rng: np.random.Generator, seq: np.random.SeedSequence,
                      draw: int | None, known: Any = None) -> np.ndarray:
    """The LLM group's per-subject values of an LLM-against-people study (on the test's scale) for its
    ``n`` subjects (``shape`` = (n, runs, design, whole)), simulated in :data:`LLM_BLOCK` blocks: the
    values in ``known`` (a plan's values of this repetition at a smaller size) are kept where they fill
    whole blocks, the other blocks simulated and fitted: every subject of a block where ``whole`` (a
    plan's search, whose next size extends them), else the first ``n`` only (a study of one size: a
    subject's fit does not depend on the others').  The first ``n`` are the group's; every number is
    the same whether a block was known or fitted here (``tests/test_plan_reuse.py``)."""
    n, runs, design, whole = shape
    blocks = math.ceil(n / LLM_BLOCK)
    want = blocks * LLM_BLOCK if whole else n
    true = power_parameters(spec, model, blocks * LLM_BLOCK, rng, draw=draw)
    seeds = seq.spawn(blocks)
    have = np.asarray([] if known is None else known, float)
    done = min(blocks, have.size // LLM_BLOCK)
    if have.size >= want:
        return have[:want]
    tables = []
    for j in range(done, blocks):  # each block simulated on its own seed, all fitted in one call
        part = slice(j * LLM_BLOCK, (j + 1) * LLM_BLOCK)
        table = simulate_model(spec, exp, model.name, {k: np.asarray(v)[part] for k, v in true.items()}, LLM_BLOCK,
                               seed_of(seeds[j]), design, runs)
        table["subject"] = table["subject"] + (j - done) * LLM_BLOCK
        tables.append(table)
    trials = pd.concat(tables, ignore_index=True)
    subjects = list(pd.unique(trials["subject"]))[:want - done * LLM_BLOCK]  # table order: the fit's order
    fits = fitter.fit_mle(trials, subjects=subjects)
    new = on_scale(model.contrast(spec.effect, {p: fits[p].to_numpy() for p in model.parameters.names}),
                   effect_scale(model, spec.effect))
    return np.concatenate([have[:done * LLM_BLOCK], np.asarray(new, float)])


def people_design(exp: ExperimentSpec, trials: int | None) -> Any:
    """The design the people played: the experiment's own, with their trial count reached through
    its trials field, rounded to the nearest count the field can make (the design's own count
    where it has no trials field or ``trials`` is None)."""
    from cogtestbed.studies.study_data import design_for_trials, trials_step

    base = design_for_trials(exp, None, {})
    if trials is None or exp.trials_field is None:
        return base
    per = trials_step(base, exp.trials_field) or 1
    return design_for_trials(exp, max(1, round(trials / per)) * per, {})


def _groups_row(spec: PowerStudy, estimate: float, p_value: float, interval: tuple[float, float],
                direction: float, test: str) -> dict[str, Any]:
    """A two-group study's row.  ``direction``: the signed statistic a rejection's direction is read from
    (the estimate; the rank test's relative effect), so a detection can be re-judged at another critical
    p (people_level)."""
    return {"effect": spec.effect, "effect_size": spec.effect_size, "estimate": estimate, "p_value": p_value,
            "lo": interval[0], "hi": interval[1], "direction": float(direction),
            "detected": detected(p_value, direction, spec.effect_size,
                                 spec.level if spec.critical_p is None else spec.critical_p),
            "test": test}


def two_group_mle_row(spec: PowerStudy, model: CognitiveModel, va: Any, vb: Any) -> dict[str, Any]:
    """The row of a two-group MLE study from its groups' per-subject values on the test's scale (``va``
    the first group: the other LLM, the people or a fixed sample; ``vb`` the second, the effect's):
    a two-sided Welch t-test of ``vb − va`` (on the log scale for a log-scaled parameter), or the
    Brunner–Munzel rank test where the effect's estimates sit at a bound (:func:`two_group_test`).
    Non-finite values are dropped, as a fit that failed gives no estimate."""
    va, vb = np.asarray(va, float), np.asarray(vb, float)
    va, vb = va[np.isfinite(va)], vb[np.isfinite(vb)]
    scale = effect_scale(model, spec.effect)
    estimate = float(vb.mean() - va.mean()) if va.size and vb.size else np.nan
    lo, hi, p_value = np.nan, np.nan, float("nan")
    what = f"log {spec.effect}" if scale == "log" else spec.effect
    direction = estimate
    if two_group_test(model, spec.effect) == "rank":  # the bounded-estimate rule: no interval
        estimate, relative, p_value = rank_test(vb, va)
        direction = relative
        test = (f"two-sided Brunner-Munzel rank test of two groups' per-subject MLE of {spec.effect} "
                f"(estimates at a bound; estimate: Hodges-Lehmann shift of {what})")
    else:
        if va.size > 1 and vb.size > 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                res = stats.ttest_ind(vb, va, equal_var=False)
                ci = res.confidence_interval(1 - spec.level)
            p_value, lo, hi = float(res.pvalue), float(ci.low), float(ci.high)
        test = f"two-sided Welch t-test of two groups' per-subject MLE ({what})"
    return _groups_row(spec, estimate, p_value, (float(lo), float(hi)), float(direction), test)


def task_power_groups(spec: PowerStudy, exp: ExperimentSpec, task: Mapping[str, Any], design: Any,
                      rng: np.random.Generator, sim_seq: np.random.SeedSequence, fit_seed: int) -> pd.DataFrame:
    """Two groups (two LLMs, or an LLM and a fixed ``reference`` sample) of ``n`` subjects each, the
    second's population medians moved by the effect; detected when the difference (second − first)
    is significant in the effect's direction.  MLE: a two-sided Welch t-test of the two groups'
    per-subject estimates (on the log scale for a log-scaled parameter, :func:`effect_scale`);
    hierarchical: each group fitted on its own, the posterior of the difference of the population
    values rejecting 0 at ``level`` (two-sided tail probability).  Each group draws from a stream of
    its own, so the subjects of a larger design extend a smaller one's (common random numbers)."""
    model = exp.model(spec.models[0])
    n, runs = int(task["n_subjects"]), int(task["runs"])
    (rng_a, rng_b), (seq_a, seq_b) = rng.spawn(2), sim_seq.spawn(2)
    null = spec.model_copy(update={"effect_size": 0.0})
    # From a population both groups share one posterior draw: under no effect they are one population.
    draw = spec.from_population.draw(rng) if spec.from_population is not None else None
    fitter = fitted_model(spec, model)
    reused: dict[str, np.ndarray] = {}
    if spec.method == "mle":
        if spec.reference is not None:
            va = np.asarray(spec.reference.values, float)
        elif spec.people is not None:
            known = task.get("reuse") or {}
            va = known["people"] if known.get("people") is not None else \
                _people_values(spec, model, fitter, exp, rng_a, seq_a, draw)
            # whole blocks only where a larger size will extend them (a plan's search)
            shape = (n, runs, design, "reuse" in task and not task.get("one_size"))
            reused = {"people": va, "llm": _llm_block_values(spec, model, fitter, exp, shape, rng_b, seq_b, draw,
                                                             known.get("llm"))}
            va = np.asarray(va, float)
        else:
            va = _group_values(spec, model, fitter, exp, power_parameters(null, model, n, rng_a, draw=draw), n, seq_a,
                               design, runs)
        vb = reused["llm"][:n] if reused else _group_values(spec, model, fitter, exp, power_parameters(
            spec, model, n, rng_b, draw=draw), n, seq_b, design, runs)
        row = two_group_mle_row(spec, model, va, vb)
    else:
        da = _group_draws(spec, model, fitter, exp, power_parameters(null, model, n, rng_a, draw=draw), n, seq_a,
                          design, runs, fit_seed)
        db = _group_draws(spec, model, fitter, exp, power_parameters(spec, model, n, rng_b, draw=draw), n, seq_b,
                          design, runs, fit_seed + 1)
        draws = db - da
        lo, hi = np.quantile(draws, [spec.level / 2, 1 - spec.level / 2])
        estimate = float(np.median(draws))
        p_value = float(2 * min((draws <= 0).mean(), (draws >= 0).mean()))
        test = (f"{100 * (1 - spec.level):.0f}% posterior interval of the difference of two groups' population "
                "values excludes 0")
        direction = estimate
        row = _groups_row(spec, estimate, p_value, (float(lo), float(hi)), float(direction), test)
    if "reuse" in task and reused:  # a plan keeps both groups' fits for its next design (PowerEvaluator)
        row.update({f"{REUSE_PREFIX}{k}": v for k, v in reused.items()})
    return pd.DataFrame([row])


def task_power(spec: PowerStudy, exp: ExperimentSpec, task: Mapping[str, Any], design: Any,
               rng: np.random.Generator, sim_seq: np.random.SeedSequence, fit_seed: int) -> pd.DataFrame:
    if spec.groups == 2:
        return task_power_groups(spec, exp, task, design, rng, sim_seq, fit_seed)
    model = exp.model(spec.models[0])
    n = int(task["n_subjects"])
    true = power_parameters(spec, model, n, rng)
    trials = simulate_model(spec, exp, model.name, true, n, seed_of(sim_seq), design, int(task["runs"]))
    fitter = fitted_model(spec, model)
    if spec.method == "mle":
        fits = fitter.fit_mle(trials)
        null = one_sample_null(spec, model)
        values = one_sample_values(spec, model, {p: fits[p].to_numpy(float) for p in model.parameters.names}, null)
        estimate, lo, hi, p_value = float(np.nanmean(values)), np.nan, np.nan, float("nan")
        values = values[np.isfinite(values)]
        if len(values) > 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                res = stats.ttest_1samp(values, 0.0)
                ci = res.confidence_interval(1 - spec.level)  # the t-interval of the mean effect
            p_value, lo, hi = float(res.pvalue), float(ci.low), float(ci.high)
        test = one_sample_test_name(spec, model, null)
    else:
        post = _fit_bayes(fitter, trials, spec, fit_seed).idata.posterior
        draws = np.asarray(model.contrast(spec.effect, {p: post[f"{p}_pop"].values.ravel()
                                                        for p in model.parameters.names if f"{p}_pop" in post}))
        draws = draws - population_null(spec, model)
        lo, hi = np.quantile(draws, [spec.level / 2, 1 - spec.level / 2])
        estimate = float(np.median(draws))
        # Two-sided posterior tail probability: rejects exactly when the interval excludes 0.
        p_value = float(2 * min((draws <= 0).mean(), (draws >= 0).mean()))
        test = f"{100 * (1 - spec.level):.0f}% population posterior interval excludes 0"
    return pd.DataFrame([{"effect": spec.effect, "effect_size": spec.effect_size, "estimate": estimate,
                          "p_value": p_value, "lo": lo, "hi": hi,
                          "detected": detected(p_value, estimate, spec.effect_size, spec.level), "test": test}])


def one_sample_test_name(spec: PowerStudy, model: CognitiveModel, null: float | None = None) -> str:
    """How a one-sample power study's test reads in its rows and reports (``null``:
    :func:`one_sample_null`, when the caller has it)."""
    null = one_sample_null(spec, model) if null is None else null
    scale = effect_scale(model, spec.effect)
    if not null and scale == "natural":
        return "two-sided one-sample t-test on per-subject MLE"
    return (f"two-sided one-sample t-test on per-subject MLE ({scale} scale) against the effect's value before "
            f"it moves ({null:.4g})")


def _ranked(post: Any, var: str) -> np.ndarray:
    """Posterior draws of ``var`` (``name`` or ``name[k]``: the k-th of a vector variable)."""
    name, _, idx = var.partition("[")
    values = post[name].values
    total = post.sizes["chain"] * post.sizes["draw"]
    values = values.reshape(total, -1)
    return values[:, int(idx.rstrip("]"))] if idx else values[:, 0]


def task_sbc(spec: SbcStudy, exp: ExperimentSpec, task: Mapping[str, Any], design: Any,
             rng: np.random.Generator, sim_seq: np.random.SeedSequence, fit_seed: int) -> pd.DataFrame:
    """SBC (Talts et al. 2018): draw from the model's full prior, simulate, fit, rank the truth.

    The prior covers the hierarchical parameters (``{p}_mu``, ``{p}_sigma``, the first subject's
    value) and any likelihood parameters outside ``model.parameters``
    (:meth:`~cogtestbed.inference.base.CognitiveModel.sample_nuisance`, e.g. a response
    precision), which the simulating agent receives too, so data and model agree exactly.
    """
    model = exp.model(spec.models[0])
    n = int(task["n_subjects"])
    pop, true = sample_hierarchical_prior(model.parameters, n, rng, SD_SCALE)
    nuisance_truth, nuisance_agent = model.sample_nuisance(rng)
    trials = simulate_model(spec, exp, model.name, true, n, seed_of(sim_seq), design, int(task["runs"]),
                            extra=nuisance_agent)
    post = _fit_bayes(model, trials, spec, fit_seed).idata.posterior
    truths: dict[str, float] = {}
    for p in model.parameters:
        truths[f"{p.name}_mu"] = pop[f"{p.name}_mu"]
        truths[f"{p.name}_sigma"] = pop[f"{p.name}_sigma"]
        truths[f"{p.name}[0]"] = float(true[p.name][0])
    truths.update(nuisance_truth)
    rows = []
    for var, truth in truths.items():
        d = _ranked(post, var)
        d = d[:: max(1, len(d) // SBC_RANKS)]
        rows.append({"variable": var, "rank": int((d < truth).sum()), "L": len(d), "true": float(truth),
                     "in90": bool(np.quantile(d, 0.05) <= truth <= np.quantile(d, 0.95))})
    return pd.DataFrame(rows)


MODEL_TASKS: dict[str, TaskFn] = {"recovery": task_recovery, "model-recovery": task_model_recovery,
                                  "power": task_power, "sbc": task_sbc}

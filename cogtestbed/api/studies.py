"""Studies on synthetic data as Python functions: :func:`recover`, :func:`model_recovery`,
:func:`sbc` and :func:`power` (``cogtestbed recover | model-recovery | sbc | power``).

Each builds the same :class:`~cogtestbed.studies.driver.StudySpec` as its command
(keyword names follow the options: ``subjects``, ``trials``, ``runs``, ``reps``, ``method``,
``params`` for ``--param``, ``fix`` for ``--fix``), checks it before computing, runs it on local
processes and returns a :class:`Study`: ``.table`` (one row per estimate or simulated study),
``.summary``, ``.verdict`` and ``.plot()``; ``output=DIR`` also writes the command's files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogtestbed.api.checks import model_first, public
from cogtestbed.api.figures import Figures
from cogtestbed.errors import InputError
from cogtestbed.request import api_values, build, derive_api, keyword, request_block
from cogtestbed.studies.study_options import (
    FORM_STUDY_OPTIONS,
    DeclaredStudyRequest,
    FormStudyRequest,
    MetricValidityRequest,
    ModelRecoveryRequest,
    PowerRequest,
    RecoverRequest,
    RecoveryPlotRequest,
    SbcRequest,
)

if TYPE_CHECKING:
    import pandas as pd

    from cogtestbed.experiments.spec import ExperimentSpec
    from cogtestbed.studies.driver import StudyResult, StudySpec

Sizes = int | Sequence[int] | None
Assignments = Mapping[str, float] | None
#: A design: a mapping of fields, or ``--design NAME=VALUE`` items as the command line spells them.
Design = Mapping[str, Any] | Sequence[str] | None


def _quiet(_: Any) -> None:
    """A callback that does nothing."""


def _start(kind: str, total: int) -> None:
    """The default ``start``: nothing shown."""


@dataclass
class Watch:
    """How a running study reports: ``say`` a line (its up-front time estimate, when ``estimate``),
    ``start(kind, total)`` before its first task, ``advance(k)`` as ``k`` more tasks finish.  The command
    line draws its progress bar and lines from these; the default says nothing."""

    say: Callable[[str], None] = _quiet
    start: Callable[[str, int], None] = _start
    advance: Callable[[int], None] = _quiet
    estimate: bool = False


class Study:
    """A finished study: its spec, the tidy ``table``, the ``summary`` and the ``verdict``;
    ``files``: what ``output=DIR`` wrote (results.parquet, summary.json, plots, report.html).

    Parameters
    ----------
    result : StudyResult
        The study's result.
    files : mapping, optional
        The files written.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> study = ct.recover("instrumental-learning", "rw-pm", reps=2, subjects="3", seed=0)
    >>> study.spec.kind, len(study.table) > 0
    ('recovery', True)
    """

    def __init__(self, result: StudyResult, files: Mapping[str, Path] | None = None) -> None:
        self.result = result
        self.files = dict(files or {})

    @property
    def spec(self) -> StudySpec:
        return self.result.spec

    @property
    def table(self) -> pd.DataFrame:
        """One row per estimate (recovery) or simulated study (power, SBC, model recovery)."""
        return self.result.table

    @property
    def summary(self) -> dict[str, Any]:
        return self.result.summary

    @property
    def verdict(self) -> str:
        """The study's result in one paragraph (as the command prints it)."""
        return self.result.verdict

    def to_dict(self) -> dict[str, Any]:
        """What the command prints with ``--json``: the summary (recovery: ``parameters``, or
        ``cells`` of several designs; ``confusion``, ``power``, ``sbc``, ...), the report written,
        the verdict, the resolved designs (every field), the true parameters' distribution, the
        seconds taken and the ``request`` block of the options given (as ``summary.json``'s)."""
        from cogtestbed.studies.report import resolved

        s, kind = self.summary, self.spec.kind
        if kind == "recovery":
            cells = list(s.values())
            payload: dict[str, Any] = {"parameters": cells[0]["parameters"]} if len(cells) == 1 else {"cells": cells}
        else:
            key = {"model-recovery": "confusion", "power": "power", "sbc": "sbc"}.get(kind, kind.replace("-", "_"))
            payload = {key: s}
        if "report" in self.files:
            payload["report"] = str(self.files["report"])
        payload.update(verdict=self.verdict, designs=resolved(self.spec), true_parameters=self.spec.true_distribution,
                       seconds=self.result.seconds)
        if getattr(self.result, "request", None) is not None:  # the options given, as summary.json's
            payload["request"] = self.result.request
        return payload

    def plot(self, directory: str | os.PathLike[str] | None = None) -> Figures:
        """The study's plots (recovery: true against estimated per parameter and the error
        correlations; power curves; confusion matrices; SBC rank histograms) as PNG files in
        ``directory`` (default: a temporary one)."""
        import tempfile

        from cogtestbed.studies.plots import plots

        out = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="cogtestbed-study-"))
        out.mkdir(parents=True, exist_ok=True)
        return Figures(plots(self.result, out))

    def save(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """results.parquet, summary.json, the plots and report.html (as ``-o DIR`` writes them)."""
        from cogtestbed.studies.report import write_study

        self.files = write_study(self.result, Path(directory))
        return self.files

    def __repr__(self) -> str:
        return f"Study({self.spec.kind}: {self.verdict})"


def _sizes(value: Sizes | str, default: tuple[Any, ...], option: str = "`subjects`") -> tuple[Any, ...]:
    """A size, a list of sizes or a comma list as the command line spells it (``"10,20"``)."""
    from cogtestbed.studies.options import ints

    if value is None:
        return default
    if isinstance(value, str):
        return ints(value, default, option)
    return (int(value),) if isinstance(value, int) else tuple(int(v) for v in value)


def _assignments(value: Assignments | Sequence[str], option: str) -> dict[str, Any]:
    """A mapping of names to values, or ``NAME=VALUE`` items as the command line spells them."""
    from cogtestbed.studies.options import parse_assignments

    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    return parse_assignments(list(value), option)


def _sized(experiment: str, design: Any, trials: Sizes | str) -> dict[str, Any]:
    """The study's ``design`` and ``trials``: a mapping of fields, a design object (its fields: the option is
    :class:`cogtestbed.option_groups.DesignFields`, as ``ct.simulate`` takes it), or ``--design`` items (a comma
    list on the trials field sweeps it; on another integer field it raises
    :class:`~cogtestbed.studies.sizes.DesignSweep`: one study per value)."""
    from cogtestbed.studies.options import sized

    dump = getattr(design, "model_dump", None)
    design = dump() if callable(dump) else design
    if isinstance(design, Mapping):
        return {"design": dict(design), "trials": _sizes(trials, (None,), "`trials`")}
    if isinstance(trials, int) or (trials is not None and not isinstance(trials, str)):
        trials = ",".join(str(int(t)) for t in ([trials] if isinstance(trials, int) else trials))
    return sized(experiment, list(design or []), trials)


def _refuse_implausible(pop: Any) -> None:
    """Refuse, before any simulation, a population whose group parameters are implausible
    (:meth:`~cogtestbed.inference.population.Population.implausible`, naming the field)."""
    from cogtestbed.registry import get_experiment

    exp = get_experiment(pop.experiment)
    if pop.model in exp.models:
        pop.check(exp.model(pop.model).parameters)


def _experiment_name(experiment: str | ExperimentSpec | None, model: str | None = None) -> str:
    """The name of the experiment (a spec object is registered in this process first); None: the
    one experiment declaring ``model`` (:func:`cogtestbed.registry.experiment_of`)."""
    from cogtestbed.api.core import get_experiment
    from cogtestbed.registry import experiment_of

    if experiment is None or isinstance(experiment, str):
        return experiment_of(experiment, model=model)
    return get_experiment(experiment).name


def say_estimate(spec: StudySpec, workers: int | None, say: Callable[[str], None]) -> Any:
    """The study's up-front time estimate, said (for a job over
    :data:`~cogtestbed.progress.ESTIMATE_OVER` seconds; :mod:`cogtestbed.planning.estimate`);
    returns it (its timed task's rows are reused by the study), or None."""
    from cogtestbed import progress
    from cogtestbed.planning.estimate import MIN_TASKS, study_estimate

    if getattr(spec, "method", None) == "hierarchical" and len(spec.tasks()) >= MIN_TASKS:
        # the timed task compiles the hierarchical model first (tens of seconds): say so, not silence
        say(f"{spec.kind}: timing one task of the smallest cell for the estimate (it compiles the hierarchical "
            "model first, which can take a minute)")
    est = study_estimate(spec, workers)
    if est is not None and est.seconds > progress.ESTIMATE_OVER:
        say(est.line(spec.kind))
    return est


def run_spec(spec: StudySpec, *, workers: int | None = None, dask: str | None = None,
             output: str | os.PathLike[str] | None = None, force: bool = False, precision: Assignments = None,
             assurance: float = 0.9, watch: Watch | None = None, request: Any = None) -> Study:
    """Check ``spec`` before computing (the experiment's spec, the output folder, the memory its
    tasks need on this machine), run it (local processes, or the Dask scheduler at ``dask``) and
    return the :class:`Study`; ``output=DIR`` writes its files (``force`` overwrites);
    ``precision`` and ``assurance`` judge a recovery (``recover --precision``); ``request``: the
    study's request (``RecoverRequest``, ...), recorded as the ``request`` block of ``summary.json``."""
    from cogtestbed.outputs import output_dir
    from cogtestbed.studies.driver import (
        check_study,
        check_study_memory,
        concurrent_tasks,
        dask_client,
        run_study,
    )
    from cogtestbed.studies.report import write_study

    watch = watch or Watch()
    exp = check_study(spec)
    out = None if output is None else Path(output)
    with output_dir(out, force):
        if dask is None:  # before anything starts: a refusal is the only line
            check_study_memory(spec, exp, concurrent_tasks(spec, workers))
        client = dask_client(dask) if dask is not None else None
        est = say_estimate(spec, workers, watch.say) if dask is None and watch.estimate else None
        watch.start(spec.kind, len(spec.tasks()))
        try:
            result = run_study(spec, workers=workers, dask=client, on_task_done=watch.advance,
                               done=None if est is None else est.done)
        finally:
            if client is not None:
                client.close()
        if spec.kind == "recovery":  # the user's tolerance, estimates at a bound
            from cogtestbed.studies.recovery_checks import add_recovery_checks

            add_recovery_checks(result, _assignments(precision, "`precision`"), assurance)
        if request is not None:
            result.request = request_block(request)
        files = write_study(result, out) if out is not None else {}
    return Study(result, files)


def _read(options: dict[str, Any], names: str) -> list[Any]:
    """The values of the whitespace-separated option ``names`` (a request's, by keyword)."""
    return [options[name] for name in names.split()]


def _spec(**fields: Any) -> StudySpec:
    from cogtestbed.studies.options import study_spec_of

    return study_spec_of(**fields)


def _lapse(invalid: float, random: float) -> Any:
    from cogtestbed.lapse import Lapse

    lapse = Lapse(invalid, random)
    return lapse if lapse.active else None


@public(legacy=model_first("model"))
@derive_api(RecoverRequest, after=(keyword("watch", None, "Watch | None"),))
def recover(experiment: str | ExperimentSpec | None, model: str, **options: Any) -> Study:
    """Parameter recovery (``cogtestbed recover``): simulate ``reps`` data sets of ``subjects``
    subjects with known parameters (drawn from the model's prior, ``sampler="uniform"``, or a
    ``population``: ``"human:NAME"``, a population file, one posterior draw of its group parameters
    per data set), fit ``model`` (``method`` ``mle`` or ``hierarchical``) and compare: r, RMSE and
    bias per parameter, the share within ``precision={PARAM: HALFWIDTH}``, estimates at a bound.

    ``experiment`` None: the one experiment declaring ``model``.  The earlier call form
    ``recover(MODEL, experiment=...)`` still works (:func:`~cogtestbed.api.checks.model_first`).

    Returns
    -------
    Study
        ``.summary`` (r, RMSE, bias per parameter and size), ``.table``, ``.verdict``, ``.plot()``, ``.save()``.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> study = ct.recover("instrumental-learning", "rw-pm", reps=2, subjects="3", seed=0)
    >>> list(study.summary), sorted(study.summary["3x96"]["parameters"])
    (['3x96'], ['alpha_neg', 'alpha_pos', 'beta', 'optimism_bias'])
    """
    from cogtestbed.studies.options import lapse_fit

    req = build(RecoverRequest, {**options, "experiment": experiment, "model": model})
    o = api_values(req)
    keys = ("subjects trials design runs reps method sampler fix params draws chains lapse_invalid "
            "lapse_random lapse precision assurance seed workers dask output force population")
    (subjects, trials, design, runs, reps, method, sampler, fix, params, draws, chains,
     lapse_invalid, lapse_random, lapse, precision, assurance, seed, workers, dask, output, force,
     population) = _read(o, keys)
    watch = options.get("watch")

    name = _experiment_name(experiment, model)
    if population is not None:
        from cogtestbed.inference.population import load_population

        if sampler not in ("prior", "population"):
            raise InputError(f"`population` is where the true parameters come from; drop `sampler` {sampler}")
        population, sampler = load_population(population, use=True), "population"
        _refuse_implausible(population)
    spec = _spec(kind="recovery", experiment=name, models=(model,), method=method, from_population=population,
                 subjects=_sizes(subjects, (50,)), **_sized(name, design, trials),
                 runs=_sizes(runs, (1,), "`runs`"), reps=reps, seed=seed, sampler=sampler,
                 fixed=_assignments(fix, "`fix`"), params=_assignments(params, "`params`"), draws=draws, tune=draws,
                 chains=chains, lapse=_lapse(lapse_invalid, lapse_random), lapse_fit=lapse_fit(lapse))
    precision = _assignments(precision, "`precision`")
    _refuse_unidentified(spec)
    return run_spec(spec, workers=workers, dask=dask, output=output, force=force, precision=precision,
                    assurance=assurance, watch=watch, request=req)


def _refuse_unidentified(spec: Any) -> None:
    """Refuse, before any simulation, a recovery whose subjects' design does not identify a parameter of its
    model (:func:`cogtestbed.identifiability.refuse_unidentified`, at each size's smallest subject); at the
    default design, warn once where they are of full rank but smaller than the design check's rule asks
    (:func:`cogtestbed.identified_sessions.warn_unidentified`)."""
    from cogtestbed.identifiability import refuse_unidentified
    from cogtestbed.identified_sessions import warn_unidentified
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment(spec.experiment)
    for trials in spec.trials:
        refuse_unidentified(exp, spec.models[0], design_for_trials(exp, trials, spec.design), min(spec.runs),
                            flag="--runs")
    if not spec.design and all(t is None for t in spec.trials):
        warn_unidentified(exp.name, spec.models[0], min(spec.runs), "recovered anyway",
                          "recovered anyway (expect r under 0.89 for them)")


@public(legacy=model_first("models"))
@derive_api(ModelRecoveryRequest, after=(keyword("watch", None, "Watch | None"),))
def model_recovery(experiment: str | ExperimentSpec | None, models: Sequence[str], **options: Any) -> Study:
    """Model recovery (``cogtestbed model-recovery``): simulate each model, fit all, the
    confusion matrix of the best fits (AIC/BIC, or LOO for hierarchical fits).  The earlier call
    form ``model_recovery(MODELS, experiment=...)`` still works.

    Returns
    -------
    Study
        The confusion of the models: ``.summary``, ``.table``, ``.verdict``.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> study = ct.model_recovery("instrumental-learning", ["rw", "rw-pm"], reps=2, subjects=2, seed=0)
    >>> study.spec.kind
    'model-recovery'
    """
    req = build(ModelRecoveryRequest, {**options, "experiment": experiment, "models": models})
    o = api_values(req)
    keys = "subjects trials design runs reps method params draws chains seed workers dask output force"
    (subjects, trials, design, runs, reps, method, params, draws, chains, seed, workers, dask,
     output, force) = _read(o, keys)
    watch = options.get("watch")
    if len(models) < 2:
        raise InputError(f"model recovery needs at least two models, got {len(models)}")
    name = _experiment_name(experiment, models[0])
    spec = _spec(kind="model-recovery", experiment=name, models=tuple(models),
                 method=method, subjects=(subjects,), runs=(runs,), reps=reps, **_sized(name, design, trials),
                 seed=seed, params=_assignments(params, "`params`"), draws=draws, tune=draws, chains=chains)
    return run_spec(spec, workers=workers, dask=dask, output=output, force=force, watch=watch, request=req)


@public(legacy=model_first("model"))
@derive_api(SbcRequest, after=(keyword("watch", None, "Watch | None"),))
def sbc(experiment: str | ExperimentSpec | None, model: str, **options: Any) -> Study:
    """Simulation-based calibration of the hierarchical model (``cogtestbed sbc``; rank
    uniformity, Talts et al. 2018).  The earlier call form ``sbc(MODEL, experiment=...)`` still works.

    Returns
    -------
    Study
        The rank statistics of each parameter and their uniformity tests: ``.summary``, ``.table``, ``.verdict``.

    Examples
    --------
    A study of hierarchical fits takes minutes (``docs/studies.md``); its options are checked first:

    >>> import cogtestbed as ct
    >>> ct.sbc("instrumental-learning", "rw-pm", reps=0)
    Traceback (most recent call last):
    ...
    cogtestbed.errors.InputError: sbc(): `reps` must be in [1, inf), got 0
    """
    req = build(SbcRequest, {**options, "experiment": experiment, "model": model})
    o = api_values(req)
    keys = "subjects trials design runs reps params draws chains backend seed workers dask output force"
    (subjects, trials, design, runs, reps, params, draws, chains, backend, seed, workers, dask,
     output, force) = _read(o, keys)
    watch = options.get("watch")
    name = _experiment_name(experiment, model)
    spec = _spec(kind="sbc", experiment=name, models=(model,), method="hierarchical",
                 subjects=(subjects,), runs=(runs,), reps=reps, seed=seed, **_sized(name, design, trials),
                 params=_assignments(params, "`params`"), draws=draws, tune=draws, chains=chains,
                 sampler_backend=backend)
    return run_spec(spec, workers=workers, dask=dask, output=output, force=force, watch=watch, request=req)


@public(legacy=model_first("target"))
@derive_api(PowerRequest, after=(keyword("watch", None, "Watch | None"),))
def power(experiment: str | ExperimentSpec | None, target: str, **options: Any) -> Study:
    """Power (``cogtestbed power``) in its three forms: of a test on a model parameter
    (``power(EXPERIMENT, MODEL, effect={NAME: SIZE})``; ``groups=2``: the difference of that
    parameter between two groups of ``subjects`` each, e.g. two LLMs, the second's median moved by
    the effect), of a metric difference between two settings of one agent
    (``power(EXPERIMENT, metric=M, compare=("A:p=v", "A:p=w"))``) or of a test the metrics report
    (``power(EXPERIMENT, test=KEY, agent="A:p=v")``).  The sizes share common random numbers
    (repetition r of every size simulates the same seeds), so the curve is monotone in size up to
    its Monte-Carlo SE (``summary["cells"][i]["mc_se"]``).  With one positional argument it is the
    target, as in the earlier call form ``power(MODEL, effect=..., experiment=...)``, which still works.

    ``population`` (``"human:NAME"`` or a population file) replaces ``base`` and
    ``sd_between``: each simulated study takes one posterior draw of its group parameters (medians
    moved by the effect, subjects scattered by that draw's SDs); with ``groups=2`` the first group
    is as many people as the population was fitted to (their number fixed), drawn afresh from it at
    their own trial count, and ``subjects`` sizes the second group.

    Returns
    -------
    Study
        The power at each size: ``.summary``, ``.table``, ``.verdict``.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> study = ct.power("instrumental-learning", "rw-pm", effect="optimism_bias=0.2", sims=2,
    ...                  subjects="4", seed=0)
    >>> study.spec.kind
    'power'
    """
    from cogtestbed.studies.options import assignment_items, one_assignment, power_spec, with_population

    req = build(PowerRequest, {**options, "experiment": experiment, "target": target})
    o = api_values(req)
    keys = ("effect metric compare test agent sweep option subjects runs trials design sims method level base "
            "sd_between params draws chains lapse_invalid lapse_random seed workers dask output force groups "
            "population")
    (effect, metric, compare, test, agent, sweep, option, subjects, runs, trials, design, sims,
     method, level, base, sd_between, params, draws, chains, lapse_invalid, lapse_random, seed,
     workers, dask, output, force, groups, population) = _read(o, keys)
    watch = options.get("watch")

    given = experiment if experiment is None or isinstance(experiment, str) else _experiment_name(experiment)
    effect_item = one_assignment(effect)
    exp_name = _experiment_name(given, target) if effect_item is not None and metric is None and test is None \
        else target
    default_runs = (10,) if metric is not None else (1,)
    common: dict[str, Any] = {"subjects": _sizes(subjects, (10,)), "runs": _sizes(runs, default_runs, "`runs`"),
                              **_sized(exp_name, design, trials), "reps": sims, "seed": seed, "level": level,
                              "method": method, "base": _assignments(base, "`base`"), "sd_between": sd_between,
                              "params": _assignments(params, "`params`"), "draws": draws, "tune": draws,
                              "chains": chains, "lapse": _lapse(lapse_invalid, lapse_random), "groups": groups}
    spec = power_spec(target, given, effect_item, metric, compare, test, agent, common, assignment_items(option),
                      sweep)
    spec = with_population(spec, population)
    return run_spec(spec, workers=workers, dask=dask, output=output, force=force, watch=watch, request=req)


@public()
@derive_api(MetricValidityRequest, after=(keyword("watch", None, "Watch | None"),))
def metric_validity(experiment: str | ExperimentSpec, **options: Any) -> Study:
    """Metric validity (``cogtestbed metric-validity``): sweep the agent parameter ``parameter``
    over ``values`` from the agent's setting ``agent`` (``AGENT[:p=v,...]``); the metric's mean and
    SD per value and whether it moves in ``direction`` (increasing, decreasing or any).

    Returns
    -------
    Study
        How the metric moves with the parameter: ``.summary``, ``.table``, ``.verdict``.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> study = ct.metric_validity("instrumental-learning", parameter="alpha_pos", values=[0.2, 0.8],
    ...                            metric="learning_rate", agent="rw-pm", reps=2, runs="2", seed=0)
    >>> study.spec.kind
    'metric-validity'
    """
    from cogtestbed.parameters import parse_agent
    from cogtestbed.studies.options import floats

    req = build(MetricValidityRequest, {**options, "experiment": experiment})
    o = api_values(req)
    keys = "metric agent parameter values direction runs trials design reps seed workers dask output force"
    (metric, agent, parameter, values, direction, runs, trials, design, reps, seed, workers, dask,
     output, force) = _read(o, keys)
    watch = options.get("watch")

    name = _experiment_name(experiment)
    agent_name, params = parse_agent(agent)
    spec = _spec(kind="metric-validity", experiment=name, agent=agent_name, params=params, metric=metric,
                 parameter=parameter, values=floats(values) if isinstance(values, str) else tuple(values),
                 direction=direction, runs=_sizes(runs, (10,), "`runs`"), **_sized(name, design, trials), reps=reps,
                 seed=seed)
    return run_spec(spec, workers=workers, dask=dask, output=output, force=force, watch=watch, request=req)


@public()
@derive_api(DeclaredStudyRequest, after=(keyword("watch", None, "Watch | None"),))
def study(experiment: str | ExperimentSpec, name: str | None = None, **options: Any) -> Study | list[dict[str, str]]:
    """A study the experiment declares, run with its declared settings (``cogtestbed study
    EXPERIMENT NAME``, e.g. ``metric-power`` or ``recovery:1``); without ``name`` the declared
    studies (``{"study", "description"}`` each).

    Returns
    -------
    list of dict or Study
        ``name`` None: the declared studies (``study``, ``description``); else the named one run.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> [s["study"] for s in ct.study("instrumental-learning")][:3]
    ['recovery:0', 'recovery:1', 'model-recovery']
    """
    from cogtestbed.api.core import get_experiment
    from cogtestbed.studies.driver import declared_studies, spec_from_decl

    req = build(DeclaredStudyRequest, {**options, "experiment": experiment, "name": name})
    o = api_values(req)
    keys = "reps seed workers dask output force"
    (reps, seed, workers, dask, output, force) = _read(o, keys)
    watch = options.get("watch")

    exp = get_experiment(experiment)
    if name is None:
        return [{"study": n, "description": d.description} for n, d in declared_studies(exp)]
    (_, decl), = declared_studies(exp, name)
    return run_spec(spec_from_decl(exp, decl, reps=reps, seed=seed), workers=workers, dask=dask, output=output,
                    force=force, watch=watch, request=req)


@public(legacy=model_first("model"))
@derive_api(FormStudyRequest, only=FORM_STUDY_OPTIONS, required=("forms",))
def form_study(experiment: str | ExperimentSpec | None, model: str, **options: Any) -> dict[str, Any]:
    """A study across prompt forms (``recover --forms`` and ``power --forms``;
    :mod:`cogtestbed.studies.form_studies`): ``subjects`` split over the ``forms``,
    offsets drawn with ``form_sd``; with ``effect`` the forms-aware test's rejection rate beside
    the naive test's, without it the recovery of the form SD and its interval's coverage (MLE).
    Returns the summary (experiment, model, the forms, and the study's results).  The earlier call
    form ``form_study(MODEL, forms=..., experiment=...)`` still works.

    Returns
    -------
    dict
        The forms study's summary (the form SD's recovery or the power with forms).

    Examples
    --------
    A forms study fits hierarchical models (minutes); its options are checked first:

    >>> import cogtestbed as ct
    >>> ct.form_study("instrumental-learning", "rw-pm", forms="4", form_sd={"beta": -1})
    Traceback (most recent call last):
    ...
    cogtestbed.errors.InputError: form_study(): `form_sd` must be in [0, 20], got -1
    """
    from cogtestbed.api.core import get_experiment
    from cogtestbed.environments.forms import FormDesign, parse_form_sd, resolve_forms
    from cogtestbed.studies.form_studies import form_study_spec, run_form_study, summarise_form_study
    from cogtestbed.studies.options import one_assignment, parse_assignments

    req = build(FormStudyRequest, {**options, "experiment": experiment, "model": model})
    forms, form_sd, subjects, reps, params, effect, design, trials, level, seed = (
        req.forms.assigned_forms, req.forms.form_sd, req.subject_grid, req.reps, req.params, req.effect,
        req.design, req.design_trials, req.level, req.seed)
    name = _experiment_name(experiment, model)
    exp = get_experiment(name)
    if forms is None:
        raise InputError("form_study(): forms must be K (forms 0..K-1) or form ids, got None")
    ids = forms if isinstance(forms, str) else ",".join(str(int(f)) for f in forms)
    sd = dict(form_sd) if isinstance(form_sd, Mapping) else parse_form_sd(list(form_sd) if form_sd else None)
    form_design = FormDesign(resolve_forms(exp.prompt_forms, ids), sd)
    sizes = _sizes(subjects, (50,))
    if len(sizes) != 1:
        raise InputError("`subjects` takes one total with `forms` (it is split over the forms)")
    if trials is not None:
        raise InputError("`trials` with `forms`: give the design's trials field with `design` FIELD=N")
    fields = _sized(name, design, None).get("design") or {}
    design_obj = exp.design_cls(**fields) if fields else None
    item = one_assignment(effect)
    eff = None if item is None else next(iter(parse_assignments([item], "`effect`").items()))
    spec = form_study_spec(name, model, form_design, int(sizes[0]), _assignments(params, "`params`"), eff,
                           design_obj, level)
    summary = summarise_form_study(spec, run_form_study(spec, reps, seed))
    return {"experiment": name, "model": model, **form_design.as_json(), **summary}


@public()
def true_parameters(trials: pd.DataFrame) -> pd.DataFrame:
    """The known parameters of simulated subjects, one row per subject (the table's ``param_*``
    columns, named without the prefix).

    Parameters
    ----------
    trials : pandas.DataFrame
        A simulated trial table (``ct.simulate``), with its ``param_*`` columns.

    Returns
    -------
    pandas.DataFrame
        One row per subject: ``subject`` and each parameter's true value.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> ct.true_parameters(trials)
       subject  alpha_pos  alpha_neg  beta
    0        0        0.3        0.3   5.0
    1        1        0.3        0.3   5.0
    """
    cols = [c for c in trials.columns if str(c).startswith("param_")]
    if not cols:
        raise InputError("the table holds no true parameters (param_* columns): it was not simulated")
    first = trials.groupby("subject", sort=True)[cols].first().reset_index()
    return first.rename(columns={c: str(c).removeprefix("param_") for c in cols})


@public()
def estimates(fit: Any) -> pd.DataFrame:
    """Per-subject point estimates of a fit, one row per subject: an MLE table as it is, a
    hierarchical fit's posterior means (``subject_summary``).

    Parameters
    ----------
    fit : pandas.DataFrame or BayesFit
        What ``ct.fit`` returned.

    Returns
    -------
    pandas.DataFrame
        One row per unit: its point estimates (the MLE, or the posterior means of a hierarchical fit).

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> est = ct.estimates(ct.fit("instrumental-learning", trials, model="rw-pm"))
    >>> len(est), {"alpha_pos", "alpha_neg", "beta"} <= set(est.columns)
    (2, True)
    """
    import pandas as pd

    if isinstance(fit, pd.DataFrame):
        return fit
    summary = fit.subject_summary()
    return summary.pivot(index="subject", columns="parameter", values="mean").reset_index()


@public()
@derive_api(RecoveryPlotRequest)
def plot_recovery(trials: pd.DataFrame, *fits: Any, **options: Any) -> Figures:
    """True against estimated parameters of simulated subjects: one panel per parameter, one
    colour per fit (MLE tables or hierarchical fits); the identity line dashed; a log-scale
    parameter (its declared transform) on log axes; estimates that are not identified (an MLE
    table's ``identified`` False: at a bound, a flat profile, a shared plateau) drawn as crosses and
    counted in the legend, the panel's title giving r over all and over the identified estimates
    (log scale for a log-scale parameter).  A fit must hold one unit per subject of ``trials``
    (``unit="subject"``: a fit of pooled runs or of single sessions is refused).  Written as
    ``recovery.png`` in ``directory`` (default: a temporary one).

    Returns
    -------
    Figures
        The figures written (``.paths``), one per parameter.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> mle = ct.fit("instrumental-learning", trials, model="rw-pm")
    >>> figures = ct.plot_recovery(trials, mle, directory="figures")
    >>> sorted(p.name for p in figures.paths)
    [...]
    """
    import tempfile

    from cogtestbed.studies.plots import pyplot, save_figure

    req = build(RecoveryPlotRequest, options)
    labels, directory = req.labels, req.directory
    truth = true_parameters(trials)
    _require_subject_units(fits)
    frames = [estimates(f) for f in fits]
    names = [c for c in truth.columns if c != "subject" and any(c in f.columns for f in frames)]
    if not names:
        raise InputError("no parameter is both known and estimated")
    tags = list(labels) if labels is not None else [
        "MLE" if isinstance(f, type(frame)) and f is frame else "hierarchical" for f, frame in zip(fits, frames,
                                                                                                strict=True)]
    logs = log_scale_parameters(trials, names)
    plt = pyplot()
    fig, axes = plt.subplots(1, len(names), figsize=(3.4 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        _recovery_panel(ax, name, truth, frames, tags, name in logs)
    out = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="cogtestbed-recovery-"))
    out.mkdir(parents=True, exist_ok=True)
    return Figures([save_figure(fig, out / "recovery.png")])


def _require_subject_units(fits: Sequence[Any]) -> None:
    """Refuse a fit whose unit is not the subject (pooled runs, single sessions): its rows cannot be
    paired with the table's true parameters one to one."""
    for f in fits:
        units = (getattr(f, "attrs", None) or {}).get("units") or getattr(f, "units", None) or {}
        if units.get("unit", "subject") != "subject":
            raise InputError(f"plot_recovery needs one fitted unit per subject of the table; this fit's unit is "
                             f"{units['unit']!r} ({units.get('unit_reason', '')}): fit with unit='subject'")


def _recovery_panel(ax: Any, name: str, truth: pd.DataFrame, frames: Sequence[pd.DataFrame],
                    tags: Sequence[str], log: bool) -> None:
    """One parameter's panel of :func:`plot_recovery`: identified estimates as dots, the others as
    crosses, r over all and over the identified in the title, log axes for a log-scale parameter."""
    import numpy as np

    titles = []
    for frame, tag in zip(frames, tags, strict=True):
        if name not in frame.columns:
            continue
        cols = ["subject", name, *(["identified"] if "identified" in frame.columns else [])]
        joined = truth[["subject", name]].merge(frame[cols], on="subject", suffixes=("", "_est"))
        ok = joined["identified"].astype(bool).to_numpy() if "identified" in joined else np.ones(len(joined), bool)
        x, y = joined[name].to_numpy(float), joined[f"{name}_est"].to_numpy(float)
        dots = ax.scatter(x[ok], y[ok], s=14, alpha=0.7, label=f"{tag} ({int(ok.sum())})")
        if (~ok).any():
            ax.scatter(x[~ok], y[~ok], s=22, marker="x", color=dots.get_facecolor()[0], alpha=0.9,
                       label=f"{tag}: not identified ({int((~ok).sum())})")
        titles.append(f"{tag} r {_r(x, y, log)} all, {_r(x[ok], y[ok], log)} identified")
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    lo, hi = ax.get_xlim()
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set_xlabel(f"true {name}" + (" (log scale)" if log else ""))
    ax.set_ylabel("estimate")
    ax.set_title("\n".join(titles), fontsize=7)
    ax.legend(fontsize=6)


def _r(x: Any, y: Any, log: bool) -> str:
    """Pearson r of finite positive (log scale) or finite pairs, as text; undefined with its reason
    (fewer than 3 pairs, no variation in the truth or the estimates: :func:`~cogtestbed.no_data.pearson_r`)."""
    import numpy as np

    from cogtestbed.no_data import pearson_r

    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y) & ((x > 0) & (y > 0) if log else True)
    x, y = (np.log(x[keep]), np.log(y[keep])) if log else (x[keep], y[keep])
    return pearson_r(x, y).text()


def log_scale_parameters(trials: pd.DataFrame, names: Sequence[str]) -> set[str]:
    """The parameters among ``names`` that the table's experiment declares log-scale (their
    transform, in any of its models)."""
    from cogtestbed.registry import get_experiment

    experiments = trials["experiment"].dropna().astype(str).unique() if "experiment" in trials.columns else []
    out = set()
    for name in experiments:
        for model in get_experiment(name).models.values():
            out |= {p.name for p in model.parameters if p.name in names and p.transform == "log"}
    return out

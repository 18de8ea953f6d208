"""``cogtestbed recover | model-recovery | power | sbc | metric-validity | study | fit``.

Every study command builds a :class:`~cogtestbed.validation.studies.driver.StudySpec`, checks it
against the experiment spec *before* computing (a nonsense combination is one line on stderr,
exit status 2), runs it (local process pool, or ``--dask SCHEDULER_ADDRESS``) with a progress
bar, prints a table or one JSON object (``--json``), and with ``-o DIR`` writes
results.parquet, summary.json, PNG plots and report.html (each atomically).

``power`` has three forms: a model parameter or contrast (``power MODEL --effect NAME=SIZE``), a
metric difference between two agent settings (``power EXPERIMENT --metric M --compare
AGENT:p=v AGENT:p=v --runs 50,100``) and a declared statistical test (``power EXPERIMENT --test
KEY --agent AGENT:p=v``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cogtestbed.api.specs import (
    floats,
    ints,
    lapse_fit,
    parse_assignments,
    power_spec,
    sized,
    study_spec_of,
)
from cogtestbed.cli.app import app, console, console_err, print_json
from cogtestbed.cli.simulate import FormSdOpt, FormsOpt, LapseInvalidOpt, LapseRandomOpt, forms_option, lapse_option
from cogtestbed.outputs import output_dir

if TYPE_CHECKING:  # the study machinery is imported inside the command bodies (a light command line)
    from cogtestbed.validation.studies.driver import StudyResult, StudySpec

ExperimentOpt = Annotated[str | None, typer.Option(
    "--experiment", "-e", help="Experiment name. Default: the table's experiment column, else the one experiment "
                               "declaring the model.")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the whole study.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (the summary).")]
OutOpt = Annotated[Path | None, typer.Option("--output", "-o",
                                             help="Write results.parquet, summary.json, plots and report.html here.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")]
DaskOpt = Annotated[str | None, typer.Option("--dask", help="Dask scheduler address.")]
WorkersOpt = Annotated[int | None, typer.Option(min=1, help="Local worker processes (default: CPUs).")]
MethodOpt = Annotated[str, typer.Option(help="mle or hierarchical.")]
DrawsOpt = Annotated[int, typer.Option(min=1, help="Posterior draws per chain (hierarchical).")]
ChainsOpt = Annotated[int, typer.Option(min=1, help="Chains (hierarchical).")]
TrialsOpt = Annotated[str | None, typer.Option(help="Trials in one run of the whole design (its n_trials: every "
                                                    "block, condition, session and repetition), comma list; reached "
                                                    "by scaling the experiment's trials field. Default: the design's "
                                                    "own. The same sizes in the design's terms: --design FIELD=a,b,c.")]
DesignOpt = Annotated[list[str] | None, typer.Option("--design", help="Design field NAME=VALUE (repeatable), e.g. "
                                                                      "network=alarm; NAME=a,b,c on the experiment's "
                                                                      "trials field (n_contexts, trials_per_session, "
                                                                      "...) sweeps it. Default: the design's defaults "
                                                                      "(cogtestbed list EXPERIMENT).")]
LapseFitOpt = Annotated[str, typer.Option(
    "--lapse", help="Lapse term of the fitted model: none, fit (rate fitted) or fixed=E.")]
ParamOpt = Annotated[list[str] | None, typer.Option("--param", help="Agent parameter NAME=VALUE (repeatable): "
                                                                    "settings the model lacks, or the agent's base.")]


def _execute(spec: StudySpec, workers: int | None, dask: str | None, as_json: bool) -> StudyResult:
    """Check the spec (and reach the Dask scheduler) before computing, then run with a progress bar."""
    from cogtestbed.cli.app import progress
    from cogtestbed.validation.studies.driver import (
        check_study,
        check_study_memory,
        concurrent_tasks,
        dask_client,
        run_study,
    )

    exp = check_study(spec)
    if dask is None:  # before the progress bar: a refusal is the only line on stderr
        check_study_memory(spec, exp, concurrent_tasks(spec, workers))
    client = dask_client(dask) if dask is not None else None
    from cogtestbed.progress import TaskProgress, stderr_reporter

    total = len(spec.tasks())
    terminal = console_err.is_terminal
    est = _say_estimate(spec, workers) if dask is None and (terminal or not as_json) else None
    done = iter(progress(range(total), f"{spec.kind} ({total} tasks)", total=total,
                         enabled=terminal))  # a bar on a terminal; off it, a line per interval
    next(done, None)
    lines = None if terminal or as_json else TaskProgress(stderr_reporter(False), spec.kind, total)

    def tick(k: int) -> None:
        for _ in range(k):
            next(done, None)
        if lines is not None:
            lines.advance(k)

    try:
        result = run_study(spec, workers=workers, dask=client, on_task_done=tick,
                           done=None if est is None else est.done)
    finally:
        if client is not None:
            client.close()
    for _ in done:
        pass
    return result


def _say_estimate(spec: StudySpec, workers: int | None) -> Any:
    """The study's up-front time estimate on stderr, before its tasks start (for a job over
    :data:`~cogtestbed.progress.ESTIMATE_OVER` seconds; :mod:`cogtestbed.validation.design.estimate`);
    returns it (its timed task's rows are reused), or None."""
    from cogtestbed import progress
    from cogtestbed.validation.design.estimate import MIN_TASKS, study_estimate

    if getattr(spec, "method", None) == "hierarchical" and len(spec.tasks()) >= MIN_TASKS:
        # the timed task compiles the hierarchical model first (tens of seconds): say so, not silence
        console_err.print(f"{spec.kind}: timing one task of the smallest cell for the estimate (it compiles the "
                          "hierarchical model first, which can take a minute)", highlight=False, markup=False,
                          soft_wrap=True)
    est = study_estimate(spec, workers)
    if est is not None and est.seconds > progress.ESTIMATE_OVER:
        console_err.print(est.line(spec.kind), highlight=False, markup=False, soft_wrap=True)
    return est


#: Rate columns of a study's cells (with ``sims``: shown with their 95 % interval, not an SE).
RATE_COLUMNS = ("power", "type_i_error", "rejection_rate")


def readable_frame(frame: Any, spec: Any = None) -> Any:
    """A summary table for a person: the design named by its fields (a ``design`` column in place
    of ``n_trials``), a rate with ``sims`` with its 95 % Wilson interval in place of the
    Monte-Carlo SE (which is 0 at rates 0 and 1); counts stay integers (:func:`num`)."""
    from cogtestbed.formatting import num, wilson

    out = frame.copy()
    if spec is not None and "n_trials" in out.columns:
        from cogtestbed.validation.studies.report import design_name

        out.insert(0, "design", [design_name(spec, t) for t in out["n_trials"]])
        out = out.drop(columns=["n_trials"])
    if spec is not None and "value" in out.columns and getattr(spec, "parameter", None):
        out = out.rename(columns={"value": spec.parameter})
    rates = [c for c in RATE_COLUMNS if c in frame.columns]
    if not rates or "sims" not in frame.columns:
        return out
    for c in rates:
        out[f"{c} 95% interval"] = [
            "n/a" if not s else "[{}, {}]".format(*(num(x, 2) for x in wilson(float(r) * int(s), int(s))))
            for r, s in zip(frame[c], frame["sims"], strict=True)]
    return out.drop(columns=[c for c in ("mc_se",) if c in out.columns])


def _finish(result: StudyResult, as_json: bool, output: Path | None, payload: dict[str, Any]) -> None:
    if output is not None:
        from cogtestbed.validation.studies.report import write_study

        files = write_study(result, output)
        payload["report"] = str(files["report"])
    from cogtestbed.validation.studies.report import resolved

    designs = resolved(result.spec)
    payload["verdict"] = result.verdict
    payload["designs"] = designs
    payload["true_parameters"] = result.spec.true_distribution
    payload["seconds"] = result.seconds
    if as_json:
        print_json(payload)
        return
    console.print(result.verdict, highlight=False)
    for d in designs:  # the resolved design: every field, defaults included
        fields = ", ".join(f"{k}={v}" for k, v in d["fields"].items())
        console.print(f"design {d['label']}: {fields}", highlight=False, soft_wrap=True)
    if output is not None:
        console_err.print(f"wrote {output}/report.html")


def _show(result: StudyResult, as_json: bool, output: Path | None) -> None:
    """Print the study's table (unless ``--json``) and finish with the summary payload."""
    s, kind = result.summary, result.spec.kind
    if kind == "recovery":
        cells = list(s.values())
        payload: dict[str, Any] = {"parameters": cells[0]["parameters"]} if len(cells) == 1 else {"cells": cells}
    else:
        payload = {{"model-recovery": "confusion", "power": "power", "sbc": "sbc"}.get(kind, kind.replace("-", "_")):
                   s}
    if not as_json:
        from rich.table import Table

        from cogtestbed.formatting import num
        from cogtestbed.validation.studies.report import _summary_tables

        for caption, frame in _summary_tables(result):
            frame = readable_frame(frame, result.spec)
            numbered = not all(isinstance(i, str) for i in frame.index)  # a row number says nothing
            table = Table(title=caption)
            if not numbered:
                table.add_column("")
            for c in frame.columns:
                table.add_column(str(c).replace("_", " "), justify="left" if c == "design" else "right")
            for idx, row in frame.iterrows():
                table.add_row(*([] if numbered else [str(idx)]), *(num(v) for v in row))
            console.print(table)
    _finish(result, as_json, output, payload)


@dataclass(frozen=True)
class RunOptions:
    """Options every study command shares (``--seed --workers --dask --json -o --force``)."""

    seed: int = 0
    workers: int | None = None
    dask: str | None = None
    as_json: bool = False
    output: Path | None = None
    force: bool = False


#: The shared options as command parameters (added to each command by :func:`study_command`).
RUN_PARAMETERS = tuple(
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
    for name, annotation, default in (("seed", SeedOpt, 0), ("workers", WorkersOpt, None), ("dask", DaskOpt, None),
                                      ("as_json", JsonOpt, False), ("output", OutOpt, None),
                                      ("force", ForceOpt, False)))


def study_command(*names: str) -> Callable[[Callable[..., StudySpec | None]], Callable[..., StudySpec | None]]:
    """Register a study command (under ``names``; default: the function's name with dashes).

    The decorated function takes its own options plus ``run`` (:class:`RunOptions`) and returns
    the :class:`StudySpec` to run (or ``None`` when it has printed what was asked); the command
    gains the shared options, checks the spec and the output folder, runs and prints.
    """

    def register(fn: Callable[..., StudySpec | None]) -> Callable[..., StudySpec | None]:
        # the return annotation names the study machinery, which registration must not import
        hints = typing.get_type_hints(fn, localns={"StudySpec": object}, include_extras=True)
        own = [p.replace(annotation=hints[p.name]) for p in inspect.signature(fn).parameters.values()
               if p.name != "run"]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> None:
            from cogtestbed.validation.studies.sizes import DesignSweep

            run = RunOptions(**{p.name: kwargs.pop(p.name) for p in RUN_PARAMETERS})
            try:
                spec = fn(run=run, **kwargs)
            except DesignSweep as sweep:  # one study per value of an integer design field
                _each_value(sweep, run, kwargs)
                return
            if spec is None:
                return
            from cogtestbed.validation.studies.driver import check_study

            check_study(spec)
            precision = parse_assignments(kwargs.get("precision") or [], "--precision")
            with output_dir(run.output, run.force):
                result = _execute(spec, run.workers, run.dask, run.as_json)
                if spec.kind == "recovery":  # the user's tolerance, estimates at a bound
                    from cogtestbed.validation.studies.recovery_checks import add_recovery_checks

                    add_recovery_checks(result, precision, float(kwargs.get("assurance", 0.9)))
                _show(result, run.as_json, run.output)

        def _each_value(sweep: Any, run: RunOptions, kwargs: dict[str, Any]) -> None:
            """Run the command once per swept value: ``-o DIR`` gets ``DIR/NAME=VALUE/``; ``--json``
            prints one JSON object per value (one per line)."""
            items = list(kwargs.get("design") or [])
            at = next(i for i, item in enumerate(items) if item.partition("=")[0].strip() == sweep.name)
            for value in sweep.values:
                items[at] = f"{sweep.name}={value}"
                out = None if run.output is None else run.output / f"{sweep.name}={value}"
                if not run.as_json:
                    console.print(f"[bold]{sweep.name} = {value}[/]", highlight=False)
                command(**{**kwargs, "design": list(items)},
                        **{**dataclasses.asdict(run), "output": out})

        params = [*own, *RUN_PARAMETERS]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        for i, name in enumerate(names or (fn.__name__.replace("_", "-"),)):
            app.command(name, help=None if i == 0 else f"Alias of {names[0]}.")(command)
        return fn

    return register


def _forms_study(experiment: str, model: str, forms: str, form_sd: list[str] | None, subjects: str, reps: int,
                 param: list[str] | None, effect: tuple[str, float] | None, design: list[str] | None,
                 trials: str | None, level: float, run: RunOptions) -> None:
    """Run and print the forms study (:mod:`cogtestbed.validation.studies.form_studies`) of a command."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.studies.form_studies import form_study_spec, run_form_study, summarise_form_study

    exp = get_experiment(experiment)
    form_design = forms_option(exp, forms, form_sd)
    assert form_design is not None
    sizes = ints(subjects, (50,))
    if len(sizes) != 1:
        raise ValueError("--subjects takes one total with --forms (it is split over the forms)")
    if trials is not None:
        raise ValueError("--trials with --forms: give the design's trials field with --design FIELD=N")
    fields = sized(experiment, design, None).get("design") or {}
    design_obj = exp.design_cls(**fields) if fields else None
    spec = form_study_spec(experiment, model, form_design, int(sizes[0]),
                           parse_assignments(param or [], "--param"), effect, design_obj, level)
    with console_err.status(f"{reps} forms studies of {model}"):
        summary = summarise_form_study(spec, run_form_study(spec, reps, run.seed))
    summary = {"experiment": experiment, "model": model, **form_design.as_json(), **summary}
    if run.as_json:
        print_json(summary)
        return
    for key, value in summary.items():
        console.print(f"{key}: {value}", highlight=False)


@study_command()
def recover(
    model: Annotated[str, typer.Argument(help="Model name, e.g. rw-pm or cbn-3p.")],
    experiment: ExperimentOpt = None,
    subjects: Annotated[str, typer.Option(help="Subjects per data set (comma list).")] = "50",
    trials: TrialsOpt = None,
    design: DesignOpt = None,
    runs: Annotated[str, typer.Option(help="Sessions each subject plays, pooled in the fit (comma list; "
                                           "experiments that pool sessions).")] = "1",
    reps: Annotated[int, typer.Option(min=1, help="Simulated data sets.")] = 100,
    method: MethodOpt = "mle",
    sampler: Annotated[str, typer.Option(help="prior (hierarchical prior) or uniform.")] = "prior",
    fix: Annotated[list[str] | None, typer.Option("--fix", help="Hold model parameter NAME=VALUE fixed.")] = None,
    param: ParamOpt = None,
    draws: DrawsOpt = 1000,
    chains: ChainsOpt = 4,
    lapse_invalid: LapseInvalidOpt = 0.0,
    lapse_random: LapseRandomOpt = 0.0,
    lapse: LapseFitOpt = "none",
    precision: Annotated[list[str] | None, typer.Option(
        "--precision", help="PARAM=HALFWIDTH (repeatable): the tolerance a recovered estimate must meet; the "
                            "verdict calls PARAM recovered well only where a share >= --assurance of the "
                            "estimates lies within it. Default: none (r, RMSE and bias reported, r >= 0.8 "
                            "convention named).")] = None,
    assurance: Annotated[float, typer.Option(min=0.0, max=1.0, help="Assurance Q of --precision.")] = 0.9,
    forms: FormsOpt = None,
    form_sd: FormSdOpt = None,
    run: RunOptions = RunOptions(),
) -> StudySpec | None:
    """Parameter recovery: simulate with known parameters, fit, compare (r, RMSE, bias, share within a
    stated tolerance, interval coverage, estimates at a bound).  With --forms and --form-sd: the
    recovery of the form SD and the coverage of its interval (MLE, subjects split over the forms)."""
    from cogtestbed.registry import experiment_of

    experiment = experiment_of(experiment, model=model)
    if forms is not None:
        _forms_study(experiment, model, forms, form_sd, subjects, reps, param, None, design, trials, 0.05, run)
        return None
    spec = study_spec_of(kind="recovery", experiment=experiment, models=(model,), method=method,
                     subjects=ints(subjects, (50,)), **sized(experiment, design, trials),
                     runs=ints(runs, (1,), "--runs"), reps=reps, seed=run.seed, sampler=sampler,
                     fixed=parse_assignments(fix or [], "--fix"),
                     params=parse_assignments(param or [], "--param"), draws=draws, tune=draws, chains=chains,
                     lapse=lapse_option(lapse_invalid, lapse_random), lapse_fit=lapse_fit(lapse))
    return spec


@study_command("model-recovery")
def model_recovery(
    models: Annotated[list[str], typer.Argument(help="Candidate models, e.g. rw rw-pm.")],
    experiment: ExperimentOpt = None,
    subjects: Annotated[int, typer.Option(min=1)] = 30,
    trials: Annotated[int | None, typer.Option(help="Trials in one run of the whole design (its n_trials), "
                                                    "reached by scaling the trials field. Default: the design's "
                                                    "own.")] = None,
    design: DesignOpt = None,
    runs: Annotated[int, typer.Option(min=1, help="Sessions per subject (experiments that pool sessions).")] = 1,
    reps: Annotated[int, typer.Option(min=1)] = 50,
    method: MethodOpt = "mle",
    param: ParamOpt = None,
    draws: DrawsOpt = 500,
    chains: ChainsOpt = 2,
    run: RunOptions = RunOptions(),
) -> StudySpec | None:
    """Model recovery: simulate each model, fit all, confusion matrix (AIC/BIC, or LOO)."""
    if len(models) < 2:
        raise ValueError(f"model recovery needs at least two models, got {len(models)}")
    from cogtestbed.registry import experiment_of

    experiment = experiment_of(experiment, model=models[0])
    spec = study_spec_of(kind="model-recovery", experiment=experiment, models=tuple(models),
                     method=method, subjects=(subjects,), runs=(runs,), reps=reps,
                     **sized(experiment, design, None if trials is None else str(trials)),
                     seed=run.seed, params=parse_assignments(param or [], "--param"), draws=draws, tune=draws,
                     chains=chains)
    return spec


@study_command()
def sbc(
    model: Annotated[str, typer.Argument(help="Model with a PyMC version, e.g. rw-pm or cbn-3p.")],
    experiment: ExperimentOpt = None,
    subjects: Annotated[int, typer.Option(min=1)] = 20,
    trials: Annotated[int | None, typer.Option(help="Trials in one run of the whole design (its n_trials), "
                                                    "reached by scaling the trials field. Default: the design's "
                                                    "own.")] = None,
    design: DesignOpt = None,
    runs: Annotated[int, typer.Option(min=1, help="Sessions per subject (experiments that pool sessions).")] = 1,
    reps: Annotated[int, typer.Option(min=1, help="Simulated data sets (prior draws).")] = 100,
    param: ParamOpt = None,
    draws: DrawsOpt = 500,
    chains: ChainsOpt = 2,
    backend: Annotated[str, typer.Option(help="NUTS implementation: auto, nutpie or pymc.")] = "auto",
    run: RunOptions = RunOptions(),
) -> StudySpec | None:
    """Simulation-based calibration of the hierarchical model (rank uniformity, Talts et al. 2018)."""
    from cogtestbed.registry import experiment_of

    experiment = experiment_of(experiment, model=model)
    spec = study_spec_of(kind="sbc", experiment=experiment, models=(model,), method="hierarchical",
                     subjects=(subjects,), runs=(runs,), reps=reps, seed=run.seed,
                     **sized(experiment, design, None if trials is None else str(trials)),
                     params=parse_assignments(param or [], "--param"), draws=draws,
                     tune=draws,
                     chains=chains, sampler_backend=backend)
    return spec


@study_command()
def power(
    target: Annotated[str, typer.Argument(help="Model (with --effect) or experiment (with --metric / --test).")],
    effect: Annotated[str | None, typer.Option(help="NAME=SIZE, a model parameter or contrast, "
                                                    "e.g. optimism_bias=0.2 (0: the type-I error rate).")] = None,
    metric: Annotated[str | None, typer.Option(help="Headline metric whose difference is detected.")] = None,
    compare: Annotated[tuple[str, str] | None, typer.Option(
        help="Two settings of one agent, AGENT:p=v,... AGENT:p=v,... (with --metric).")] = None,
    test: Annotated[str | None, typer.Option(help="Key of the metrics result holding a test (p_value/reject).")] = None,
    agent: Annotated[str | None, typer.Option(help="AGENT[:p=v,...] under which --test runs.")] = None,
    sweep: Annotated[str | None, typer.Option(
        help="NAME=a,b,c: an agent parameter (or design field) whose values each get a rate (with --test or "
             "--metric), e.g. leak=0,0.1: at 0 the false-positive rate, above it the power. Default: none.")] = None,
    option: Annotated[list[str] | None, typer.Option(
        "--option", help="Metrics option NAME=VALUE of the experiment (repeatable; with --metric / --test), "
                         "e.g. t2_bins=10.")] = None,
    experiment: Annotated[str | None, typer.Option("--experiment", "-e", help="Experiment (with --effect).")] = None,
    subjects: Annotated[str, typer.Option(help="Subjects grid (comma list; --effect).")] = "10,20,40,80",
    runs: Annotated[str | None, typer.Option(help="Runs grid (comma list): sessions per subject, pooled in its fit "
                                                  "(--effect; default 1), or runs of the design each simulated study "
                                                  "computes the test over, pooled (--test; default 1: one subject) or "
                                                  "per setting (--metric; default 10).")] = None,
    trials: TrialsOpt = None,
    design: DesignOpt = None,
    sims: Annotated[int, typer.Option(min=1, help="Simulated studies per cell.")] = 200,
    method: MethodOpt = "mle",
    level: Annotated[float, typer.Option(help="Test level alpha (two-sided).")] = 0.05,
    base: Annotated[list[str] | None, typer.Option(
        "--base", help="Population median NAME=VALUE before the effect (repeatable).")] = None,
    sd_between: Annotated[float, typer.Option(help="Between-subject SD, unconstrained scale.")] = 0.5,
    param: ParamOpt = None,
    draws: DrawsOpt = 500,
    chains: ChainsOpt = 2,
    lapse_invalid: LapseInvalidOpt = 0.0,
    lapse_random: LapseRandomOpt = 0.0,
    forms: FormsOpt = None,
    form_sd: FormSdOpt = None,
    run: RunOptions = RunOptions(),
) -> StudySpec | None:
    """Power: of a test on a model parameter, of a metric difference, or of a declared test.  With
    --forms (and --effect): the forms-aware test's rejection rate beside the naive test's."""
    from cogtestbed.registry import experiment_of

    if forms is not None:
        if effect is None:
            raise ValueError("power --forms needs --effect NAME=SIZE (0: the type-I error rate)")
        eff = parse_assignments([effect], "--effect")
        _forms_study(experiment_of(experiment, model=target), target, forms, form_sd, subjects, sims, param,
                     next(iter(eff.items())), design, trials, level, run)
        return None
    default_runs = (10,) if metric is not None else (1,)
    exp_name = experiment_of(experiment, model=target) if effect is not None and metric is None and test is None \
        else target
    common: dict[str, Any] = {"subjects": ints(subjects, (10,)), "runs": ints(runs, default_runs, "--runs"),
                              **sized(exp_name, design, trials), "reps": sims,
                              "seed": run.seed, "level": level,
                              "method": method, "base": parse_assignments(base or [], "--base"),
                              "sd_between": sd_between,
                              "params": parse_assignments(param or [], "--param"), "draws": draws, "tune": draws,
                              "chains": chains, "lapse": lapse_option(lapse_invalid, lapse_random)}
    spec = power_spec(target, experiment, effect, metric, compare, test, agent, common, option, sweep)
    return spec


@study_command("metric-validity", "validity")
def metric_validity(
    experiment: Annotated[str, typer.Argument(help="Experiment name.")],
    metric: Annotated[str, typer.Option(help="Headline metric.")],
    agent: Annotated[str, typer.Option(help="AGENT[:p=v,...]: the agent and its base setting.")],
    parameter: Annotated[str, typer.Option(help="Agent parameter swept.")],
    values: Annotated[str, typer.Option(help="Values of the parameter (comma list).")],
    direction: Annotated[str, typer.Option(help="increasing, decreasing or any.")] = "any",
    runs: Annotated[str, typer.Option(help="Runs (units) the metric is computed over (comma list).")] = "10",
    trials: TrialsOpt = None,
    design: DesignOpt = None,
    reps: Annotated[int, typer.Option(min=1, help="Replications per value.")] = 20,
    run: RunOptions = RunOptions(),
) -> StudySpec | None:
    """Metric validity: sweep an agent parameter; the metric's mean/SD per value and its monotonicity."""
    from cogtestbed.parameters import parse_agent
    name, params = parse_agent(agent)
    spec = study_spec_of(kind="metric-validity", experiment=experiment, agent=name, params=params, metric=metric,
                     parameter=parameter, values=floats(values), direction=direction,
                     runs=ints(runs, (10,), "--runs"), **sized(experiment, design, trials), reps=reps,
                     seed=run.seed)
    return spec


@study_command()
def study(
    experiment: Annotated[str, typer.Argument(help="Experiment name.")],
    name: Annotated[str | None, typer.Argument(help="Declared study (omit to list them), e.g. metric-power "
                                                    "or recovery:1.")] = None,
    reps: Annotated[int, typer.Option(min=1, help="Replications.")] = 20,
    run: RunOptions = RunOptions(),
) -> StudySpec | None:
    """Run a study the experiment declares, with its declared settings (or list them)."""
    from rich.table import Table

    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.studies.driver import declared_studies, spec_from_decl

    exp = get_experiment(experiment)
    if name is None:
        rows = [{"study": n, "description": d.description} for n, d in declared_studies(exp)]
        if run.as_json:
            print_json({"experiment": exp.name, "studies": rows})
            return None
        table = Table(title=f"studies declared by {exp.name}")
        table.add_column("study")
        table.add_column("description")
        for r in rows:
            table.add_row(r["study"], r["description"])
        console.print(table)
        return None
    (_, decl), = declared_studies(exp, name)
    return spec_from_decl(exp, decl, reps=reps, seed=run.seed)


@app.command()
def fit(
    model: Annotated[str, typer.Argument(help="Model name, e.g. rw-pm.")],
    path: Annotated[Path, typer.Argument(help="Trial table (.parquet) or published data file.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output directory.")],
    experiment: ExperimentOpt = None,
    method: MethodOpt = "hierarchical",
    source: Annotated[str, typer.Option("--from", help="auto, trials or an importer.")] = "auto",
    separate_runs: Annotated[bool, typer.Option(
        "--separate-runs", help="Fit every run (subject of the file) on its own, even where the experiment "
                                "pools an agent's runs into one fitted unit.")] = False,
    draws: DrawsOpt = 1000,
    max_draws: Annotated[int | None, typer.Option(
        "--max-draws", min=1, help="Where a run fails only its ESS or R-hat checks (no divergences), sample "
                                   "again with twice the draws per chain, up to this many.")] = None,
    chains: ChainsOpt = 4,
    log_likelihood: Annotated[bool, typer.Option(
        "--log-likelihood/--no-log-likelihood",
        help="Keep the pointwise log-likelihood in posterior.nc (for LOO/WAIC later; large).")] = False,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
    lapse: LapseFitOpt = "none",
    form_effects: Annotated[str | None, typer.Option(
        "--form-effects", help="P1,P2,...: the parameters given a prompt-form effect when the table has a 'form' "
                               "column (hierarchical; default: every parameter).")] = None,
    force: ForceOpt = False,
) -> None:
    """Fit a model to a trial file: InferenceData (netCDF) + summary (hierarchical), or MLE table.

    Where the experiment pools sessions (CogBench's runs of one LLM are one participant), the runs
    of each agent in the file are fitted together as one subject, as the validation studies do;
    ``--separate-runs`` fits each run on its own.  A table run across prompt forms (``--forms``) is
    fitted with crossed subject and form effects; the summary reports each between-form SD's posterior.
    """
    from cogtestbed.api.fitting import fit_and_save

    def fit_it() -> dict[str, Any]:
        return fit_and_save(model, path, output=output, experiment=experiment, method=method, source=source,
                            separate_runs=separate_runs, draws=draws, max_draws=max_draws, chains=chains,
                            log_likelihood=log_likelihood, seed=seed, lapse=lapse, force=force,
                            form_effects=None if form_effects is None else form_effects.split(","),
                            say=lambda line: console_err.print(line, markup=False))

    if method == "hierarchical":  # a long fit: the collector back on, the start-up frozen
        from cogtestbed.collector import resume_collection
        from cogtestbed.progress import reporting, stderr_reporter

        resume_collection()
        # one progress line (draws, chains, ETA) rewritten in place on a terminal, a line per interval off
        # it; the sampler's own bar stays off (nutpie's would draw beside ours)
        terminal = console_err.is_terminal and not as_json
        with reporting(stderr_reporter(terminal), terminal):
            payload = fit_it()
    else:
        payload = fit_it()
    if as_json:
        print_json(payload)
        return
    console.print_json(json.dumps(payload, default=str))

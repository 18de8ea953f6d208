"""``cogtestbed recover | model-recovery | power | sbc | metric-validity | study | fit``.

Every study command parses its options and calls the API's study function of the same name
(:mod:`cogtestbed.api.studies`), which builds the study spec, checks it against the experiment
spec *before* computing (a nonsense combination is one line on stderr, exit status 2), runs it
(local process pool, or ``--dask SCHEDULER_ADDRESS``) and with ``-o DIR`` writes
results.parquet, summary.json, PNG plots and report.html (each atomically); the command shows a
progress bar and prints a table or one JSON object (``--json``).  ``fit`` calls
:func:`cogtestbed.api.fitting.fit_and_save`.

``power`` has three forms: a model parameter or contrast (``power MODEL --effect NAME=SIZE``), a
metric difference between two agent settings (``power EXPERIMENT --metric M --compare
AGENT:p=v AGENT:p=v --runs 50,100``) and a declared statistical test (``power EXPERIMENT --test
KEY --agent AGENT:p=v``).
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cogtestbed.cli.app import SessionsOpt, app, console, console_err, print_json
from cogtestbed.cli.simulate import FormSdOpt, FormsOpt, LapseInvalidOpt, LapseRandomOpt, PopulationOpt
from cogtestbed.errors import InputError

if TYPE_CHECKING:  # the study machinery is imported inside the command bodies (a light command line)
    from cogtestbed.api.studies import Study

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


class _Bar:
    """The command line's view of a running study (:class:`~cogtestbed.api.studies.Watch`): its time
    estimate on stderr, a progress bar on a terminal, off it a line per interval."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.done: Any = None
        self.lines: Any = None

    def watch(self, dask: str | None) -> Any:
        from cogtestbed.api.studies import Watch

        return Watch(say=lambda line: console_err.print(line, highlight=False, markup=False, soft_wrap=True),
                     start=self.start, advance=self.advance, estimate=dask is None)  # stderr, --json or not

    def start(self, kind: str, total: int) -> None:
        from cogtestbed.cli.app import progress
        from cogtestbed.progress import TaskProgress, stderr_reporter

        terminal = console_err.is_terminal
        self.done = iter(progress(range(total), f"{kind} ({total} tasks)", total=total,
                                  enabled=terminal))  # a bar on a terminal; off it, a line per interval
        next(self.done, None)
        # progress goes to stderr whatever stdout carries (--json included: a scripted caller sees it live)
        self.lines = None if terminal else TaskProgress(stderr_reporter(False), kind, total)

    def advance(self, k: int) -> None:
        for _ in range(k):
            next(self.done, None)
        if self.lines is not None:
            self.lines.advance(k)

    def close(self) -> None:
        for _ in self.done or ():
            pass


#: Rate columns of a study's cells (with ``sims``: shown with their 95 % interval beside the MC SE).
RATE_COLUMNS = ("power", "type_i_error", "rejection_rate")


def readable_frame(frame: Any, spec: Any = None) -> Any:
    """A summary table for a person: the design named by its fields (a ``design`` column in place
    of ``n_trials``), a rate with ``sims`` with its Monte-Carlo SE (``MC SE``) and its 95 % Wilson
    interval (which says more where the SE is 0, at rates 0 and 1); counts stay integers (:func:`num`)."""
    from cogtestbed.formatting import num, wilson

    out = frame.copy()
    if spec is not None and "n_trials" in out.columns:
        from cogtestbed.validation.studies.labels import design_name

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
    return out.rename(columns={"mc_se": "MC SE"})


def _show(study: Study, as_json: bool, output: Path | None) -> None:
    """Print the study's tables and verdict (or ``--json``: its summary, :meth:`Study.to_dict`)."""
    payload = study.to_dict()
    if as_json:
        print_json(payload)
        return
    from rich.table import Table

    from cogtestbed.formatting import num
    from cogtestbed.validation.studies.report import summary_tables

    for caption, frame in summary_tables(study.result):
        frame = readable_frame(frame, study.spec)
        numbered = not all(isinstance(i, str) for i in frame.index)  # a row number says nothing
        table = Table(title=caption)
        if not numbered:
            table.add_column("")
        for c in frame.columns:
            table.add_column(str(c).replace("_", " "), justify="left" if c == "design" else "right")
        for idx, row in frame.iterrows():
            table.add_row(*([] if numbered else [str(idx)]), *(num(v) for v in row))
        console.print(table)
    console.print(study.verdict, highlight=False)
    for d in payload["designs"]:  # the resolved design: every field, defaults included
        fields = ", ".join(f"{k}={v}" for k, v in d["fields"].items())
        console.print(f"design {d['label']}: {fields}", highlight=False, soft_wrap=True)
    if output is not None:
        console_err.print(f"wrote {output}/report.html")


@dataclass(frozen=True)
class RunOptions:
    """Options every study command shares (``--seed --workers --dask --json -o --force``)."""

    seed: int = 0
    workers: int | None = None
    dask: str | None = None
    as_json: bool = False
    output: Path | None = None
    force: bool = False
    #: The study's view on stderr (:class:`~cogtestbed.api.studies.Watch`), set by the command.
    watch: Any = None

    def api(self) -> dict[str, Any]:
        """The shared options as the keywords of the API's study functions."""
        return {"seed": self.seed, "workers": self.workers, "dask": self.dask, "output": self.output,
                "force": self.force, "watch": self.watch}


#: The shared options as command parameters (added to each command by :func:`study_command`).
RUN_PARAMETERS = tuple(
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
    for name, annotation, default in (("seed", SeedOpt, 0), ("workers", WorkersOpt, None), ("dask", DaskOpt, None),
                                      ("as_json", JsonOpt, False), ("output", OutOpt, None),
                                      ("force", ForceOpt, False)))


def study_command(*names: str) -> Callable[[Callable[..., Study | None]], Callable[..., Study | None]]:
    """Register a study command (under ``names``; default: the function's name with dashes).

    The decorated function takes its own options plus ``run`` (:class:`RunOptions`), calls the
    API's study function with them (``**run.api()``: seed, workers, Dask, output, the progress
    view) and returns its :class:`~cogtestbed.api.studies.Study` (or ``None`` when it has printed
    what was asked); the command gains the shared options and prints the study.
    """

    def register(fn: Callable[..., Study | None]) -> Callable[..., Study | None]:
        # the return annotation names the study machinery, which registration must not import
        hints = typing.get_type_hints(fn, localns={"Study": object}, include_extras=True)
        own = [p.replace(annotation=hints[p.name]) for p in inspect.signature(fn).parameters.values()
               if p.name != "run"]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> None:
            from cogtestbed.validation.studies.sizes import DesignSweep

            shared = {p.name: kwargs.pop(p.name) for p in RUN_PARAMETERS}
            bar = _Bar(shared["as_json"])
            run = RunOptions(**shared, watch=bar.watch(shared["dask"]))
            try:
                study = fn(run=run, **kwargs)
            except DesignSweep as sweep:  # one study per value of an integer design field
                _each_value(sweep, shared, kwargs)
                return
            bar.close()
            if study is not None:
                _show(study, run.as_json, run.output)

        def _each_value(sweep: Any, shared: dict[str, Any], kwargs: dict[str, Any]) -> None:
            """Run the command once per swept value: ``-o DIR`` gets ``DIR/NAME=VALUE/``; ``--json``
            prints one JSON object per value (one per line)."""
            items = list(kwargs.get("design") or [])
            at = next(i for i, item in enumerate(items) if item.partition("=")[0].strip() == sweep.name)
            for value in sweep.values:
                items[at] = f"{sweep.name}={value}"
                out = None if shared["output"] is None else shared["output"] / f"{sweep.name}={value}"
                if not shared["as_json"]:
                    console.print(f"[bold]{sweep.name} = {value}[/]", highlight=False)
                command(**{**kwargs, "design": list(items)}, **{**shared, "output": out})

        params = [*own, *RUN_PARAMETERS]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        for i, name in enumerate(names or (fn.__name__.replace("_", "-"),)):
            app.command(name, help=None if i == 0 else f"Alias of {names[0]}.")(command)
        return fn

    return register


def _print_form_study(summary: dict[str, Any], as_json: bool) -> None:
    """A forms study's summary (:func:`cogtestbed.api.studies.form_study`): JSON, or a line per key."""
    if as_json:
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
    sampler: Annotated[str, typer.Option(help="prior (hierarchical prior) or uniform (--population: the "
                                              "population's draws).")] = "prior",
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
    population: PopulationOpt = None,
    run: RunOptions = RunOptions(),
) -> Study | None:
    """Parameter recovery: simulate with known parameters, fit, compare (r, RMSE, bias, share within a
    stated tolerance, interval coverage, estimates at a bound).  With --forms and --form-sd: the
    recovery of the form SD and the coverage of its interval (MLE, subjects split over the forms)."""
    from cogtestbed.api.studies import form_study
    from cogtestbed.api.studies import recover as recovery

    if forms is not None and population is not None:
        raise InputError("--forms studies draw subjects around the model's medians; --population is not planned "
                         "with forms yet: drop one")
    if forms is not None:
        with console_err.status(f"{reps} forms studies of {model}"):
            summary = form_study(experiment, model, forms=forms, form_sd=form_sd, subjects=subjects,
                                 reps=reps, params=param, design=design, trials=trials, seed=run.seed)
        _print_form_study(summary, run.as_json)
        return None
    return recovery(experiment, model, subjects=subjects, trials=trials, design=design, runs=runs, reps=reps,
                    method=method, sampler=sampler, fix=fix, params=param, draws=draws, chains=chains,
                    lapse_invalid=lapse_invalid, lapse_random=lapse_random, lapse=lapse, precision=precision,
                    assurance=assurance, population=population, **run.api())



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
) -> Study | None:
    """Model recovery: simulate each model, fit all, confusion matrix (AIC/BIC, or LOO)."""
    from cogtestbed.api.studies import model_recovery as confusion

    return confusion(experiment, models, subjects=subjects, trials=trials, design=design, runs=runs,
                     reps=reps, method=method, params=param, draws=draws, chains=chains, **run.api())



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
) -> Study | None:
    """Simulation-based calibration of the hierarchical model (rank uniformity, Talts et al. 2018)."""
    from cogtestbed.api.studies import sbc as calibration

    return calibration(experiment, model, subjects=subjects, trials=trials, design=design, runs=runs,
                       reps=reps, params=param, draws=draws, chains=chains, backend=backend, **run.api())



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
    groups: Annotated[int, typer.Option(min=1, max=2, help="With --effect: 1 tests the effect against 0 in one "
                                        "group; 2 tests the parameter's difference between two groups of --subjects "
                                        "each (e.g. two LLMs), the second's median moved by the effect; with "
                                        "--population the first group is the population's people, their number "
                                        "fixed).")] = 1,
    population: PopulationOpt = None,
    run: RunOptions = RunOptions(),
) -> Study | None:
    """Power: of a test on a model parameter, of a metric difference, or of a declared test.  With
    --forms (and --effect): the forms-aware test's rejection rate beside the naive test's."""
    from cogtestbed.api.studies import form_study
    from cogtestbed.api.studies import power as power_study

    if forms is not None and population is not None:
        raise InputError("--forms studies draw subjects around the model's medians; --population is not planned "
                         "with forms yet: drop one")
    if forms is not None:
        if effect is None:
            raise InputError("power --forms needs --effect NAME=SIZE (0: the type-I error rate)")
        if groups != 1:
            raise InputError("power --forms tests one group's effect across prompt forms: drop --groups")
        with console_err.status(f"{sims} forms studies of {target}"):
            summary = form_study(experiment, target, forms=forms, form_sd=form_sd, subjects=subjects,
                                 reps=sims, params=param, effect=effect, design=design, trials=trials, level=level,
                                 seed=run.seed)
        _print_form_study(summary, run.as_json)
        return None
    return power_study(experiment, target, effect=effect, metric=metric, compare=compare, test=test, agent=agent,
                       sweep=sweep, option=option, subjects=subjects, runs=runs, trials=trials,
                       design=design, sims=sims, method=method, level=level, base=base, sd_between=sd_between,
                       params=param, draws=draws, chains=chains, lapse_invalid=lapse_invalid,
                       lapse_random=lapse_random, groups=groups, population=population, **run.api())



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
) -> Study | None:
    """Metric validity: sweep an agent parameter; the metric's mean/SD per value and its monotonicity."""
    from cogtestbed.api.studies import metric_validity as validity

    return validity(experiment, metric=metric, agent=agent, parameter=parameter, values=values, direction=direction,
                    runs=runs, trials=trials, design=design, reps=reps, **run.api())



@study_command()
def study(
    experiment: Annotated[str, typer.Argument(help="Experiment name.")],
    name: Annotated[str | None, typer.Argument(help="Declared study (omit to list them), e.g. metric-power "
                                                    "or recovery:1.")] = None,
    reps: Annotated[int, typer.Option(min=1, help="Replications.")] = 20,
    run: RunOptions = RunOptions(),
) -> Study | None:
    """Run a study the experiment declares, with its declared settings (or list them)."""
    from rich.table import Table

    from cogtestbed.api.studies import study as declared

    result = declared(experiment, name, reps=reps, **run.api())
    if not isinstance(result, list):
        return result
    if run.as_json:
        print_json({"experiment": experiment, "studies": result})
        return None
    table = Table(title=f"studies declared by {experiment}")
    table.add_column("study")
    table.add_column("description")
    for r in result:
        table.add_row(r["study"], r["description"])
    console.print(table)
    return None



@app.command()
def fit(
    model: Annotated[str, typer.Argument(help="Model name, e.g. rw-pm.")],
    path: Annotated[Path, typer.Argument(help="Trial table (.parquet) or published data file.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output directory.")],
    experiment: ExperimentOpt = None,
    method: MethodOpt = "hierarchical",
    source: Annotated[str, typer.Option("--from", help="auto, trials or an importer.")] = "auto",
    unit: Annotated[str, typer.Option(
        "--unit", help="What one fitted unit is: subject (each subject of the file with its sessions), session, "
                       "agent (the runs of each agent pooled as one participant) or auto: agent where the "
                       "experiment pools sessions and no agent's runs have different true parameters, else "
                       "subject.")] = "auto",
    separate_runs: Annotated[bool, typer.Option(
        "--separate-runs", help="Fit every run (subject of the file) on its own, even where the experiment "
                                "pools an agent's runs into one fitted unit (= --unit subject).")] = False,
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
    sessions: SessionsOpt = None,
) -> None:
    """Fit a model to a trial file: InferenceData (netCDF) + summary (hierarchical), or MLE table.

    Where the experiment pools sessions (CogBench's runs of one LLM are one participant), the runs
    of each agent in the file are fitted together as one subject, as the validation studies do,
    unless the file's simulated subjects have different true parameters (never pooled);
    ``--unit`` chooses the unit (``--separate-runs``: each run on its own).  The first line says
    how many units were fitted and why.  A table run across prompt forms (``--forms``) is
    fitted with crossed subject and form effects; the summary reports each between-form SD's posterior.
    """
    from cogtestbed.api.fitting import fit_and_save

    def fit_it() -> dict[str, Any]:
        return fit_and_save(experiment, path, model, output=output, method=method, source=source,
                            unit=unit, separate_runs=separate_runs, draws=draws, max_draws=max_draws, chains=chains,
                            log_likelihood=log_likelihood, seed=seed, lapse=lapse, force=force,
                            form_effects=None if form_effects is None else form_effects.split(","),
                            say=lambda line: typer.echo(line, err=True), sessions=sessions)

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
    from cogtestbed.cli.metrics import warn_flags

    if as_json:
        print_json(payload)
    else:
        console.print_json(json.dumps(payload, default=str))
    warn_flags(payload.get("flags") or [])  # subjects whose answers identify no model, on stderr too

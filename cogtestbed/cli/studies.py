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

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cogtestbed.cli.app import app, console, console_err, print_json
from cogtestbed.cli.options import command_signature, request_command
from cogtestbed.errors import InputError
from cogtestbed.request import api_values, from_cli
from cogtestbed.studies.study_options import (
    DeclaredStudyRequest,
    FitRequest,
    MetricValidityRequest,
    ModelRecoveryRequest,
    PowerRequest,
    RecoverRequest,
    SbcRequest,
    StudyForms,
    StudyRun,
)

if TYPE_CHECKING:  # the study machinery is imported inside the command bodies (a light command line)
    from cogtestbed.api.studies import Study

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
    out = frame.copy() if spec is None else _named_by_spec(frame.copy(), spec)
    rates = [c for c in RATE_COLUMNS if c in frame.columns]
    if not rates or "sims" not in frame.columns:
        return out
    for c in rates:
        out[f"{c} 95% interval"] = [_wilson_text(r, s) for r, s in zip(frame[c], frame["sims"], strict=True)]
    return out.rename(columns={"mc_se": "MC SE"})


def _named_by_spec(out: Any, spec: Any) -> Any:
    """``out`` with its design named by the study's fields and its ``value`` by the study's parameter."""
    if "n_trials" in out.columns:
        from cogtestbed.studies.labels import design_name

        out.insert(0, "design", [design_name(spec, t) for t in out["n_trials"]])
        out = out.drop(columns=["n_trials"])
    if "value" in out.columns and getattr(spec, "parameter", None):
        out = out.rename(columns={"value": spec.parameter})
    return out


def _wilson_text(rate: Any, sims: Any) -> str:
    """A rate's 95 % Wilson interval over ``sims`` simulations (``n/a`` without any)."""
    from cogtestbed.formatting import num, wilson

    if not sims:
        return "n/a"
    return "[{}, {}]".format(*(num(x, 2) for x in wilson(float(rate) * int(sims), int(sims))))


def _rich_table(frame: Any, caption: str) -> Any:
    """A summary frame as a rich table (its index a first column unless it only numbers the rows)."""
    from rich.table import Table

    from cogtestbed.formatting import num

    numbered = not all(isinstance(i, str) for i in frame.index)  # a row number says nothing
    table = Table(title=caption)
    if not numbered:
        table.add_column("")
    for c in frame.columns:
        table.add_column(str(c).replace("_", " "), justify="left" if c == "design" else "right")
    for idx, row in frame.iterrows():
        table.add_row(*([] if numbered else [str(idx)]), *(num(v) for v in row))
    return table


def _show(study: Study, as_json: bool, output: Path | None) -> None:
    """Print the study's tables and verdict (or ``--json``: its summary, :meth:`Study.to_dict`)."""
    payload = study.to_dict()
    if as_json:
        print_json(payload)
        return
    from cogtestbed.studies.report import summary_tables

    for caption, frame in summary_tables(study.result):
        console.print(_rich_table(readable_frame(frame, study.spec), caption))
    console.print(study.verdict, highlight=False)
    for d in payload["designs"]:  # the resolved design: every field, defaults included
        fields = ", ".join(f"{k}={v}" for k, v in d["fields"].items())
        console.print(f"design {d['label']}: {fields}", highlight=False, soft_wrap=True)
    if output is not None:
        console_err.print(f"wrote {output}/report.html")


def study_command(request: type[Any], *names: str) -> Callable[[Callable[..., Study | None]], Callable[..., Any]]:
    """Register a study command (under ``names``; default: the function's name with dashes) whose
    options are those of ``request`` (:mod:`cogtestbed.studies.study_options`: each declared
    once there, the shared ones in its ``run`` sub-object, :class:`StudyRun`).

    The decorated function takes the request and the study's view on stderr (``watch``,
    :class:`~cogtestbed.api.studies.Watch`), calls the API's study function with them and returns its
    :class:`~cogtestbed.api.studies.Study` (or ``None`` when it has printed what was asked); the
    command prints the study.
    """

    def register(fn: Callable[..., Study | None]) -> Callable[..., Any]:
        def command(**values: Any) -> None:
            req = from_cli(request, values)  # a refused option (a count over its bound) before anything heavy loads
            from cogtestbed.studies.sizes import DesignSweep

            run: StudyRun = req.run
            bar = _Bar(run.as_json)
            try:
                study = fn(req, bar.watch(run.dask))
            except DesignSweep as sweep:  # one study per value of an integer design field
                _each_value(sweep, values)
                return
            bar.close()
            if study is not None:
                _show(study, run.as_json, None if run.output is None else Path(run.output))

        def _each_value(sweep: Any, values: dict[str, Any]) -> None:
            """Run the command once per swept value: ``-o DIR`` gets ``DIR/NAME=VALUE/``; ``--json``
            prints one JSON object per value (one per line)."""
            items = list(values.get("design") or [])
            at = next(i for i, item in enumerate(items) if item.partition("=")[0].strip() == sweep.name)
            for value in sweep.values:
                items[at] = f"{sweep.name}={value}"
                out = None if values["output"] is None else Path(values["output"]) / f"{sweep.name}={value}"
                if not values["as_json"]:
                    console.print(f"[bold]{sweep.name} = {value}[/]", highlight=False)
                command(**{**values, "design": list(items), "output": out})

        command.__name__, command.__doc__ = fn.__name__, fn.__doc__
        command.__signature__ = command_signature(request)  # type: ignore[attr-defined]
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


def _no_forms_with_population(forms: StudyForms, population: Any) -> None:
    if forms.assigned_forms is not None and population is not None:
        raise InputError("--forms studies draw subjects around the model's medians; --population is not planned "
                         "with forms yet: drop one")


@study_command(RecoverRequest)
def recover(req: RecoverRequest, watch: Any) -> Study | None:
    """Parameter recovery: simulate with known parameters, fit, compare (r, RMSE, bias, share within a
    stated tolerance, interval coverage, estimates at a bound).  With --forms and --form-sd: the
    recovery of the form SD and the coverage of its interval (MLE, subjects split over the forms)."""
    from cogtestbed.api.studies import form_study
    from cogtestbed.api.studies import recover as recovery

    _no_forms_with_population(req.forms, req.fit.population)
    if req.forms.assigned_forms is not None:
        sz = req.sizes
        with console_err.status(f"{sz.reps} forms studies of {req.model}"):
            summary = form_study(req.experiment, req.model, forms=req.forms.assigned_forms, form_sd=req.forms.form_sd,
                                 subjects=str(sz.subject_grid), reps=sz.reps, params=req.fit.params, design=sz.design,
                                 trials=sz.design_trials, seed=req.run.seed)
        _print_form_study(summary, req.run.as_json)
        return None
    return recovery(**api_values(req), watch=watch)


@study_command(ModelRecoveryRequest, "model-recovery")
def model_recovery(req: ModelRecoveryRequest, watch: Any) -> Study | None:
    """Model recovery: simulate each model, fit all, confusion matrix (AIC/BIC, or LOO)."""
    from cogtestbed.api.studies import model_recovery as confusion

    return confusion(**api_values(req), watch=watch)


@study_command(SbcRequest)
def sbc(req: SbcRequest, watch: Any) -> Study | None:
    """Simulation-based calibration of the hierarchical model (rank uniformity, Talts et al. 2018)."""
    from cogtestbed.api.studies import sbc as calibration

    return calibration(**api_values(req), watch=watch)


@study_command(PowerRequest)
def power(req: PowerRequest, watch: Any) -> Study | None:
    """Power: of a test on a model parameter, of a metric difference, or of a declared test.  With
    --forms (and --effect): the forms-aware test's rejection rate beside the naive test's."""
    from cogtestbed.api.studies import form_study
    from cogtestbed.api.studies import power as power_study

    goal, sz = req.goal, req.sizes
    _no_forms_with_population(req.forms, req.subjects_fit.population)
    if req.forms.assigned_forms is not None:
        if goal.effect is None:
            raise InputError("power --forms needs --effect NAME=SIZE (0: the type-I error rate)")
        if goal.groups != 1:
            raise InputError("power --forms tests one group's effect across prompt forms: drop --groups")
        with console_err.status(f"{sz.sims} forms studies of {req.target}"):
            summary = form_study(req.experiment, req.target, forms=req.forms.assigned_forms, form_sd=req.forms.form_sd,
                                 subjects=str(sz.subject_grid), reps=sz.sims, params=req.subjects_fit.params,
                                 effect=goal.effect, design=sz.design, trials=sz.design_trials, level=goal.level,
                                 seed=req.run.seed)
        _print_form_study(summary, req.run.as_json)
        return None
    return power_study(**api_values(req), watch=watch)


@study_command(MetricValidityRequest, "metric-validity", "validity")
def metric_validity(req: MetricValidityRequest, watch: Any) -> Study | None:
    """Metric validity: sweep an agent parameter; the metric's mean/SD per value and its monotonicity."""
    from cogtestbed.api.studies import metric_validity as validity

    return validity(**api_values(req), watch=watch)


@study_command(DeclaredStudyRequest)
def study(req: DeclaredStudyRequest, watch: Any) -> Study | None:
    """Run a study the experiment declares, with its declared settings (or list them)."""
    from rich.table import Table

    from cogtestbed.api.studies import study as declared

    result = declared(**api_values(req), watch=watch)
    if not isinstance(result, list):
        return result
    if req.run.as_json:
        print_json({"experiment": req.experiment, "studies": result})
        return None
    table = Table(title=f"studies declared by {req.experiment}")
    table.add_column("study")
    table.add_column("description")
    for r in result:
        table.add_row(r["study"], r["description"])
    console.print(table)
    return None


@request_command(app, FitRequest)
def fit(req: FitRequest) -> None:
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
        return fit_and_save(**api_values(req), say=lambda line: typer.echo(line, err=True))

    as_json = req.as_json
    if req.terms.method == "hierarchical":  # a long fit: the collector back on, the start-up frozen
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

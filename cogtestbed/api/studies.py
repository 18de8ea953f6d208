"""Studies on synthetic data as Python functions: :func:`recover`, :func:`model_recovery`,
:func:`sbc` and :func:`power` (``cogtestbed recover | model-recovery | sbc | power``).

Each builds the same :class:`~cogtestbed.validation.studies.driver.StudySpec` as its command
(keyword names follow the options: ``subjects``, ``trials``, ``runs``, ``reps``, ``method``,
``params`` for ``--param``, ``fix`` for ``--fix``), checks it before computing, runs it on local
processes and returns a :class:`Study`: ``.table`` (one row per estimate or simulated study),
``.summary``, ``.verdict`` and ``.plot()``; ``output=DIR`` also writes the command's files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogtestbed.api.figures import Figures
from cogtestbed.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from cogtestbed.experiments.spec import ExperimentSpec
    from cogtestbed.validation.studies.driver import StudyResult, StudySpec

Sizes = int | Sequence[int] | None
Assignments = Mapping[str, float] | None


class Study:
    """A finished study: its spec, the tidy ``table``, the ``summary`` and the ``verdict``."""

    def __init__(self, result: StudyResult) -> None:
        self.result = result

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

    def plot(self, directory: str | os.PathLike[str] | None = None) -> Figures:
        """The study's plots (recovery: true against estimated per parameter and the error
        correlations; power curves; confusion matrices; SBC rank histograms) as PNG files in
        ``directory`` (default: a temporary one)."""
        import tempfile

        from cogtestbed.validation.studies.report import plots

        out = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="cogtestbed-study-"))
        out.mkdir(parents=True, exist_ok=True)
        return Figures(plots(self.result, out))

    def save(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """results.parquet, summary.json, the plots and report.html (as ``-o DIR`` writes them)."""
        from cogtestbed.validation.studies.report import write_study

        return write_study(self.result, Path(directory))

    def __repr__(self) -> str:
        return f"Study({self.spec.kind}: {self.verdict})"


def _sizes(value: Sizes, default: tuple[Any, ...]) -> tuple[Any, ...]:
    if value is None:
        return default
    return (int(value),) if isinstance(value, int) else tuple(int(v) for v in value)


def _experiment_name(experiment: str | ExperimentSpec | None, model: str | None = None) -> str:
    """The name of the experiment (a spec object is registered in this process first); None: the
    one experiment declaring ``model`` (:func:`cogtestbed.registry.experiment_of`)."""
    from cogtestbed.api.core import get_experiment
    from cogtestbed.registry import experiment_of

    if experiment is None:
        return experiment_of(None, model=model)
    return get_experiment(experiment).name


def run_spec(spec: StudySpec, *, workers: int | None = None, output: str | os.PathLike[str] | None = None,
             precision: Assignments = None, assurance: float = 0.9) -> Study:
    """Check ``spec`` (and the memory its tasks need) before computing, run it and return the
    :class:`Study`; ``precision`` and ``assurance`` judge a recovery (``recover --precision``)."""
    from cogtestbed.validation.studies.driver import check_study, check_study_memory, concurrent_tasks, run_study
    from cogtestbed.validation.studies.report import check_output_dir, write_study

    exp = check_study(spec)
    check_study_memory(spec, exp, concurrent_tasks(spec, workers))
    if output is not None:
        check_output_dir(Path(output))
    result = run_study(spec, workers=workers)
    if spec.kind == "recovery":
        from cogtestbed.validation.studies.recovery_checks import add_recovery_checks

        add_recovery_checks(result, dict(precision or {}), assurance)
    if output is not None:
        write_study(result, Path(output))
    return Study(result)


def _spec(**fields: Any) -> StudySpec:
    from cogtestbed.api.specs import study_spec_of

    return study_spec_of(**fields)


def _lapse(invalid: float, random: float) -> Any:
    from cogtestbed.lapse import Lapse

    lapse = Lapse(invalid, random)
    return lapse if lapse.active else None


def recover(model: str, *, experiment: str | ExperimentSpec | None = None, subjects: Sizes = 50,
            trials: Sizes = None, design: Mapping[str, Any] | None = None, runs: Sizes = 1, reps: int = 100,
            method: str = "mle", sampler: str = "prior", fix: Assignments = None, params: Assignments = None,
            draws: int = 1000, chains: int = 4, lapse_invalid: float = 0.0, lapse_random: float = 0.0,
            lapse: str = "none", precision: Assignments = None, assurance: float = 0.9, seed: int = 0,
            workers: int | None = None, output: str | os.PathLike[str] | None = None) -> Study:
    """Parameter recovery (``cogtestbed recover``): simulate ``reps`` data sets of ``subjects``
    subjects with known parameters (drawn from the model's prior, or ``sampler="uniform"``), fit
    ``model`` (``method`` ``mle`` or ``hierarchical``) and compare: r, RMSE and bias per
    parameter, the share within ``precision={PARAM: HALFWIDTH}``, estimates at a bound."""
    from cogtestbed.api.specs import lapse_fit

    name = _experiment_name(experiment, model)
    spec = _spec(kind="recovery", experiment=name, models=(model,), method=method,
                 subjects=_sizes(subjects, (50,)), trials=_sizes(trials, (None,)), design=dict(design or {}),
                 runs=_sizes(runs, (1,)), reps=reps, seed=seed, sampler=sampler, fixed=dict(fix or {}),
                 params=dict(params or {}), draws=draws, tune=draws, chains=chains,
                 lapse=_lapse(lapse_invalid, lapse_random), lapse_fit=lapse_fit(lapse))
    return run_spec(spec, workers=workers, output=output, precision=precision, assurance=assurance)


def model_recovery(models: Sequence[str], *, experiment: str | ExperimentSpec | None = None,
                   subjects: int = 30, trials: int | None = None, design: Mapping[str, Any] | None = None,
                   runs: int = 1, reps: int = 50, method: str = "mle", params: Assignments = None,
                   draws: int = 500, chains: int = 2, seed: int = 0, workers: int | None = None,
                   output: str | os.PathLike[str] | None = None) -> Study:
    """Model recovery (``cogtestbed model-recovery``): simulate each model, fit all, the
    confusion matrix of the best fits (AIC/BIC, or LOO for hierarchical fits)."""
    if len(models) < 2:
        raise InputError(f"model recovery needs at least two models, got {len(models)}")
    spec = _spec(kind="model-recovery", experiment=_experiment_name(experiment, models[0]), models=tuple(models),
                 method=method, subjects=(subjects,), runs=(runs,), reps=reps, trials=(trials,),
                 design=dict(design or {}), seed=seed, params=dict(params or {}), draws=draws, tune=draws,
                 chains=chains)
    return run_spec(spec, workers=workers, output=output)


def sbc(model: str, *, experiment: str | ExperimentSpec | None = None, subjects: int = 20,
        trials: int | None = None, design: Mapping[str, Any] | None = None, runs: int = 1, reps: int = 100,
        params: Assignments = None, draws: int = 500, chains: int = 2, backend: str = "auto", seed: int = 0,
        workers: int | None = None, output: str | os.PathLike[str] | None = None) -> Study:
    """Simulation-based calibration of the hierarchical model (``cogtestbed sbc``; rank
    uniformity, Talts et al. 2018)."""
    spec = _spec(kind="sbc", experiment=_experiment_name(experiment, model), models=(model,), method="hierarchical",
                 subjects=(subjects,), runs=(runs,), reps=reps, seed=seed, trials=(trials,),
                 design=dict(design or {}), params=dict(params or {}), draws=draws, tune=draws, chains=chains,
                 sampler_backend=backend)
    return run_spec(spec, workers=workers, output=output)


def power(target: str, *, effect: Mapping[str, float] | str | None = None, metric: str | None = None,
          compare: tuple[str, str] | None = None, test: str | None = None, agent: str | None = None,
          sweep: str | None = None, option: Mapping[str, Any] | None = None,
          experiment: str | ExperimentSpec | None = None, subjects: Sizes = (10, 20, 40, 80), runs: Sizes = None,
          trials: Sizes = None, design: Mapping[str, Any] | None = None, sims: int = 200, method: str = "mle",
          level: float = 0.05, base: Assignments = None, sd_between: float = 0.5, params: Assignments = None,
          draws: int = 500, chains: int = 2, lapse_invalid: float = 0.0, lapse_random: float = 0.0,
          seed: int = 0, workers: int | None = None, output: str | os.PathLike[str] | None = None) -> Study:
    """Power (``cogtestbed power``) in its three forms: of a test on a model parameter
    (``power(MODEL, effect={NAME: SIZE}, experiment=...)``), of a metric difference between two
    settings of one agent (``power(EXPERIMENT, metric=M, compare=("A:p=v", "A:p=w"))``) or of a
    test the metrics report (``power(EXPERIMENT, test=KEY, agent="A:p=v")``)."""
    from cogtestbed.api.specs import one_assignment, power_spec

    exp_name = None if experiment is None else _experiment_name(experiment)
    if effect is None and exp_name is not None:  # a metric or test target names the experiment itself
        target, exp_name = exp_name, None
    default_runs = (10,) if metric is not None else (1,)
    common: dict[str, Any] = {"subjects": _sizes(subjects, (10,)), "runs": _sizes(runs, default_runs),
                              "trials": _sizes(trials, (None,)), "design": dict(design or {}), "reps": sims,
                              "seed": seed, "level": level, "method": method, "base": dict(base or {}),
                              "sd_between": sd_between, "params": dict(params or {}), "draws": draws,
                              "tune": draws, "chains": chains, "lapse": _lapse(lapse_invalid, lapse_random)}
    options = [f"{k}={v}" for k, v in (option or {}).items()]
    spec = power_spec(target, exp_name, one_assignment(effect), metric, compare, test, agent, common, options, sweep)
    return run_spec(spec, workers=workers, output=output)


def true_parameters(trials: pd.DataFrame) -> pd.DataFrame:
    """The known parameters of simulated subjects, one row per subject (the table's ``param_*``
    columns, named without the prefix)."""
    cols = [c for c in trials.columns if str(c).startswith("param_")]
    if not cols:
        raise InputError("the table holds no true parameters (param_* columns): it was not simulated")
    first = trials.groupby("subject", sort=True)[cols].first().reset_index()
    return first.rename(columns={c: str(c).removeprefix("param_") for c in cols})


def estimates(fit: Any) -> pd.DataFrame:
    """Per-subject point estimates of a fit, one row per subject: an MLE table as it is, a
    hierarchical fit's posterior means (``subject_summary``)."""
    import pandas as pd

    if isinstance(fit, pd.DataFrame):
        return fit
    summary = fit.subject_summary()
    return summary.pivot(index="subject", columns="parameter", values="mean").reset_index()


def plot_recovery(trials: pd.DataFrame, *fits: Any, labels: Sequence[str] | None = None,
                  directory: str | os.PathLike[str] | None = None) -> Figures:
    """True against estimated parameters of simulated subjects: one panel per parameter, one
    colour per fit (MLE tables or hierarchical fits); the identity line dashed.  Written as
    ``recovery.png`` in ``directory`` (default: a temporary one)."""
    import tempfile

    from cogtestbed.validation.studies.report import _plt, _save

    truth = true_parameters(trials)
    frames = [estimates(f) for f in fits]
    names = [c for c in truth.columns if c != "subject" and any(c in f.columns for f in frames)]
    if not names:
        raise InputError("no parameter is both known and estimated")
    tags = list(labels) if labels is not None else [
        "MLE" if isinstance(f, type(frame)) and f is frame else "hierarchical" for f, frame in zip(fits, frames,
                                                                                                strict=True)]
    plt = _plt()
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for frame, tag in zip(frames, tags, strict=True):
            if name in frame.columns:
                joined = truth[["subject", name]].merge(frame[["subject", name]], on="subject", suffixes=("", "_est"))
                ax.scatter(joined[name], joined[f"{name}_est"], s=14, alpha=0.7, label=tag)
        lo, hi = ax.get_xlim()
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set_xlabel(f"true {name}")
        ax.set_ylabel("estimate")
    axes[0][0].legend(fontsize=8)
    out = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="cogtestbed-recovery-"))
    out.mkdir(parents=True, exist_ok=True)
    return Figures([_save(fig, out / "recovery.png")])

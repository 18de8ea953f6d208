"""Experiments, simulation, metrics, fits and the conformance suite as Python functions.

Every function takes an experiment as a registered name or as an
:class:`~cogtestbed.experiments.spec.ExperimentSpec` object defined anywhere (a spec object is
registered in this process on first use, so that the studies and the simulation find it by its
name: :func:`cogtestbed.registry.register`).  Keyword names follow the command line's options
(``--lapse-invalid`` → ``lapse_invalid``).  Bad input raises the typed errors the command line
turns into its one-line messages (:mod:`cogtestbed.errors`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from cogtestbed.api.checks import public
from cogtestbed.api.workflow_options import CheckRequest, MetricsRequest
from cogtestbed.errors import DataError, InputError
from cogtestbed.request import api_leaves, build, derive_api, keyword, request_block
from cogtestbed.simulate_options import SimulateRequest
from cogtestbed.studies.study_options import FitTableRequest

#: The keywords of :func:`metrics` that are its request's, not the experiment's metrics options.
_METRICS_REQUEST_KEYWORDS = frozenset(leaf.name for leaf in api_leaves(MetricsRequest))

if TYPE_CHECKING:
    import pandas as pd

    from cogtestbed.conformance.suite import ConformanceReport
    from cogtestbed.environments.base import Design
    from cogtestbed.experiments.spec import ExperimentSpec
    from cogtestbed.inference.hierarchical import BayesFit
    from cogtestbed.metrics_result import MetricsReport

@public()
def experiments() -> list[str]:
    """Every registered experiment's name: the package's own, then those other installed
    distributions declare through the ``cogtestbed.experiments`` entry-point group.

    Returns
    -------
    list of str
        The names, the package's own first (alphabetical), then the plug-ins'.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> "instrumental-learning" in ct.experiments()
    True
    """
    from cogtestbed.registry import experiment_names

    return experiment_names()


@public()
def get_experiment(experiment: str | ExperimentSpec) -> ExperimentSpec:
    """The experiment's spec: a registered name looked up (an unknown one raises
    :class:`~cogtestbed.experiments.spec.UnknownNameError` listing the valid names), a spec object
    registered in this process under its name and returned as it is.

    Parameters
    ----------
    experiment : str or ExperimentSpec
        A registered name (``ct.experiments()``) or a spec object.

    Returns
    -------
    ExperimentSpec
        The experiment's declaration: its environment, agents, models, metrics and design.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> spec = ct.get_experiment("instrumental-learning")
    >>> spec.name, "rw-pm" in spec.models
    ('instrumental-learning', True)
    """
    from cogtestbed.experiments.spec import ExperimentSpec
    from cogtestbed.registry import get_experiment as lookup
    from cogtestbed.registry import register

    if isinstance(experiment, ExperimentSpec):
        return register(experiment)
    if not isinstance(experiment, str):
        raise TypeError(f"an experiment is a name or an ExperimentSpec, got {type(experiment).__name__}")
    return lookup(experiment)


def design_of(exp: ExperimentSpec, design: Design | Mapping[str, Any] | None) -> Design:
    """The experiment's design: its defaults with the fields ``design`` names (a mapping of field
    to value, as ``--design NAME=VALUE``), or a design object of the experiment's own class."""
    cls = exp.env_cls.design_cls
    if design is None:
        return cls()
    if isinstance(design, cls):
        return design
    if isinstance(design, Mapping):
        return cls(**dict(design))
    raise TypeError(f"design of {exp.name}: a mapping of fields or a {cls.__name__}, got {type(design).__name__}")


def with_adaptive(exp: ExperimentSpec, design: Design, adaptive: Sequence[str] | str | None,
                  trials: int | None) -> Design:
    """``design`` with the adaptive session's fields (``adaptive``, ``trials``) set where ``adaptive``
    names parameters (:func:`cogtestbed.experiments._adaptive.adaptive_fields`; refused in one line
    for an experiment whose trials cannot be chosen freely)."""
    from cogtestbed.experiments._adaptive import adaptive_fields

    fields = adaptive_fields(exp, adaptive, trials)
    if not fields:
        return design
    return type(design)(**{**design.model_dump(), **fields})


def design_overrides(items: Sequence[str]) -> dict[str, str | None]:
    """``--design NAME=VALUE`` items as text for the design to coerce (a tuple or list field takes
    ``a,b`` or a JSON list); ``null`` is none (a field whose default is the paradigm's own)."""
    out: dict[str, str | None] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"expected NAME=VALUE for `design`, got {item!r}")
        if name.strip() in out:  # which value would win is a guess (as `parse_assignments` refuses)
            raise InputError(f"`design` sets {name.strip()} twice; give it once")
        out[name.strip()] = None if value.strip() == "null" else value.strip()
    return out


@public()
@derive_api(SimulateRequest, after=(keyword("on_subject_done"),))
def simulate(experiment: str | ExperimentSpec, agent: str, **options: Any) -> pd.DataFrame:
    """Simulate ``subjects`` synthetic subjects of ``agent`` (known parameters ``params``: a value
    or one per subject) and return their trial table (``cogtestbed simulate``).

    ``adaptive`` (parameter names, ``"k,temperature"`` or ``"all"``) with ``trials``: adaptive
    sessions of ``trials`` trials, each chosen to maximise the expected information on those
    parameters (:mod:`cogtestbed.inference.adaptive`; played step by step), where the
    experiment declares a design space (else refused in one line with the reason).

    ``population`` (``"human:NAME"``, a population file or a
    :class:`~cogtestbed.inference.population.Population`): the subjects' parameters are
    drawn from it (one posterior draw of its group parameters, subjects scattered by its SDs;
    :func:`population_params`); ``agent`` must be its model's agent and ``params`` may set only
    the agent's other parameters.

    ``lapse_invalid`` / ``lapse_random``: rates of invalid and uniformly random answers;
    ``forms``: prompt forms (``K`` or ids, as ``--forms``) and ``form_sd`` their offsets;
    ``output``: also write the table as Parquet with its manifest (``force`` overwrites).
    ``method``: ``"auto"`` (default: a small first run of a process runs the batch path's kernels as plain
    Python, compiling nothing; else the batch path: :func:`cogtestbed.simulation.resolve_method`),
    ``"batch"``, ``"interpreted"`` or ``"step"``; the table is the same, and the manifest records the path
    taken.

    Returns
    -------
    pandas.DataFrame
        The trial table: one row per trial, the agent's true parameters as ``param_*`` columns.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> len(trials), trials["subject"].nunique()
    (192, 2)
    >>> sorted(c for c in trials.columns if c.startswith("param_"))
    ['param_alpha_neg', 'param_alpha_pos', 'param_beta']
    """
    table, _ = _simulate_request(experiment, agent, options, keep=True)
    return cast("pd.DataFrame", table)  # kept: a table either way


@public()
@derive_api(SimulateRequest, after=(keyword("on_subject_done"),), required=("output",))
def simulate_file(experiment: str | ExperimentSpec, agent: str, **options: Any) -> int:
    """:func:`simulate` writing its table to ``output`` a chunk of subjects at a time, none of it kept:
    memory stays that of a chunk (:func:`cogtestbed.simulation.simulate_chunks`) at any subject count, and
    the file is the one :func:`simulate` writes.  Returns the trials written (``cogtestbed
    simulate``).

    Returns
    -------
    int
        The number of trials written to ``output`` (a Parquet file with its manifest beside it).

    Examples
    --------
    >>> import cogtestbed as ct
    >>> ct.simulate_file("instrumental-learning", "rw-pm", subjects=2, seed=1, output="trials.parquet")
    192
    """
    return _simulate_request(experiment, agent, options, keep=False)[1]


def _simulate_request(experiment: str | ExperimentSpec, agent: str, options: Mapping[str, Any],
                      keep: bool) -> tuple[pd.DataFrame | None, int]:
    """(the table, unless written and not ``keep``; its rows) of :func:`simulate`'s ``options``."""
    from cogtestbed.lapse import Lapse
    from cogtestbed.outputs import check_output_file, claim_file
    from cogtestbed.simulation import as_sessions, chosen_path

    req = build(SimulateRequest, {**options, "experiment": experiment, "agent": agent})
    who, ses = req.who, req.sessions
    subjects, seed, params, population, output, force = who.subject_count, who.seed, who.params, who.population, \
        req.output, req.force
    design, method, adaptive, trials, forms = ses.design, ses.simulation, ses.adaptive, ses.session_trials,\
        ses.assigned_forms
    lapse_invalid, lapse_random, form_sd = req.lapses.lapse_invalid, req.lapses.lapse_random, _form_sds(ses.form_sd)
    on_subject_done = options.get("on_subject_done")
    exp = get_experiment(experiment)
    agent_cls = exp.agent(agent)
    lapse = Lapse(lapse_invalid, lapse_random)
    given = _given_params(params)
    drawn: dict[str, Any] | None = None
    if population is not None:
        given, drawn = population_params(exp, agent, population, subjects, seed, given)
    fields = design_overrides(design) if isinstance(design, list | tuple) else design  # the command line's items
    design_obj = with_adaptive(exp, design_of(exp, cast("Design | Mapping[str, Any] | None", fields)), adaptive,
                               trials)
    form_design = _form_design(exp, forms, form_sd)
    out = None if output is None else Path(output)
    if out is not None:
        check_output_file(out, force, ".parquet")
    per = ses.subject_sessions or (exp.subject_sessions if form_design is None else 1)
    _warn_unidentified(exp, agent, not fields and adaptive is None and trials is None, per)
    given, subjects = _per_session(given, subjects, per, form_design)
    # the path resolved once the request is checked, counting the memory probe's one subject on it
    # (check_simulation_memory); a call refused from here on gives back the interpreted run it chose
    with chosen_path(method, exp, agent_cls, design_obj, _cost_params(agent_cls, given, form_sd), subjects + 1,
                     lapse) as path:
        if out is None:
            table = _simulate(exp, agent, subjects, seed, given, design_obj, path, on_subject_done, lapse,
                              form_design)
            table = table if per == 1 else as_sessions(table, per)
            return table, len(table)
        with claim_file(out, force):  # of two commands writing one file at once, one is refused
            return _simulate_streamed(exp, agent, subjects, seed, given, design_obj, path, on_subject_done, lapse,
                                      form_design, out, keep, per,
                                      _simulate_manifest(exp, agent, agent_cls, req, given, drawn, path, lapse,
                                                         design_obj, form_design))


def _form_design(exp: ExperimentSpec, forms: Any, form_sd: Mapping[str, float] | None) -> Any:
    """The forms a simulation assigns (None: the default prompt) with their offsets' SDs."""
    from cogtestbed.environments.forms import FormDesign, FormError, resolve_forms

    if forms is None and form_sd:
        raise FormError("`form_sd` needs `forms` (the forms whose offsets it draws)")
    form_ids = forms if isinstance(forms, str) or forms is None else ",".join(str(int(f)) for f in forms)
    return None if form_ids is None else FormDesign(resolve_forms(exp.prompt_forms, form_ids), dict(form_sd or {}))


def _per_session(given: dict[str, Any], subjects: int, per: int, form_design: Any) -> tuple[dict[str, Any], int]:
    """(parameters, rows of subjects) for ``per`` sessions a subject: each subject's parameters repeated once per
    session (the sessions are grouped back into subjects after the simulation)."""
    import numpy as np

    if per == 1:
        return given, subjects
    if form_design is not None:
        raise InputError("`sessions` above 1 with `forms`: a subject's sessions would be assigned different "
                         "forms; simulate one session a subject with forms")
    return {k: np.repeat(np.asarray(v, dtype=np.float64), per) if np.ndim(v) else v for k, v in given.items()}, \
        subjects * per


def _simulate_manifest(exp: ExperimentSpec, agent: str, agent_cls: Any, req: Any, given: dict[str, Any],
                       drawn: dict[str, Any] | None, method: str, lapse: Any, design_obj: Any,
                       form_design: Any) -> dict[str, Any]:
    """The manifest :func:`simulate` writes beside its table; ``method``: the path the run played."""
    return {
        "experiment": exp.name, "agent": agent, "params": manifest_params(agent_cls.parameters, given),
        "n_subjects": req.who.subject_count, "seed": req.who.seed, "method": method,
        "lapse": None if not lapse.active else {"invalid": lapse.invalid, "random": lapse.random},
        "design": design_obj.model_dump(),
        "forms": None if form_design is None else form_design.as_json(), "command": "simulate",
        **({"population": drawn} if drawn is not None else {}),
        "request": request_block(req),
    }


def _given_params(params: Mapping[str, Any] | Sequence[str] | None) -> dict[str, Any]:
    """``params`` as a mapping (the command line's ``NAME=VALUE`` items parsed)."""
    if params is None or isinstance(params, Mapping):
        return dict(params or {})
    from cogtestbed.parameters import parse_assignments

    return parse_assignments(list(params), "`params`")


def _cost_params(agent_cls: Any, given: Mapping[str, Any], form_sd: Mapping[str, float]) -> dict[str, Any]:
    """The parameters ``method="auto"``'s cost estimate sees: ``given``, with each parameter the forms
    shift (``form_sd`` > 0) one SD up its unconstrained scale.  The offsets are drawn later (simulate's
    ``shifted_params``) and leave nearly every subject off the given value, so the estimate must not price
    them at it: a belief subject shifted off κ = 1 or δ = 0 costs a miscalibrated subject's figure
    (``BeliefAgent.interpreted_cost_us``), not a calibrated one's."""
    import numpy as np

    out = dict(given)
    for name, sd in form_sd.items():
        if sd > 0.0 and name in agent_cls.parameters.names:
            p = agent_cls.parameters[name]
            with np.errstate(all="ignore"):
                z = np.asarray(p.to_unconstrained(out.get(name, p.default)), dtype=np.float64) + sd
                out[name] = np.asarray(p.to_constrained(z), dtype=np.float64)
    return out


def _form_sds(form_sd: Mapping[str, float] | Sequence[str] | None) -> dict[str, float]:
    """``form_sd`` as a mapping (the command line's ``PARAM=SD`` items parsed)."""
    if form_sd is None or isinstance(form_sd, Mapping):
        return dict(form_sd or {})
    from cogtestbed.environments.forms import parse_form_sd

    return dict(parse_form_sd(list(form_sd)))


def population_params(exp: ExperimentSpec, agent: str, population: Any, subjects: int, seed: int,
                      given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the agent's parameters, what the manifest records of the population) for ``subjects``
    drawn from ``population`` (:meth:`~cogtestbed.inference.population.Population.sample`, its
    own seed stream ``SeedSequence([seed, 52])``); ``agent`` must be the population's model's
    agent, ``given`` may not set a parameter the population draws."""
    import numpy as np

    from cogtestbed.inference.population import load_population

    pop = load_population(population, use=True)
    model = exp.model(pop.model) if pop.experiment == exp.name else None
    if model is None:
        raise InputError(f"population {pop.name} is of experiment {pop.experiment}, not {exp.name}")
    gen = exp.generator(pop.model)
    if agent != gen.agent:
        raise InputError(f"population {pop.name} is of model {pop.model}, simulated by agent {gen.agent}: use "
                         f"`agent` {gen.agent}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 52]))
    values, subj = pop.sample(model.parameters, subjects, rng)
    drawn = gen.agent_params(subj)
    clash = sorted(set(given) & set(subj) | set(given) & set(drawn) - set(gen.fixed))
    if clash:
        raise InputError(f"population {pop.name} draws {', '.join(clash)}: drop `params` for "
                         f"{'it' if len(clash) == 1 else 'them'}")
    warning = pop.use_warning()
    record = {"name": pop.name, "model": pop.model, "source": pop.source, "converged": pop.fit.get("converged"),
              **({"warning": warning} if warning else {}), **{k: v for k, v in values.items() if k.endswith("_pop")}}
    return {**drawn, **given}, record


def manifest_params(parameters: Any, given: Mapping[str, Any]) -> dict[str, float | list[float]]:
    """The simulated parameters as a manifest records them: each a number, or its list of one value
    per subject where ``given`` has one (what :func:`simulate` accepts, with or without ``output``)."""
    arrays = parameters.validate_array(given)
    return {name: float(a) if a.size == 1 else [float(v) for v in a.ravel()] for name, a in arrays.items()}


def _simulate(exp: ExperimentSpec, agent: str, subjects: int, seed: int, given: dict[str, Any], design_obj: Any,
              method: Literal["batch", "interpreted", "step"], on_subject_done: Any, lapse: Any,
              form_design: Any) -> pd.DataFrame:
    """The simulation of :func:`simulate`, its memory checked first."""
    from cogtestbed.simulation import check_simulation_memory
    from cogtestbed.simulation import simulate as run_simulation

    check_simulation_memory(exp, agent, subjects, given, design_obj, method=method)
    return run_simulation(exp, agent, subjects, seed, given, design=design_obj, method=method,
                          on_subject_done=on_subject_done, lapse=lapse if lapse.active else None,
                          forms=form_design)


def _simulate_streamed(exp: ExperimentSpec, agent: str, subjects: int, seed: int, given: dict[str, Any],
                       design_obj: Any, method: Literal["batch", "interpreted", "step"], on_subject_done: Any,
                       lapse: Any, form_design: Any, out: Path, keep: bool, per: int,
                       manifest: dict[str, Any]) -> tuple[pd.DataFrame | None, int]:
    """The simulation of :func:`simulate` written to ``out`` in chunks of subjects (a chunk's memory
    checked first), kept only where ``keep``: (the table or None, its rows).  ``per`` > 1: ``subjects``
    counts sessions, ``per`` a subject (:func:`~cogtestbed.simulation.as_sessions`; a chunk holds whole
    subjects)."""
    from cogtestbed.registry import write_trial_chunks
    from cogtestbed.simulation import (
        as_sessions,
        check_simulation_memory,
        check_streamed_simulation,
        chunk_subjects,
        simulate_chunks,
    )

    chunk = min(subjects, chunk_subjects(exp, agent, given, design_obj, method))
    chunk = max(per, chunk // per * per)
    check_streamed_simulation(exp, agent, subjects, chunk, out.parent, given, design_obj, method=method)
    if keep:
        check_simulation_memory(exp, agent, subjects, given, design_obj, method=method)
    chunks = simulate_chunks(exp, agent, subjects, seed, given, design=design_obj, method=method,
                             on_subject_done=on_subject_done, lapse=lapse if lapse.active else None,
                             forms=form_design, chunk=chunk)
    if per > 1:
        chunks = (as_sessions(part, per) for part in chunks)
    rows, table = write_trial_chunks(chunks, out, manifest, keep=keep)
    return table, rows


def read_table(experiment: str | ExperimentSpec, table_or_path: pd.DataFrame | str | os.PathLike[str],
               source: str = "auto", sessions: str | None = None) -> tuple[pd.DataFrame, str]:
    """(the trial table, its source): a table as given (validated against the experiment's
    schema), or a file read as a trial table or through one of the experiment's importers
    (``sessions``: :meth:`~cogtestbed.experiments.spec.ExperimentSpec.read`)."""
    import pandas as pd

    from cogtestbed.schema import validate_trials

    exp = get_experiment(experiment)
    if isinstance(table_or_path, pd.DataFrame):
        if sessions is not None:
            raise InputError("sessions applies to published files read through an importer, not to a table")
        return validate_trials(table_or_path, exp.schema, exp.name), "table"
    if not Path(table_or_path).exists():
        raise DataError(f"no such file: {table_or_path}")
    return exp.read(Path(table_or_path), source, sessions)


@public(paths=('table_or_path',))
@derive_api(MetricsRequest, more_keywords=True)
def metrics(experiment: str | ExperimentSpec | None, table_or_path: pd.DataFrame | str | os.PathLike[str],
            **options: Any) -> MetricsReport:
    """The experiment's published metrics of a trial table or file, overall and per unit
    (``cogtestbed metrics``), as a plain dict typed :class:`~cogtestbed.metrics_result.MetricsReport`
    (``ct.MetricsReport``): the :class:`~cogtestbed.metrics_result.MetricsResult` keys
    (``metrics``, ``per_subject`` or ``per_run``, ``n_invalid``, ``flags``, ...) with the
    experiment, source and options, and for a table with a ``form`` column ``prompt_forms`` (each
    form's metrics and the between-form SDs).  ``experiment`` None: the file's (its experiment
    column, or the experiment whose importer recognises it).  ``options`` are the experiment's own
    metrics options (:class:`~cogtestbed.metrics_result.MetricOption`; a string is converted as on
    the command line, a dash in a name read as an underscore).  ``sessions``: ``split`` numbers a
    second judgement of a condition within one run of a file without trial key (CogBench
    probabilistic reasoning) as that run's next session; the default (None, ``refuse``) refuses
    such a file in one line (:func:`cogtestbed.data.rows.number_sessions`).

    Returns
    -------
    MetricsReport
        A ``dict``: ``metrics`` (the experiment's metrics over the table), ``per_run``/``per_subject``,
        ``n_invalid``, ``flags`` and what was read.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> report = ct.metrics("instrumental-learning", trials)
    >>> report["metrics"]["n_runs"], round(report["metrics"]["performance"], 3)
    (2, 0.62)
    """
    req = build(MetricsRequest, options)
    source, sessions = req.source, req.sessions
    exp = get_experiment(experiment_for(experiment, table_or_path))
    converted: dict[str, Any] = {}
    for name, value in options.items():
        if name in _METRICS_REQUEST_KEYWORDS:
            continue
        option = exp.metric_option(name.replace("-", "_"))
        converted[option.name] = option.convert(value) if isinstance(value, str) else value
    table, detected = read_table(exp, table_or_path, source, sessions)
    result: MetricsReport = {"experiment": exp.name, "source": detected}
    if not isinstance(table_or_path, _frame_type()):
        result["path"] = str(table_or_path)
    if converted:
        result["options"] = converted
    from cogtestbed.progress import current, unit_progress

    unit = exp.metrics.unit.removeprefix("per_") + "s"
    # a long computation says where it is (a line every few seconds, where a reporter listens: the CLI)
    what = f"metrics of {exp.name}"
    label = f"{what} on {table['subject'].nunique():,} {unit} ({len(table):,} rows)" if current() is not None else what
    with unit_progress(label) as progress:
        result.update(exp.metrics(table, **converted))
        if "form" in table.columns:
            from cogtestbed.inference.form_effects import form_metrics

            result["prompt_forms"] = form_metrics(table, lambda t: exp.metrics(t, **converted), result)
        if progress is not None:  # the closing line counts what the result holds
            progress.closing(f"{what}: done, {len(result.get(exp.metrics.unit) or []):,} rows of "
                             f"{exp.metrics.unit} from {len(table):,} trial rows")
    return result


def experiment_for(experiment: str | ExperimentSpec | None, table_or_path: pd.DataFrame | str | os.PathLike[str],
                   model: str | None = None) -> str | ExperimentSpec:
    """The experiment of a call that may leave it out (``experiment`` None): a table's
    ``experiment`` column (one name), a file's (its column, or the importer that recognises it),
    else the one experiment declaring ``model`` (:func:`cogtestbed.registry.experiment_of`)."""
    from cogtestbed.registry import experiment_of

    if experiment is not None:
        return experiment
    if not isinstance(table_or_path, _frame_type()):
        return experiment_of(None, Path(table_or_path), model)
    from cogtestbed.schema import table_experiments

    names = table_experiments(table_or_path)
    if len(names) == 1:
        return names[0]
    if model is not None and not names:
        return experiment_of(None, model=model)
    raise InputError(f"the table holds {'trials of ' + ', '.join(names) if names else 'no trial'}: name its "
                     "experiment")


def _frame_type() -> type:
    import pandas as pd

    return pd.DataFrame


@public(paths=('table_or_path',))
@derive_api(FitTableRequest)
def fit(experiment: str | ExperimentSpec | None, table_or_path: pd.DataFrame | str | os.PathLike[str], model: str,
        **options: Any) -> pd.DataFrame | BayesFit:
    """Fit ``model`` to a trial table or file (``cogtestbed fit``).

    ``unit`` says what one fitted unit is (:mod:`cogtestbed.api.fit_units`): ``subject`` (each
    subject of the table with its sessions), ``session``, ``agent`` (the runs of each agent pooled
    as one participant, CogBench's convention for an LLM's runs) or ``auto`` (default, as the
    command line's): ``agent`` where the experiment pools sessions, unless the table's simulated
    subjects have different true parameters, which are never pooled; ``subject`` otherwise.
    ``separate_runs`` is ``unit="subject"`` (``--separate-runs``).  Every result states its units:
    the MLE table's ``attrs["units"]`` (unit, n_units, unit_reason) and its ``unit`` and
    ``n_sessions`` columns; a hierarchical fit's ``.units``.

    ``method="mle"``: one row per unit (estimates, NLL, AIC, BIC, convergence, and whether the
    unit's answers identify the estimate: ``identified``, ``null_reason``, see
    :meth:`~cogtestbed.inference.base.CognitiveModel.fit_identified`: a unit whose valid answers
    take one value has NaN estimates; an estimate at a bound, on a flat profile or shared exactly by
    units whose answers differ keeps its values and is flagged);
    ``method="hierarchical"``: the posterior, an object with ``.idata`` (arviz InferenceData),
    ``.diagnostics`` and ``.subject_summary()``, sampled on the units whose answers identify the
    model (the others in ``.unidentified`` and ``.flags``, null in the subject summary; a table
    where no unit's answers do is refused, ``DegenerateAnswers``).  ``lapse``: the
    fitted lapse term (``none``, ``fit`` or a fixed rate, as ``--lapse``).  ``experiment`` None:
    the table's (its experiment column, or the importer that recognises the file), else the one
    experiment declaring ``model``.  ``sessions``: as :func:`metrics`'s.

    A table run across two or more prompt forms (its ``form`` column) is fitted hierarchically with
    crossed subject and form effects (:func:`~cogtestbed.inference.form_hierarchical.fit_forms_hierarchical`)
    on ``form_effects`` (parameter names, or ``"P1,P2"`` as ``--form-effects``; default: every
    parameter); the fit's ``.form_sd`` holds each between-form SD's posterior (mean, median,
    interval, R-hat, ESS).  Pooled runs are pooled within a form.

    Returns
    -------
    pandas.DataFrame or BayesFit
        ``method="mle"``: one row per unit; ``method="hierarchical"``: a :class:`BayesFit`.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> mle = ct.fit("instrumental-learning", trials, model="rw-pm")
    >>> list(mle["subject"]), list(mle["unit"])
    ([0, 1], ['subject', 'subject'])
    >>> bool(mle["alpha_pos"].between(0, 1).all()), bool(mle["nll"].gt(0).all())
    (True, True)
    """
    req = build(FitTableRequest, options)
    terms, data, sampling = req.terms, req.units, req.sampling
    exp = get_experiment(experiment_for(experiment, table_or_path, model))
    cog = fit_model(exp, model, terms.method, terms.lapse)
    table, _, units = fit_table(exp, table_or_path, data.source, data.unit, data.sessions, data.separate_runs)
    _warn_fit_sessions(exp, model, table)
    if terms.method == "mle":
        return with_units(cog.fit_identified(table), table, units)
    form_effects = terms.form_effects.split(",") if isinstance(terms.form_effects, str) else terms.form_effects
    res = sample_hierarchical(cog, table, form_effects, draws=sampling.draws, chains=sampling.chains,
                              seed=sampling.seed, max_draws=sampling.max_draws)
    if sampling.posterior_predictive:
        res.with_posterior_predictive(sampling.seed)
    res.units = units.as_dict()
    return res


def _warn_unidentified(exp: ExperimentSpec, agent: str, default_design: bool, sessions: int) -> None:
    """Warn once where a subject of ``sessions`` sessions of the default design does not identify a parameter of
    the model the agent simulates (:func:`cogtestbed.identified_sessions.warn_unidentified`)."""
    from cogtestbed.identified_sessions import warn_unidentified

    model = next((m for m, gen in exp.generators.items() if gen.agent == agent), None)
    if default_design and model is not None:
        warn_unidentified(exp.name, model, sessions, "simulated anyway")


def _warn_fit_sessions(exp: ExperimentSpec, model: str, table: pd.DataFrame) -> None:
    """Warn once where the table's subject with the fewest sessions would not identify a parameter of ``model``
    at the experiment's default design, rank-deficient or not identified by the design check's rule
    (:func:`cogtestbed.identified_sessions.warn_unidentified`)."""
    from cogtestbed.identified_sessions import warn_unidentified

    if len(table) and {"subject", "session"} <= set(table.columns):
        fewest = int(table.groupby("subject", sort=False)["session"].nunique().min())
        warn_unidentified(exp.name, model, fewest, "fitted anyway (its estimates are not identified)",
                          "fitted anyway (expect r under 0.89 between true values and their estimates)")


def with_units(fits: pd.DataFrame, table: pd.DataFrame, units: Any) -> pd.DataFrame:
    """An MLE table with its units stated: the ``unit`` and ``n_sessions`` (sessions pooled in the
    unit) columns and ``attrs["units"]`` (:class:`~cogtestbed.api.fit_units.FitUnits`)."""
    sessions = table.groupby("subject", sort=False)["session"].nunique()
    out = fits.assign(unit=units.unit, n_sessions=fits["subject"].map(sessions).astype("int64"))
    out.attrs["units"] = units.as_dict()
    return out


def sample_hierarchical(cog: Any, table: pd.DataFrame, form_effects: Sequence[str] | None, *, draws: int,
                        chains: int, seed: int, max_draws: int | None,
                        on_start: Callable[[pd.DataFrame], None] | None = None) -> Any:
    """The hierarchical posterior of ``cog`` on ``table``: with crossed subject and form effects
    where the table was run across prompt forms, else the model's own hierarchical fit; either on
    the subjects whose answers identify the model (the degenerate-answer rule of the MLE fits:
    :func:`~cogtestbed.inference.hierarchical.on_identified_subjects`; the others in the fit's
    ``unidentified`` and ``flags``, and a table without one identified subject refused).
    ``on_start(table)`` is called with the table sampled, just before sampling."""
    from cogtestbed.inference.form_hierarchical import fit_forms_hierarchical, has_forms
    from cogtestbed.inference.hierarchical import fit_hierarchical, on_identified_subjects

    forms = has_forms(table)
    if form_effects and not forms:
        raise InputError("`form_effects` needs a table run across two or more prompt forms (its 'form' column)")

    def sample(kept: pd.DataFrame) -> Any:
        if on_start is not None:
            on_start(kept)
        if forms:
            return fit_forms_hierarchical(cog, kept, form_effects, draws=draws, chains=chains, seed=seed,
                                          max_draws=max_draws)
        return fit_hierarchical(cog, kept, draws=draws, tune=draws, chains=chains, seed=seed, max_draws=max_draws)

    return on_identified_subjects(cog, table, sample)


def fit_model(exp: ExperimentSpec, model: str, method: str, lapse: str = "none") -> Any:
    """The experiment's model ``model`` with the lapse term ``lapse`` (``--lapse``), checked to be
    fittable by ``method`` (``mle``, or ``hierarchical`` for a model with a PyMC version)."""
    from cogtestbed.inference.base import lapse_option, with_lapse

    cog = with_lapse(exp.model(model), lapse_option(lapse))
    if method not in ("mle", "hierarchical"):
        raise InputError(f"`method` must be mle or hierarchical, got {method!r}")
    if method == "hierarchical" and not cog.has_pymc:
        raise InputError(f"model {cog.name} has no PyMC version: use `method` mle")
    return cog


def fit_table(exp: ExperimentSpec, table_or_path: pd.DataFrame | str | os.PathLike[str], source: str = "auto",
              unit: str = "auto", sessions: str | None = None,
              separate_runs: bool = False) -> tuple[pd.DataFrame, str, Any]:
    """(the table to fit, each subject one unit; its source; the stated units,
    :class:`~cogtestbed.api.fit_units.FitUnits`): ``unit`` as :func:`fit`'s
    (:func:`~cogtestbed.api.fit_units.choose_units`; ``sessions``: :func:`read_table`)."""
    from cogtestbed.api.fit_units import choose_units

    table, detected = read_table(exp, table_or_path, source, sessions)
    fitted, units = choose_units(exp, table, unit, separate_runs)
    return fitted, detected, units


@public(paths=('data_dir',))
@derive_api(CheckRequest)
def check(spec_or_name: str | ExperimentSpec, **options: Any) -> ConformanceReport:
    """Run the conformance suite on an experiment (``cogtestbed check``): a registered name or a
    spec object defined anywhere (its schema and environment come from the spec).  ``data_dir``:
    the published data of the importer check (default ``$COGTESTBED_DATA_DIR``).  Returns the
    report (``.passed``, ``.results``, ``.failures``, ``.table()``); a failing check does not
    raise (``report.raise_for_failures()`` does).

    Returns
    -------
    ConformanceReport
        One :class:`CheckResult` per check: ``.passed``, ``.failures``, ``.table()``.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> report = ct.check("instrumental-learning", checks=["spec_declaration"])
    >>> report.passed, [r.status for r in report.results]
    (True, ['passed'])
    """
    from cogtestbed.conformance.config import DATA_DIR_ENV
    from cogtestbed.conformance.suite import check_experiment

    req = build(CheckRequest, options)
    quick, data_dir, checks = req.quick, req.data_dir, req.checks
    spec = get_experiment(spec_or_name)
    if data_dir is None and os.environ.get(DATA_DIR_ENV):
        data_dir = os.environ[DATA_DIR_ENV]
    return check_experiment(spec, quick=quick, data_dir=None if data_dir is None else Path(data_dir),
                            checks=checks, raise_on_failure=False)

"""``cogtestbed plan``: the cheapest design reaching a target power, priced in calls, tokens and dollars.

The target takes the three forms of ``cogtestbed power``: a model parameter or contrast
(``--model M --effect NAME=SIZE``), a metric difference between two settings (``--metric M
--compare AGENT:p=v AGENT:p=v``, e.g. two LLMs' model-basedness) and a statistical test the
metrics function reports (``--test KEY --agent AGENT:p=v``).  ``-o DIR`` writes ``plan.json``
(executed by ``cogtestbed run --plan DIR/plan.json``), ``frontier.png`` and ``report.html``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cogtestbed.cli.app import app, console, console_err, print_json
from cogtestbed.cli.simulate import FormSdOpt

RangeOpt = Annotated[str | None, typer.Option(help="LO:HI or a comma list.")]


def _plan_forms(exp: Any, forms: str, form_sd: list[str] | None, model: str | None, effect: str | None,
                llm: list[str] | None, pilot: Path | None, param: list[str] | None, base: list[str] | None,
                power: float, level: float, seed: int, design: list[str] | None, prices: Path | None,
                allow_unpriced: bool, max_tokens: int | None, temperature: float | None, reask: int,
                as_json: bool) -> None:
    """``plan --forms``: parse, call :func:`~cogtestbed.validation.design.form_plan.plan_forms_study`, print."""
    from cogtestbed.cli.simulate import _design_overrides
    from cogtestbed.environments.forms import FormError, parse_form_sd
    from cogtestbed.experiments.spec import resolve_temperature
    from cogtestbed.parameters import parse_assignments
    from cogtestbed.registry import read_trials
    from cogtestbed.validation.design.form_plan import plan_forms_study
    from cogtestbed.validation.design.plan import Pricer

    if model is None or effect is None:
        raise FormError("plan --forms needs --model and --effect NAME=SIZE")
    parts = [p.strip() for p in forms.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise FormError(f"--forms takes counts of forms, e.g. 1,2,4,8, got {forms!r}")
    eff = next(iter(parse_assignments([effect], "--effect").items()))
    fields = _design_overrides(design or [])
    design_obj = exp.design_cls(**fields) if fields else None
    pricer = None
    if llm:  # a session priced by the first LLM
        pricer = Pricer(exp, (llm[0],), seed=seed, max_tokens=max_tokens,
                        temperature=resolve_temperature(exp.decoding, temperature)[0], reask=reask, prices=prices,
                        allow_unpriced=allow_unpriced)
    pilot_table = None if pilot is None else read_trials(pilot / "trials.parquet" if pilot.is_dir() else pilot)
    params = {**parse_assignments(base or [], "--base"), **parse_assignments(param or [], "--param")}
    result = plan_forms_study(exp.name, model, eff, [int(p) for p in parts], parse_form_sd(form_sd), params=params,
                              target=power, alpha=level, pricer=pricer, pilot=pilot_table, seed=seed,
                              design=design_obj)
    if as_json:
        print_json(result)
        return
    _print_forms_plan(result, exp.name, model, eff, power)


def _print_forms_plan(result: dict[str, Any], experiment: str, model: str, eff: tuple[str, float],
                      power: float) -> None:
    from rich.table import Table

    from cogtestbed.formatting import num

    sc = result["scales"]
    console.print(f"{experiment} {model}: {eff[0]} = {eff[1]:g} at power {power:g}; effect SD between forms τ = "
                  f"{num(sc['tau'])}, one subject's σ = {num(sc['sigma'])} ({sc['source']})", highlight=False)
    table = Table(title="forms x subjects (forms-aware test: t on the form means)")
    for col in ("forms", "subjects/form", "subjects", "power", "dollars", "note"):
        table.add_column(col)
    for r in result["designs"]:
        table.add_row(str(r["forms"]), str(r["subjects_per_form"] or "-"), str(r["subjects"] or "-"), num(r["power"]),
                      num(r["dollars"]), r.get("why", ""))
    console.print(table)
    one = result["one_form"]
    if one is not None:
        console.print(f"one form: cannot: {one['why']} (the naive test would need {one['naive_subjects']} subjects; "
                      f"{one['naive_note']})", highlight=False)
    chosen = result["chosen"]
    console.print("chosen: " + ("none reaches the target" if chosen is None else
                                f"{chosen['forms']} forms x {chosen['subjects_per_form']} subjects"), highlight=False)


@app.command()
def plan(
    experiment: Annotated[str, typer.Argument(help="Experiment name, e.g. instrumental-learning.")],
    llm: Annotated[list[str] | None, typer.Option(
        "--llm", help="BACKEND:MODEL whose prices and tokenizer cost the design (twice for a metric "
        "difference between two LLMs). Required for a power target; optional with --precision (default: "
        "cost in trials).")] = None,
    model: Annotated[str | None, typer.Option(help="Model of an --effect target, e.g. rw-pm.")] = None,
    effect: Annotated[str | None, typer.Option(help="NAME=SIZE: a model parameter or contrast.")] = None,
    metric: Annotated[str | None, typer.Option(help="Headline metric whose difference is detected.")] = None,
    compare: Annotated[tuple[str, str] | None, typer.Option(
        help="Two settings of one agent, AGENT:p=v,... AGENT:p=v,... (with --metric).")] = None,
    test: Annotated[str | None, typer.Option(help="Key of the metrics result holding a test.")] = None,
    agent: Annotated[str | None, typer.Option(help="AGENT[:p=v,...] under which --test runs.")] = None,
    precision: Annotated[str | None, typer.Option(
        help="PARAM=HALFWIDTH (with --model): plan for precision instead of power, the cheapest design where "
             "P(|estimate - truth| <= HALFWIDTH) >= --assurance for one subject's MLE of PARAM. "
             "Default: none.")] = None,
    assurance: Annotated[float, typer.Option(help="Assurance Q of a --precision target.")] = 0.9,
    power: Annotated[float, typer.Option(help="Target power.")] = 0.8,
    level: Annotated[float, typer.Option(help="Test level alpha (two-sided).")] = 0.05,
    subjects: Annotated[str | None, typer.Option(help="Subjects range LO:HI (model-level target; default "
                                                      "10:200).")] = None,
    runs: Annotated[str | None, typer.Option(help="Runs range: units per setting (metric/test target; default "
                                                  "10:200) or sessions per subject (pooled experiments).")] = None,
    trials: Annotated[str | None, typer.Option(help="Range of trials in one run of the whole design (its n_trials), "
                                                    "LO:HI or a comma list, reached through the experiment's trials "
                                                    "field (default: the design's count to 5x). The same in the "
                                                    "design's terms: --design FIELD=a,b,c.")] = None,
    design: Annotated[list[str] | None, typer.Option("--design", help="Design field NAME=VALUE (repeatable); "
                                                     "NAME=a,b,c on an integer field (n_contexts, trials_per_session, "
                                                     "n_reps, ...) gives the values searched: one list at a time, the "
                                                     "other fields fixed. Default: the design's defaults.")] = None,
    base: Annotated[list[str] | None, typer.Option("--base", help="Population median NAME=VALUE.")] = None,
    sd_between: Annotated[float, typer.Option(help="Between-subject SD, unconstrained scale.")] = 0.5,
    param: Annotated[list[str] | None, typer.Option("--param", help="Agent parameter NAME=VALUE.")] = None,
    prices: Annotated[Path | None, typer.Option(help="Price table (TOML) overriding the defaults.")] = None,
    allow_unpriced: Annotated[bool, typer.Option(
        "--allow-unpriced", help="Plan a model without a price in calls and tokens only (without it such a "
        "plan is refused).")] = False,
    batch: Annotated[bool, typer.Option(
        "--batch", help="Price the runs in the provider's batch mode (run --batch): the table's batch_discount "
        "off, the standard price shown beside it.")] = False,
    max_cost: Annotated[float | None, typer.Option(min=0.0, help="Refuse designs costing more (USD).")] = None,
    invalid_rate: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Expected share of invalid answers (simulated as lapses).")] = None,
    random_rate: Annotated[float, typer.Option(min=0.0, max=1.0, help="Expected share of random answers.")] = 0.0,
    pilot: Annotated[Path | None, typer.Option(
        help="Pilot run directory: its invalid rate, tokens per call and fitted parameters.")] = None,
    mc_se: Annotated[float, typer.Option(help="Largest Monte-Carlo SE of the chosen design's power.")] = 0.03,
    max_tokens: Annotated[int | None, typer.Option(
        min=1, show_default="the experiment's own answer setting, as run",
        help="Most tokens per answer (as run).")] = None,
    reask: Annotated[int, typer.Option(min=0, help="Re-asks after an unparseable answer (as run).")] = 0,
    temperature: Annotated[float | None, typer.Option(
        min=0.0, help="Sampling temperature of the run (default: the experiment's paper's, else 0).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the simulations and of the planned run.")] = 0,
    workers: Annotated[int | None, typer.Option(help="Local worker processes (default: CPUs).")] = None,
    looks: Annotated[int | None, typer.Option(help="Group-sequential plan: looks at equal shares of the size axis "
                                                   "(2 or more).")] = None,
    spending: Annotated[str, typer.Option(help="Alpha-spending of a sequential plan: obrien-fleming or pocock.")
                        ] = "obrien-fleming",
    futility: Annotated[bool, typer.Option(help="Non-binding futility bounds (beta-spending) too.")] = False,
    null: Annotated[str | None, typer.Option(help="AGENT[:p=v,...] under which a test's null holds (sequential "
                                                  "plan of a test).")] = None,
    seq_sims: Annotated[int | None, typer.Option(min=10, help="Simulated sequential studies under the effect; default: "
                        "as many as give --mc-se at the target power.")] = None,
    null_sims: Annotated[int | None, typer.Option(min=10, help="Simulated null studies of a sequential plan: as many "
                         "calibrate its bounds and as many others measure its type-I error and the fixed design's "
                         "(default: 1,000, or --seq-sims if more).")] = None,
    lapse_fit: Annotated[str | None, typer.Option(help="Plan with the lapse-aware fit the researcher will use "
                         "(model targets): none, fit (a lapse rate fitted per subject) or fixed=E. Default: none.")
                         ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as one JSON object.")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write plan.json and report.html here.")] = None,
    forms: Annotated[str | None, typer.Option(
        "--forms", help="Counts of prompt forms to plan over, e.g. 1,2,4,8 (with --model, --effect and --form-sd "
        "or --pilot): forms x subjects chosen jointly by dollars.")] = None,
    form_sd: FormSdOpt = None,
) -> None:
    """Plan a study: the cheapest design that reaches the target power, in calls, tokens and dollars."""
    import os

    from cogtestbed.cli.studies import _power_spec
    from cogtestbed.experiments.spec import resolve_temperature
    from cogtestbed.parameters import parse_assignments
    from cogtestbed.progress import heartbeat
    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.design.plan import Planner, Pricer, design_axes
    from cogtestbed.validation.design.plan_report import plan_payload
    from cogtestbed.validation.studies.report import check_output_target
    from cogtestbed.validation.studies.study_kinds import PlannedStudy

    exp = get_experiment(experiment)
    if forms is not None:
        _plan_forms(exp, forms, form_sd, model, effect, llm, pilot, param, base, power, level, seed,
                    design, prices, allow_unpriced, max_tokens, temperature, reask, as_json)
        return
    _check_sequential_options(looks, spending, futility, null, seq_sims, precision, test, null_sims)
    llm = list(llm or [])
    effect, target = _target(llm, model, effect, metric, test, precision)
    given_base, given_params = parse_assignments(base or []), parse_assignments(param or [])
    fixed, trials, field_axis = _searched(exp, design, trials)
    common: dict[str, Any] = {"subjects": (1,), "runs": (1,), "trials": (None,), "design": fixed,
                              "reps": 1, "seed": seed, "level": level, "method": "mle", "base": given_base,
                              "sd_between": sd_between, "params": given_params, "draws": 500, "tune": 500,
                              "chains": 2}
    spec = _power_spec(model or experiment, experiment if effect is not None else None, effect, metric, compare,
                       test, agent, common)
    assert isinstance(spec, PlannedStudy)  # a power study of one of its three forms
    spec = _with_lapse_fit(spec, lapse_fit)
    if output is not None:
        check_output_target(output)  # created only when the plan is written
    spec, pilot_info = _pilot_and_lapses(spec, exp, pilot, llm, given_base, given_params, invalid_rate, random_rate)
    if target is not None:
        _plan_precision(spec, exp, target[0], target[1], assurance, runs, trials, llm, seed, max_tokens,
                        temperature, reask, prices, as_json, output, field_axis, allow_unpriced, batch)
        return
    size, others = design_axes(spec, exp, subjects, runs, trials, field_axis)
    pricer = Pricer(exp, tuple(llm) * (2 if spec.kind == "metric-power" and len(llm) == 1 else 1), seed=seed,
                    max_tokens=max_tokens, temperature=resolve_temperature(exp.decoding, temperature)[0],
                    reask=reask, prices=prices, allow_unpriced=allow_unpriced, batch=batch)
    quiet = as_json and not console_err.is_terminal
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    planner = Planner(spec, pricer, size, others, target=power, max_cost=max_cost, mc_se=mc_se, workers=n_workers,
                      extend_to=_extend_to(size.name, subjects, runs),
                      on_progress=None if quiet else lambda msg: console_err.print(f"[dim]{msg}[/]", highlight=False))
    if not quiet:
        _say_look_estimate(planner)
    with heartbeat(lambda line: console_err.print(line, highlight=False, markup=False, soft_wrap=True)):
        result = planner.plan()
        payload = plan_payload(result, pricer, exp, max_cost, pilot_info)
        if looks is not None:
            from cogtestbed.validation.design.seqplan import default_sims

            sims = seq_sims if seq_sims is not None else default_sims(power, mc_se)
            _attach_looks(payload, result, pricer, exp, looks, spending, futility, sims, n_workers, null,
                          None if quiet else planner.say, null_sims)
    _emit_plan(payload, result.size_name, output, as_json)


def _extend_to(size_name: str, subjects: str | None, runs: str | None) -> int | None:
    """How far the size axis may grow: a default range to :data:`MAX_EXTENDED_SIZE` when needed,
    a range the user gave not at all."""
    from cogtestbed.validation.design.plan import MAX_EXTENDED_SIZE

    given = subjects if size_name == "subjects" else runs
    return MAX_EXTENDED_SIZE if given is None else None


def _with_lapse_fit(spec: Any, lapse_fit: str | None) -> Any:
    """The study fitted with ``--lapse-fit`` (a model target's per-subject MLE with a lapse term, as
    ``cogtestbed fit --lapse`` fits it); refused in one line for a metric or test target."""
    if lapse_fit is None:
        return spec
    from cogtestbed.inference.base import lapse_option
    from cogtestbed.validation.studies.study_kinds import PowerStudy

    if not isinstance(spec, PowerStudy):
        raise ValueError("--lapse-fit sets how a model target's per-subject MLE is fitted: it goes with --model and "
                         "--effect")
    return spec.model_copy(update={"lapse_fit": lapse_option(lapse_fit)})


def _searched(exp: Any, design: list[str] | None, trials: str | None) -> tuple[dict[str, Any], str | None, Any]:
    """(fixed design fields, the trials searched as ``--trials`` text, the searched design field's
    axis or None) of ``--design`` and ``--trials`` (:func:`~cogtestbed.validation.studies.sizes.plan_design`)."""
    from cogtestbed.validation.design.plan import Axis
    from cogtestbed.validation.studies.sizes import plan_design

    fixed, swept, searched = plan_design(exp, design)
    if swept != (None,):  # --design TRIALS_FIELD=a,b,c: the trial counts searched
        if trials is not None:
            raise ValueError("--trials and a --design list both size the run; give one of them")
        trials = ",".join(str(t) for t in swept)
    return fixed, trials, None if searched is None else Axis(*searched)


def _attach_looks(payload: dict[str, Any], result: Any, pricer: Any, exp: Any, looks: int, spending: str,
                  futility: bool, seq_sims: int, workers: int, null: str | None, say: Any,
                  null_sims: int | None = None) -> None:
    """The sequential plan of ``plan --looks`` at the chosen design (its searched field fixed)."""
    import dataclasses

    from cogtestbed.validation.design.plan import spec_at
    from cogtestbed.validation.design.seqplan import attach_sequential

    result = dataclasses.replace(result, spec=spec_at(result.spec, result.chosen.point))
    attach_sequential(payload, result, pricer, exp, looks, spending, futility,  # type: ignore[arg-type]
                      seq_sims, workers, null, say=say, null_sims=null_sims)


def _check_sequential_options(looks: int | None, spending: str, futility: bool, null: str | None,
                              seq_sims: int | None, precision: str | None, test: str | None,
                              null_sims: int | None = None) -> None:
    """The options of a sequential plan go with ``--looks``, and ``--looks`` with a power target:
    an option that would be ignored is refused in one line."""
    if looks is None and null_sims is not None:
        raise ValueError("--null-sims shapes a sequential plan: add --looks K (or drop it)")
    if looks is None:
        given = [name for name, on in (("--spending", spending != "obrien-fleming"), ("--futility", futility),
                                       ("--null", null is not None), ("--seq-sims", seq_sims is not None)) if on]
        if given:
            raise ValueError(f"{', '.join(given)} shape a sequential plan: add --looks K (or drop them)")
        return
    from cogtestbed.validation.design.seqplan import check_looks

    check_looks(looks, spending)
    if precision:
        raise ValueError("--looks plans a sequential test of a target power; --precision plans a fixed design's "
                         "estimate: use one of them")
    if null is not None and test is None:
        raise ValueError("--null names the agent under which a test's null holds: it goes with --test")


def _say_look_estimate(planner: Any) -> None:
    """The plan's up-front estimate per look (:func:`cogtestbed.validation.design.estimate.plan_look_line`)."""
    from cogtestbed.validation.design.estimate import plan_look_line
    from cogtestbed.validation.design.plan import DECIDE_MAX_SIMS, FIRST_BATCH

    size, others = planner.size, planner.others
    smallest = planner.point(size.values[0], {a.name: a.values[0] for a in others})
    largest = planner.point(size.values[-1], {a.name: a.values[-1] for a in others})
    line = plan_look_line(planner.spec, planner.exp, smallest, largest, FIRST_BATCH, DECIDE_MAX_SIMS)
    if line is not None:
        console_err.print(line, highlight=False, markup=False, soft_wrap=True)


def _emit_plan(payload: dict[str, Any], size_name: str, output: Path | None, as_json: bool) -> None:
    """Write plan.json and report.html under ``output`` (where given); print the plan as JSON or text."""
    from cogtestbed.validation.design.plan_report import write_plan

    if output is not None:
        files = write_plan(payload, output)
        payload["files"] = {k: str(v) for k, v in files.items()}
    if as_json:
        print_json(payload)
        return
    _print_plan(payload, size_name)
    if output is not None:
        console_err.print(f"wrote {output}/plan.json and {output}/report.html")


def _pilot_and_lapses(spec: Any, exp: Any, pilot: Path | None, llm: list[str], given_base: dict[str, float],
                      given_params: dict[str, float], invalid_rate: float | None,
                      random_rate: float) -> tuple[Any, Any]:
    """The study with the pilot's fitted parameters and the expected invalid and random answers
    (``--invalid-rate``, else the pilot's rate) simulated as lapses; and the pilot read (or None)."""
    from cogtestbed.validation.design.plan_report import MAX_INVALID_RATE, apply_pilot, read_pilot

    pilot_info = read_pilot(pilot, exp, spec) if pilot is not None else None
    if pilot_info is not None and pilot_info.llm is not None and pilot_info.llm not in llm:
        console_err.print(f"warning: the pilot in {pilot} ran {pilot_info.llm}, not {' or '.join(llm)}: its invalid "
                          f"rate, tokens per call and fitted parameters are {pilot_info.llm}'s",
                          highlight=False, markup=False, soft_wrap=True)
    if pilot_info is not None:
        spec = apply_pilot(spec, exp, pilot_info, given_base, given_params)
    rate = invalid_rate if invalid_rate is not None else (pilot_info.invalid_rate if pilot_info else 0.0)
    if rate > MAX_INVALID_RATE:
        source = "--invalid-rate" if invalid_rate is not None else f"the pilot in {pilot}"
        raise ValueError(f"{source} gives {rate:.0%} invalid answers (more than {MAX_INVALID_RATE:.0%}): fix the "
                         "prompt or the answer settings first, or plan for an expected rate with --invalid-rate")
    if rate > 0 or random_rate > 0:
        from cogtestbed.lapse import Lapse

        spec = spec.model_copy(update={"lapse": Lapse(invalid=rate, random=random_rate)})
    return spec, pilot_info


def _target(llm: list[str], model: str | None, effect: str | None, metric: str | None, test: str | None,
            precision: str | None) -> tuple[str | None, tuple[str, float] | None]:
    """(the effect, the precision target (parameter, half-width) or None) of the options; one clear
    error for any other mix.  A precision target plans a zero effect of its parameter."""
    from cogtestbed.parameters import parse_assignments

    target = None
    if precision is not None:
        if effect is not None or metric is not None or test is not None or model is None:
            raise ValueError("--precision PARAM=HALFWIDTH goes with --model M (and no --effect, --metric or --test)")
        (target_param, halfwidth), = parse_assignments([precision], "--precision").items()
        target, effect = (target_param, halfwidth), f"{target_param}=0"
    elif not llm:
        raise ValueError("a power target is priced by an LLM: give --llm BACKEND:MODEL (or plan for --precision, "
                         "which costs designs in trials without one)")
    if effect is not None and model is None:
        raise ValueError("--effect needs --model (the model whose parameter carries the effect)")
    if model is not None and effect is None:
        raise ValueError("--model goes with --effect NAME=SIZE")
    if not 1 <= len(llm) <= 2 and precision is None:
        raise ValueError(f"--llm takes one model, or two for a metric difference; got {len(llm)}")
    if len(llm) == 2 and metric is None:
        raise ValueError("two --llm compare two LLMs: that is a metric difference (--metric M --compare A B)")
    return effect, target


def _print_plan(payload: dict[str, Any], size_name: str) -> None:
    """The plan as text: its summary, recovery and frontier (and its looks, for a sequential plan)."""
    from cogtestbed.formatting import rate_text
    from cogtestbed.validation.design.plan_report import summary_line

    console.print(summary_line(payload), highlight=False, soft_wrap=True)
    line = recovery_line(payload.get("recovery") or {})
    if line:
        console.print(line, highlight=False, soft_wrap=True)
    for warning in payload.get("warnings") or []:
        console.print(f"WARNING: {warning}", highlight=False, soft_wrap=True, markup=False)
    for note in payload.get("notes") or []:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    for row in payload["frontier"]:
        dollars = f"${row['dollars']:.3f}" if row["dollars"] is not None else "-"
        console.print(f"  frontier: {row['design']}: power {rate_text(row['power'], row['sims'])}, "
                      f"{int(row['calls']):,} calls, {dollars}", highlight=False, soft_wrap=True)
    if "sequential" in payload:
        from cogtestbed.validation.design.seqplan import sequential_lines

        for line in sequential_lines(payload["sequential"], size_name):
            console.print(line, highlight=False)


def _plan_precision(spec: Any, exp: Any, parameter: str, halfwidth: float, assurance: float, runs: str | None,
                    trials: str | None, llm: list[str], seed: int, max_tokens: int | None, temperature: float | None,
                    reask: int, prices: Path | None, as_json: bool, output: Path | None = None,
                    field_axis: Any = None, allow_unpriced: bool = False, batch: bool = False) -> None:
    """``plan --precision``: the cheapest design meeting the precision target
    (:mod:`cogtestbed.validation.design.precision`); ``-o DIR`` writes ``precision.json`` (the ``--json``
    payload; ``plan.json``, which ``run --plan`` executes, belongs to power plans)."""
    from cogtestbed.experiments.spec import resolve_temperature
    from cogtestbed.validation.design.plan import Axis, Pricer, declared_runs, parse_range, trials_values
    from cogtestbed.validation.design.precision import PrecisionPlanner, precision_line, precision_payload
    from cogtestbed.validation.studies.study_data import design_for_trials

    if len(llm) > 1:
        raise ValueError("--precision prices one LLM: give --llm once")
    if field_axis is not None:
        if trials is not None:
            raise ValueError(f"--trials and --design {field_axis.name}=a,b,c: plan searches one size of the design "
                             f"at a time; fix the trials field with --design {exp.trials_field}=N")
        trials_axis = field_axis
    elif exp.trials_field is None:
        if trials is not None:
            raise ValueError(f"experiment {exp.name} has a fixed number of trials per run (no trials field)")
        trials_axis = Axis("trials", (int(design_for_trials(exp, None, spec.design).n_trials),))
    else:
        trials_axis = Axis("trials", trials_values(spec, exp, trials))
    pooled = exp.pooling_unit == "session"
    if runs is not None and not pooled:
        raise ValueError(f"experiment {exp.name} pools subjects, not sessions: --runs needs an experiment whose "
                         "pooling unit is the session")
    runs_axis = Axis("runs", (parse_range(runs, None) or declared_runs(spec, exp)) if pooled else (1,))
    pricer = Pricer(exp, (llm[0],), seed=seed, max_tokens=max_tokens,
                    temperature=resolve_temperature(exp.decoding, temperature)[0], reask=reask,
                    prices=prices, allow_unpriced=allow_unpriced, batch=batch) if llm else None
    quiet = as_json and not console_err.is_terminal
    planner = PrecisionPlanner(spec, exp, parameter, halfwidth, assurance, trials_axis, runs_axis, pricer,
                               on_progress=None if quiet else lambda m: console_err.print(m, highlight=False,
                                                                                          markup=False))
    if not quiet:
        console_err.print(planner.estimate_line(), highlight=False, markup=False, soft_wrap=True)
    payload = precision_payload(planner.plan(), planner)
    if output is not None:
        import json

        from cogtestbed.outputs import atomic_write_bytes

        output.mkdir(parents=True, exist_ok=True)
        dest = output / "precision.json"
        atomic_write_bytes(dest, lambda tmp: tmp.write_text(json.dumps(payload, indent=1, default=str)))
        payload["files"] = {"precision": str(dest)}
    if as_json:
        print_json(payload)
        return
    console.print(precision_line(payload), highlight=False, soft_wrap=True)
    fields = ", ".join(f"{k}={v}" for k, v in payload["chosen"]["resolved"]["fields"].items())
    console.print(f"design {payload['chosen']['resolved']['label']}: {fields}", highlight=False, soft_wrap=True)


def recovery_line(rec: dict[str, Any]) -> str:
    """The chosen design's effect bias and interval coverage in one line (model-level targets); the
    problems with their meaning and remedy are the payload's ``warnings``
    (:func:`~cogtestbed.validation.design.plan_report.recovery_warnings`)."""
    from cogtestbed.formatting import num

    if "effect_bias" not in rec:
        return ""
    parts = [f"effect bias {num(rec['effect_bias'])} (estimand {num(rec['estimand'])})"]
    if rec.get("coverage") is not None and rec.get("coverage_level") is not None:
        parts.append(f"interval coverage {num(rec['coverage'], 2)} (nominal {num(rec['coverage_level'], 2)})")
    fresh = f" ({rec['studies']} fresh simulated studies)" if rec.get("studies") else ""
    return "recovery at this design: " + ", ".join(parts) + fresh

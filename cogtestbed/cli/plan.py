"""``cogtestbed plan``: the cheapest design reaching a target power, priced in calls, tokens and dollars
(a thin layer over :func:`cogtestbed.api.plan.plan`: it parses the options, calls it and prints).

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


def _print_forms_plan(result: dict[str, Any], experiment: str, model: str, eff: tuple[str, float],
                      power: float) -> None:
    from rich.table import Table

    from cogtestbed.formatting import num

    sc = result["scales"]
    interval = sc.get("tau_interval")
    tau_text = num(sc["tau"]) + ("" if interval is None else
                                 f" [{num(interval[0])}, {num(interval[1])}] ({sc['level']:.0%} F interval)")
    console.print(f"{experiment} {model}: {eff[0]} = {eff[1]:g} at power {power:g}; effect SD between forms τ = "
                  f"{tau_text}, one subject's σ = {num(sc['sigma'])} ({sc['source']})", highlight=False)
    for problem in sc.get("problems", []):
        console.print(f"WARNING: the pilot does not identify τ: {problem}; the designs below rest on it "
                      "(plan from --form-sd instead)", highlight=False)
    table = Table(title="forms x subjects (forms-aware test: t on the form means)")
    columns = ["forms", "subjects/form", "subjects", "power"] + (["power if τ at its upper bound"] if interval else [])
    for col in (*columns, "dollars", "note"):
        table.add_column(col)
    for r in result["designs"]:
        at_high = [num(r.get("power_at_tau_high"))] if interval else []
        table.add_row(str(r["forms"]), str(r["subjects_per_form"] or "-"), str(r["subjects"] or "-"), num(r["power"]),
                      *at_high, num(r["dollars"]), r.get("why", ""))
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
        "--llm", help="BACKEND:MODEL whose prices and tokenizer cost the design (twice for a difference "
        "between two LLMs: in a metric, or with --model/--effect in a model parameter). Required for a power "
        "target; optional with --precision (default: cost in trials).")] = None,
    model: Annotated[str | None, typer.Option(help="Model of an --effect target, e.g. rw-pm.")] = None,
    effect: Annotated[str | None, typer.Option(help="NAME=SIZE: a model parameter or contrast (with two --llm or "
                                                    "--human: the difference of the second group's median over the "
                                                    "first's).")] = None,
    human: Annotated[Path | None, typer.Option(help="A trial table of people (Parquet/CSV, or a file the experiment "
                                                    "imports): with one --llm, --model and --effect, plan the "
                                                    "parameter's difference between the LLM and this sample "
                                                    "(fitted once per subject).")] = None,
    population: Annotated[str | None, typer.Option(
        help="human:NAME (shipped; `cogtestbed population list`) or a population file: the simulated subjects "
             "drawn from it (one posterior draw of the people's group parameters per study); with one --llm, "
             "--model and --effect, plan the parameter's difference between the LLM and these people (their "
             "per-subject MLE, their number fixed).")] = None,
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
    looks: Annotated[str | None, typer.Option(help="Group-sequential plan: looks at equal shares of the size axis "
                                                   "(2 or more), or auto: the looks (2-10), spending function and "
                                                   "futility on/off with the cheapest expected cost meeting alpha "
                                                   "and power.")] = None,
    spending: Annotated[str, typer.Option(help="Alpha-spending of a sequential plan: obrien-fleming or pocock.")
                        ] = "obrien-fleming",
    futility: Annotated[bool, typer.Option(help="Non-binding futility bounds (beta-spending) too.")] = False,
    binding_futility: Annotated[bool, typer.Option(help="Futility stops count in the type-I error (binding: the run "
                                "must stop at a futility bound); default non-binding.")] = False,
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
    fit: Annotated[str, typer.Option(help="The fit the researcher will report (model targets): mle (the search's "
                   "per-subject MLE t-test) or hierarchical (then the size is searched with the hierarchical PyMC "
                   "fit from the MLE's choice, --fit-sims fresh studies per size tried, at most 4 sizes, and the "
                   "plan is its choice: power, bias, coverage).")] = "mle",
    fit_sims: Annotated[int | None, typer.Option(help="Fresh studies --fit hierarchical fits per size it tries "
                        "(default 20: power to +-0.09).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as one JSON object.")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write plan.json and report.html here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the files of a non-empty --output folder.")] = False,
    forms: Annotated[str | None, typer.Option(
        "--forms", help="Counts of prompt forms to plan over, e.g. 1,2,4,8 (with --model, --effect and --form-sd "
        "or --pilot): forms x subjects chosen jointly by dollars.")] = None,
    form_sd: FormSdOpt = None,
    reasoning_effort: Annotated[str | None, typer.Option(
        help="A reasoning model's reasoning_effort, as run (capability table: docs/llm-runs.md).")] = None,
    thinking_budget: Annotated[int | None, typer.Option(
        help="A reasoning model's thinking budget, as run (run --thinking-budget).")] = None,
    assume_reasoning_tokens: Annotated[str | None, typer.Option(
        help="A reasoning model's completion tokens per call, hidden ones included: N (priced from N/2 to 2N) or "
        "LOW:HIGH; without it (or a --pilot of the model) a plan for a reasoning model is refused.")] = None,
    adaptive: Annotated[str | None, typer.Option(
        help="PARAM[,PARAM] or all: with --precision PARAM=HALFWIDTH, the trials per session adaptive sessions "
        "and fixed ones of the same design space need (posterior mean within HALFWIDTH of the truth, unconstrained "
        "scale, with probability --assurance), each priced by --llm.")] = None,
    adaptive_sims: Annotated[int, typer.Option(
        min=2, help="Subjects drawn from the prior that plan --adaptive simulates.")] = 200,
) -> None:
    """Plan a study: the cheapest design that reaches the target power, in calls, tokens and dollars."""
    from cogtestbed.api.plan import plan as make_plan

    if forms is not None and population is not None:
        from cogtestbed.errors import InputError

        raise InputError("--forms plans prompt forms around the model's medians; --population is not planned with "
                         "forms yet: drop one")
    if forms is not None:
        from cogtestbed.api.form_plan import plan_forms

        planned = plan_forms(experiment, forms=forms, model=model, effect=effect, form_sd=form_sd, llm=llm,
                             pilot=pilot, params=param, base=base, power=power, level=level, seed=seed, design=design,
                             prices=prices, allow_unpriced=allow_unpriced, max_tokens=max_tokens,
                             temperature=temperature, reask=reask, reasoning_effort=reasoning_effort,
                             thinking_budget=thinking_budget, assume_reasoning_tokens=assume_reasoning_tokens)
        if as_json:
            print_json(planned)
            return
        from cogtestbed.parameters import parse_assignments

        eff = next(iter(parse_assignments([str(effect)], "--effect").items()))
        _print_forms_plan(planned, planned["experiment"], str(model), eff, power)
        return
    from cogtestbed.outputs import output_dir

    # claimed before the simulations (a refused folder costs nothing; a second plan into the same
    # folder at once is refused) and held until the plan is written; progress goes to stderr even
    # with --json (stdout carries only the JSON)
    with output_dir(output, force):
        result = make_plan(
            experiment, llm=llm, model=model, effect=effect, metric=metric, compare=compare, test=test, agent=agent,
            precision=precision, assurance=assurance, power=power, level=level, subjects=subjects, runs=runs,
            trials=trials, design=design, base=base, sd_between=sd_between, params=param, prices=prices,
            allow_unpriced=allow_unpriced, batch=batch, max_cost=max_cost, invalid_rate=invalid_rate,
            random_rate=random_rate, pilot=pilot, mc_se=mc_se, max_tokens=max_tokens, reask=reask,
            temperature=temperature, seed=seed,
            workers=workers, looks=looks, spending=spending, futility=futility, null=null, seq_sims=seq_sims,
            null_sims=null_sims, lapse_fit=lapse_fit, binding_futility=binding_futility, fit=fit,
            fit_sims=fit_sims, human=human, reasoning_effort=reasoning_effort, thinking_budget=thinking_budget,
            assume_reasoning_tokens=assume_reasoning_tokens, adaptive=adaptive, adaptive_sims=adaptive_sims,
            say=_say, population=population)
        if result.kind == "adaptive":
            _emit_adaptive(result, output, as_json, force)
            return
        if result.kind == "precision":
            _emit_precision(result, output, as_json, force)
            return
        _emit_plan(result, output, as_json, force)


def _say(line: str) -> None:
    """A progress line of the plan on stderr."""
    console_err.print(line, highlight=False, markup=False, soft_wrap=True)


def _saved_payload(result: Any, output: Path | None, force: bool) -> dict[str, Any]:
    """``result``'s payload, saved under ``output`` (when given) with the files it wrote added."""
    if output is None:
        return dict(result.payload)
    files = result.save(output, force=force)
    return {**result.payload, "files": {k: str(v) for k, v in files.items()}}


def _emit_precision(result: Any, output: Path | None, as_json: bool, force: bool = False) -> None:
    """``plan --precision``'s output: ``precision.json`` under ``output``; the payload or two lines."""
    from cogtestbed.validation.design.precision import precision_line

    payload = _saved_payload(result, output, force)
    if as_json:
        print_json(payload)
        return
    console.print(precision_line(payload), highlight=False, soft_wrap=True)
    fields = ", ".join(f"{k}={v}" for k, v in payload["chosen"]["resolved"]["fields"].items())
    console.print(f"design {payload['chosen']['resolved']['label']}: {fields}", highlight=False, soft_wrap=True)


def _emit_adaptive(result: Any, output: Path | None, as_json: bool, force: bool = False) -> None:
    """``plan --adaptive``'s output: ``adaptive.json`` under ``output``; the payload or three lines."""
    from cogtestbed.validation.design.adaptive_plan import adaptive_line

    payload = _saved_payload(result, output, force)
    if as_json:
        print_json(payload)
        return
    console.print(adaptive_line(payload), highlight=False, soft_wrap=True, markup=False)


def _emit_plan(result: Any, output: Path | None, as_json: bool, force: bool = False) -> None:
    """Save the plan under ``output`` (:meth:`Plan.save <cogtestbed.api.plan.Plan.save>`: plan.json,
    frontier.png, report.html); print it as JSON or text."""
    payload = result.payload
    if output is not None:
        files = result.save(output, force=force)
        payload["files"] = {k: str(v) for k, v in files.items()}
    if as_json:
        print_json(payload)
        return
    _print_plan(payload, result.size_name)
    if output is not None:
        console_err.print(f"wrote {output}/plan.json and {output}/report.html")


def _print_plan(payload: dict[str, Any], size_name: str) -> None:
    """The plan as text: its summary, recovery and frontier (and its looks, for a sequential plan)."""
    from cogtestbed.formatting import rate_text
    from cogtestbed.validation.design.plan_report import summary_line

    console.print(summary_line(payload), highlight=False, soft_wrap=True)
    cost = payload.get("cost") or {}
    if cost.get("dollars_range"):  # a reasoning model: its hidden tokens priced over an interval (issue 49)
        low, high = cost["dollars_range"]
        source = (cost["per_llm"][0].get("reasoning") or {}).get("completion_tokens_per_call", {}).get("source", "")
        console.print(f"cost range: ${low:.3f} to ${high:.3f} (expected ${cost['dollars']:.3f}; hidden reasoning "
                      f"tokens per call from the {source})", highlight=False, soft_wrap=True, markup=False)
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
        from cogtestbed.validation.design.seqpayload import sequential_lines

        for line in sequential_lines(payload["sequential"], size_name):
            console.print(line, highlight=False)
    if payload.get("fit_check"):
        from cogtestbed.validation.design.fitcheck import fit_check_lines

        for line in fit_check_lines(payload["fit_check"]):
            console.print(line, highlight=False, soft_wrap=True, markup=False)


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

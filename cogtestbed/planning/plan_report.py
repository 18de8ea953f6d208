"""A plan's outputs: the JSON payload, ``plan.json`` (what ``cogtestbed run --plan`` executes), the
cost–power frontier plot and the HTML report; and the reading of a pilot run directory.

``plan.json`` holds the chosen design as a run configuration — experiment, LLM(s), sessions per
LLM, seed, design fields, answer settings and limits (``max_calls``: the design's calls with every
re-ask; ``max_cost``: the plan's ``--max-cost``) — next to the study it was sized with, its power
and its price, so the run that follows is exactly the one that was priced.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.planning.kinds.power.power_sims import verdict
from cogtestbed.planning.kinds.sequential.seqauto import calibration_level
from cogtestbed.planning.plan import FRESH_SEED_OFFSET, PlanResult, calibration_nulls, describe_target, level_nulls
from cogtestbed.planning.pricing import Pricer, tokens_source
from cogtestbed.planning.space import sessions_per_llm, study_at
from cogtestbed.studies.conditional import conditional_section, conditional_words
from cogtestbed.studies.people_level import (
    calibrated_section,
    calibrated_words,
    calibration_pair_count,
    null_study_count,
)
from cogtestbed.studies.study_data import design_for_trials
from cogtestbed.studies.study_kinds import ModelStudy, PlannedStudy
from cogtestbed.trials import package_versions

PLAN_FILE, REPORT_FILE, FRONTIER_PNG = "plan.json", "report.html", "frontier.png"
#: Valid trials a pilot needs before its fitted parameters are used as the simulation's base.
MIN_PILOT_VALID = 20
#: Largest invalid-answer rate a plan sizes for: above it the data are mostly missing and the
#: prompt or parser needs fixing before any budget is spent.
MAX_INVALID_RATE = 0.9
#: Version of the ``plan.json`` layout (``cogtestbed run --plan`` refuses other versions).
PLAN_VERSION = 1


# ----------------------------------------------------------------------------- pilot
@dataclass(frozen=True)
class Pilot:
    """What a pilot run directory (``cogtestbed run ... --subjects 3 -o DIR``) tells the plan."""

    path: str
    llm: str | None
    subjects: int
    trials: int
    calls: int
    invalid_rate: float
    prompt_tokens_per_call: float | None
    completion_tokens_per_call: float | None
    #: Population medians of the model (or of the agent's same-name model) fitted to the pilot.
    fitted: dict[str, float]
    fitted_model: str | None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def read_pilot(path: Path, exp: ExperimentSpec, spec: PlannedStudy) -> Pilot:
    """Invalid rate, tokens per call and fitted parameters of the pilot run in ``path``."""
    from cogtestbed.llm_adapters.runs.config import CALLS_FILE
    from cogtestbed.planning.request_checks import pilot_trials
    from cogtestbed.registry import read_trials
    from cogtestbed.trials import read_manifest

    trials_path = pilot_trials(path)
    manifest = read_manifest(trials_path)
    config = manifest.get("config", {})
    if config.get("experiment") not in (None, exp.name):
        raise InputError(f"`pilot`: {path} is a run of {config.get('experiment')}, not of {exp.name}")
    table = read_trials(trials_path, user_file=True)
    calls = pd.read_parquet(path / CALLS_FILE) if (path / CALLS_FILE).exists() else pd.DataFrame()
    valid = table["valid"].to_numpy(bool) if "valid" in table else np.ones(len(table), bool)
    fitted, model_name = _pilot_fit(exp, spec, table) if valid.sum() >= MIN_PILOT_VALID else ({}, None)
    return Pilot(path=str(path), llm=config.get("llm"), subjects=int(table["subject"].nunique()),
                 trials=len(table), calls=len(calls), invalid_rate=float(1 - valid.mean()) if valid.size else 0.0,
                 prompt_tokens_per_call=_mean_column(calls, "prompt_tokens"),
                 completion_tokens_per_call=_mean_column(calls, "completion_tokens"),
                 fitted=fitted, fitted_model=model_name)


def _mean_column(frame: pd.DataFrame, name: str) -> float | None:
    if name not in frame:
        return None
    values = pd.to_numeric(frame[name], errors="coerce").dropna()
    return float(values.mean()) if len(values) else None


def _pilot_fit(exp: ExperimentSpec, spec: PlannedStudy, table: pd.DataFrame) -> tuple[dict[str, float], str | None]:
    """Medians of the per-subject MLE of the target's model (or the agent's same-name model)."""
    import warnings

    name = spec.models[0] if isinstance(spec, ModelStudy) else spec.agent
    if name is None or name not in exp.models:
        return {}, None
    model = exp.model(name)
    if not isinstance(spec, ModelStudy) and exp.generator(name).agent != spec.agent:
        return {}, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = model.fit_mle(table)
    medians = {p: float(np.nanmedian(fits[p].to_numpy(float))) for p in model.parameters.names}
    return {k: v for k, v in medians.items() if math.isfinite(v)}, name


def apply_pilot(spec: PlannedStudy, exp: ExperimentSpec, pilot: Pilot, given_base: dict[str, float],
                given_params: dict[str, float]) -> PlannedStudy:
    """``spec`` with the pilot's fitted medians as the base of the simulation (explicit values win);
    a study drawn from a population keeps the population's medians (the pilot gives its invalid rate
    and tokens only)."""
    if not pilot.fitted or pilot.fitted_model is None or getattr(spec, "from_population", None) is not None:
        return spec
    if isinstance(spec, ModelStudy):
        base = {k: v for k, v in pilot.fitted.items() if k not in spec.fixed}
        return spec.model_copy(update={"base": {**base, **given_base}})
    agent_params = exp.generator(pilot.fitted_model).agent_params(pilot.fitted)
    return spec.model_copy(update={"params": {**{k: float(v) for k, v in agent_params.items()}, **given_params}})


# ----------------------------------------------------------------------------- payload and plan.json
def run_section(result: PlanResult, pricer: Pricer, exp: ExperimentSpec, max_cost: float | None) -> dict[str, Any]:
    """The run configuration ``cogtestbed run --plan`` executes (one run per LLM listed)."""
    point = result.chosen.point
    design = design_for_trials(exp, point.trials, point.design(result.spec.design))
    first = result.chosen.cost.per_llm[0] if result.chosen.cost else None
    return run_block(pricer, exp, design, sessions_per_llm(result.spec, point), first, max_cost)


def run_block(pricer: Pricer, exp: ExperimentSpec, design: Any, subjects: int, first: Mapping[str, Any] | None,
              max_cost: float | None) -> dict[str, Any]:
    """The ``run`` block of ``subjects`` sessions of ``design`` priced by ``pricer`` (``first``: the first
    LLM's dry-run report, or None): everything ``run --plan`` and ``run --dry-run --plan`` need to run and
    price exactly what the plan priced (answer settings, batch mode, the completion tokens per call)."""
    # the cap admits the worst case of the method that will run (a dry run's calls_ceiling, where
    # answers decide what is asked next), so a run is never stopped short by its own plan
    calls = None if first is None else first.get("calls_ceiling", int(first["calls"]) * (1 + pricer.reask))
    return {"experiment": exp.name, "llms": list(pricer.llms), "subjects": subjects,
            "seed": pricer.seed, "design": design.model_dump(mode="json"),
            "max_tokens": pricer.tokens_per_answer(design), "temperature": pricer.temperature, "reask": pricer.reask,
            "max_calls": None if calls is None else int(calls), "max_cost": max_cost,
            **({"batch": True} if pricer.batch else {}),
            **({"completion_tokens_per_call": pricer.hidden.as_json()} if pricer.hidden is not None else {}),
            **({"reasoning_effort": pricer.reasoning_effort} if pricer.reasoning_effort is not None else {}),
            **({"thinking_budget": pricer.thinking_budget} if pricer.thinking_budget is not None else {})}


def plan_payload(result: PlanResult, pricer: Pricer, exp: ExperimentSpec, max_cost: float | None,
                 pilot: Pilot | None = None) -> dict[str, Any]:
    """Everything the plan found (the body of ``plan.json`` and of ``--json``)."""
    chosen = result.chosen
    assert chosen.cost is not None
    at_chosen = study_at(result.spec, chosen.point, chosen.estimate.sims)
    target = calibration_level(result.spec.level, calibration_pair_count(null_study_count(chosen.estimate.sims)))
    nulls = level_nulls(result, target)  # an LLM against people: run once, read by two sections
    cost = {**chosen.cost.as_dict(), **tokens_source(pricer)}
    if pilot is not None and pilot.completion_tokens_per_call is not None:
        cost["expected_completion_tokens"] = round(pilot.completion_tokens_per_call * chosen.cost.calls)
    return {
        "plan_version": PLAN_VERSION, "experiment": exp.name, "versions": package_versions(),
        "target": {"kind": result.spec.kind, "what": describe_target(result.spec), "power": result.target,
                   "level": result.spec.level, "mc_se": None},
        "chosen": {**chosen.row(result.size_name, result.spec),
                   "sessions_per_llm": sessions_per_llm(result.spec, chosen.point)},
        "cost": cost, **reported_power(result),
        "recovery": result.recovery,
        "frontier": [e.row(result.size_name, result.spec) for e in result.frontier],
        "evaluated": [{**e.row(result.size_name, result.spec),
                       **verdict(e.estimate.hits, e.estimate.sims, result.target)} for e in result.evaluated],
        "pruned": result.pruned,
        "lapse": None if result.spec.lapse is None else _lapse_dict(result.spec.lapse),
        "pilot": None if pilot is None else pilot.as_dict(),
        "run": run_section(result, pricer, exp, max_cost),
        "study": at_chosen.model_dump(mode="json"),
        # an LLM against people, conditional on the population's real participants (
        # the LLM groups of the fresh and the level null studies, tested against them: no new fits)
        "power_conditional": conditional_section(at_chosen, chosen.estimate.sims, result.workers,
                                                 groups=_groups(result.fresh, nulls)),
        # the nominal test's level on null studies that choose nothing; a critical p calibrated on other null
        # studies only where they show it above alpha (powers on the plan's fresh studies, not those that chose it)
        "calibrated_test": calibrated_section(at_chosen, result.fresh, target, result.workers, nulls=nulls,
                                              calibrate=lambda count: calibration_nulls(result, count)),
        "searched": result.searched,
        "notes": list(result.notes),
        "warnings": recovery_warnings(result.recovery),
        "search": {"seconds": round(result.seconds, 2), "cpu_seconds": round(result.cpu_seconds, 2),
                   "simulations": result.simulations, "designs_simulated": len(result.evaluated)},
    }


def reported_power(result: PlanResult) -> dict[str, Any]:
    """The plan's printed power (``power``): measured on the fresh studies at the chosen design, through the
    evaluation protocol's reporting stream (:func:`~cogtestbed.planning.kind_protocols.power_streams`); the
    search's power at the design, which chose it, beside it (``power_search``, not printed as the plan's)."""
    from cogtestbed.planning.kind_protocols import power_streams
    from cogtestbed.planning.kinds.power.power_sims import outcome_column

    est = result.chosen.estimate
    search = {"rate": est.rate, "mc_se": est.mc_se, "sims": est.sims}
    if result.fresh is None or not len(result.fresh):
        return {"power": search, "power_search": search}
    hits = result.fresh[outcome_column(result.spec)].astype(bool).to_numpy()
    rate = float(hits.mean())
    se = math.sqrt(max(rate * (1 - rate), 1e-12) / hits.size)
    streams = power_streams(result.spec.seed)
    fresh_seed = int(result.spec.seed) + FRESH_SEED_OFFSET
    streams.report("power", rate, se, (fresh_seed,))
    return {"power": {"rate": rate, "mc_se": se, "sims": int(hits.size), "seed": fresh_seed,
                      "measured_on": "fresh studies at the chosen design (seeds the search never used)"},
            "power_search": search}


def _groups(fresh: pd.DataFrame | None, nulls: pd.DataFrame | None) -> dict[str, Any] | None:
    """The LLM groups (``llm_values``) of a plan's fresh studies (``power``) and calibration null studies
    (``null``) where it has them, for :func:`~cogtestbed.studies.conditional.conditional_section`."""
    out = {key: list(table["llm_values"]) for key, table in (("power", fresh), ("null", nulls))
           if table is not None and "llm_values" in table}
    return out or None


def _lapse_dict(lapse: Any) -> dict[str, float]:
    return {"invalid": float(lapse.invalid), "random": float(lapse.random)}


#: Interval coverage this far below its nominal level is called a problem of the plan's test.
COVERAGE_SLACK = 0.03
#: An effect estimate biased by more than this share of the effect is warned about.
BIAS_SHARE = 0.1


def recovery_warnings(rec: Mapping[str, Any], fit_check: Mapping[str, Any] | None = None) -> list[str]:
    """The chosen design's recovery problems (model-level targets), each with what it means and the
    remedy: a biased per-subject MLE of the effect, an interval that covers less than it claims.
    Measured on fresh studies at the design (:meth:`~cogtestbed.planning.plan.Planner.fresh_table`).
    ``fit_check``: the design re-measured with the hierarchical fit (``plan --fit hierarchical``,
    :mod:`~cogtestbed.planning.fitcheck`); the remedy then says whether it removes the bias."""
    if "effect_bias" not in rec:
        return []
    # two groups: the difference on the test's scale (log k), the scale the bias is measured on
    bias, size = rec["effect_bias"], rec.get("effect_on_test_scale") or rec.get("effect_size") or 0.0
    cov, nominal = rec.get("coverage"), rec.get("coverage_level")
    fit = "with a lapse term" if rec.get("lapse_fit") is not None else "without a lapse term"
    remedy = _bias_remedy(rec, fit_check)
    where = "at this design" if fit_check is None else "at the per-subject MLE's design"
    out = []
    if size and abs(bias) > BIAS_SHARE * abs(size):
        out.append(f"the per-subject MLE of {rec['effect']} ({fit}) is biased by {abs(bias) / abs(size):.0%} of the "
                   f"effect {where} ({bias:+.3g} against the population mean {rec['estimand']:.3g}, "
                   f"{rec.get('studies', 'the')} fresh simulated studies): the plan's "
                   f"{rec.get('test_name', 't-test')} stays a valid test of "
                   "whether the effect is zero (its error rates are the simulated ones), but its estimate and "
                   f"interval must not be reported as the effect's size; {remedy}")
    if cov is not None and nominal is not None and cov < nominal - COVERAGE_SLACK:
        out.append(f"the t-test's {nominal:.0%} interval covers the true effect in {cov:.0%} of fresh simulated "
                   f"studies {where}: do not report it as a {nominal:.0%} interval; {remedy}")
    return out


def _bias_remedy(rec: Mapping[str, Any], fit_check: Mapping[str, Any] | None) -> str:
    """What to do about a biased per-subject MLE: the hierarchical fit where ``plan --fit hierarchical``
    measured that it removes the bias (with its figures), else how to find out; ``--lapse-fit``
    where the plan simulates lapses and did not fit them."""
    fit_cmd = "`cogtestbed fit MODEL RUN/trials.parquet -o DIR --method hierarchical`"
    lapse = ("" if rec.get("lapse_fit") is not None or not rec.get("random_lapses") else
             "; this plan's answers lapse to random choices, so also plan and fit with a lapse term "
             "(`plan --lapse-fit fit`, `fit --lapse fit`) and see whether the warning goes")
    if fit_check is None or fit_check.get("effect_bias") is None:
        return (f"`plan ... --fit hierarchical` plans with the hierarchical fit (its size searched with that fit) "
                f"and says whether it removes the bias (then report the effect from {fit_cmd}), or plan more trials "
                f"per subject (the per-subject MLE's bias shrinks with trials){lapse}")
    b, se, n = fit_check["effect_bias"], fit_check.get("effect_bias_mc_se"), fit_check["studies"]
    share = fit_check.get("bias_share")
    measured = (f"measured with --fit hierarchical on {n} fresh studies at the chosen design: its population "
                f"estimate's bias "
                f"{b:+.3g}{'' if se is None else f' ± {se:.2g} (MC SE)'}"
                + ("" if share is None else f", {share:.0%} of the effect")
                + f", interval coverage {fit_check['coverage']:.2f}" * (fit_check.get("coverage") is not None)
                + f", power {fit_check['power']:.2f}")
    limit = BIAS_SHARE * abs(rec.get("effect_size") or 0.0)
    if share is not None and share <= BIAS_SHARE:
        return (f"the hierarchical fit this plan is made with removes it ({measured}): report the effect from "
                f"{fit_cmd}{lapse}")
    if se is not None and abs(b) - 2 * se > limit:
        return (f"the hierarchical fit does not remove it either ({measured}): plan more trials per "
                f"subject (the per-subject MLE's bias shrinks with trials){lapse}")
    return (f"whether the hierarchical fit removes it is not settled ({measured}: above {BIAS_SHARE:.0%} of the "
            f"effect but within 2 MC SE of it): more --fit-sims would tell; meanwhile plan more trials per subject "
            f"(the per-subject MLE's bias shrinks with trials){lapse}")


def summary_line(payload: dict[str, Any]) -> str:
    """One line: the cheapest design with its calls, tokens, dollars and power."""
    from cogtestbed.formatting import rate_text

    c, cost, p = payload["chosen"], payload["cost"], payload["power"]
    unpriced = "no price (--allow-unpriced: ranked by tokens)"
    dollars = f"${cost['dollars']:.2f}" if cost["dollars"] is not None else unpriced
    if cost.get("standard_dollars") is not None:
        dollars += f" in batch mode (${cost['standard_dollars']:.2f} at the standard price{_batch_wall(cost)})"
    dollars += sampling_words(cost.get("sampling"))
    llms = " + ".join(dict.fromkeys(payload["run"]["llms"]))
    sessions = f"{c['sessions_per_llm']} session{'' if c['sessions_per_llm'] == 1 else 's'} per LLM"
    from cogtestbed.formatting import chosen_design_phrase

    lead = chosen_design_phrase(payload.get("evaluated") or [])
    return (f"{lead} {'reaching' if lead.startswith('cheapest') else 'reaches'} "
            f"{payload['target']['power']:.0%} power for {payload['target']['what']}: "
            f"{c['design']} ({sessions}) — {cost['calls']:,} calls, "
            f"{cost['prompt_tokens']:,} prompt + {cost['completion_tokens']:,} completion tokens (max), "
            f"{dollars} on {llms}; power {rate_text(p['rate'], p['sims'])}" + _unconditional(payload)
            + _hierarchical_words(payload) + conditional_words(payload.get("power_conditional"))
            + calibrated_words(payload.get("calibrated_test"), payload["target"].get("power")))


def sampling_words(sampling: Mapping[str, Any] | None) -> str:
    """`` ± $0.42 (99 %: the prompts of 3 of 40 sessions rendered, scaled)`` of a cost priced from a sample of
    its sessions (``Cost.sampling``); '' where every session was rendered."""
    if not sampling:
        return ""
    bound = (f"${sampling['dollars_bound']:.2f}" if sampling.get("dollars_bound") is not None
             else f"{sampling['prompt_tokens_bound']:,} prompt tokens")
    return (f" ± {bound} (99 %: the prompts of {sampling['sessions_rendered']} of {sampling['sessions']} sessions "
            "rendered, scaled)")


def _unconditional(payload: Mapping[str, Any]) -> str:
    """`` (unconditional: new people in every simulated study)`` beside the power of a plan that also
    reports its power conditional on the real participants, else ''."""
    return " (unconditional: new people in every simulated study)" \
        if (payload.get("power_conditional") or {}).get("power") else ""


def _batch_wall(cost: Mapping[str, Any]) -> str:
    """A batch-mode plan's turnarounds and worst-case wall time (the longest of its LLMs' runs; each
    batch may take the provider's 24 h), with a warning where that exceeds a day."""
    turns = [r["batch"] for r in cost.get("per_llm") or () if isinstance(r.get("batch"), dict)
             and "batch_turnarounds" in r["batch"]]
    if not turns:
        return ""
    worst = max(turns, key=lambda t: t["worst_case_wall_hours"])
    hours = worst["worst_case_wall_hours"]
    over = f" — WARNING: more than a day ({hours / 24:.1f} days)" if hours > 24 else ""
    return f"; {worst['batch_turnarounds']} batch turnaround(s), up to {hours:g} h{over}"


def _hierarchical_words(payload: Mapping[str, Any]) -> str:
    """Where ``plan --fit hierarchical`` chose the size: that it did, and the per-subject MLE's choice."""
    mle = payload.get("mle_chosen")
    if not mle:
        return ""
    dollars = mle["cost"].get("dollars")
    return (f" with the hierarchical fit (--fit hierarchical: the size searched with it; the per-subject MLE's "
            f"{mle.get('test_name', 'test')} chose {mle['chosen']['design']}"
            + ("" if dollars is None else f", ${dollars:.2f}") + ")")


# ----------------------------------------------------------------------------- report
def plot_frontier(payload: dict[str, Any], out: Path) -> Path:
    """Power against cost of every simulated design (±1.96 MC SE), the frontier and the choice."""
    from cogtestbed.studies.plots import pyplot, save_figure

    plt = pyplot()
    frame = pd.DataFrame(payload["evaluated"])
    x_name = "dollars" if frame["dollars"].notna().all() and (frame["dollars"] > 0).any() else "prompt_tokens"
    fig, ax = plt.subplots(figsize=(7, 4.2))
    by = payload.get("searched") or "trials"
    group = by if by in frame and frame[by].notna().any() and frame[by].nunique() > 1 else None
    for key, g in (frame.groupby(group, sort=True) if group else [(None, frame)]):
        name = "designs" if key is None else f"{int(key)} trials" if by == "trials" else f"{by} = {int(key)}"
        ax.errorbar(g[x_name], g["power"], yerr=1.96 * g["mc_se"], fmt="o", ms=4, alpha=0.7, capsize=2,
                    label=name)
    front = pd.DataFrame(payload["frontier"])
    ax.plot(front[x_name], front["power"], "k-", lw=1, label="frontier")
    chosen = payload["chosen"]
    ax.plot([chosen[x_name]], [chosen["power"]], marker="*", ms=16, color="crimson", ls="none",
            label=f"chosen: {chosen['design']}")
    ax.axhline(payload["target"]["power"], color="grey", ls="--", lw=1)
    if (frame[x_name] > 0).all():
        ax.set_xscale("log")
    ax.set_xlabel("cost (USD, dry-run prices)" if x_name == "dollars" else "prompt tokens")
    ax.set_ylabel("power")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(f"{payload['experiment']}: {payload['target']['what']}", fontsize=9)
    return save_figure(fig, out / FRONTIER_PNG)


def write_plan(payload: dict[str, Any], out: Path) -> dict[str, Path]:
    """``plan.json``, ``frontier.png`` and ``report.html`` in ``out`` (each written atomically)."""
    from cogtestbed.studies.report import atomic_write, check_output_dir, html_report

    check_output_dir(out)
    plan = out / PLAN_FILE
    atomic_write(plan, json.dumps(payload, indent=1, default=str))
    png = plot_frontier(payload, out)
    tables = [("chosen design", pd.DataFrame([payload["chosen"]]).set_index("design")),
              ("cost-power frontier", pd.DataFrame(payload["frontier"]).set_index("design")),
              ("every simulated design", pd.DataFrame(payload["evaluated"]).set_index("design"))]
    tables.extend(_recovery_tables(payload["recovery"]))
    if payload["pruned"]:
        tables.append(("combinations not simulated or not reaching the target", pd.DataFrame(payload["pruned"])))
    details = json.dumps({k: payload[k] for k in ("run", "cost", "lapse", "pilot", "search", "study")},
                         indent=1, default=str)
    said = [*(f"WARNING: {w}" for w in payload.get("warnings") or []), *(f"note: {n}" for n in payload.get("notes")
                                                                         or [])]
    section = {"title": f"plan: {payload['experiment']}", "verdict": "\n".join([summary_line(payload), *said]),
               "tables": tables, "plots": [png], "details": details}
    sections = [section]
    if payload.get("fit_check"):  # plan --fit hierarchical
        from cogtestbed.planning.fitcheck import fit_check_lines

        check = payload["fit_check"]
        text = fit_check_lines(check)
        sections.append({"title": "hierarchical search (--fit hierarchical)", "verdict": "\n".join(text[:-1]),
                         "tables": [("sizes tried with the hierarchical fit", pd.DataFrame(check.get("search") or [])),
                                    ("hierarchical fit at the chosen design",
                                     pd.DataFrame([{k: v for k, v in check.items() if k != "search"}]))],
                         "plots": [], "details": text[-1].strip()})
    if "sequential" in payload:  # a group-sequential plan (plan --looks)
        from cogtestbed.planning.kinds.sequential.seqpayload import report_section

        sections.append(report_section(payload["sequential"], out))
    report = out / REPORT_FILE
    atomic_write(report, html_report(f"cogtestbed plan: {payload['experiment']}", sections))
    markdown = out / MARKDOWN_FILE
    atomic_write(markdown, plan_markdown(payload))
    return {"plan": plan, "report": report, "markdown": markdown, "frontier": png}


#: The plan in Markdown (summary, warnings, notes, frontier, sequential design), beside report.html.
MARKDOWN_FILE = "report.md"


def plan_markdown(payload: Mapping[str, Any]) -> str:
    """``report.md``: the plan's summary line, its warnings (what they mean and the remedy), notes,
    frontier and, for a sequential plan, its design and operating characteristics."""
    lines = [f"# cogtestbed plan: {payload['experiment']}", "", summary_line(dict(payload)), ""]
    for w in payload.get("warnings") or []:
        lines += [f"> **Warning:** {w}", ""]
    for n in payload.get("notes") or []:
        lines += [f"- note: {n}"]
    lines += ["", "## Cost–power frontier", "", "| design | power | MC SE | calls | dollars |", "|---|---|---|---|---|"]
    for row in payload.get("frontier") or []:
        dollars = "-" if row.get("dollars") is None else f"${row['dollars']:.3f}"
        lines.append(f"| {row['design']} | {row['power']:.3f} | {row['mc_se']:.3f} | {int(row['calls']):,} "
                     f"| {dollars} |")
    if payload.get("fit_check"):
        from cogtestbed.planning.fitcheck import fit_check_lines

        lines += ["", "## Hierarchical search (--fit hierarchical)", ""]
        lines += [f"    {x.strip()}" for x in fit_check_lines(payload["fit_check"])]
    if payload.get("sequential"):
        from cogtestbed.planning.kinds.sequential.seqpayload import sequential_lines

        seq = payload["sequential"]
        lines += ["", "## Sequential plan", ""]
        lines += [f"    {x}" for x in sequential_lines(seq, seq.get("design", {}).get("size_axis", "units"))]
    return "\n".join(lines) + "\n"


def _recovery_tables(recovery: dict[str, Any]) -> list[tuple[str, pd.DataFrame]]:
    if "parameters" in recovery:
        head = {k: v for k, v in recovery.items() if k != "parameters"}
        return [("recovery at the chosen design (per-subject MLE)", pd.DataFrame(recovery["parameters"]).T),
                ("effect estimate across the power simulations", pd.DataFrame([head]))]
    return [("estimates at the chosen design", pd.DataFrame([recovery]))]


# ----------------------------------------------------------------------------- run --plan
def load_plan(path: Path) -> dict[str, Any]:
    """The ``run`` section of a ``plan.json`` (one clear error for anything else)."""
    if path.is_dir():
        path = path / PLAN_FILE
    if not path.exists():
        raise FileNotFoundError(f"`plan`: no plan at {path} (write one with `cogtestbed plan ... -o DIR`)")
    try:
        payload = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"`plan`: {path} is not JSON ({exc.msg})") from None
    if not isinstance(payload, dict) or payload.get("plan_version") != PLAN_VERSION or "run" not in payload:
        raise InputError(f"`plan`: {path} is not a cogtestbed plan (version {PLAN_VERSION})")
    planned = payload.get("monitor")
    if isinstance(planned, dict) and not (isinstance(payload["run"], dict) and payload["run"].get("monitor")):
        why = planned.get("reason") or "its run section does not execute the monitor"
        raise InputError(f"`plan`: {path} is a monitor plan that no run executes as planned ({why}); re-plan it, "
                         "or plan the fixed design without `monitor`")
    return checked_run_section(payload["run"], path)


#: The most subjects a plan may run (a hand-edited ``1e12`` is refused before anything is allocated).
MAX_PLAN_SUBJECTS = 1_000_000


def checked_run_section(run: Any, path: Path) -> dict[str, Any]:
    """The ``run`` section of a plan validated by :class:`PlanRun` (pydantic, strict types: a
    ``"5"`` is not 5 and 2.7 is not a subject count); the first problem in one line naming the field."""
    try:
        out = PlanRun.model_validate(run).model_dump()
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in ("run", *err["loc"]))
        got = f" (got {err['input']!r})" if "input" in err and not isinstance(err["input"], dict) else ""
        raise InputError(f"`plan`: {path}: {where}: {err['msg']}{got}") from None
    if out.get("sequential") is not None:  # looks, bounds and statistic checked before any call
        from cogtestbed.planning.kinds.sequential.seqpaths import checked_sequential

        out["sequential"] = checked_sequential(out["sequential"], f"--plan: {path}: run.sequential", out["subjects"])
    if out.get("monitor") is not None:  # bounds, level, bet, null and digest checked before any call
        from cogtestbed.planning.kinds.monitor.monitor_file import checked_monitor

        out["monitor"] = checked_monitor(out["monitor"], f"--plan: {path}: run.monitor")
    return out


_Count = Annotated[int, Field(strict=True, ge=0)]
_Money = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class PlanRun(BaseModel):
    """The ``run`` section of ``plan.json``: what ``cogtestbed run --plan`` executes (strict:
    counts are JSON integers, amounts finite and non-negative)."""

    model_config = ConfigDict(extra="allow")

    experiment: Annotated[str, Field(strict=True, min_length=1)]
    llms: Annotated[list[str], Field(min_length=1)]
    subjects: Annotated[int, Field(strict=True, ge=1, le=MAX_PLAN_SUBJECTS)]
    seed: _Count
    design: dict[str, Any]
    max_tokens: Annotated[int, Field(strict=True, ge=1)] = 8
    temperature: _Money = 0.0
    reask: _Count = 0
    max_calls: _Count | None = None
    max_cost: _Money | None = None
    #: Priced in the provider's batch mode (``plan --batch``): ``run --plan`` runs (and prices) it so.
    batch: bool = False
    #: The completion tokens per call the plan priced with (a pilot's or an assumption's,
    #: :meth:`~cogtestbed.llm_adapters.runs.hidden_tokens.HiddenTokens.as_json`): ``run --dry-run --plan`` prices
    #: with them, so its expected cost is the plan's.
    completion_tokens_per_call: dict[str, Any] | None = None


def plan_run_settings(path: Path, experiment: str | None, llm: str | None, subjects: int, seed: int,
                      design: list[str] | None) -> dict[str, Any]:
    """The settings of ``cogtestbed run --plan`` (the plan's, checked against those given too).

    ``--llm`` chooses among, or replaces, the plan's LLMs (a plan priced for a hosted model may be
    executed on a local one); a different experiment, subject count, seed or design is an error.
    """
    run = load_plan(path)
    if experiment is not None and experiment != run["experiment"]:
        raise InputError(f"`plan` is for {run['experiment']}, not {experiment}")
    if subjects != 1 and subjects != run["subjects"]:
        raise InputError(f"`plan` runs {run['subjects']} subjects; drop `subjects` {subjects}")
    if seed != 0 and seed != run["seed"]:
        raise InputError(f"`plan` runs seed {run['seed']}; drop `seed` {seed}")
    if design:
        raise InputError("`plan` fixes the design; drop `design`")
    llms = list(dict.fromkeys(run["llms"]))
    if llm is None and len(llms) > 1:
        raise InputError(f"`plan` compares {' and '.join(llms)}: run it once per LLM with `llm`")
    return {**run, "llm": llm or llms[0]}

"""The demo's real-model part: ``hf:smollm2-135m`` through the same environments as the synthetic
agents, beside a synthetic population, and its session used as the pilot of a plan.

The sessions (:data:`~cogtestbed.runs.real_model.DEMO_SESSIONS`) run in completions mode, as
CogBench prompted its models; the pilot → plan step is ``cogtestbed plan instrumental-learning
--model rw-pm --effect optimism_bias=0.4 --llm hf:smollm2-135m --pilot DIR`` over a short search
(:data:`PLAN_ARGS`), so that the plan's lapses are the model's measured invalid-answer rate and its
completion tokens the model's measured tokens per call.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from cogtestbed.api.console import console_err

MODEL_LABEL = "SmolLM2-135M-Instruct"
#: The plan of the demo: the effect of the demo's power study, a short, coarse search (Monte-Carlo SE
#: <= 0.15: a project default chosen to keep `make demo` within minutes; `cogtestbed plan` defaults
#: to 0.03 and a wider search).
PLAN_ARGS: dict[str, Any] = {"model": "rw-pm", "effect": "optimism_bias=0.4", "subjects": "8:128", "trials": "96",
                             "mc_se": 0.15}
PILOT_EXPERIMENT = "instrumental-learning"
#: The demo's pilot across prompt forms: SmolLM2 sessions of 8 instrumental-learning
#: trials, balanced over the first ``forms`` of its declared forms (form 0 the paper's verbatim
#: prompt, the others ours): 48 calls.  A project default sized to keep `make demo` within a minute
#: more (about 1 s of one core a call on the loaded machine); a pilot this small rarely identifies a
#: form SD, and the report says so.
FORMS_PILOT: dict[str, Any] = {"forms": 3, "subjects": 6, "visits_per_casino": 2}
#: The plan over forms from that pilot (``cogtestbed plan --forms``): the effect of :data:`PLAN_ARGS`.
FORMS_PLAN_ARGS: dict[str, Any] = {"model": "rw-pm", "effect": "optimism_bias=0.4", "forms": "1,2,4,8"}
#: The form SD the demo plans for where its pilot does not identify one: the issue's figure
#: (RW± optimism bias with form SD 0.15 on logit α⁺), stated as an assumption, never as the pilot's.
ASSUMED_FORM_SD = {"alpha_pos": 0.15}


def real_model_part(client: Any, output: Path, seed: int, workers: int | None, params: dict[str, float]
                    ) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """(HTML sections, Markdown lines, JSON) of the real-model part, written under ``output/real_model``
    (``params``: the synthetic agent's parameters the pilot compares with)."""
    from cogtestbed.runs.real_model import DEMO_SESSIONS, demo_sessions, demo_table

    folder = output / "real_model"
    for name, *_ in DEMO_SESSIONS:  # an earlier demo's runs (`--force`); the response cache is kept
        shutil.rmtree(folder / name, ignore_errors=True)
    shutil.rmtree(folder / "plan", ignore_errors=True)
    results = demo_sessions(client, folder, seed, {PILOT_EXPERIMENT: params},
                            on_progress=lambda msg: console_err.print(msg, highlight=False, markup=False))
    sections, lines = [], ["", f"## A real model: {client.spec} ({MODEL_LABEL}), offline", ""]
    for res in results:
        table = demo_table(res, MODEL_LABEL)
        verdict = _verdict(res)
        console_err.print(verdict, highlight=False, markup=False, soft_wrap=True)
        reasons = pd.DataFrame([{"reason": r, "count": n, "example answer": res.summary.examples.get(r, "")}
                                for r, n in res.summary.parse_reasons.items()])
        tables = [(f"{res.experiment}: the model's session beside {res.agent} subjects at the same design", table)]
        if len(reasons):
            tables.append(("what the parser rejected", reasons))
        sections.append({"title": f"real model: {client.spec} on {res.experiment}", "verdict": verdict,
                         "tables": tables, "details": json.dumps(res.as_json(), indent=1, default=str)})
        lines += [f"### {res.experiment}", "", verdict, "", "```", table.to_string(), "```", ""]
    plan = _plan(client.spec, folder, workers)
    sections.append({"title": "pilot → plan: the model's session as the pilot", "verdict": plan["verdict"],
                     "tables": plan["tables"], "details": json.dumps(plan["json"], indent=1, default=str)})
    lines += ["### pilot → plan", "", plan["verdict"], ""]
    forms = forms_pilot(client, folder, seed)
    sections.append({"title": "prompt forms: a pilot across forms → a forms plan", "verdict": forms["verdict"],
                     "tables": forms["tables"], "details": json.dumps(forms["json"], indent=1, default=str)})
    lines += ["### prompt forms: pilot → forms plan", "", forms["verdict"], ""]
    return sections, lines, {"sessions": [r.as_json() for r in results], "plan": plan["json"],
                             "forms_pilot": forms["json"]}


def _verdict(res: Any) -> str:
    s = res.summary
    rate = "no trials" if s.valid_rate is None else f"{s.valid_rate:.0%} valid answers ({s.valid_trials} of {s.trials})"
    speed = f"{s.calls} calls in {s.seconds:.1f} s" + (f" ({s.calls_per_second:.2f}/s)" if s.calls_per_second else "")
    rejected = "; ".join(f"{n}× {r}" for r, n in s.parse_reasons.items()) or "none rejected"
    fitted = ("metrics computed from the one session" if res.model_metrics is not None
              else f"metrics not computable from the one session: {res.model_reason}")
    return f"{MODEL_LABEL} on {res.experiment}: {rate}; {speed}; parse errors: {rejected}; {fitted}."


def _plan(spec: str, folder: Path, workers: int | None) -> dict[str, Any]:
    """Run ``cogtestbed plan`` with the instrumental-learning session as its pilot."""
    from cogtestbed.api.plan import plan

    pilot, out = folder / PILOT_EXPERIMENT, folder / "plan"
    command = (f"cogtestbed plan {PILOT_EXPERIMENT} --model {PLAN_ARGS['model']} --effect {PLAN_ARGS['effect']} "
               f"--llm {spec} --pilot {pilot} --subjects {PLAN_ARGS['subjects']} --trials {PLAN_ARGS['trials']} "
               f"--mc-se {PLAN_ARGS['mc_se']} -o {out}")
    console_err.print(f"pilot → plan: {command}", highlight=False, markup=False, soft_wrap=True)
    try:
        plan(PILOT_EXPERIMENT, llm=[spec], pilot=pilot, workers=workers, **PLAN_ARGS).save(out)
    except ValueError as exc:  # the plan's own refusal: > 90 % invalid answers, or no design reaching the power
        return {"verdict": f"the plan from the pilot refused (exit 2 on the command line): {exc}", "tables": [],
                "json": {"command": command, "refused": str(exc)}}
    payload = json.loads((out / "plan.json").read_text())
    p, chosen, power, cost = payload["pilot"], payload["run"], payload["power"], payload["cost"]
    verdict = (f"planned from the pilot's measured invalid rate {p['invalid_rate']:.0%} (simulated as lapses of "
               f"every synthetic subject) and its measured {p['completion_tokens_per_call']:.1f} completion tokens "
               f"per call ({p['prompt_tokens_per_call']:.0f} prompt tokens at the pilot's shorter design): "
               f"{chosen['subjects']} sessions of {PILOT_EXPERIMENT} at {PLAN_ARGS['trials']} trials reach "
               f"power {power['rate']:.2f} ± {power['mc_se']:.2f} for {PLAN_ARGS['effect']} — {cost.get('calls')} "
               f"calls, {cost.get('expected_completion_tokens')} completion tokens expected; {out / 'plan.json'} "
               f"runs with `cogtestbed run --plan {out / 'plan.json'} -o DIR`.")
    frontier = pd.DataFrame(payload.get("frontier", []))
    return {"verdict": verdict, "tables": [("cost–power frontier", frontier)] if len(frontier) else [],
            "json": {"command": command, "pilot": p, "lapse": payload["lapse"], "run": chosen}}


def forms_pilot(client: Any, folder: Path, seed: int) -> dict[str, Any]:
    """The pilot across prompt forms (:data:`FORMS_PILOT`) and the forms plan it feeds
    (``cogtestbed plan … --forms 1,2,4,8 --pilot DIR``): the estimated form SD and the plan's choice,
    or, where the pilot does not identify the form SD, why, and the plan for :data:`ASSUMED_FORM_SD`."""
    from cogtestbed.api.form_plan import plan_forms
    from cogtestbed.errors import InputError
    from cogtestbed.runs.real_model import run_session

    cfg = FORMS_PILOT
    run_dir = folder / "forms_pilot"
    shutil.rmtree(run_dir, ignore_errors=True)
    console_err.print(f"{client.spec}: a pilot across {cfg['forms']} prompt forms ({cfg['subjects']} sessions of "
                      f"{PILOT_EXPERIMENT})", highlight=False, markup=False)
    _, summary = run_session(client.with_chat(False), PILOT_EXPERIMENT, "completions", run_dir,
                             folder / "llm_cache.sqlite", seed=seed, subjects=int(cfg["subjects"]),
                             forms=tuple(range(int(cfg["forms"]))), visits_per_casino=cfg["visits_per_casino"])
    args = FORMS_PLAN_ARGS
    command = (f"cogtestbed plan {PILOT_EXPERIMENT} --model {args['model']} --effect {args['effect']} "
               f"--forms {args['forms']} --pilot {run_dir}")
    console_err.print(f"pilot → forms plan: {command}", highlight=False, markup=False, soft_wrap=True)
    per_session = summary.trials // max(1, int(cfg["subjects"]))
    ran = (f"{MODEL_LABEL} in {cfg['forms']} prompt forms of {PILOT_EXPERIMENT} (form 0 verbatim, the others ours): "
           f"{cfg['subjects']} sessions of {per_session} trials, {summary.calls} calls in {summary.seconds:.1f} s, "
           f"{_rate(summary.valid_rate)} valid answers")
    out: dict[str, Any] = {"command": command, "pilot": {**cfg, "run_dir": str(run_dir), **summary.as_json()}}
    planned: dict[str, Any] | None = None
    try:
        planned = plan_forms(PILOT_EXPERIMENT, pilot=run_dir, **args)
    except InputError as exc:  # the pilot's own refusal (too few valid subjects in a form, no estimate)
        problems = [str(exc)]
    else:
        problems = list(planned["scales"].get("problems", []))
    if planned is not None and not problems:
        out["plan"] = planned
        return {"verdict": f"{ran}. {_forms_choice(planned, 'the pilot')}", "tables": _forms_tables(planned),
                "json": out}
    assumed = plan_forms(PILOT_EXPERIMENT, form_sd=ASSUMED_FORM_SD, **args)
    out.update(identified=False, problems=problems, assumed_plan=assumed)
    sd = ", ".join(f"{k}={v:g}" for k, v in ASSUMED_FORM_SD.items())
    verdict = (f"{ran}. This pilot does NOT identify the form SD, so no estimate is reported and no plan is made "
               f"from it: {'; '.join(problems)}. For comparison, the plan for an ASSUMED form SD "
               f"(`--form-sd {sd}` on the logit scale, not measured): {_forms_choice(assumed, 'the assumption')}")
    return {"verdict": verdict, "tables": _forms_tables(assumed), "json": out}


def _rate(rate: float | None) -> str:
    return "no" if rate is None else f"{rate:.0%}"


def _forms_choice(planned: dict[str, Any], source: str) -> str:
    """One sentence: τ and σ of the effect (from ``source``) and the forms × subjects the plan chose."""
    from cogtestbed.formatting import num

    sc, eff = planned["scales"], (FORMS_PLAN_ARGS["effect"].partition("=")[0], float(planned["effect"]))
    interval = sc.get("tau_interval")
    tau = num(sc["tau"]) + ("" if interval is None else f" [{num(interval[0])}, {num(interval[1])}] "
                                                         f"({sc['level']:.0%} F interval)")
    chosen = planned["chosen"]
    choice = ("no count of forms reaches power " f"{planned['target_power']:g}" if chosen is None else
              f"{chosen['forms']} forms × {chosen['subjects_per_form']} subjects ({chosen['subjects']} in all) reach "
              f"power {chosen['power']:.2f}")
    one = planned["one_form"]
    single = "" if one is None else (f"; one form cannot test it over wordings (the naive test, which ignores forms, "
                                     f"would take {one['naive_subjects']} subjects at a size above α)")
    return (f"{eff[0]} varies between forms with SD τ = {tau} from {source}, one subject's σ = {num(sc['sigma'])}; "
            f"for {eff[0]} = {eff[1]:g}: {choice}{single}.")


def _forms_tables(planned: dict[str, Any]) -> list[tuple[str, pd.DataFrame]]:
    rows = pd.DataFrame(planned["designs"])
    return [("forms × subjects (forms-aware test: t on the form means)", rows)] if len(rows) else []

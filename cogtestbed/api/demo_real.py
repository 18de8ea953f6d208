"""The demo's real-model part: ``hf:smollm2-135m`` through the same environments as the synthetic
agents, beside a synthetic population, and its session used as the pilot of a plan.

The sessions (:data:`~cogtestbed.validation.runs.real_model.DEMO_SESSIONS`) run in completions mode, as
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


def real_model_part(client: Any, output: Path, seed: int, workers: int | None, params: dict[str, float]
                    ) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """(HTML sections, Markdown lines, JSON) of the real-model part, written under ``output/real_model``
    (``params``: the synthetic agent's parameters the pilot compares with)."""
    from cogtestbed.validation.runs.real_model import DEMO_SESSIONS, demo_sessions, demo_table

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
    return sections, lines, {"sessions": [r.as_json() for r in results], "plan": plan["json"]}


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

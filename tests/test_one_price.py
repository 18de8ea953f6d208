"""One price (issue 67, item 6): a plan's expected dollars and ``run --dry-run`` of the plan's own ``run``
block agree to the cent on every experiment, from one function (``pricing.expected_cost``), with and without
measured completion tokens, in batch mode, and for a reasoning model (its cost range in the plan)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogtestbed.api.run import estimate_run, planned_request
from cogtestbed.llm_adapters.runs.hidden_tokens import HiddenTokens, KindTokens, from_assumption, local_endpoint
from cogtestbed.planning.plan_report import PLAN_VERSION, run_block
from cogtestbed.planning.pricing import Pricer, cost_range_line, tokens_source
from cogtestbed.registry import experiment_names, get_experiment
from cogtestbed.studies.study_data import design_for_trials

#: A small design of every experiment (its own smallest sizes where the default is long to render).
SMALL = {"belief-coherence": {"n_contexts": 2, "n_reps": 1},
         "magnitude": {"task": "line-ratio", "conditions": ("base",), "modalities": ("text",), "ranges": ("medium",),
                       "trials_per_session": 5},
         "revealed-belief": {"scenarios": ("dice",), "variants": ("regular",), "n_samples": 2, "dice_faces": (4, 6, 8),
                             "n_dice": (1,), "channels": ("revb",)},
         "bart": {"balloons_per_type": 1, "max_pumps": (8, 4, 2)}}

PILOT = HiddenTokens({"all": KindTokens(6.0, 4.0, 8.0, 30), "text": KindTokens(6.0, 4.0, 8.0, 30)},
                     "pilot runs/p (hf:tiny-random, 30 answered calls, on the local endpoint hf:tiny-random "
                     "(in-process))", None, "hf:tiny-random (in-process)")


def _dry_run_of_block(tmp: Path, block: dict, llm: str, plan: dict | None = None) -> dict:
    """``cogtestbed run --plan FILE --llm LLM --dry-run``'s report of a plan holding ``block`` (or of ``plan``,
    the whole payload a plan writes)."""
    path = tmp / "plan.json"
    path.write_text(json.dumps(plan or {"plan_version": PLAN_VERSION, "run": block}))
    opts = {"plan": path, "experiment": None, "subjects": 1, "seed": 0, "design": None, "temperature": None,
            "max_calls": None, "max_cost": None, "batch": False, "base_url": None, "mode": "auto", "stop": None,
            "top_logprobs": None, "cache": None, "share_cache": False, "concurrency": 1, "rpm": None, "tpm": None,
            "add_budget": None, "prices": None, "allow_unpriced": False, "timeout": 60.0, "retry_for": 60.0,
            "resume": False, "progress_every": 10, "poll_every": 30.0, "max_tokens": None, "reask": 0}
    request, _ = planned_request(llm, tmp / "run", opts)
    return estimate_run(request)


def _design(exp):
    small = {k: v for k, v in SMALL.get(exp.name, {}).items() if k in exp.design_cls.model_fields}
    return design_for_trials(exp, None, small)


@pytest.mark.parametrize("name", experiment_names())
def test_plan_price_is_the_dry_run_price_of_its_run_block(name: str, tmp_path: Path) -> None:
    exp = get_experiment(name)
    design = _design(exp)
    for hidden, batch in ((None, False), (PILOT, False), (None, True)):
        pricer = Pricer(exp, ("openai:gpt-4o",), seed=3, hidden=hidden, batch=batch)
        cost = pricer.exact(design, 2)
        block = run_block(pricer, exp, design, 2, cost.per_llm[0], None)
        dry = _dry_run_of_block(tmp_path, block, "openai:gpt-4o")
        assert cost.expected_dollars is not None and cost.expected_dollars > 0
        assert round(dry["expected_cost_usd"], 2) == round(cost.expected_dollars, 2)
        assert dry["expected_cost_usd"] == pytest.approx(cost.expected_dollars, abs=1e-4)
        assert dry["calls"] == cost.calls and dry["prompt_tokens"] == cost.prompt_tokens
        if hidden is None:
            assert cost.dollars_range is None and cost.expected_dollars == pytest.approx(cost.dollars, abs=1e-4)
        else:  # measured completion tokens: a range around the expected price, and the block carries them
            low, high = cost.dollars_range
            assert low <= cost.expected_dollars <= high and dry["expected_cost_usd_range"] == [low, high]
            assert block["completion_tokens_per_call"]["per_call"]["all"]["mean"] == 6.0


def test_a_reasoning_plan_carries_its_cost_range_and_a_local_pilot_is_flagged(tmp_path: Path) -> None:
    exp = get_experiment("temporal-discounting")
    design = _design(exp)
    pricer = Pricer(exp, ("openai:o3",), seed=1, hidden=from_assumption("500:3000"))
    cost = pricer.exact(design, 2)
    low, high = cost.dollars_range
    assert low < cost.expected_dollars < high and high / low == pytest.approx(6.0, rel=0.2)
    dry = _dry_run_of_block(tmp_path, run_block(pricer, exp, design, 2, cost.per_llm[0], None), "openai:o3")
    assert dry["expected_cost_usd"] == pytest.approx(cost.expected_dollars, abs=1e-4)
    line = cost_range_line({**cost.as_dict(), **tokens_source(pricer)})
    assert line is not None and line.startswith(f"cost range: ${low:.3f} to ${high:.3f}")
    assert "assumption --assume-reasoning-tokens 500:3000" in line and "WARNING" not in line
    local = cost_range_line({"dollars_range": [0.1, 0.2], "expected_dollars": 0.15,
                             **tokens_source(Pricer(exp, ("openai:o3",), seed=1, hidden=PILOT))})
    assert local is not None and "hidden tokens measured on a local endpoint (hf:tiny-random" in local
    assert local_endpoint({"llm": "openai:o3", "base_url": "http://127.0.0.1:8000/v1"}) == "http://127.0.0.1:8000/v1"
    assert local_endpoint({"llm": "openai:o3", "base_url": None}) is None
    assert local_endpoint({"llm": "hf:tiny-random"}) == "hf:tiny-random (in-process)"


def test_a_pilot_of_the_same_design_gives_calls_and_prompts_per_session_and_a_prediction_interval() -> None:
    exp = get_experiment("temporal-discounting")  # titration: answers decide how many questions are asked
    design = _design(exp)
    row = KindTokens(300.0, 280.0, 320.0, 18, None, 60.0)
    rows = {"all": row, "text": row}
    pilot = HiddenTokens(rows, "pilot p (openai:o3, 18 answered calls)", None, None, (9.0, 9.0),
                         design.model_dump(mode="json"), (1100.0, 1300.0))
    assert HiddenTokens.from_json(pilot.as_json()) == pilot
    assert pilot.calls_per_session(3) == (9.0, 9.0, 9.0)
    low, mean, high = pilot.prompt_tokens_per_session(3)
    assert mean == 1200.0 and low < 1200.0 < high
    lo, hi = rows["all"].interval(27)
    assert lo < 280.0 and hi > 320.0  # a run's mean of 27 calls varies more than the pilot's mean of 18
    report = Pricer(exp, ("openai:o3",), seed=1, hidden=pilot).exact(design, 3).per_llm[0]
    other = Pricer(exp, ("openai:o3",), seed=1, hidden=from_assumption("300")).exact(design, 3).per_llm[0]
    assert report["calls"] == other["calls"] != 27  # the random playthrough's calls, as the dry run counts them
    from cogtestbed.llm_adapters.clients.prices import PriceTable

    price = PriceTable().lookup("openai:o3")
    assert report["expected_cost_usd"] == pytest.approx(round(price.cost(3600, 27 * 300), 4), abs=1e-4)


@pytest.mark.parametrize(("name", "adaptive", "precision", "trials"), [
    pytest.param("magnitude", "w_prior", "w_prior=0.05", 3, marks=pytest.mark.slow),  # ~25 s a run: slow suite
    ("temporal-discounting", "k", "k=0.03", 9)])
def test_an_adaptive_plan_price_is_the_dry_run_price_of_its_run_block(name: str, adaptive: str, precision: str,
                                                                      trials: int, tmp_path: Path) -> None:
    import cogtestbed as ct

    for llm, assume in (("openai:gpt-4o", None), ("openai:o3", "500:3000")):
        extra = {} if assume is None else {"assume_reasoning_tokens": assume}
        plan = ct.plan(name, adaptive=adaptive, precision=precision, assurance=0.8, llm=llm, subjects=20,
                       trials="1:10", adaptive_sims=6, seed=2, **extra)
        p = plan.payload
        block, cost = p["run"], p["cost"]
        # the run block states the exact design priced: the adaptive arm's sessions and trials, adaptive fields set
        assert p["adaptive"]["trials"] == trials and block["design"]["trials"] == trials and block["subjects"] == 20
        assert list(block["design"]["adaptive"]) == [adaptive] and block["llms"] == [llm]
        dry = _dry_run_of_block(tmp_path, block, llm, plan=p)  # the adaptive.json the plan writes, as it is
        assert p["adaptive"]["cost_usd"] == cost["expected_dollars"] > 0.01
        assert round(dry["expected_cost_usd"], 2) == round(cost["expected_dollars"], 2)
        assert dry["expected_cost_usd"] == pytest.approx(cost["expected_dollars"], abs=1e-4)
        assert dry["calls"] == cost["calls"] == p["adaptive"]["calls"]
        if assume is None:
            assert cost["dollars_range"] is None and "cost range:" not in "\n".join(plan.lines())
        else:
            low, high = cost["dollars_range"]
            assert low < cost["expected_dollars"] < high and dry["expected_cost_usd_range"] == [low, high]
            text = "\n".join(plan.lines())
            assert f"cost range: ${low:.3f} to ${high:.3f}" in text and "--assume-reasoning-tokens 500:3000" in text

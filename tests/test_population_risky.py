"""Issue 52: an LLM's loss aversion against a prospect-theory population of people, planned and
priced (``cogtestbed plan risky-choice --model prospect-theory --effect lambda=D --llm A
--population P``).  Slow: every simulated study fits every person and every LLM subject."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cogtestbed.inference.population import Population
from cogtestbed.registry import get_experiment

PEOPLE = 20


def _people(path: str) -> str:
    """A stand-in population of prospect-theory people: medians at the model's prior means (λ 1.22,
    α 0.77, θ 1.35), between-subject SD 0.3 on the log scale, 200 posterior draws."""
    model = get_experiment("risky-choice").model("prospect-theory")
    rng = np.random.default_rng(0)
    mu = {p.name: tuple(rng.normal(float(p.prior_mean), 0.05, 200)) for p in model.parameters}
    sigma = {p.name: tuple(np.abs(rng.normal(0.3, 0.02, 200))) for p in model.parameters}
    est = {p.name: tuple(float(v) for v in p.inside(p.to_constrained(rng.normal(float(p.prior_mean), 0.3, PEOPLE))))
           for p in model.parameters}
    Population(name="pt-stand-in", experiment="risky-choice", model="prospect-theory", subjects=PEOPLE, trials=98,
               mu=mu, sigma=sigma, estimates=est, source="simulated stand-in for people").save(path)
    return path


@pytest.mark.slow
def test_a_plan_of_an_llms_loss_aversion_against_people_prints_a_design_and_its_price(tmp_path, capsys):
    from cogtestbed.cli import run_cli

    path = _people(str(tmp_path / "people.json"))
    argv = ["plan", "risky-choice", "--model", "prospect-theory", "--effect", "lambda=1.0", "--llm",
            "openai:gpt-4o-mini", "--population", path, "--subjects", "5:40", "--trials", "98", "--mc-se", "0.1",
            "--workers", "1", "--json"]
    assert run_cli(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    chosen = plan["chosen"]
    assert 5 <= chosen["subjects"] <= 40 and chosen["trials"] == 98
    assert chosen["power"] >= 0.8 and chosen["mc_se"] <= 0.1
    assert chosen["calls"] == chosen["subjects"] * 98  # one call per trial, no re-asks
    assert chosen["dollars"] > 0 and chosen["prompt_tokens"] > chosen["calls"]
    assert len(plan["cost"]["per_llm"]) == 1
    assert plan["study"]["people"] == PEOPLE and plan["study"]["people_trials"] == 98
    assert plan["target"]["what"].startswith(f"a difference in lambda of 1 between an LLM and {PEOPLE} people")

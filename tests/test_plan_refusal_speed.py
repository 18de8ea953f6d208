"""A plan refused from its request alone is refused at once from a cold command line (issue 67, item 3): the
check reads the experiment's shipped facts (:mod:`cogtestbed.planning.facts`), so the refusal comes
before the experiment's module and the numerical libraries (numpy, pandas, scipy, numba, pymc, torch) are
imported; the shipped facts are those the loaded experiments give."""

from __future__ import annotations

import pytest
from cold_cli import assert_refused_cold, cold

import cogtestbed as ct
from cogtestbed.planning.facts import ExperimentFacts, facts_of, shipped_facts, shipped_names

LLMS = ["openai:gpt-4o", "openai:gpt-4o-mini"]
#: The issue's refused commands (and their neighbours): each must come before anything heavy is imported.
REFUSED = [
    ["belief-coherence", "--metric", "t1_cmi", "--compare", "logit-rum:scale=6", "logit-rum:scale=3", "--llm", LLMS[0],
     "--llm", LLMS[1], "--subjects", "10:99999999999"],
    ["belief-coherence", "--metric", "t2", "--compare", "logit-rum:scale=6", "logit-rum:scale=3", "--llm", LLMS[0],
     "--llm", LLMS[1]],
    ["belief-coherence", "--model", "mnl", "--effect", "slope_yes=-6", "--forms", "1,2,4", "--form-sd",
     "slope_yes=0.2", "--llm", LLMS[0], "--llm", LLMS[1]],
    ["instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2", "--llm", LLMS[1], "--subjects",
     "10:99999999999"],
    ["instrumental-learning", "--model", "rw-pm", "--effect", "nope=0.2", "--llm", LLMS[1]],
    ["instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.95", "--llm", LLMS[1]],
    ["two-step", "--metric", "nope", "--compare", "hybrid:w=0.2", "hybrid:w=0.8", "--llm", LLMS[0], "--llm", LLMS[1]],
    ["belief-coherence", "--precision", "nope=0.05", "--model", "mnl"],
    ["instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2", "--forms", "1,2", "--form-sd",
     "nope=0.2"],
]
def test_the_refusals_import_nothing_heavy() -> None:
    """Every refusal above: exit 2, one ``error:`` line, and not one numerical library imported by the time the
    last is refused (deterministic, whatever the machine's load)."""
    assert_refused_cold(REFUSED)


def test_a_cold_refusal_imports_nothing_heavy() -> None:
    """One refusal in a fresh process, as the command line runs it: exit 2, its one line, and not one heavy module
    imported (before the shipped facts it imported the experiment: numba, scipy, pandas, 0.6 s of CPU on its own;
    no test times it, the imports are what made it slow)."""
    assert_refused_cold([REFUSED[2]])
    done = cold("import sys; from cogtestbed.cli import run_cli; sys.exit(run_cli(sys.argv[1:]))", "plan", *REFUSED[2])
    assert done.returncode == 2 and "cannot be planned with forms" in done.stderr


@pytest.mark.parametrize("name", list(ct.experiments()))
def test_the_shipped_facts_are_the_loaded_experiments(name: str) -> None:
    """``plan_facts.json`` holds what the refusals read from each package experiment
    (``python -m cogtestbed.planning.facts`` rewrites it)."""
    shipped = shipped_facts(name)
    assert shipped is not None, f"no shipped facts for {name}: python -m cogtestbed.planning.facts"
    live = facts_of(ct.get_experiment(name))
    assert shipped == ExperimentFacts.from_dict(name, live.to_dict()), (
        f"{name}'s facts changed: python -m cogtestbed.planning.facts")
    assert set(shipped_names()) == set(ct.experiments())

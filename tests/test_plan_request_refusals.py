"""Requests a plan cannot answer, or would answer with an option silently dropped, refused before anything is
simulated (the probe of issue 71's plan requests): one line, exit 2, never a traceback.

Each case is a request that before ran (minutes, or a search to 2,000 subjects that can never succeed), printed
a traceback, or planned something other than what was asked (an option dropped, an effect erased by ``params``).
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from cold_cli import HEAVY, assert_refused_cold, cold
from conftest import never

import cogtestbed as ct
from cogtestbed.cli import run_cli

MINI = "openai:gpt-4o-mini"
LLMS = ["openai:gpt-4o", MINI]
RW = {"model": "rw-pm", "llm": MINI}
RW_CLI = ["--model", "rw-pm", "--llm", MINI]
TWO_STEP = {"metric": "model_basedness", "compare": ("hybrid:w=0.3", "hybrid:w=0.7"), "llm": LLMS}
KINDS = "forms, adaptive, precision, sequential, hierarchical, power, monitor, mix"
TWO_STEP_CLI = ["--metric", "model_basedness", "--compare", "hybrid:w=0.3", "hybrid:w=0.7", "--llm", LLMS[0],
                "--llm", LLMS[1]]

UNREACHABLE = ("no trial count in '{1}' is reachable: instrumental-learning's visits_per_casino scales a session in "
               "steps of 4 trials")
NOT_POOLED = ("experiment instrumental-learning pools subjects, not sessions: {} needs an experiment whose pooling "
              "unit is the session")
#: (experiment, ct.plan's keywords, the command line's options, the exact refusal of the library, of the CLI).
REFUSED: list[tuple[str, dict[str, Any], list[str], str, str]] = [
    # an effect erased: --param fixes, for every simulated subject, a parameter the effect moves
    ("instrumental-learning", {**RW, "effect": {"alpha_pos": 0.4}, "params": {"alpha_pos": 0.3}},
     [*RW_CLI, "--effect", "alpha_pos=0.4", "--param", "alpha_pos=0.3"],
     "`params` alpha_pos=0.3 fixes alpha_pos for every simulated subject, so the effect alpha_pos=0.4 (which moves "
     "alpha_pos) would not be simulated: set its population median with `base` instead",
     "--param alpha_pos=0.3 fixes alpha_pos for every simulated subject, so the effect alpha_pos=0.4 (which moves "
     "alpha_pos) would not be simulated: set its population median with --base instead"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "params": {"alpha_neg": 0.3}},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--param", "alpha_neg=0.3"],
     "`params` alpha_neg=0.3 fixes alpha_neg for every simulated subject, so the effect optimism_bias=0.2 (which "
     "moves alpha_pos, alpha_neg) would not be simulated: set its population median with `base` instead",
     "--param alpha_neg=0.3 fixes alpha_neg for every simulated subject, so the effect optimism_bias=0.2 (which "
     "moves alpha_pos, alpha_neg) would not be simulated: set its population median with --base instead"),
    # options a metric target never read
    ("two-step", {**TWO_STEP, "base": {"w": 0.2}}, [*TWO_STEP_CLI, "--base", "w=0.2"],
     "`base` sets a model's population medians: a metric or test target simulates the agent settings it names "
     "(`compare`, `agent`, `params`); drop `base`",
     "--base sets a model's population medians: a metric or test target simulates the agent settings it names "
     "(--compare, --agent, --param); drop --base"),
    ("two-step", {**TWO_STEP, "sd_between": 1.0}, [*TWO_STEP_CLI, "--sd-between", "1"],
     "`sd_between` sets a model's population spread: a metric or test target simulates the agent settings it names "
     "(`compare`, `agent`, `params`); drop `sd_between`",
     "--sd-between sets a model's population spread: a metric or test target simulates the agent settings it names "
     "(--compare, --agent, --param); drop --sd-between"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": -0.05}, "population": "human:cogbench-instrumental",
                               "sd_between": 2.0},
     [*RW_CLI, "--effect", "optimism_bias=-0.05", "--population", "human:cogbench-instrumental", "--sd-between", "2"],
     "`population` scatters the subjects by its own posterior SDs: drop `sd_between`",
     "--population scatters the subjects by its own posterior SDs: drop --sd-between"),
    # a base out of its bounds: the base is refused, not an effect with a wrong largest size
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "base": {"alpha_pos": 2.0}},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--base", "alpha_pos=2"],
     "`base` alpha_pos=2 is outside its bounds [0, 1]",
     "--base alpha_pos=2 is outside its bounds [0, 1]"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "base": {"nope": 2.0}},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--base", "nope=2"],
     "`base` nope: model rw-pm has parameters alpha_pos, alpha_neg, beta",
     "--base nope: model rw-pm has parameters alpha_pos, alpha_neg, beta"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "params": {"nope": 2.0}},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--param", "nope=2"],
     "`params` nope: model rw-pm's simulated agent (rw-pm) takes alpha_neg, alpha_pos, beta",
     "--param nope: model rw-pm's simulated agent (rw-pm) takes alpha_neg, alpha_pos, beta"),
    # questions no design can answer: the search ran on to 2,000 subjects
    ("instrumental-learning", {**RW, "effect": {"beta": 0.0}}, [*RW_CLI, "--effect", "beta=0"],
     "`effect` beta=0 is no effect: every design detects it at the test's level, never at a power; give a nonzero "
     "size",
     "--effect beta=0 is no effect: every design detects it at the test's level, never at a power; give a nonzero "
     "size"),
    ("two-step", {**TWO_STEP, "compare": ("hybrid:w=0.3", "hybrid:w=0.3")},
     [*TWO_STEP_CLI[:2], "--compare", "hybrid:w=0.3", "hybrid:w=0.3", *TWO_STEP_CLI[5:]],
     "`compare` hybrid:w=0.3 and hybrid:w=0.3 are one setting: no difference to detect; compare two settings",
     "--compare hybrid:w=0.3 and hybrid:w=0.3 are one setting: no difference to detect; compare two settings"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "random_rate": 1.0},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--random-rate", "1"],
     "`random_rate` 100% and `invalid_rate` 0% leave 0% of the answers informative (less than 10%): no design "
     "detects anything from them",
     "--random-rate 100% and --invalid-rate 0% leave 0% of the answers informative (less than 10%): no design "
     "detects anything from them"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "subjects": 1},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--subjects", "1"],
     "`subjects` 1: a test of per-subject estimates needs at least 2 subjects in a group",
     "--subjects 1: a test of per-subject estimates needs at least 2 subjects in a group"),
    # a kind named that the request does not give what it needs: a traceback before
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "question": "precision"},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--question", "precision"],
     "a precision plan needs `precision` PARAM=HALFWIDTH",
     "a precision plan needs --precision PARAM=HALFWIDTH"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "question": "sequential"},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--question", "sequential"],
     "a sequential plan needs `looks` K (or auto)",
     "a sequential plan needs --looks K (or auto)"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "question": "hierarchical"},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--question", "hierarchical"],
     "a hierarchical plan needs `fit` hierarchical", "a hierarchical plan needs --fit hierarchical"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "question": "monitor"},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--question", "monitor"],
     "a monitor plan needs `monitor`", "a monitor plan needs --monitor"),
    # an option the kind does not read
    ("instrumental-learning", {"model": "rw-pm", "precision": {"beta": 0.1}, "power": 0.9},
     ["--model", "rw-pm", "--precision", "beta=0.1", "--power", "0.9"],
     f"a precision plan does not take `power`: drop it (`question`: {KINDS})",
     f"a precision plan does not take --power: drop it (--question: {KINDS})"),
    # a forms plan of a zero effect: an OverflowError before
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.0}, "forms": "1,2", "form_sd": {"alpha_pos": 0.2}},
     [*RW_CLI, "--effect", "optimism_bias=0", "--forms", "1,2", "--form-sd", "alpha_pos=0.2"],
     "`effect` optimism_bias=0 is no effect: every design detects it at the test's level, never at a power; give a "
     "nonzero size",
     "--effect optimism_bias=0 is no effect: every design detects it at the test's level, never at a power; give a "
     "nonzero size"),
]
#: Refused from the shipped facts or the request alone, before the experiment's import (before: after it, 2.6 s).

BELIEF_UNKNOWN_TEST = ("unknown test 'nope' for belief-coherence (the paper's names: T1a = t1_cmi, T1b = t1_nested, "
                       "T1c = t1_lr, T2 = t2, T3 = t3, T4 = t4); choose one of: accuracy, t1_cmi, t1_cmi_isotonic, "
                       "t1_lr, t1_nested, t2, t3, t4")
BELIEF_UNKNOWN_AGENT = ("unknown agent 'nope' for experiment belief-coherence; choose one of: chow, leak, "
                        "lie-incoherent, logit-rum, loss-report, loss-rum, nonmono-defer, nonmono-report, probit3, "
                        "pt-literal, pt-rum, random")
FROM_FACTS: list[tuple[str, dict[str, Any], list[str], str, str]] = [
    # sizes the design cannot take
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "trials": 7},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--trials", "7"], UNREACHABLE.format("`trials`", "7:7"),
     UNREACHABLE.format("--trials", "7:7")),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "trials": (5, 7), "looks": 3},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--trials", "5:7", "--looks", "3"],
     UNREACHABLE.format("`trials`", "5:7"), UNREACHABLE.format("--trials", "5:7")),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "trials": 7, "monitor": True},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--trials", "7", "--monitor"],
     UNREACHABLE.format("`trials`", "7:7"), UNREACHABLE.format("--trials", "7:7")),
    ("collider", {"model": "cbn-3p", "llm": MINI, "effect": {"m": 0.1}, "trials": 10},
     ["--model", "cbn-3p", "--llm", MINI, "--effect", "m=0.1", "--trials", "10"],
     "experiment collider has a fixed number of trials per run (no trials field)",
     "experiment collider has a fixed number of trials per run (no trials field)"),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "runs": 3},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--runs", "3"], NOT_POOLED.format("`runs`"),
     NOT_POOLED.format("--runs")),
    ("instrumental-learning", {"model": "rw-pm", "precision": {"beta": 0.1}, "runs": 2},
     ["--model", "rw-pm", "--precision", "beta=0.1", "--runs", "2"], NOT_POOLED.format("`runs`"),
     NOT_POOLED.format("--runs")),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "runs": 3, "monitor": True},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--runs", "3", "--monitor"], NOT_POOLED.format("`runs`"),
     NOT_POOLED.format("--runs")),
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "design": {"visits_per_casino": [12, 24]},
                               "trials": 96},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--design", "visits_per_casino=12,24", "--trials", "96"],
     "`trials` and a `design` list both size the run; give one of them",
     "--trials and a --design list both size the run; give one of them"),
    # a metric target's settings: one agent, its parameters (names and bounds), no lapse fit (no model is fitted)
    ("two-step", {**TWO_STEP, "compare": ("model-free:alpha=0.3", "hybrid:w=0.7")},
     [*TWO_STEP_CLI[:2], "--compare", "model-free:alpha=0.3", "hybrid:w=0.7", *TWO_STEP_CLI[5:]],
     "`compare` takes two settings of one agent, got 'model-free' and 'hybrid'",
     "--compare takes two settings of one agent, got 'model-free' and 'hybrid'"),
    ("two-step", {**TWO_STEP, "params": {"nope": 1.0}}, [*TWO_STEP_CLI, "--param", "nope=1"],
     "nope is not a parameter of agent hybrid; valid: alpha, beta, lam, persev, w",
     "nope is not a parameter of agent hybrid; valid: alpha, beta, lam, persev, w"),
    ("two-step", {**TWO_STEP, "compare": ("hybrid:w=0.3,zz=1,aa=2", "hybrid:w=0.7")},
     [*TWO_STEP_CLI[:2], "--compare", "hybrid:w=0.3,zz=1,aa=2", "hybrid:w=0.7", *TWO_STEP_CLI[5:]],
     "aa, zz are not parameters of agent hybrid; valid: alpha, beta, lam, persev, w",
     "aa, zz are not parameters of agent hybrid; valid: alpha, beta, lam, persev, w"),
    ("two-step", {**TWO_STEP, "lapse_fit": "fit"}, [*TWO_STEP_CLI, "--lapse-fit", "fit"],
     "`lapse_fit` sets how a model target's per-subject MLE is fitted: it goes with `model` and `effect`",
     "--lapse-fit sets how a model target's per-subject MLE is fitted: it goes with --model and --effect"),
    # the LLM options the pricer refuses: the request alone decides them (the capability and price tables)
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "reasoning_effort": "low"},
     [*RW_CLI, "--effect", "optimism_bias=0.2", "--reasoning-effort", "low"],
     "`reasoning_effort`: openai:gpt-4o-mini takes no reasoning_effort (capability table row 'openai:*': reasoning "
     "none); drop it",
     "--reasoning-effort: openai:gpt-4o-mini takes no reasoning_effort (capability table row 'openai:*': reasoning "
     "none); drop it"),
    ("instrumental-learning", {"model": "rw-pm", "llm": "openai:o3-mini", "effect": {"optimism_bias": 0.2}},
     ["--model", "rw-pm", "--llm", "openai:o3-mini", "--effect", "optimism_bias=0.2"],
     "openai:o3-mini is a reasoning model: it bills hidden reasoning tokens as output, often many times the answer's, "
     "so its cost cannot be priced from the prompts; give `pilot` DIR (a run of it: its tokens per call are measured) "
     "or `assume_reasoning_tokens` N (or LOW:HIGH) completion tokens per call",
     "openai:o3-mini is a reasoning model: it bills hidden reasoning tokens as output, often many times the answer's, "
     "so its cost cannot be priced from the prompts; give --pilot DIR (a run of it: its tokens per call are measured) "
     "or --assume-reasoning-tokens N (or LOW:HIGH) completion tokens per call"),
    ("instrumental-learning", {"model": "rw-pm", "llm": "openai:o3-mini", "effect": {"optimism_bias": 0.2},
                               "assume_reasoning_tokens": "x"},
     ["--model", "rw-pm", "--llm", "openai:o3-mini", "--effect", "optimism_bias=0.2", "--assume-reasoning-tokens", "x"],
     "`assume_reasoning_tokens` must be N or LOW:HIGH completion tokens per call (hidden ones included), positive, "
     "got 'x'",
     "--assume-reasoning-tokens must be N or LOW:HIGH completion tokens per call (hidden ones included), positive, "
     "got 'x'"),
    ("instrumental-learning", {"model": "rw-pm", "llm": "hf:tiny-random", "effect": {"optimism_bias": 0.2},
                               "batch": True},
     ["--model", "rw-pm", "--llm", "hf:tiny-random", "--effect", "optimism_bias=0.2", "--batch"],
     "`batch` needs a hosted backend with a batch API (openai:, anthropic:), not hf:tiny-random",
     "--batch needs a hosted backend with a batch API (openai:, anthropic:), not hf:tiny-random"),
    # a test target: its agent and the test the metrics report (belief coherence declares its tests; the other
    # experiments' metrics report none, so a headline metric is no test: before, refused by the first study)
    ("belief-coherence", {"test": "nope", "agent": "logit-rum", "llm": MINI},
     ["--test", "nope", "--agent", "logit-rum", "--llm", MINI],
     BELIEF_UNKNOWN_TEST, BELIEF_UNKNOWN_TEST),
    ("two-step", {"test": "performance", "agent": "hybrid:w=0.3", "llm": MINI},
     ["--test", "performance", "--agent", "hybrid:w=0.3", "--llm", MINI],
     "unknown test 'performance' for two-step; there are none for two-step",
     "unknown test 'performance' for two-step; there are none for two-step"),
    ("belief-coherence", {"test": "t2", "agent": "nope", "llm": MINI},
     ["--test", "t2", "--agent", "nope", "--llm", MINI],
     BELIEF_UNKNOWN_AGENT, BELIEF_UNKNOWN_AGENT),
    ("belief-coherence", {"test": "t2", "agent": "logit-rum:report_noise=3", "llm": MINI},
     ["--test", "t2", "--agent", "logit-rum:report_noise=3", "--llm", MINI],
     "`agent` logit-rum: report_noise=3 is outside its bounds [0, 0.5]",
     "--agent logit-rum: report_noise=3 is outside its bounds [0, 0.5]"),
    # an adaptive parameter its adaptive model lacks (before: refused after "simulating 200 subjects ...")
    ("temporal-discounting", {"model": "hyperbolic", "precision": {"k": 0.1}, "adaptive": "nope"},
     ["--model", "hyperbolic", "--precision", "k=0.1", "--adaptive", "nope"],
     "`adaptive` nope: the temporal-discounting adaptive model 'hyperbolic' has parameters k, temperature (or 'all')",
     "--adaptive nope: the temporal-discounting adaptive model 'hyperbolic' has parameters k, temperature (or 'all')"),
]
REFUSED += FROM_FACTS


@pytest.mark.parametrize(("experiment", "api", "cli", "message", "cli_message"), REFUSED,
                         ids=[f"{i}-{case[3][:40]}" for i, case in enumerate(REFUSED)])
def test_a_request_no_plan_answers_as_asked_is_refused_at_once(
        no_simulation: None, experiment: str, api: dict[str, Any], cli: list[str], message: str, cli_message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    ct.get_experiment(experiment)
    with pytest.raises((ct.InputError, ct.UnknownNameError)) as refused:  # an unknown name: the registry's error
        ct.plan(experiment, **api)  # before any simulation (the fixture no_simulation refuses one)
    assert str(refused.value) == message
    assert run_cli(["plan", experiment, *cli]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"error: {cli_message}" and "Traceback" not in err


@pytest.mark.parametrize("option", [{"seq_sims": 5}, {"null_sims": 0}])
def test_the_library_refuses_what_the_command_line_refuses(no_simulation: None, option: dict[str, int]) -> None:
    """The limits an option declares (``seq_sims`` >= 10, ...) hold for ``ct.plan`` as for the command line."""
    (name, given), = option.items()
    with pytest.raises(ct.InputError) as refused:
        ct.plan("instrumental-learning", **RW, effect={"optimism_bias": 0.2}, looks=3, **option)
    assert str(refused.value) == f"plan(): `{name}` must be in [10, 50000], got {given}"


def test_monitor_and_adaptive_sims_limits_hold_in_the_library(no_simulation: None) -> None:
    with pytest.raises(ct.InputError) as refused:
        ct.plan("instrumental-learning", **RW, effect={"optimism_bias": 0.2}, monitor=True, monitor_sims=5)
    assert str(refused.value) == "plan(): `monitor_sims` must be in [20, 50000], got 5"
    with pytest.raises(ct.InputError) as refused:
        ct.plan("temporal-discounting", model="hyperbolic", precision={"k": 0.1}, adaptive="k", adaptive_sims=1)
    assert str(refused.value) == "plan(): `adaptive_sims` must be in [2, 10000], got 1"


#: Refusals that must come before anything heavy is imported (a cold command line: well under a second); before,
#: each --looks refusal imported the sequential planner (numba, scipy) and the fit options the experiment.
COLD = [
    ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--looks", "1"],
    ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--looks", "auto", "--spending", "pocock"],
    ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--looks", "3", "--fit", "hierarchical"],
    ["instrumental-learning", "--model", "rw-pm", "--llm", LLMS[0], "--llm", LLMS[1], "--effect", "optimism_bias=0.2",
     "--looks", "3"],
    ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--fit-sims", "5"],
    ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--param", "alpha_neg=0.3"],
    ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--base", "nope=2"],
    ["instrumental-learning", *RW_CLI, "--effect", "beta=0"],
    ["two-step", *TWO_STEP_CLI, "--sd-between", "1"],
    ["two-step", *TWO_STEP_CLI, "--model", "hybrid", "--effect", "w=0.2"],
    ["two-step", *TWO_STEP_CLI, "--subjects", "10:20"],
    ["instrumental-learning", "--model", "rw-pm", "--precision", "beta=0.1", "--llm", LLMS[0], "--llm", LLMS[1]],
    ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--forms", "1,2"],
    *([experiment, *cli] for experiment, _, cli, _, _ in FROM_FACTS),
    ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--design", "visits_per_casino=12", "--trials",
     "96"],
    ["two-step", *TWO_STEP_CLI[:2], "--compare", "hybrid:w=0.3", "hybrid:w=7", *TWO_STEP_CLI[5:]],
    ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--lapse-fit", "fixed=1.5"],
    ["instrumental-learning", "--model", "rw-pm", "--precision", "beta=0.1", "--adaptive", "beta"],
]


def test_these_refusals_import_nothing_heavy() -> None:
    """Each refusal above, from a cold command line, before the sequential planner or any numerical library is
    imported."""
    assert_refused_cold(COLD, (*HEAVY, "cogtestbed.planning.kinds.sequential.seqplan"))
def test_a_size_refusal_from_the_facts_is_refused_cold() -> None:
    """``--trials 7`` (unreachable) from a fresh process: its one line, before anything heavy is imported (before:
    the experiment was imported, 1.9 s of CPU)."""
    argv = ["instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--trials", "7"]
    assert_refused_cold([argv])
    done = cold("import sys; from cogtestbed.cli import run_cli; sys.exit(run_cli(sys.argv[1:]))", "plan", *argv)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {UNREACHABLE.format('--trials', '7:7')}"]


@pytest.mark.parametrize(("experiment", "options"), [
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "trials": "6:8"}),  # 8 is reachable
    ("two-step", {"model": "hybrid", "llm": MINI, "effect": {"w": 0.2}, "runs": 3}),  # two-step pools sessions
    ("instrumental-learning", {**RW, "effect": {"optimism_bias": 0.2}, "trials": 7,
                               "design": {"randomise_order": False}}),  # a design given: the loaded one decides
])
def test_sizes_the_design_takes_pass_the_facts(experiment: str, options: dict[str, Any]) -> None:
    from cogtestbed.planning.plan_kinds import check_before_import
    from cogtestbed.planning.plan_options import PlanRequest
    from cogtestbed.request import build_grouped

    check_before_import(experiment, build_grouped(PlanRequest, {}, {**options, "experiment": experiment}))


def test_the_facts_refuse_the_trials_the_loaded_experiment_refuses() -> None:
    """For every package experiment with a trials field, one trial more than its step: the facts' refusal is the
    design space's (:func:`~cogtestbed.planning.space.trials_values`), word for word."""
    from types import SimpleNamespace

    from cogtestbed.planning.facts import shipped_facts
    from cogtestbed.planning.plan_options import PlanRequest
    from cogtestbed.planning.request_checks import check_sizes
    from cogtestbed.planning.sizes import Sizes
    from cogtestbed.planning.space import trials_values
    from cogtestbed.request import build_grouped

    checked, spec = 0, cast(Any, SimpleNamespace(design={}))  # trials_values reads the study's design alone
    for name in ct.experiments():
        facts = shipped_facts(name)
        assert facts is not None
        if facts.trials_field is None or facts.trials_step < 2:
            continue
        bad = facts.trials_step + 1
        req = build_grouped(PlanRequest, {}, {"experiment": name, "trials": bad})
        with pytest.raises(ct.InputError) as from_facts:
            check_sizes(facts, req, False)
        with pytest.raises(ct.InputError) as loaded:
            trials_values(spec, ct.get_experiment(name), Sizes.of(bad, "trials"))
        assert str(from_facts.value) == str(loaded.value)
        check_sizes(facts, build_grouped(PlanRequest, {}, {"experiment": name, "trials": 2 * facts.trials_step}),
                    False)
        checked += 1
    assert checked >= 4


def test_the_trials_field_fixed_and_trials_searched_are_refused(no_simulation: None,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Before, ``--trials 96`` silently replaced ``--design visits_per_casino=12`` (24 visits were planned)."""
    with pytest.raises(ct.InputError) as refused:
        ct.plan("instrumental-learning", **RW, effect={"optimism_bias": 0.2}, design={"visits_per_casino": 12},
                trials=96)
    assert str(refused.value) == ("`trials` and `design` visits_per_casino=12 both set the trials of a run; give one "
                                  "of them")
    assert run_cli(["plan", "instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--design",
                    "visits_per_casino=12", "--trials", "96"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --trials and --design visits_per_casino=12 both set the trials of a run; give one of them")


def test_an_agent_setting_out_of_bounds_is_refused_before_simulating(no_simulation: None,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Before, a simulation worker refused it: "metric-power task 0 (rep 0): invalid parameters for hybrid: ..."."""
    with pytest.raises(ct.InputError) as refused:
        ct.plan("two-step", **{**TWO_STEP, "compare": ("hybrid:w=0.3", "hybrid:w=7")})
    assert str(refused.value) == "`compare` hybrid: w=7 is outside its bounds [0, 1]"
    cli = [*TWO_STEP_CLI[:2], "--compare", "hybrid:w=0.3", "hybrid:w=7", *TWO_STEP_CLI[5:]]
    assert run_cli(["plan", "two-step", *cli]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == "error: --compare hybrid: w=7 is outside its bounds [0, 1]"


def test_an_adaptive_plan_of_a_learning_task_is_refused_before_it_says_it_simulates(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before, "simulating 200 subjects from the prior ..." came first, then the refusal."""
    assert run_cli(["plan", "instrumental-learning", "--model", "rw-pm", "--precision", "beta=0.1", "--adaptive",
                    "beta"]) == 2
    err = capsys.readouterr().err
    assert "simulating" not in err and err.strip().splitlines() == [
        "error: instrumental-learning: --adaptive refused: a learning task: each trial's outcome feeds the subject's "
        "learning, so a trial cannot be chosen without changing what is learnt"]


def test_a_people_table_of_one_subject_or_no_rows_is_refused_in_words(tmp_path: Any, cogbench_dir: Any) -> None:
    """Before: "plan(): ReferenceSample: the sample ..." (a class name), and "runs have unequal trial counts []"."""
    import pandas as pd

    human = pd.read_csv(cogbench_dir / "InstrumentalLearning/human.csv")
    one, empty = tmp_path / "one.csv", tmp_path / "empty.csv"
    human[human["run"] == human["run"].iloc[0]].to_csv(one, index=False)
    human.iloc[0:0].to_csv(empty, index=False)
    with pytest.raises(ct.InputError) as refused:
        ct.plan("instrumental-learning", **RW, effect={"optimism_bias": -0.1}, human=str(one))
    assert str(refused.value) == f"the sample from {one.name} has fewer than 2 fitted subjects: no two-group test"
    with pytest.raises(ct.DataError) as unread:
        ct.plan("instrumental-learning", **RW, effect={"optimism_bias": -0.1}, human=str(empty))
    assert str(unread.value) == "empty.csv: no trials (a header without rows)"


def test_an_effect_past_a_populations_bounds_is_refused_before_simulating(no_simulation: None) -> None:
    """Before, a simulation worker refused it seconds later: "power task 0 (rep 0): the effect moves ..."."""
    with pytest.raises(ct.InputError) as refused:
        ct.plan("instrumental-learning", **RW, effect={"optimism_bias": 0.05}, population="human:cogbench-instrumental")
    assert str(refused.value).startswith("the effect moves alpha_neg by -0.025 from population cogbench-instrumental's "
                                         "median, past its bounds [0, 1] (in ")


def test_an_unknown_backend_is_named_as_such(no_simulation: None) -> None:
    """Before: "no price for nope:x in the price table ... or pass --allow-unpriced" (as if the model existed)."""
    with pytest.raises(ct.InputError) as refused:
        ct.plan("instrumental-learning", model="rw-pm", llm="nope:x", effect={"optimism_bias": 0.2})
    assert str(refused.value) == ("`llm` must be BACKEND:MODEL with BACKEND one of openai, anthropic, hf (e.g. "
                                  "hf:tiny-random, openai:gpt-4o-mini), got 'nope:x'")


def test_a_design_field_given_twice_is_refused(no_simulation: None, tmp_path: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Before, the last ``--design visits_per_casino=`` won silently (in plan and in simulate)."""
    twice = ["--design", "visits_per_casino=12", "--design", "visits_per_casino=24"]
    refusal = "error: --design sets visits_per_casino twice; give it once"
    assert run_cli(["plan", "instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", *twice]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == refusal
    out = str(tmp_path / "t.parquet")
    assert run_cli(["simulate", "instrumental-learning", "--agent", "rw-pm", *twice, "-o", out]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == refusal


def test_a_bad_lapse_fit_names_the_plans_own_option(no_simulation: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "--lapse must be none, fit or fixed=E ..." (plan has no --lapse)."""
    assert run_cli(["plan", "instrumental-learning", *RW_CLI, "--effect", "optimism_bias=0.2", "--lapse-fit",
                    "fixed=1.5"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --lapse-fit must be none, fit or fixed=E with E in [0, 1), got 'fixed=1.5'")


def test_a_param_on_an_agent_parameter_the_effect_moves_is_refused(no_simulation: None) -> None:
    """cbn-3p's m moves the cbn agent's m1 and m2: ``params`` m1 would erase half the effect (no shared name)."""
    with pytest.raises(ct.InputError) as refused:
        ct.plan("collider", model="cbn-3p", llm=MINI, effect={"m": 0.1}, params={"m1": 0.5})
    assert str(refused.value) == ("`params` m1=0.5 fixes m1 for every simulated subject, so the effect m=0.1 (which "
                                  "moves the agent's m1) would not be simulated: set the model's population medians "
                                  "with `base` instead")


def test_an_adaptive_plan_refuses_a_model_it_would_not_use(no_simulation: None,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, ``model`` was ignored by an adaptive plan (``--model nope`` ran with the adaptive model)."""
    import cogtestbed.planning.kinds.adaptive.adaptive_plan as adaptive_plan

    monkeypatch.setattr(adaptive_plan, "plan_adaptive", never)
    with pytest.raises(ct.InputError) as refused:
        ct.plan("temporal-discounting", model="nope", precision={"k": 0.1}, adaptive="k")
    assert str(refused.value) == ("`model` nope: temporal-discounting's adaptive sessions are chosen and fitted with "
                                  "its adaptive model hyperbolic: give `model` hyperbolic (or drop it)")
    with pytest.raises(ct.InputError) as refused:
        ct.plan("temporal-discounting", model="hyperbolic", precision={"k": 0.1}, adaptive="k", llm="nope:x")
    assert str(refused.value).startswith("`llm` must be BACKEND:MODEL with BACKEND one of")


def test_a_pilots_invalid_rate_with_random_lapses_leaving_too_few_answers_is_refused(
        tmp_path: Any, request: pytest.FixtureRequest) -> None:
    """The pilot's invalid rate (read from its run) and ``random_rate`` together leave under 10 % informative
    answers: refused once the pilot is read, naming both, before anything is simulated (before, the search ran
    on to its largest size)."""
    from test_plan import write_synthetic_pilot

    table, _ = write_synthetic_pilot(tmp_path / "pilot", subjects=4, invalid=0.5, seed=3)
    invalid = 1 - float(table["valid"].mean())
    assert 0.4 < invalid < 0.6
    request.getfixturevalue("no_simulation")  # the pilot is written: from here on nothing may be simulated
    with pytest.raises(ct.InputError, match=r"`random_rate` 45% and the pilot's invalid rate \d+% leave \d+% of the "
                                            r"answers informative \(less than 10%\)"):
        ct.plan("instrumental-learning", model="rw-pm", effect="optimism_bias=0.2", llm="openai:gpt-4o-mini",
                pilot=str(tmp_path / "pilot"), random_rate=0.45)
    assert invalid + 0.45 > 0.9  # the case the check is for

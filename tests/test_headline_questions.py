"""Each experiment's paper's headline questions are declared as data (``ExperimentSpec.headline_questions``) and
``benchmarks/bench_plans.py --headline`` plans them; its ETA error is read from the plan's heartbeat lines."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_plans_headline", ROOT / "benchmarks" / "bench_plans.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_plans_headline"] = module
    spec.loader.exec_module(module)
    return module


def test_belief_coherence_declares_t1a_t1c_t3_on_comparable_metrics() -> None:
    from cogtestbed.registry import get_experiment

    exp = get_experiment("belief-coherence")
    questions = {q.name: q for q in exp.headline_questions}
    assert list(questions) == ["T1a", "T1c", "T3"]
    for q, metric in zip(questions.values(), ("t1_cmi", "t1_lr", "t3"), strict=True):
        args = list(q.plan_args)
        assert args[args.index("--metric") + 1] == metric
        assert exp.metrics.comparability(metric).comparable
        settings = args[args.index("--compare") + 1:args.index("--compare") + 3]
        assert all(s.split(":")[0] in exp.agents for s in settings)
        assert args.count("--llm") == 2


def test_headline_commands_list_every_declared_question() -> None:
    commands = dict(_bench().headline_plans())
    assert commands["belief-coherence: T1a"].startswith("cogtestbed plan belief-coherence --metric t1_cmi")
    assert "--population human:spektor2024-all" in commands["risky-choice: lambda"]


def test_eta_error_compares_each_eta_after_the_first_design_with_the_phase_end() -> None:
    bench = _bench()
    said = [(10.0, "fixed plan: simulating 4 runs, 100 trials per run: 12/24 (x), 10 s elapsed, ETA 19 s\n"),
            (20.0, "4 runs, 50 contexts × 2 repetitions (100 trials per run): power 0 [0, 0.14] (24 sims)\n"),
            (30.0, "fixed plan: simulating 4 runs, 200 trials per run: 6/24 (x), 3 min 20 s elapsed, ETA 1 min 00 s\n"),
            (40.0, "fixed plan: simulating 4 runs, 200 trials per run: 12/24 (x), 3 min 30 s elapsed, ETA 10 s\n"),
            (50.0, "4 runs, 100 contexts × 2 repetitions (200 trials per run): power 0 [0, 0.14] (24 sims)\n")]
    assert bench.eta_errors(said) == pytest.approx([3.0, 1.0])  # 60 s said, 20 s took; 10 s said, 10 s took


#: The paper's headline question each experiment must declare (its name), beside belief coherence's and risky
#: choice's above.
DECLARED = {"bart": "risk", "horizon": "directed exploration", "instrumental-learning": "optimism bias",
            "probabilistic-reasoning": "prior weighting", "restless-bandit": "metacognition",
            "temporal-discounting": "score", "two-step": "model-basedness", "collider": "EA",
            "magnitude": "prior weight", "revealed-belief": "revealed vs stated gap"}


def test_every_paper_declares_its_headline_questions() -> None:
    from cogtestbed.registry import experiment_names, get_experiment

    declared = {name: [q.name for q in get_experiment(name).headline_questions] for name in experiment_names()}
    assert all(declared[name] for name in experiment_names())
    assert declared["collider"] == ["EA", "MV", "LAD"]
    assert all(question in declared[name] for name, question in DECLARED.items())


@pytest.mark.parametrize("experiment", sorted(DECLARED))
def test_each_headline_plan_is_a_request_the_planner_takes(experiment: str, no_simulation: None,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Each declared plan passes every check of its request and reaches the search's time check (its study
    timed at an injected hour, so a one-second limit refuses it before anything is simulated)."""
    import cogtestbed as ct
    from cogtestbed.cli import run_cli
    from cogtestbed.planning import estimate

    monkeypatch.setattr(estimate, "timed_simulation", lambda spec, smallest: (3600.0, 3600.0))
    for q in ct.get_experiment(experiment).headline_questions:
        assert run_cli(["plan", experiment, *q.plan_args, "--workers", "1", "--max-seconds", "1"]) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("error: --max-seconds 1: this plan's search may take up to "), (q.name, last)


def test_bound_is_read_from_the_max_seconds_refusal() -> None:
    bench = _bench()
    line = ("error: --max-seconds 1: this plan's search may take up to 2 min 05 s if it settles at the top of the "
            "range (1,432 simulated studies on 2 workers; one takes 3.5e-02 s at 2 runs, more at larger designs); "
            "the largest range that fits is --runs 2:3 (up to 0.9 s), or raise --max-seconds")
    assert bench.bound_of(line) == (125.0, 1432, pytest.approx(0.035))
    assert bench.bound_of("error: --runs: bad") is None


def test_eta_words_give_the_median_the_share_within_2x_and_the_worst() -> None:
    assert _bench().eta_words([1.0, 3.0, 1.5, 23.0]) == "median 2.2x, 50% within 2x, at most 23.0x (4 ETAs)"

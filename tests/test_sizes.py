"""One vocabulary of sizes, visible defaults, precision targets and recovery verdicts in the
researcher's terms — and the three questions of issue 31, each answered by one command (tiny sizes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer.main

from cogtestbed.cli import app, run_cli
from cogtestbed.registry import get_experiment
from cogtestbed.studies.sizes import design_label, split_design
from cogtestbed.studies.study_data import design_for_trials

MAGNITUDE_ONE_TASK = ["--design", "task=marker-location", "--design", 'conditions=["base"]',
                      "--design", 'modalities=["text"]']


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    code = run_cli([*args, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    return json.loads(out.out.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- the vocabulary
def test_designs_are_named_by_their_fields() -> None:
    belief = get_experiment("belief-coherence")
    assert design_label(belief, {"n_contexts": 40}, None) == "40 contexts × 5 repetitions (200 trials per run)"
    fixed, trials = split_design(belief, ["network=alarm", "n_contexts=40,80,160"])
    assert fixed == {"network": "alarm"} and trials == (200, 400, 800)  # contexts × 5 repetitions
    il = get_experiment("instrumental-learning")
    assert design_label(il, {}, 192) == "48 visits per casino (192 trials per run)"
    with pytest.raises(ValueError, match="sweeps belief-coherence's trials field n_contexts"):
        split_design(belief, ["n_reps=2,5"])


def test_trials_means_the_whole_run_and_the_error_says_so(capsys) -> None:
    code = run_cli(["recover", "magnitude", "--model", "static-bayes", "--trials", "10", "--reps", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot make one run of magnitude's design 10 trials long" in err
    assert "--design trials_per_session=N" in err


def test_every_option_shows_its_default() -> None:
    from cogtestbed.cli.app import show_unset_defaults

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        show_unset_defaults(command)
        for p in command.params:
            if p.param_type_name != "option" or getattr(p, "is_flag", False) or p.required:
                continue
            shown = p.show_default is not False and p.default not in (None, (), [])
            assert shown or "default" in (p.help or "").lower(), f"{name} --{p.name}: no default in --help"


def test_test_power_defaults_to_one_run_and_the_summary_says_what_a_run_is(capsys) -> None:
    out = _json(["power", "belief-coherence", "--test", "T1c", "--agent", "logit-rum:report_noise=0.05",
                 "--design", "network=asia", "--design", "n_contexts=20", "--sims", "2", "--workers", "1"], capsys)
    (cell,) = out["test_power"]["cells"]
    assert cell["runs"] == 1  # no silent pooling: one run (one subject) unless --runs says otherwise
    assert "One run is one simulated session of the whole design" in out["verdict"]
    assert "20 contexts × 5 repetitions (100 trials per run)" in out["verdict"]
    (design,) = out["designs"]
    assert design["fields"]["network"] == "asia" and design["fields"]["n_reps"] == 5  # every field, defaults too


# ----------------------------------------------------------------------------- the three questions
def test_question_1_trials_per_session_for_w_prior_within_0_05(capsys) -> None:
    """How many trials per session to recover magnitude's w_prior within ±0.05 with 90 % assurance?"""
    out = _json(["plan", "magnitude", "--model", "static-bayes", "--precision", "w_prior=0.05", "--assurance", "0.9",
                 *MAGNITUDE_ONE_TASK, "--design", "trials_per_session=10,40,160"], capsys)
    chosen = out["chosen"]
    assert out["target"] == {"kind": "precision", "scale": "natural", "parameter": "w_prior", "halfwidth": 0.05,
                             "assurance": 0.9}
    assert chosen["assurance"] >= 0.9 and chosen["interval95"][0] <= chosen["assurance"] <= chosen["interval95"][1]
    tps = chosen["resolved"]["fields"]["trials_per_session"]
    assert tps in (40, 160) and chosen["design"].startswith(f"{tps} trials per session")
    assert out["cost"]["trials_per_subject"] == 3 * tps  # three ranges of one task, condition and modality
    failed = [e for e in out["evaluated"] if e["trials"] < chosen["trials"]]
    assert failed and all(e["assurance"] < 0.9 for e in failed)  # every cheaper design simulated falls short


def test_question_2_t1c_false_positives_and_contexts_for_power(capsys, tmp_path: Path) -> None:
    """T1c's false-positive rate at report noise 0.05 for one subject, and the contexts for 80 % power
    against a leak of 0.1 (asia and 2 sims here; the README's command runs alarm)."""
    out = _json(["power", "belief-coherence", "--test", "T1c", "--agent", "leak:report_noise=0.05",
                 "--sweep", "leak=0,0.1", "--design", "network=asia", "--design", "n_contexts=20,40", "--sims", "2",
                 "--workers", "1", "-o", str(tmp_path / "q2")], capsys)
    cells = out["test_power"]["cells"]
    assert {(c["value"], c["n_trials"]) for c in cells} == {(0.0, 100), (0.1, 100), (0.0, 200), (0.1, 200)}
    assert "at leak=0 (no effect) the false-positive rate is 1 run of 20 contexts × 5 repetitions" in out["verdict"]
    assert "power first reached" in out["verdict"] or "no design here reaches 80% power" in out["verdict"]
    assert (tmp_path / "q2/test_power.png").stat().st_size > 1000


def test_question_3_plan_cost_with_a_pilot(capsys, tmp_path: Path) -> None:
    """The cheapest design detecting optimism bias with 80 % power, costed on gpt-4o-mini, from a
    3-subject pilot (here a synthetic pilot of known parameters, written by the run's own writer).
    The README's question asks about a bias of 0.2; 0.4 on 4:16 subjects walks the same search (a
    look, a refinement, a pruned trials range, the recovery at the chosen design) at a quarter of the
    simulations -- the printed lines this test checks are the same."""
    from test_plan import write_synthetic_pilot

    write_synthetic_pilot(tmp_path / "pilot", subjects=3, invalid=0.05, seed=2)
    code = run_cli(["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.4",
                    "--power", "0.8", "--llm", "openai:gpt-4o", "--pilot", str(tmp_path / "pilot"),
                    "--subjects", "4:16", "--design", "visits_per_casino=24", "--mc-se", "0.2", "--workers", "1"])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    assert "warning: the pilot in" in out.err and "ran openai:gpt-4o-mini, not openai:gpt-4o" in out.err
    estimate = out.err.index("estimate: one simulation takes about")  # before the search's first look
    assert estimate < out.err.index(": power ") and "a look of 24-96 simulations takes" in out.err
    first = out.out.splitlines()[0]
    assert first.startswith("cheapest design reaching 80% power") and "visits per casino" in first and "$" in first
    assert "recovery at this design: effect bias" in out.out


# ----------------------------------------------------------------------------- recovery verdicts
def test_recovery_verdict_uses_the_stated_tolerance_and_flags_estimates_at_a_bound(capsys) -> None:
    out = _json(["recover", "magnitude", "--model", "static-bayes", *MAGNITUDE_ONE_TASK, "--design",
                 "trials_per_session=5", "--subjects", "12", "--reps", "1", "--precision", "w_prior=0.001",
                 "--workers", "1"], capsys)
    w = out["parameters"]["w_prior"]
    assert w["within"]["halfwidth"] == 0.001 and w["within"]["meets"] is False
    assert "Recovered well (≥ 90% of estimates within the stated tolerance): none; NOT within tolerance: w_prior" \
        in out["verdict"]
    assert {"r", "rmse", "bias", "at_bound", "mean_estimate"} <= set(w)


def test_estimates_at_a_bound_are_found() -> None:
    import numpy as np

    from cogtestbed.parameters import Parameter
    from cogtestbed.studies.recovery_checks import at_bound

    beta = Parameter("beta", 0.0, 1e5, 5.0, transform="log")
    assert at_bound(np.array([5.0, 1e5, 99999.99, 12.0]), beta).tolist() == [False, True, True, False]


def test_any_integer_design_field_is_swept_one_study_per_value(capsys, tmp_path: Path) -> None:
    args = ["power", "belief-coherence", "--test", "T1c", "--agent", "logit-rum:report_noise=0.05",
            "--design", "network=asia", "--design", "n_contexts=20", "--design", "n_reps=2,5", "--sims", "1",
            "--workers", "1"]
    assert run_cli([*args, "--json", "-o", str(tmp_path / "sw")]) == 0
    payloads = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [p["designs"][0]["fields"]["n_reps"] for p in payloads] == [2, 5]
    assert "20 contexts × 2 repetitions (40 trials per run)" in payloads[0]["verdict"]
    for value in (2, 5):  # one report (and test-power plot of a single design) per value
        assert (tmp_path / f"sw/n_reps={value}/test_power.png").stat().st_size > 1000
    fixed, _ = split_design(get_experiment("belief-coherence"), ["network=asia,alarm"])  # text: one value
    with pytest.raises(ValueError, match="^design of belief-coherence: unknown network 'asia,alarm'"):
        design_for_trials(get_experiment("belief-coherence"), None, fixed)


# ----------------------------------------------------------------------------- plan searches any integer field
T1C_LEAK = ["belief-coherence", "--test", "T1c", "--agent", "leak:report_noise=0.05,leak=0.3", "--design",
            "network=asia", "--runs", "1", "--llm", "openai:gpt-4o-mini", "--mc-se", "0.2", "--workers", "1"]


def _cheapest_passing(out: dict, field: str, target: float) -> None:
    """The chosen design reaches the target and every cheaper design simulated falls short of it."""
    chosen = out["chosen"]
    assert chosen["power"] >= target and out["run"]["design"][field] == chosen.get(field, out["run"]["design"][field])
    cheaper = [e for e in out["evaluated"] if e["dollars"] < chosen["dollars"]]
    assert cheaper and all(e["power"] < target for e in cheaper)


def test_plan_searches_the_trials_field_by_its_name(capsys) -> None:
    """``plan … --design n_contexts=5,10,20,40``: the smallest context count reaching 80 % power."""
    out = _json(["plan", *T1C_LEAK, "--design", "n_contexts=5,10,20,40"], capsys)
    assert out["searched"] == "trials"
    n = out["run"]["design"]["n_contexts"]
    assert n in (10, 20) and f"{n} contexts × 5 repetitions" in out["chosen"]["design"]
    _cheapest_passing(out, "n_contexts", 0.8)


@pytest.mark.slow
def test_plan_searches_another_integer_design_field_with_looks(capsys) -> None:
    """A list on n_reps (not the trials field) is searched with n_contexts fixed; ``--looks`` keeps
    the chosen n_reps in the sequential run it plans."""
    # n_reps=1,2,8 (not 1,2,4,8): n_reps=4 sat at power 0.70 and took a 96-simulation look; without it the
    # search still walks three values, rejects the two cheaper ones and plans the sequential run at 8.
    out = _json(["plan", *T1C_LEAK, "--design", "n_contexts=10", "--design", "n_reps=1,2,8", "--looks", "2",
                 "--seq-sims", "10", "--null-sims", "20", "--null", "leak:leak=0"], capsys)
    chosen, run = out["chosen"], out["run"]
    assert out["searched"] == "n_reps" and chosen["n_reps"] in (2, 4, 8)
    assert run["design"]["n_reps"] == chosen["n_reps"] and run["design"]["n_contexts"] == 10
    assert f"10 contexts × {chosen['n_reps']} repetitions" in chosen["design"]
    assert {e["n_reps"] for e in out["evaluated"]} <= {1, 2, 8}
    _cheapest_passing(out, "n_reps", 0.8)
    assert out["study"]["design"]["n_reps"] == chosen["n_reps"] and "sequential" in out
    assert out["run"]["sequential"]["looks"] == 2


@pytest.mark.slow
def test_plan_searches_a_design_field_for_a_model_effect_and_for_precision(capsys) -> None:
    # c_fp=0.4 on 2:8 subjects: reached at 6 subjects × 1 repetition after looking at n_reps=2 too and
    # pruning n_reps=8 by cost -- the field is still searched, priced and carried into the run (c_fp=0.2 on
    # 2:16 reached only the top corner, 16 × 8, and cost 5x the CPU in simulations and dry runs).
    effect = _json(["plan", "belief-coherence", "--model", "loss", "--effect", "c_fp=0.4", "--llm",
                    "openai:gpt-4o-mini", "--subjects", "2:8", "--design", "network=asia", "--design",
                    "n_contexts=10", "--design", "n_reps=1,2,8", "--mc-se", "0.2", "--workers", "1"], capsys)
    assert effect["searched"] == "n_reps" and effect["chosen"]["n_reps"] in (1, 2, 8)
    assert effect["run"]["design"]["n_reps"] == effect["chosen"]["n_reps"]
    passing = [e for e in effect["evaluated"] if e["power"] >= 0.8]
    assert min(e["dollars"] for e in passing) == effect["chosen"]["dollars"]
    precise = _json(["plan", "belief-coherence", "--model", "loss", "--precision", "c_fp=0.2", "--assurance", "0.8",
                     "--design", "network=asia", "--design", "n_contexts=10", "--design", "n_reps=1,4,16"], capsys)
    chosen = precise["chosen"]
    assert precise["searched"] == "n_reps" and chosen["resolved"]["fields"]["n_reps"] == chosen["n_reps"]
    assert chosen["assurance"] >= 0.8 and precise["cost"]["trials_per_subject"] == 10 * chosen["n_reps"]
    assert all(e["assurance"] < 0.8 for e in precise["evaluated"] if e["n_reps"] < chosen["n_reps"])


@pytest.mark.parametrize(("extra", "message"), [
    (["--design", "n_contexts=10,20", "--design", "n_reps=2,5"], "plan searches one design field at a time"),
    (["--trials", "50,100", "--design", "n_reps=2,5"], "plan searches one size of the design at a time"),
    (["--design", "n_reps=2", "--design", "n_reps=3,5"], "sets n_reps twice"),
])
def test_plan_refuses_two_lists(capsys, extra: list[str], message: str) -> None:
    code = run_cli(["plan", *T1C_LEAK, *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_a_searched_field_reaches_every_part_of_a_design_point() -> None:
    """A metric difference (two LLMs' settings) sized in runs with n_reps searched: the point's study,
    design, dry-run price and label all carry the field's value."""
    from cogtestbed.planning.plan import Planner
    from cogtestbed.planning.pricing import Pricer
    from cogtestbed.planning.space import Axis, design_axes, study_at
    from cogtestbed.studies.driver import study_spec

    exp = get_experiment("belief-coherence")
    spec = study_spec(kind="metric-power", experiment=exp.name, agent="leak", metric="t1_cmi",
                      compare=({"leak": 0.0}, {"leak": 0.3}), design={"network": "asia", "n_contexts": 10})
    size, others = design_axes(spec, exp, None, "2:8", None, Axis("n_reps", (1, 4)))
    assert size.name == "runs" and [a.name for a in others] == ["n_reps"]
    planner = Planner(spec, Pricer(exp, ("openai:gpt-4o-mini",), seed=0), size, others)
    one, four = planner.point(3, {"n_reps": 1}), planner.point(3, {"n_reps": 4})
    assert one.fields == (("n_reps", 1),) and one.value("n_reps") == 1 and one.value("runs") == 3
    assert study_at(spec, four, 5).design == {"network": "asia", "n_contexts": 10, "n_reps": 4}
    assert planner.design(four).n_trials == 4 * planner.design(one).n_trials == 40
    assert planner.exact_cost(four).calls == 4 * planner.exact_cost(one).calls  # two LLMs x 3 runs each
    assert four.label("runs", spec) == "3 runs, 10 contexts × 4 repetitions (40 trials per run)"
    with pytest.raises(ValueError, match="plan searches one size of the design at a time"):
        design_axes(spec, exp, None, "2:8", "50", Axis("n_reps", (1, 4)))


@pytest.mark.slow
def test_plan_searches_a_field_for_a_metric_difference(capsys) -> None:
    """Revealed belief's n_samples (a field no label counts: named as n_samples=N) for a difference in
    the Chebyshev distance between two settings of the dissonant sampler."""
    out = _json(["plan", "revealed-belief", "--metric", "chebyshev", "--compare", "dissonant-sampler",
                 "dissonant-sampler:beta_first=2,theta=8", "--design", "n_samples=5,20", "--runs", "2:4",
                 "--llm", "openai:gpt-4o-mini", "--mc-se", "0.2", "--workers", "1"], capsys)
    chosen = out["chosen"]
    assert out["searched"] == "n_samples" and chosen["n_samples"] in (5, 20) and chosen["power"] >= 0.8
    assert f"n_samples={chosen['n_samples']}" in chosen["design"]
    assert out["run"]["design"]["n_samples"] == chosen["n_samples"]


def test_a_plan_whose_simulation_fails_on_its_input_says_so_in_one_line(monkeypatch) -> None:
    """The planner's tasks raise as the study driver's: bad input (here belief coherence's accuracy, a
    mapping per subject, which cannot be differenced) is a one-line StudyInputError, not a traceback."""
    import cogtestbed.planning.kinds.power.power_sims as power_sims
    from cogtestbed.planning.kinds.power.power_sims import PowerEvaluator
    from cogtestbed.planning.space import Point
    from cogtestbed.studies.driver import StudyTaskError, study_spec
    from cogtestbed.studies.metric_studies import unit_values
    from cogtestbed.study_errors import StudyInputError

    with pytest.raises(ValueError, match="metric 'accuracy' is a nested mapping for each unit, not a number"):
        unit_values({"per_subject": [{"accuracy": {"pi0": 0.5}}]}, "accuracy", "per_subject")

    def failing(payload: str, tasks: list) -> None:
        raise StudyTaskError("metric-power task 0 (rep 0): metric 'accuracy' is a nested mapping", True)

    monkeypatch.setattr(power_sims, "run_chunk", failing)
    spec = study_spec(kind="metric-power", experiment="belief-coherence", agent="leak", metric="accuracy",
                      compare=({"leak": 0.0}, {"leak": 0.3}))
    with pytest.raises(StudyInputError, match="metric 'accuracy' is a nested mapping"):
        PowerEvaluator(spec, workers=1).ensure(Point(1, 2, None), 2)


def test_a_comma_value_of_a_non_integer_field_is_its_value_not_a_size_list():
    """belief coherence's ``evidence=smoke,asia`` is one value (as ``simulate`` and ``run`` take it),
    so plan searches the one integer list beside it; a comma list on a name that is no field is refused."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.sizes import plan_design
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment("belief-coherence")
    fixed, trials, searched = plan_design(exp, ["network=asia", "evidence=smoke,asia", "n_reps=1,2"])
    assert searched == ("n_reps", (1, 2)) and trials == (None,)
    assert design_for_trials(exp, None, fixed).evidence == design_for_trials(
        exp, None, {"network": "asia", "evidence": "smoke,asia"}).evidence
    with pytest.raises(ValueError, match="not a design field"):
        plan_design(exp, ["nonsense=1,2"])

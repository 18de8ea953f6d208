"""``cogtestbed plan``: the design search, its prices (equal to ``run --dry-run``'s), ``run --plan``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_runs import in_process
from scipy import stats
from versions import assert_exact_versions

from cogtestbed.planning.kinds.power.power_sims import Estimate, decided
from cogtestbed.planning.plan import Evaluated, PlanInfeasible, Planner, fit_probit, pareto
from cogtestbed.planning.plan_report import plan_payload, plan_run_settings, write_plan
from cogtestbed.planning.pricing import Cost, Pricer
from cogtestbed.planning.space import Axis, Point, design_axes, parse_range
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import StudySpec, study_spec

ROOT = Path(__file__).resolve().parents[1]
INSTRUMENTAL = "instrumental-learning"


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "cogtestbed", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


def rw_spec(effect: float = 0.4, **extra: object) -> StudySpec:
    return study_spec(kind="power", experiment=INSTRUMENTAL, models=("rw-pm",), effect="optimism_bias",
                     effect_size=effect, seed=3, **extra)


# ----------------------------------------------------------------------------- pieces
def test_ranges_and_axes_come_from_the_spec():
    exp = get_experiment(INSTRUMENTAL)
    assert tuple(parse_range("3:6", None) or ()) == (3, 4, 5, 6) and parse_range("8,2,8", None) == (2, 8)
    assert isinstance(parse_range("3:99999", None), range)  # a range is never listed integer by integer (issue 67)
    with pytest.raises(ValueError, match="LO:HI"):
        parse_range("6:3", None)
    size, others = design_axes(rw_spec(), exp, "10:200", None, "90:480")
    assert size.name == "subjects" and size.values[0] == 10 and size.values[-1] == 200
    (trials,) = others  # instrumental learning pools subjects: no runs axis
    assert trials.name == "trials" and trials.values[0] == 92 and all(v % 4 == 0 for v in trials.values)
    assert trials.coarse() == (92, 188, 284, 384, 480)
    with pytest.raises(ValueError, match="pools subjects"):
        design_axes(rw_spec(), exp, None, "1:3", None)
    # A metric target is sized in runs; a pooled model-level target gains a runs axis.
    metric = study_spec(kind="metric-power", experiment="two-step", agent="hybrid", metric="model_basedness",
                       compare=({"w": 0.3}, {"w": 0.7}))
    size, others = design_axes(metric, get_experiment("two-step"), None, "10:40", None)
    assert size.name == "runs" and [a.name for a in others] == ["trials"]
    pooled = study_spec(kind="power", experiment="two-step", models=("hybrid",), effect="w", effect_size=0.2)
    size, others = design_axes(pooled, get_experiment("two-step"), None, None, None)
    assert [a.name for a in others] == ["runs", "trials"] and others[0].values == (20,)
    assert Axis("t", (10, 20, 30, 40)).between(10, 40) in (20, 30)


def test_probit_fit_recovers_a_known_power_curve():
    rng = np.random.default_rng(0)
    x = np.sqrt(np.array([10, 20, 40, 80], float))
    sims = np.full(4, 4000.0)
    hits = rng.binomial(4000, stats.norm.cdf(-1.5 + 0.5 * x)).astype(float)
    a, b = fit_probit(x, hits, sims)
    assert a == pytest.approx(-1.5, abs=0.1) and b == pytest.approx(0.5, abs=0.02)


def test_sequential_look_and_frontier():
    assert decided(Estimate(24, 24), 0.8) and decided(Estimate(2, 24), 0.8)
    assert not decided(Estimate(19, 24), 0.8) and decided(Estimate(77, 96), 0.8)  # 96 sims: the cap
    assert Estimate(160, 200).mc_se == pytest.approx(math.sqrt(0.8 * 0.2 / 200))

    def ev(n: int, power: float, dollars: float) -> Evaluated:
        return Evaluated(Point(n, 1, 96), Estimate(round(power * 100), 100), Cost(n, 0, 0, dollars, True, "dry-run"))

    front = pareto([ev(10, 0.3, 1.0), ev(20, 0.6, 2.0), ev(30, 0.5, 3.0), ev(40, 0.9, 4.0)])
    assert [e.point.subjects for e in front] == [10, 20, 40]


# ----------------------------------------------------------------------------- the search, priced
@pytest.fixture(scope="module")
def small_plan(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """A small RW± plan (large effect, short sessions) priced for gpt-4o-mini.  An effect of 0.5 (not
    0.4) makes the chosen design 11 subjects, not 15: the plan the tests below execute on the tiny
    local model makes 528 calls instead of 720, and the search still refines between looks."""
    exp = get_experiment(INSTRUMENTAL)
    spec = rw_spec(0.5)
    size, others = design_axes(spec, exp, "4:32", None, "48,96")
    pricer = Pricer(exp, ("openai:gpt-4o-mini",), seed=3)
    result = Planner(spec, pricer, size, others, target=0.8, mc_se=0.08, workers=2).plan()
    payload = plan_payload(result, pricer, exp, None)
    out = tmp_path_factory.mktemp("plan")
    write_plan(payload, out)
    return payload, out


def test_plan_finds_the_cheapest_passing_design(small_plan):
    payload, out = small_plan
    chosen, evaluated = payload["chosen"], pd.DataFrame(payload["evaluated"])
    assert chosen["power"] >= 0.8 and chosen["mc_se"] <= 0.08
    passing = evaluated[evaluated["power"] >= 0.8]
    assert chosen["dollars"] == passing["dollars"].min()  # no design reaching the target is cheaper
    assert payload["frontier"][-1]["power"] >= chosen["power"] - 1e-12
    assert {"r", "bias", "rmse"} <= set(payload["recovery"]["parameters"]["optimism_bias"])
    assert 0 <= payload["recovery"]["coverage"] <= 1
    assert (out / "plan.json").exists() and (out / "frontier.png").stat().st_size > 1000
    assert_exact_versions(json.loads((out / "plan.json").read_text())["versions"])
    html = (out / "report.html").read_text()
    assert "cost-power frontier" in html and "data:image/png;base64" in html


def test_plan_costs_equal_the_dry_run_and_run_executes_the_plan(small_plan, tmp_path, capsys):
    from cogtestbed.cli import run_cli

    payload, out = small_plan
    run = payload["run"]
    # The dry run and the run in this process (the command's code, not its entry point, is compared:
    # tests/test_cli_process.py starts the real entry point).
    assert run_cli(["run", INSTRUMENTAL, "--llm", "openai:gpt-4o-mini", "--subjects", str(run["subjects"]),
                    "--seed", str(run["seed"]), "--design", f"visits_per_casino={run['design']['visits_per_casino']}",
                    "-o", str(tmp_path / "d"), "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert (dry["calls"], dry["prompt_tokens"], dry["estimated_cost_usd"]) == (
        payload["cost"]["calls"], payload["cost"]["prompt_tokens"], payload["cost"]["dollars"])
    # The plan executed on the tiny local model: exactly the planned calls.
    in_process("run", "--plan", str(out / "plan.json"), "--llm", "hf:tiny-random", "-o", str(tmp_path / "r"),
               "--cache", str(tmp_path / "c.sqlite"))
    calls = pd.read_parquet(tmp_path / "r/calls.parquet")
    trials = pd.read_parquet(tmp_path / "r/trials.parquet")
    assert len(calls) == payload["cost"]["calls"]  # the real run makes exactly the planned calls
    assert trials["subject"].nunique() == run["subjects"]
    manifest = json.loads((tmp_path / "r/run.json").read_text())["config"]
    assert manifest["seed"] == run["seed"] and manifest["design"] == run["design"]


def test_run_plan_checks_what_it_is_given(small_plan):
    _, out = small_plan
    settings = plan_run_settings(out / "plan.json", None, "openai:gpt-4o-mini", 1, 0, None)
    assert settings["llm"] == "openai:gpt-4o-mini"  # --llm replaces the plan's LLM
    with pytest.raises(ValueError, match="`plan` is for"):
        plan_run_settings(out / "plan.json", "two-step", None, 1, 0, None)
    with pytest.raises(ValueError, match="drop `subjects`"):
        plan_run_settings(out / "plan.json", None, None, 999, 0, None)
    with pytest.raises(ValueError, match="not a cogtestbed plan"):
        (out / "bad.json").write_text("{}")
        plan_run_settings(out / "bad.json", None, None, 1, 0, None)


def test_plan_refuses_when_no_design_fits_the_budget():
    exp = get_experiment(INSTRUMENTAL)
    spec = rw_spec()
    size, others = design_axes(spec, exp, "4:32", None, "48,96")
    pricer = Pricer(exp, ("openai:gpt-4o-mini",), seed=3)
    with pytest.raises(PlanInfeasible, match=r"no design under \$1e-06 reaches 80% power"):
        Planner(spec, pricer, size, others, max_cost=1e-6, workers=1).plan()
    proc = cli("plan", INSTRUMENTAL, "--model", "rw-pm", "--effect", "optimism_bias=0.4", "--llm",
               "openai:gpt-4o-mini", "--subjects", "4:32", "--trials", "48,96", "--max-cost", "0.000001",
               check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no design under $1e-06 reaches 80% power" in errors[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_metric_level_target_two_llms_model_basedness():
    """CogBench two-step: model-basedness of two LLMs (w 0.2 vs 0.8), sized in runs per LLM."""
    exp = get_experiment("two-step")
    spec = study_spec(kind="metric-power", experiment="two-step", agent="hybrid", metric="model_basedness",
                     compare=({"w": 0.1, "beta": 5.0}, {"w": 0.9, "beta": 5.0}), seed=1)
    size, others = design_axes(spec, exp, None, "4:32", "100")
    pricer = Pricer(exp, ("openai:gpt-4o-mini", "openai:gpt-4o"), seed=1)
    result = Planner(spec, pricer, size, others, mc_se=0.08, workers=1).plan()
    chosen = result.chosen
    assert chosen.estimate.rate >= 0.8 and chosen.cost is not None
    # Two LLMs each play the chosen runs: the cost is the sum of their dry runs.
    a, b = chosen.cost.per_llm
    assert a["subjects"] == b["subjects"] == chosen.point.runs and a["calls"] == b["calls"]
    assert chosen.cost.dollars == pytest.approx(a["estimated_cost_usd"] + b["estimated_cost_usd"])
    assert result.recovery["mean_difference"] > 0


@pytest.mark.slow
def test_test_level_target_belief_coherence_t1():
    exp = get_experiment("belief-coherence")
    (decl,) = [d for d in exp.studies_of("test-power") if d.test == "t1_lr"]
    spec = study_spec(kind="test-power", experiment=exp.name, agent=decl.agent, test="t1_lr",
                     params={**decl.params, decl.parameter: max(decl.values)}, design=dict(decl.design), seed=2)
    default = str(exp.design_cls(**spec.design).n_trials)
    size, others = design_axes(spec, exp, None, "1:8", default)
    pricer = Pricer(exp, ("openai:gpt-4o-mini",), seed=2)
    result = Planner(spec, pricer, size, others, mc_se=0.1, workers=1).plan()
    assert result.chosen.estimate.rate >= 0.8 and result.chosen.cost is not None
    assert result.chosen.cost.calls > 0 and result.recovery["test"] == "t1_lr"


# ----------------------------------------------------------------------------- invalid answers, pilots
def test_invalid_answers_cost_power():
    """An expected invalid rate is simulated as lapses: the same design loses power."""
    from cogtestbed.lapse import Lapse
    from cogtestbed.planning.kinds.power.power_sims import PowerEvaluator

    point = Point(8, 1, 48)
    clean = PowerEvaluator(rw_spec(0.4), workers=1).ensure(point, 48)
    lapsed_spec = rw_spec(0.4).model_copy(update={"lapse": Lapse(invalid=0.5)})
    evaluator = PowerEvaluator(lapsed_spec, workers=1)
    lapsed = evaluator.ensure(point, 48)
    assert lapsed.rate < clean.rate
    assert evaluator.study_at(point, 1).lapse == Lapse(invalid=0.5)


def test_pilot_gives_invalid_rate_tokens_per_call_and_refuses_a_useless_one(tmp_path):
    from cogtestbed.planning.plan_report import read_pilot

    pilot = tmp_path / "pilot"
    in_process("run", INSTRUMENTAL, "--llm", "hf:tiny-random", "--subjects", "3", "--seed", "1", "--design",
               "visits_per_casino=4", "-o", str(pilot), "--cache", str(tmp_path / "c.sqlite"))
    trials = pd.read_parquet(pilot / "trials.parquet")
    info = read_pilot(pilot, get_experiment(INSTRUMENTAL), rw_spec())
    assert info.subjects == 3 and info.calls == 48
    assert info.invalid_rate == pytest.approx(1 - trials["valid"].mean())
    assert info.prompt_tokens_per_call is not None and info.prompt_tokens_per_call > 100
    if info.invalid_rate > 0.9:  # the random tiny model answers nonsense: no budget is spent on it
        proc = in_process("plan", INSTRUMENTAL, "--model", "rw-pm", "--effect", "optimism_bias=0.4", "--llm",
                          "hf:tiny-random", "--pilot", str(pilot), check=False)
        assert proc.returncode == 2 and proc.stderr.startswith("error:") and "invalid answers" in proc.stderr


#: Known parameters of the synthetic pilot (RW± with an optimism bias α⁺ − α⁻ = 0.3).
PILOT_TRUTH = {"alpha_pos": 0.5, "alpha_neg": 0.2, "beta": 6.0}
PILOT_LLM = "openai:gpt-4o-mini"


def write_synthetic_pilot(path: Path, subjects: int, invalid: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run directory, written by the run's own writer, whose answers come from RW± with known
    parameters (and lapsed, invalid answers); its call log has one call per trial."""
    from cogtestbed.lapse import Lapse
    from cogtestbed.llm_adapters.runs.agent import Attempt
    from cogtestbed.llm_adapters.runs.rundir import RunDir
    from cogtestbed.llm_adapters.runs.runner import commit_tables
    from cogtestbed.simulation import simulate

    exp = get_experiment(INSTRUMENTAL)
    design = exp.env_cls.design_cls().model_copy(update={"visits_per_casino": 60})
    table = simulate(exp, "rw-pm", subjects, seed=seed, params=PILOT_TRUTH, design=design, lapse=Lapse(invalid=invalid))
    table = table.drop(columns=[c for c in table if c.startswith("param_")]).assign(agent=PILOT_LLM)
    rng = np.random.default_rng(seed)
    attempts = [Attempt(subject=int(r.subject), step=int(r.trial), attempt=0, prompt="", raw_response="",
                        valid=bool(r.valid), parse_error=None, cached=False,
                        prompt_tokens=int(rng.integers(150, 250)), completion_tokens=int(rng.integers(1, 9)),
                        finish_reason="stop") for r in table.itertuples()]
    calls = pd.DataFrame([a.as_row() for a in attempts], columns=list(Attempt.__dataclass_fields__))
    config = {"experiment": INSTRUMENTAL, "llm": PILOT_LLM, "subjects": subjects, "seed": seed,
              "design": design.model_dump(mode="json")}
    rundir = RunDir.open(path, config, resume=False)
    try:
        stats = {"calls_total": len(calls), "invalid_trials": int((~table["valid"]).sum())}
        commit_tables(rundir, table, calls, {"command": "run", "config": config, "stats": stats}, "complete", None)
    finally:
        rundir.release()
    return table, calls


def test_pilot_fitted_parameters_are_the_simulation_base(tmp_path: Path) -> None:
    """A pilot of known RW± parameters: the plan's base is the median of the per-subject MLE of
    the pilot's valid answers (near the truth); its invalid rate and tokens per call are the logs'."""
    from cogtestbed.planning.plan_report import apply_pilot, read_pilot

    table, calls = write_synthetic_pilot(tmp_path / "pilot", subjects=8, invalid=0.1, seed=11)
    exp, spec = get_experiment(INSTRUMENTAL), rw_spec(0.2)
    info = read_pilot(tmp_path / "pilot", exp, spec)
    assert info.llm == PILOT_LLM and info.subjects == 8 and info.trials == len(table) == info.calls == 8 * 4 * 60
    assert info.invalid_rate == pytest.approx(1 - table["valid"].mean()) and 0.05 < info.invalid_rate < 0.2
    assert info.prompt_tokens_per_call == pytest.approx(calls["prompt_tokens"].mean())
    assert info.completion_tokens_per_call == pytest.approx(calls["completion_tokens"].mean())

    fits = exp.model("rw-pm").fit_mle(table)
    medians = {p: float(np.median(fits[p])) for p in PILOT_TRUTH}
    assert info.fitted_model == "rw-pm" and info.fitted == pytest.approx(medians, rel=1e-9)
    planned = apply_pilot(spec, exp, info, {}, {})
    assert planned.base == pytest.approx(medians, rel=1e-9)
    for name, truth in PILOT_TRUTH.items():
        assert planned.base[name] == pytest.approx(truth, rel=0.35), name
    assert planned.base["alpha_pos"] - planned.base["alpha_neg"] > 0.1  # the optimism bias survives
    assert apply_pilot(spec, exp, info, {"beta": 3.0}, {}).base["beta"] == 3.0  # explicit values win


def test_pricer_books_each_experiments_own_answer_length_as_run_does():
    """A plan prices answers at what `cogtestbed run` would allow: belief-coherence's two-line answers
    64 tokens (its answer_defaults), a one-line choice 8 — not 8 everywhere; a given --max-tokens wins."""
    belief = get_experiment("belief-coherence")
    design = belief.env_cls.design_cls(n_contexts=2, n_reps=1)
    cost = Pricer(belief, ("openai:gpt-4o-mini",), seed=0).exact(design, 1)
    assert cost.completion_tokens == cost.calls * 64 > 0
    given = Pricer(belief, ("openai:gpt-4o-mini",), seed=0, max_tokens=5).exact(design, 1)
    assert given.completion_tokens == cost.calls * 5
    il = get_experiment(INSTRUMENTAL)
    il_design = il.env_cls.design_cls()
    il_cost = Pricer(il, ("openai:gpt-4o-mini",), seed=0).exact(il_design, 1)
    assert il_cost.completion_tokens == il_cost.calls * 8 > 0


def test_plan_json_carries_the_answer_length_and_the_worst_case_calls(small_plan):
    payload, _ = small_plan
    run = payload["run"]
    assert run["max_tokens"] == 8  # instrumental learning's one-line answer
    assert run["max_calls"] == payload["cost"]["calls"]  # fixed-length sessions: the ceiling is the count


def test_recovery_warning_says_meaning_and_remedy_in_every_output():
    """Issue 40 item 6: a biased per-subject MLE is a warning with what it means (the test stays
    valid, the estimate and interval must not be reported) and the remedy, in plan.json's
    ``warnings``, report.md and on the terminal."""
    from cogtestbed.planning.plan_report import plan_markdown, recovery_warnings

    rec = {"effect": "optimism_bias", "effect_size": 0.2, "effect_bias": -0.064, "estimand": 0.19, "coverage": 0.88,
           "coverage_level": 0.95, "studies": 178, "lapse_fit": None}
    (bias, cover) = recovery_warnings(rec)
    assert "biased by 32% of the effect" in bias and "stays a valid test" in bias and "must not be reported" in bias
    assert "--method hierarchical" in bias and "--fit hierarchical" in bias and "178 fresh simulated studies" in bias
    assert "--lapse fit" not in bias  # the plan simulated no lapses: a lapse term is no remedy here
    (lapsing, _) = recovery_warnings({**rec, "random_lapses": True})
    assert "lapse to random choices" in lapsing and "`plan --lapse-fit fit`, `fit --lapse fit`" in lapsing
    assert "covers the true effect in 88%" in cover
    assert recovery_warnings({**rec, "effect_bias": -0.01, "coverage": 0.94}) == []
    assert recovery_warnings({"metric": "model_basedness"}) == []
    payload = {"experiment": "instrumental-learning", "warnings": [bias], "notes": ["the subjects range was extended"],
               "frontier": [], "chosen": {"design": "26 subjects", "sessions_per_llm": 26},
               "cost": {"calls": 10, "prompt_tokens": 5, "completion_tokens": 1, "dollars": 0.5},
               "power": {"rate": 0.8, "sims": 100}, "run": {"llms": ["openai:gpt-4o-mini"]},
               "target": {"power": 0.8, "what": "optimism_bias = 0.2 (rw-pm)"}}
    md = plan_markdown(payload)
    assert "**Warning:** the per-subject MLE of optimism_bias" in md and "note: the subjects range was extended" in md


def test_a_default_size_range_grows_until_the_target_is_inside_and_edges_are_said():
    """Issue 40 item 4: a size range too small for the target grows (doubling, to its cap) instead of
    stopping at its own edge, and the plan says where its choice sits at an edge.  An effect of 0.5:
    4-6 subjects still fall short (power 0.5) and the range is extended (to 12), with 40 % fewer
    simulations than at 0.4."""
    exp = get_experiment(INSTRUMENTAL)
    spec = rw_spec(0.5)
    size, others = design_axes(spec, exp, "4:6", None, "48")
    pricer = Pricer(exp, ("openai:gpt-4o-mini",), seed=3)
    with pytest.raises(PlanInfeasible, match="sizes 4-6 subjects"):  # a range the user gave is not extended
        Planner(spec, pricer, size, others, target=0.8, mc_se=0.1, workers=1).plan()
    result = Planner(spec, pricer, size, others, target=0.8, mc_se=0.1, workers=1, extend_to=48).plan()
    assert 6 < result.chosen.point.subjects <= 48 and result.chosen.estimate.rate >= 0.8
    assert any("range was extended to" in n for n in result.notes)
    assert not any("top of the subjects range" in n for n in result.notes)
    assert result.recovery["studies"] == result.chosen.estimate.sims  # measured on as many fresh studies


def test_an_edge_note_names_the_option_that_widens_the_range() -> None:
    """A design field's range is widened with ``--design NAME=a,b,c`` (there is no ``--n_reps``); the options a
    note names are ``plan``'s own."""
    import typer

    from cogtestbed.cli.app import app
    from cogtestbed.planning.plan import OWN_OPTION_AXES, range_flag

    assert [range_flag(a) for a in ("subjects", "runs", "trials", "n_reps")] == \
        ["--subjects", "--runs", "--trials", "--design n_reps=a,b,c"]
    plan = typer.main.get_command(app).commands["plan"]  # type: ignore[attr-defined]
    options = {o for param in plan.params for o in param.opts}
    assert {f"--{a}" for a in OWN_OPTION_AXES} | {"--design"} <= options
    assert "--n_reps" not in options

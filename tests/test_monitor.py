"""The ``monitor`` plan kind (issue 74): an anytime-valid monitor of a model effect, planned beside the fixed
design at equal power; its validity rests on the statistic's declared bounds, checked before simulating."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cogtestbed as ct
from cogtestbed.cli import run_cli
from cogtestbed.planning.kinds.monitor.monitor_kind import design_table, operate, statistic_bounds, studies
from cogtestbed.planning.plan_kinds import choose_kind
from cogtestbed.planning.plan_options import PlanRequest, PlanSequential, PlanTarget

#: The monitor's validation study (its questions) lives with the studies, outside the wheel.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "studies"))

LLM = "openai:gpt-4o-mini"


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("simulated before refusing")


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    import cogtestbed.planning.plan as planner
    import cogtestbed.simulation as simulation

    monkeypatch.setattr(simulation, "simulate", _never)
    monkeypatch.setattr(planner.Planner, "plan", _never)


def test_the_bounds_come_from_the_declared_parameter_range() -> None:
    rw = ct.get_experiment("instrumental-learning").model("rw-pm")
    assert statistic_bounds(rw, "optimism_bias", "natural") == (-1.0, 1.0)
    assert statistic_bounds(rw, "alpha_pos", "natural") == (0.0, 1.0)
    k = ct.get_experiment("temporal-discounting").model("hyperbolic")
    with pytest.raises(ct.InputError, match="needs a bounded statistic"):
        statistic_bounds(k, "k", "log")


def test_monitor_claims_its_request_before_sequential() -> None:
    req = PlanRequest("instrumental-learning", target=PlanTarget(model="rw-pm", effect={"optimism_bias": 0.2}),
                      sequential=PlanSequential(monitor=True, looks=3))
    assert choose_kind(req).name == "monitor"
    assert choose_kind(PlanRequest("instrumental-learning", sequential=PlanSequential(looks=3))).name == "sequential"


@pytest.mark.parametrize(("experiment", "api", "cli", "message"), [
    ("temporal-discounting", {"model": "hyperbolic", "effect": {"k": 0.1}, "llm": [LLM]},
     ["--model", "hyperbolic", "--effect", "k=0.1", "--llm", LLM], "needs a bounded statistic"),
    ("two-step", {"metric": "model_basedness", "compare": ("hybrid:w=0.2", "hybrid:w=0.8"), "llm": [LLM, LLM]},
     ["--metric", "model_basedness", "--compare", "hybrid:w=0.2", "hybrid:w=0.8", "--llm", LLM, "--llm", LLM],
     "one pooled estimate with a standard error"),
    ("instrumental-learning", {"model": "rw-pm", "effect": {"optimism_bias": 0.2}, "adaptive_sims": 5, "llm": [LLM]},
     ["--model", "rw-pm", "--effect", "optimism_bias=0.2", "--adaptive-sims", "5", "--llm", LLM],
     "does not take `adaptive_sims`"),
])
def test_refusals_come_before_simulating(no_simulation: None, experiment: str, api: dict[str, Any], cli: list[str],
                                         message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ct.InputError, match=message):
        ct.plan(experiment, monitor=True, **api)
    assert run_cli(["plan", experiment, "--monitor", *cli]) == 2
    err = capsys.readouterr().err
    assert len([x for x in err.splitlines() if x.startswith("error:")]) == 1 and "Traceback" not in err


def test_operate_caps_at_the_target_power_and_keeps_the_null_below_alpha() -> None:
    rng = np.random.default_rng(5)
    # a bounded, skewed statistic piled at its bound: 0 with prob 0.2, else Beta; effect shifts it
    def draw(n: int, shift: float) -> np.ndarray:
        x = np.where(rng.random(n) < 0.2, -1.0, 2 * rng.beta(2, 2, n) - 1.0)
        return np.clip(x + shift, -1, 1) - np.mean(np.clip(np.where(rng.random(200_000) < 0.2, -1.0,
                                                                   2 * rng.beta(2, 2, 200_000) - 1.0), -1, 1))
    eff_pool, nul_pool = draw(4000, 0.35), draw(4000, 0.0)
    eff, ew = studies(eff_pool, 400, 150, rng)
    nul, nw = studies(nul_pool, 400, 150, rng)
    ops = operate(eff, ew, nul, nw, -2.0, 2.0, 0.05, 0.8)
    assert ops["reached"] and 10 < ops["cap"] < 150
    assert ops["power"] >= 0.8 - 2 * ops["power_se"]
    assert ops["null_rejection_any"] <= 0.05 and ops["null_upper"] >= ops["null_rejection"]
    assert ops["expected_effect"] < ops["cap"] and ops["expected_null"] <= ops["cap"]
    assert ops["expected_null"] > ops["expected_effect"]


def test_the_table_puts_the_designs_side_by_side() -> None:
    mon = {"unit": "subject", "target_power": 0.8, "trials": 96, "cap": 70, "reached": True, "longest": 78,
           "expected_effect": 55.3, "expected_effect_se": 2.1, "expected_null": 70.0, "dollars_effect": 0.58,
           "dollars_null": 0.73, "power": 0.805, "power_se": 0.05, "null_rejection": 0.0, "null_upper": 0.0015,
           "method": "betting", "level": 0.05, "saving": -1.126, "saving_se": 0.08, "property": "in [-1, 1]",
           "null_rejection_any": 0.001, "null_upper_any": 0.0026, "null_studies": 2000, "pool_mean_null": 0.01,
           "equal_power": {"test": "t-test", "fixed_size": 26.0, "fixed_size_se": 0.5, "fixed_size_whole": 26,
                           "sequential_power": 0.805, "sequential_power_se": 0.05, "fixed_power": 0.81,
                           "fixed_power_se": 0.01}}
    lines = design_table({"monitor": mon, "chosen": {"subjects": 26, "dollars": 0.27, "power": 0.82, "mc_se": 0.03}})
    assert lines[2].split()[:4] == ["fixed", "26", "26", "26"]
    assert lines[3].split()[0] == "monitor" and "70" in lines[3].split() and "0.0000≤0.0015" in lines[3]
    assert "the fixed t-test needs 26.0±0.5 subjects for the monitor's power 0.805±0.050" in lines[5]
    assert "its power at 26: 0.810±0.010" in lines[5]
    assert "under the effect -112.6% (95% joint interval -128.3% to -96.9%)" in lines[6]
    assert "under the null -" in lines[6]  # no null saving given: a dash, not a number
    assert design_table({"monitor": {"reason": "none"}}) == ["monitor: none"]


@pytest.mark.slow
def test_plan_monitor_rw_optimism_bias(tmp_path: Any) -> None:
    """The issue's example (at the design the full search picks: 26 subjects, 96 trials): the three designs side
    by side, 2,000 null studies looked at after every subject, the upper bound <= alpha, the saving's interval."""
    plan = ct.plan("instrumental-learning", model="rw-pm", effect={"optimism_bias": 0.2}, llm=[LLM], monitor=True,
                   subjects="26", trials="96", seed=0)
    mon = plan.payload["monitor"]
    assert mon["null_studies"] == 2000 and mon["null_upper_any"] <= 0.05 and mon["outside"] == 0
    assert mon["power"] >= 0.8 - 2 * mon["power_se"] and mon["cap"] >= 1
    assert mon["group_sequential"]["spending"] == "obrien-fleming"
    lines = plan.lines()
    assert [x.split()[0] for x in lines if x.startswith("  ") and x.split()[0] in ("fixed", "group-seq.", "monitor")
            and len(x.split()) > 5] == ["fixed", "group-seq.", "monitor"]
    assert any("expected saving against it: under the effect" in x and "95% joint interval" in x for x in lines)
    # the composite null's comparator: the fixed test valid for it, against the interval's upper end
    end = mon["null_interval"][1]
    assert any(x.startswith(f"  at equal power: the fixed one-sided t-test against {end:+.4f} needs") for x in lines)
    plan.save(tmp_path)
    assert json.loads((tmp_path / "monitor.json").read_text())["cap"] == mon["cap"]


def test_the_test_is_chosen_from_the_simulation_before_any_data() -> None:
    from cogtestbed.planning.kinds.monitor.monitor_kind import choose_test

    rng = np.random.default_rng(7)
    # one LLM: an estimator biased by +0.03 under the null -> the null interval covers the bias
    nul = np.clip(rng.normal(0.03, 0.25, 3000), -1, 1)
    eff = np.clip(rng.normal(0.2, 0.25, 3000), -1, 1)
    one = choose_test(eff, nul, -1.0, 1.0, 1)
    assert one["test"] == "mean" and one["symmetry_scale"] is None
    assert 0.03 < one["halfwidth"] < 0.03 + 4 * 0.25 / np.sqrt(3000)
    assert 0 < one["planned_bet"] <= 0.99 / (0.5 + one["halfwidth"] / 2) and one["growth"] > 0
    # two LLMs: the symmetry test, its scale inside the effect's spread, no half-width (exact under exchangeability)
    two = choose_test(eff - rng.normal(0, 0.25, 3000), rng.normal(0, 0.35, 3000), -2.0, 2.0, 2)
    assert two["test"] == "symmetry" and two["halfwidth"] == 0.0 and 0.05 < two["symmetry_scale"] < 1.0
    assert two["planned_bet"] > 0 and "exchangeable" in two["property"]


def test_per_unit_values_are_alignedunit_array_id() -> None:
    from cogtestbed.planning.kinds.monitor.monitor_kind import unit_array

    rows = [{"run": 2, "score": 7.0}, {"run": 0, "score": 9.0}, {"run": 1, "score": None}, {"run": 5, "score": 1.0}]
    np.testing.assert_array_equal(unit_array(rows, "score", 4), [9.0, np.nan, 7.0, np.nan])


@pytest.mark.slow
def test_plan_monitor_of_a_metric_difference_between_two_llms() -> None:
    """The issue's second case: a CogBench metric difference between two LLMs, the symmetry test per pair of
    runs, its null rejection's upper bound <= alpha over 2,000 null studies."""
    plan = ct.plan("temporal-discounting", metric="score", compare=("hyperbolic:k=0.005", "hyperbolic:k=0.8"),
                   llm=["openai:gpt-4o", LLM], runs="22", monitor=True, seed=0)
    mon = plan.payload["monitor"]
    assert mon["test"] == "symmetry" and mon["unit"] == "pair of runs" and mon["null_studies"] == 2000
    assert mon["null_upper"] <= 0.05 and mon["power"] >= 0.8 - 2 * mon["power_se"]
    lines = plan.lines()
    assert [x.split()[0] for x in lines if x.startswith("  ") and x.split()[0] in ("fixed", "group-seq.", "monitor")
            and len(x.split()) > 5] == ["fixed", "group-seq.", "monitor"]
    assert any("under the effect" in x and "95% interval" in x for x in lines)


def _tagged_pool(spec: Any, trials: Any, runs: int, n: int, seed: int, effect: bool) -> np.ndarray:
    """A synthetic statistic pool drawn from its own seed: continuous values inside [-1, 1] (no clipping: no value
    is hit twice), so two pools share none."""
    rng = np.random.default_rng(seed)
    return 0.7 * (2 * rng.beta(4, 4, n) - 1) + (0.25 if effect else 0.0)


def _tagged_parts(spec: Any, trials: Any, runs: int, n: int, seed: int, effect: bool) -> np.ndarray:
    """:func:`_tagged_pool` as the groups' values (a second group's beside a first group at 0): the statistic, the
    second less the first, is the tagged pool itself."""
    x = _tagged_pool(spec, trials, runs, n, seed, effect)
    return x[:, None] if spec.groups == 1 else np.column_stack([np.zeros(n), x])


def test_the_figures_are_measured_on_pools_disjoint_from_the_choosing_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 1 of issue 74: the rule (bet, half-width, cap, group-sequential bounds) is chosen on one pair of pools,
    every printed figure measured on another, of other seed streams."""
    import cogtestbed.planning.kinds.monitor.monitor_composite as composite_module
    import cogtestbed.planning.kinds.monitor.monitor_gs as gs_module
    import cogtestbed.planning.kinds.monitor.monitor_kind as kind
    import cogtestbed.planning.kinds.monitor.monitor_pools as pools
    from cogtestbed.studies.study_kinds import study_spec

    monkeypatch.setattr(pools, "hypothesis_parts", _tagged_parts)
    seen: dict[str, Any] = {}
    real_choose, real_operate, real_gs = kind.choose_test, kind.operate, gs_module.group_sequential

    def choose(eff: np.ndarray, nul: np.ndarray, *a: Any) -> Any:
        seen["choose"] = (eff, nul)
        return real_choose(eff, nul, *a)

    def operate(eff: np.ndarray, ew: Any, nul: np.ndarray, nw: Any, *a: Any, **kw: Any) -> Any:
        seen.setdefault("operate", []).append((eff, nul, kw.get("cap")))
        return real_operate(eff, ew, nul, nw, *a, **kw)

    def group_sequential(c_eff: np.ndarray, c_nul: np.ndarray, eff: np.ndarray, nul: np.ndarray, *a: Any) -> Any:
        seen["gs"] = (c_eff, c_nul, eff, nul)
        return real_gs(c_eff, c_nul, eff, nul, *a)

    monkeypatch.setattr(composite_module, "has_region", lambda spec: False)  # the plan's population's null
    monkeypatch.setattr(kind, "choose_test", choose)
    monkeypatch.setattr(kind, "operate", operate)
    monkeypatch.setattr(gs_module, "group_sequential", group_sequential)
    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2)
    mon = kind.monitor_section(spec, {"subjects": 12, "trials": 96, "runs": 1, "dollars": 1.2}, 0.8, 300, 3)
    choose_seeds, measure_seeds = pools.pool_seeds(3, "choose"), pools.pool_seeds(3, "measure")
    assert not {s + k for s in choose_seeds for k in (0, 1)} & {s + k for s in measure_seeds for k in (0, 1)}
    assert mon["pools"] == {"choose": {"seeds": list(choose_seeds), "units": 1440},
                            "measure": {"seeds": list(measure_seeds), "units": 720}}
    c_eff, c_nul = (_tagged_pool(spec, 96, 1, 1440, s, e) for s, e in zip(choose_seeds, (True, False), strict=True))
    m_eff, m_nul = (_tagged_pool(spec, 96, 1, 720, s, e) for s, e in zip(measure_seeds, (True, False), strict=True))
    np.testing.assert_array_equal(seen["choose"][0], c_eff)
    np.testing.assert_array_equal(seen["choose"][1], c_nul)
    (pick_eff, pick_nul, no_cap), (eff, nul, cap) = seen["operate"][0], seen["operate"][-1]
    assert no_cap is None and cap == mon["cap"]  # the cap is chosen on the choosing studies, then measured
    assert set(pick_eff.ravel()) <= set(c_eff) and set(pick_nul.ravel()) <= set(c_nul)
    assert set(eff.ravel()) <= set(m_eff) and set(nul.ravel()) <= set(m_nul)
    assert not set(eff.ravel()) & set(c_eff) and not set(nul.ravel()) & set(c_nul)
    g_c_eff, g_c_nul, g_eff, g_nul = seen["gs"]
    assert set(g_c_nul.ravel()) <= set(c_nul) and set(g_c_eff.ravel()) <= set(c_eff)
    assert set(g_nul.ravel()) <= set(m_nul) and set(g_eff.ravel()) <= set(m_eff)
    gs = mon["group_sequential"]
    assert gs["looks"] == 3 and len(gs["sizes"]) == 3 and gs["max"] == gs["sizes"][-1]
    assert gs["null_upper"] >= gs["null_rejection"] and 0 < gs["expected_effect"] <= gs["max"]
    # equal pools are refused: a figure measured where the rule was chosen is not a measurement
    same = pools.draw_pools(spec, 96, 1, 40, 3, "choose")
    with pytest.raises(ct.InputError, match="disjoint seed streams"):
        kind.designs_on_pools(spec, same, same, 12, 36, 0.8, 50, 3)
    lines = design_table({"monitor": mon, "chosen": {"subjects": 12, "dollars": 1.2, "power": 0.8, "mc_se": 0.03,
                                                     "design": "96 trials"}})
    assert [x.split()[0] for x in lines[2:5]] == ["fixed", "group-seq.", "monitor"]
    assert any("measured on 720 fresh" in x for x in lines) and any("O'Brien-Fleming" in x for x in lines)


@pytest.mark.parametrize("question", ["model", "metric"])
def test_two_llm_comparisons_get_the_three_designs(monkeypatch: pytest.MonkeyPatch, question: str) -> None:
    """Item 2: a two-LLM comparison (a parameter difference, a metric difference) is planned fixed, group-sequential
    (Lan-DeMets O'Brien-Fleming, calibrated on the choosing pools' nulls) and monitored, side by side."""
    import cogtestbed.planning.kinds.monitor.monitor_kind as kind
    import cogtestbed.planning.kinds.monitor.monitor_pools as pools
    from cogtestbed.studies.study_kinds import study_spec

    def metric_parts(spec: Any, trials: Any, n: int, seed: int, effect: bool) -> np.ndarray:
        # a metric on its own, unbounded-looking scale
        return np.column_stack([np.zeros(n), _tagged_pool(spec, trials, 1, n, seed, effect) * 10])

    monkeypatch.setattr(pools, "hypothesis_parts", _tagged_parts)
    monkeypatch.setattr(pools, "metric_parts", metric_parts)
    if question == "model":
        spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                          effect_size=0.4, groups=2)
        chosen = {"subjects": 12, "trials": 96, "runs": 1, "dollars": 2.4, "power": 0.82, "mc_se": 0.03}
    else:
        spec = study_spec(kind="metric-power", experiment="temporal-discounting", agent="hyperbolic", metric="score",
                          compare=({"k": 0.005}, {"k": 0.8}))
        chosen = {"runs": 12, "trials": None, "dollars": 0.05, "power": 0.82, "mc_se": 0.03}
    mon = kind.monitor_section(spec, chosen, 0.8, 400, 5)
    gs = mon["group_sequential"]
    assert mon["test"] == "symmetry" and mon["unit"] == ("pair" if question == "model" else "pair of runs")
    assert gs["spending"] == "obrien-fleming" and gs["looks"] == 3 and gs["sizes"] == sorted(gs["sizes"])
    assert gs["efficacy"][0] > gs["efficacy"][-1] > 1.5  # O'Brien-Fleming: strict early, near z at the end
    assert 0.0 <= gs["null_rejection"] <= gs["null_upper"] and gs["expected_null"] <= gs["max"]
    lines = design_table({"monitor": mon, "chosen": {**chosen, "design": "the design"}})
    rows = [x.split()[0] for x in lines[2:5]]
    assert rows == ["fixed", "group-seq.", "monitor"]
    assert any(x.strip().startswith("group-seq.: Lan-DeMets O'Brien-Fleming") for x in lines)


def test_the_declared_questions_come_from_the_contracts() -> None:
    """Item 3: the benchmark's questions are the experiments' declared power and metric-power studies, each with
    the property its monitor needs, or the reason none is valid (an unbounded statistic, a pooled metric)."""
    from monitor_questions import declared_questions

    il = declared_questions(ct.get_experiment("instrumental-learning"), (1, 2))
    assert [(q.spec.groups if q.spec.kind == "power" else q.spec.metric) for q in il] == [1, 2, "optimism_bias"]
    assert "declared bounds" in il[0].needs and "exchangeability" in il[1].needs and "exchangeability" in il[2].needs
    risky = {q.name: q for q in declared_questions(ct.get_experiment("risky-choice"), (1,))}
    lam = next(q for name, q in risky.items() if "lambda" in name)
    assert lam.spec is None and "needs a bounded statistic" in lam.needs
    two = {q.name: q for q in declared_questions(ct.get_experiment("two-step"), (1,))}
    mb = next(q for name, q in two.items() if "model_basedness" in name)
    assert mb.spec is None and "pooled estimate" in mb.needs


def test_a_question_is_sized_and_measured_from_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    from monitor_questions import validate_question

    import cogtestbed.planning.kinds.monitor.monitor_pools as pools
    from cogtestbed.studies.study_kinds import study_spec

    monkeypatch.setattr(pools, "hypothesis_parts", _tagged_parts)
    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2)
    row = validate_question(spec, sims=300, seed=2)
    # 0.25 / 0.23 per unit: the t-test against 0 would need about 9 subjects at 80 % power; the fixed design valid
    # for the composite null tests against the interval's upper end, closer to the effect, so it needs more
    z = 1.645 + 0.842
    gap = 0.25 - row["null_interval"][1]
    assert row["fixed"]["test"].startswith("one-sided t-test against") and row["fixed"]["reached"]
    assert 0.7 * (z * 0.23 / gap) ** 2 <= row["fixed"]["n"] <= 1.5 * (z * 0.23 / gap) ** 2 + 3
    assert row["pools"]["measure"]["units"] == 20 * row["longest"] and row["group_sequential"]["max"] >= 6
    assert row["simulated_units"] == 60 + 2 * (row["pools"]["choose"]["units"] + row["pools"]["measure"]["units"])
    assert "more than 3, not simulated" in validate_question(spec, sims=300, seed=2, max_units=3)["reason"]

"""Revealed-belief family: items and templates, environment, agents, metrics, model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from study_scripts import load_study

from cogtestbed.agents.revealed import AGENTS, sampler_agent
from cogtestbed.environments.base import ScoredAnswer, ScoredResponse
from cogtestbed.environments.revealed import (
    RevealedBeliefEnv,
    RevealedDesign,
    continuations,
    parse_mcq,
    parse_outcome,
    render_mcq,
)
from cogtestbed.environments.revealed_floor import noise_floor
from cogtestbed.environments.revealed_items import dice_sum_pmf, observation_mask
from cogtestbed.inference.revealed import (
    chebyshev,
    l1,
    reference_for,
    reference_tables,
    revealed_metrics,
    symkl,
)
from cogtestbed.inference.revealed_model import MODELS
from cogtestbed.simulation import simulate

SMALL = RevealedDesign(dice_faces=(4, 10), n_dice=(1, 2), observations=("smaller", "even+not_first"),
                       n_coins=(2,), coin_biases=(1, 3), choice_options=(2, 4), preference_biases=(1, 2))


def _item(design: RevealedDesign, setting: str):  # type: ignore[no-untyped-def]
    return next(it for it in design.items if it.setting == setting)


# ----------------------------------------------------------------------------- items
def test_default_grid_is_the_papers_size_and_ground_truth_is_exact() -> None:
    d = RevealedDesign()
    assert d.n_items == 480 and d.n_trials == 960
    assert max(it.n_outcomes for it in d.items) == 34  # 3 dice x 12 faces: sums 3..36
    for it in d.items:
        assert sum(it.p_star) == pytest.approx(1.0) and sum(it.prior) == pytest.approx(1.0)
    pmf, lo = dice_sum_pmf(2, 6)
    assert lo == 2 and pmf[7 - 2] == pytest.approx(6 / 36)
    coins = _item(d, "3 coins 5x Heads")
    assert coins.p_star[3] == pytest.approx((5 / 6) ** 3)
    tails = _item(d, "2 coins 3x Tails")
    assert tails.p_star == pytest.approx((0.5625, 0.375, 0.0625))
    pref = _item(d, "Right/Left 2x Left")
    assert pref.labels == ("Right", "Left") and pref.p_star == pytest.approx((1 / 3, 2 / 3))
    dep = _item(d, "1d4 first=1")
    assert dep.labels == ("2", "3", "4", "5") and dep.p_star == pytest.approx((0.25,) * 4)
    obs = _item(d, "1d4 obs=smaller")
    assert obs.p_star == pytest.approx((0.5, 0.5, 0, 0)) and obs.prior == pytest.approx((0.25,) * 4)
    assert list(observation_mask(np.arange(1, 5), ("even", "not_first"))) == [False, True, False, True]


def test_verbatim_templates_of_the_paper() -> None:
    d = RevealedDesign()
    assert _item(d, "1d4").context == ("A die has 4 faces. The die is equally likely to land on any of its faces. "
                                       "The die is cast. The die lands on face number")
    assert _item(d, "1d4 first=1").context.endswith(
        "The die lands on face number 1. The die is cast again. The sum of both results is equal to")
    assert _item(d, "1d4 obs=smaller").context.endswith(
        "The die is cast. We observe that the result is smaller than 3. Indeed, the result is equal to")
    assert _item(d, "2 coins 1x Heads").context == (
        "There are 2 coins. Each coin is fair and is equally likely to land on Heads and Tails. The coins are "
        "flipped and the resulting number of Heads is equal to")
    assert _item(d, "3 coins 5x Heads").context == (
        "There are 3 coins. Each coin is biased and is 5 times more likely to land on Heads than on Tails. The "
        "coins are flipped and the resulting number of Heads is equal to")
    assert _item(d, "2 coins 1x Heads first=0").context == (
        "There are 2 coins. Each coin is fair and is equally likely to land on Heads and Tails. The coins are "
        "flipped a first time and the resulting number of Heads is 0. The coins are flipped again and the total "
        "number of Heads showed in the two launches is equal to")
    assert _item(d, "4 options").context == (
        "A person has to choose randomly between 4 options. The options are A, B, C and D. All possible options "
        "are equally likely. The person chooses at random option")
    assert _item(d, "4 options prev=B").context.endswith(
        "All possible options are equally likely. The person first chooses at random option B. Then the person "
        "performs another random choice and chooses option")
    assert _item(d, "Left/Right fair").context == (
        "A person has to choose randomly between two options: Left and Right. The choice is fair and each option "
        "equally likely to be chosen. The person chooses at random option")
    assert _item(d, "Left/Right 2x Left").context == (
        "A person has to choose randomly between two options: Left and Right. The option Left is 2 times more "
        "likely to be chosen than the option Right. The person chooses at random option")


def test_mcq_matches_the_printed_example_and_parsers() -> None:
    item = _item(RevealedDesign(), "1d4 prev=1")
    text = render_mcq(item, 1, np.array([0.083, 0.125, 0.250, 0.500, 0.750]))
    assert text.endswith(
        "Scenario: A die has 4 faces. The die is equally likely to land on any of its faces. The die is cast. The "
        "die lands on face number 1. The die is cast again.\n\nQuestion: What is the probability that the die "
        "lands on face 2?\n\nAnswers: A) 0.083 B) 0.125 C) 0.250 D) 0.500 E) 0.750")
    assert text.startswith("You are given a Scenario, a Question, and a set of possible Answers.")
    assert parse_mcq(" [C]").action == 2 and parse_mcq("D) 0.5").action == 3 and not parse_mcq("maybe").ok
    labels = tuple(str(v) for v in range(2, 13))
    assert parse_outcome(" 10 and", labels).action == 8
    assert not parse_outcome(" 1", labels).ok


def test_terminator_rule_only_for_prefix_ambiguous_outcome_sets() -> None:
    d = RevealedDesign()
    assert continuations(_item(d, "1d6")) == (" 1", " 2", " 3", " 4", " 5", " 6")
    assert continuations(_item(d, "2d6"))[:2] == (" 2", " 3")  # 2..12: no label prefixes another
    assert continuations(_item(d, "1d10"))[::9] == (" 1.", " 10.")  # "1" is a prefix of "10"
    assert continuations(_item(d, "Left/Right fair")) == (" Left", " Right")


def test_design_subgrid_and_bad_input() -> None:
    sub = RevealedDesign(scenarios="choice,preference", variants="regular")  # type: ignore[arg-type]
    assert {it.scenario for it in sub.items} == {"choice", "preference"}
    assert {it.variant for it in sub.items} == {"regular"}
    with pytest.raises(ValueError, match="scenarios: unknown"):
        RevealedDesign(scenarios=("urn",))
    with pytest.raises(ValueError, match="observations: unknown"):
        RevealedDesign(observations=("smaller+prime",))
    with pytest.raises(ValueError, match="selects no item"):
        RevealedDesign(scenarios=("choice",), variants=("dependent",))


# ----------------------------------------------------------------------------- environment
def test_sessions_mcq_and_step_recording() -> None:
    env = RevealedBeliefEnv(SMALL)
    sessions = RevealedBeliefEnv.sample_sessions(SMALL, 3, np.random.default_rng(0))
    values = sessions.mcq_values[sessions.channel == 1]
    correct = sessions.correct[sessions.channel == 1]
    assert len(set(correct.tolist())) == 5  # the correct position is randomised
    targets = [SMALL.items[i].p_star[t] for i, t in zip(sessions.item[sessions.channel == 1],
                                                        sessions.target[sessions.channel == 1], strict=True)]
    assert np.allclose(values[np.arange(len(correct)), correct], np.round(targets, 3))
    obs, info = env.reset(options={"session": sessions.subject(0)})
    assert isinstance(obs["response"], ScoredResponse) and obs["response"].raw
    k = obs["n_outcomes"]
    lp = np.log(np.full(k, 0.5 / k))  # half the mass outside the outcome set
    obs, *_ = env.step(ScoredAnswer(lp, mass_outside=0.5))
    assert obs["channel"] == 1 and obs["response"].continuations == ("[A]", "[B]", "[C]", "[D]", "[E]")
    staa = np.log(np.array([0.1, 0.1, 0.1, 0.1, 0.1]))
    staa[obs["correct"]] = np.log(0.4)
    env.step(ScoredAnswer(staa))
    with pytest.raises(ValueError, match="log-probabilities"):
        env.step(ScoredAnswer(np.zeros(3)))


def test_generated_staa_mode_is_a_text_step() -> None:
    design = SMALL.model_copy(update={"staa_mode": "generated"})
    env = RevealedBeliefEnv(design)
    obs, _ = env.reset(seed=1)
    env.step(ScoredAnswer(np.zeros(obs["n_outcomes"])))
    obs = env._observation()
    assert "response" not in obs and env.parse("[B]").action == 1


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_batch_equals_step(agent: str) -> None:
    params = {} if agent == "rational" else {"beta_first": 1.5, "beta_anchor": 0.7, "noise": 0.02,
                                             "theta": 2.0, "beta_pos": 0.5}
    a = simulate("revealed-belief", agent, 2, 7, params, design=SMALL)
    b = simulate("revealed-belief", agent, 2, 7, params, design=SMALL, method="step")
    pd.testing.assert_frame_equal(a, b)
    again = simulate("revealed-belief", agent, 2, 7, params, design=SMALL)
    pd.testing.assert_frame_equal(a, again)


def test_rational_agent_scores_zero_and_biases_move_the_metrics() -> None:
    m = revealed_metrics(simulate("revealed-belief", "rational", 1, 0, design=SMALL))["metrics"]
    assert m["chebyshev"] == pytest.approx(0, abs=1e-12) and m["staa_error"] == 0.0
    biased = revealed_metrics(simulate("revealed-belief", "dissonant", 1, 0, {"beta_first": 2.0}, design=SMALL))
    # a pure shift of the first outcome's logit: symmetric KL = (β/2)·L1 on every item
    per = biased["by_cell"]
    revb = [c for c in per if c["channel"] == "revb"]
    assert all(c["symkl"] == pytest.approx(c["l1"], rel=1e-6) for c in revb)
    assert biased["metrics"]["chebyshev"] > 0.1
    choice = next(c for c in revb if c["scenario"] == "choice" and c["variant"] == "regular")
    # k = 2 and 4 choices: P(A) = e²/(e² + k − 1)
    expected = np.mean([math.exp(2) / (math.exp(2) + k - 1) - 1 / k for k in (2, 4)])
    assert choice["chebyshev"] == pytest.approx(expected)


def test_sampler_records_its_n_and_noise_floor_flag() -> None:
    t = simulate("revealed-belief", "dissonant-sampler", 1, 0, design=SMALL)
    assert set(t["method"].astype(str)) == {"sampled"} and set(t["n_samples"]) == {100}
    res = revealed_metrics(t)
    assert res["flags"] and "samples" in res["flags"][0]
    assert sampler_agent(5000).draws_per_trial == 5000


def test_sampler_draws_the_designs_n_samples() -> None:
    from cogtestbed.inference.revealed import item_metrics

    cheb = {}
    for n in (20, 1000):
        t = simulate("revealed-belief", "dissonant-sampler", 1, 0, design=SMALL.model_copy(update={"n_samples": n}))
        assert set(t["n_samples"]) == {n}
        cheb[n] = float(item_metrics(t)["chebyshev"].mean())
    assert cheb[1000] < cheb[20] / 2  # sampling error shrinks like 1/sqrt(N)
    with pytest.raises(ValueError, match="draws 1 to 1000 samples per item"):
        simulate("revealed-belief", "dissonant-sampler", 1, 0, design=SMALL.model_copy(update={"n_samples": 5000}))


# ----------------------------------------------------------------------------- metrics
def test_metric_formulas_match_the_papers_two_outcome_check() -> None:
    p, q = np.array([0.82, 0.18]), np.array([0.5, 0.5])
    assert chebyshev(p, q) == pytest.approx(0.32)
    assert l1(p, q) == pytest.approx(0.64)
    assert symkl(p, q) == pytest.approx(0.4852, abs=1e-3)  # the paper's L70B row: 0.48
    # excluded outcome: the ε floor keeps it finite
    assert 0 < symkl(np.array([0.5, 0.5]), np.array([1.0, 0.0])) < 20


def test_staa_error_raw_and_renormalised() -> None:
    env = RevealedBeliefEnv(SMALL.model_copy(update={"channels": ("staa",)}))
    sessions = RevealedBeliefEnv.sample_sessions(env.design, 1, np.random.default_rng(3))
    obs, _ = env.reset(options={"session": sessions})
    while True:
        lp = np.log(np.full(5, 0.05))
        lp[obs["correct"]] = np.log(0.3)  # raw P(correct) = 0.3, renormalised 0.6
        obs, _, done, _, _ = env.step(ScoredAnswer(lp))
        if done:
            break
    table = RevealedBeliefEnv.trials_table(env.design, sessions, env.outcomes, agent="x")
    m = revealed_metrics(table)["metrics"]
    assert m["staa_error"] == pytest.approx(0.4) and m["staa_error_raw"] == pytest.approx(0.7)


def test_reference_tables_ship_and_join_by_condition() -> None:
    ref = reference_tables()
    assert len(ref) == 627 * 11
    row = reference_for("dice", "Regular – 1 die", "revb")
    assert row["RevB-base"]["chebyshev"]["L70B"] == 0.11
    assert reference_for("choice", "Regular – 2 choices", "staa")["StaA-instruct"]["staa_error"]["Y6B"] == 0.41
    conds = {c for c in ref["condition"]}
    mine = {it.condition for it in RevealedDesign().items}
    assert len(mine & conds) >= 80  # nearly every condition of the paper is in the grid


def test_noise_floor_reproduces_the_design_notes_table() -> None:
    # E[Chebyshev] of an N-sample estimate of a uniform distribution (k = 6, N = 100: .060 / p95 .097),
    # the table computed in this project's design notes (the paper has no sampling noise floor)
    f = noise_floor(6, 100)
    assert f["chebyshev_mean"] == pytest.approx(0.060, abs=0.003)
    assert f["chebyshev_p95"] == pytest.approx(0.097, abs=0.006)
    assert noise_floor(2, 1000)["chebyshev_mean"] == pytest.approx(0.012, abs=0.0015)


def test_metrics_pair_two_runs(tmp_path: Path) -> None:
    from cogtestbed.registry import write_trials

    a = simulate("revealed-belief", "dissonant", 1, 0, {"beta_first": 1.0}, design=SMALL)
    b = simulate("revealed-belief", "rational", 1, 0, design=SMALL)
    path = tmp_path / "b.parquet"
    write_trials(b, path, {})
    res = revealed_metrics(a, pair=str(path))
    assert res["pairs"] and all(p["difference"] <= 0 for p in res["pairs"])


# ----------------------------------------------------------------------------- model
def test_gradient_matches_finite_differences() -> None:
    model = MODELS["dissonant"]
    t = simulate("revealed-belief", "dissonant", 1, 2, {"beta_first": 1.0, "noise": 0.05, "kappa": 5.0},
                 design=SMALL)
    t2 = simulate("revealed-belief", "dissonant-sampler", 1, 2, {"beta_first": 1.0}, design=SMALL)
    data = model.subject_data(pd.concat([t, t2.assign(trial=t2["trial"] + 10_000)]))[0]
    theta = model.parameters.vector({p.name: p.default for p in model.parameters})
    theta[[0, 1, 2, 6, 7, 9]] = [0.8, 0.5, 0.3, 4.0, 2.0, 0.03]
    _, grad = model.nll_grad(theta, data)
    for i in range(len(theta)):
        h = 1e-6 * max(1.0, abs(theta[i]))
        e = np.zeros_like(theta)
        e[i] = h
        num = (model.nll(theta + e, data) - model.nll(theta - e, data)) / (2 * h)
        assert grad[i] == pytest.approx(num, rel=1e-4, abs=1e-3)


def test_mle_recovers_the_dissonant_agent() -> None:
    truth = {"tau": 0.8, "beta_first": 2.0, "beta_label": 1.0, "beta_anchor": 0.5, "beta_mid": 0.4,
             "kappa": 8.0, "theta": 3.0, "beta_pos": 1.0, "noise": 0.01}
    t = simulate("revealed-belief", "dissonant", 1, 11, truth)
    fit = MODELS["dissonant"].fit_mle(t).iloc[0]
    for name, value in truth.items():
        assert fit[name] == pytest.approx(value, rel=0.1, abs=0.1), name


def test_cli_simulate_and_metrics(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cogtestbed.cli import app

    out = tmp_path / "T.parquet"
    runner = CliRunner()
    res = runner.invoke(app, ["simulate", "revealed-belief", "--agent", "dissonant", "--param", "beta_first=2",
                              "--seed", "1", "--subjects", "1", "-o", str(out), "--design", "scenarios=choice"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["metrics", "revealed-belief", str(out), "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert set(payload["metrics"]) >= {"chebyshev", "l1", "symkl", "staa_error"}
    assert payload["by_condition"][0]["reference"]


def test_hierarchical_model_builds_with_scenario_pooling() -> None:
    t = simulate("revealed-belief", "dissonant", 2, 0, {"noise": 0.05}, design=SMALL)
    m = MODELS["dissonant"].pymc_model(t)
    names = {v.name for v in m.free_RVs}
    # two subjects: too few for the data to choose a centred parameter (centring.MIN_SUBJECTS), all non-centred
    assert {"beta_first_scenario_sd", "beta_first_scenario_z", "tau_mu", "tau_sigma", "tau_z"} <= names
    assert not any(n.endswith("_u") for n in names)
    # β_round is seen only on dice sums (one scenario): no scenario level for it
    assert "beta_round_scenario_z" not in names
    assert m.coords["beta_first_scenario"] == ("dice", "coins", "choice", "preference")
    assert m.coords["beta_mid_scenario"] == ("dice", "coins")
    assert [v.name for v in m.observed_RVs] == ["answers"]
    assert m["obs_cell"].get_value().shape == (len(t),)


def test_hierarchical_subject_level_is_the_datas_choice_per_parameter() -> None:
    """``subject_level="data"`` (the default) centres exactly the parameters :func:`centring.centred_parameters`
    picks: none below MIN_SUBJECTS subjects (the centred form diverged there: R-hat 1.166, 716 divergences on 6
    subjects), every parameter where hundreds of exact distributions pin each subject; ``centred`` /
    ``non-centred`` force one form; the compiled-model key follows the choice."""
    from cogtestbed.errors import InputError
    from cogtestbed.inference.centring import MIN_SUBJECTS, centred_parameters
    from cogtestbed.inference.revealed_hierarchical import dissonant_pymc_model, subject_level_centred

    model = MODELS["dissonant"]
    names = model.parameters.names
    rng = np.random.default_rng(11)
    n = MIN_SUBJECTS
    params = {"beta_first": rng.uniform(0, 3, n), "beta_anchor": rng.uniform(-0.5, 1.5, n),
              "tau": rng.uniform(0.5, 1.5, n), "theta": rng.uniform(0, 6, n), "kappa": rng.uniform(1, 14, n),
              "noise": rng.uniform(0.01, 0.05, n)}
    sharp = simulate("revealed-belief", "dissonant", n, 2, params, design=SMALL)
    chosen = subject_level_centred(model, sharp)
    assert chosen == centred_parameters(model, model.subject_data(sharp))
    assert {"tau", "beta_first", "beta_anchor", "theta", "kappa"} <= set(chosen)  # varied, pinned
    assert not {"beta_label", "beta_round", "beta_mid", "beta_pos"} & set(chosen)  # no population spread
    few = sharp[sharp["subject"].isin(sharp["subject"].unique()[: n - 1])]
    assert subject_level_centred(model, few) == ()
    assert subject_level_centred(model, few, "centred") == names
    assert subject_level_centred(model, sharp, "non-centred") == ()
    free = {v.name for v in dissonant_pymc_model(model, sharp).free_RVs}
    assert {f"{p}_u" for p in chosen} <= free and not {f"{p}_z" for p in chosen} & free
    assert {f"{p}_z" for p in names if p not in chosen} <= free
    keys = {dissonant_pymc_model(model, sharp, subject_level=level).cogtestbed_key
            for level in ("data", "centred", "non-centred")}
    assert len(keys) == (2 if set(chosen) == set(names) else 3)
    shuffled = sharp.sample(frac=1.0, random_state=5).reset_index(drop=True)
    assert subject_level_centred(model, shuffled) == chosen  # the choice does not depend on row order
    with pytest.raises(InputError, match="subject_level"):
        subject_level_centred(model, sharp, "centered")
    with pytest.raises(InputError, match="subject_level"):  # refused with independent subjects too
        dissonant_pymc_model(model, few, hierarchical=False, subject_level="centered")


def test_hierarchical_logp_equals_the_mle_nll_per_scenario_cell() -> None:
    """The PyMC log-likelihood at a random point (with scenario deviations) is minus the sum of
    the kernel NLL over (subject, scenario) cells at the shifted parameters."""
    model = MODELS["dissonant"]
    t = simulate("revealed-belief", "dissonant", 2, 4, {"beta_first": 1.0, "noise": 0.05, "kappa": 5.0},
                 design=SMALL)
    t2 = simulate("revealed-belief", "dissonant-sampler", 2, 4, {"beta_anchor": 0.5}, design=SMALL)
    t = pd.concat([t, t2.assign(trial=t2["trial"] + 10_000)], ignore_index=True)
    m = model.pymc_model(t, hierarchical=False)
    rng = np.random.default_rng(3)
    point = dict(m.initial_point())
    natural = {}
    for p in model.parameters:
        u = rng.normal(p.prior_mean, 0.5, 2)
        point[f"{p.name}_u"] = u
        natural[p.name] = p.to_constrained(u)
    shift = {}
    for name in ("beta_first", "beta_anchor", "beta_mid"):
        sd, z = 0.7, rng.normal(size=point[f"{name}_scenario_z"].shape)
        point[f"{name}_scenario_sd_log__"] = np.log(sd)
        point[f"{name}_scenario_z"] = z
        shift[name] = dict(zip(m.coords[f"{name}_scenario"], (sd * z).T, strict=True))
    logp = float(m.compile_logp(vars=[m["answers"]], sum=True)(point))
    nll = 0.0
    for (scen, subj), rows in t.groupby(["scenario", "subject"]):
        theta = {k: float(v[subj]) for k, v in natural.items()}
        for name, by_scen in shift.items():
            theta[name] += float(by_scen.get(scen, np.zeros(2))[subj])
        data = model.subject_data(rows)[subj]
        nll += model.nll(model.parameters.vector(theta), data)
    assert logp == pytest.approx(-nll, rel=1e-9)


def test_mle_recovers_kappa_inside_its_identified_range() -> None:
    """Starts on the κ plateau alone left BFGS there (flat ℓ); the κ ladder of the start grid finds it."""
    t = simulate("revealed-belief", "dissonant", 3, 5, {"kappa": np.array([3.0, 7.0, 10.0]), "noise": 0.02,
                                                         "theta": 3.0, "beta_first": 1.0})
    fit = MODELS["dissonant"].fit_mle(t)
    assert fit["kappa"].to_numpy() == pytest.approx([3.0, 7.0, 10.0], abs=0.3)


@pytest.mark.slow
def test_hierarchical_fit_converges_and_recovers_the_biases() -> None:
    hierarchical_recovery = load_study("revealed_family").hierarchical_recovery

    # the study's documented run (``python benchmarks/studies/revealed_family.py --only hierarchical
    # --subjects 6 --draws 1000 --chains 4 --subject-level centred``, about 4 min on two busy cores): a handful of
    # sharply pinned models, where the docs keep the centred form (the data's choice is non-centred below
    # centring.MIN_SUBJECTS, far slower here).  The scenario level still draws a few divergences at this design
    # (28 Nov 2026: 2 at 6 models, 6 at 8, the lowest ESS on β_mid's scenario SD; the recorded run of 27 Nov had
    # none; a shorter one, 4 models × 500 draws, had 8 and R-hat 1.016), so the test bounds them (0.25 % of the
    # draws) instead of asking for none; the fit that did not hold had 716.  The same seed on the same centred
    # model drew 0 divergences on 27 Nov and 2 on 28 Nov: the drift comes from code elsewhere (the chains' paths
    # move with any change of a kernel's rounding), not from the subject level.
    res = hierarchical_recovery(n_subjects=6, draws=1000, tune=1000, chains=4, seed=0, subject_level="centred")
    d = res["diagnostics"]
    print("hierarchical revealed-belief fit:", d["report"], res["recovery"], res["worst_variables"])
    assert d["max_rhat"] <= 1.01 and d["min_ess_bulk"] >= 400 and d["min_ess_tail"] >= 400, d["report"]
    assert d["divergences"] <= 10, d["report"]
    for name in ("beta_first", "beta_label", "beta_anchor", "beta_mid", "tau", "theta"):
        assert res["recovery"][name]["r"] > 0.9, name


# ----------------------------------------------------------------------------- prompts as rendered
#: App. A's printed prompts, verbatim (line breaks of the typeset text are spaces; the MCQ's blocks
#: are separated by blank lines as printed), keyed by the item setting each one fills.
PAPER_REVB = {
    "1d4": "A die has 4 faces. The die is equally likely to land on any of its faces. The die is cast. The die "
           "lands on face number",
    "1d4 first=1": "A die has 4 faces. The die is equally likely to land on any of its faces. The die is cast. The "
                   "die lands on face number 1. The die is cast again. The sum of both results is equal to",
    "1d4 obs=smaller": "A die has 4 faces. The die is equally likely to land on any of its faces. The die is cast. "
                       "We observe that the result is smaller than 3. Indeed, the result is equal to",
    "2 coins 1x Heads": "There are 2 coins. Each coin is fair and is equally likely to land on Heads and Tails. The "
                        "coins are flipped and the resulting number of Heads is equal to",
    "2 coins 1x Heads first=0": "There are 2 coins. Each coin is fair and is equally likely to land on Heads and "
                                "Tails. The coins are flipped a first time and the resulting number of Heads is 0. "
                                "The coins are flipped again and the total number of Heads showed in the two "
                                "launches is equal to",
    "Left/Right fair": "A person has to choose randomly between two options: Left and Right. The choice is fair and "
                       "each option equally likely to be chosen. The person chooses at random option",
    "Left/Right fair prev=Left": "A person has to choose randomly between two options: Left and Right. The choice "
                                 "is fair and each option equally likely to be chosen. The person first chooses at "
                                 "random option Left. Then the person performs another random choice and chooses "
                                 "option",
    "4 options": "A person has to choose randomly between 4 options. The options are A, B, C and D. All possible "
                 "options are equally likely. The person chooses at random option",
    "4 options prev=B": "A person has to choose randomly between 4 options. The options are A, B, C and D. All "
                        "possible options are equally likely. The person first chooses at random option B. Then the "
                        "person performs another random choice and chooses option",
}
PAPER_HEADER = ("You are given a Scenario, a Question, and a set of possible Answers. Select one Answer as your reply. "
                "The Answers are A, B, C, D, E. Your selected Answer will be contained within square brackets: "
                "[A], [B], [C], [D], [E] and your reply will contain nothing else.")
#: (setting, target outcome, option values, scenario, question) of App. A's four Stated Answer prompts.
PAPER_STAA = [
    ("1d4 prev=1", "2", (0.083, 0.125, 0.250, 0.500, 0.750),
     "A die has 4 faces. The die is equally likely to land on any of its faces. The die is cast. The die lands on "
     "face number 1. The die is cast again.", "What is the probability that the die lands on face 2?"),
    ("2 coins 1x Heads", "0", (0.750, 0.500, 0.125, 0.083, 0.250),
     "There are 2 coins. Each coin is fair and is equally likely to land on Heads and Tails.",
     "What is the probability that the resulting number of Heads is equal to 0 after flipping the coins?"),
    ("Left/Right fair", "Right", (0.250, 1.000, 0.500, 1.500, 0.167),
     "A person has to choose randomly between two options: Left and Right. The choice is fair and each option "
     "equally likely to be chosen.", "What is the probability that the person chooses option Right?"),
    ("4 options", "A", (0.750, 0.083, 0.125, 0.500, 0.250),
     "A person has to choose randomly between 4 options. The options are A, B, C and D. All possible options are "
     "equally likely.", "What is the probability that the person chooses option A?"),
]


def _rendered_prompts(design: RevealedDesign) -> dict[tuple[str, int], str]:
    """(setting, channel) → the prompt the environment renders at that step of one session."""
    env = RevealedBeliefEnv(design)
    sessions = RevealedBeliefEnv.sample_sessions(design, 1, np.random.default_rng(3))
    obs, _ = env.reset(options={"session": sessions.subject(0)})
    out: dict[tuple[str, int], str] = {}
    for _ in range(design.n_trials):
        item = design.items[obs["item"]]
        out[(item.setting, obs["channel"])] = obs["prompt"]
        k = item.n_outcomes if obs["channel"] == 0 else 5
        obs, *_ = env.step(ScoredAnswer(np.log(np.full(k, 1.0 / k))))
    return out


def test_rendered_prompts_are_the_papers_templates_filled_with_the_same_values() -> None:
    """Every printed RevB prompt of App. A (nine) is what the environment sends for that item, and
    its Stated Answer prompt is App. A's MCQ filled with the same scenario, target and values (the
    four printed examples), so a reworded template fails."""
    design = RevealedDesign()
    rendered = _rendered_prompts(design)
    for setting, text in PAPER_REVB.items():
        assert rendered[(setting, 0)] == text, setting
    for setting, target, values, scenario, question in PAPER_STAA:
        item = _item(design, setting)
        answers = " ".join(f"{o}) {v:.3f}" for o, v in zip("ABCDE", values, strict=True))
        paper = f"{PAPER_HEADER}\n\nScenario: {scenario}\n\nQuestion: {question}\n\nAnswers: {answers}"
        assert render_mcq(item, item.labels.index(target), np.array(values)) == paper, setting
        assert rendered[(setting, 1)].startswith(f"{PAPER_HEADER}\n\nScenario: {scenario}\n\nQuestion: What is")

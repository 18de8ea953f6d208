"""Belief coherence (Yamin et al. 2026): networks, environment, agents, tests T1-T4, models, CLI."""

from __future__ import annotations

import gzip
import json
import subprocess

import numpy as np
import pandas as pd
import pytest
from cli_runs import in_process
from scipy import stats
from study_scripts import load_study

from cogtestbed.agents.belief import AGENTS, coherent_aux, tk_weight
from cogtestbed.environments.bayesnets import NETWORK_DIR, NetworkError, Phrasebook, humanise, load_network
from cogtestbed.environments.belief import (
    BeliefCoherenceEnv,
    BeliefDesign,
    ground_truth,
    parse_belief,
    parse_decision,
    parse_labelled,
)
from cogtestbed.errors import InputError
from cogtestbed.inference import belief as B
from cogtestbed.simulation import simulate

SMALL = BeliefDesign(n_contexts=12, n_reps=2)


def sim(agent: str, params: dict | None = None, design: BeliefDesign | None = None, n: int = 1, seed: int = 3,
        method: str = "batch") -> pd.DataFrame:
    return simulate("belief-coherence", agent, n, seed, params, design=design or SMALL, method=method)


# ----------------------------------------------------------------------------- networks
@pytest.mark.parametrize(("name", "nodes", "edges"), [("child", 20, 25), ("alarm", 37, 46), ("hepar2", 70, 123),
                                                      ("asia", 8, 8), ("cancer", 5, 4), ("heart", 20, 121),
                                                      ("diabetes", 22, 77)])
def test_shipped_networks_have_the_published_sizes(name, nodes, edges):
    net = load_network(name)
    assert (len(net.nodes), net.n_edges) == (nodes, edges)


def test_exact_marginal_equals_pgmpy_variable_elimination():
    from pgmpy.inference import VariableElimination
    from pgmpy.readwrite import BIFReader

    for name, query in (("asia", ["lung", "xray", "smoke"]), ("child", ["Disease", "LowerBodyO2", "Age"]),
                        ("heart", ["SHD", "Age", "QRS_Prolonged"])):
        net = load_network(name)
        ours = net.marginal(query)
        model = net.to_pgmpy() if name == "heart" else None
        if model is None:  # pgmpy's own reading of the file, independent of ours
            with gzip.open(NETWORK_DIR / f"{name}.bif.gz", "rt") as fh:
                model = BIFReader(string=fh.read()).get_model()
        ref = VariableElimination(model).query(query, joint=True, show_progress=False)
        ref_values = np.transpose(ref.values, [ref.variables.index(q) for q in query])
        for q in query:  # pgmpy orders states as in the file, as ours
            assert list(ref.state_names[q]) == list(net.states[q])
        np.testing.assert_allclose(ours, ref_values, atol=1e-12)


def test_code_networks_are_seeded_and_heart_shd_is_noisy_or():
    a, b = load_network("heart", 0), load_network("heart", 0)
    c = load_network("heart", 1)
    assert all(np.array_equal(a.cpts[n], b.cpts[n]) for n in a.nodes)
    assert not np.array_equal(a.cpts["ECG_LVH"], c.cpts["ECG_LVH"])
    shd = a.cpts["SHD"]
    assert shd[(0,) * 11 + (1,)] == pytest.approx(0.02)  # the leak alone when no flag is set
    assert len(a.parents["LVEF_le45"]) == 8 and len(a.parents["QRS_Prolonged"]) == 7


def test_exact_posterior_of_1000_hepar2_contexts():
    """Its time is measured by benchmarks/bench_belief.py, not here."""
    design = BeliefDesign(network="hepar2", n_contexts=1000, n_reps=1)
    from cogtestbed.environments import belief as env_mod

    env_mod._ground_truth.cache_clear()
    load_network("hepar2")._cache.clear()
    gt = ground_truth(design)
    sessions = BeliefCoherenceEnv.sample_sessions(design, 1, np.random.default_rng(0))
    p = gt.pstar[sessions.config[0]]
    assert p.shape == (1000,) and np.all((p >= 0) & (p <= 1))


def test_contexts_are_stratified_over_the_bins():
    design = BeliefDesign()
    gt = ground_truth(design)
    cfg = BeliefCoherenceEnv.sample_sessions(design, 1, np.random.default_rng(1)).config[0]
    counts = np.bincount(gt.bins(20)[cfg], minlength=20)
    filled = np.unique(gt.bins(20))
    assert counts[filled].min() >= 200 // filled.size and counts.sum() == 200
    assert np.all(gt.px[cfg] >= design.min_config_prob)


def test_phrasebook_defaults_and_toml_override(tmp_path):
    assert humanise("HypoxiaInO2") == "hypoxia in O2"
    book = Phrasebook()
    assert book.phrase("Grunting", "yes") == "has grunting"
    assert book.phrase("Grunting", "no") == "does not have grunting"
    path = tmp_path / "book.toml"
    path.write_text('[names]\nGrunting = "grunting noises"\n[phrases.Age]\n"0-3_days" = "is a newborn"\n'
                    '[questions]\n"Disease=TGA" = "have TGA"\n')
    book = Phrasebook.from_toml(path)
    assert book.phrase("Grunting", "yes") == "has grunting noises"
    assert book.describe({"Age": "0-3_days", "Grunting": "no"}) == "is a newborn and does not have grunting noises"
    design = BeliefDesign(phrasebook=str(path), target="Disease=TGA", n_contexts=5, n_reps=1)
    env = BeliefCoherenceEnv(design)
    obs, _ = env.reset(seed=0)
    assert "What is the probability that they have TGA?" in obs["prompt"]
    (tmp_path / "bad.toml").write_text("[oops]\nx = 1\n")
    with pytest.raises(NetworkError, match="unknown sections"):
        Phrasebook.from_toml(tmp_path / "bad.toml")


@pytest.mark.parametrize("fields", [{"network": "nope"}, {"target": "Disease=Flu"}, {"evidence": "Age,Nope"},
                                    {"lie_node": "Age"}, {"variants": "mse"}, {"target": "Disease"}])
def test_bad_design_is_one_clear_error(fields):
    with pytest.raises(ValueError, match="network|state|node|LIE|variants|NODE=STATE"):
        BeliefDesign(**fields)


def test_design_from_cli_strings():
    d = BeliefDesign(network="asia", evidence="asia, smoke,xray", variants="pi0,bayes", lie_node="none")
    assert d.evidence == ("asia", "smoke", "xray") and d.variants == ("pi0", "bayes")
    assert d.steps_per_rep == 3 and BeliefCoherenceEnv.max_steps(d) == d.n_contexts * d.n_reps * 3


# ----------------------------------------------------------------------------- parsing
def test_incoherent_belief_is_recorded_as_reported_and_flagged():
    r = parse_belief("No: 0.3\nYes: 0.8")
    assert r.ok and list(r.action) == [0.3, 0.8]
    assert "exactly 2 lines" in parse_belief("Yes: 0.4").error
    assert "not a probability" in parse_belief("No: 2\nYes: 0.5").error
    env = BeliefCoherenceEnv(SMALL)
    env.reset(seed=1)
    answer = env.parse("No: 0.3\nYes: 0.8")
    env.record_response("No: 0.3\nYes: 0.8", None)
    env.step(answer.action)
    steps = BeliefCoherenceEnv.max_steps(SMALL)
    outcomes = env.outcomes
    sessions = env.session
    table = BeliefCoherenceEnv.trials_table(SMALL, sessions, outcomes)
    row = table.iloc[0]
    assert row["p_elicited"] == 0.8 and row["p_no_reported"] == 0.3 and not row["coherent"]
    assert row["p_renormalised"] == pytest.approx(0.8 / 1.1)
    assert len(table) == steps


def test_decision_parser_maps_can_decide_no_to_defer():
    assert parse_decision("Can decide: No\nDecision: Yes").action.tolist() == [2, 1]
    assert parse_decision("Can decide: Yes\nDecision: No").action.tolist() == [0, 0]
    assert "exactly 2 lines" in parse_decision("Can decide: Yes").error
    assert "line 2" in parse_decision("Can decide: Yes\nCan decide: No").error
    assert parse_labelled("yes: 0.2\nno: 0.8", ("yes", "no")).action.tolist() == [0.2, 0.8]


# ----------------------------------------------------------------------------- agents
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_batch_equals_step_on_a_small_design(agent):
    params = {"report_noise": 0.05} if "report_noise" in AGENTS[agent].parameters.names else None
    batch = sim(agent, params, n=2)
    step = sim(agent, params, n=2, method="step")
    pd.testing.assert_frame_equal(batch, step)


def test_tk_weighting_and_coherent_aux():
    assert tk_weight(0.3, 1.0) == 0.3
    assert tk_weight(0.05, 0.61) > 0.05 and tk_weight(0.9, 0.61) < 0.9  # inverse S
    out = np.zeros(3)
    pz, q = np.array([0.2, 0.5, 0.3]), np.array([0.1, 0.4, 0.9])
    coherent_aux(pz, q, 0.6, 3, out)
    assert out.sum() == pytest.approx(1.0) and out @ q == pytest.approx(0.6, abs=1e-9)
    coherent_aux(pz, q, float(pz @ q), 3, out)
    np.testing.assert_allclose(out, pz, atol=1e-9)


def test_chow_rule_defers_inside_the_band():
    table = sim("chow", {"c_fp": 1.0, "c_fn": 1.0, "c_d": 0.3}, design=BeliefDesign(n_contexts=60, n_reps=1,
                                                                                      lie_node="none"))
    rows = B.paired_rows(table)
    expected = np.where(rows["p"] < 0.3, 0, np.where(rows["p"] > 0.7, 1, 2))
    np.testing.assert_array_equal(rows["a"], expected)


# ----------------------------------------------------------------------------- tests T1-T4
def test_mnl_lr_matches_statsmodels():
    import statsmodels.api as sm

    rng = np.random.default_rng(0)
    n = 1000
    p, theta = rng.random(n), rng.integers(0, 2, n)
    eta = np.column_stack([np.zeros(n), -3 + 6 * p + 0.5 * theta, -1 + 2 * p])
    prob = np.exp(eta) / np.exp(eta).sum(1, keepdims=True)
    a = (rng.random(n)[:, None] > prob.cumsum(1)).sum(1)
    r = B.t1_lr_arrays(a, p, theta)
    ll0 = sm.MNLogit(a, sm.add_constant(p)).fit(disp=0).llf
    ll1 = sm.MNLogit(a, sm.add_constant(np.column_stack([p, theta]))).fit(disp=0).llf
    assert r["statistic"] == pytest.approx(2 * (ll1 - ll0), rel=1e-6) and r["df"] == 2
    # its 50 ms target is measured by benchmarks/bench_belief.py


def test_knn_cmi_matches_brute_force_and_is_near_zero_under_independence():
    from scipy import special

    rng = np.random.default_rng(2)
    n, k = 300, 3
    p, theta = rng.random(n), rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.75, theta, 1 - theta)
    xs = []
    for i in range(n):
        same = (a == a[i]) & (theta == theta[i])
        same[i] = False
        rho = np.sort(np.abs(p[same] - p[i]))[k - 1]
        within = np.abs(p - p[i]) <= rho
        xs.append(special.digamma(k) - special.digamma(np.sum((a == a[i]) & within) - 1)
                  - special.digamma(np.sum((theta == theta[i]) & within) - 1) + special.digamma(within.sum() - 1))
    assert B.cmi_knn(a, theta, p, k) == pytest.approx(np.mean(xs), abs=1e-12)
    assert B.cmi_knn(a, theta, p, k) > 0.08  # I(A; θ) = ln 2 − H(0.25) ≈ 0.13 nats
    indep = [B.cmi_knn(rng.integers(0, 3, 1000), rng.integers(0, 2, 1000), rng.random(1000)) for _ in range(5)]
    assert abs(np.mean(indep)) < 0.02


def test_rational_agent_passes_and_leak_fails_t1():
    design = BeliefDesign(n_contexts=200, n_reps=5, variants="pi0", lie_node="none")
    rational = sim("logit-rum", {"calib_slope": 2.0, "calib_bias": 0.5}, design=design, seed=1)
    leaky = sim("leak", {"leak": 0.4}, design=design, seed=1)
    assert not B.t1_lr(rational)["reject"]
    r = B.t1_lr(leaky)
    assert r["reject"] and r["p_value"] < 1e-4
    cmi = B.t1_cmi(leaky, n_boot=50, n_perm=50)
    assert cmi["reject"] and cmi["lo"] < cmi["hi"]
    assert not B.t1_cmi(rational, n_boot=20, n_perm=50)["reject"]


def test_t2_detects_non_monotone_deferral_not_a_logit_rum():
    design = BeliefDesign(n_contexts=200, n_reps=5, variants="pi0", lie_node="none")
    bad = B.t2(sim("nonmono-defer", {"bump": 8.0}, design=design, seed=2))
    good = B.t2(sim("logit-rum", design=design, seed=2))
    assert bad["reject"] and bad["pairs"]["D/(N+D)"]["pct_violating"] > 0
    assert not good["reject"]
    holm = B.t2(sim("nonmono-defer", {"bump": 8.0}, design=design, seed=2), use_holm=True)
    assert holm["p_value"] >= bad["p_value"]


def test_t3_detects_loss_sensitive_reports_and_t4_lie_incoherence():
    design = BeliefDesign(n_contexts=40, n_reps=3)
    shifted = sim("loss-report", {"shift": 1.0, "report_noise": 0.05}, design=design)
    steady = sim("logit-rum", {"report_noise": 0.05}, design=design)
    assert B.t3(shifted, n_perm=100)["reject"]
    assert not B.t3(steady, n_perm=100)["reject"]
    coherent = B.t4(sim("logit-rum", design=design), baseline=False, n_boot=50)
    assert coherent["estimate"] == pytest.approx(0.0, abs=1e-9) and not coherent["reject"]
    incoherent = B.t4(sim("lie-incoherent", {"incoherence": 1.0}, design=design), n_boot=50)
    assert incoherent["reject"] and incoherent["estimate"] > incoherent["baseline"]


def test_accuracy_rmse_equals_report_noise():
    table = sim("logit-rum", {"report_noise": 0.05}, design=BeliefDesign(n_contexts=100, n_reps=2, lie_node="none"))
    acc = B.accuracy(table)
    assert acc["estimate"] == pytest.approx(0.05, abs=0.01)
    assert set(acc["by_variant"]) == {"pi0", "mse", "abs", "bayes"}


# ----------------------------------------------------------------------------- models
def test_mnl_mle_recovers_the_logit_rum_coefficients():
    from cogtestbed.inference.belief_models import MODELS, mnl_centred, mnl_coefficients, mnl_uncentred

    table = sim("logit-rum", design=BeliefDesign(n_contexts=400, n_reps=5, variants="pi0", lie_node="none"))
    fit = MODELS["mnl"].fit_mle(table).iloc[0]
    truth = mnl_centred(mnl_coefficients(AGENTS["logit-rum"].parameters.validate(), 6.0))
    for name, value in truth.items():
        assert fit[name] == pytest.approx(value, abs=0.35 * abs(value) + 1.0)
    coef = {"alpha_yes": -12.0, "beta_yes": 24.0, "alpha_defer": -3.6, "beta_defer": 12.0}
    assert mnl_centred(coef) == {"mid_yes": 0.0, "slope_yes": 24.0, "mid_defer": 2.4, "slope_defer": 12.0}
    assert mnl_uncentred(mnl_centred(coef)) == pytest.approx(coef)


def test_loss_model_gradient():
    from scipy.optimize import approx_fprime

    from cogtestbed.inference.belief_models import MODELS

    table = sim("loss-rum", n=2, design=BeliefDesign(n_contexts=30, n_reps=2, variants="pi0", lie_node="none"))
    model = MODELS["loss"]
    data = next(iter(model.subject_data(table).values()))
    theta = np.array([0.4, 0.2, 15.0, 0.8])
    num = approx_fprime(theta, lambda t: model.nll(t, data), 1e-6)
    np.testing.assert_allclose(model.nll_grad(theta, data)[1], num, rtol=1e-4, atol=1e-3)


def _log_softmax_direct(v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """log softmax(v)[a] row by row, written out (no shared exponentials)."""
    return v[np.arange(len(a)), a] - np.log(np.exp(v).sum(axis=1))


@pytest.mark.parametrize("name", ["mnl", "loss"])
def test_decision_likelihoods_equal_their_formulas_from_the_belief(name: str) -> None:
    """Each kernel's NLL equals its formula written from p itself (the loss form reads log q and log(1 − q),
    the softmax shares its exponentials: a swapped or mis-clipped input would keep the gradient consistent and
    change these values), at beliefs that include both clipped ends."""
    from cogtestbed.inference.belief_models import EPS, MODELS, DecisionData

    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(0, 1, 200), [0.0, 1.0, 1e-12, 0.5]])
    a = rng.integers(0, 3, p.size)
    data = DecisionData(a, p, np.ones(p.size))
    if name == "mnl":
        theta = np.array([0.7, 20.0, 1.5, 9.0])
        x = p - 0.5
        v = np.column_stack([np.zeros_like(x), theta[0] + theta[1] * x, theta[2] + theta[3] * x])
    else:
        theta = np.array([0.4, 0.2, 15.0, 0.7])
        c_fp, c_d, s, gamma = theta
        q = np.clip(p, EPS, 1 - EPS)
        w = q**gamma / (q**gamma + (1 - q) ** gamma) ** (1 / gamma)
        v = np.column_stack([-s * (1 - c_fp) * w, -s * c_fp * (1 - w), np.full_like(w, -s * c_d)])
    expected = -_log_softmax_direct(v, a).sum()
    assert MODELS[name].nll(theta, data) == pytest.approx(expected, rel=1e-12)


@pytest.mark.slow
def test_pymc_models_build():
    from cogtestbed.inference.belief_models import MODELS

    table = sim("loss-rum", n=2, design=BeliefDesign(n_contexts=30, n_reps=2, variants="pi0", lie_node="none"))
    for name in ("mnl", "loss"):
        pm_model = MODELS[name].pymc_model(table, hierarchical=True)
        assert np.isfinite(pm_model.compile_logp()(pm_model.initial_point()))
        assert {"subject", "obs"} <= set(pm_model.coords)


# ----------------------------------------------------------------------------- CLI
def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``cogtestbed ARGS`` in this process (exit status 0 or the test fails with its stderr)."""
    return in_process(*args)


def test_cli_simulate_then_metrics(tmp_path):
    out = tmp_path / "T.parquet"
    cli("simulate", "belief-coherence", "--agent", "logit-rum", "--param", "report_noise=0.1", "--design",
        "network=child", "--design", "n_contexts=40", "--design", "n_reps=2", "--subjects", "1", "--seed", "1",
        "-o", str(out))
    result = json.loads(cli("metrics", "belief-coherence", str(out), "--json", "--n-boot", "20", "--n-perm",
                            "20", "--level", "0.1", "--baseline", "no").stdout)
    metrics = result["metrics"]
    assert set(metrics) == {"t1_cmi", "t1_cmi_isotonic", "t1_nested", "t1_lr", "t2", "t3", "t4", "accuracy"}
    for name, value in metrics.items():  # typed headline leaves: numbers and bools; tables under details
        assert "estimate" in value and isinstance(value["reject"], bool) and ("p_value" in value or "lo" in value)
        assert all(v is None or isinstance(v, (bool, int, float)) for v in value.values()), name
    assert set(result["details"]["t2"]["pairs"]) == {"Y/(N+Y)", "Y/(D+Y)", "D/(N+D)"}
    assert set(result["details"]["accuracy"]["by_variant"]) == {"pi0", "mse", "abs", "bayes"}
    assert isinstance(result["per_subject"][0]["t1_lr"]["p_value"], float)


def test_a_test_alone_equals_its_metrics_entry():
    from cogtestbed.experiments.belief_coherence import SPEC

    table = sim("leak", {"leak": 0.2}, design=BeliefDesign(n_contexts=40, n_reps=2, lie_node="none"))
    options = {"n_boot": 20, "n_perm": 20, "baseline": "no"}
    full = SPEC.metrics(table, **options)["metrics"]
    for name in ("t1_lr", "t2", "t3", "accuracy"):
        assert SPEC.metrics.tests[name](table, **options) == full[name]


@pytest.mark.slow
def test_cli_llm_run(tmp_path):
    cli("run", "belief-coherence", "--llm", "hf:tiny-random", "--subjects", "1", "--design", "n_contexts=2",
        "--design", "n_reps=1", "--design", "variants=pi0", "--max-tokens", "12", "-o", str(tmp_path / "run"))
    run = pd.read_parquet(tmp_path / "run" / "trials.parquet")
    assert len(run) == 2 * 5 and run["raw_response"].notna().all()
    assert (run["valid"] | run["parse_error"].notna()).all()


def test_declared_power_study_sweeps_the_leak_with_the_test_alone():
    from cogtestbed.experiments.belief_coherence import SPEC
    from cogtestbed.studies.driver import declared_studies, run_declared_study
    from cogtestbed.studies.verdict import verdict

    (name, decl), = [(n, d) for n, d in declared_studies(SPEC) if d.kind == "test-power" and d.test == "t1_lr"]
    result = run_declared_study(SPEC, decl, reps=3, seed=0, design={**decl.design, "n_contexts": 100})
    cells = {c["value"]: c["rejection_rate"] for c in result.summary["cells"]}
    assert result.summary["parameter"] == "leak" and sorted(cells) == [0.0, 0.05, 0.1, 0.2, 0.4]
    assert cells[0.4] == 1.0 and cells[0.0] <= 1 / 3
    assert "at leak=0.4:" in verdict(result) and "80% power first reached" in verdict(result)


def test_hierarchical_cli_passes_the_design_and_sampler_settings(monkeypatch, capsys):
    V = load_study("belief_family")

    seen: dict = {}

    def fake(model, n_subjects, **kwargs):
        seen.update(model=model, n_subjects=n_subjects, **kwargs)
        frame = pd.DataFrame({"model": model, "subject": [0, 1, 2], "parameter": "a", "true": [0.0, 1.0, 2.0],
                              "estimate": [0.1, 0.9, 2.2]})
        return frame, {"max_rhat": 1.0}

    monkeypatch.setattr(V, "hierarchical_study", fake)
    V.main(["hierarchical", "--subjects", "10", "--contexts", "100", "--reps", "4", "--chains", "3",
            "--draws", "1500", "--seed", "7"])
    assert seen == {"model": "mnl", "n_subjects": 10, "n_contexts": 100, "n_reps": 4, "draws": 1500, "chains": 3,
                    "seed": 7, "network": "child", "population": "prior"}
    assert '"max_rhat": 1.0' in capsys.readouterr().out
    defaults = V.build_parser().parse_args(["hierarchical"])
    assert (defaults.contexts, defaults.reps, defaults.draws, defaults.chains) == (200, 5, 500, 2)


# ----------------------------------------------------------------------------- decision models
def _rowwise_nll(name: str, theta: np.ndarray, table: pd.DataFrame) -> float:
    """−Σ log P(decision) over the decision rows, in numpy (independent of the numba cell kernel)."""
    from scipy.special import log_softmax

    keys = ["subject", "context_id"]
    pi0 = table[(table["phase"] == "belief") & (table["variant"] == "pi0") & table["valid"]]
    p = pi0.groupby(keys)["p_elicited"].mean().rename("p").reset_index()
    dec = table[(table["phase"] == "decision") & table["valid"]].merge(p, on=keys)
    x, a = dec["p"].to_numpy(), dec["decision"].map({"No": 0, "Yes": 1, "Defer": 2}).to_numpy()
    if name == "mnl":
        m_y, b_y, m_d, b_d = theta
        v = np.stack([0 * x, m_y + b_y * (x - 0.5), m_d + b_d * (x - 0.5)], 1)
    else:
        c, d, s, g = theta
        w = np.array([tk_weight(q, g) for q in x])
        v = np.stack([-s * (1 - c) * w, -s * c * (1 - w), -s * d + 0 * w], 1)
    return float(-log_softmax(v, axis=1)[np.arange(len(a)), a].sum())


@pytest.mark.parametrize(("name", "theta"), [("mnl", [0.3, 20.0, 1.5, 8.0]), ("loss", [0.4, 0.2, 15.0, 0.8])])
def test_decision_counts_give_the_rowwise_likelihood(name, theta):
    """The hierarchical model's data (decisions counted per distinct belief) give the per-decision likelihood and
    its gradient, with fewer rows than decisions, whatever the table's row order."""
    from cogtestbed.inference.belief_models import MODELS

    table = sim("loss-rum", {"report_noise": 0.0}, design=BeliefDesign(n_contexts=60, n_reps=4, variants="pi0",
                                                                          lie_node="none"))
    model = MODELS[name]
    counted = model.counts_model()
    rows = next(iter(model.subject_data(table).values()))
    counts = next(iter(counted.subject_data(table).values()))
    shuffled = next(iter(counted.subject_data(table.sample(frac=1.0, random_state=3)).values()))
    assert rows.a.size == 240 and np.all(rows.n == 1) and counts.p.size < 0.6 * 240
    assert np.all(np.diff(counts.p) > 0) and np.array_equal(counts.p, shuffled.p)
    assert np.array_equal(counts.n_yes, shuffled.n_yes) and np.array_equal(counts.n_defer, shuffled.n_defer)
    assert model.n_observations(rows) == counted.n_observations(counts) == 240
    expected = _rowwise_nll(name, np.array(theta), table)
    assert model.nll(np.array(theta), rows) == pytest.approx(expected, rel=1e-10)
    assert counted.nll(np.array(theta), counts) == pytest.approx(expected, rel=1e-10)
    _, grad_rows = model.nll_grad(np.array(theta), rows)
    _, grad_counts = counted.nll_grad(np.array(theta), counts)
    np.testing.assert_allclose(grad_counts, grad_rows, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", ["pointwise", "counts"])
def test_pooled_loss_kernels_are_each_subject_alone(kind: str) -> None:
    """The loss form's kernels over several subjects' rows at once, the rows interleaved (the hierarchical fit's
    call: each row reads its own subject's γ in both passes of the weights), give each subject's call alone."""
    from cogtestbed.inference.belief_models import MODELS

    table = sim("loss-rum", {"report_noise": 0.05}, n=4, design=BeliefDesign(n_contexts=30, n_reps=3,
                                                                             variants="pi0", lie_node="none"))
    model = MODELS["loss"] if kind == "pointwise" else MODELS["loss"].counts_model()
    kernel = model.kernel()
    data = [[np.asarray(getattr(d, f)) for f in model.observation_fields] for d in model.subject_data(table).values()]
    obs = np.concatenate([np.full(d[0].size, i) for i, d in enumerate(data)])
    order = np.random.default_rng(7).permutation(obs.size)
    pooled = [np.concatenate(columns)[order] for columns in zip(*data, strict=True)]
    theta = np.column_stack([[0.3, 0.5, 0.6, 0.45], [0.1, 0.3, 0.2, 0.05], [8.0, 20.0, 35.0, 12.0],
                             [0.3, 0.7, 1.4, 2.9]])
    ll, grad = kernel(theta, obs[order], *pooled)
    for i, own in enumerate(data):
        ll_i, grad_i = kernel(theta[i:i + 1], np.zeros(own[0].size, np.int64), *own)
        mine = obs[order] == i
        own_row = np.argsort(np.argsort(order[mine]))  # each pooled row's row in the subject's own arrays
        np.testing.assert_allclose(ll[mine], ll_i[own_row], rtol=1e-13)
        np.testing.assert_allclose(grad[mine], grad_i[own_row], rtol=1e-12, atol=1e-12)

def test_decision_beliefs_do_not_depend_on_row_order():
    """With noisy reports the contexts' mean beliefs (and so the counts' rows) are the same to the last bit whatever
    the table's row order: the mean is taken over sorted reports."""
    from cogtestbed.inference.belief_models import MODELS, decision_data

    table = sim("loss-rum", {"report_noise": 0.05}, n=3, design=BeliefDesign(n_contexts=40, n_reps=4,
                                                                             variants="pi0", lie_node="none"))
    counted = MODELS["loss"].counts_model()
    ours = counted.subject_data(table)
    rows = decision_data(table)
    for seed in range(5):
        shuffled = table.sample(frac=1.0, random_state=seed)
        theirs = counted.subject_data(shuffled)
        assert list(theirs) == list(ours)
        for subject, data in ours.items():
            assert np.array_equal(data.p, theirs[subject].p) and np.array_equal(data.n_yes, theirs[subject].n_yes)
        assert all(np.array_equal(np.sort(rows[k].p), np.sort(v.p)) for k, v in decision_data(shuffled).items())


def test_counts_model_pickles_and_refuses_a_lapse():
    """The counts model is pickled as "the counts model of its decider" (a Dask worker rebuilds the same class);
    a decider with a lapse is refused (a lapse mixes each decision, not a belief's counts), and a lapse on the counts
    model is refused (it declares no answers a lapse is uniform over)."""
    import pickle

    from cogtestbed.inference.base import with_lapse
    from cogtestbed.inference.belief_models import MODELS

    counted = MODELS["mnl"].counts_model()
    again = pickle.loads(pickle.dumps(counted))
    assert type(again) is type(counted) and type(counted).__module__ == "cogtestbed.inference.belief_models"
    assert pickle.loads(pickle.dumps(type(MODELS["loss"].counts_model()))) is type(MODELS["loss"].counts_model())
    with pytest.raises(InputError, match="only the plain decider"):
        with_lapse(MODELS["mnl"]).counts_model()
    with pytest.raises(InputError, match="does not declare the answers"):
        with_lapse(counted, 0.1)


def test_decision_counts_kernel_at_extreme_utilities():
    """A count of 0 on an answer whose probability underflows contributes 0, not NaN; the gradient stays finite."""
    from cogtestbed.inference.belief_models import MODELS

    table = sim("loss-rum", n=1, design=BeliefDesign(n_contexts=30, n_reps=3, variants="pi0", lie_node="none"))
    counted = MODELS["mnl"].counts_model()
    data = next(iter(counted.subject_data(table).values()))
    nll, grad = counted.nll_grad(np.array([90.0, 100.0, -90.0, -100.0]), data)
    assert np.isfinite(nll) and nll > 0 and np.all(np.isfinite(grad))


@pytest.mark.parametrize("name", ["mnl", "loss"])
def test_decision_model_pymc_logp_equals_minus_nll(name):
    from pymc_checks import pymc_logp_and_nll

    from cogtestbed.inference.belief_models import MODELS

    table = sim("loss-rum", n=3, design=BeliefDesign(n_contexts=30, n_reps=3, variants="pi0", lie_node="none"))
    logp, nll = pymc_logp_and_nll(MODELS[name], table, 3)
    assert np.isfinite(logp) and nll > 0
    assert logp == pytest.approx(-nll, rel=1e-9)


def test_loss_mle_survives_a_vanishing_scale():
    """The loss kernel's scale gradient has no 1/s (an optimiser step to s = 0 once divided by zero)."""
    from cogtestbed.inference.belief_models import MODELS

    table = sim("loss-rum", n=1, design=BeliefDesign(n_contexts=40, n_reps=3, variants="pi0", lie_node="none"))
    model = MODELS["loss"]
    data = next(iter(model.subject_data(table).values()))
    nll, grad = model.nll_grad(np.array([0.4, 0.2, 0.0, 1.0]), data)
    assert nll == pytest.approx(data.a.size * np.log(3.0)) and np.all(np.isfinite(grad))


@pytest.mark.slow
def test_loss_hierarchical_converges_on_a_small_design():
    """The README's loss-form row: 10 subjects × 100 contexts × 5, typical population, 2 × 1500 draws
    (with 6 subjects the population SDs are too weakly identified for 200 ESS in 1500 draws)."""
    hierarchical_study = load_study("belief_family").hierarchical_study

    frame, diag = hierarchical_study("loss", n_subjects=10, n_contexts=100, n_reps=5, draws=1500, chains=2, seed=0,
                                     population="typical")
    assert diag["converged"], diag["report"]
    assert diag["max_rhat"] <= 1.01 and diag["divergences"] == 0
    assert min(diag["min_ess_bulk"], diag["min_ess_tail"]) >= 200
    c_fp = frame[frame["parameter"] == "c_fp"]
    assert np.abs(c_fp["estimate"] - c_fp["true"]).max() < 0.1
    assert np.corrcoef(c_fp["estimate"], c_fp["true"])[0, 1] > 0.8


def test_power_cli_passes_metric_options_to_the_test():
    """``power EXPERIMENT --test KEY --option t2_bins=K``: the K of a T2 power curve from the CLI."""
    from cogtestbed.studies.options import power_spec as _power_spec

    common = {"subjects": (10,), "runs": (1,), "trials": (50, 100), "design": {"n_reps": 2}, "reps": 4, "seed": 0,
              "level": 0.05, "method": "mle", "base": {}, "sd_between": 0.5, "params": {}, "draws": 10, "tune": 10,
              "chains": 1, "lapse": None}
    spec = _power_spec("belief-coherence", None, None, None, None, "t2", "nonmono-defer:bump=4", dict(common),
                       ["t2_bins=7", "holm=yes"])
    assert spec.metric_options == {"t2_bins": 7, "holm": "yes"} and spec.trials == (50, 100)
    with pytest.raises(ValueError, match="`t2_bins`"):
        _power_spec("belief-coherence", None, None, None, None, "t2", "nonmono-defer", dict(common), ["t2_bins=x"])
    with pytest.raises(ValueError, match="not to `effect`"):
        _power_spec("mnl", None, "slope_yes=1", None, None, None, None, dict(common), ["t2_bins=3"])


def test_repetition_averaged_belief_tames_report_noise():
    table = sim("logit-rum", {"report_noise": 0.15}, design=BeliefDesign(n_contexts=200, n_reps=5, variants="pi0",
                                                                            lie_node="none"))
    rows = B.paired_rows(table, average=True)
    raw = B.paired_rows(table)
    assert np.allclose(rows["p"], raw.groupby("group")["p"].transform("mean"))
    assert rows.groupby("group")["p"].nunique().max() == 1 and raw.groupby("group")["p"].nunique().max() > 1
    plain, averaged = B.t1_lr(table), B.t1_lr(table, average=True)
    assert plain["reject"] and plain["p_value"] < 1e-4 < averaged["p_value"]
    from cogtestbed.experiments.belief_coherence import SPEC

    assert SPEC.metrics.tests["t1_lr"](table, average_reps="yes")["p_value"] == averaged["p_value"]


# ----------------------------------------------------------------------------- size calibration
def test_fisher_mid_p_on_a_known_two_by_two_table():
    # bin j 3/3, bin k 0/3: X ~ hypergeom(M=6, n=3, N=3), P(X = 3) = 1/20
    up, low = B.fisher_one_sided(np.array([3]), np.array([3]), np.array([0]), np.array([3]))
    assert up[0] == pytest.approx(0.05) and low[0] == pytest.approx(1.0)
    up, low = B.fisher_one_sided(np.array([3]), np.array([3]), np.array([0]), np.array([3]), mid=True)
    assert up[0] == pytest.approx(0.025) and low[0] == pytest.approx(0.975)
    # 2/4 vs 1/4: P(X = 2) = C(3,2)C(5,2)/C(8,4) = 30/70, P(X = 3) = 5/70; mid-p's two tails sum to one
    up, low = B.fisher_one_sided(np.array([2]), np.array([4]), np.array([1]), np.array([4]), mid=True)
    assert up[0] == pytest.approx(15 / 70 + 5 / 70) and up[0] + low[0] == pytest.approx(1.0)
    # an empty bin is no evidence
    assert B.fisher_one_sided(np.array([0]), np.array([0]), np.array([2]), np.array([3]), mid=True)[0][0] == 1.0


def test_t2_permutation_rule_is_calibrated_at_flat_shares_and_any_pair_is_not():
    """Decisions independent of p (the least-favourable null): the permutation p-value is uniform,
    the paper's any-pair rule over 30 tests rejects far more often than α."""
    rng = np.random.default_rng(11)
    perm, any_pair = [], []
    for i in range(150):
        a, p = rng.integers(0, 3, 300), rng.random(300)
        perm.append(B.t2_arrays(a, p, n_perm=39, seed=i)["p_value"])
        any_pair.append(B.t2_arrays(a, p, rule="any-pair")["p_value"])
    perm, any_pair = np.array(perm), np.array(any_pair)
    assert 0.12 < np.mean(perm <= 0.2) < 0.28 and 0.4 < np.mean(perm <= 0.5) < 0.6
    assert np.mean(any_pair < 0.05) > 0.2
    # Holm within a choice pair is a monotone map of its minimum: same permutation decision
    a, p = rng.integers(0, 3, 300), rng.random(300)
    assert B.t2_arrays(a, p, use_holm=True, seed=1)["p_value"] == B.t2_arrays(a, p, seed=1)["p_value"]


def test_t2_permutation_rule_is_conservative_for_a_monotone_agent_and_detects_a_bump():
    design = BeliefDesign(n_contexts=200, n_reps=5, variants="pi0", lie_node="none")
    rational = B.t2(sim("logit-rum", design=design, seed=4), n_perm=50)
    assert rational["p_value"] > 0.5 and not rational["reject"] and rational["rule"] == "permutation"
    bumped = B.t2(sim("nonmono-defer", {"bump": 8.0}, design=design, seed=4), n_perm=50)
    assert bumped["reject"] and bumped["p_value"] == pytest.approx(1 / 51)
    with pytest.raises(ValueError, match="rule"):
        B.t2(sim("logit-rum", design=SMALL), rule="bonferroni")


def test_t1b_placebo_t_test_is_exact_for_exchangeable_improvements():
    """Improvements of θ and of M placebos that are exchangeable (a shared part plus independent
    noise, the null of T1b): the placebo t test rejects at α; a shift of θ's improvement is found."""
    rng = np.random.default_rng(12)
    p_values = []
    for _ in range(4000):
        x = rng.normal(0, 1.0) + rng.normal(-0.4, 0.9, 1 + B.T1B_PLACEBOS)
        p_values.append(B.placebo_t_test(float(x[0]), x[1:])["p_value"])
    p_values = np.array(p_values)
    assert np.mean(p_values < 0.05) == pytest.approx(0.05, abs=0.01)
    assert np.mean(p_values < 0.5) == pytest.approx(0.5, abs=0.025)
    r = B.placebo_t_test(3.0, np.array([-0.5, 0.1, -0.2, 0.4]))
    se = np.std([-0.5, 0.1, -0.2, 0.4], ddof=1) * np.sqrt(1.25)
    assert r["difference"] == pytest.approx(3.05) and r["p_value"] == pytest.approx(stats.t.sf(3.05 / se, 3))
    assert r["interval"][0] == pytest.approx(3.05 - stats.t.ppf(0.95, 3) * se) and r["p_value"] < 0.05
    assert B.placebo_t_test(0.0, np.zeros(4))["p_value"] == 1.0


def test_t1b_paper_rule_is_conservative_when_theta_only_adds_variance():
    """The paper's CI-above-0 rule never rejects when the model with θ is only noisier."""
    rng = np.random.default_rng(12)
    group = np.repeat(np.arange(100), 5)
    decisions = []
    for i in range(100):
        l0 = rng.exponential(0.7, 500)
        l1 = l0 + np.repeat(rng.normal(0.01, 0.05, 100), 5) + rng.normal(0, 0.05, 500)
        placebo = l0.mean() + rng.normal(0.01, 0.01, 4)
        r = B.nested_rules(group, l0, l1, placebo, 200, i)
        decisions.append(r["interval"][0] > 0)
    assert np.mean(decisions) == 0.0


def test_t1b_rules_on_simulated_agents():
    """The paper rule's numbers are unchanged by the placebo fits; the placebo rule (the default)
    rejects a leak and not a rational agent."""
    design = BeliefDesign(n_contexts=60, n_reps=3, variants="pi0", lie_node="none")
    rational = sim("logit-rum", design=design, seed=5)
    paper = B.t1_nested(rational, n_boot=100, seed=2, rule="paper")
    assert paper["estimate"] == pytest.approx(-0.45459649738983615, abs=1e-12)
    assert (paper["lo"], paper["hi"]) == pytest.approx((-2.8512884173489135, 1.720296089237221), abs=1e-12)
    assert paper["p_value"] == pytest.approx(59 / 101) and not paper["reject"]
    assert paper["rules"]["paper"]["p_value"] == paper["p_value"] and paper["rule"] == "paper"
    placebo = paper["rules"]["placebo"]
    assert placebo["placebos"] == B.T1B_PLACEBOS == len(placebo["placebo_improvements"])
    assert placebo["estimate"] == pytest.approx(paper["estimate"] - np.mean(placebo["placebo_improvements"]))
    assert paper["placebo_estimate"] == pytest.approx(np.mean(placebo["placebo_improvements"]))
    assert placebo["lo"] < placebo["estimate"] < placebo["hi"] and not placebo["reject"]
    leaky = sim("leak", {"leak": 0.4}, design=BeliefDesign(n_contexts=80, n_reps=2, variants="pi0",
                                                           lie_node="none"), seed=7)
    head = B.belief_test("t1_nested")(leaky, n_boot=100, seed=1)
    assert head["reject"] and head["reject_placebo"] and head["reject_paper"] and head["p_value"] < 0.01
    assert head["estimate"] > 30 > 5 > head["placebo_estimate"]
    with pytest.raises(ValueError, match="T1b rule"):
        B.t1_nested(leaky, rule="bonferroni")
    with pytest.raises(ValueError, match="at least 2 placebos"):
        B.t1_nested(leaky, placebos=1)


def test_t3_joint_permutation_is_uniform_under_exchangeable_reports_and_degenerate_without_noise():
    design = BeliefDesign(n_contexts=30, n_reps=2, lie_node="none")
    table = sim("logit-rum", {"report_noise": 0.1}, design=design, n=40, seed=5)
    p = np.array([B.t3(part, n_perm=19, seed=i)["p_value"] for i, (_, part) in enumerate(table.groupby("subject"))])
    assert 0.3 < np.mean(p <= 0.5) < 0.7 and np.mean(p <= 0.1) < 0.25
    exact = B.t3(sim("logit-rum", design=design), n_perm=19)
    assert exact["estimate"] == 0.0 and exact["p_value"] == 1.0 and not exact["reject"]


def test_calibration_table_has_rates_bounds_and_verdicts():
    V = load_study("belief_family")
    CalibrationCell, calibration_study, calibration_verdict = (V.CalibrationCell, V.calibration_study,
                                                               V.calibration_verdict)

    assert calibration_verdict(0.06, "= α") == "yes" and calibration_verdict(0.08, "= α") == "no"
    assert calibration_verdict(0.0, "≤ α") == "yes" and calibration_verdict(0.002, "= 0") == "no"
    frame = calibration_study([CalibrationCell("t1_lr", "logit-rum", 0.0, "= α"),
                               CalibrationCell("t2", "random", None, "= α")], n_sims=8)
    assert list(frame["studies"]) == [8, 8] and (frame["upper95"] >= frame["rate"]).all()
    from scipy import stats

    for row in frame.itertuples():  # one-sided 95 % Clopper-Pearson = upper end of the two-sided 90 % interval
        ci = stats.binomtest(round(row.rate * 8), 8).proportion_ci(confidence_level=0.90, method="exact")
        assert row.upper95 == pytest.approx(ci.high)

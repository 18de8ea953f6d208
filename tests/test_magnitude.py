"""Magnitude estimation (BayesBench): environment, stimuli, agents, fits and metrics."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from study_scripts import load_study
from typer.testing import CliRunner

from cogtestbed.agents.magnitude import AGENTS
from cogtestbed.cli import app
from cogtestbed.environments import magnitude_stimuli as stim
from cogtestbed.environments.magnitude import (
    MagnitudeDesign,
    MagnitudeEnv,
    parse_magnitude,
    system_prompt,
)
from cogtestbed.inference.magnitude import (
    MODELS,
    build_cube,
    kalman_pointwise,
    linear_pointwise,
    magnitude_metrics,
    session_fits,
    static_pointwise,
)
from cogtestbed.inference.magnitude_fits import VARIANTS, factor_evidence
from cogtestbed.simulation import simulate

observer_cell_w_errors = load_study("magnitude_family").observer_cell_w_errors

TINY = MagnitudeDesign(trials_per_session=3, conditions="base,noise-gradual,numerical-biased,context-short,"
                       "order-reversal")


# ----------------------------------------------------------------------------- design and parser
def test_a_design_too_large_for_memory_is_refused_before_allocation(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30: trials_per_session = 10⁹ (89 GiB of stimuli alone) is refused by the estimate."""
    with pytest.raises(ValueError, match="of memory and .* is available: use fewer trials_per_session"):
        MagnitudeDesign(trials_per_session=1_000_000_000)
    err = _cli_error(["simulate", "magnitude", "--agent", "static-bayes", "--design",
                      "trials_per_session=1000000000", "-o", "/nonexistent/x.parquet"], capsys)
    assert "use fewer trials_per_session" in err and len(err.strip().splitlines()) == 1


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """stderr of a command line that must fail with exit status 2 (one line, no traceback)."""
    from cogtestbed.cli import run_cli

    assert run_cli(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err



def test_design_validation_and_blocks() -> None:
    d = MagnitudeDesign()
    assert len(d.blocks) == 3 * 6 * 3 * 3 + 6 * 3  # duration is text only
    assert d.n_trials == len(d.blocks) * 50
    assert MagnitudeDesign(conditions="base, verbal").conditions == ("base", "verbal")
    for bad in ({"task": "weight"}, {"conditions": "base,fancy"}, {"modalities": "image,image"},
                {"task": "duration", "modalities": "image"}, {"numerical_bias": float("nan")},
                {"numerical_bias": float("inf")}, {"blur_constant": float("inf")}):
        with pytest.raises(ValueError):
            MagnitudeDesign(**bad)


@pytest.mark.parametrize(("text", "task", "value", "error"), [
    ("0.42", "line-ratio", 0.42, None),
    ("The ratio is about .3, maybe 0.4", "line-ratio", None, "several numbers"),
    ("42%", "marker-location", 0.42, None),
    ("1.5", "line-ratio", None, "outside the valid range"),
    ("7.25 units", "maze-distance", 7.25, None),
    ("50%", "maze-distance", None, "percentage"),
    ("about twelve seconds", "duration", None, "no number"),
    ("-3", "duration", None, "outside"),
])
def test_parser(text: str, task: str, value: float | None, error: str | None) -> None:
    r = parse_magnitude(text, task)
    if error is None:
        assert r.ok and r.action == pytest.approx(value)
    else:
        assert not r.ok and error in str(r.error)


# The paper's templates, verbatim (Ma et al. 2025, App. A.2.2 and A.3.1; the line breaks of the
# typeset example are spaces).  A reworded prompt fails these tests.
PAPER_BASE = ("You are a line-length ratio estimator. Estimate the ratio of the shorter line to the longer line "
              "as a decimal number between 0 and 1. Do not explain or reason. Only output the final answer.")
PAPER_VERBAL = ("You are a line-length ratio estimator. The given data is noisy and may contain artifacts. You "
                "should behave like a Bayesian observer and take into account prior and likelihood in your "
                "predictions.")
PAPER_NUMERICAL = ("You are a line-length ratio estimator. The given data is noisy and may contain artifacts. For "
                   "{n} previous observations, the values were observed to lie in the range of {lo} to {hi}.")
PAPER_TAIL = (" Estimate the ratio of the shorter line to the longer line as a decimal number between 0 and 1. "
              "Do not explain or reason. Only output the final answer.")


def test_system_prompts_follow_the_paper() -> None:
    assert system_prompt("line-ratio", 0) == PAPER_BASE
    assert system_prompt("line-ratio", 1) == PAPER_VERBAL + PAPER_TAIL
    ten = np.array([0.1, 0.3, 0.2, 0.15, 0.25, 0.12, 0.28, 0.2, 0.2, 0.22])
    assert system_prompt("line-ratio", 2, ten) == PAPER_NUMERICAL.format(n=10, lo="0.1", hi="0.3") + PAPER_TAIL
    biased = system_prompt("line-ratio", 3, np.array([0.12, 0.3]), bias=0.2)
    assert "For 2 previous observations, the values were observed to lie in the range of 0.32 to 0.5." in biased
    assert "For 1 previous observation, the values were observed to lie in the range of 7 to 7." in \
        system_prompt("duration", 2, np.array([7.0]))
    first = system_prompt("line-ratio", 2, np.array([]))  # nothing observed yet: the noise sentence only
    assert first == "You are a line-length ratio estimator. The given data is noisy and may contain " \
        "artifacts." + PAPER_TAIL


def test_rendered_prompts_are_the_papers_templates_filled_with_the_same_values() -> None:
    """The environment's own chat (system turn, then the ASCII stimulus of App. A.2.2) at trials 0,
    3 and 10 of a numerical-steering session equals the paper's templates filled with its stimuli."""
    d = MagnitudeDesign(task="line-ratio", conditions="base,numerical", modalities="text", ranges="short",
                        trials_per_session=12)
    _, seen = _play(d, 12 + 11)
    assert seen[0]["prompt"][0]["content"] == PAPER_BASE
    x = [float(o["x"]) for o in seen[12:]]
    assert seen[12]["prompt"][0]["content"].startswith("You are a line-length ratio estimator. The given data "
                                                       "is noisy and may contain artifacts. Estimate")
    for t in (3, 10, 11):
        prior = x[max(0, t - 10):t]
        lo, hi = (f"{v:.2f}".rstrip("0").rstrip(".") for v in (min(prior), max(prior)))
        assert seen[12 + t]["prompt"][0]["content"] == PAPER_NUMERICAL.format(
            n=len(prior), lo=lo, hi=hi) + PAPER_TAIL
        assert seen[12 + t]["prompt"][-1]["content"] == stim.ratio_text(x[t], seen[12 + t]["render_seed"])
    assert stim.ratio_text(1.0, 0).split("\n")[0] == "|" + "-" * 50 + "|"  # the paper's |-----| lines


def test_experiments_declare_the_decoding_their_papers_state() -> None:
    """`run` decodes as the paper did unless told otherwise: BayesBench 0.7 (App. A.2.1), CogBench
    and the collider thesis 0; belief coherence and revealed belief state none (greedy default)."""
    from cogtestbed.experiments.spec import PROJECT_TEMPERATURE, Decoding, resolve_temperature
    from cogtestbed.registry import get_experiment

    temps = {name: (get_experiment(name).decoding or Decoding(-0.0, "none")).temperature
             for name in ("magnitude", "collider", "two-step", "bart", "belief-coherence")}
    assert temps["magnitude"] == 0.7 and temps["collider"] == temps["two-step"] == temps["bart"] == 0.0
    assert get_experiment("belief-coherence").decoding is None and get_experiment("revealed-belief").decoding is None
    magnitude = get_experiment("magnitude").decoding
    assert resolve_temperature(magnitude, None) == (0.7, "the experiment's paper: " + magnitude.source)
    assert resolve_temperature(magnitude, 0.2)[0] == 0.2
    assert resolve_temperature(None, None) == (PROJECT_TEMPERATURE, resolve_temperature(None, None)[1])
    assert "states none" in resolve_temperature(None, None)[1]
    with pytest.raises(ValueError, match="finite"):
        Decoding(float("nan"), "x")


# ----------------------------------------------------------------------------- environment
def _play(design: MagnitudeDesign, steps: int, seed: int = 0) -> tuple[MagnitudeEnv, list[dict]]:
    env = MagnitudeEnv(design)
    sessions = MagnitudeEnv.sample_sessions(design, 1, np.random.default_rng(seed))
    obs, _ = env.reset(options={"session": sessions})
    seen = [obs]
    for _ in range(steps):
        obs, *_ = env.step(round(float(obs["x"]), 3))
        seen.append(obs)
    return env, seen


def test_history_is_rendered_as_chat_turns_and_resets_per_session() -> None:
    d = MagnitudeDesign(task="line-ratio", conditions="base,context-short", modalities="text", ranges="short",
                        trials_per_session=6)
    _, seen = _play(d, 11)
    msgs = seen[5]["prompt"]  # trial 5 of the base session: the last 5 trials (context 10)
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * 5 + ["user"]
    assert msgs[2]["content"] == f"{round(float(seen[0]['x']), 3):.4g}"
    assert len(seen[6]["prompt"]) == 2  # a new session starts with no history
    assert len(seen[11]["prompt"]) == 1 + 2 * 3 + 1  # context-short keeps 3 trials
    assert msgs[-1]["content"] == stim.ratio_text(float(seen[5]["x"]), seen[5]["render_seed"])


def test_images_are_deterministic_pngs_blurred_by_the_noise_ablation() -> None:
    d = MagnitudeDesign(task="marker-location", conditions="base,noise-constant", modalities="image",
                        ranges="medium", trials_per_session=2)
    _, a = _play(d, 3)
    _, b = _play(d, 3)
    assert a[0]["images"][0][:8] == b"\x89PNG\r\n\x1a\n"
    assert a[0]["images"] == b[0]["images"]
    assert a[0]["prompt"][-1]["content"] == "" and len(a[0]["prompt"][-1]["images"]) == 1
    assert a[2]["blur"] == pytest.approx(2.0) and a[2]["x"] == a[0]["x"]  # same stimulus, blurred
    assert a[2]["images"] != a[0]["images"]
    assert a[1]["prompt"][1]["images"] == a[0]["images"]  # history turns carry their images


def test_sessions_share_stimuli_across_modalities_and_reversal_reverses() -> None:
    d = MagnitudeDesign(task="line-ratio", conditions="base,order-reversal", ranges="short", trials_per_session=5)
    t = simulate("magnitude", "static-bayes", 2, 3, design=d)
    x = t.pivot_table(index=["subject", "trial"], columns=["condition", "modality"], values="x", observed=True)
    assert np.allclose(x[("base", "text")], x[("base", "image")])
    rev = t[(t.condition == "order-reversal") & (t.modality == "text") & (t.subject == 0)].x.to_numpy()
    base = t[(t.condition == "base") & (t.modality == "text") & (t.subject == 0)].x.to_numpy()
    assert np.array_equal(rev, base[::-1])


# ----------------------------------------------------------------------------- stimuli
def _segments_cross(p: np.ndarray) -> bool:
    def ccw(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
        return float((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))

    for i in range(len(p) - 1):
        for j in range(i + 2, len(p) - 1):
            a, b, c, d = p[i], p[i + 1], p[j], p[j + 1]
            if ccw(a, b, c) * ccw(a, b, d) < 0 and ccw(c, d, a) * ccw(c, d, b) < 0:
                return True
    return False


def test_maze_paths_never_cross_and_x_is_their_distance() -> None:
    d = MagnitudeDesign(task="maze-distance", conditions="base", modalities="text", trials_per_session=40)
    sessions = MagnitudeEnv.sample_sessions(d, 2, np.random.default_rng(4))
    for x, seed in zip(sessions.x.ravel(), sessions.render_seed.ravel(), strict=True):
        path = stim.maze_path(x, int(seed))
        assert not _segments_cross(path)
        assert stim.maze_distance(stim.maze_path(x, int(seed))) == pytest.approx(x, abs=1e-12)
    assert sessions.x.min() >= 2.0 - 0.02 and sessions.x.max() <= 10.0 + 0.02


def test_dialogue_extract_has_the_drawn_duration() -> None:
    words = stim.dialogue_extract(7.3, 11)
    assert words[0].start == 0.0 and words[-1].end == pytest.approx(7.3)
    rate = len(words) / 7.3
    assert 1.0 < rate < 4.0  # close to the speaking-rate model's 2.5 words/s, less turn pauses
    assert stim.dialogue_text(words).startswith(f"{words[0].speaker}: {words[0].text}")


def _ami_file(path, speaker: str, words: list[tuple[str, float, float]]) -> None:  # type: ignore[no-untyped-def]
    body = "".join(f'<w nite:id="ES2002a.{speaker}.words{k}" starttime="{s}" endtime="{e}">{w}</w>'
                   for k, (w, s, e) in enumerate(words))
    path.joinpath(f"ES2002a.{speaker}.words.xml").write_text(
        '<?xml version="1.0" encoding="ISO-8859-1"?><nite:root nite:id="ES2002a.A.words" '
        f'xmlns:nite="http://nite.sourceforge.net/">{body}<w nite:id="p" punc="true">.</w></nite:root>')


def test_ami_importer_reads_word_timestamps_and_cuts_extracts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = [(f"a{k}", 1.0 * k, 1.0 * k + 0.4) for k in range(40)]
    b = [(f"b{k}", 1.0 * k + 0.5, 1.0 * k + 0.9) for k in range(40)]
    _ami_file(tmp_path, "A", a)
    _ami_file(tmp_path, "B", b)
    words = stim.read_ami_words(tmp_path / "ES2002a.A.words.xml")
    assert [w.text for w in words[:2]] == ["a0", "a1"] and words[1].start == 1.0 and len(words) == 40
    corpus = stim.ami_corpus(str(tmp_path))
    assert len(corpus) == 80 and corpus[1].speaker == "B"
    ex = stim.ami_extract(corpus, 6.0, 3)
    assert ex[0].start == 0.0 and abs(stim.extract_duration(ex) - 6.0) <= 0.5
    d = MagnitudeDesign(task="duration", conditions="base", ranges="short", trials_per_session=4,
                        duration_corpus=str(tmp_path))
    _, seen = _play(d, 3)
    assert seen[0]["prompt"][-1]["content"].split("\n")[0][:2] in ("A:", "B:")
    (tmp_path / "bad.words.xml").write_text("<x/>")
    with pytest.raises(ValueError, match="not an AMI word file"):
        stim.read_ami_words(tmp_path / "bad.words.xml")


# ----------------------------------------------------------------------------- agents
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_batch_equals_step(agent: str) -> None:
    a = simulate("magnitude", agent, 2, 5, design=TINY.model_copy(update={"task": "marker-location"}))
    b = simulate("magnitude", agent, 2, 5, design=TINY.model_copy(update={"task": "marker-location"}),
                 method="step")
    pd.testing.assert_frame_equal(a, b)


def test_same_seed_same_table_and_bad_params_fail() -> None:
    d = MagnitudeDesign(task="duration", trials_per_session=5)
    a = simulate("magnitude", "kalman", 3, 9, design=d)
    assert a.equals(simulate("magnitude", "kalman", 3, 9, design=d))
    with pytest.raises(ValueError, match="w_prior"):
        simulate("magnitude", "prior-dominant", 1, 0, {"w_prior": 0.5}, design=d)


def test_observer_cell_w_prior_is_unbiased_although_its_percept_noise_is_shared() -> None:
    """The cell-level w_prior (shared-slope least squares) of the observer centres on its analytic
    weight: the frozen percept noise, reused by every condition that shows a stimulus, makes one
    subject's cells err *together* (one subject can read a few hundredths high in every cell),
    but it is independent of the stimulus, so it adds no bias."""
    err, _ = observer_cell_w_errors(80, 12, ("base", "verbal", "noise-constant", "context-long"))
    assert np.all(np.abs(err.mean(0)) < 0.01), err.mean(0)  # a bias of 0.04 is > 10 standard errors
    assert 0.02 < err.std(0).min() < err.std(0).max() < 0.05
    assert np.corrcoef(err.T)[np.triu_indices(err.shape[1], 1)].min() > 0.3  # shared across conditions


# ----------------------------------------------------------------------------- fits
@pytest.mark.parametrize(("kernel", "theta"), [(static_pointwise, [0.3, 0.6, 0.2]),
                                               (linear_pointwise, [0.8, 0.1, 0.2])])
def test_pointwise_gradients(kernel, theta) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    u, v, lw = rng.random(30), rng.random(30), np.full(30, np.log(0.4))
    th = np.array([theta])
    subj = np.zeros(30, dtype=np.int64)
    ll, g = kernel(th, subj, v, u, lw)
    for k in range(3):
        e = np.zeros_like(th)
        e[0, k] = 1e-6
        num = (kernel(th + e, subj, v, u, lw)[0] - kernel(th - e, subj, v, u, lw)[0]) / 2e-6
        assert np.allclose(num, g[:, k], atol=1e-6)


def test_kalman_gradient_and_recovery() -> None:
    d = MagnitudeDesign(task="line-ratio", conditions="base", modalities="text", trials_per_session=100)
    t = simulate("magnitude", "kalman", 1, 2, {"q_over_r": 0.3, "sigma_dec": 0.05}, design=d)
    m = MODELS["kalman"]
    data = next(iter(m.subject_data(t).values()))
    th = np.array([[0.3, 0.05]])
    subj = np.zeros(data.u.size, dtype=np.int64)
    args = (subj, data.v, data.u, data.valid, data.log_w, data.first)
    ll, g = kalman_pointwise(th, *args)
    e = np.array([[1e-7, 0.0]])
    num = (kalman_pointwise(th + e, *args)[0] - kalman_pointwise(th - e, *args)[0]) / 2e-7
    assert np.allclose(num, g[:, 0], atol=1e-5)
    fit = m.fit_mle(t).iloc[0]
    assert fit["q_over_r"] == pytest.approx(0.3, rel=0.25) and fit["sigma_dec"] == pytest.approx(0.05, rel=0.15)


def test_static_mle_matches_numerical_optimum() -> None:
    d = MagnitudeDesign(task="maze-distance", conditions="base", modalities="image", trials_per_session=60)
    t = simulate("magnitude", "static-bayes", 3, 1, {"w_prior": 0.35, "mu_p": 0.4, "sigma_dec": 0.1}, design=d)
    m = MODELS["static-bayes"]
    fits = m.fit_mle(t)
    assert np.allclose(fits["w_prior"], 0.35, atol=0.05)
    data = m.subject_data(t)[0]
    theta = fits.loc[0, ["w_prior", "mu_p", "sigma_dec"]].to_numpy(float)
    nll, grad = m.nll_grad(theta, data)
    assert np.abs(grad).max() < 1e-4 * len(data.u)  # a stationary point
    for delta in np.eye(3) * 1e-3:
        assert m.nll(theta + delta, data) >= nll and m.nll(theta - delta, data) >= nll


@pytest.mark.parametrize(("agent", "params", "factor"), [
    ("kalman", {"q_over_r": 0.2, "sigma_dec": 0.05}, "SEQUENTIAL"),
    ("static-bayes-log", {"w_prior": 0.3, "sigma_dec": 0.1}, "WEBER"),
])
def test_factor_evidence_finds_the_generating_factor(agent: str, params: dict, factor: str) -> None:
    d = MagnitudeDesign(task="marker-location", conditions="base", modalities="text", trials_per_session=80)
    t = simulate("magnitude", agent, 1, 4, params, design=d)
    fits = session_fits(build_cube(t))
    aic = fits.groupby("variant")["aic"].sum().reindex(list(VARIANTS)).to_numpy()
    assert factor_evidence(aic)[factor] > 0.95


def test_factor_evidence_procedure_by_hand() -> None:
    aic = np.array([10.0, 12.0, 10.0, 12.0, 14.0, 16.0, 4.0, np.inf, 8.0, np.inf])
    ev = factor_evidence(aic)
    lik = np.exp(-0.5 * (aic - 4.0))
    # BAYESIAN cells: WEBER False (best Bayes = kalman, best non-Bayes = linear) and WEBER True
    true = (lik[6] + lik[3]) / 2
    false = (lik[0] + lik[1]) / 2
    assert ev["BAYESIAN"] == pytest.approx(true / (true + false))


# ----------------------------------------------------------------------------- metrics
def _metrics(agent: str, params: dict | None = None, seed: int = 0, **kw) -> dict:  # type: ignore[no-untyped-def]
    d = MagnitudeDesign(task="all", trials_per_session=40, **kw)
    return magnitude_metrics(simulate("magnitude", agent, 1, seed, params, design=d), bootstrap=5)["metrics"]


def test_bcs_signs_emerge_from_the_observer_and_flip_for_the_inconsistent_agent() -> None:
    m = _metrics("observer", {"sigma_dec": 0.02})
    assert m["bcs"] == 15 and m["bcs_per_task"] == {"marker-location": 5, "line-ratio": 5, "maze-distance": 5}
    assert m["bayesbench"]["C_sum"] == 1.0 and m["bayesbench"]["C_mean"] == pytest.approx((5 + 15) / 30)
    bad = _metrics("ablation-inconsistent", {"shift": 0.3, "sigma_dec": 0.02})
    assert bad["bcs"] == -15
    dominant = _metrics("prior-dominant", {"w_prior": 0.97, "sigma_dec": 0.02})
    assert dominant["bcs"] == 0


def test_cue_combination_recovers_alpha_and_optimal_weights() -> None:
    kw = {"conditions": ("base",)}
    m = _metrics("combiner-alpha", {"alpha": 0.8, "sigma_text": 0.1, "sigma_image": 0.1, "sigma_dec": 0.005}, **kw)
    assert m["cue_combination"]["line-ratio"]["alpha"] == pytest.approx(0.8, abs=0.05)
    opt = _metrics("combiner-optimal", {"sigma_text": 0.05, "sigma_image": 0.15, "sigma_dec": 0.005}, **kw)
    for task in ("marker-location", "line-ratio", "maze-distance"):
        c = opt["cue_combination"][task]
        assert c["w_text_oracle"] == pytest.approx(0.9, abs=0.08)
        assert c["fit_rmse"]["oracle"] < c["fit_rmse"]["equal"]
        assert opt["rre"][task]["oracle"] == pytest.approx(1.0, abs=0.1)
    under = _metrics("combiner-underweight", {"sigma_text": 0.05, "sigma_image": 0.15, "underweight": 0.3,
                                              "sigma_dec": 0.005}, **kw)
    assert all(v["oracle"] < 0.8 for v in under["rre"].values())  # worse than optimal fusion


def test_nrmse_of_a_perfect_and_a_constant_responder() -> None:
    d = MagnitudeDesign(task="duration", conditions="base", trials_per_session=30)
    t = simulate("magnitude", "static-bayes", 2, 0, {"w_prior": np.array([0.0, 1.0]), "mu_p": 0.5,
                                                     "sigma_dec": 1e-9}, design=d)
    per = magnitude_metrics(t, bootstrap=0)["per_subject"]
    assert per[0]["nrmse"]["duration"]["text"] == pytest.approx(0.0, abs=1e-6)
    assert per[1]["nrmse"]["duration"]["text"] == pytest.approx(1.0, abs=1e-6)
    assert per[1]["bayesbench"]["A"] == pytest.approx(0.5)


def test_cli_simulate_and_metrics(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "T.parquet"
    runner = CliRunner()
    res = runner.invoke(app, ["simulate", "magnitude", "--agent", "static-bayes", "--param", "w_prior=0.4",
                              "--design", "task=line-ratio", "--design", "trials_per_session=20",
                              "--subjects", "3", "--seed", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["metrics", "magnitude", str(out), "--json", "--bootstrap", "4"])
    assert res.exit_code == 0, res.output
    m = json.loads(res.stdout)["metrics"]
    assert set(m) >= {"nrmse", "bcs", "bcs_per_task", "w_prior", "factor_evidence", "rre", "bayesbench"}
    assert m["w_prior"]["line-ratio"]["base"]["image"] == pytest.approx(0.4, abs=0.05)
    assert set(m["bootstrap"]["bcs"]) == {"mean", "lo", "hi"}


# ----------------------------------------------------------------------------- hierarchical fits
def _hierarchy_trials(agent: str, params: dict[str, float], seed: int, **design: object) -> pd.DataFrame:
    d = MagnitudeDesign(**{"task": "line-ratio", "conditions": "base,verbal,noise-constant", "modalities": "image",
                           "trials_per_session": 30, **design})  # type: ignore[arg-type]
    return simulate("magnitude", agent, 1, seed, params, design=d)


def static_cell_nll(data: Any, w: np.ndarray, mean_answer: np.ndarray, sigma: np.ndarray) -> float:
    """Σ over cells of the static-Bayes NLL (:class:`StaticBayesModel`'s kernel) at the cells'
    (w_prior, μ_p, σ) implied by (w, mean answer, σ): the likelihood the hierarchy must share."""
    from cogtestbed.inference.magnitude_fits import static_pointwise
    from cogtestbed.inference.magnitude_observers import static_bayes_mu_p

    mu_p = static_bayes_mu_p.py_func(mean_answer, data.u_bar, w)
    theta = np.ascontiguousarray(np.column_stack([w, mu_p, sigma]))
    ll, _ = static_pointwise(theta, data.cell, data.v, data.u, np.zeros_like(data.u))
    return float(-ll.sum()) if math.isfinite(float(ll.sum())) else math.inf


def test_w_prior_hierarchy_logp_is_the_static_bayes_likelihood() -> None:
    from pymc_checks import observed_logp_at_random_point

    from cogtestbed.inference.magnitude_hierarchy import hierarchy_data, w_prior_hierarchy_model

    t = _hierarchy_trials("static-bayes", {"w_prior": 0.4, "sigma_dec": 0.1}, 3, task="all",
                          modalities="text,image", trials_per_session=6)
    data = hierarchy_data(t)
    assert data.tasks == ["marker-location", "line-ratio", "maze-distance", "duration"]
    assert data.conditions == ["base", "verbal", "noise-constant"]
    model = w_prior_hierarchy_model(data)
    free = {v.name for v in model.free_RVs}
    assert {"level", "task_effect", "modality_effect", "z_cell", "mean_answer", "log_sigma"} <= free
    assert "intercept" not in free and "sigma_task" not in free
    logp, v = observed_logp_at_random_point(model, "v", ["w_prior", "mean_answer", "log_sigma"])
    nll = static_cell_nll(data, v["w_prior"], v["mean_answer"], np.exp(v["log_sigma"]))
    assert logp == pytest.approx(-nll, rel=1e-9)
    with pytest.raises(ValueError, match="base condition and at least one ablation"):
        hierarchy_data(t[t["condition"] == "base"])


def test_static_bayes_hierarchy_samples_w_prior_centred_with_the_same_likelihood() -> None:
    from pymc_checks import observed_logp_at_random_point

    model = MODELS["static-bayes"]
    t = simulate("magnitude", "static-bayes", 4, 3, {"w_prior": np.array([0.2, 0.4, 0.6, 0.8]), "sigma_dec": 0.1},
                 design=MagnitudeDesign(task="line-ratio", conditions="base", modalities="text", trials_per_session=8))
    pm_model = model.pymc_model(t)
    free = {v.name for v in pm_model.free_RVs}
    assert "w_prior_u" in free and "w_prior_z" not in free and "mu_p_z" in free
    logp, v = observed_logp_at_random_point(pm_model, model.observed_name, list(model.parameters.names))
    nll = sum(model.nll(np.array([v[k][i] for k in model.parameters.names]), d)
              for i, d in enumerate(model.subject_data(t).values()))
    assert logp == pytest.approx(-nll, rel=1e-9)


def test_nutpie_cache_tells_models_with_different_constant_data_apart() -> None:
    import pymc as pm

    from cogtestbed.inference.hierarchical_sampling import _constant_digest

    def bare(y: np.ndarray) -> pm.Model:
        with pm.Model() as m:
            pm.Normal("y", pm.Normal("mu"), 1.0, observed=y)
        return m

    a, b = np.arange(5.0), np.arange(5.0) + 1
    assert _constant_digest(bare(a)) == _constant_digest(bare(a.copy()))
    assert _constant_digest(bare(a)) != _constant_digest(bare(b))


@pytest.mark.slow
def test_hierarchies_converge_on_a_small_design() -> None:
    """Both hierarchical fits pass every check (R-hat <= 1.01, bulk and tail ESS >= 400, no
    divergences) at the documented 4 chains x 1000 draws and find the true direction of the shift."""
    from cogtestbed.inference.hierarchical import fit_hierarchical
    from cogtestbed.inference.magnitude import w_prior_hierarchy

    t = _hierarchy_trials("ablation-inconsistent", {"w_prior": 0.4, "shift": 0.1, "sigma_dec": 0.1}, 2)
    res = w_prior_hierarchy(t, draws=1000, tune=1000, chains=4, seed=1)
    assert res["diagnostics"]["ok"], res["diagnostics"]["report"]
    assert res["p_delta_w_positive"]["verbal"] < 0.05 and res["p_delta_w_positive"]["noise-constant"] < 0.05
    w = np.array([0.15, 0.3, 0.45, 0.6, 0.75, 0.35, 0.5, 0.25])
    design = MagnitudeDesign(task="line-ratio", conditions="base", modalities="text", trials_per_session=30)
    tt = simulate("magnitude", "static-bayes", 8, 2, {"w_prior": w, "sigma_dec": 0.1}, design=design)
    fit = fit_hierarchical(MODELS["static-bayes"], tt, draws=1000, tune=1000, chains=4, seed=1, warn=False,
                           log_likelihood=False)
    assert fit.diagnostics.ok, fit.diagnostics.report()
    est = fit.idata.posterior["w_prior"].mean(("chain", "draw")).to_numpy()
    assert np.corrcoef(w, est)[0, 1] > 0.95


@pytest.mark.slow
def test_w_prior_hierarchy_finds_the_bayes_consistent_shifts() -> None:
    from cogtestbed.inference.magnitude import w_prior_hierarchy

    d = MagnitudeDesign(task="line-ratio", conditions="base,noise-constant,context-long", modalities="image",
                        trials_per_session=30)
    t = simulate("magnitude", "observer", 1, 2, {"sigma_dec": 0.03, "blur_gain": 0.1, "context_gain": 1.0},
                 design=d)
    res = w_prior_hierarchy(t, draws=1000, tune=1000, chains=4, seed=1)
    assert res["p_delta_w_positive"]["noise-constant"] > 0.95
    assert res["p_delta_w_positive"]["context-long"] > 0.95
    assert res["diagnostics"]["ok"], res["diagnostics"]["report"]


def test_cli_metrics_fits_the_w_prior_hierarchy_on_request(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``--hierarchy-draws N`` adds each subject's w_prior hierarchy (P(Δw_prior > 0), R-hat, ESS,
    divergences, verdict): the same figures as calling :func:`w_prior_hierarchy` with the seed
    :func:`hierarchy_seeds` gives the subject; bad values are one clear error."""
    from cogtestbed.inference.magnitude import hierarchy_seeds, w_prior_hierarchy

    t = _hierarchy_trials("ablation-inconsistent", {"w_prior": 0.4, "shift": 0.1, "sigma_dec": 0.1}, 2,
                          conditions="base,verbal", trials_per_session=12)
    out = tmp_path / "T.parquet"
    t.to_parquet(out)
    runner = CliRunner()
    res = runner.invoke(app, ["metrics", "magnitude", str(out), "--json", "--bootstrap", "0", "--seed", "5",
                              "--hierarchy-draws", "150", "--hierarchy-chains", "2"])
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout)
    got = body["per_subject"][0]["hierarchy"]
    diag = got["diagnostics"]
    assert {"max_rhat", "min_ess_bulk", "min_ess_tail", "divergences", "ok", "verdict"} <= set(diag)
    assert diag["verdict"].startswith("converged" if diag["ok"] else "NOT converged")
    (seed,) = hierarchy_seeds(5, 1)
    want = w_prior_hierarchy(t, draws=150, tune=150, chains=2, seed=seed)
    assert got["seed"] == seed
    assert got["p_delta_w_positive"] == pytest.approx(want["p_delta_w_positive"], abs=1e-12)
    assert got["p_delta_w_positive"]["verbal"] < 0.5  # the inconsistent agent lowers w_prior under ablation
    keys = ("max_rhat", "min_ess_bulk", "min_ess_tail", "divergences", "ok", "verdict")
    assert {k: diag[k] for k in keys} == {k: want["diagnostics"][k] for k in keys}
    assert body["metrics"]["hierarchy"] == {"p_delta_w_positive": got["p_delta_w_positive"],
                                            "converged": diag["ok"]}
    assert ("w_prior hierarchy" in " ".join(body["flags"])) == (not diag["ok"])
    res = runner.invoke(app, ["metrics", "magnitude", str(out), "--hierarchy-draws", "10", "--hierarchy-chains", "1"])
    assert isinstance(res.exception, ValueError) and "hierarchy_chains must be >= 2" in str(res.exception)

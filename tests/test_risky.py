"""risky-choice (Spektor et al. 2024, Psych-201 transcript): values specific to the experiment; the
generic checks come from the conformance suite."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.conformance.suite import prior_draws
from cogtestbed.environments.risky import (
    SPEKTOR_EXP2_CONTEXTS,
    RiskyChoiceEnv,
    RiskyDesign,
    draw_sessions,
    parse_lottery,
)
from cogtestbed.inference.risky import (
    MODELS,
    VALUE_ANCHOR,
    choice_shares,
    log_sigmoid,
    magnitude_ids,
    median_interval,
    outcome_value,
    pt_nll_rows_kernel,
    pt_pointwise_kernel,
    risky_metrics,
    value_difference,
)
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

SPEKTOR = Path(__file__).resolve().parents[2] / "shared/data/psych201/spektor2024lossaversion/prompts.jsonl.zip"
NEEDS_SPEKTOR = pytest.mark.skipif(not SPEKTOR.is_file(), reason="the Psych-201 file is not in ../shared/data")


def test_prompt_is_the_transcripts_text_up_to_the_choice_cue() -> None:
    env = RiskyChoiceEnv()
    obs, _ = env.reset(seed=3)
    a, b = env.letters()
    x = [int(v) for v in obs["outcomes"]]
    lines = obs["prompt"].split("\n")
    assert lines[0] == "Dear participant,"
    assert lines[8] == f"The lotteries' names are {a} and {b}."
    assert lines[9:11] == ["", "Session 1:"]
    assert lines[11] == (f"The outcomes of lottery {a} are {x[0]} with 50% chance and {x[1]} with 50% chance. "
                         f"The outcomes of lottery {b} are {x[2]} with 50% chance and {x[3]} with 50% chance. "
                         "You choose <<")
    assert len(lines) == 12


@pytest.mark.parametrize(("text", "action"), [("Q>>.", 1), ("S>>", 0), ("<<Q>>", 1), (" Q", 1), ("lottery S", 0),
                                              ("I choose lottery Q.", 1), ("q>>", 1)])
def test_parser_reads_the_transcripts_answers(text: str, action: int) -> None:
    assert parse_lottery(text, ("S", "Q")).action == action


@pytest.mark.parametrize("text", ["", "banana", "999999", "X>>", "lottery S or lottery Q", "S and Q", "\u2603"])
def test_parser_never_guesses(text: str) -> None:
    res = parse_lottery(text, ("S", "Q"))
    assert res.action is None and res.error


def test_every_session_shows_its_contexts_pairs_once_per_repetition() -> None:
    design = RiskyDesign(repetitions=2)
    s = draw_sessions(design, 6, np.random.default_rng(0))
    assert s.shown.shape == (6, 196, 4)
    for i in range(6):
        assert sorted(set(s.context[i])) == [0, 1]  # both contexts, one per session
        for sess in (0, 1):
            rows = s.session[i] == sess
            ctx = int(s.context[i, rows][0])
            shown = {tuple(sorted([tuple(sorted(r[:2])), tuple(sorted(r[2:]))])) for r in s.shown[i, rows]}
            pairs = {tuple(sorted([tuple(sorted(p[:2])), tuple(sorted(p[2:]))])) for p in SPEKTOR_EXP2_CONTEXTS[ctx]}
            assert shown == pairs and rows.sum() == 98
    # counterbalanced: both orders occur
    assert len({int(s.context[i, 0]) for i in range(6)}) == 2


def test_value_function_is_anchored_and_loss_averse() -> None:
    for alpha in (0.3, 0.8, 1.5):
        assert outcome_value(VALUE_ANCHOR, 2.0, alpha)[0] == pytest.approx(VALUE_ANCHOR)
        assert outcome_value(-VALUE_ANCHOR, 2.0, alpha)[0] == pytest.approx(-2.0 * VALUE_ANCHOR)
    assert outcome_value(10.0, 1.0, 1.0)[0] == pytest.approx(10.0)  # α = 1: u(x) = x
    assert outcome_value(0.0, 3.0, 0.5) == (0.0, 0.0, 0.0)


def test_expected_value_model_is_prospect_theory_at_lambda_alpha_one() -> None:
    table = simulate(get_experiment("risky-choice"), "prospect-theory", 2, 5)
    pt, ev = MODELS["prospect-theory"], MODELS["expected-value"]
    data = next(iter(pt.subject_data(table).values()))
    assert ev.nll(np.array([1.3]), data) == pytest.approx(pt.nll(np.array([1.0, 1.0, 1.3]), data))


@pytest.mark.parametrize("name", ["prospect-theory", "expected-value"])
def test_grid_nll_equals_the_pointwise_kernels(name: str) -> None:
    """The fast start-grid NLL (value differences shared by rows with one (λ, α)) is the generic
    path's sum of the pointwise kernel, on the start grid and on shuffled rows, invalid answers left out."""
    from cogtestbed.inference.base import CognitiveModel

    model = MODELS[name]
    table = simulate(get_experiment("risky-choice"), name, 3, 7)
    table.loc[table.index[::5], "valid"] = False
    rng = np.random.default_rng(2)
    for data in model.subject_data(table).values():
        grid = model.start_grid()
        rows = np.concatenate([grid, grid[rng.permutation(len(grid))[:50]]])
        fast, generic = model.nll_many(rows, data), CognitiveModel.nll_many(model, rows, data)
        np.testing.assert_allclose(fast, generic, rtol=1e-12)
        assert fast.shape == (len(rows),) and np.all(fast > 0)


def test_magnitude_table_kernel_is_the_value_function_with_its_gradient() -> None:
    """The pointwise kernel (each subject's value of a distinct magnitude computed once) gives
    log σ(±θ·(V₁ − V₂)) of the per-outcome value function, 0 outcomes included, subjects' tables kept
    apart, and its gradient in (λ, α, θ) is the finite difference of that log-likelihood."""
    rng = np.random.default_rng(4)
    n = 60
    outcomes = rng.choice([-64.0, -20.0, -3.0, 0.0, 2.0, 20.0, 32.0, 7.5], size=(n, 4))
    choice = rng.integers(0, 2, n)
    subject = np.repeat([0, 1, 2], n // 3)
    log_ratio, ids = np.empty((n, 4)), np.empty((n, 4), dtype=np.int64)
    for s in range(3):  # per-subject tables, as risky_data builds them
        rows = subject == s
        log_ratio[rows], ids[rows] = magnitude_ids(outcomes[rows])
    theta = np.array([[2.5, 0.6, 0.4], [0.3, 1.4, 1.1], [1.0, 1.0, 0.05]])

    def reference(th: np.ndarray) -> np.ndarray:
        out = np.empty(n)
        for t in range(n):
            lam, alpha, sens = th[subject[t]]
            d = value_difference(lam, alpha, outcomes[t])[0]
            out[t] = -np.logaddexp(0.0, -(1 if choice[t] == 0 else -1) * sens * d)
        return out

    ll, grad = pt_pointwise_kernel(theta, subject, choice, outcomes, log_ratio, ids)
    np.testing.assert_allclose(ll, reference(theta), rtol=1e-12, atol=1e-13)
    h = 1e-6
    for c in range(3):
        up, dn = theta.copy(), theta.copy()
        up[:, c] += h
        dn[:, c] -= h
        np.testing.assert_allclose(grad[:, c], (reference(up) - reference(dn)) / (2 * h), rtol=1e-5, atol=1e-7)


def test_start_grid_kernel_is_bit_for_bit_the_value_function() -> None:
    """The start grid's row kernel (each magnitude's value computed once per α) gives, bit for bit,
    −Σ log σ(±θ·(V₁ − V₂)) summed in trial order from :func:`value_difference` at every row of the
    model's own 9 × 9 × 9 grid, 0 outcomes included: the grid's NLL, and so every fit's starts, are
    those of the per-outcome value function."""
    rng = np.random.default_rng(5)
    n = 40
    outcomes = rng.choice([-64.0, -20.0, -3.0, 0.0, 2.0, 20.0, 32.0, 7.5], size=(n, 4))
    choice = rng.integers(0, 2, n)
    _, ids = magnitude_ids(outcomes)
    model = MODELS["prospect-theory"]
    grid = model.grid_columns(model.start_grid())[::7]  # every 7th row: runs of (λ, α) and changes of α kept
    got = pt_nll_rows_kernel(grid, choice, outcomes, ids)
    for r, (lam, alpha, sens) in enumerate(grid):
        total = 0.0
        for t in range(n):
            d = value_difference(lam, alpha, outcomes[t])[0]
            total += log_sigmoid(sens * (d if choice[t] == 0 else -d))
        assert got[r] == -total


def test_a_groups_shared_grid_is_each_subjects_own() -> None:
    """40 deciders of one design share their lottery pairs: the group's start-grid NLL computed at once
    (each distinct pair's terms once) are, bit for bit, each subject's own (:meth:`nll_many`), and so are
    the fits (one subject fitted alone against the group's fit)."""
    model = MODELS["prospect-theory"]
    true = prior_draws(model.parameters, 40, np.random.default_rng(2))
    table = simulate(get_experiment("risky-choice"), "prospect-theory", 40, 2, params=true)
    data = list(model.subject_data(table).values())
    shared = model.grid_nlls(data)
    assert shared is not None
    for d, nll in zip(data, shared, strict=True):
        np.testing.assert_array_equal(nll, model.nll_many(model.start_grid(), d))
    alone = model.fit_mle(table[table["subject"] == table["subject"].iloc[0]])
    together = model.fit_mle(table).iloc[:1]
    np.testing.assert_array_equal(alone[["lambda", "alpha", "theta", "nll"]].to_numpy(),
                                  together[["lambda", "alpha", "theta", "nll"]].to_numpy())


def test_fits_are_the_recorded_ones() -> None:
    """Per-subject MLE of six simulated deciders (98 trials) equal those the fit gave before its start
    grid's kernel computed each magnitude's value once per α (recorded from that code, 29 Nov 2026):
    the speed-up changed no estimate."""
    model = MODELS["prospect-theory"]
    true = prior_draws(model.parameters, 6, np.random.default_rng(11))
    table = simulate(get_experiment("risky-choice"), "prospect-theory", 6, 11, params=true)
    pt = model.fit_mle(table)[["lambda", "alpha", "theta", "nll"]].to_numpy()
    np.testing.assert_allclose(pt, [
        [1.1659025023878484, 0.9024438672342703, 2.778060809798638, 38.84449729309544],
        [3.769089017096118, 0.6510405575420586, 0.7411407186149553, 13.743928886600083],
        [2.0338981213015535, 1.0460323699473981, 1.7142389595002443, 4.649971601666648],
        [0.9541034331676991, 0.7697304871252967, 2.646516033165923, 48.413112021597335],
        [1.0048340102962203, 1.0287043990004945, 20.0, 40.59572984437669],
        [0.998560062920989, 0.9157641557976152, 2.307153306030302, 59.32756797483636]], rtol=1e-12)
    ev = MODELS["expected-value"].fit_mle(table)[["theta", "nll"]].to_numpy()
    np.testing.assert_allclose(ev, [
        [1.6267039348870809, 63.50830628023286], [0.6204890451462182, 66.50476226570508],
        [1.1037167293362369, 64.83904569573389], [1.1037167293362349, 64.83904569573389],
        [18.810784185738584, 60.99695191635458], [1.6267038814500456, 63.508306280232844]], rtol=1e-12)


def test_hierarchical_gradient_is_the_same_in_numba_and_python() -> None:
    """The PyMC model's gradient through the pointwise Op and its per-subject sum (numba, as nutpie
    runs it) equals the Python/C backend's, at a random point."""
    model = MODELS["prospect-theory"]
    pm_model = model.pymc_model(simulate(get_experiment("risky-choice"), "prospect-theory", 4, 3), True)
    rng = np.random.default_rng(1)
    point = {k: v + 0.3 * rng.normal(size=np.shape(v)) for k, v in pm_model.initial_point().items()}
    values = [point[v.name] for v in pm_model.value_vars]
    numba = pm_model.compile_fn(pm_model.dlogp(), inputs=pm_model.value_vars, mode="NUMBA", point_fn=False)
    python = pm_model.compile_fn(pm_model.dlogp(), inputs=pm_model.value_vars, point_fn=False)
    np.testing.assert_allclose(numba(*values), python(*values), rtol=1e-10, atol=1e-10)


def test_loss_averse_decider_avoids_the_riskier_symmetric_lottery() -> None:
    spec = get_experiment("risky-choice")
    averse = simulate(spec, "prospect-theory", 20, 1, params={"lambda": 3.0, "alpha": 1.0, "theta": 2.0})
    seeking = simulate(spec, "prospect-theory", 20, 1, params={"lambda": 0.5, "alpha": 1.0, "theta": 2.0})
    assert choice_shares(averse)["p_risky"] < 0.2 < 0.8 < choice_shares(seeking)["p_risky"]


def test_metrics_recover_loss_aversion_order() -> None:
    spec = get_experiment("risky-choice")
    low = risky_metrics(simulate(spec, "prospect-theory", 8, 2, params={"lambda": 1.0, "theta": 2.0}))
    high = risky_metrics(simulate(spec, "prospect-theory", 8, 2, params={"lambda": 3.0, "theta": 2.0}))
    assert low["metrics"]["loss_aversion"] < 1.6 < 2.0 < high["metrics"]["loss_aversion"]
    assert len(low["per_subject"]) == 8


def test_median_interval_is_the_order_statistic_interval() -> None:
    med, lo, hi = median_interval(np.arange(1.0, 21.0))
    assert med == 10.5 and (lo, hi) == (6.0, 15.0)  # n = 20: the 6th and 15th order statistics (95.9 %)
    assert np.isnan(median_interval(np.array([1.0, 2.0]))[1])


@NEEDS_SPEKTOR
def test_spektor_file_imports_every_participant() -> None:
    importer = get_experiment("risky-choice").importer("psych201")
    assert importer.sniff(SPEKTOR)
    table = importer.load(SPEKTOR)
    assert table["subject"].nunique() == 282 and len(table) == 73250
    assert table.groupby("study")["subject"].nunique().to_dict() == {"exp1": 40, "exp2": 185, "exp3": 57}
    assert table["valid"].all() and set(table["action"].unique()) == {0, 1}
    with zipfile.ZipFile(SPEKTOR) as z:
        name = next(n for n in z.namelist() if n.endswith(".jsonl") and not n.startswith("__MACOSX"))
        first = json.loads(z.open(name).readline())
    sub = table[table["participant"] == f"{Path(first['experiment']).stem}:{first['participant']}"]
    letters = (sub["letter0"].iloc[0], sub["letter1"].iloc[0])
    chosen = [letters[a] for a in sub["action"]]
    assert chosen == [c.split(">>")[0] for c in first["text"].split("<<")[1:]]
    assert sub["rt"].tolist() == [float(v) for v in first["RTs"]]


@pytest.fixture(scope="module")
def spektor_exp1(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The trial table of Spektor et al.'s Experiment 1 (its 40 participants' lines of the file)."""
    with zipfile.ZipFile(SPEKTOR) as z:
        name = next(n for n in z.namelist() if n.endswith(".jsonl") and not n.startswith("__MACOSX"))
        lines = z.read(name).decode().splitlines()
    exp1 = [line for line in lines if json.loads(line)["experiment"] == "spektor2024lossaversion/exp1.csv"]
    path = tmp_path_factory.mktemp("spektor") / "exp1.jsonl"
    path.write_text("\n".join(exp1) + "\n", encoding="utf-8")
    return get_experiment("risky-choice").importer("psych201").load(path)


@NEEDS_SPEKTOR
def test_the_human_mle_study_pins_experiment_1s_median_lambda(spektor_exp1: pd.DataFrame,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``risky_choice.py human-mle`` on Experiment 1's 40 participants: the median λ 1.163 with its
    95 % order-statistic interval [1.004, 1.730] (the 282 give 1.006 [0.981, 1.038]), α, θ, the
    shares and the counts at λ's bounds.  The printed figures are rounded to 3 decimals, so they
    are compared to 1.5e-3 (the order statistics move by < 1e-8 between 3, 5 and 12 starts)."""
    from study_scripts import load_study

    load_study("risky_choice").human_mle(spektor_exp1)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r.get("study") for r in rows] == ["all", "exp1", None] and set(rows[2]) == {"fit", "seconds"}
    every, exp1 = rows[0], rows[1]
    assert {**every, "study": "exp1"} == exp1  # one experiment: "all" is exp1
    pinned = {"lambda": (1.163, 1.004, 1.73), "alpha": (0.996, 0.772, 1.264), "theta": (0.939, 0.467, 1.471)}
    for name, (median, lo, hi) in pinned.items():
        assert every[name]["n"] == 40
        got = (every[name]["median"], every[name]["lo95"], every[name]["hi95"])
        assert got == pytest.approx((median, lo, hi), abs=1.5e-3), name
    assert every["share_lambda_above_1"] == 0.675 and every["share_pt_better_aic_than_ev"] == 0.925  # 27, 37 of 40
    assert every["at_lambda_bound"] == 4 and every["not_converged"] == 0


def test_prospect_theorys_lambda_is_recovered_at_98_trials(capsys: pytest.CaptureFixture[str]) -> None:
    """``risky_choice.py recovery-plain`` at one Spektor Exp. 2 session (98 trials): 40
    prospect-theory deciders drawn from the priors, one MLE each.  Spearman's r of λ true against
    estimated was 0.78-0.97 (median 0.915) over seeds 0-199 at 40 deciders; asserted > 0.7 on three
    seeds, and seed 1's value pinned."""
    from study_scripts import load_study

    study = load_study("risky_choice")
    for seed in (1, 2, 3):
        study.recovery_plain(40, (98,), seed)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["trials"], r["subjects"]) for r in rows] == [(98, 40)] * 3
    assert all(r["lambda"]["spearman"] > 0.7 for r in rows), [r["lambda"] for r in rows]
    assert rows[0]["lambda"]["spearman"] == pytest.approx(0.892, abs=2e-3) and rows[0]["lambda"]["at_bound"] == 3


def test_spektor_refusals_are_one_line(tmp_path: Path) -> None:
    from cogtestbed.data.psych201 import Psych201Error, Record
    from cogtestbed.data.spektor2024 import parse_spektor2024

    text = ("Dear participant,\nThe lotteries' names are S and Q.\n\nSession 1:\n"
            "The outcomes of lottery S are -9 with 50% chance and 16 with 50% chance. The outcomes of lottery Q are "
            "-15 with 50% chance and 22 with 50% chance. You choose <<Q>>.")
    record = {"text": text, "experiment": "spektor2024lossaversion/exp2.csv", "participant": 4}
    rows = parse_spektor2024(Record(text, record["experiment"], "4", 1))
    assert rows["action"].tolist() == [1] and rows["x1"].tolist() == [-9.0] and rows["reward"].tolist() == [3.5]
    bad = {**record, "participant": 5, "text": text.replace("<<Q>>", "<<Z>>")}
    path = tmp_path / "prompts.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(bad) + "\n")
    importer = get_experiment("risky-choice").importer("psych201")
    with pytest.raises(Psych201Error) as exc:
        importer.load(path)
    assert "\n" not in str(exc.value) and "line 2" in str(exc.value) and "<<Z>>" in str(exc.value)


def test_psych201_choice_cue_ends_a_completion_prompt() -> None:
    from cogtestbed.conformance.suite import prompt_form_problems

    assert prompt_form_problems("Session 1:\nThe outcomes ... You choose <<", "<<") == []
    assert prompt_form_problems("Session 1:\nThe outcomes ... You choose <<")  # no declared cue: mid-sentence
    assert prompt_form_problems("Session 1:\nThe outcomes ... You choose << ", "<<")  # trailing whitespace

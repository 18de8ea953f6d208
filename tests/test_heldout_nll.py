"""Held-out per-choice NLL of a cognitive model (issue 52 item 5): the seeded split, the pooled
fit, the per-subject scores and the paired comparison, checked against values computed by hand."""

from __future__ import annotations

import json
import math
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import cogtestbed as ct
from cogtestbed.errors import InputError
from cogtestbed.inference.heldout import heldout_nll, heldout_split, paired_comparison, subject_nll
from cogtestbed.inference.twostep import MODELS, position_bias_fit, position_bias_nll

PARAMS = {"w": 0.5, "alpha": 0.5, "beta": 4.0, "lam": 0.5, "persev": 0.3}


@pytest.fixture(scope="module")
def trials() -> pd.DataFrame:
    return ct.simulate("two-step", "hybrid", subjects=12, seed=3, design={"n_days": 60}, params=PARAMS)


def test_split_is_seeded_and_independent_of_order() -> None:
    subjects = [f"s{k}" for k in range(20)]
    train, test = heldout_split(subjects, 5, seed=7)
    assert len(test) == 5 and len(train) == 15 and not set(train) & set(test)
    assert heldout_split(list(reversed(subjects)) + subjects[:3], 5, seed=7) == (train, test)
    assert heldout_split(subjects, 5, seed=8)[1] != test
    with pytest.raises(InputError, match="between 1 and 19"):
        heldout_split(subjects, 20, seed=0)


def test_subject_nll_is_the_models_nll_per_choice(trials: pd.DataFrame) -> None:
    model = MODELS["hybrid"]
    table = subject_nll(model, PARAMS, trials)
    data = model.subject_data(trials)
    theta = np.array([PARAMS[n] for n in model.parameters.names])
    for _, row in table.iterrows():
        d = data[row["subject"]]
        assert row["n_choices"] == int(np.sum(d.a1 >= 0) + np.sum(d.a2 >= 0)) == 120
        assert row["nll"] == pytest.approx(model.nll(theta, d), rel=1e-12)
        assert row["nll_per_choice"] == pytest.approx(row["nll"] / 120, rel=1e-12)


def test_heldout_fit_uses_only_training_subjects(trials: pd.DataFrame) -> None:
    model = MODELS["hybrid"]
    _, test = heldout_split(trials["subject"].unique(), 3, seed=0)
    held = heldout_nll(model, trials, test, n_starts=2)
    assert [s for s in held.table["subject"]] == sorted(test, key=str) and len(held.train) == 9
    again = heldout_nll(
        model,
        trials[~trials["subject"].isin(test)].pipe(
            lambda t: pd.concat([t, trials[trials["subject"].isin(test)].assign(action=0)])
        ),
        test,
        n_starts=2,
    )
    assert again.params == pytest.approx(held.params, rel=1e-9)  # held-out answers never reach the fit
    assert (held.table["nll_per_choice"] < math.log(2)).all()  # a learner beats chance on its own data


def test_paired_comparison_matches_the_t_interval() -> None:
    a = pd.Series([0.60, 0.62, 0.58, 0.65], index=list("wxyz"))
    b = pd.Series([0.69, 0.70, 0.66, 0.71, 0.5], index=list("wxyzv"))
    out = paired_comparison(a, b)
    d = np.array([-0.09, -0.08, -0.08, -0.06])
    half = stats.t.ppf(0.975, 3) * d.std(ddof=1) / 2
    assert out["n"] == 4 and out["mean_difference"] == pytest.approx(d.mean())
    assert out["interval"] == pytest.approx([d.mean() - half, d.mean() + half])
    assert out["verdict"] == "a lower"
    assert paired_comparison(b, a)["verdict"] == "b lower"
    assert paired_comparison(a.iloc[:1], b)["verdict"] is None


def test_recovery_studys_task_blind_responder_plays_the_task() -> None:
    """benchmarks/studies/centaur_recovery.py: the position-biased responder takes the first option
    with probability 0.7, reaches the planet its spaceship commonly (or rarely) leads to, and is
    paid by the environment's reward probabilities; the position-bias model's NLL is its formula."""
    from study_scripts import load_study

    study = load_study("centaur_recovery")
    table = study.simulate("position-biased", 20, seed=4, human_params=pd.DataFrame())
    assert table["subject"].nunique() == 20 and set(table["session"]) == {0, 1} and len(table) == 20 * 322
    assert (table["action"] == 0).mean() == pytest.approx(0.7, abs=0.02)
    assert (table["action2"] == 0).mean() == pytest.approx(0.7, abs=0.02)
    assert ((table["planet"] == table["action"]) == table["common"]).all()
    assert table["common"].mean() == pytest.approx(0.7, abs=0.02)
    b = position_bias_fit(table)
    assert b == ((table["action"] == 0).mean(), (table["action2"] == 0).mean())
    one = table[table["subject"] == 3]
    n1, n2 = int((one["action"] == 0).sum()), int((one["action2"] == 0).sum())
    expected = -(
        n1 * math.log(b[0]) + (322 - n1) * math.log(1 - b[0]) + n2 * math.log(b[1]) + (322 - n2) * math.log(1 - b[1])
    )
    row = position_bias_nll(table, b).set_index("subject").loc[3]
    assert row["nll"] == pytest.approx(expected, rel=1e-12) and row["n_choices"] == 644
    assert row["nll_per_choice"] == pytest.approx(expected / 644, rel=1e-12)


def test_public_heldout_nll_draws_the_seeded_split(trials: pd.DataFrame) -> None:
    held = ct.heldout_nll("two-step", trials, model="hybrid", test=3, seed=5, n_starts=2)
    assert held.test == sorted(heldout_split(list(trials["subject"].unique()), 3, 5)[1], key=str)
    again = heldout_nll(MODELS["hybrid"], trials, held.test, n_starts=2)
    assert held.params == again.params and held.as_dict()["n_train"] == 9
    pd.testing.assert_frame_equal(held.table, again.table)


def test_nll_study_refuses_participants_whose_two_models_score_different_choices() -> None:
    """benchmarks/studies/centaur_nll.py sets SmolLM2 and the hybrid side by side only on the same
    choices (docs/human-data.md): a held-out participant with different choice counts, or scored by
    one model only, stops the study with one line naming them."""
    from study_scripts import load_study

    check = load_study("centaur_nll").check_same_choices
    same = pd.DataFrame({"participant": ["233", "52"], "n_choices_llm": [240, 224], "n_choices_hybrid": [240, 224]})
    assert check(same, ["233", "52"]) is None
    with pytest.raises(SystemExit, match=r"different choice counts for participant\(s\) 52 \(224 vs 222\)"):
        check(same.assign(n_choices_hybrid=[240, 222]), ["233", "52"])
    with pytest.raises(SystemExit, match=r"participant\(s\) 414 scored by only one"):
        check(same, ["233", "52", "414"])


SHAHAR = Path(__file__).resolve().parents[2] / "shared/data/psych201/shahar2019twosteptask/prompts.jsonl.zip"


@pytest.mark.skipif(not SHAHAR.is_file(), reason="the Psych-201 file is not in ../shared/data")
def test_the_centaur_nll_study_scores_model_and_hybrid_on_the_same_choices(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/studies/centaur_nll.py end to end on the first 4 Shahar participants (2 held out,
    the other 2 fitted), with a uniform language model in SmolLM2's place (the tiny model's
    tokenizer, every next token equally likely: its raw NLL per choice is log V and its NLL
    over the two options log 2, exactly): each held-out participant's choices counted alike by the
    model and the hybrid (the transcript's marks of the first measurement), the hybrid's and the
    position-bias model's held-out NLL pinned, and every printed line's keys."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from types import SimpleNamespace

    from study_scripts import load_study

    from cogtestbed.data.psych201 import CHOICE
    from cogtestbed.llm_adapters.clients.hf import HFClient, build_tiny_random

    tokenizer = build_tiny_random()[1]
    vocab = len(tokenizer)

    class Decoder(torch.nn.Module):
        def forward(self, input_ids, attention_mask=None, use_cache=False, **_):  # noqa: ANN001, ANN003, ANN201, ARG002
            return SimpleNamespace(last_hidden_state=torch.zeros((*input_ids.shape, 1), dtype=torch.float64))

    class Uniform(torch.nn.Module):
        config = SimpleNamespace(max_position_embeddings=65536)

        def __init__(self) -> None:
            super().__init__()
            self.decoder = Decoder()

        def get_decoder(self):  # noqa: ANN201
            return self.decoder

        def get_output_embeddings(self):  # noqa: ANN201
            return lambda hidden: torch.zeros((hidden.shape[0], vocab), dtype=torch.float64)

        def forward(self, input_ids, use_cache=False, logits_to_keep=None):  # noqa: ANN001, ANN201, ARG002
            return SimpleNamespace(logits=torch.zeros((1, input_ids.shape[1], vocab), dtype=torch.float64))

    with zipfile.ZipFile(SHAHAR) as archive:
        lines = archive.read("prompts.jsonl").decode().splitlines()[:4]
    head = tmp_path / "head.jsonl"
    head.write_text("\n".join(lines) + "\n", encoding="utf-8")
    study = load_study("centaur_nll")
    client = HFClient(Uniform(), tokenizer, "uniform", chat=False)
    real = study.transcript_nll
    monkeypatch.setattr(study, "transcript_nll", lambda llm, *a, **k: real(client, *a, **k))
    monkeypatch.setattr(sys, "argv", ["centaur_nll.py", "--data", str(head), "--held-out", "2", "--train", "0"])
    study.main()
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    split, fit, bias, summary = (next(r for r in out if key in r) for key in (
        "split", "hybrid_pooled_fit", "position_bias_fit", "summary_nats_per_choice"))
    people = [r for r in out if "participant" in r]
    assert split["split"] == {"seed": 0, "held_out": ["3", "4"], "n_train_fitted": 2, "n_participants": 4,
                              "measurement": "first"}
    assert set(fit) >= {"hybrid_pooled_fit", "train_nll_per_choice", "converged"} and fit["converged"]
    assert bias["position_bias_fit"] == pytest.approx([0.555, 0.6557], abs=1e-4)
    marks = {str(json.loads(line)["participant"]): len(CHOICE.findall(json.loads(line)["text"].split(study.SECOND)[0]))
             for line in lines}
    assert [p["participant"] for p in people] == ["3", "4"]
    for p, hybrid, position in zip(people, (0.6887, 0.6131), (0.7418, 0.6721), strict=True):
        assert p["choices"] == p["hybrid_choices"] == marks[p["participant"]] == 240
        assert p["smollm2_raw"] == pytest.approx(math.log(vocab), abs=1e-4)
        assert p["smollm2_norm"] == p["chance"] == round(math.log(2), 4)
        assert p["hybrid"] == pytest.approx(hybrid, abs=2e-4)
        assert p["position_bias"] == pytest.approx(position, abs=1e-4)
    assert set(summary) >= {"summary_nats_per_choice", "smollm2_norm_minus_hybrid", "smollm2_norm_minus_position_bias",
                            "hybrid_minus_position_bias", "unscored_choices"} and summary["unscored_choices"] == 0
    assert summary["summary_nats_per_choice"]["smollm2_norm"] == {"mean": round(math.log(2), 4),
                                                                  "ci95": [round(math.log(2), 4)] * 2}
    assert summary["hybrid_minus_position_bias"]["mean_difference"] == pytest.approx(-0.0560, abs=3e-4)

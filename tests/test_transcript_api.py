"""``ct.transcript_nll`` / ``cogtestbed transcript-nll`` on a Psych-201 file (issue 52 item 5), and
SmolLM2 on a short Shahar transcript checked against the package's exact continuation scorer."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import cogtestbed as ct  # noqa: E402
from cogtestbed.cli import run_cli  # noqa: E402
from cogtestbed.llm_adapters.runs.transcript import shahar2019_options  # noqa: E402

HEADER = ("You will make choices in a two-stage decision task.\nIn the first stage, you will choose between two "
          "options: {a} and {b}.\nYour first-stage choice will lead to one of two second-stage states: S or A.\n"
          "In each second-stage state, you will make another choice between two options: {c} and {d}.\n"
          "Each second-stage choice can result in either receiving a reward (1) or no reward (0).\n\n")
TRIAL = ("You are presented with first-stage options {a} and {b}. You choose <<{x}>>. This leads to state {s}. "
         "In state {s}, you choose <<{y}>>. You receive {r}.\n")


def shahar_text(letters: str, trials: int, seed: int) -> str:
    a, b, c, d = letters
    rng = np.random.default_rng(seed)
    body = "".join(TRIAL.format(a=a, b=b, x=(a, b)[rng.integers(2)], s="SA"[rng.integers(2)], y=(c, d)[rng.integers(2)],
                                r=("a reward", "no reward")[rng.integers(2)]) for _ in range(trials))
    return HEADER.format(a=a, b=b, c=c, d=d) + body


@pytest.fixture()
def psych201_file(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.jsonl.zip"
    lines = [json.dumps({"text": shahar_text(letters, 4, k), "experiment": "shahar2019twosteptask/TST_nspn.csv",
                         "participant": str(k + 1)}) for k, letters in enumerate(("MZRW", "KQBD"))]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("prompts.jsonl", "\n".join(lines) + "\n")
    return path


def test_api_scores_every_participant_with_the_data_sets_options(psych201_file: Path) -> None:
    choices = ct.transcript_nll("hf:tiny-random", psych201_file)
    assert list(choices["participant"].unique()) == ["1", "2"] and len(choices) == 16
    assert set(choices["data_set"]) == {"shahar2019twosteptask"}
    assert set(choices["options"].iloc[:2]) == {("M", "Z"), ("R", "W")}
    assert choices["logp_norm"].notna().all() and (choices["logp_norm"] <= 0).all()
    assert (choices["logp_raw"] <= choices["logp_norm"] + 1e-12).all()  # a share of the vocabulary's mass
    summary = ct.participant_nll(choices)
    one = choices[choices["participant"] == "2"]
    row = summary.set_index("participant").loc["2"]
    assert row["n_scored_norm"] == 8 and row["nll_raw"] == pytest.approx(-one["logp_raw"].mean(), rel=1e-12)
    assert row["nll_norm"] == pytest.approx(-one["logp_norm"].mean(), rel=1e-12)
    only = ct.transcript_nll("hf:tiny-random", psych201_file, participants=["2"], options=None)
    np.testing.assert_allclose(only["logp_raw"], one["logp_raw"], atol=1e-9)
    assert only["logp_norm"].isna().all()
    with pytest.raises(ct.errors.InputError, match="participant"):
        ct.transcript_nll("hf:tiny-random", psych201_file, participants=["9"])


def test_cli_prints_the_participants_and_refuses_a_served_model(psych201_file: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "choices.csv"
    assert run_cli(["transcript-nll", str(psych201_file), "--llm", "hf:tiny-random", "-p", "1", "-o", str(out)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["model"] == "tiny-random" and [p["participant"] for p in shown["participants"]] == ["1"]
    table = pd.read_csv(out)
    assert len(table) == 8 and shown["participants"][0]["nll_norm"] == pytest.approx(-table["logp_norm"].mean())
    assert run_cli(["transcript-nll", str(psych201_file), "--llm", "openai:gpt-4o-mini"]) == 2
    err = capsys.readouterr().err
    assert "in-process model" in err and len(err.strip().splitlines()) == 1


def test_smollm2_matches_the_exact_continuation_scorer(smollm2: Any) -> None:
    """One teacher-forced pass over a short transcript gives each choice the log-probability the
    package's exact scorer (its own forward pass per context) gives the option as a continuation."""
    text = shahar_text("MZRW", 3, 0)
    df = ct.transcript_nll(smollm2, [("1", text)], options=shahar2019_options)
    assert len(df) == 6 and df["null_reason"].isna().all() and (df["n_tokens"] == 1).all()
    for k in (0, 5):
        row = df.iloc[k]
        start = [m for m in range(len(text)) if text.startswith("<<", m)][k] + 2
        score = smollm2.score_sync(text[:start], list(row["options"]), raw=True)
        lp = dict(zip(row["options"], score.logprobs, strict=True))
        assert row["logp_raw"] == pytest.approx(lp[row["chosen"]], abs=1e-4)
        assert row["logp_norm"] == pytest.approx(lp[row["chosen"]] - math.log(sum(map(math.exp, lp.values()))),
                                                 abs=1e-4)

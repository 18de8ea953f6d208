"""Two models on the same sessions: the paired report and ``run --llm A --llm B``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cogtestbed.environments.revealed import RevealedDesign
from cogtestbed.registry import get_experiment
from cogtestbed.runs.paired import paired_report, paired_test
from cogtestbed.simulation import simulate

SMALL = RevealedDesign(scenarios=("choice", "dice"), variants=("regular",), choice_options=(2, 4, 6),
                       n_dice=(1, 2), dice_faces=(4, 6, 8, 10, 12))


def test_paired_test_signed_rank():
    r = paired_test([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.3, 0.5, 0.4, 0.8, 0.9, 0.7])
    assert r["n_pairs"] == 6 and r["mean_difference"] == pytest.approx(0.25)
    assert r["p_value"] == pytest.approx(0.03125)  # exact: all six differences positive, 2 / 2**6
    assert paired_test([1.0, 2.0], [1.0, 2.0])["p_value"] == 1.0
    assert paired_test([1.0], [2.0])["p_value"] is None


def test_paired_report_pairs_revealed_items_and_detects_a_first_option_bias():
    exp = get_experiment("revealed-belief")
    base = simulate(exp, "dissonant", 1, 0, design=SMALL)
    biased = simulate(exp, "dissonant", 1, 0, {"beta_first": 2.0}, design=SMALL)
    report = paired_report(exp, {"base": base, "biased": biased})
    cheb = report["metrics"]["chebyshev"]
    assert report["paired_by"] == {"rows": "items", "ids": ["item", "channel"]}
    assert cheb["base"] == pytest.approx(0.0, abs=1e-9) and cheb["biased"] > 0.2
    assert cheb["n_pairs"] == int((base["channel"] == "revb").sum()) and cheb["p_value"] < 0.01
    with pytest.raises(ValueError, match="two models"):
        paired_report(exp, {"base": base})


def test_unit_pairing_is_the_default():
    exp = get_experiment("instrumental-learning")
    a = simulate(exp, "rw", 4, 0)
    report = paired_report(exp, {"a": a, "b": simulate(exp, "rw", 4, 0)})
    assert report["paired_by"]["ids"] == ["run"]
    numeric = [m for m in report["metrics"].values() if m.get("n_pairs")]
    assert numeric and all(m["p_value"] == 1.0 and m["mean_difference"] == 0.0 for m in numeric)


@pytest.mark.slow
def test_run_two_models_writes_a_paired_report(tmp_path):
    out = tmp_path / "pair"
    proc = subprocess.run(
        [sys.executable, "-m", "cogtestbed", "run", "revealed-belief", "--llm", "hf:tiny-random", "--llm",
         "hf:tiny-random-chat", "--subjects", "1", "--design", "scenarios=choice", "--design", "variants=regular",
         "-o", str(out)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert (out / "1-hf-tiny-random" / "trials.parquet").exists()
    assert (out / "2-hf-tiny-random-chat" / "trials.parquet").exists()
    report = json.loads((out / "paired.json").read_text())
    assert report["models"] == ["hf:tiny-random", "hf:tiny-random-chat"]
    assert report["metrics"]["chebyshev"]["n_pairs"] > 0 and "p_value" in report["metrics"]["staa_error"]
    assert "chebyshev" in proc.stderr


def test_the_console_summary_names_each_model_beside_its_own_value():
    from cogtestbed.runs.paired import format_report

    report = {"experiment": "temporal-discounting", "models": ["openai:gpt-4o", "openai:gpt-4o-mini"],
              "paired_by": {"ids": ["subject"]},
              "metrics": {"score": {"openai:gpt-4o": 0.25, "openai:gpt-4o-mini": 0.75, "mean_difference": 0.5,
                                    "n_pairs": 4, "p_value": 0.125}}}
    head, line = format_report(report).splitlines()
    assert head.startswith("temporal-discounting: openai:gpt-4o vs openai:gpt-4o-mini")
    assert "openai:gpt-4o 0.25 vs openai:gpt-4o-mini 0.75" in line
    assert "mean difference openai:gpt-4o-mini - openai:gpt-4o +0.5 over 4 pairs" in line

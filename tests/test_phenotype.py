"""``cogtestbed phenotype``: normalisation against the references of Coda-Forno et al. 2024, flags,
figure, generic registry use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cogtestbed.cli import app
from cogtestbed.registry import experiment_names, write_trials
from cogtestbed.runs.phenotype import (
    AgentMetrics,
    available_references,
    experiment_for_csv,
    normalise,
    phenotype_table,
    references,
    table_flags,
)
from cogtestbed.simulation import simulate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cogbench"


def ref(experiment: str, key: str):
    return next(r for r in references() if r.experiment == experiment and r.key == key)


def test_signed_and_absolute_normalisation():
    r = ref("horizon", "directed_exploration")  # human 0.326, random -0.044
    signed, absolute = normalise(-0.3134, r)
    assert signed == pytest.approx((-0.3134 + 0.044) / 0.37)
    assert absolute == pytest.approx(abs(signed)) and signed < 0 < absolute
    assert normalise(r.human, r) == (pytest.approx(1.0), pytest.approx(1.0))
    assert normalise(r.random, r)[0] == pytest.approx(0.0)


def test_tiny_denominator_flags_optimism_bias_only_among_behaviour():
    tiny = {r.key for r in references() if r.kind == "behaviour" and r.tiny_denominator}
    assert tiny == {"optimism_bias"}
    assert ref("horizon", "performance").tiny_denominator  # 51.61 vs 50.43 dollars


def test_references_cover_every_registered_cogbench_experiment():
    refs = available_references()
    assert {r.experiment for r in refs} <= set(experiment_names())
    for name in ("two-step", "temporal-discounting", "bart"):
        assert name in {r.experiment for r in refs}
    assert len(references()) == 16  # 10 behavioural + 6 performance metrics


def test_table_and_flags_from_metrics():
    results = [AgentMetrics("a", "two-step", "x", {"model_basedness": 0.2, "performance": 0.55}),
               AgentMetrics("a", "bart", "y", {"risk": 5.0, "performance": 6.0})]
    t = phenotype_table(results)
    row = t[(t["metric"] == "model_basedness")].iloc[0]
    assert row["signed"] == pytest.approx((0.2 - 0.0009) / (0.0263 - 0.0009))
    assert row["outside_plot"]
    assert any("Model-basedness" in f for f in table_flags(t))


def test_csv_experiment_from_cogbench_folder_layout():
    assert experiment_for_csv(DATA / "TwoStepTask" / "gpt-4.csv") == "two-step"
    assert experiment_for_csv(DATA / "BART" / "gpt-4.csv") == "bart"


def test_cli_on_real_files_and_a_synthetic_parquet(tmp_path):
    synth = simulate("two-step", "model-based", 50, 0, {"alpha": 0.6, "beta": 6})
    write_trials(synth, tmp_path / "mb.parquet", {"experiment": "two-step"})
    files = [DATA / "TwoStepTask" / "gpt-4.csv", DATA / "BART" / "gpt-4.csv",
             DATA / "TemporalDiscounting" / "gpt-4.csv", tmp_path / "mb.parquet"]
    out = tmp_path / "pheno"
    res = CliRunner().invoke(app, ["phenotype", *map(str, files), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["agents"] == ["gpt-4", "model-based"]
    rows = {(r["agent"], r["metric"], r["experiment"]): r for r in payload["rows"]}
    mb = rows[("gpt-4", "model_basedness", "two-step")]
    assert mb["value"] == pytest.approx(0.160, abs=1e-3)  # Coda-Forno et al. 2024: GPT-4 0.160
    td = rows[("gpt-4", "score", "temporal-discounting")]
    assert td["signed"] == pytest.approx((10 - 9.106) / (10.3 - 9.106))
    for name in ("phenotype.csv", "phenotype.json", "phenotype_behaviour.png", "phenotype_performance.png"):
        assert (out / name).stat().st_size > 0
    absolute = CliRunner().invoke(app, ["phenotype", str(files[0]), "--normalisation", "absolute", "--kind",
                                        "behaviour"])
    assert absolute.exit_code == 0 and "absolute" in absolute.stdout

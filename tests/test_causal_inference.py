"""CBN closed forms, the thesis fit on the real human and LLM data, metrics and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cogtestbed.cli import app
from cogtestbed.data.causal import import_causaign_responses, import_rw17_human
from cogtestbed.inference.causal import cbn_predictions, collider_metrics, fit_best, fit_cbn
from cogtestbed.simulation import simulate

KEYS = {"b", "m1", "m2", "p_c", "lad", "mae", "rmse", "r2", "loocv_r2", "loocv_rmse", "aic", "bic",
        "scheme", "ea", "ea_half", "mv"}


@pytest.mark.parametrize("theta,expected", [
    ((0.10, 0.80, 0.80, 0.50), (.100, .820, .964, .500, .500, .540, .660, .891, .167, .167, .167)),
    ((0.30, 0.60, 0.60, 0.50), (.300, .720, .888, .500, .500, .552, .612, .706, .286, .286, .286)),
    ((0.20, 0.90, 0.50, 0.30), (.200, .600, .960, .300, .300, .407, .555, .663, .041, .041, .041)),
    ((0.01, 0.99, 0.99, 0.50), (.010, .990, 1.000, .500, .500, .502, .666, .990, .010, .010, .010)),
])
def test_closed_forms_match_digest_vectors(theta: tuple[float, ...], expected: tuple[float, ...]) -> None:
    b, m1, m2, pc = theta
    assert np.round(cbn_predictions(b, m1, m2, pc), 3) == pytest.approx(np.array(expected), abs=1e-3)


def test_structural_identities() -> None:
    rng = np.random.default_rng(0)
    for b, m1, m2, pc in rng.uniform(0.01, 0.99, (50, 4)):
        p = cbn_predictions(b, m1, m2, pc)
        assert p[3] == pytest.approx(p[4]) and p[8] == pytest.approx(p[9]) == pytest.approx(p[10])
        assert p[7] >= p[6] >= p[5]


@pytest.fixture(scope="module")
def human(shared_data: Path):  # type: ignore[no-untyped-def]
    return import_rw17_human(shared_data / "causal" / "human" / "rw17_collider_ce.csv")


def test_human_import(human) -> None:  # type: ignore[no-untyped-def]
    assert len(human) == 960 and human["subject"].nunique() == 48
    assert (human.groupby("subject")["item"].nunique() == 20).all()


def test_human_reference_values(human) -> None:  # type: ignore[no-untyped-def]
    r = collider_metrics(human, per_subject="no")
    m = r["metrics"]
    assert m["aggregate"] == "cells" and m["n_rows"] == 240
    assert m["ea"] == pytest.approx(0.100, abs=1e-3) and m["mv"] == pytest.approx(0.100, abs=1e-3)
    assert m["scheme"] == "3p" and m["loocv_r2"] == pytest.approx(0.937, abs=1e-3)
    assert (m["b"], m["m1"], m["p_c"]) == pytest.approx((0.239, 0.630, 0.529), abs=1e-3)
    assert m["lad"] == pytest.approx(0.391, abs=1e-3)
    assert (m["rmse"], m["r2"], m["loocv_rmse"]) == pytest.approx((0.123, 0.732, 0.056), abs=1e-3)
    four = r["fits"]["4p"]
    assert (four["b"], four["m1"], four["m2"], four["p_c"], four["loocv_r2"]) == pytest.approx(
        (0.251, 0.648, 0.603, 0.532, 0.900), abs=1e-3)
    rows = collider_metrics(human, aggregate="rows", scheme="3p", per_subject="no")["metrics"]
    assert (rows["b"], rows["m1"], rows["p_c"], rows["loocv_r2"]) == pytest.approx(
        (0.255, 0.614, 0.527, 0.932), abs=1e-3)


def test_llm_reference_fit(shared_data: Path, human) -> None:  # type: ignore[no-untyped-def]
    llm = import_causaign_responses(shared_data / "causal" / "llm_responses" / "rw17_numeric__gemini-2.5-pro.csv")
    r = collider_metrics(llm, scheme="3p", human=human)
    m = r["metrics"]
    # Dettki 2025 Table B.19: MAE .024, RMSE .052, R² .981
    assert (m["mae"], m["rmse"], m["r2"]) == pytest.approx((0.024, 0.052, 0.981), abs=1e-3)
    assert m["normative_reasoner"] and m["lad"] > 0.95
    # Table B.15: pooled ρ = .849 [.838, .858] for gemini-2.5-pro numeric
    assert m["spearman_rho"] == pytest.approx(0.849, abs=0.02)
    assert r["alignment"]["pooled"]["lo"] < m["spearman_rho"] < r["alignment"]["pooled"]["hi"]


def test_invalid_llm_answers_are_kept_with_reasons(shared_data: Path) -> None:
    llm = import_causaign_responses(shared_data / "causal" / "llm_responses" / "rw17_numeric__gemini-2.5-flash.csv")
    bad = llm[~llm["valid"]]
    assert len(llm) == 240 and len(bad) >= 9
    assert bad["parse_error"].notna().all() and bad["action"].isna().all()


def test_recovers_known_parameters() -> None:
    t = simulate("collider", "cbn", 1, seed=5, params={"b": 0.2, "m1": 0.6, "m2": 0.6, "pc1": 0.4,
                                                       "pc2": 0.4, "noise_sd": 0.02})
    fit = fit_cbn(t["task_index"].to_numpy(), t["action"].astype(float).to_numpy() / 100, "3p")
    assert (fit.b, fit.m1, fit.p_c) == pytest.approx((0.2, 0.6, 0.4), abs=0.02)
    best, fits = fit_best(t["task_index"].to_numpy(), t["action"].astype(float).to_numpy() / 100)
    assert set(fits) == {"3p", "4p"} and best.scheme in fits


def test_cli_metrics_json(shared_data: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    human_csv = shared_data / "causal" / "human" / "rw17_collider_ce.csv"
    res = runner.invoke(app, ["metrics", "collider", str(human_csv), "--scheme", "4p", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out["metrics"]) >= KEYS and out["metrics"]["scheme"] == "4p" and out["source"] == "rw17"
    llm_csv = shared_data / "causal" / "llm_responses" / "rw17_numeric__o3.csv"
    res = runner.invoke(app, ["metrics", "collider", str(llm_csv), "--json", "--scheme=auto"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["source"] == "causaign"
    path = tmp_path / "t.parquet"
    res = runner.invoke(app, ["simulate", "collider", "--agent", "weak-ea", "--subjects", "2", "-o", str(path)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["metrics", "collider", str(path), "--json", "--scheme", "3p"])
    assert res.exit_code == 0, res.output
    assert set(json.loads(res.stdout)["metrics"]) >= KEYS
    res = runner.invoke(app, ["metrics", "collider", str(path), "--scheme", "5p"])
    assert res.exit_code != 0
    res = runner.invoke(app, ["metrics", "collider", str(path), "--nonsense", "1"])
    assert res.exit_code != 0

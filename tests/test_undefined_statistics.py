"""Statistics that are undefined print as undefined, with the reason (issue 75): a recovery r whose
true parameter is constant (even a constant written twice in floating point, 0.3 and
0.30000000000000004) is no "r −0.00" in a plot title, a table or the JSON of a summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.no_data import pearson_r
from cogtestbed.studies.plots import plot_recovery as plot_study_recovery
from cogtestbed.studies.summaries import recovery_summary

#: A constant in floating point: the truth of a parameter every subject shares.
NEAR_CONSTANT = np.array([0.3, 0.30000000000000004, 0.3, 0.29999999999999993, 0.3, 0.3] * 2)


def test_pearson_r_is_undefined_with_its_reason() -> None:
    est = np.linspace(0.1, 0.9, NEAR_CONSTANT.size)
    assert np.isfinite(np.corrcoef(NEAR_CONSTANT, est)[0, 1])  # numpy gives a number: the noise's correlation
    r = pearson_r(NEAR_CONSTANT, est)
    assert r.value is None and r.reason == "no variation in the truth"
    assert r.text() == "undefined (no variation in the truth)" and np.isnan(r.or_nan())
    assert pearson_r(est, np.full(est.size, 2.0)).reason == "no variation in the estimates"
    assert pearson_r([0.1, 0.2], [0.3, 0.1]).reason == "2 finite pairs, fewer than 3"
    assert pearson_r([0.1, 0.2, np.nan, 0.4], [0.1, 0.3, 0.2, 0.5]).value == pytest.approx(
        np.corrcoef([0.1, 0.2, 0.4], [0.1, 0.3, 0.5])[0, 1])
    assert pearson_r([1.0, 2.0, 3.0], [1.0, 2.0, 3.5]).text() == "0.99"


def _titles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from matplotlib.axes import Axes

    seen: list[str] = []
    original = Axes.set_title

    def record(self: Any, label: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(label))
        return original(self, label, *args, **kwargs)

    monkeypatch.setattr(Axes, "set_title", record)
    return seen


def test_plot_recovery_titles_a_constant_truth_undefined(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    trials = ct.simulate("instrumental-learning", "rw-pm", subjects=12, seed=1,
                         params={"alpha_pos": np.linspace(0.1, 0.9, 12), "alpha_neg": 0.3, "beta": 5.0})
    truth = trials.groupby("subject", sort=True)[["param_alpha_pos", "param_alpha_neg", "param_beta"]].first()
    rng = np.random.default_rng(0)
    est = pd.DataFrame({"subject": truth.index.to_numpy(),
                        "alpha_pos": truth["param_alpha_pos"].to_numpy() + rng.normal(0, 0.05, 12),
                        "alpha_neg": NEAR_CONSTANT + rng.normal(0, 0.05, 12), "beta": rng.uniform(3, 7, 12)})
    titles = _titles(monkeypatch)
    ct.plot_recovery(trials, est, directory=tmp_path)
    assert len(titles) == 3
    alpha_pos, alpha_neg, beta = titles
    assert "r 0.9" in alpha_pos and "undefined" not in alpha_pos
    assert alpha_neg.count("undefined (no variation in the truth)") == 2 and "0.00" not in alpha_neg
    assert "undefined (no variation in the truth)" in beta


def _study_table() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    n = NEAR_CONSTANT.size
    rows = [pd.DataFrame({"n_subjects": n, "runs": 1, "n_trials": 40, "rep": 0, "subject": np.arange(n),
                          "parameter": name, "true": true, "estimate": true + rng.normal(0, 0.05, n)})
            for name, true in (("alpha", np.linspace(0.1, 0.9, n)), ("beta", NEAR_CONSTANT))]
    return pd.concat(rows, ignore_index=True)


def test_a_studys_recovery_table_and_plot_say_undefined(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    table = _study_table()
    params = recovery_summary(table)["12x40"]["parameters"]
    assert params["alpha"]["r"] > 0.9 and "r_note" not in params["alpha"]
    assert np.isnan(params["beta"]["r"]) and params["beta"]["r_note"] == "r undefined: no variation in the truth"
    titles = _titles(monkeypatch)
    plot_study_recovery(table, tmp_path)
    assert titles[0].startswith("alpha  r=0.9")
    assert titles[1] == "beta  r=undefined (no variation in the truth)"

"""Adaptive sessions of magnitude estimation and belief coherence through a real model (issue 53, item 2):
SmolLM2-135M (offline) plays a short adaptive session in-process and, served by the local
OpenAI-compatible server, as an API model; the table records each chosen design and the session
replays from its seed and answers; the static-Bayes model fits the magnitude table (SmolLM2 gives belief
coherence no valid decision, so the MNL fit refuses it in one line).  Slow (a real model on CPU):
``make test-slow``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.environments.belief import ground_truth
from cogtestbed.environments.belief_adaptive import adaptive_bins
from cogtestbed.errors import InputError
from cogtestbed.inference.adaptive import AdaptiveDesigner
from cogtestbed.inference.adaptive_belief import adaptive_space as belief_space
from cogtestbed.inference.adaptive_belief import observations
from cogtestbed.inference.adaptive_magnitude import adaptive_space as magnitude_space
from cogtestbed.inference.belief_models import MODELS as BELIEF_MODELS
from cogtestbed.inference.magnitude import MODELS as MAGNITUDE_MODELS

ONE_BLOCK = {"task": "line-ratio", "conditions": "base", "modalities": "text", "ranges": "medium"}
BELIEF = {"variants": "pi0", "lie_node": "none", "n_reps": 1}


def _served(smollm2: Any, monkeypatch: pytest.MonkeyPatch, experiment: str, tmp_path: Path,
            options: dict[str, Any]) -> pd.DataFrame:
    """The same session with SmolLM2 served by the local OpenAI-compatible server, as an API model."""
    from cogtestbed.llm_adapters.servers.server import serve

    monkeypatch.setenv("OPENAI_API_KEY", "local-server")
    with serve({"smollm2-135m": smollm2}) as url:
        return ct.run(experiment, llm="openai:smollm2-135m", base_url=url, mode="chat", output=tmp_path / "api",
                      cache=tmp_path / "b.sqlite", **options).trials


@pytest.mark.slow
def test_an_adaptive_smollm2_magnitude_session_replays_and_fits(smollm2: Any, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Six adaptive line-ratio trials (one block: 6 calls, not 6 per block of the whole instrument):
    each row records the stimulus position chosen; feeding the valid answers back to a fresh designer
    (an invalid answer teaches nothing) chooses the same positions; the static-Bayes fit is finite."""
    # 32 tokens: SmolLM2 starts a sentence before its number; the paper's temperature 0.7 (seeded): greedy,
    # it answers "1:1" to every stimulus, the answers pull the posterior to u = 0 on every trial, and a
    # table of one stimulus cannot be fitted (refused in one line: test_adaptive_magnitude.py)
    options: dict[str, Any] = {"subjects": 1, "adaptive": "w_prior", "trials": 6, "design": ONE_BLOCK,
                               "max_tokens": 32}
    table = ct.run("magnitude", llm="hf:smollm2-135m", output=tmp_path / "run", cache=tmp_path / "a.sqlite",
                   **options).trials
    assert len(table) == 6 and table["design_index"].between(0, 10).all()
    lo, hi = table["range_low"].to_numpy(), table["range_high"].to_numpy()
    np.testing.assert_allclose(table["x"], lo + table["design_index"].to_numpy() / 10 * (hi - lo))
    valid = table["valid"].to_numpy(bool)
    assert valid.sum() >= 3 and table.loc[valid, "design_index"].nunique() == 2  # both ends of the range
    designer = AdaptiveDesigner(MAGNITUDE_MODELS["static-bayes"], magnitude_space(None), ("w_prior",))
    for d, ok, y, a, b in zip(table["design_index"], table["valid"], table["action"], lo, hi, strict=True):
        assert designer.choose() == d
        if ok:
            designer.update(int(d), (float(y) - a) / (b - a))
    fit = MAGNITUDE_MODELS["static-bayes"].fit_mle(table).iloc[0]
    assert np.isfinite(fit["nll"]) and 0.0 <= fit["w_prior"] <= 1.0
    remote = _served(smollm2, monkeypatch, "magnitude", tmp_path, options)
    assert remote["raw_response"].tolist() == table["raw_response"].tolist()
    assert remote["design_index"].tolist() == table["design_index"].tolist()


@pytest.mark.slow
def test_an_adaptive_smollm2_belief_session_replays_and_its_fit_refuses(smollm2: Any, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two adaptive contexts of belief coherence (π0 report and decision: 4 calls): each context's p*
    lies in the bin chosen for it and the choices replay from the answers.  SmolLM2-135M reports
    "No: 0.50 / Yes: 0.50" (valid) but answers the decision "No" alone, not B.2.1's two lines (greedy;
    re-asks and temperature 1 do no better, docs/adaptive.md): with no valid decision the posterior
    stays at the prior (the same bin is asked again) and the MNL fit refuses in one line."""
    options: dict[str, Any] = {"subjects": 1, "adaptive": "all", "trials": 2, "design": BELIEF}
    table = ct.run("belief-coherence", llm="hf:smollm2-135m", output=tmp_path / "run", cache=tmp_path / "a.sqlite",
                   **options).trials
    assert len(table) == 4 and (table["design_index"] >= 0).all()
    assert table["phase"].astype(str).tolist() == ["belief", "decision"] * 2
    design = ct.get_experiment("belief-coherence").env_cls.design_cls(
        **BELIEF, adaptive=tuple(BELIEF_MODELS["mnl"].parameters.names), trials=2)
    filled, _ = adaptive_bins(ground_truth(design), 20)
    first = table.groupby("context_id").first()
    assert np.all(np.minimum(np.floor(first["p_true"] * 20), 19) == filled[first["design_index"]])
    designer = AdaptiveDesigner(BELIEF_MODELS["mnl"], belief_space(design), ())
    for context, d in first["design_index"].items():  # a context without a valid answer teaches nothing
        assert designer.choose() == d
        for _, obs in observations(table[table["context_id"] == context])[0]:
            designer.observe(int(d), obs)
    beliefs = table[table["phase"].astype(str) == "belief"]
    assert beliefs["valid"].all() and np.allclose(beliefs["p_elicited"].astype(float), 0.5)
    decisions = table[table["phase"].astype(str) == "decision"]
    assert not decisions["valid"].any() and (decisions["raw_response"] == "No").all()
    with pytest.raises(InputError, match="no valid trials to fit 'mnl'"):
        BELIEF_MODELS["mnl"].fit_mle(table)
    remote = _served(smollm2, monkeypatch, "belief-coherence", tmp_path, options)
    assert remote["raw_response"].tolist() == table["raw_response"].tolist()
    assert remote["design_index"].tolist() == table["design_index"].tolist()

"""A recovery study's MLE task simulates and fits a chunk of subjects at a time (issue 71 item 5): the
study's rows are the ones the whole table gives, for every experiment, and its memory check counts a chunk."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.registry import get_experiment
from cogtestbed.studies import model_studies
from cogtestbed.studies.study_data import simulate_runs, simulate_runs_chunked

#: Every experiment, with one of its models.
CASES = [("instrumental-learning", "rw-pm"), ("two-step", "hybrid"), ("risky-choice", "prospect-theory"),
         ("temporal-discounting", "hyperbolic"), ("horizon", "info-bonus"), ("magnitude", "kalman"),
         ("bart", "target"), ("probabilistic-reasoning", "generalised-bayes"), ("restless-bandit", "kalman"),
         ("belief-coherence", "mnl"), ("collider", "cbn-3p"), ("revealed-belief", "dissonant")]
#: The default suite's share of the matrix; the rest run under ``-m slow`` (the first simulation of an
#: experiment in a process compiles its kernels: seconds).
FAST = {"instrumental-learning", "two-step", "collider", "risky-choice"}


@pytest.mark.parametrize(("experiment", "model"),
                         [c if c[0] in FAST else pytest.param(*c, marks=pytest.mark.slow) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_chunks_concatenate_to_the_whole_simulation(experiment: str, model: str) -> None:
    """Seven subjects of two sessions each, in chunks of three subjects: the chunks are the whole table."""
    exp = get_experiment(experiment)
    gen = exp.generator(model)
    n, runs = 7, 2
    params = gen.agent_params({p.name: p.to_constrained(np.linspace(p.prior_mean - 0.5, p.prior_mean + 0.5, n))
                               for p in exp.model(model).parameters})
    design = exp.env_cls.design_cls()
    whole = simulate_runs(exp, gen.agent, n, 5, params, design, runs)
    parts = list(simulate_runs_chunked(exp, gen.agent, n, 5, params, design, runs, chunk=3))
    assert [p["subject"].nunique() for p in parts] == [3, 3, 1]
    assert sorted(whole["session"].unique()) == [0, 1]
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)


@pytest.mark.parametrize(("experiment", "model"), [("instrumental-learning", "rw"), ("two-step", "model-free"),
                                                  ("temporal-discounting", "hyperbolic")])
def test_a_chunked_recovery_gives_the_whole_fit_rows(experiment: str, model: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Nine subjects in chunks of four: the study's rows are those of the unchunked study."""
    kwargs: dict[str, int] = {"subjects": 9, "reps": 1, "seed": 3, "workers": 1}
    if experiment != "temporal-discounting":
        kwargs["trials"] = 40
    whole = ct.recover(experiment, model, **kwargs).table
    seen: list[int] = []
    real = model_studies.simulate_runs_chunked

    def spy(*args, **kw):  # type: ignore[no-untyped-def]
        for part in real(*args, **kw):
            seen.append(part["subject"].nunique())
            yield part

    monkeypatch.setattr(model_studies, "study_chunk", lambda *a, **k: 4)
    monkeypatch.setattr(model_studies, "simulate_runs_chunked", spy)
    chunked = ct.recover(experiment, model, **kwargs).table
    assert seen == [4, 4, 1]
    pd.testing.assert_frame_equal(chunked, whole, rtol=1e-12, atol=0)


def test_the_memory_check_counts_a_chunk_and_the_rows_not_every_trial() -> None:
    """A million RW subjects: a chunk's trials and 2 million rows of estimates (~0.6 GB), not 96 million trials
    (~37 GiB); a billion are refused for their rows; ten million in a hierarchical recovery still holds every trial."""
    from cogtestbed.memory import MemoryLimitError
    from cogtestbed.studies.driver import ESTIMATE_ROW_BYTES, check_study_memory
    from cogtestbed.studies.study_kinds import study_spec

    exp = get_experiment("instrumental-learning")
    spec = study_spec(kind="recovery", experiment="instrumental-learning", models=["rw"], subjects=[10**6], reps=1)
    need = check_study_memory(spec, exp)
    assert 2 * 10**6 * ESTIMATE_ROW_BYTES < need < 2 * 10**6 * ESTIMATE_ROW_BYTES + 2**28
    with pytest.raises(MemoryLimitError, match="2,000,000,000 rows of estimates"):
        check_study_memory(spec.model_copy(update={"subjects": (10**9,)}), exp)
    with pytest.raises(MemoryLimitError, match="10000000 sessions per task"):
        check_study_memory(spec.model_copy(update={"method": "hierarchical", "subjects": (10**7,)}), exp)


def test_the_verdict_says_which_estimates_its_r_rmse_and_bias_leave_out() -> None:
    """An estimate at 0 of a log-scale parameter (log −∞) or a failed fit is not in r, RMSE and bias: the verdict
    says so beside them, with the count (never silently over fewer subjects)."""
    from cogtestbed.studies.summaries import recovery_summary
    from cogtestbed.studies.verdict import _param_stats

    rng = np.random.default_rng(0)
    true = rng.uniform(1, 8, 12)
    table = pd.DataFrame({"rep": 0, "n_subjects": 12, "runs": 1, "n_trials": 96, "subject": range(12),
                          "parameter": "beta", "true": true, "estimate": [*true[:10] * 1.1, 0.0, np.nan],
                          "scale": "log"})
    entry = next(iter(recovery_summary(table).values()))["parameters"]["beta"]
    assert (entry["n"], entry["n_finite"]) == (12, 10)
    assert entry["bias"] == pytest.approx(np.log(1.1))
    text = _param_stats("beta", entry)
    assert "over the 10 of 12 estimates finite (log scale); 2 are not" in text
    clean = next(iter(recovery_summary(table.iloc[:10]).values()))["parameters"]["beta"]
    assert "finite" not in _param_stats("beta", clean)

"""Simulations stream in chunks of subjects (issue 71, item 5): the same draws, the same table and file as
the all-at-once run, and memory that does not grow with the subject count."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.api.core import simulate_file
from cogtestbed.lapse import Lapse
from cogtestbed.simulation import simulate, simulate_chunks
from cogtestbed.subject_draws import Call, chunk_draws, draw_plan
from cogtestbed.trials import read_table


def test_a_chunk_gets_the_all_at_once_draws_of_its_subjects() -> None:
    def draw(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return rng.random((n, 3)), rng.random(2), rng.random((n, 2, 4))

    plan = draw_plan(draw)
    assert plan == (Call((3,), False), Call((2,), True), Call((2, 4), False))
    whole = draw(9, np.random.default_rng(5))
    part = chunk_draws(draw, plan, np.random.default_rng(5), 9, 4, 7)
    np.testing.assert_array_equal(part[0], whole[0][4:7])
    np.testing.assert_array_equal(part[1], whole[1])
    np.testing.assert_array_equal(part[2], whole[2][4:7])


def test_a_draw_of_another_kind_has_no_plan() -> None:
    assert draw_plan(lambda n, rng: rng.integers(0, 3, n)) is None
    assert draw_plan(lambda n, rng: rng.random(2 * n)) is None  # no subject axis first


@pytest.mark.parametrize(("experiment", "agent", "method"), [
    ("instrumental-learning", "rw", "batch"),  # sessions drawn a chunk at a time
    ("two-step", "hybrid", "batch"),  # sessions drawn up front, sliced
    ("risky-choice", "prospect-theory", "step"),
])
def test_chunks_concatenate_to_the_all_at_once_table(experiment: str, agent: str, method: str) -> None:
    lapse = Lapse(0.1, 0.05)
    whole = simulate(experiment, agent, 7, 11, method=method, lapse=lapse)
    parts = list(simulate_chunks(experiment, agent, 7, 11, method=method, lapse=lapse, chunk=3))
    assert [p["subject"].nunique() for p in parts] == [3, 3, 1]
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)


def test_chunks_with_forms_and_per_subject_params() -> None:
    forms = ct.get_experiment("instrumental-learning")
    from cogtestbed.environments.forms import FormDesign, resolve_forms

    design = FormDesign(resolve_forms(forms.prompt_forms, "2"), {"alpha": 0.3})
    params = {"alpha": np.linspace(0.2, 0.8, 8), "beta": 3.0}
    whole = simulate("instrumental-learning", "rw", 8, 2, params=params, forms=design)
    got = pd.concat(simulate_chunks("instrumental-learning", "rw", 8, 2, params=params, forms=design, chunk=5),
                    ignore_index=True)
    pd.testing.assert_frame_equal(got, whole)


def test_the_streamed_file_is_the_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "t.parquet"
    rows = simulate_file("instrumental-learning", "rw", subjects=40, seed=3, output=str(out))
    table = ct.simulate("instrumental-learning", "rw", subjects=40, seed=3)
    assert rows == len(table) == 40 * 96
    pd.testing.assert_frame_equal(read_table(out), table)
    kept = ct.simulate("instrumental-learning", "rw", subjects=40, seed=3, output=str(tmp_path / "k.parquet"))
    pd.testing.assert_frame_equal(kept, table)


def _peak(n: int) -> int:
    chunks = simulate_chunks("instrumental-learning", "rw", n, 1, chunk=50)
    tracemalloc.start()
    rows = sum(len(c) for c in chunks)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert rows == 96 * n
    return peak


def test_memory_does_not_grow_with_the_subjects() -> None:
    simulate("instrumental-learning", "rw", 2, 0)  # compiled once, outside the measurement
    small, large = _peak(200), _peak(1600)
    assert large < 1.5 * small, (small, large)  # 8x the subjects, about the same peak

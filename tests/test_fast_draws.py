"""Session draws and table columns built without numpy's per-draw or Arrow's per-row costs give the
very values (and generator states) of the plain numpy / Arrow calls, so seeded sessions are unchanged."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from cogtestbed.columns import kept_counts, kept_rows, take_strings
from cogtestbed.environments.draws import standard_normal
from cogtestbed.environments.probabilistic import ProbabilisticDesign, ProbabilisticReasoningEnv
from cogtestbed.environments.twostep import TwoStepDesign, TwoStepEnv


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.PCG64DXSM, np.random.Philox,
                                           np.random.SFC64, np.random.MT19937])
def test_standard_normal_is_numpys_stream(bit_generator: type[np.random.BitGenerator]) -> None:
    ours, numpys = np.random.Generator(bit_generator(11)), np.random.Generator(bit_generator(11))
    # 10⁶ draws take the ziggurat's wedge (~0.7 %) and tail (~0.03 %) branches thousands of times
    for shape in [(1000, 1000), (0,), 1, (3, 0, 2), (7, 5, 4), 9]:
        got, expected = standard_normal(ours, shape, compiled=True), numpys.standard_normal(shape)
        assert got.shape == expected.shape and got.dtype == np.float64
        assert got.tobytes() == expected.tobytes()
        assert ours.random() == numpys.random()  # the generator is left exactly where numpy leaves it


def test_standard_normal_many_small_calls_keep_the_stream() -> None:
    ours, numpys = np.random.default_rng(3), np.random.default_rng(3)
    for k in range(400):
        assert standard_normal(ours, k % 5, compiled=k % 2 == 0).tobytes() == numpys.standard_normal(k % 5).tobytes()
    assert ours.bit_generator.state == numpys.bit_generator.state


@pytest.mark.parametrize("vocabulary", [("A", "B", None), ("é", "日本語のテキスト", "", None, "x" * 100),
                                        (None,), ("",), ("exactly sixteen!", "a")])
@pytest.mark.parametrize("n", [0, 1, 17, 2000])
@pytest.mark.parametrize("compiled", [True, False])
def test_take_strings_equals_arrow_take(vocabulary: tuple[str | None, ...], n: int, compiled: bool) -> None:
    codes = np.random.default_rng(n).integers(0, len(vocabulary), n)
    got = take_strings(codes, vocabulary, compiled)
    got.validate(full=True)
    expected = pa.array(list(vocabulary), type=pa.large_string()).take(pa.array(codes, type=pa.int64()))
    assert got.equals(expected) and got.null_count == expected.null_count


@pytest.mark.parametrize("compiled", [True, False])
def test_take_strings_refuses_codes_outside_the_vocabulary(compiled: bool) -> None:
    with pytest.raises(ValueError, match=r"codes must lie in 0\.\.1, got 2"):
        take_strings(np.array([0, 2, 1]), ("a", "b"), compiled)
    with pytest.raises(ValueError, match="got -1"):
        take_strings(np.array([[0], [-1]]), ("a", "b"), compiled)


def _plain_two_step(design: TwoStepDesign, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Two-step sessions drawn with plain numpy (the drift as ``np.clip`` of each trial's step)."""
    probs = np.empty((n, design.n_trials, 4))
    probs[:, 0] = rng.uniform(design.prob_low, design.prob_high, (n, 4))
    steps = rng.normal(0.0, design.drift_sd, (n, design.n_trials - 1, 4))
    for k in range(1, design.n_trials):
        probs[:, k] = np.clip(probs[:, k - 1] + steps[:, k - 1], design.prob_low, design.prob_high)
    return probs, rng.random((n, design.n_trials)), rng.random((n, design.n_trials))


def _plain_urns(design: ProbabilisticDesign, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Probabilistic-reasoning sessions drawn with plain numpy, one array at a time."""
    inf, uninf = np.asarray(design.informative_probs), np.asarray(design.uninformative_probs)
    left_is_f = (rng.random((n, 2)) < 0.5) | (not design.randomise_labels)
    informative = inf[rng.integers(0, len(inf), size=(n, 2))]
    flat = uninf[rng.integers(0, len(uninf), size=(n, 2))]
    lh = np.column_stack([informative[:, 0], flat[:, 1]])
    prior = np.column_stack([flat[:, 0], informative[:, 1]])
    urn_left = rng.random((n, 2)) < prior
    red = rng.random((n, 2)) < np.where(urn_left, lh, 1.0 - lh)
    return left_is_f, prior, lh, urn_left, red


@pytest.mark.parametrize("n", [1, 3, 60_000])
def test_compiled_session_draws_equal_the_plain_numpy_draws(n: int) -> None:
    for design in (TwoStepDesign(), TwoStepDesign(n_days=3, drift_sd=0.3)):
        rng = np.random.default_rng(n)
        s = TwoStepEnv.sample_sessions(design, n, rng)
        expected = _plain_two_step(design, n, np.random.default_rng(n))
        assert all(a.tobytes() == b.tobytes() for a, b in zip((s.probs, s.transition_u, s.reward_u), expected,
                                                               strict=True))
    for urns in (ProbabilisticDesign(), ProbabilisticDesign.paper(), ProbabilisticDesign(randomise_labels=False)):
        u = ProbabilisticReasoningEnv.sample_sessions(urns, n, np.random.default_rng(n))
        got = (u.left_is_f, u.prior, u.lh, u.urn_left, u.red)
        assert all(a.dtype == b.dtype and a.tobytes() == b.tobytes()
                   for a, b in zip(got, _plain_urns(urns, n, np.random.default_rng(n)), strict=True))


@pytest.mark.parametrize("compiled", [True, False])
def test_kept_rows_are_the_true_cells_in_row_order(compiled: bool) -> None:
    keep = np.random.default_rng(5).random((300, 13)) < 0.7
    keep[7] = False
    rows, subject, position = kept_rows(keep, compiled)
    expected = np.flatnonzero(keep.reshape(-1))
    assert rows.tolist() == expected.tolist()
    assert subject.tolist() == (expected // 13).tolist() and position.tolist() == (expected % 13).tolist()
    assert [a.size for a in kept_rows(np.zeros((4, 3), bool), compiled)] == [0, 0, 0]


@pytest.mark.parametrize("compiled", [True, False])
def test_kept_counts_are_the_true_cells_per_row(compiled: bool) -> None:
    keep = np.random.default_rng(6).random((300, 13)) < 0.6
    keep[4] = False
    counts = kept_counts(keep, compiled)
    assert counts.dtype == np.int64 and counts.tolist() == [int(row.sum()) for row in keep]
    assert counts[4] == 0 and kept_counts(np.zeros((0, 3), bool), compiled).size == 0
    with pytest.raises(ValueError, match="mask"):
        kept_counts(np.ones(5, bool), compiled)

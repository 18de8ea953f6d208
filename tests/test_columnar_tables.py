"""Columnar trial tables, the two-step stay regression in one pass, and convergence verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.belief import distribution_json
from cogtestbed.environments.discounting import (
    MAX_QUESTIONS,
    NOT_ASKED,
    QUESTION_CODES,
    DiscountingDesign,
    StaircaseState,
    asked_questions,
    question_list,
)
from cogtestbed.environments.revealed import normalise_logprobs, normalise_logprobs_rows, normalise_logprobs_segments
from cogtestbed.inference.hierarchical import Diagnostics
from cogtestbed.inference.twostep import stay_design, stay_pairs
from cogtestbed.lapse import Lapse, draw_lapses, lapse_rng
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import seed_streams, simulate, subject_params
from cogtestbed.trials import (
    categories,
    coded_lists,
    finish_table,
    list_cells,
    lists,
    masked_action,
    padded_lists,
    read_table,
    strings,
    table_to_parquet,
)


def _table(stimulus: dict[str, object] | None = None, **kw: object) -> pd.DataFrame:
    action = np.array([[0, 1, 1], [1, 0, 1]])
    valid = np.array([[True, False, True], [True, True, True]])
    columns = {**(stimulus or {}), "action": action, "reward": np.ones((2, 3)), "valid": valid}
    return finish_table("x", columns, agent="a", **kw)  # type: ignore[arg-type]


def test_coded_strings_give_the_same_column_as_object_strings() -> None:
    codes = np.array([[0, 2, 1], [1, 1, 2]])
    vocab = ("A", "B", None)
    coded = _table(stimulus={"s": strings(codes, vocab)})
    plain = _table(stimulus={"s": np.array(vocab, dtype=object)[codes]})
    assert coded.equals(plain) and coded["s"].dtype == plain["s"].dtype == "string"
    assert coded["s"].tolist() == ["A", pd.NA, "B", "B", "B", pd.NA]
    with pytest.raises(ValueError, match="codes must lie"):
        strings(codes + 1, vocab)


def test_column_order_masks_and_copies() -> None:
    """session and trial first, raw_response/parse_error after valid, then agent and parameters, then the
    rest; per-subject (n, 1) and per-step (1, T) arrays broadcast; a pandas action is taken as masked;
    the table holds copies of the caller's arrays."""
    reward = np.arange(6.0).reshape(2, 3)
    keep = np.array([[True, True, False], [True, False, False]])
    present = np.array([[True, False, True], [True, True, True]])
    columns = {"stim": reward, "h": np.array([[3], [4]]), "f": np.array([[True, False, False]]),
               "action": masked_action(np.array([[0, 1, 1], [1, 0, 1]]), present), "conf": reward * 10,
               "reward": reward, "valid": np.ones((2, 3), bool), "note": None}
    t = finish_table("x", columns, agent="a", keep=keep, params={"p": np.array([1.0, 2.0])})
    assert list(t.columns) == ["experiment", "subject", "session", "trial", "stim", "h", "f", "action", "conf",
                               "reward", "valid", "raw_response", "parse_error", "agent", "param_p", "note"]
    assert t["trial"].tolist() == [0, 1, 0] and t["subject"].tolist() == [0, 0, 1]
    assert t["h"].tolist() == [3, 3, 4] and t["f"].tolist() == [True, False, True]
    assert t["action"].isna().tolist() == [False, True, False] and t["param_p"].tolist() == [1.0, 1.0, 2.0]
    assert t["note"].isna().all() and t["note"].dtype == "string"
    whole = finish_table("x", {"stim": reward, "action": np.zeros((2, 3), int), "reward": reward,
                               "valid": np.ones((2, 3), bool)}, agent="a")
    reward[0, 0] = 99.0  # the table holds its own copies
    assert whole["reward"].iloc[0] == 0.0 and whole["stim"].iloc[0] == 0.0
    with pytest.raises(ValueError, match="action, reward and valid"):
        finish_table("x", {"action": reward}, agent="a")


def test_float_action_masks_invalid_and_nan() -> None:
    t = finish_table("x", {"action": np.array([[0.5, np.nan, 0.2]]), "reward": np.zeros((1, 3)),
                           "valid": np.array([[True, True, False]])}, agent="a")
    assert t["action"].dtype == "Float64" and t["action"].isna().tolist() == [False, True, True]


def test_distribution_json_is_json_dumps() -> None:
    states = ("low", 'say "hi"', "%d")
    rng = np.random.default_rng(0)
    probs = np.vstack([rng.dirichlet(np.ones(3), 50), [[1e-7, 0.5, 1e20]], [[np.nan, 0.5, np.inf]]])
    expected = [json.dumps(dict(zip(states, map(float, row), strict=True))) for row in probs]
    assert distribution_json(states, probs).tolist() == expected


def test_discounting_question_replay_matches_the_staircase() -> None:
    design = DiscountingDesign()
    questions = question_list(design)
    rng = np.random.default_rng(1)
    action = rng.integers(0, 2, (300, 13))
    valid = rng.random((300, 13)) > 0.03
    codes = asked_questions(action, valid, np.ones((300, 13), bool))
    for i in range(300):
        state = StaircaseState()
        for s in range(13):
            if state.done:
                assert codes[i, s] == NOT_ASKED
                break
            assert questions[codes[i, s]] == state.question(design)
            if not valid[i, s]:
                break
            state.answer(int(action[i, s]))


@pytest.mark.parametrize("agent", ["hyperbolic", "random"])
def test_discounting_kernel_records_the_questions_the_replay_finds(agent: str) -> None:
    spec = get_experiment("temporal-discounting")
    agent_cls, design, n = spec.agent(agent), DiscountingDesign(), 400
    params = subject_params(agent_cls, None, n)
    env_rng, agent_rng = seed_streams(4)
    sessions = spec.env_cls.sample_sessions(design, n, env_rng)
    uniforms = agent_rng.random((n, MAX_QUESTIONS))
    draws = draw_lapses(Lapse(invalid=0.05, random=0.2), lapse_rng(4), n, MAX_QUESTIONS, spec.env_cls.lapse_draws)
    for outcomes in (agent_cls.simulate_batch(design, sessions, params, uniforms),
                     agent_cls.simulate_batch_lapsed(design, sessions, params, uniforms, draws)):
        assert outcomes is not None
        replayed = asked_questions(outcomes.action, outcomes.valid, outcomes.played)
        assert np.array_equal(outcomes.extra[QUESTION_CODES], replayed)
        without = Outcomes(outcomes.action, outcomes.reward, outcomes.valid, played=outcomes.played)
        assert spec.env_cls.trials_table(design, sessions, without, agent=agent).equals(
            spec.env_cls.trials_table(design, sessions, outcomes, agent=agent))


def test_row_normalisation_matches_the_single_row_function() -> None:
    rng = np.random.default_rng(2)
    lp = np.log(rng.dirichlet(np.ones(5), 400)) - rng.random((400, 1))
    lp[::7, 1] = np.nan
    lp[::11] = -np.inf
    expected = np.array([normalise_logprobs(row) for row in lp])
    assert normalise_logprobs_rows(lp).tobytes() == expected.tobytes()


def _stay_design_per_run(trials: pd.DataFrame, valid_only: bool) -> tuple[np.ndarray, np.ndarray]:
    """The stay design run by run (CogBench's loop), the reference of the one-pass version."""
    xs, ys = [], []
    for _, df in trials.groupby("subject", sort=False):
        df = df.sort_values(["session", "trial"], kind="stable")
        a1 = pd.to_numeric(df["action"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        planet = df["planet"].to_numpy(dtype=np.float64)
        planet = np.where(planet < 0, np.nan, planet)
        r = df["reward"].to_numpy(dtype=np.float64)
        keep = ~np.isnan(r[:-1])
        if valid_only:
            v = df["valid"].to_numpy(dtype=bool)
            keep &= v[:-1] & v[1:]
        rc = np.where(r[:-1] == 0, -1.0, r[:-1])[keep]
        cc = np.where(a1[:-1] == planet[:-1], 1.0, -1.0)[keep]
        xs.append(np.column_stack([np.ones(rc.size), rc, cc, rc * cc]))
        ys.append((a1[1:] == a1[:-1]).astype(np.float64)[keep])
    return np.concatenate(xs), np.concatenate(ys)


@pytest.mark.parametrize("valid_only", [False, True])
def test_stay_design_in_one_pass_matches_the_run_loop(valid_only: bool) -> None:
    trials = simulate("two-step", "hybrid", 12, 3).sample(frac=1.0, random_state=0)
    trials.loc[trials.index[::17], "valid"] = False
    x, y = stay_design(trials, valid_only)
    ref_x, ref_y = _stay_design_per_run(trials, valid_only)
    assert x.tobytes() == ref_x.tobytes() and y.tobytes() == ref_y.tobytes()
    assert len(stay_pairs(trials)[2]) == len(stay_design(trials)[1])


def _diag(tail: float, div: int = 0) -> Diagnostics:
    return Diagnostics(max_rhat=1.004, min_ess_bulk=900.0, min_ess_tail=tail, divergences=div, n_chains=4,
                       n_draws=1000, seconds=1.0, sampler="pymc", table=pd.DataFrame())


def test_convergence_verdict_checks_tail_ess() -> None:
    assert _diag(812.0).ok and _diag(812.0).verdict == "converged"
    low_tail = _diag(345.0)
    assert not low_tail.ok and low_tail.verdict == "NOT converged: min tail ESS 345 < 400"
    assert "tail ESS 345 (>= 400)" in low_tail.report()
    assert low_tail.report().endswith("NOT converged: min tail ESS 345 < 400")
    assert low_tail.as_dict()["converged"] is False and low_tail.columns()["min_ess_tail"] == 345.0
    assert "2 divergent transitions" in _diag(812.0, 2).verdict


def test_list_columns_are_arrow_lists_that_read_back_from_parquet(tmp_path: Path) -> None:
    offsets = np.array([0, 2, 2, 5, 6, 9, 10])
    t = _table(stimulus={"x": lists(np.arange(10.0), offsets),
                         "labels": coded_lists(np.array([[0, 1, 2], [2, 1, 0]]), (("a", "bc"), (), ("Left",)))})
    assert str(t["x"].dtype) == "list<item: double>[pyarrow]"
    assert str(t["labels"].dtype) == "list<item: string>[pyarrow]"
    assert t["x"].iloc[2] == [2.0, 3.0, 4.0] and t["labels"].iloc[0] == ["a", "bc"] and t["labels"].iloc[1] == []
    assert list_cells(t["labels"]) == [["a", "bc"], [], ["Left"], ["Left"], [], ["a", "bc"]]
    assert list_cells(t["x"].iloc[3:5]) == [[5.0], [6.0, 7.0, 8.0]]
    path = tmp_path / "t.parquet"
    table_to_parquet(t, path)
    pd.testing.assert_frame_equal(read_table(path), t)
    plain = pd.read_parquet(path)  # without cogtestbed's reader: object columns of arrays, as lists always read
    assert plain["x"].dtype == object and list(plain["x"].iloc[2]) == [2.0, 3.0, 4.0]
    assert list(plain["labels"].iloc[0]) == ["a", "bc"] and len(plain["labels"].iloc[1]) == 0
    kept = finish_table("x", {"x": lists(np.arange(10.0), offsets), "action": np.zeros((2, 3), int),
                              "reward": np.ones((2, 3)), "valid": np.ones((2, 3), bool)},
                        agent="a", keep=np.array([[False, True, True], [False, False, True]]))
    assert list_cells(kept["x"]) == [[], [2.0, 3.0, 4.0], [9.0]]
    with pytest.raises(ValueError, match="offsets must rise"):
        lists(np.arange(3.0), np.array([0, 1, 1, 1, 1, 1, 2]))
    with pytest.raises(ValueError, match="list codes must lie"):
        coded_lists(np.full((2, 3), 3), ((1.0,), (), (2.0,)))


def test_lists_from_padded_rows_and_segment_normalisation() -> None:
    padded = np.arange(12.0).reshape(4, 3)
    values, offsets = padded_lists(padded, np.array([3, 0, 1, 2]))
    assert values.tolist() == [0.0, 1.0, 2.0, 6.0, 9.0, 10.0] and offsets.tolist() == [0, 3, 3, 4, 6]
    rng = np.random.default_rng(3)
    k = rng.integers(2, 12, 300)
    lp = np.log(rng.random((300, 12)))
    lp[::9, 0] = np.nan
    lp[::13] = -np.inf
    values, offsets = padded_lists(lp, k)
    got = normalise_logprobs_segments(values, offsets)
    expected = np.concatenate([normalise_logprobs(row[:kk]) for row, kk in zip(lp, k, strict=True)])
    assert got.tobytes() == expected.tobytes()


def test_coded_categories_give_a_category_column_of_the_vocabulary(tmp_path: Path) -> None:
    codes = np.array([[0, 2, 1], [3, 1, 2]])
    vocab = ("B", "A", None, "B")  # a repeated entry and a missing one
    keep = np.array([[True, True, True], [True, True, False]])
    t = _table(stimulus={"s": categories(codes, vocab)}, keep=keep)
    assert isinstance(t["s"].dtype, pd.CategoricalDtype) and list(t["s"].cat.categories) == ["A", "B"]
    assert t["s"].astype(object).where(t["s"].notna(), None).tolist() == ["B", None, "A", "B", "A"]
    assert t["s"].cat.codes.dtype == np.int8
    table_to_parquet(t, tmp_path / "t.parquet")
    back = read_table(tmp_path / "t.parquet")
    assert back["s"].astype("string").equals(t["s"].astype("string"))


def test_kept_rows_given_flat_equal_the_rectangular_arrays() -> None:
    """Outcome and stimulus columns given as the kept rows only build the same table."""
    keep = np.array([[True, True, False], [True, False, False]])
    action = np.array([[0, 1, 1], [1, 0, 1]])
    reward = np.arange(6.0).reshape(2, 3)
    valid = np.array([[True, False, True], [True, True, True]])
    params = {"p": np.array([0.5, 2.0])}
    per_subject = np.array([[3], [4]])
    whole = finish_table("x", {"s": reward * 2, "h": per_subject, "action": action, "reward": reward,
                               "valid": valid}, agent="a", keep=keep, params=params)
    kept = finish_table("x", {"s": (reward * 2)[keep], "h": per_subject, "action": action[keep],
                              "reward": reward[keep], "valid": valid[keep]}, agent="a", keep=keep, params=params)
    pd.testing.assert_frame_equal(whole, kept, check_exact=True)
    assert whole["h"].tolist() == [3, 3, 4] and whole["param_p"].tolist() == [0.5, 0.5, 2.0]
    assert whole["action"].tolist() == [0, pd.NA, 1]


@pytest.mark.parametrize("lengths", [[3, 1, 0, 2], [3, 3, 3, 3], [0, 0, 0, 0]])
def test_kept_lengths_keep_the_rows_of_the_mask_they_stand_for(lengths: list[int]) -> None:
    """``keep`` as each subject's number of first steps builds the table the prefix mask builds, every kind
    of column included (rectangular, per step, per subject, text, flat kept rows, parameters)."""
    mask = np.arange(3)[None, :] < np.array(lengths)[:, None]
    rng = np.random.default_rng(0)
    action, reward = rng.integers(0, 2, size=(4, 3)), rng.normal(size=(4, 3))
    valid = rng.random((4, 3)) < 0.7
    text = np.array([[f"{i}-{t}" for t in range(3)] for i in range(4)], dtype=object)

    def table(keep: np.ndarray, flat: np.ndarray) -> pd.DataFrame:
        columns = {"s": reward * 2, "f": np.array([[True, False, False]]), "h": (np.arange(4) + 5)[:, None],
                   "k": flat.copy(), "action": action, "reward": reward, "valid": valid, "raw_response": text}
        return finish_table("x", columns, agent="a", keep=keep, params={"p": np.arange(4.0)})

    flat = reward[mask] * 3
    by_mask, by_lengths = table(mask, flat), table(np.array(lengths), flat)
    pd.testing.assert_frame_equal(by_lengths, by_mask, check_exact=True)
    assert len(by_lengths) == sum(lengths)
    assert by_lengths["raw_response"].tolist() == text[mask].tolist()

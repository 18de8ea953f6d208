"""Subjects made of sessions: ``simulate(..., sessions=K)`` and ``--sessions K``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.errors import InputError


def test_each_subject_plays_k_sessions_with_one_parameter_set():
    temps = [3.0, 6.0, 9.0]
    table = ct.simulate("horizon", "info-bonus", subjects=3, seed=1, sessions=4,
                        params={"temperature_h6": temps})
    assert table.groupby("subject")["session"].apply(lambda s: sorted(s.unique())).tolist() == [[0, 1, 2, 3]] * 3
    per_subject = table.groupby("subject")["param_temperature_h6"].agg(["min", "max"])
    np.testing.assert_array_equal(per_subject["min"].to_numpy(), temps)
    np.testing.assert_array_equal(per_subject["max"].to_numpy(), temps)
    fits = ct.fit("horizon", table, "info-bonus")
    assert len(fits) == 3 and fits["n_sessions"].tolist() == [4, 4, 4]


def test_one_session_is_the_plain_simulation():
    a = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=4)
    b = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=4, sessions=1)
    pd.testing.assert_frame_equal(a, b)


def test_sessions_with_forms_is_refused():
    with pytest.raises(InputError, match="`sessions` above 1 with `forms`"):
        ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=4, sessions=2, forms="0,1")

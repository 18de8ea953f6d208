"""The trial table of probabilistic reasoning (Dasgupta et al. 2020; CogBench): the experiment's name,
the schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`), the Bayes
posterior and the table builder the environment shares with the CogBench importer.

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.interpreted import kernel
from cogtestbed.schema import RowRule, TrialSchema, Values
from cogtestbed.trials import Column, finish_table, strings

EXPERIMENT = "probabilistic-reasoning"
TRIAL_TYPES = ("likelihood", "prior")
#: The largest finite double (``np.nan_to_num``'s stand-in for infinity).
_MAX_DOUBLE = float(np.finfo(np.float64).max)

#: The estimate in hundredths (0–100) and as a probability; reward = posterior accuracy in [0, 1].
SCHEMA = TrialSchema(
    action=Values("number", low=0.0, high=100.0),
    reward=Values("float", low=0.0, high=1.0),
    stimulus={"estimate": Values("float", low=0.0, high=1.0), "prior": Values("float", low=0.0, high=1.0),
              "lh": Values("float", low=0.0, high=1.0), "red_observation": Values("bool", nullable=False)},
    rules=(RowRule("a valid answer has an estimate", ("estimate",), lambda t: t["estimate"].notna()),),
)


def bayes_posterior(prior: np.ndarray | float, likelihood: np.ndarray | float) -> np.ndarray:
    """P(left | ball) = p·l / (p·l + (1−p)(1−l)), l = P(observed colour | left) (Bayes' rule; Dasgupta et al. 2020)."""
    p = np.asarray(prior, dtype=np.float64)
    lik = np.asarray(likelihood, dtype=np.float64)
    return p * lik / (p * lik + (1.0 - p) * (1.0 - lik))


@njit(cache=True)
def _judgement_columns(prior: np.ndarray, lh: np.ndarray, red: np.ndarray, informative_lh: np.ndarray,
                       left_is_f: np.ndarray, estimate: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, ...]:
    """The derived per-judgement columns from flat inputs, in one pass: likelihood P(observed colour |
    left urn), the Bayes posterior (:func:`bayes_posterior`, the same operations), the estimate in
    hundredths rounded half to even (0 where invalid), the posterior accuracy 1 − |posterior −
    estimate| (NaN where invalid), the trial-type code (0 likelihood, 1 prior) and the left-label
    code (0 F, 1 J; 2 = none where ``left_is_f`` is empty)."""
    n = prior.size
    likelihood, posterior, reward = np.empty(n), np.empty(n), np.empty(n)
    action, trial_type, label = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    for i in range(n):
        p = prior[i]
        lik = lh[i] if red[i] else 1.0 - lh[i]
        post = p * lik / (p * lik + (1.0 - p) * (1.0 - lik))
        likelihood[i], posterior[i] = lik, post
        e = estimate[i]
        if valid[i]:
            # np.nan_to_num: NaN -> 0, ±inf -> the largest finite double of that sign
            e0 = 0.0 if np.isnan(e) else min(max(e, -_MAX_DOUBLE), _MAX_DOUBLE)
            action[i] = np.int64(np.rint(e0 * 100))
            reward[i] = 1.0 - abs(post - e)
        else:
            action[i], reward[i] = 0, np.nan
        trial_type[i] = 0 if informative_lh[i] else 1
        label[i] = 2 if left_is_f.size == 0 else (0 if left_is_f[i] else 1)
    return likelihood, posterior, action, reward, trial_type, label


def stimulus_table(
    prior: np.ndarray, lh: np.ndarray, red: np.ndarray, informative_lh: np.ndarray,
    left_is_f: np.ndarray | None, estimate: np.ndarray, valid: np.ndarray, *, agent: str,
    urn_left: np.ndarray | None = None, raw_response: np.ndarray | None = None,
    parse_error: np.ndarray | None = None, params: dict[str, np.ndarray] | None = None,
    human_lh: bool = False,
) -> pd.DataFrame:
    """Trial table from (n_subjects, n_trials) arrays (shared by the environment and importer)."""
    shape = np.shape(prior)

    def flat(x: Any, dtype: Any) -> np.ndarray:  # a kernel input: no copy where none is needed
        return np.ascontiguousarray(np.broadcast_to(x, shape), dtype=dtype).reshape(-1)

    def full(x: Any, dtype: Any) -> np.ndarray:
        return np.asarray(np.broadcast_to(x, shape), dtype=dtype)

    valid_flat = flat(valid, bool)
    likelihood, posterior, action, reward, trial_type, label = kernel(_judgement_columns)(
        flat(prior, np.float64), flat(lh, np.float64), flat(red, bool), flat(informative_lh, bool),
        np.empty(0, dtype=bool) if left_is_f is None else flat(left_is_f, bool),
        flat(estimate, np.float64), valid_flat)

    stimulus: dict[str, Column] = {
        "trial_type": strings(trial_type, TRIAL_TYPES),
        "informative_lh": full(informative_lh, bool),
        "left_label": strings(label, ("F", "J", None)),
        "prior": prior,
        "lh": lh,
        "red_observation": np.asarray(red, dtype=bool),
        "likelihood": likelihood,
        "posterior": posterior,
        "urn_left": full(np.nan if urn_left is None else urn_left, np.float64),
        "estimate": estimate,
        "cogbench_human_lh": full(human_lh, bool),
        "action": action.reshape(shape), "reward": reward, "valid": valid_flat,
        "raw_response": raw_response, "parse_error": parse_error,
    }
    return finish_table(EXPERIMENT, stimulus, agent=agent, params=params)

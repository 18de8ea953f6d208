"""The trial table of the horizon task (Wilson et al. 2014; CogBench): the experiment's name, the
schema its environment declares (:class:`~cogtestbed.schema.TrialSchema`) and the table builder
the environment shares with the CogBench importer.

Kept apart from the environment so that reading, checking and analysing a table imports no
environment (gymnasium, pydantic designs, prompts); the environment re-exports these names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cogtestbed.schema import REWARDED, TrialSchema, Values
from cogtestbed.trials import finish_table

EXPERIMENT = "horizon"

#: Arm 0/1; rewards are whole numbers of points (rounded Gaussian draws).
SCHEMA = TrialSchema(
    action=Values("int", allowed=(0, 1)),
    reward=Values("float", integral=True),
    stimulus={"horizon": Values("int", low=1, nullable=False), "forced": Values("bool", nullable=False),
              "unequal": Values("bool", nullable=False), "mean0": Values("float"), "mean1": Values("float"),
              "reward0": Values("float", integral=True), "reward1": Values("float", integral=True)},
    rules=(REWARDED,),
)


def game_table(
    horizon: np.ndarray, unequal: np.ndarray, means: np.ndarray, rewards: np.ndarray | tuple[np.ndarray, np.ndarray],
    action: np.ndarray, reward: np.ndarray, valid: np.ndarray, exists: np.ndarray, n_forced: int,
    *, agent: str, raw_response: np.ndarray | None = None, parse_error: np.ndarray | None = None,
    params: dict[str, np.ndarray] | None = None, kept_trial: np.ndarray | None = None,
    kept_forced: np.ndarray | None = None,
) -> pd.DataFrame:
    """Trial table from rectangular (n_games, max_trials) arrays, keeping rows where ``exists`` (a mask,
    or how many first trials each game has: see :func:`~cogtestbed.trials.finish_table`).

    ``rewards``: both arms' rewards, (n_games, ≥ max_trials, 2); or a pair of flat arrays of the
    kept rows (arm 0, arm 1), as ``action``, ``reward`` and ``valid`` may be; ``kept_trial`` /
    ``kept_forced``: the kept rows' trial positions and forced flags, where already built (default:
    from the positions of a mask)."""
    if isinstance(rewards, tuple):
        arms = rewards
    else:
        t_max = exists.shape[1]
        arms = (rewards[:, :t_max, 0], rewards[:, :t_max, 1])
    columns = {
        **({} if kept_trial is None else {"trial": kept_trial}),
        "horizon": np.asarray(horizon, dtype=np.int64)[:, None],
        "unequal": np.asarray(unequal, dtype=bool)[:, None],
        "forced": (np.arange(exists.shape[1]) < n_forced)[None, :] if kept_forced is None else kept_forced,
        "mean0": np.asarray(means[:, 0], dtype=np.float64)[:, None],
        "mean1": np.asarray(means[:, 1], dtype=np.float64)[:, None],
        "reward0": arms[0],
        "reward1": arms[1],
        "action": action, "reward": reward, "valid": valid, "raw_response": raw_response, "parse_error": parse_error,
    }
    return finish_table(EXPERIMENT, columns, agent=agent, params=params, keep=exists)

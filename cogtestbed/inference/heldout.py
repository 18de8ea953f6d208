"""Held-out per-choice negative log-likelihood of a cognitive model.

Centaur's comparison (Binz et al. 2025) scores each model on participants it was not fitted to.
Here a cognitive model is fitted by maximum likelihood **pooled** over the training participants
(one parameter vector for all of them, as a language model is one model for everyone; values still
reset at each participant and session) and scored on each held-out participant at that vector:
``nll / n_choices``, the per-choice negative log-likelihood, in nats.  Pooling is this package's
default, not a detail taken from the paper.  The split is seeded and independent of row order
(:func:`heldout_split`).  :func:`paired_comparison` sets two per-participant scores side by side
(mean difference with a t interval over participants, and a verdict).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.inference.base import CognitiveModel, MLEResult

POOLED = "pooled"


def heldout_split(subjects: Sequence[Hashable], n_test: int, seed: int) -> tuple[list[Hashable], list[Hashable]]:
    """(training, held-out) subjects: ``n_test`` drawn without replacement by a seeded generator
    from the subjects sorted by their text (so the split does not depend on row order)."""
    ordered = sorted(set(subjects), key=str)
    if not 0 < n_test < len(ordered):
        raise InputError(f"the held-out size must be between 1 and {len(ordered) - 1} (subjects - 1), got {n_test}")
    pick = set(np.random.default_rng(seed).choice(len(ordered), size=n_test, replace=False).tolist())
    return ([s for i, s in enumerate(ordered) if i not in pick], [s for i, s in enumerate(ordered) if i in pick])


def pooled_fit(model: CognitiveModel, trials: pd.DataFrame, n_starts: int | None = None) -> MLEResult:
    """One maximum-likelihood parameter vector for every subject of ``trials`` (each subject's
    sessions stay separate sessions: the model's values reset as in a per-subject fit)."""
    pooled = trials.assign(session=trials["subject"].astype(str) + "/" + trials["session"].astype(str),
                           subject=POOLED)
    return model.fit_subject(model.subject_data(pooled)[POOLED], n_starts=n_starts)


def subject_nll(model: CognitiveModel, params: dict[str, float], trials: pd.DataFrame) -> pd.DataFrame:
    """Per subject of ``trials``: NLL at ``params``, choices scored and the per-choice NLL."""
    theta = np.array([params[n] for n in model.parameters.names], dtype=float)
    rows = []
    for key, data in model.subject_data(trials).items():
        n = model.n_observations(data)
        nll = model.nll(theta, data) if n else math.nan
        rows.append({"subject": key, "nll": nll, "n_choices": n, "nll_per_choice": nll / n if n else math.nan})
    return pd.DataFrame(rows).sort_values("subject", key=lambda s: s.astype(str), kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class HeldOut:
    """A pooled fit on the training subjects and its per-choice NLL on each held-out subject.

    Attributes
    ----------
    model : str
        The model fitted.
    params : dict
        The pooled MLE on the training subjects.
    train, test : list
        The training and held-out subjects.
    table : pandas.DataFrame
        Each held-out subject's ``nll``, ``n_choices`` and ``nll_per_choice``.
    converged : bool
        Whether the pooled fit converged.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> held = ct.heldout_nll("instrumental-learning", trials, model="rw-pm", test=1, seed=0)
    >>> held.model, sorted(held.params), int(held.table["n_choices"].sum())
    ('rw-pm', ['alpha_neg', 'alpha_pos', 'beta'], 96)
    """

    model: str
    params: dict[str, float]
    train: list[Hashable]
    test: list[Hashable]
    table: pd.DataFrame
    converged: bool

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "params": self.params, "n_train": len(self.train),
                "test": [str(s) for s in self.test], "converged": self.converged,
                "nll_per_choice": dict(zip(self.table["subject"].astype(str), self.table["nll_per_choice"],
                                           strict=True))}


def heldout_nll(model: CognitiveModel, trials: pd.DataFrame, test: Sequence[Hashable],
                n_starts: int | None = None) -> HeldOut:
    """Fit ``model`` pooled on every subject of ``trials`` not in ``test``; score each of ``test``."""
    subjects = set(trials["subject"])
    missing = [s for s in test if s not in subjects]
    if missing:
        raise InputError(f"held-out subject(s) not in the table: {', '.join(map(str, missing[:5]))}")
    held = set(test)
    train_rows = trials[~trials["subject"].isin(held)]
    if train_rows.empty:
        raise InputError("no training subject left: the held-out set holds every subject")
    fit = pooled_fit(model, train_rows, n_starts=n_starts)
    table = subject_nll(model, fit.params, trials[trials["subject"].isin(held)])
    return HeldOut(model.name, fit.params, sorted(set(train_rows["subject"]), key=str), sorted(held, key=str),
                   table, fit.converged)


def paired_comparison(a: pd.Series, b: pd.Series, level: float = 0.95) -> dict[str, Any]:
    """``a − b`` over the participants both score (index: participant): mean with a t interval
    at ``level``, and the verdict ``"a lower"`` / ``"b lower"`` / ``"undecided"`` (interval
    excluding 0).  Fewer than two participants: no interval (None, with the reason)."""
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna()
    d = (both["a"] - both["b"]).to_numpy(dtype=float)
    out: dict[str, Any] = {"n": int(d.size), "mean_difference": float(d.mean()) if d.size else None}
    if d.size < 2:
        return {**out, "interval": None, "verdict": None, "reason": "fewer than two participants scored by both"}
    from scipy import stats

    half = float(stats.t.ppf(0.5 + level / 2, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
    lo, hi = float(d.mean()) - half, float(d.mean()) + half
    verdict = "a lower" if hi < 0 else "b lower" if lo > 0 else "undecided"
    return {**out, "interval": [lo, hi], "level": level, "verdict": verdict}

"""Adaptive belief coherence: the design space of the MNL decider's queries and the
metrics an adaptive table refuses.

**Design space.**  A query is the p* bin the next context is drawn from
(:mod:`cogtestbed.environments.belief_adaptive`): the candidates are the design's non-empty bins,
each with the belief its question is expected to elicit
(:data:`~cogtestbed.environments.belief_adaptive.BIN_BELIEF`), the ``p`` field of the MNL kernel
(Yamin et al. 2026, Eq. 3; :class:`~cogtestbed.inference.belief_models.MNLModel`); answers No, Yes,
Defer.  The posterior reads the decisions at the context's mean π0 report, as the model's fit does
(:func:`~cogtestbed.inference.belief_models.decision_data`), through
:meth:`~cogtestbed.inference.adaptive.AdaptiveDesigner.observe`.

The MNL has four parameters: its grid has :data:`~cogtestbed.inference.adaptive.GRID_POINTS` [4]
nodes per parameter.  The loss-form decider is not the adaptive model (its four parameters are
strongly correlated in the posterior, |ρ| ≈ 0.8-0.9: a coarse grid cannot hold them).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.inference.adaptive import ADAPTIVE_COLUMN, DesignSpace, is_adaptive_table, refusing_adaptive
from cogtestbed.inference.belief_models import DECISION_CODES

#: The model whose posterior chooses the queries.
ADAPTIVE_MODEL = "mnl"


def adaptive_space(design: Any) -> DesignSpace:
    """The MNL kernel's ``p`` (each non-empty p* bin's expected belief) and ``n`` = 1 of the candidate
    queries; answers No (0), Yes (1), Defer (2)."""
    from cogtestbed.environments.belief import ground_truth
    from cogtestbed.environments.belief_adaptive import adaptive_bins

    _, belief = adaptive_bins(ground_truth(design), design.n_bins)
    key = f"belief-coherence/{hashlib.sha1(belief.tobytes()).hexdigest()[:16]}"
    return DesignSpace(key, {"p": belief, "n": np.ones(belief.size)}, (0, 1, 2))


#: Why the coherence metrics are refused for an adaptive table.
REFUSAL = ("belief-coherence metrics refused: the tests T1-T4 and the accuracy read the instrument's contexts "
           "stratified over the p* bins (Yamin et al. 2026, App. C; their size is validated on that design), and "
           "this table's contexts were chosen adaptively from the answers; fit the decision model "
           "instead (cogtestbed fit mnl TABLE -o DIR)")


#: ``metrics`` (or a test) refusing an adaptive table in one line (:data:`REFUSAL`).
fixed_design_only = refusing_adaptive(REFUSAL)


def observations(table: pd.DataFrame) -> list[list[tuple[int, dict[str, np.ndarray]]]]:
    """Per subject (sorted), per context in the order asked: (design index, the MNL kernel's fields
    a, p, n): the valid decisions at the context's mean valid π0 report (a context without either
    teaches nothing), what either arm's posterior reads."""
    phase, variant = table["phase"].astype(str).to_numpy(), table["variant"].astype(str).to_numpy()
    valid = table["valid"].to_numpy(bool)
    keys = ["subject", "context_id"]
    pi0 = table.loc[valid & (phase == "belief") & (variant == "pi0"), [*keys, "p_elicited"]]
    mean_p = pi0.groupby(keys)["p_elicited"].mean().clip(0.0, 1.0).rename("p")
    columns = [*keys, "decision"] + ([ADAPTIVE_COLUMN] if ADAPTIVE_COLUMN in table else [])
    # merge, not join: a join of an empty frame on two keys returns them as index levels too (pandas), so
    # a table without a valid decision (an LLM that never answers the decision's two lines) broke the sort
    dec = table.loc[valid & (phase == "decision"), columns].merge(mean_p.reset_index(), on=keys, how="inner")
    dec["a"] = dec["decision"].astype(str).map(DECISION_CODES).astype(np.int64)
    dec["d"] = dec[ADAPTIVE_COLUMN].astype(np.int64) if ADAPTIVE_COLUMN in dec else -1
    out: dict[Any, list[tuple[int, dict[str, np.ndarray]]]] = {s: [] for s in sorted(table["subject"].unique())}
    for (subject, _), g in dec.sort_values(keys, kind="stable").groupby(keys, sort=True):
        a = g["a"].to_numpy()
        out[subject].append((int(g["d"].iloc[0]), {"a": a, "p": g["p"].to_numpy(np.float64),
                                                   "n": np.ones(a.size)}))
    return list(out.values())


__all__ = ["ADAPTIVE_MODEL", "REFUSAL", "adaptive_space", "fixed_design_only", "is_adaptive_table", "observations"]

"""Adaptive magnitude estimation: the design space of the static-Bayes observer and the
metrics an adaptive table refuses.

**Design space.**  A trial's design is the stimulus's position u = (x − a)/W in the block's range
[a, a + W] (:data:`~cogtestbed.environments.magnitude.ADAPTIVE_STIMULI`: 11 positions, ends
included).  The static-Bayes observer (Ma, Wang & Fountas 2025, Sec. 3.2, model 2) answers
v = (1 − w_prior)·u + w_prior·μ_p + σ_dec·z on the same normalised scale, so one table of
likelihoods serves every task and range.

**Continuous answers.**  The expected information gain is computed over the answer read to bins of
:data:`ANSWER_BIN` of the session width on :data:`ANSWER_RANGE` (the kernel's density at each bin
centre, normalised over the bins: the midpoint rule); by the data-processing inequality this is a
lower bound of the information of the exact answer, reached as the bins narrow.  The posterior is
updated with the kernel's density at the exact answer (``DesignSpace.continuous``), so the bins only
steer the choice, never the estimate.

The Kalman observer cannot choose adaptively on this grid (its answer depends on every earlier
stimulus through the filter, so a trial's likelihood is not a function of its own design); the
linear observer is a reparameterisation of the static-Bayes one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.inference.adaptive import ADAPTIVE_COLUMN, DesignSpace, is_adaptive_table, refusing_adaptive

#: [gap] Width of the answer bins of the expected information, a fraction of the session width W
#: (ours; the paper parses answers to the task's precision, 0.01 of the unit tasks' 0.4-wide ranges).
ANSWER_BIN = 0.04
#: [gap] Normalised answers the bins cover: a valid unit-task answer in a 0.4-wide range lies within
#: [−0.1/0.4, 1.05/0.4]; [−0.5, 1.5] holds the answers of all but the noisiest prior nodes.
ANSWER_RANGE = (-0.5, 1.5)
#: The model whose posterior chooses the stimuli.
ADAPTIVE_MODEL = "static-bayes"


def answer_bins() -> tuple[float, ...]:
    """Centres of the answer bins (:data:`ANSWER_BIN` apart over :data:`ANSWER_RANGE`)."""
    lo, hi = ANSWER_RANGE
    n = int(round((hi - lo) / ANSWER_BIN)) + 1
    return tuple(float(v) for v in np.linspace(lo, hi, n))


def adaptive_space(design: Any) -> DesignSpace:
    """The static-Bayes kernel's ``u`` (and ``log_w`` = 0: the normalised scale) of the adaptive
    stimuli; answers: the bins' centres (module docstring)."""
    from cogtestbed.environments.magnitude import ADAPTIVE_STIMULI

    u = np.asarray(ADAPTIVE_STIMULI, dtype=np.float64)
    key = f"magnitude/u{u.size}/bin{ANSWER_BIN:g}/{ANSWER_RANGE[0]:g}:{ANSWER_RANGE[1]:g}"
    return DesignSpace(key, {"u": u, "log_w": np.zeros(u.size)}, answer_bins(), continuous=True)


#: Why the BayesBench metrics are refused for an adaptive table.
REFUSAL = ("magnitude metrics refused: NRMSE (against the session midpoint), w_prior and BCS per session, the "
           "cue-combination fits and RRE (the same stimuli in every modality), and the BayesBench score assume the "
           "instrument's stimuli drawn uniformly over each range and shared by the blocks, and this table's stimuli "
           "were chosen adaptively; fit the static-Bayes model instead "
           "(cogtestbed fit static-bayes TABLE -o DIR)")


#: ``metrics`` refusing an adaptive table in one line (:data:`REFUSAL`).
fixed_design_only = refusing_adaptive(REFUSAL)


def observations(table: pd.DataFrame) -> list[list[tuple[int, dict[str, np.ndarray]]]]:
    """Per subject (sorted), per valid trial in time order: (design index, the static-Bayes kernel's
    fields v, u, log_w on the normalised scale): what the posterior of either arm of the comparison
    reads (a fixed table's design index is −1)."""
    out = []
    design = table[ADAPTIVE_COLUMN] if ADAPTIVE_COLUMN in table else pd.Series(-1, index=table.index)
    frame = table.assign(_d=design.to_numpy())
    for _, g in frame.sort_values(["subject", "session", "trial"], kind="stable").groupby("subject", sort=True):
        lo, hi = g["range_low"].to_numpy(np.float64), g["range_high"].to_numpy(np.float64)
        y = g["action"].to_numpy(np.float64, na_value=np.nan)
        ok = g["valid"].to_numpy(bool) & np.isfinite(y)
        u, v = (g["x"].to_numpy(np.float64) - lo) / (hi - lo), (y - lo) / (hi - lo)
        rows = [(int(d), {"v": v[i:i + 1], "u": u[i:i + 1], "log_w": np.log(hi - lo)[i:i + 1]})
                for i, d in enumerate(g["_d"].to_numpy(np.int64)) if ok[i]]
        out.append(rows)
    return out


__all__ = ["ADAPTIVE_MODEL", "ANSWER_BIN", "ANSWER_RANGE", "REFUSAL", "adaptive_space", "answer_bins",
           "fixed_design_only", "is_adaptive_table", "observations"]

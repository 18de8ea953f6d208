"""Hierarchical PyMC version of the dissonant model, partially pooled across scenarios.

Subjects (LLMs, or synthetic agents) get every parameter from :func:`subject_parameters`
(non-centred population → subject).  On top, the RevB biases that the paper finds to vary by
scenario (first-option, anchoring, round-number and midpoint biases, §5) are partially pooled
*across the four scenarios within each subject*: ``β[s, c] = β[s] + σ_β · z[s, c]`` with
``z ~ Normal(0, 1)`` (non-centred) and ``σ_β ~ HalfNormal(0.5)``, so a subject's dice and choice
biases shrink towards its own overall bias.  The likelihood is the one of
:mod:`cogtestbed.inference.revealed_model` (Dirichlet with the ε concentration floor on exact
distributions, multinomial on sampled ones), written in pytensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.revealed_items import SCENARIOS

#: Biases given per-scenario deviations (partially pooled within each subject).
SCENARIO_POOLED = ("beta_first", "beta_anchor", "beta_round", "beta_mid")
#: Scale of the HalfNormal prior on the across-scenario SD of a pooled bias.
SCENARIO_SD_SCALE = 0.5
_MASKED = -1e10


def pooled_arrays(model: Any, trials: pd.DataFrame) -> dict[str, np.ndarray]:
    """Every valid step of every subject, stacked, with subject and scenario indices."""
    from cogtestbed.inference.revealed_model import subject_arrays

    parts, subj, scen = [], [], []
    for i, (_, rows) in enumerate(trials.groupby("subject", sort=False)):
        rows = rows[rows["valid"].to_numpy(dtype=bool)]
        parts.append(subject_arrays(rows))
        subj.append(np.full(len(rows), i))
        scen.append(np.array([SCENARIOS.index(str(s)) for s in rows["scenario"]]))
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    out["subject"] = np.concatenate(subj).astype(np.int64)
    out["scenario"] = np.concatenate(scen).astype(np.int64)
    k = np.arange(out["x"].shape[1])
    out["mask"] = (k[None, :] < out["k"][:, None]).astype(np.float64)
    return out


def dissonant_pymc_model(model: Any, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
    """The ``pm.Model`` (contract of :mod:`cogtestbed.inference.hierarchical`)."""
    import pymc as pm
    import pytensor.tensor as pt

    from cogtestbed.inference.hierarchical import subject_parameters
    from cogtestbed.inference.revealed_model import NOISE_FLOOR, SMOOTH_EPS

    d = pooled_arrays(model, trials)
    subjects = list(dict.fromkeys(trials["subject"].tolist()))
    coords = {"subject": subjects, "scenario": list(SCENARIOS), "obs": np.arange(len(d["subject"]))}
    with pm.Model(coords=coords) as m:
        theta = subject_parameters(model.parameters, hierarchical)
        subj = pm.Data("obs_subject", d["subject"], dims="obs")
        scen = pm.Data("obs_scenario", d["scenario"], dims="obs")
        data = {k: pm.Data(k, d[k]) for k in ("channel", "method", "nsamp", "base", "feat", "x", "lx", "mask",
                                              "correct")}
        per_row: dict[str, Any] = {}
        for name in model.parameters.names:
            if name in SCENARIO_POOLED:
                sd = pm.HalfNormal(f"{name}_scenario_sd", SCENARIO_SD_SCALE)
                z = pm.Normal(f"{name}_scenario_z", 0.0, 1.0, dims=("subject", "scenario"))
                per_row[name] = theta[name][subj] + sd * z[subj, scen]
            else:
                per_row[name] = theta[name][subj]
        feat, base = data["feat"], data["base"]
        revb = (per_row["tau"][:, None] * base + per_row["beta_first"][:, None] * feat[:, 0]
                + per_row["beta_label"][:, None] * feat[:, 1] + per_row["beta_anchor"][:, None] * feat[:, 2]
                + per_row["beta_round"][:, None] * feat[:, 3] + per_row["beta_mid"][:, None] * feat[:, 4]
                - per_row["kappa"][:, None] * feat[:, 5])
        k_idx = pt.arange(d["x"].shape[1])
        onehot = pt.eq(k_idx[None, :], data["correct"][:, None])
        staa = per_row["theta"][:, None] * onehot + per_row["beta_pos"][:, None] * pt.eq(k_idx, 0)[None, :]
        eta = pt.switch(pt.eq(data["channel"][:, None], 0), revb, staa)
        mask = data["mask"]
        eta = pt.switch(mask > 0, eta, _MASKED)
        logq = eta - pt.logsumexp(eta, axis=1, keepdims=True)
        q = pt.exp(logq)
        kk = mask.sum(axis=1, keepdims=True)
        c = 1.0 / pt.maximum(per_row["noise"], NOISE_FLOOR)[:, None]
        cq = c * ((1.0 - kk * SMOOTH_EPS) * q + SMOOTH_EPS)
        ll_dir = (pt.gammaln(c[:, 0]) - (mask * pt.gammaln(cq)).sum(axis=1)
                  + (mask * (cq - 1.0) * data["lx"]).sum(axis=1))
        counts = data["x"] * data["nsamp"][:, None] * mask
        ll_mult = (counts * logq).sum(axis=1)
        ll = pt.switch(pt.eq(data["method"], 0), ll_dir, ll_mult)
        pm.CustomDist("answers", ll, logp=lambda value, row_ll: row_ll + 0.0 * value,
                      observed=np.zeros(len(d["subject"])), dims="obs")
    m.cogtestbed_key = ("revealed-dissonant", tuple(SCENARIO_POOLED))
    return m

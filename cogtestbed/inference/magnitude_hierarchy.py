"""Hierarchical static-Bayes model of one subject's w_prior over sessions, tasks and ablations.

BayesBench (Ma, Wang & Fountas 2025, Sec. 3.2 and 3.5) reads the prior weight w_prior of the static
Bayesian observer, v = (1 − w)·u + w·μ_p + σ·ε on the session-normalised scale, per condition, and
scores an ablation by the sign of Δw_prior against the base condition.  This module pools those
fits: a *cell* j is one (task, condition, modality, session range) of the subject's trials, and

    logit w_j = λ_condition(j) + τ_task(j) + η_modality(j) + σ_cell·z_j,   τ, η ~ ZeroSumNormal(s)
    v_ij      ~ Normal(m_j + (1 − w_j)·(u_ij − ū_j), σ_j²)

Parameterisation (chosen from the posterior geometry, not only from the model):

* **Condition levels, not offsets.**  λ_c is the logit w of condition c itself (the base included),
  so the base level and an ablation's offset are not sampled as one sum (α + γ); the population-
  level P(Δw_prior > 0 | data) of an ablation is P(λ_ablation > λ_base), the same at every task
  and modality because the logistic map is monotone.
* **Zero-sum task and modality effects with a fixed scale.**  A sum-to-zero effect cannot trade
  off against the levels λ.  With three tasks (or modalities) the SD of the effects is not
  estimable (Gelman 2006, "Prior distributions for variance parameters in hierarchical models",
  on few groups): a sampled σ_task stays near its prior and forms a funnel with the effects
  (ESS ≈ 380 for σ_task at 2 × 1000 draws), so the effects are fixed effects with the documented
  scale s = :data:`EFFECT_SD`, each pinned by hundreds of trials (centred).
* **Non-centred cell deviations** σ_cell·z_j (:data:`CENTRED_CELLS` off): a cell's 30–50 trials
  pin logit w_j only to about ±0.3 while σ_cell is small for a consistent observer; σ_cell has a
  boundary-avoiding Gamma prior (:data:`CELL_SD_PRIOR`) so its posterior does not pile up in the
  neck of the funnel at 0.
* **The mean answer, not the prior mean.**  Each cell samples m_j, the mean answer at the cell's
  mean stimulus ū_j, instead of μ_p,j (or the intercept w_j·μ_p,j): with the stimulus centred the
  least-squares slope and level are uncorrelated, so (w_j, m_j) is close to an axis-aligned
  Gaussian, where (w_j, μ_p,j) is a banana (μ_p is unidentified as w → 0) and (w_j, w_j·μ_p,j)
  has correlation ≈ −0.87 for a uniform stimulus on [0, 1].  μ_p,j = (m_j − (1 − w_j)·ū_j)/w_j is
  reported as a deterministic.
* **log σ_j per cell** with the static-Bayes parameter's own prior.

The likelihood of every cell is the static-Bayes kernel of :class:`StaticBayesModel` (tested:
the PyMC log-likelihood equals minus the model's NLL summed over cells).  The hyperpriors below
are the documented defaults; they are weakly informative on the logit and normalised scales.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError
from cogtestbed.inference.magnitude_observers import OBSERVERS, static_bayes_centred, static_bayes_mu_p
from cogtestbed.tables.magnitude import CONDITIONS, MODALITIES, TASK_NAMES

_W = OBSERVERS["static-bayes"][0]["w_prior"]
_SIGMA = OBSERVERS["static-bayes"][0]["sigma_dec"]
#: Prior of a condition level λ_c (logit w): the static-Bayes w_prior parameter's own prior,
#: Normal(−0.5, 1.2) on the logit scale (w from about 0.06 to 0.87 at ±2 SD).
LEVEL_PRIOR = (_W.prior_mean, _W.prior_sd)
#: Prior SD s of the zero-sum task and modality effects (logit units): effects of ±1 logit
#: (w 0.3 → 0.54) are plausible, beyond ±2 not expected a priori.
EFFECT_SD = 1.0
#: Gamma(2, rate) prior of the cell (session range) deviation SD σ_cell (logit units): a
#: boundary-avoiding prior (Chung et al. 2013, "A nondegenerate penalized likelihood estimator for
#: variance parameters in multilevel models"), mode 1/rate = 0.1, mean 0.2, P(σ_cell > 0.5) ≈ 4 %.
#: A HalfNormal(0.5) lets the posterior pile up at σ_cell = 0 for a consistent observer, where the
#: sampler visits the neck of the funnel slowly (tail ESS of σ_cell ≈ 330 at 4 × 1000 draws).
CELL_SD_PRIOR = (2.0, 10.0)
#: Prior of m_j, the mean answer at the cell's mean stimulus (normalised scale): Normal(0.5, 0.5),
#: i.e. inside the session range, with room for a biased observer.
MEAN_PRIOR = (0.5, 0.5)
#: Prior of log σ_j: the static-Bayes sigma_dec parameter's own prior, Normal(log 0.1, 0.7).
LOG_SIGMA_PRIOR = (_SIGMA.prior_mean, _SIGMA.prior_sd)
#: Cell deviations non-centred (False) or centred (True, for many trials per cell and a large σ_cell).
CENTRED_CELLS = False
#: NUTS target acceptance of the hierarchy: 0.95, since with few cells (9) and a true σ_cell ≈ 0 the
#: non-centred cell deviations still meet an occasional divergence at 0.9.
TARGET_ACCEPT = 0.95
#: Central posterior interval reported for the levels and the cell-level w_prior.
INTERVAL = (0.05, 0.95)


@dataclass(frozen=True)
class HierarchyData:
    """One subject's valid answers grouped into cells (task, condition, modality, range).

    ``u``/``v``: normalised stimulus and answer per trial, ``cell``: its cell; per cell:
    ``cell_names`` ("task|condition|modality|range"), ``cell_task``/``cell_condition``/
    ``cell_modality`` (codes into ``tasks``/``conditions``/``modalities``) and ``u_bar``, the
    mean stimulus; ``log_w`` per trial is the Jacobian log W back to the answer's own scale."""

    u: np.ndarray
    v: np.ndarray
    cell: np.ndarray
    log_w: np.ndarray
    cell_names: list[str]
    cell_task: np.ndarray
    cell_condition: np.ndarray
    cell_modality: np.ndarray
    u_bar: np.ndarray
    tasks: list[str]
    conditions: list[str]
    modalities: list[str]

    @property
    def ablations(self) -> list[str]:
        return [c for c in self.conditions if c != "base"]


def _ordered_codes(values: pd.Series, order: tuple[str, ...]) -> tuple[np.ndarray, list[str]]:
    present = [name for name in order if name in set(values)]
    return pd.Categorical(values, categories=present).codes.astype(np.int64), present


def hierarchy_data(trials: pd.DataFrame) -> HierarchyData:
    """The cells of one subject's valid answers (one clear error for anything else)."""
    g = trials[trials["valid"].astype(bool)]
    if g["subject"].nunique() != 1:
        raise InputError("w_prior_hierarchy fits one subject (an LLM's run); select it first")
    conds = set(g["condition"].astype(str))
    if "base" not in conds or len(conds) < 2:
        raise InputError("the hierarchy needs the base condition and at least one ablation")
    lo, hi = g["range_low"].to_numpy(np.float64), g["range_high"].to_numpy(np.float64)
    u = (g["x"].to_numpy(np.float64) - lo) / (hi - lo)
    v = (g["action"].to_numpy(np.float64, na_value=np.nan) - lo) / (hi - lo)
    key = g[["task", "condition", "modality", "range"]].astype(str)
    cell, names = pd.factorize(key.agg("|".join, axis=1))
    task, tasks = _ordered_codes(key["task"], TASK_NAMES)
    cond, conditions = _ordered_codes(key["condition"], ("base", *(c for c in CONDITIONS if c != "base")))
    mod, modalities = _ordered_codes(key["modality"], MODALITIES)
    n_cells = len(names)
    counts = np.bincount(cell, minlength=n_cells)
    if counts.min() < 3:
        raise InputError("every (task, condition, modality, range) cell needs at least 3 valid answers")
    first = np.zeros(n_cells, dtype=np.int64)
    first[cell[::-1]] = np.arange(len(cell))[::-1]
    return HierarchyData(u=u, v=v, cell=cell.astype(np.int64), log_w=np.log(hi - lo), cell_names=list(names),
                         cell_task=task[first], cell_condition=cond[first], cell_modality=mod[first],
                         u_bar=np.bincount(cell, weights=u, minlength=n_cells) / counts,
                         tasks=tasks, conditions=conditions, modalities=modalities)


def _zero_sum_effect(name: str, n_levels: int) -> Any:
    """Effects ~ ZeroSumNormal(:data:`EFFECT_SD`) over the factor's levels, or 0 for one level."""
    import pymc as pm

    if n_levels < 2:
        return None
    return pm.ZeroSumNormal(f"{name}_effect", EFFECT_SD, dims=name)


def w_prior_hierarchy_model(data: HierarchyData, centred_cells: bool = CENTRED_CELLS) -> Any:
    """The PyMC model of the module docstring for :func:`hierarchy_data`'s cells."""
    import pymc as pm

    coords = {"cell": data.cell_names, "task": data.tasks, "condition": data.conditions,
              "modality": data.modalities, "obs": np.arange(data.u.size)}
    with pm.Model(coords=coords) as model:
        level = pm.Normal("level", *LEVEL_PRIOR, dims="condition")
        centre = level[data.cell_condition]
        for name, codes, levels in (("task", data.cell_task, data.tasks),
                                    ("modality", data.cell_modality, data.modalities)):
            effect = _zero_sum_effect(name, len(levels))
            if effect is not None:
                centre = centre + effect[codes]
        sigma_cell = pm.Gamma("sigma_cell", alpha=CELL_SD_PRIOR[0], beta=CELL_SD_PRIOR[1])
        if centred_cells:
            logit_w = pm.Normal("logit_w", centre, sigma_cell, dims="cell")
        else:
            logit_w = centre + sigma_cell * pm.Normal("z_cell", 0.0, 1.0, dims="cell")
        w = pm.Deterministic("w_prior", pm.math.sigmoid(logit_w), dims="cell")
        m = pm.Normal("mean_answer", *MEAN_PRIOR, dims="cell")
        log_sigma = pm.Normal("log_sigma", *LOG_SIGMA_PRIOR, dims="cell")
        pm.Deterministic("mu_p", static_bayes_mu_p.py_func(m, data.u_bar, w), dims="cell")
        pm.Deterministic("delta_level", level[1:] - level[0])
        mean = static_bayes_centred.py_func(data.u, data.u_bar[data.cell], m[data.cell], w[data.cell])
        pm.Normal("v", mean, pm.math.exp(log_sigma)[data.cell], observed=data.v, dims="obs")
    return model


def _interval(draws: np.ndarray) -> dict[str, float]:
    lo, hi = np.quantile(draws, INTERVAL)
    return {"mean": float(draws.mean()), "lo": float(lo), "hi": float(hi)}


def w_prior_hierarchy(trials: pd.DataFrame, draws: int = 1000, tune: int = 1000, chains: int = 4,
                      seed: int = 0, sampler: str = "auto", target_accept: float = TARGET_ACCEPT,
                      centred_cells: bool = CENTRED_CELLS) -> dict[str, Any]:
    """Fit the hierarchy to one subject's trials and report per ablation P(Δw_prior > 0 | data)
    = P(λ_ablation > λ_base), the levels' and Δ's posterior summaries (mean, 90 % interval), the
    cell-level w_prior and the diagnostics (max R-hat, min bulk/tail ESS, divergences)."""
    from cogtestbed.inference.hierarchical import fit_hierarchical

    data = hierarchy_data(trials)
    model = w_prior_hierarchy_model(data, centred_cells)
    fit = fit_hierarchical(model, trials, draws=draws, tune=tune, chains=chains, seed=seed,
                           sampler=sampler, warn=False, log_likelihood=False,
                           target_accept=target_accept)
    post = fit.idata.posterior
    level = post["level"].values.reshape(-1, len(data.conditions))
    delta = level[:, 1:] - level[:, :1]
    w = post["w_prior"].values.reshape(-1, len(data.cell_names))
    from cogtestbed.inference.samplers import provenance_of

    d = fit.diagnostics
    return {
        "p_delta_w_positive": {c: float((delta[:, j] > 0).mean()) for j, c in enumerate(data.ablations)},
        "delta_level": {c: _interval(delta[:, j]) for j, c in enumerate(data.ablations)},
        "level": {c: _interval(level[:, j]) for j, c in enumerate(data.conditions)},
        "w_prior": {name: _interval(w[:, j]) for j, name in enumerate(data.cell_names)},
        "diagnostics": {**d.columns(), "ok": d.ok, "verdict": d.verdict, "sampler": d.sampler,
                        **provenance_of(fit.idata), "seconds": d.seconds, "report": d.report()},
        "idata": fit.idata,
    }



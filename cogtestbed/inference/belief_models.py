"""Decision models of the belief-coherence experiment: MLE and hierarchical PyMC fits.

The paper estimates no utilities; these parametric forms (Yamin et al. 2026, Eq. 3 and the
loss form of §2) let a user recover a decider's parameters from the same trial table.

* ``mnl``: the 4-parameter multinomial logit of the logit RUM (Eq. 3): log-odds against No are
  α_Yes + β_Yes·p and α_Defer + β_Defer·p (u(No, ·) = 0 and the Gumbel scale absorbed).
* ``loss``: the loss-form decider: V_No = −s·c_FN·w(p), V_Yes = −s·c_FP·(1 − w(p)),
  V_Defer = −s·c_D with TK weighting w (γ) and logit choice.  Losses are only identified up to
  scale, so they are normalised to c_FP + c_FN = 1 (:func:`normalise_loss`): parameters c_fp
  (the Yes/No threshold t* at γ = 1), c_d, scale s and γ.

The belief p entering the likelihood is the subject's π0 report averaged over the repetitions of
the context (:data:`BELIEF_COVARIATE`), which shrinks report noise by √r.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from cogtestbed.environments.belief import EXPERIMENT
from cogtestbed.inference.base import CognitiveModel
from cogtestbed.inference.hierarchical import pool_subject_arrays, subject_parameters
from cogtestbed.parameters import Parameter, ParameterSet

#: Covariate of the decision models: the π0 report averaged over a context's repetitions.
BELIEF_COVARIATE = "mean_pi0"
DECISION_CODES = {"No": 0, "Yes": 1, "Defer": 2}
EPS = 1e-9


@dataclass(frozen=True)
class DecisionData:
    """One subject's decisions ``a`` (0 No, 1 Yes, 2 Defer) and beliefs ``p``."""

    a: np.ndarray
    p: np.ndarray


def decision_data(trials: pd.DataFrame) -> dict[Hashable, DecisionData]:
    """Per subject: valid decisions with the mean π0 report of their context."""
    keys = ["subject", "context_id"]
    belief = trials.loc[(trials["phase"] == "belief") & (trials["variant"] == "pi0") & trials["valid"]]
    mean_p = belief.groupby(keys)["p_elicited"].mean().rename("p").reset_index()
    dec = trials.loc[(trials["phase"] == "decision") & trials["valid"], [*keys, "decision"]]
    rows = dec.merge(mean_p, on=keys, how="inner").dropna()
    out: dict[Hashable, DecisionData] = {}
    for subject, part in rows.groupby("subject", sort=True):
        out[subject] = DecisionData(part["decision"].astype(str).map(DECISION_CODES).to_numpy(np.int64),
                                    np.clip(part["p"].to_numpy(np.float64), 0.0, 1.0))
    return out


def tk_weight_grad(p: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Tversky–Kahneman w(p) = p^γ / (p^γ + (1−p)^γ)^{1/γ} and dw/dγ (p clipped into (0, 1))."""
    q = np.clip(p, EPS, 1.0 - EPS)
    a, b = q**gamma, (1.0 - q) ** gamma
    d = a + b
    w = a / d ** (1.0 / gamma)
    dlog = np.log(q) + np.log(d) / gamma**2 - (a * np.log(q) + b * np.log1p(-q)) / (gamma * d)
    return w, w * dlog


def _softmax_nll(v: np.ndarray, a: np.ndarray) -> tuple[float, np.ndarray]:
    """NLL of choices ``a`` under a logit on utilities v (n, 3), and d NLL / d v."""
    top = v.max(axis=1, keepdims=True)
    logp = v - top - np.log(np.exp(v - top).sum(axis=1, keepdims=True))
    n = a.size
    nll = -float(logp[np.arange(n), a].sum())
    grad = np.exp(logp)
    grad[np.arange(n), a] -= 1.0
    return nll, grad


class MNLModel(CognitiveModel):
    """The 4-parameter multinomial logit (Eq. 3): a concave log-likelihood, one start suffices."""

    name: ClassVar[str] = "mnl"
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = ParameterSet(tuple(
        Parameter(n, -100.0, 100.0, d, desc, prior_mean=0.0, prior_sd=15.0) for n, d, desc in (
            ("alpha_yes", -12.0, "log-odds of Yes vs No at p = 0"),
            ("beta_yes", 24.0, "slope in p of the Yes vs No log-odds"),
            ("alpha_defer", -3.6, "log-odds of Defer vs No at p = 0"),
            ("beta_defer", 12.0, "slope in p of the Defer vs No log-odds"))), "mnl")
    grid_points: ClassVar[int] = 3
    n_starts: ClassVar[int] = 1

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return decision_data(trials)

    def n_observations(self, data: Any) -> int:
        return int(data.a.size)

    def nll_grad(self, theta: np.ndarray, data: Any) -> tuple[float, np.ndarray]:
        ay, by, ad, bd = theta
        v = np.column_stack([np.zeros_like(data.p), ay + by * data.p, ad + bd * data.p])
        nll, g = _softmax_nll(v, data.a)
        return nll, np.array([g[:, 1].sum(), (g[:, 1] * data.p).sum(), g[:, 2].sum(), (g[:, 2] * data.p).sum()])

    def pymc_model(self, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
        """Non-centred population → subject MNL coefficients, categorical likelihood."""
        import pymc as pm
        import pytensor.tensor as pt

        data = self.subject_data(trials)
        obs_subject, arr = pool_subject_arrays(data, ("a", "p"))
        with pm.Model(coords={"subject": list(data), "obs": np.arange(obs_subject.size)}) as model:
            s = subject_parameters(self.parameters, hierarchical)
            idx = pm.Data("obs_subject", obs_subject, dims="obs")
            p = pm.Data("p", arr["p"], dims="obs")
            v = pt.stack([pt.zeros_like(p), s["alpha_yes"][idx] + s["beta_yes"][idx] * p,
                          s["alpha_defer"][idx] + s["beta_defer"][idx] * p], axis=1)
            pm.Categorical("a", logit_p=v, observed=arr["a"], dims="obs")
        return model


def normalise_loss(c_fp: Any, c_fn: Any, c_d: Any, scale: Any) -> dict[str, Any]:
    """Losses rescaled to c_FP + c_FN = 1 (the logit scale absorbs the factor)."""
    total = c_fp + c_fn
    return {"c_fp": c_fp / total, "c_d": c_d / total, "scale": scale * total}


class LossModel(CognitiveModel):
    """Loss-form decider with TK weighting (see module docstring)."""

    name: ClassVar[str] = "loss"
    experiment: ClassVar[str] = EXPERIMENT
    parameters: ClassVar[ParameterSet] = ParameterSet((
        Parameter.unit("c_fp", 0.5, "normalised false-positive loss (c_FP + c_FN = 1)"),
        Parameter.unit("c_d", 0.15, "normalised loss of deferring"),
        Parameter.positive("scale", 20.0, upper=1000.0, description="logit scale",
                           prior_mean=2.5, prior_sd=1.0, search_floor=0.1, search_ceiling=1000.0),
        Parameter("gamma", 0.28, 3.0, 1.0, "Tversky-Kahneman γ", transform="logit", prior_mean=0.0,
                  prior_sd=1.0),
    ), "loss")
    grid_points: ClassVar[int] = 4
    n_starts: ClassVar[int] = 4

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return decision_data(trials)

    def n_observations(self, data: Any) -> int:
        return int(data.a.size)

    def nll_grad(self, theta: np.ndarray, data: Any) -> tuple[float, np.ndarray]:
        c_fp, c_d, s, gamma = theta
        c_fn = 1.0 - c_fp
        w, dw = tk_weight_grad(data.p, gamma)
        v = np.column_stack([-s * c_fn * w, -s * c_fp * (1.0 - w), np.full_like(w, -s * c_d)])
        nll, g = _softmax_nll(v, data.a)
        d_cfp = (g[:, 0] * s * w - g[:, 1] * s * (1.0 - w)).sum()
        d_cd = -(g[:, 2] * s).sum()
        d_s = (g * v).sum() / s
        d_gamma = (g[:, 0] * (-s * c_fn) * dw + g[:, 1] * (s * c_fp) * dw).sum()
        return nll, np.array([d_cfp, d_cd, d_s, d_gamma])

    def pymc_model(self, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
        """Non-centred population → subject (c_FP, c_D, scale, γ), categorical likelihood."""
        import pymc as pm
        import pytensor.tensor as pt

        data = self.subject_data(trials)
        obs_subject, arr = pool_subject_arrays(data, ("a", "p"))
        with pm.Model(coords={"subject": list(data), "obs": np.arange(obs_subject.size)}) as model:
            s = subject_parameters(self.parameters, hierarchical)
            idx = pm.Data("obs_subject", obs_subject, dims="obs")
            q = pt.clip(pm.Data("p", arr["p"], dims="obs"), EPS, 1.0 - EPS)
            g = s["gamma"][idx]
            w = q**g / (q**g + (1.0 - q) ** g) ** (1.0 / g)
            sc, c_fp = s["scale"][idx], s["c_fp"][idx]
            v = pt.stack([-sc * (1.0 - c_fp) * w, -sc * c_fp * (1.0 - w), -sc * s["c_d"][idx] * pt.ones_like(w)],
                         axis=1)
            pm.Categorical("a", logit_p=v, observed=arr["a"], dims="obs")
        return model


MODELS: dict[str, CognitiveModel] = {"mnl": MNLModel(), "loss": LossModel()}


def generating_values(agent: str, params: Mapping[str, float]) -> dict[str, float]:
    """The model parameters that an agent's parameters imply (for recovery studies)."""
    from cogtestbed.agents.belief import mnl_coefficients

    if agent in ("logit-rum",):
        return {k: float(v) for k, v in mnl_coefficients(params, params["scale"]).items()}
    if agent == "loss-rum":
        out = normalise_loss(params["c_fp"], params["c_fn"], params["c_d"], params["scale"])
        return {**{k: float(v) for k, v in out.items()}, "gamma": float(params["gamma"])}
    raise ValueError(f"no model parameters for agent {agent!r} (logit-rum or loss-rum)")

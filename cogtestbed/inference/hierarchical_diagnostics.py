"""Convergence diagnostics of a Bayesian fit and its result (Vehtari et al. 2021): :class:`Diagnostics`
(R-hat, bulk/tail ESS, divergences), :func:`diagnose`, :class:`BayesFit` and the thresholds
behind :class:`ConvergenceWarning`.  :mod:`cogtestbed.inference.hierarchical` re-exports them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: Diagnostic thresholds (Vehtari et al. 2021, "Rank-normalization, folding, and localization").
RHAT_MAX = 1.01
ESS_MIN_PER_CHAIN = 100


class ConvergenceWarning(UserWarning):
    """A Bayesian fit failed a diagnostic threshold (R-hat, ESS or divergences)."""


# ----------------------------------------------------------------------------- diagnostics
@dataclass(frozen=True)
class Diagnostics:
    """Convergence summary of one Bayesian fit (``max_rhat`` None where no R-hat exists:
    :attr:`rhat_reason` says why, and the fit fails that check)."""

    max_rhat: float | None
    min_ess_bulk: float
    min_ess_tail: float
    divergences: int
    n_chains: int
    n_draws: int
    seconds: float
    sampler: str
    #: Per-variable table (mean, sd, hdi, r_hat, ess_bulk, ess_tail) of the free parameters.
    table: pd.DataFrame = field(repr=False, compare=False)
    #: The Gibbs sampler's subject HMC trajectories whose energy error exceeded 1000 (Stan's divergence
    #: threshold), each rejected by its Metropolis test, so the chain stays exact
    #: (:mod:`~cogtestbed.inference.hierarchical_gibbs`); None for NUTS, whose divergences are ``divergences``.
    #: Reported, not a check: where a region stops the HMC moves, the mode jumps still enter and leave it, and
    #: whether the chains mixed is what R-hat (from dispersed starts) and the ESS measure.
    divergent_rejections: int | None = None

    @property
    def problems(self) -> list[str]:
        out = []
        if self.max_rhat is None:
            out.append(f"R-hat not computed: {self.rhat_reason}")
        elif not self.max_rhat <= RHAT_MAX:
            out.append(f"max R-hat {self.max_rhat:.3f} > {RHAT_MAX}")
        floor = ESS_MIN_PER_CHAIN * self.n_chains
        if not self.min_ess_bulk >= floor:
            out.append(f"min bulk ESS {self.min_ess_bulk:.0f} < {floor}")
        if not self.min_ess_tail >= floor:
            out.append(f"min tail ESS {self.min_ess_tail:.0f} < {floor}")
        if self.divergences:
            out.append(f"{self.divergences} divergent transitions")
        return out

    @property
    def rhat_reason(self) -> str | None:
        """Why ``max_rhat`` is None (None when it has a value)."""
        if self.max_rhat is not None:
            return None
        if self.n_chains < 2:
            return f"R-hat compares chains and this fit ran {self.n_chains}; sample 2 or more"
        return "no sampled variable has an R-hat (their draws do not vary)"

    @property
    def ok(self) -> bool:
        """Whether every check passes: R-hat, bulk ESS, tail ESS and no divergences."""
        return not self.problems

    @property
    def ess_floor(self) -> int:
        """The bulk and tail ESS every free variable needs (:data:`ESS_MIN_PER_CHAIN` per chain)."""
        return ESS_MIN_PER_CHAIN * self.n_chains

    @property
    def verdict(self) -> str:
        """``"converged"``, or ``"NOT converged: "`` followed by every failed check."""
        return "converged" if self.ok else "NOT converged: " + "; ".join(self.problems)

    def report(self) -> str:
        """One line stating all four checks with their thresholds, and the verdict."""
        rhat = "null" if self.max_rhat is None else f"{self.max_rhat:.4f}"
        rejected = ("" if self.divergent_rejections is None else
                    f", {self.divergent_rejections} divergent HMC proposals rejected (Gibbs; not a check)")
        return (f"max R-hat {rhat} (<= {RHAT_MAX}), min bulk ESS {self.min_ess_bulk:.0f} and min "
                f"tail ESS {self.min_ess_tail:.0f} (>= {self.ess_floor}), {self.divergences} divergences (0)"
                f"{rejected}: {self.verdict}")

    def columns(self) -> dict[str, Any]:
        """The checked values and the verdict, for a row of a results table."""
        return {"max_rhat": self.max_rhat, "min_ess_bulk": self.min_ess_bulk, "min_ess_tail": self.min_ess_tail,
                "divergences": self.divergences, "converged": self.ok}

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.columns(),
            "chains": self.n_chains,
            "draws": self.n_draws,
            "seconds": self.seconds,
            "sampler": self.sampler,
            "ok": self.ok,
            "rhat_max": RHAT_MAX,
            "max_rhat_reason": self.rhat_reason,
            "ess_floor": self.ess_floor,
            "verdict": self.verdict,
            "problems": self.problems,
            **({} if self.divergent_rejections is None else {"divergent_rejections": self.divergent_rejections}),
        }


def diagnose(idata: Any, seconds: float = float("nan"), sampler: str = "",
             var_names: Sequence[str] | None = None) -> Diagnostics:
    """R-hat, bulk/tail ESS over the free (sampled) variables and the divergence count."""
    import arviz as az

    post = idata.posterior
    if var_names is None:
        free = getattr(idata, "_free_vars", None)
        var_names = list(free) if free else list(post.data_vars)
    table = az.summary(idata, var_names=list(var_names), kind="all", round_to="none")
    stats = idata.sample_stats
    div = int(stats["diverging"].sum()) if "diverging" in stats else 0
    rejected = int(stats["hmc_divergent"].sum()) if "hmc_divergent" in stats else None
    return Diagnostics(
        max_rhat=_worst(table, "r_hat", np.max),
        min_ess_bulk=float(np.nanmin(table["ess_bulk"])) if len(table) else float("nan"),
        min_ess_tail=float(np.nanmin(table["ess_tail"])) if len(table) else float("nan"),
        divergences=div,
        n_chains=int(post.sizes["chain"]),
        n_draws=int(post.sizes["draw"]),
        seconds=seconds,
        sampler=sampler,
        table=table,
        divergent_rejections=rejected,
    )


def _worst(table: pd.DataFrame, column: str, reduce: Callable[[np.ndarray], Any]) -> float | None:
    """``reduce`` over a column's finite values; None where it has none (one chain has no R-hat)."""
    values = table[column].to_numpy(float) if column in table and len(table) else np.array([])
    values = values[~np.isnan(values)]
    return float(reduce(values)) if len(values) else None


@dataclass
class BayesFit:
    """A Bayesian fit: the InferenceData and its diagnostics.

    Attributes
    ----------
    idata : arviz.InferenceData
        The posterior (and its log-likelihood where kept).
    diagnostics : Diagnostics
        R-hat, ESS and divergences.
    model_name : str
        The model fitted.
    unidentified : dict
        Subjects left out (their answers identify no model) and why.
    flags : list of str
        What the diagnostics flag.
    units : dict, optional
        What one fitted unit is.

    Examples
    --------
    ``ct.fit(..., method="hierarchical")`` returns one (a sampler run: a minute or more); its
    class is here:

    >>> import cogtestbed as ct
    >>> [f for f in ("idata", "diagnostics", "units") if f in ct.BayesFit.__dataclass_fields__]
    ['idata', 'diagnostics', 'units']
    """

    idata: Any
    diagnostics: Diagnostics
    model_name: str = ""
    #: The posterior of each between-form SD, where the model had crossed form effects
    #: (:func:`~cogtestbed.inference.form_hierarchical.fit_forms_hierarchical`); else None.
    form_sd: dict[str, Any] | None = None
    #: Each form's posterior mean effect by parameter (same condition).
    form_effects: dict[str, Any] | None = None
    #: The subjects left out because their answers identify no model (the degenerate-answer rule,
    #: :func:`on_identified_subjects`), each with the reason; the posterior is of the others.
    unidentified: dict[Any, str] = field(default_factory=dict)
    #: What the fit's reader must know besides the diagnostics (a flag naming the unidentified subjects).
    flags: list[str] = field(default_factory=list)
    #: What one subject of the fit is, how many there are and why (``unit``, ``n_units``,
    #: ``unit_reason``: :class:`cogtestbed.api.fit_units.FitUnits`), where :func:`cogtestbed.fit` set it.
    units: dict[str, Any] | None = None
    #: The model's :attr:`~cogtestbed.inference.base.CognitiveModel.choice_options` (2: a binary
    #: choice, for which :meth:`with_posterior_predictive` draws replicated choices).
    choice_options: int | None = None

    @property
    def centred_parameters(self) -> tuple[str, ...]:
        """The parameters the sampler drew centred (``{p}_u``: declared by the model, or pinned by the data,
        :mod:`cogtestbed.inference.centring`), sorted; the others it drew non-centred (``{p}_z``)."""
        names: set[str] = set()
        for group in ("posterior", "unconstrained_posterior"):
            if group in self.idata.groups():
                names |= {str(v)[:-2] for v in self.idata[group].data_vars if str(v).endswith("_u")}
        population = set(self.idata.posterior.data_vars) if "posterior" in self.idata.groups() else set()
        return tuple(sorted(n for n in names if f"{n}_mu" in population))  # independent subjects: no population

    def with_posterior_predictive(self, seed: int = 0) -> Any:
        """The InferenceData with a ``posterior_predictive`` group of replicated choices (one step
        ahead, binary-choice models), so ``az.plot_ppc(fit.idata)`` draws; seeded."""
        from cogtestbed.inference.hierarchical_idata import add_posterior_predictive

        return add_posterior_predictive(self.idata, self.choice_options, seed, self.model_name or "this model")

    def plot_forest(self, subjects: bool | Sequence[Any] = False, **kwargs: Any) -> Any:
        """``az.plot_forest`` readable by default: the population parameters (``{p}_pop``, each parameter's
        population median on its natural scale) in the model's order, chains combined; ``subjects=True`` adds
        every subject's ``{p}`` after them, a list of subject ids those subjects only.  ``kwargs`` go to ArviZ.
        Returns ArviZ's axes."""
        import arviz as az

        post = self.idata.posterior
        names = [str(v) for v in post.data_vars if str(v).endswith("_pop")]
        coords = None
        if subjects is not False:
            names += [str(v) for v in post.data_vars if post[v].dims == ("chain", "draw", "subject")]
            if subjects is not True:
                coords = {"subject": list(subjects)}
        kwargs.setdefault("combined", True)
        return az.plot_forest(self.idata, var_names=names, coords=coords, **kwargs)

    def subject_summary(self, hdi_probs: Sequence[float] = (0.5, 0.9)) -> pd.DataFrame:
        """Per-subject posterior mean and central intervals of every subject-level variable, with
        ``identified`` and ``null_reason``: a subject left out by the degenerate-answer rule
        (:attr:`unidentified`) has a row per variable with NaN (null) values and the reason."""
        post = self.idata.posterior
        rows = []
        subjects = post.coords["subject"].values
        names = [v for v in post.data_vars if post[v].dims == ("chain", "draw", "subject")
                 and not v.endswith(("_z", "_u"))]
        for name in names:
            draws = post[name].values.reshape(-1, len(subjects))
            for i, s in enumerate(subjects):
                row: dict[str, Any] = {"subject": s, "parameter": name,
                                       "mean": float(draws[:, i].mean()),
                                       "median": float(np.median(draws[:, i]))}
                for q in hdi_probs:
                    lo, hi = np.quantile(draws[:, i], [(1 - q) / 2, (1 + q) / 2])
                    row[f"lo{int(q * 100)}"], row[f"hi{int(q * 100)}"] = float(lo), float(hi)
                rows.append({**row, "identified": True, "null_reason": None})
            nan = float("nan")
            for s, reason in self.unidentified.items():
                bounds = {f"{side}{int(q * 100)}": nan for q in hdi_probs for side in ("lo", "hi")}
                rows.append({"subject": s, "parameter": name, "mean": nan, "median": nan, **bounds,
                             "identified": False, "null_reason": reason})
        return pd.DataFrame(rows)

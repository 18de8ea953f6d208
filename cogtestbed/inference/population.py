"""Populations: the posterior of a hierarchical fit's group parameters, kept as draws.

A :class:`Population` holds, for every parameter ``p`` of one model, posterior draws of the
population mean ``{p}_mu`` and SD ``{p}_sigma`` on the unconstrained scale (the hierarchical model
of :func:`~cogtestbed.inference.hierarchical.subject_parameters`: subject ``i`` has
``u_i ~ Normal({p}_mu, {p}_sigma)``, independent across parameters), and the fitted sample's
per-subject MLE of every parameter (the people themselves, for a test against them).

A simulated study drawn from a population takes **one posterior draw** ``d`` (all its subjects
share it: the uncertainty about the people's group parameters moves whole studies) and draws its
subjects as ``constrain(mu_d + sigma_d · z)``: the posterior predictive distribution of new
subjects, so the spread between people and its uncertainty both propagate into a power or a plan.

A population is a small JSON file (:meth:`Population.save`); the package ships the populations
fitted to human data sets in ``cogtestbed/data/populations/`` (``human:NAME``,
:func:`load_population`).  :func:`population_from_fit` builds one from any hierarchical fit and
refuses a fit with R-hat above 1.01 or divergent transitions (Vehtari et al. 2021) unless told.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cogtestbed.errors import DataError, InputError
from cogtestbed.inference.population_source import (  # noqa: F401
    PREFIX,
    PopulationError,
    population_path,
    shipped_directory,
    shipped_populations,
)
from cogtestbed.parameters import ParameterSet

#: Posterior draws a population keeps (thinned evenly from the fit's): enough for the spread of a
#: power's studies, small enough to ship (this project's default, not a paper's).
KEEP_DRAWS = 1000
#: Significant digits of the saved draws (a JSON file of a few hundred kB at most).
DIGITS = 6


class PopulationWarning(UserWarning):
    """A population used although its fit fails the population gate (:data:`POPULATION_GATE`)."""


#: The population gate, stated once: what a fit must pass to be built or shipped
#: (:func:`population_from_fit`) and what ``population show`` reports; ``simulate``, ``recover``,
#: ``power`` and ``plan`` from a population that fails it warn in one line naming the failed
#: diagnostic (:func:`load_population` with ``use``).  The ESS floor of a fit's own verdict
#: (100 per chain) is not part of it: ``population show`` prints the ESS beside the gate.
POPULATION_GATE = "max R-hat <= 1.01 and 0 divergent transitions"


def gate_failures(fit: Mapping[str, Any]) -> list[str]:
    """The diagnostics of a fit record (``max_rhat``, ``divergences``) that fail
    :data:`POPULATION_GATE`, each as a phrase (empty: it passes)."""
    from cogtestbed.inference.hierarchical_diagnostics import RHAT_MAX

    out = []
    rhat = fit.get("max_rhat")
    if rhat is None or not float(rhat) <= RHAT_MAX:
        out.append(f"max R-hat {'none' if rhat is None else f'{float(rhat):.3f}'} (must be <= {RHAT_MAX})")
    if fit.get("divergences"):
        out.append(f"{fit['divergences']} divergent transitions (must be 0)")
    return out


class Population(BaseModel):
    """The posterior of a hierarchical fit's group parameters (one model of one experiment).

    Attributes
    ----------
    name, experiment, model : str
        What it is and the model its draws are of.
    subjects : int
        People in the fit.
    mu, sigma : dict
        Posterior draws of each parameter's group mean and SD (unconstrained scale).

    Examples
    --------
    >>> import cogtestbed as ct
    >>> pop = ct.population("human:shahar2019")
    >>> pop.name, pop.subjects
    ('shahar2019', 40)
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    #: Its name (``human:NAME`` finds a shipped one).
    name: str
    experiment: str
    model: str
    #: Where its data came from (paper, data set, licence), for reports.
    source: str = ""
    #: Subjects of the fitted sample, and the median trials each played.
    subjects: int = Field(ge=2)
    trials: int | None = None
    #: Posterior draws of ``{p}_mu`` and ``{p}_sigma`` (unconstrained scale), one entry per parameter.
    mu: dict[str, tuple[float, ...]]
    sigma: dict[str, tuple[float, ...]]
    #: The fitted sample's per-subject MLE of every parameter (None: not fitted, or not identified).
    estimates: dict[str, tuple[float | None, ...]] = Field(default_factory=dict)
    #: The fit's diagnostics (max R-hat, divergences, chains, draws, sampler, seconds) and how it was made.
    fit: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shapes(self) -> Population:
        if set(self.mu) != set(self.sigma) or not self.mu:
            raise PopulationError(f"population {self.name}: mu and sigma must name the same parameters")
        lengths = {len(v) for v in (*self.mu.values(), *self.sigma.values())}
        if len(lengths) != 1 or lengths.pop() < 2:
            raise PopulationError(f"population {self.name}: every parameter needs the same number (>= 2) of draws")
        return self._check_values()

    def _check_values(self) -> Population:
        negative = [k for k, v in self.sigma.items() if any(s < 0 for s in v)]
        if negative:
            raise PopulationError(f"population {self.name}: field sigma.{negative[0]}: a population SD draw is "
                                  "negative")
        if self.estimates and (set(self.estimates) != set(self.mu)
                               or {len(v) for v in self.estimates.values()} != {self.subjects}):
            raise PopulationError(f"population {self.name}: the per-subject estimates need one value per subject "
                                  f"({self.subjects}) for every parameter")
        return self

    @property
    def n_draws(self) -> int:
        """Posterior draws kept."""
        return len(next(iter(self.mu.values())))

    @property
    def label(self) -> str:
        """How reports name it: ``NAME (MODEL, N subjects)``."""
        return f"{self.name} ({self.model}, {self.subjects} subjects)"

    def check(self, parameters: ParameterSet, experiment: str | None = None) -> None:
        """Refuse (one line) a model whose parameters are not this population's, another
        experiment, or implausible group parameters (:meth:`implausible`)."""
        if experiment is not None and experiment != self.experiment:
            raise PopulationError(f"population {self.name} is of experiment {self.experiment}, not {experiment}")
        if set(parameters.names) != set(self.mu):
            raise PopulationError(f"population {self.name} is of model {self.model} ({', '.join(self.mu)}); "
                                  f"the study's model has {', '.join(parameters.names)}")
        reason = self.implausible(parameters)
        if reason:
            raise PopulationError(f"population {self.name}: {reason}")

    def implausible(self, parameters: ParameterSet) -> str | None:
        """Why a group parameter is implausible (None: none is): the posterior median of
        ``{p}_mu`` puts the population median, on the natural scale, outside the parameter's range
        or onto one of its bounds (μ = 1e6 puts every subject at a bound), named by its field."""
        for p in parameters:
            mu = float(np.median(np.asarray(self.mu[p.name], float)))
            with np.errstate(over="ignore"):
                median = float(p.to_constrained(mu))
            if not (math.isfinite(median) and p.lower < median < p.upper):
                return (f"field mu.{p.name}: posterior median {mu:.6g} (unconstrained) puts the population median "
                        f"at {median:.6g}, {'outside' if not p.lower <= median <= p.upper else 'on a bound of'} "
                        f"{p.name}'s range [{p.lower:g}, {p.upper:g}]: not a population to simulate from")
        return None

    def gate_warning(self) -> str | None:
        """The one warning line of a population whose fit fails :data:`POPULATION_GATE` (None: passes)."""
        failed = gate_failures(self.fit)
        if not failed:
            return None
        allowed = " (built with --allow-unconverged)" if self.fit.get("unconverged_allowed") else ""
        return (f"population {self.name} fails the population gate ({POPULATION_GATE}): {'; '.join(failed)}"
                f"{allowed}; its draws are used as they are")

    def use_warning(self) -> str | None:
        """The one warning line of a population about to be simulated from (None: none): its
        :meth:`gate_warning`, else where its fit's own verdict says it did not converge (an ESS floor the gate
        does not hold, e.g. a tail ESS under 400), that verdict."""
        gate = self.gate_warning()
        if gate is not None or self.fit.get("converged") is not False:
            return gate
        verdict = self.fit.get("verdict") or "NOT converged"
        return f"population {self.name}'s fit did not converge by its own verdict ({verdict}); its draws are used as " \
               "they are"

    def draw(self, rng: np.random.Generator) -> int:
        """One posterior draw's index, uniformly."""
        return int(rng.integers(self.n_draws))

    def location(self, parameters: ParameterSet, draw: int | np.ndarray,
                 shift: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
        """``{p}_mu`` of posterior draw(s) ``draw``, each population median moved by ``shift[p]``
        on the natural scale (an effect, as a power study moves its base); a shift that takes a
        draw's median to or past a bound is refused in one line."""
        out = {}
        for p in parameters:
            mu = np.asarray(self.mu[p.name], float)[draw]
            step = float((shift or {}).get(p.name, 0.0))
            if step:
                median = np.asarray(p.to_constrained(mu), float) + step
                bad = (median <= p.lower) | (median >= p.upper)
                if np.any(bad):
                    raise PopulationError(f"the effect moves {p.name} by {step:g} from population {self.name}'s "
                                          f"median, past its bounds [{p.lower:g}, {p.upper:g}] (in "
                                          f"{float(np.mean(bad)):.0%} of the draws tried): choose a smaller effect")
                mu = p.to_unconstrained(median)
            out[p.name] = np.asarray(mu, float)
        return out

    def sample(self, parameters: ParameterSet, n: int, rng: np.random.Generator,
               shift: Mapping[str, float] | None = None, each: bool = False,
               draw: int | None = None) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        """(population values of the draw used, ``n`` subjects' natural values): one posterior draw
        (``draw``, else drawn from ``rng``) shared by all subjects, or with ``each`` one per subject
        (the posterior predictive over the population's uncertainty, for an estimand).  Subjects
        are ``inside(constrain(mu + sigma·z))`` with ``z`` drawn subject-major, so a larger study's
        subjects extend a smaller one's."""
        self.check(parameters)
        idx: int | np.ndarray = rng.integers(self.n_draws, size=n) if each else (
            self.draw(rng) if draw is None else int(draw))
        z = rng.normal(size=(n, len(parameters)))
        mu = self.location(parameters, idx, shift)
        pop: dict[str, float] = {}
        subj: dict[str, np.ndarray] = {}
        for j, p in enumerate(parameters):
            sigma = np.asarray(self.sigma[p.name], float)[idx]
            subj[p.name] = p.inside(p.to_constrained(mu[p.name] + sigma * z[:, j]))
            if not each:
                pop[f"{p.name}_mu"], pop[f"{p.name}_sigma"] = float(mu[p.name]), float(sigma)
                pop[f"{p.name}_pop"] = float(p.inside(p.to_constrained(mu[p.name])))
        return pop, subj

    def medians(self, parameters: ParameterSet) -> dict[str, float]:
        """Each parameter's population median (natural scale): the posterior median of ``constrain(mu)``."""
        return {p.name: float(np.median(p.inside(p.to_constrained(np.asarray(self.mu[p.name], float)))))
                for p in parameters}

    def summary(self, parameters: ParameterSet, level: float = 0.95) -> dict[str, dict[str, Any]]:
        """Per parameter: the population median (natural scale) and the between-subject SD
        (unconstrained scale), each as its posterior median with a central ``level`` interval."""
        q = [(1 - level) / 2, 0.5, (1 + level) / 2]
        out: dict[str, dict[str, Any]] = {}
        for p in parameters:
            med = np.quantile(p.inside(p.to_constrained(np.asarray(self.mu[p.name], float))), q)
            sd = np.quantile(np.asarray(self.sigma[p.name], float), q)
            out[p.name] = {"median": float(med[1]), "median_interval": [float(med[0]), float(med[2])],
                           "sd_unconstrained": float(sd[1]), "sd_interval": [float(sd[0]), float(sd[2])],
                           "scale": p.transform}
        return out

    def sample_estimates(self) -> dict[str, np.ndarray]:
        """The fitted sample's per-subject MLE, every subject whatever its estimate (NaN only where
        the fit gave no finite value); refused in
        one line for a population saved without them."""
        if not self.estimates:
            raise PopulationError(f"population {self.name} carries no per-subject estimates of its sample: rebuild it "
                                  "from the fit with its trial table (population_from_fit(..., trials=TABLE))")
        return {k: np.array([np.nan if v is None else v for v in vals], float) for k, vals in self.estimates.items()}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the population as JSON (draws to :data:`DIGITS` significant digits)."""
        from cogtestbed.outputs import atomic_write_bytes

        dest = Path(path)
        text = json.dumps(self.model_dump(mode="json"), separators=(",", ":"))
        atomic_write_bytes(dest, lambda tmp: tmp.write_text(text))
        return dest


def _rounded(values: np.ndarray) -> tuple[float, ...]:
    return tuple(float(f"{v:.{DIGITS}g}") for v in np.asarray(values, float))


def load_population(source: str | os.PathLike[str] | Population, use: bool = False) -> Population:
    """A population: as given, ``human:NAME`` (a shipped one; a unique prefix of its name is
    enough, e.g. ``human:cogbench``) or the path of a saved population's JSON.  A malformed file is
    refused naming the field.  ``use``: it is about to be simulated from: one
    :class:`PopulationWarning` line where its fit fails :data:`POPULATION_GATE` or its own verdict
    (:meth:`Population.use_warning`)."""
    pop = _read_population(source)
    if use:
        import warnings

        message = pop.use_warning()
        if message:
            warnings.warn(message, PopulationWarning, stacklevel=2)
    return pop


def _read_population(source: str | os.PathLike[str] | Population) -> Population:
    if isinstance(source, Population):
        return source
    path = population_path(source)
    from pydantic import ValidationError

    try:
        return Population.model_validate_json(path.read_text())
    except ValidationError as exc:
        first: dict[str, Any] = dict(exc.errors()[0]) if exc.errors() else {}
        inner = (first.get("ctx") or {}).get("error")
        if isinstance(inner, InputError):  # a validator's own refusal names what is wrong
            raise DataError(f"{path} is not a population file: {inner}") from None
        field = ".".join(str(x) for x in first.get("loc", ())) or "(the file)"
        raise DataError(f"{path} is not a population file: field {field}: {first.get('msg', exc)}") from None
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        raise DataError(f"{path} is not a population file: {str(exc).splitlines()[0]}") from None


def population_from_fit(fit: Any, *, name: str, experiment: str, model: Any, trials: Any = None,
                        source: str = "", keep: int = KEEP_DRAWS, allow_unconverged: bool = False) -> Population:
    """A :class:`Population` from a hierarchical fit (:class:`~cogtestbed.inference.hierarchical.BayesFit`
    of ``model``, a :class:`~cogtestbed.inference.base.CognitiveModel`): the posterior draws of every
    parameter's ``{p}_mu`` and ``{p}_sigma`` (thinned evenly to ``keep``), and, with ``trials`` (the
    fitted trial table), each subject's per-subject MLE and the median trials per subject.

    Refuses a fit that fails :data:`POPULATION_GATE` (max R-hat above 1.01, divergent
    transitions, or no R-hat: one chain) unless ``allow_unconverged``; the fit's diagnostics are
    kept either way."""
    diag = fit.diagnostics
    problems = gate_failures({"max_rhat": diag.max_rhat, "divergences": diag.divergences})
    if problems and not allow_unconverged:
        raise PopulationError(f"the fit of {getattr(model, 'name', model)} is not a population to plan with: "
                              f"{'; '.join(problems)} (sample longer, or pass allow_unconverged / "
                              "`allow_unconverged` to keep it anyway)")
    post = fit.idata.posterior
    params = model.parameters
    missing = [v for p in params.names for v in (f"{p}_mu", f"{p}_sigma") if v not in post]
    if missing:
        raise PopulationError(f"the fit has no {', '.join(missing)}: a population needs a hierarchical fit "
                              "(method hierarchical) of every parameter")
    total = int(post.sizes["chain"] * post.sizes["draw"])
    pick = np.unique(np.linspace(0, total - 1, min(keep, total)).round().astype(int))
    mu = {p: _rounded(post[f"{p}_mu"].values.reshape(-1)[pick]) for p in params.names}
    sigma = {p: _rounded(post[f"{p}_sigma"].values.reshape(-1)[pick]) for p in params.names}
    n_subjects = int(post.sizes["subject"]) if "subject" in post.sizes else 0
    extra: dict[str, Any] = {}
    if trials is not None:
        extra = _sample_of(model, trials)
        n_subjects = len(next(iter(extra["estimates"].values())))
    from cogtestbed.inference.samplers import provenance_of

    record = {**diag.as_dict(), **provenance_of(fit.idata), "unconverged_allowed": bool(problems),
              "kept_draws": len(pick), "unidentified_subjects": len(getattr(fit, "unidentified", {}) or {})}
    record = {k: v for k, v in record.items() if k not in ("problems",)}
    return Population(name=name, experiment=experiment, model=getattr(model, "name", str(model)), source=source,
                      subjects=n_subjects, mu=mu, sigma=sigma, fit=json.loads(json.dumps(record, default=str)),
                      **extra)


def _sample_of(model: Any, trials: Any) -> dict[str, Any]:
    """Per-subject MLE of every parameter of the sample (subjects sorted; None where the fit gave no
    finite value), as a test's per-subject MLE of simulated subjects keeps them, and the median
    trials per subject."""
    fits = model.fit_mle(trials).sort_values("subject", kind="stable")
    estimates = {p: tuple(float(f"{v:.{DIGITS}g}") if math.isfinite(v) else None for v in fits[p].to_numpy(float))
                 for p in model.parameters.names}
    counts = trials.groupby("subject").size().to_numpy()
    return {"estimates": estimates, "trials": int(np.median(counts))}

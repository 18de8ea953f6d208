"""Metropolis-within-Gibbs for centred hierarchical fits whose subjects have several posterior modes
(``fit_hierarchical(..., sampler="gibbs")``).

**Experimental**: the package's own MCMC sampler, registered as the experimental kind
``gibbs`` (:data:`~cogtestbed.inference.hierarchical_sampling.GIBBS`; its provenance, this package's
version and commit, is written into every posterior and population it makes); ``auto`` never picks it.
It stays only by a measured decision against maintained samplers (nutpie at a low-rank mass matrix,
more or longer NUTS chains).

NUTS moves every variable along one trajectory; a subject whose likelihood has two low regions
separated by a barrier of a few nats (Spektor et al.'s participant 273 under prospect theory:
λ ≈ 1.5 and λ ≈ 8–10, 4.4 nats between; docs/risky-choice.md) is crossed so rarely that R-hat stays
above 1.01 however long the chains (1.0107 after 2,000 draws a chain, 1.0135 after 3,000).  Given the
population, the subjects of a hierarchical model are independent (their centred values
``u_i ~ Normal(mu, sigma)``, each with its own likelihood), so the posterior can be sampled by
alternating two conditionals (Gelfand & Smith 1990; Metropolis-within-Gibbs, Tierney 1994):

1. **the population given the subjects** — :class:`PopulationStep`, parameter by parameter: ``{p}_mu``
   from its normal full conditional, ``{p}_sigma`` by an independence Metropolis–Hastings step whose
   proposal is the inverse-gamma conditional under a flat prior (exact; no pass over the observations);
2. **each subject given the population** — :class:`SubjectBlockStep`, every subject at once (one pass of
   the model's likelihood kernel over all observations per evaluation; each subject accepted or rejected
   on its own, exact because the subjects' conditionals are independent), two kernels in turn, each
   leaving the conditional invariant:

   - an **HMC move** (Neal 2011) with the subject's own step size and mass matrix (the kernel's exact
     gradient; step size tuned towards acceptance :data:`HMC_TARGET_ACCEPT`, mass matrix the covariance of
     the subject's tuning draws in Stan's doubling windows, Haario et al. 2001), for the ridges a
     random walk crawls along;
   - an **independence proposal** from a mixture of multivariate t (df :data:`JUMP_DF`): one component at
     each of the subject's local modes, found before sampling by BFGS from spread Sobol starts under a
     widened prior (:data:`MODE_SEARCH_WIDTH` × the parameter's prior SD), scale :data:`JUMP_INFLATION` ×
     its Laplace covariance, and after the first window one at the tuning draws' mean and covariance:
     a jump between modes is one accepted proposal.

Both kernels are fixed after tuning (the proposals depend on the data and the tuning draws only), so
the chain after tuning is a valid Markov chain whatever the adaptation did.  Every parameter must be
sampled centred (``centred_parameters``), the model must have a pointwise likelihood kernel.  The
constants are cogtestbed's choices, not a paper's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError

#: Mean acceptance probability each subject's HMC step size is tuned towards unless the fit names one
#: (``fit_hierarchical`` passes the model's ``target_accept``, or NUTS's default 0.9); cogtestbed's choice.
HMC_TARGET_ACCEPT = 0.8
#: Energy error above which a subject's HMC trajectory counts as divergent (Stan's threshold).
DIVERGENCE = 1000.0
#: Mean leapfrog steps of a subject's HMC move (each one likelihood-and-gradient pass over every observation).
HMC_STEPS = 5
#: Degrees of freedom of the mode-jump proposal's t components (heavier tails than the modes).
JUMP_DF = 5.0
#: Each t component's scale matrix is this multiple of its mode's Laplace covariance.
JUMP_INFLATION = 2.0
#: Modes are searched under a prior this many times wider than the parameter's own prior SD, so a mode
#: that the fitted population favours less (λ ≈ 10 under a population centred near 1) is still found.
MODE_SEARCH_WIDTH = 2.0
#: Sobol starts per subject for the mode search (the best :data:`MODE_STARTS_KEPT` are refined by BFGS).
MODE_STARTS = 128
MODE_STARTS_KEPT = 8
#: Starts refined by BFGS are at least this far apart (in search-prior SDs, Euclidean).
START_SPACING = 1.0
#: Modes kept per subject (the lowest), and the Mahalanobis distance under which two optima are one mode.
MAX_MODES = 4
SAME_MODE = 1.0


@dataclass(frozen=True)
class SubjectData:
    """The pooled kernel arrays of a fit's subjects (``kernel_pymc_model``'s order)."""

    subjects: list[Any]
    obs_subject: np.ndarray
    arrays: list[np.ndarray]


@dataclass(frozen=True)
class Proposals:
    """Per-subject proposals: mode locations (n, M, k), Cholesky factors (n, M, k, k), log weights
    (n, M) (−inf pads a subject with fewer modes; the last slot is the tuning draws' component, empty until
    the first covariance window), and the Cholesky factor of each subject's HMC mass matrix (n, k, k): the
    Laplace covariance at its best mode until the first window."""

    loc: np.ndarray
    chol: np.ndarray
    log_weight: np.ndarray
    walk_chol: np.ndarray

    @property
    def n_modes(self) -> np.ndarray:
        return np.isfinite(self.log_weight).sum(axis=1)


class SubjectLikelihood:
    """Log-likelihood of every subject at unconstrained values ``U`` (n, k): one kernel pass."""

    def __init__(self, model: Any, data: SubjectData) -> None:
        self.model = model
        self.params = list(model.parameters)
        self.kernel = model.kernel()
        self.data = data
        self.n = len(data.subjects)
        counts = np.bincount(data.obs_subject, minlength=self.n)
        ordered = bool(np.all(np.diff(data.obs_subject) >= 0))
        self.starts = (np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
                       if ordered and self.n and np.all(counts > 0) else None)

    def natural(self, U: np.ndarray) -> np.ndarray:
        return np.column_stack([p.to_constrained(U[:, j]) for j, p in enumerate(self.params)])

    def __call__(self, U: np.ndarray) -> np.ndarray:
        """Log-likelihood of every subject at ``U`` (n, k)."""
        return self.with_gradient(U)[0]

    def with_gradient(self, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(log-likelihood of every subject (n,), its gradient in ``U`` (n, k)): the kernel's gradient in
        its columns summed per subject, taken back through the embedding and each parameter's transform.
        A subject whose sum is not finite gets log-likelihood −inf (NaN included) and, where only its
        gradient overflowed (θ far out), gradient 0: the leapfrog map stays volume-preserving and reversible
        whatever the force, and the acceptance uses the exact density."""
        nat = self.natural(U)
        theta = np.ascontiguousarray(self.model.kernel_theta(nat))
        ll, grad = self.kernel(theta, self.data.obs_subject, *self.data.arrays)
        with np.errstate(invalid="ignore", over="ignore"):
            total_ll = self.per_subject(np.asarray(ll))
            total_grad = self.per_subject(np.asarray(grad)) @ self.model.embedding()[0].T
            slope = np.column_stack([p.constrained_slope(nat[:, j]) for j, p in enumerate(self.params)])
            gradient = total_grad * slope
        return (np.where(np.isnan(total_ll), -np.inf, total_ll),
                np.where(np.isfinite(gradient), gradient, 0.0))

    def per_subject(self, values: np.ndarray) -> np.ndarray:
        """Sums of ``values`` (N,) or (N, K) over each subject's observations (contiguous: ``obs_subject``
        is sorted) — one ``reduceat`` where every subject has an observation, else per-column bincounts."""
        if self.starts is not None:
            return np.asarray(np.add.reduceat(values, self.starts, axis=0))
        if values.ndim == 1:
            return np.bincount(self.data.obs_subject, weights=values, minlength=self.n)
        return np.column_stack([np.bincount(self.data.obs_subject, weights=values[:, j], minlength=self.n)
                                for j in range(values.shape[1])])


def subject_data(model: Any, trials: pd.DataFrame) -> SubjectData:
    from cogtestbed.inference.hierarchical_op import pool_model_arrays

    subjects, idx, arrays = pool_model_arrays(model, trials)
    return SubjectData(subjects, idx, list(arrays.values()))


def normal_logpdf(U: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Σ_j log Normal(U_ij | mu_j, sd_j) per row."""
    z = (U - mu) / sd
    return np.sum(-0.5 * z * z - np.log(sd) - 0.5 * np.log(2.0 * np.pi), axis=1)


# ----------------------------------------------------------------------------- the mode search
def one_subject(model: Any, data: SubjectData, i: int) -> SubjectLikelihood:
    """The likelihood of subject ``i`` alone (its observations, index 0)."""
    mask = data.obs_subject == i
    return SubjectLikelihood(model, SubjectData([data.subjects[i]], np.zeros(int(mask.sum()), dtype=np.int64),
                                                [np.ascontiguousarray(a[mask]) for a in data.arrays]))


def laplace_covariance(f: Any, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Inverse of the central-difference Hessian of ``f`` at ``x`` (steps 1e-4 · ``scale``), its
    eigenvalues floored at 1e-3 and capped below at the search prior's precision."""
    k = x.size
    h = 1e-4 * scale
    H = np.empty((k, k))
    for a in range(k):
        for b in range(a, k):
            ea, eb = np.eye(k)[a] * h[a], np.eye(k)[b] * h[b]
            H[a, b] = H[b, a] = (f(x + ea + eb) - f(x + ea - eb) - f(x - ea + eb) + f(x - ea - eb)) / (4 * h[a] * h[b])
    w, V = np.linalg.eigh(0.5 * (H + H.T))
    w = np.clip(w, 1.0 / np.max(scale) ** 2, 1e3 / np.min(scale) ** 2) if np.all(np.isfinite(w)) else 1 / scale ** 2
    return (V / w) @ V.T


def subject_modes(model: Any, data: SubjectData, i: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """The local modes of subject ``i``'s likelihood under the widened prior: (u, Laplace covariance,
    negative log density), lowest first, at most :data:`MAX_MODES`."""
    from scipy import optimize, stats

    params = list(model.parameters)
    mean = np.array([p.prior_mean for p in params])
    sd = MODE_SEARCH_WIDTH * np.array([p.prior_sd for p in params])
    lik = one_subject(model, data, i)

    def f(u: np.ndarray) -> float:
        v = -(lik(np.atleast_2d(u))[0] + normal_logpdf(np.atleast_2d(u), mean, sd)[0])
        return float(v) if np.isfinite(v) else 1e300

    def f_grad(u: np.ndarray) -> tuple[float, np.ndarray]:
        ll, g = lik.with_gradient(np.atleast_2d(u))
        v = -(ll[0] + normal_logpdf(np.atleast_2d(u), mean, sd)[0])
        if not np.isfinite(v):
            return 1e300, np.zeros_like(u)
        return float(v), -(g[0] - (u - mean) / sd ** 2)

    sobol = stats.qmc.Sobol(len(params), scramble=True, seed=seed).random(MODE_STARTS)
    starts = mean + sd * stats.norm.ppf(np.clip(sobol, 1e-6, 1 - 1e-6))
    values = -(lik_rows(lik, starts) + normal_logpdf(starts, mean, sd))
    found: list[tuple[np.ndarray, np.ndarray, float]] = []
    for x0 in spread_starts(starts, values, sd):
        res = optimize.minimize(f_grad, x0, jac=True, method="BFGS")
        if not np.isfinite(res.fun) or res.fun >= 1e299:
            continue
        cov = laplace_covariance(f, res.x, sd)
        prec = np.linalg.inv(cov)
        if all((res.x - x) @ prec @ (res.x - x) > SAME_MODE ** 2 for x, _, _ in found):
            found.append((res.x, cov, float(res.fun)))
    if not found:
        found.append((mean, np.diag(sd ** 2), float("inf")))
    return sorted(found, key=lambda t: t[2])[:MAX_MODES]


def spread_starts(starts: np.ndarray, values: np.ndarray, sd: np.ndarray) -> list[np.ndarray]:
    """Up to :data:`MODE_STARTS_KEPT` starts, best first, each at least :data:`START_SPACING` search-prior
    SDs from those already chosen: the best few of a Sobol set lie in one basin, and a second mode's
    basin would get no start."""
    chosen: list[np.ndarray] = []
    for j in np.argsort(values):
        if not np.isfinite(values[j]):
            break
        if all(np.linalg.norm((starts[j] - c) / sd) >= START_SPACING for c in chosen):
            chosen.append(starts[j])
        if len(chosen) == MODE_STARTS_KEPT:
            break
    return chosen


def lik_rows(lik: SubjectLikelihood, rows: np.ndarray) -> np.ndarray:
    """The log-likelihood of :func:`one_subject`'s ``lik`` at each row of ``rows`` (R, k): its data tiled R
    times, one pass."""
    single, copies = lik.data, len(rows)
    tiled = SubjectData(list(range(copies)), np.repeat(np.arange(copies), single.obs_subject.size),
                        [np.ascontiguousarray(np.concatenate([a] * copies)) for a in single.arrays])
    return SubjectLikelihood(lik.model, tiled)(rows)


def build_proposals(model: Any, data: SubjectData, seed: int) -> Proposals:
    """:class:`Proposals` from :func:`subject_modes` of every subject."""
    modes = [subject_modes(model, data, i, seed + i) for i in range(len(data.subjects))]
    k = len(model.parameters)
    m = max(len(x) for x in modes) + 1  # the last slot: the tuning draws' component (SubjectBlockStep)
    n = len(modes)
    loc = np.zeros((n, m, k))
    chol = np.tile(np.eye(k), (n, m, 1, 1))
    logw = np.full((n, m), -np.inf)
    walk = np.empty((n, k, k))
    for i, found in enumerate(modes):
        for j, (x, cov, _) in enumerate(found):
            loc[i, j] = x
            chol[i, j] = np.linalg.cholesky(JUMP_INFLATION * cov)
            logw[i, j] = -np.log(len(found))
        walk[i] = np.linalg.cholesky(found[0][1])
    return Proposals(loc, chol, logw, walk)


# ----------------------------------------------------------------------------- the mixture of t
def mixture_logpdf(U: np.ndarray, prop: Proposals) -> np.ndarray:
    """log q(U_i) of every subject's t mixture (n,)."""
    from scipy.special import gammaln, logsumexp

    n, m, k = prop.loc.shape
    diff = U[:, None, :] - prop.loc  # (n, m, k)
    z = np.linalg.solve(prop.chol, diff[..., None])[..., 0]
    maha = np.sum(z * z, axis=-1)
    logdet = np.sum(np.log(np.diagonal(prop.chol, axis1=-2, axis2=-1)), axis=-1)
    df = JUMP_DF
    const = gammaln((df + k) / 2) - gammaln(df / 2) - 0.5 * k * np.log(df * np.pi)
    comp = const - logdet - 0.5 * (df + k) * np.log1p(maha / df)
    return np.asarray(logsumexp(comp + prop.log_weight, axis=1))


def mixture_draw(prop: Proposals, rng: np.random.Generator) -> np.ndarray:
    """One draw of every subject's t mixture (n, k)."""
    n, m, k = prop.loc.shape
    cum = np.asarray(np.cumsum(np.exp(prop.log_weight), axis=1), dtype=np.float64)
    cum = cum / cum[:, -1:]  # the last entry exactly 1; a padded slot (weight 0) is never the first above u
    comp = np.argmax(np.asarray(rng.uniform(size=n))[:, None] < cum, axis=1)
    rows = np.arange(n)
    z = rng.standard_normal((n, k))
    scale = np.sqrt(rng.chisquare(JUMP_DF, size=n) / JUMP_DF)
    return np.asarray(prop.loc[rows, comp] + np.einsum("nij,nj->ni", prop.chol[rows, comp], z) / scale[:, None])


# ----------------------------------------------------------------------------- the PyMC step
#: Tuning iterations of the covariance windows (each twice the last, Stan's doubling windows): at the end of
#: each, every subject's random walk takes the covariance of its draws in the window (Haario et al. 2001).
FIRST_WINDOW = 50


class CovarianceWindow:
    """Per-subject running covariance of the tuning draws in doubling windows (Welford's update)."""

    def __init__(self, n: int, k: int) -> None:
        self.length, self.count = FIRST_WINDOW, 0
        self.mean, self.m2 = np.zeros((n, k)), np.zeros((n, k, k))

    def add(self, U: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Add a draw; at a window's end return the window's mean and covariance of every subject
        (shrunk slightly towards 1e-3·I, Stan's regularisation) and start the next window, else None."""
        self.count += 1
        delta = U - self.mean
        self.mean += delta / self.count
        self.m2 += np.einsum("ni,nj->nij", delta, U - self.mean)
        if self.count < self.length:
            return None
        c, k = self.count, U.shape[1]
        cov = (c / (c + 5.0)) * self.m2 / (c - 1) + (5.0 / (c + 5.0)) * 1e-3 * np.eye(k)
        out = (self.mean.copy(), cov)
        self.length, self.count = 2 * self.length, 0
        self.mean[:], self.m2[:] = 0.0, 0.0
        return out


def tuned_proposals(prop: Proposals, walk_chol: np.ndarray, mean: np.ndarray, cov: np.ndarray
                    ) -> tuple[Proposals, np.ndarray]:
    """The proposals after a covariance window (:class:`CovarianceWindow`): each subject's random walk takes
    the window's covariance (Haario et al. 2001), and the mixture's last slot becomes a t component at the
    window's mean with :data:`JUMP_INFLATION` × its covariance, weight 1/2 (the modes share the other
    half): a subject whose posterior is a long curved ridge, where a random walk crawls, gets independent
    proposals that cover it.  A subject whose covariance is not positive definite keeps its old ones."""
    try:
        chol = np.linalg.cholesky(cov)
        ok = np.ones(len(cov), dtype=bool)
    except np.linalg.LinAlgError:
        ok = np.array([np.all(np.linalg.eigvalsh(c) > 0) for c in cov])
        chol = np.array([np.linalg.cholesky(c) if good else np.eye(len(c)) for c, good in zip(cov, ok, strict=True)])
    loc, jump, logw = prop.loc.copy(), prop.chol.copy(), prop.log_weight.copy()
    modes = np.isfinite(logw[:, :-1]).sum(axis=1)
    loc[ok, -1] = mean[ok]
    jump[ok, -1] = np.sqrt(JUMP_INFLATION) * chol[ok]
    logw[ok, :-1] = np.where(np.isfinite(logw[ok, :-1]), np.log(0.5 / modes[ok])[:, None], -np.inf)
    logw[ok, -1] = np.log(0.5)
    walk = walk_chol.copy()
    walk[ok] = chol[ok]
    return Proposals(loc, jump, logw, prop.walk_chol), walk


def _block_step_class() -> Any:
    from pymc.step_methods.compound import BlockedStep

    class SubjectBlockStep(BlockedStep):
        """Metropolis–Hastings on every subject's centred values given the population (module docstring)."""

        stats_dtypes_shapes: dict[str, tuple[Any, list[int]]] = {
            "hmc_accept": (np.float64, []), "jumps": (np.int64, []), "hmc_divergent": (np.int64, [])}

        def __init__(self, vars: Any, model: Any = None, blocked: bool = True, rng: Any = None, *,
                     names: list[str] | None = None, likelihood: Any = None,
                     proposals: Any = None, target_accept: float = HMC_TARGET_ACCEPT) -> None:
            self.vars = vars
            self.rng = np.random.default_rng(rng)
            self.names = list(names or [])
            self.likelihood = likelihood
            self.target_accept = target_accept
            self.initial = proposals
            self.reset_tuning()

        def reset_tuning(self) -> None:
            """Every chain starts from the untuned proposals: PyMC runs the chains of one process through
            the same step object, and a chain must not inherit another's adaptation."""
            self.tune = True
            self.proposals = self.initial
            self.log_step = np.full(self.likelihood.n, np.log(0.5))
            self.walk_chol = self.initial.walk_chol.copy()
            self.window = CovarianceWindow(self.likelihood.n, len(self.names))

        def step(self, point: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
            U = np.column_stack([point[f"{n}_u"] for n in self.names])
            mu = np.array([float(point[f"{n}_mu"]) for n in self.names])
            sd = np.exp(np.array([float(point[f"{n}_sigma_log__"]) for n in self.names]))
            U, cur, accepted, diverging = self._hamiltonian(U, mu, sd)
            if self.tune:
                window = self.window.add(U)
                if window is not None:
                    self.proposals, self.walk_chol = tuned_proposals(self.proposals, self.walk_chol, *window)
            prop = mixture_draw(self.proposals, self.rng)
            correction = mixture_logpdf(U, self.proposals) - mixture_logpdf(prop, self.proposals)
            U, cur, jumped = self._accept(U, cur, prop, mu, sd, correction)
            out = dict(point)
            for j, n in enumerate(self.names):
                out[f"{n}_u"] = np.ascontiguousarray(U[:, j])
            return out, [{"hmc_accept": accepted, "jumps": int(jumped.sum()), "hmc_divergent": diverging}]

        def _hamiltonian(self, U: np.ndarray, mu: np.ndarray, sd: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, float, int]:
            """One HMC move of every subject at once (Neal 2011), each accepted on its own: whitened by its
            covariance factor ``walk_chol`` (a per-subject mass matrix), its own step size (tuned towards
            acceptance :data:`HMC_TARGET_ACCEPT`), a shared number of leapfrog steps drawn uniformly from
            1 .. 2·:data:`HMC_STEPS` − 1 (a state-independent jitter, so the move stays reversible).
            Returns the new values, their log densities, the mean acceptance probability and the number of
            divergent trajectories (energy error above :data:`DIVERGENCE` or not finite, Stan's rule), each
            rejected: the fit's diagnostics report them (``divergent_rejections``) beside, not as, NUTS's
            divergences."""
            def density(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                # a trajectory that runs far out overflows; its end has no finite density and is rejected
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    ll, g = self.likelihood.with_gradient(X)
                    lp = ll + normal_logpdf(X, mu, sd)
                    g = g - (X - mu) / sd ** 2
                return np.where(np.isfinite(lp), lp, -np.inf), np.where(np.isfinite(g), g, 0.0)

            chol = self.walk_chol
            eps = stable_steps(np.exp(self.log_step), chol, sd)[:, None]
            steps = int(self.rng.integers(1, 2 * HMC_STEPS))
            p = self.rng.standard_normal(U.shape)
            lp0, g = density(U)
            h0 = -lp0 + 0.5 * np.sum(p * p, axis=1)
            X = U.copy()
            with np.errstate(over="ignore", invalid="ignore"):
                p = p + 0.5 * eps * np.einsum("nji,nj->ni", chol, g)
                for s in range(steps):
                    X = X + eps * np.einsum("nij,nj->ni", chol, p)
                    lp, g = density(X)
                    p = p + (eps if s < steps - 1 else 0.5 * eps) * np.einsum("nji,nj->ni", chol, g)
                h1 = -lp + 0.5 * np.sum(p * p, axis=1)
                log_accept = np.where(np.isfinite(h1) & np.isfinite(lp0), h0 - h1, -np.inf)
            accept = np.log(self.rng.uniform(size=U.shape[0])) < log_accept
            probability = np.exp(np.minimum(log_accept, 0.0))
            if self.tune:
                self.log_step += 0.05 * (probability - self.target_accept)
            diverging = int(np.sum(~(log_accept > -DIVERGENCE)))
            return np.where(accept[:, None], X, U), np.where(accept, lp, lp0), float(probability.mean()), diverging

        def _accept(self, U: np.ndarray, cur: np.ndarray, prop: np.ndarray, mu: np.ndarray, sd: np.ndarray,
                    correction: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a t draw far out
                new = self.likelihood(prop) + normal_logpdf(prop, mu, sd)
                log_ratio = np.where(np.isfinite(new), new - cur + correction, -np.inf)
            acc = np.log(self.rng.uniform(size=U.shape[0])) < log_ratio
            return np.where(acc[:, None], prop, U), np.where(acc, new, cur), acc

    return SubjectBlockStep


def all_centred(model: Any, trials: pd.DataFrame, hierarchical: bool) -> Any:
    """A copy of ``model`` that samples every parameter centred (the same posterior in another
    parameterisation: :func:`~cogtestbed.inference.hierarchical.subject_parameters`), or
    :class:`InputError` in one line where the Gibbs sampler has nothing to alternate: independent subjects
    (``hierarchical=False``) or fewer than two subjects (the population's SD has no conditional)."""
    import copy

    if not hierarchical:
        raise InputError("sampler='gibbs' samples a population and its subjects; with independent subjects "
                         "(hierarchical=False) use nutpie or pymc")
    n = int(trials["subject"].nunique()) if "subject" in trials.columns else 0
    if n < 2:
        raise InputError(f"sampler='gibbs' needs at least 2 subjects to sample a population's SD; the table has {n}")
    names = tuple(getattr(getattr(model, "parameters", None), "names", ()) or ())
    if set(getattr(model, "centred_parameters", ())) >= set(names):
        return model
    centred = copy.copy(model)
    centred.centred_parameters = names
    return centred


def check_gibbs_model(model: Any, pm_model: Any) -> list[str]:
    """The parameter names of a model :func:`gibbs_steps` can sample, or :class:`InputError` in one line."""
    names = list(getattr(getattr(model, "parameters", None), "names", ()) or ())
    if not names or getattr(model, "kernel", None) is None or model.kernel() is None:
        raise InputError("sampler='gibbs' needs a cognitive model with a pointwise likelihood kernel")
    if getattr(pm_model, "cogtestbed_key", (None,))[0] != "kernel" or not pm_model.cogtestbed_key[2]:
        raise InputError("sampler='gibbs' samples the hierarchical model kernel_pymc_model builds "
                         "(not a prompt-form model, not independent subjects)")
    missing = [n for n in names if n not in set(getattr(model, "centred_parameters", ()))]
    if missing:
        raise InputError(f"sampler='gibbs' needs every parameter sampled centred; {', '.join(missing)} "
                         "are non-centred (set the model's centred_parameters to all its parameters)")
    expected = {f"{n}_{part}" for n in names for part in ("mu", "sigma", "u")}
    free = {v.name for v in pm_model.free_RVs}
    if free != expected:
        raise InputError(f"sampler='gibbs' samples populations of centred subjects only; this model's free "
                         f"variables are {', '.join(sorted(free))}")
    return names


#: A subject's leapfrog step (whitened) is at most this over the square root of the largest curvature of its
#: population prior, L^T diag(1/σ²) L: a leapfrog step is stable below 2/√curvature (Neal 2011, §5.4.4),
#: and where the population's σ is small (centred subjects with little data: a funnel) the prior's
#: curvature is what makes trajectories diverge.  The cap depends on σ, which the subject step conditions
#: on, so the move stays exact.
STABLE_STEP = 1.0


def stable_steps(steps: np.ndarray, chol: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Each subject's tuned step, capped by :data:`STABLE_STEP` / √(largest eigenvalue of L^T diag(1/σ²) L)."""
    curvature = np.einsum("nji,j,njk->nik", chol, 1.0 / sd ** 2, chol)
    top = np.linalg.eigvalsh(curvature)[:, -1]
    return np.minimum(steps, STABLE_STEP / np.sqrt(top))


def _population_step_class() -> Any:
    from pymc.step_methods.compound import BlockedStep

    class PopulationStep(BlockedStep):
        """The population given the subjects (module docstring, step 1), parameter by parameter: ``{p}_mu``
        drawn from its normal full conditional (conjugate: prior Normal(m0, s0), n subjects' ``u`` ~
        Normal(mu, sigma)), then ``{p}_sigma`` by an independence Metropolis–Hastings step whose proposal
        is σ² ~ InverseGamma((n − 1)/2, S/2), S = Σ(u − mu)² (the full conditional under a flat prior on σ):
        the HalfNormal(c) prior's factor exp(−σ²/2c²) is the acceptance ratio, near 1 when the subjects
        inform σ.  Exact, and no pass over the observations."""

        stats_dtypes_shapes: dict[str, tuple[Any, list[int]]] = {"sigma_accept": (np.float64, [])}

        def __init__(self, vars: Any, model: Any = None, blocked: bool = True, rng: Any = None, *,
                     names: list[str] | None = None, prior: Any = None) -> None:
            self.vars = vars
            self.rng = np.random.default_rng(rng)
            self.names = list(names or [])
            self.prior = prior  # (m0, s0, c) arrays, one entry per parameter

        def step(self, point: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
            out = dict(point)
            m0, s0, c = self.prior
            accepted = 0
            for j, n in enumerate(self.names):
                u = np.asarray(point[f"{n}_u"])
                sigma = float(np.exp(point[f"{n}_sigma_log__"]))
                precision = 1.0 / s0[j] ** 2 + u.size / sigma ** 2
                mean = (m0[j] / s0[j] ** 2 + u.sum() / sigma ** 2) / precision
                mu = mean + self.rng.standard_normal() / np.sqrt(precision)
                S = float(np.sum((u - mu) ** 2))
                proposal = np.sqrt(0.5 * S / self.rng.gamma(0.5 * (u.size - 1)))
                # S = 0 only at a start where every subject sits at the population mean: σ stays
                if proposal > 0.0 and np.log(self.rng.uniform()) < (sigma ** 2 - proposal ** 2) / (2.0 * c[j] ** 2):
                    sigma = float(proposal)
                    accepted += 1
                out[f"{n}_mu"] = np.asarray(mu)
                out[f"{n}_sigma_log__"] = np.asarray(np.log(sigma))
            return out, [{"sigma_accept": accepted / len(self.names)}]

    return PopulationStep


#: Acceptance the interweaving step's random-walk scales are tuned towards (cogtestbed's choice).
INTERWEAVE_TARGET_ACCEPT = 0.3


def _interweaving_step_class() -> Any:
    from pymc.step_methods.compound import BlockedStep

    class InterweavingStep(BlockedStep):
        """The population moved with the subjects' standardised offsets z = (u − μ)/σ held fixed (the
        non-centred conditional; ancillarity–sufficiency interweaving, Yu & Meng 2011): per parameter, a
        random-walk Metropolis step on (μ, log σ) with every subject's u = μ + σ·z moved along.  Its target
        is p(μ, σ | z, data) ∝ L(μ + σ·z)·p(μ)·p(σ), times σ for the log scale (the normal density of u and
        the Jacobian σⁿ of u = μ + σz cancel).  Centred Gibbs alone mixes slowly where subjects' data are
        weak (σ and the u's pin each other); this move changes σ without that coupling.  One likelihood pass
        per parameter; the random-walk scales are tuned during tuning, then fixed."""

        stats_dtypes_shapes: dict[str, tuple[Any, list[int]]] = {"interweave_accept": (np.float64, [])}

        def __init__(self, vars: Any, model: Any = None, blocked: bool = True, rng: Any = None, *,
                     names: list[str] | None = None, likelihood: Any = None, prior: Any = None) -> None:
            self.vars = vars
            self.rng = np.random.default_rng(rng)
            self.names = list(names or [])
            self.likelihood = likelihood
            self.prior = prior
            self.reset_tuning()

        def reset_tuning(self) -> None:
            self.tune = True
            n = max(2, self.likelihood.n)
            self.scales = np.column_stack([self.prior[1] / np.sqrt(n), np.full(len(self.names), 1 / np.sqrt(2 * n))])

        def step(self, point: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
            from scipy import stats

            m0, s0, c = self.prior
            U = np.column_stack([np.asarray(point[f"{n}_u"], dtype=float) for n in self.names])
            mu = np.array([float(point[f"{n}_mu"]) for n in self.names])
            log_sd = np.array([float(point[f"{n}_sigma_log__"]) for n in self.names])
            total = float(self.likelihood(U).sum())
            accepted = 0
            for j in range(len(self.names)):
                z = (U[:, j] - mu[j]) / np.exp(log_sd[j])
                new_mu = mu[j] + self.scales[j, 0] * self.rng.standard_normal()
                new_log_sd = log_sd[j] + self.scales[j, 1] * self.rng.standard_normal()
                moved = U.copy()
                moved[:, j] = new_mu + np.exp(new_log_sd) * z
                with np.errstate(over="ignore", invalid="ignore"):
                    new_total = float(self.likelihood(moved).sum())
                log_ratio = (new_total - total
                             + stats.norm.logpdf(new_mu, m0[j], s0[j]) - stats.norm.logpdf(mu[j], m0[j], s0[j])
                             + stats.norm.logpdf(np.exp(new_log_sd), 0.0, c[j]) + new_log_sd
                             - stats.norm.logpdf(np.exp(log_sd[j]), 0.0, c[j]) - log_sd[j])
                accept = bool(np.isfinite(log_ratio) and np.log(self.rng.uniform()) < log_ratio)
                if accept:
                    U, mu[j], log_sd[j], total = moved, new_mu, new_log_sd, new_total
                    accepted += 1
                if self.tune:
                    self.scales[j] *= np.exp(0.05 * (float(accept) - INTERWEAVE_TARGET_ACCEPT))
            out = dict(point)
            for j, n in enumerate(self.names):
                out[f"{n}_u"] = np.ascontiguousarray(U[:, j])
                out[f"{n}_mu"] = np.asarray(mu[j])
                out[f"{n}_sigma_log__"] = np.asarray(log_sd[j])
            return out, [{"interweave_accept": accepted / len(self.names)}]

    return InterweavingStep


def gibbs_steps(model: Any, trials: pd.DataFrame, pm_model: Any, seed: int,
                target_accept: float = HMC_TARGET_ACCEPT) -> list[Any]:
    """The two steps of the module docstring for ``pm_model`` (built by ``kernel_pymc_model``), subjects
    first (at PyMC's start every subject sits at the population mean); ``target_accept``: the mean
    acceptance each subject's HMC step size is tuned towards (``fit_hierarchical`` passes the model's, as
    it does to NUTS: smaller steps where a posterior's curvature makes trajectories diverge)."""
    from cogtestbed.inference.hierarchical_op import SD_SCALE

    names = check_gibbs_model(model, pm_model)
    data = subject_data(model, trials)
    if len(data.subjects) < 2:
        raise InputError(f"sampler='gibbs' needs at least 2 subjects with observations to sample a population's "
                         f"SD; {len(data.subjects)} of the table's subjects have any")
    proposals = build_proposals(model, data, seed)
    value = {v.name: v for v in pm_model.value_vars}
    params = list(model.parameters)
    prior = (np.array([p.prior_mean for p in params]), np.array([p.prior_sd for p in params]),
             SD_SCALE * np.array([p.prior_sd for p in params]))
    likelihood = SubjectLikelihood(model, data)
    check_target(pm_model, likelihood, names, prior, proposals, seed)
    with pm_model:
        population = _population_step_class()(
            vars=[value[f"{n}_mu"] for n in names] + [value[f"{n}_sigma_log__"] for n in names], names=names,
            prior=prior)
        block = _block_step_class()(vars=[value[f"{n}_u"] for n in names], names=names,
                                    likelihood=likelihood, proposals=proposals,
                                    target_accept=target_accept)
        interweave = _interweaving_step_class()(
            vars=[value[f"{n}_mu"] for n in names] + [value[f"{n}_sigma_log__"] for n in names], names=names,
            likelihood=likelihood, prior=prior)
    return [block, population, interweave]


def gibbs_log_density(point: dict[str, Any], likelihood: SubjectLikelihood, names: list[str], prior: Any) -> float:
    """The log posterior density the two steps sample, at a point of the PyMC model's value variables: the
    likelihood, the centred subjects' normal, the population priors (Normal, HalfNormal) and the
    log-Jacobian of σ's log transform."""
    from scipy import stats

    m0, s0, c = prior
    U = np.column_stack([np.asarray(point[f"{n}_u"], dtype=float) for n in names])
    mu = np.array([float(point[f"{n}_mu"]) for n in names])
    log_sd = np.array([float(point[f"{n}_sigma_log__"]) for n in names])
    sd = np.exp(log_sd)
    return float(likelihood(U).sum() + normal_logpdf(U, mu, sd).sum() + stats.norm.logpdf(mu, m0, s0).sum()
                 + (np.log(2.0) + stats.norm.logpdf(sd, 0.0, c)).sum() + log_sd.sum())


def check_target(pm_model: Any, likelihood: SubjectLikelihood, names: list[str], prior: Any, proposals: Proposals,
                 seed: int) -> None:
    """Refuse (:class:`InputError`, one line) a PyMC model whose log density is not the one the Gibbs steps
    sample: compared at two points near the subjects' modes (their difference, so constants cancel).  A
    model with an extra term (a ``Potential``), other priors or other data fails."""
    rng = np.random.default_rng([seed, 104_729])
    logp = pm_model.compile_logp(jacobian=True)
    gaps = []
    for _ in range(2):
        U = proposals.loc[:, 0] + 0.3 * rng.standard_normal(proposals.loc[:, 0].shape)
        point: dict[str, Any] = {}
        for j, n in enumerate(names):
            point[f"{n}_u"] = U[:, j]
            point[f"{n}_mu"] = np.asarray(U[:, j].mean() + 0.1 * rng.standard_normal())
            point[f"{n}_sigma_log__"] = np.asarray(np.log(U[:, j].std() + 0.2) + 0.1 * rng.standard_normal())
        gaps.append(float(logp(point)) - gibbs_log_density(point, likelihood, names, prior))
    if not np.isfinite(gaps).all() or abs(gaps[0] - gaps[1]) > 1e-6 * (1.0 + abs(gaps[0])):
        raise InputError(f"sampler='gibbs': the model's log density is not the hierarchical model the Gibbs "
                         f"steps sample (their gap moves by {abs(gaps[0] - gaps[1]):.3g} between two points): a "
                         "model with other priors or extra terms needs nutpie or pymc")


def dispersed_starts(block: Any, chains: int, seed: int) -> list[dict[str, Any]]:
    """Each chain's initial values (PyMC ``initvals``): every subject at a draw of its mode mixture, the
    component chosen uniformly among its modes (so chains start in different modes of a subject that has
    several: R-hat can only reveal a mode some chain visits), the population at those subjects' mean and
    SD.  Seeded from ``seed``; the chains' own random streams are PyMC's."""
    rng = np.random.default_rng([seed, 7_919])
    prop = block.initial
    modes = np.isfinite(prop.log_weight[:, :-1])
    uniform = np.where(modes, -np.log(modes.sum(axis=1, keepdims=True)), -np.inf)
    start = Proposals(prop.loc[:, :-1], prop.chol[:, :-1] / np.sqrt(JUMP_INFLATION), uniform, prop.walk_chol)
    out = []
    for _ in range(chains):
        U = mixture_draw(start, rng)
        point: dict[str, Any] = {}
        for j, n in enumerate(block.names):
            point[f"{n}_u"] = U[:, j]
            point[f"{n}_mu"] = float(U[:, j].mean())
            point[f"{n}_sigma"] = float(max(U[:, j].std(), 1e-3))
        out.append(point)
    return out

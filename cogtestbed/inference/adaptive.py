"""Adaptive design optimisation: a grid posterior over a model's parameters and the next trial that
maximises the expected information gain on the parameters a user names.

**The method** (Myung, Cavagnaro & Pitt 2013, "A tutorial on adaptive design optimization", J. Math.
Psychol. 57, eqs. 3-6; Ahn et al. 2020, Sci. Rep. 10, 12091 for delay discounting).  After the
answers ``y_1..t`` to the designs ``d_1..t`` the posterior is ``p(θ | y_1..t) ∝ p(θ) Π p(y_s | θ,
d_s)``; the next design maximises the mutual information between the answer and the target
parameters ``θ_T`` (the others, ``θ_N``, are integrated out)::

    U(d) = I(θ_T; Y | d) = H[p(y | d)] − Σ_t p(θ_T = t) H[p(y | θ_T = t, d)],
    p(y | θ_T = t, d) = Σ_n p(θ_N = n | θ_T = t) p(y | t, n, d)

computed **exactly** over the discrete answer space (a sum over answers, no sampling).  A
continuous answer (magnitude estimation) is read to equal-width bins for the choice (the midpoint
rule; a lower bound of the exact answer's information) and updates the posterior with the kernel's
density at its exact value (``DesignSpace.continuous``); an answer whose likelihood reads more than
the design (belief coherence's decisions at the reported belief) updates it through
:meth:`AdaptiveDesigner.observe`.

**Grid, not particles.**  Every adaptive model here has at most four parameters, so the posterior is
held on a fixed product grid on each parameter's unconstrained scale (:meth:`Parameter.to_unconstrained`,
``prior_mean ± span·prior_sd``, weights = the normal prior the parameter declares).  A grid makes
the Bayes update exact on its nodes, deterministic (no resampling draws: a session replays exactly
from its answers) and lets the likelihood of every (node, design, answer) be computed **once** with
the model's own pointwise kernel (:attr:`CognitiveModel.pointwise_kernel`, the likelihood every fit
uses) and cached; a trial choice is then two matrix products.  Particles (sequential Monte Carlo)
pay off beyond ~4 parameters, where a grid's size explodes; no adaptive model here needs them (the
one 4-parameter model, belief coherence's MNL decider, has 17⁴ nodes, 0.5 prior SD apart).

The design space (the candidate trials and the answers a trial can get) is declared per experiment
in its spec (:class:`~cogtestbed.experiments.spec.AdaptiveDecl`); this module knows no experiment.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from cogtestbed.errors import DataError, InputError
from cogtestbed.inference.base import CognitiveModel

if TYPE_CHECKING:
    import pandas as pd

#: Grid nodes per parameter by number of parameters: 121² nodes put 0.1 between nodes of log k
#: (prior SD 1.5, ±4 SD); a 3-parameter grid of 31³ = 29 791 nodes keeps a trial choice under 50 ms
#: on one core (``benchmarks/bench_adaptive.py``).
#: A 4-parameter grid (belief coherence's MNL decider) of 17⁴ = 83 521 nodes puts 0.5 prior SD
#: between nodes.
GRID_POINTS = {1: 801, 2: 121, 3: 31, 4: 17}
#: Half-width of the grid in prior SDs on the unconstrained scale (the prior mass outside ±4 SD of a
#: normal is 6e-5: a subject drawn there is clipped to the edge node's value).
GRID_SPAN = 4.0
#: Relative difference of expected information gains below which two candidates tie (the first is
#: asked): floating-point summation order alone moves a gain by ~1e-15 relative.
TIE_TOLERANCE = 1e-9
#: Rows of the kernel per call while the likelihood table is built (bounds the temporary memory).
_CHUNK_ROWS = 1 << 20


@dataclass(frozen=True)
class DesignSpace:
    """The candidate trials of an adaptive session and the answers each can get.

    ``fields``: for every observation field of the model's kernel except the answer (the first
    field, :attr:`CognitiveModel.observation_fields`), an array whose first axis is the candidate
    (D rows).  ``answers``: the values the answer field can take (the discrete answer space).
    ``key`` names the space (with the model and grid, the cache key of its likelihood table).
    """

    key: str
    fields: Mapping[str, np.ndarray]
    answers: tuple[Any, ...]
    labels: tuple[str, ...] = ()
    #: Continuous answers (magnitude estimates): ``answers`` are the centres of equal-width bins
    #: the expected information is computed over (midpoint rule: the kernel's density at each centre,
    #: normalised over the bins), while an answer updates the posterior with the kernel's density at
    #: its exact value (:meth:`AdaptiveDesigner.update`).
    continuous: bool = False

    @property
    def size(self) -> int:
        return int(next(iter(self.fields.values())).shape[0]) if self.fields else 0


@dataclass(frozen=True)
class GridTable:
    """What every session of one (model, space, grid) shares: the grid and the likelihoods."""

    names: tuple[str, ...]
    axes: tuple[np.ndarray, ...]  # unconstrained node values per parameter
    log_prior: np.ndarray  # (G,) normalised
    prob: np.ndarray  # (G, D, Y) p(y | θ_g, d)
    log_prob: np.ndarray  # (G, D, Y)
    entropy: np.ndarray  # (G, D) H[p(y | θ_g, d)] in nats
    theta: np.ndarray  # (G, ·) the kernel's parameter rows of the nodes (exact updates: :func:`node_loglik`)
    #: Per target set, what :func:`_target_major` derives (filled on first use).
    by_targets: dict[tuple[str, ...], tuple[np.ndarray, int, np.ndarray | None]] = field(default_factory=dict)


_TABLES: dict[tuple[Any, ...], GridTable] = {}


def _grid_axes(model: CognitiveModel, points: int, span: float) -> tuple[np.ndarray, ...]:
    return tuple(np.linspace(p.prior_mean - span * p.prior_sd, p.prior_mean + span * p.prior_sd, points)
                 for p in model.parameters)


def likelihood_table(model: CognitiveModel, space: DesignSpace, points: int | None = None,
                     span: float = GRID_SPAN) -> GridTable:
    """The grid and ``p(y | θ_g, d)`` of every node, design and answer, from the model's own
    pointwise kernel (one call per chunk of rows; cached per model, space and grid)."""
    k = len(model.parameters)
    if k > max(GRID_POINTS):
        raise InputError(f"model {model.name!r} has {k} parameters: the adaptive grid takes at most {max(GRID_POINTS)}")
    points = points or GRID_POINTS[k]
    key = (type(model).__qualname__, model.name, space.key, points, span)
    if key in _TABLES:
        return _TABLES[key]
    axes = _grid_axes(model, points, span)
    mesh = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)  # (G, k)
    natural = np.column_stack([p.inside(p.to_constrained(mesh[:, j])) for j, p in enumerate(model.parameters)])
    log_prior = sum(-0.5 * ((mesh[:, j] - p.prior_mean) / p.prior_sd) ** 2 for j, p in enumerate(model.parameters))
    log_prior = np.asarray(log_prior, dtype=np.float64)
    log_prior -= _logsumexp(log_prior)
    log_prob = kernel_table(model, natural, space)
    prob = np.exp(log_prob)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(prob > 0, prob * log_prob, 0.0), axis=2)
    theta = np.ascontiguousarray(model.kernel_theta(natural))
    table = GridTable(tuple(model.parameters.names), axes, log_prior, prob, log_prob, entropy, theta)
    _TABLES[key] = table
    return table


def kernel_table(model: CognitiveModel, natural: np.ndarray, space: DesignSpace) -> np.ndarray:
    """log p(y | θ_g, d) (G, D, Y) from the model's kernel: every grid node is a 'subject' that
    answered every candidate with every answer.  Rows are normalised over the answers (a kernel that
    clips tiny probabilities leaves a sum a hair above 1)."""
    fields = model.observation_fields
    missing = [f for f in fields[1:] if f not in space.fields]
    if missing:
        raise InputError(f"design space {space.key!r} lacks the kernel field(s) {missing} of model {model.name!r}")
    kernel = model._kernel()
    theta = np.ascontiguousarray(model.kernel_theta(natural))
    g_all, d_n, y_n = theta.shape[0], space.size, len(space.answers)
    out = np.empty((g_all, d_n, y_n))
    per = max(1, _CHUNK_ROWS // max(1, d_n * y_n))
    design_arrays = [np.asarray(space.fields[f]) for f in fields[1:]]
    answers = np.asarray(space.answers, dtype=np.float64 if space.continuous else np.int64)
    for start in range(0, g_all, per):
        stop = min(g_all, start + per)
        g = stop - start
        obs_subject = np.repeat(np.arange(g, dtype=np.int64), d_n * y_n)
        answer = np.tile(np.repeat(answers[None, :], d_n, axis=0).ravel(), g)
        tiled = [np.ascontiguousarray(np.tile(np.repeat(a, y_n, axis=0), (g,) + (1,) * (a.ndim - 1)))
                 for a in design_arrays]
        ll, _ = kernel(np.ascontiguousarray(theta[start:stop]), obs_subject, answer, *tiled)
        out[start:stop] = ll.reshape(g, d_n, y_n)
    out -= _logsumexp(out, axis=2)[..., None]
    return out


def node_loglik(model: CognitiveModel, theta: np.ndarray, observation: Mapping[str, Any]) -> np.ndarray:
    """log p(observations | θ_g) of every grid node (G,), summed over the observations: the model's
    kernel at the observed fields (``observation``: every field of
    :attr:`CognitiveModel.observation_fields`, the answer first, each an array of m observations)."""
    fields = model.observation_fields
    missing = [f for f in fields if f not in observation]
    if missing:
        raise InputError(f"an observation of model {model.name!r} lacks the field(s) {missing}")
    arrays = [np.asarray(observation[f]) for f in fields]
    m = int(arrays[0].shape[0])
    g = theta.shape[0]
    obs_subject = np.repeat(np.arange(g, dtype=np.int64), m)
    tiled = [np.ascontiguousarray(np.tile(a, (g,) + (1,) * (a.ndim - 1))) for a in arrays]
    ll, _ = model._kernel()(theta, obs_subject, *tiled)
    return np.asarray(ll, dtype=np.float64).reshape(g, m).sum(axis=1)


def _logsumexp(x: np.ndarray, axis: int | None = None) -> Any:
    """log Σ exp(x) over ``axis`` (all of ``x``: a float), stable."""
    m = np.max(x, axis=axis, keepdims=True)
    s = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return float(s.reshape(())) if axis is None else np.squeeze(s, axis=axis)


def _entropy(p: np.ndarray) -> np.ndarray:
    """H[p] in nats over the last axis (0·log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)


def _target_major(table: GridTable, targets: tuple[str, ...]) -> tuple[np.ndarray, int, np.ndarray | None]:
    """(node order with the target parameters major, number of target nodes, p(y | node, d) in that
    order as (targets, nuisance, D·Y); None where every parameter is a target), shared by the sessions
    of one table and targets: p(y | θ_T, d) is then a batched mat-vec."""
    if targets not in table.by_targets:
        names = table.names
        shape = tuple(len(a) for a in table.axes)
        t_axes = [names.index(t) for t in targets]
        n_axes = [j for j in range(len(names)) if j not in t_axes]
        order = np.arange(int(np.prod(shape))).reshape(shape).transpose(t_axes + n_axes).ravel()
        n_target = int(np.prod([shape[j] for j in t_axes]))
        d_y = table.prob.shape[1] * table.prob.shape[2]
        prob_tn = np.ascontiguousarray(table.prob[order].reshape(n_target, -1, d_y)) if n_axes else None
        table.by_targets[targets] = (order, n_target, prob_tn)
    return table.by_targets[targets]


@dataclass
class AdaptiveDesigner:
    """One adaptive session's posterior and design choice (see the module docstring).

    ``targets``: the parameters whose information the choice maximises (empty: all).  Sessions of
    one model, space and grid share the likelihood table (:func:`likelihood_table`).
    """

    model: CognitiveModel
    space: DesignSpace
    targets: tuple[str, ...] = ()
    points: int | None = None
    table: GridTable = field(init=False)
    log_post: np.ndarray = field(init=False)
    history: list[tuple[int, Any]] = field(init=False, default_factory=list)
    _weights: tuple[np.ndarray, np.ndarray] | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        names = tuple(self.model.parameters.names)
        unknown = [t for t in self.targets if t not in names]
        if unknown:
            raise InputError(f"`adaptive` {','.join(unknown)}: model {self.model.name!r} has no such parameter "
                             f"(it has {', '.join(names)})")
        self.targets = tuple(t for t in names if t in self.targets) or names
        self.table = likelihood_table(self.model, self.space, self.points)
        self.log_post = self.table.log_prior.copy()
        self._order, self._n_target, self._prob_tn = _target_major(self.table, self.targets)
        self._all = self._prob_tn is None

    # -- posterior -----------------------------------------------------------------------
    @property
    def weights(self) -> np.ndarray:
        """Posterior probability of every grid node (G,) (computed once per posterior)."""
        if self._weights is not None and self._weights[0] is self.log_post:
            return self._weights[1]
        w = np.exp(self.log_post - self.log_post.max())
        w /= w.sum()
        self._weights = (self.log_post, w)
        return w

    def update(self, design: int, answer: Any) -> None:
        """Bayes' rule on the grid after ``answer`` to candidate ``design`` (the model's likelihood;
        a continuous space's answer: the kernel's density at its exact value and the design's fields)."""
        if self.space.continuous:
            d = int(design)
            obs = {f: np.asarray(self.space.fields[f])[d:d + 1] for f in self.model.observation_fields[1:]}
            self.observe(d, {self.model.observation_fields[0]: np.array([float(answer)]), **obs})
            return
        y = self.space.answers.index(int(answer))
        self.log_post = self.log_post + self.table.log_prob[:, int(design), y]
        self.log_post -= self.log_post.max()
        self.history.append((int(design), int(answer)))

    def observe(self, design: int, observation: Mapping[str, Any]) -> None:
        """Bayes' rule on the grid after the observations ``observation`` (the model's kernel fields,
        :func:`node_loglik`) of the trial that asked candidate ``design``: for answers whose likelihood
        reads more than the design (belief coherence's decisions read the subject's reported belief)."""
        self.log_post = self.log_post + node_loglik(self.model, self.table.theta, observation)
        self.log_post -= self.log_post.max()
        first = np.asarray(observation[self.model.observation_fields[0]])
        self.history.append((int(design), first.tolist()))

    def marginal(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(nodes on the unconstrained scale, posterior probabilities) of one parameter."""
        j = self.table.names.index(name)
        shape = tuple(len(a) for a in self.table.axes)
        w = self.weights.reshape(shape)
        other = tuple(i for i in range(len(shape)) if i != j)
        return self.table.axes[j], w.sum(axis=other)

    def summary(self, name: str, level: float = 0.9) -> dict[str, float]:
        """Posterior mean, SD and central ``level`` interval of ``name`` on its unconstrained scale
        (log k for a log-transformed parameter).  Each node stands for its grid cell (mass spread
        uniformly over the cell): the SD adds the cell's h²/12 (Sheppard's correction) and the
        interval's ends interpolate the CDF at the cells' edges, so a posterior narrower than a cell
        still has the cell's width, never less."""
        x, p = self.marginal(name)
        h = float(x[1] - x[0])
        mean = float(np.sum(x * p))
        sd = float(math.sqrt(max(0.0, float(np.sum((x - mean) ** 2 * p))) + h * h / 12.0))
        edges = np.concatenate([[x[0] - h / 2], x + h / 2])
        cdf = np.concatenate([[0.0], np.cumsum(p)])
        lo, hi = np.interp([(1 - level) / 2, (1 + level) / 2], cdf, edges)
        return {"mean": mean, "sd": sd, "lo": float(lo), "hi": float(hi)}

    # -- design choice --------------------------------------------------------------------
    def information(self) -> np.ndarray:
        """Expected information gain I(θ_T; Y | d) in nats of every candidate (D,), exact over the answers."""
        w = self.weights
        d_n, y_n = self.space.size, len(self.space.answers)
        # einsum, not ``@`` / matmul: these are matrix-vector products, which a threaded BLAS splits over
        # threads that spin against each other (and against an LLM's threads) on a busy machine: 80-220 ms
        # CPU per choice instead of 6-9 ms (profiled 2026-11-25, docs/adaptive.md)
        if self._all:
            marginal = np.einsum("g,gk->k", w, self.table.prob.reshape(w.size, -1)).reshape(d_n, y_n)
            conditional = np.einsum("g,gd->d", w, self.table.entropy)
        else:
            assert self._prob_tn is not None
            w_tn = w[self._order].reshape(self._n_target, -1)
            w_t = w_tn.sum(axis=1)
            joint = np.einsum("tn,tnk->tk", w_tn, self._prob_tn).reshape(self._n_target, d_n, y_n)
            marginal = joint.sum(axis=0)
            keep = w_t > 0
            conditional = np.einsum("t,td->d", w_t[keep], _entropy(joint[keep] / w_t[keep, None, None]))
        return np.maximum(_entropy(marginal) - conditional, 0.0)

    def choose(self) -> int:
        """The candidate of highest expected information gain (the first of equals: deterministic).
        Equals are gains within :data:`TIE_TOLERANCE` of the highest (relative), so a symmetric pair
        (a range's two ends under a symmetric prior) is a tie whatever the order of summation."""
        info = self.information()
        best = float(info.max())
        return int(np.flatnonzero(info >= best - TIE_TOLERANCE * max(best, 1e-300))[0])


def replay(model: CognitiveModel, space: DesignSpace, answers: Sequence[Any], targets: Sequence[str] = (),
           points: int | None = None) -> list[int]:
    """The designs an adaptive session chooses for the answers ``answers`` (one per trial, in order):
    each choice is a function of the earlier answers alone, so a session replays exactly."""
    designer = AdaptiveDesigner(model, space, tuple(targets), points)
    chosen = []
    for a in answers:
        d = designer.choose()
        chosen.append(d)
        designer.update(d, a)
    return chosen


#: Column of an adaptive session's table: the design index chosen at each trial
#: (:data:`cogtestbed.environments.adaptive.DESIGN_COLUMN`; NaN or absent in a fixed table).
ADAPTIVE_COLUMN = "design_index"


def is_adaptive_table(trials: pd.DataFrame) -> bool:
    """Whether a table's trials were chosen adaptively (it carries a non-missing design column)."""
    return ADAPTIVE_COLUMN in trials and bool(trials[ADAPTIVE_COLUMN].notna().any())


def refusing_adaptive(refusal: str) -> Any:
    """A decorator: the metrics (or test) function it wraps refuses an adaptive table in one line,
    ``refusal`` (metrics that assume the instrument's fixed design)."""

    def wrap(metrics: Any) -> Any:
        @functools.wraps(metrics)
        def checked(trials: pd.DataFrame, *args: Any, **kwargs: Any) -> Any:
            if is_adaptive_table(trials):
                raise DataError(refusal)
            return metrics(trials, *args, **kwargs)

        return checked

    return wrap


__all__ = ["ADAPTIVE_COLUMN", "AdaptiveDesigner", "DesignSpace", "GridTable", "is_adaptive_table", "likelihood_table",
           "node_loglik", "refusing_adaptive", "replay"]

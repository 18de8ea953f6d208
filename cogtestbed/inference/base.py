"""The cognitive-model contract and the generic multi-start maximum-likelihood fitter.

A :class:`CognitiveModel` declares its parameters (names, bounds, transforms, priors: see
:mod:`cogtestbed.parameters`), turns a trial table into per-subject arrays
(:meth:`CognitiveModel.subject_data`) and has **one likelihood**: a numba *pointwise kernel*
with exact gradient (see the class docstring).  Everything else is derived from that kernel:
the NLL and its gradient, the start-grid NLL (:meth:`CognitiveModel.nll_many`), the MLE
objective on the search scale of :mod:`cogtestbed.inference.optim` (chain rule, generic), and
the PyMC model (:func:`cogtestbed.inference.hierarchical.kernel_pymc_model`, the kernel wrapped
in a pytensor Op).  The same parameters drive the synthetic agent that simulates the model, so a
parameter means one thing everywhere.

Maximum likelihood (:meth:`CognitiveModel.fit_mle`) does not rely on a stochastic global
optimiser's luck: it evaluates the NLL on a grid spanning the whole parameter box, then runs the
numba BFGS (:mod:`cogtestbed.inference.optim`) from the best ``n_starts`` grid points and keeps
the best optimum.  AIC = 2k + 2·NLL and BIC = k·ln(n) + 2·NLL (Schwarz 1978).
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.errors import InputError
from cogtestbed.inference.lapse_text import lapse_option as lapse_option
from cogtestbed.inference.optim import EXP, FTOL, GTOL, IDENTITY, MAX_ITER, SINE, mle_driver
from cogtestbed.inference.summary import default_summary as default_summary
from cogtestbed.inference.summary import flag_kinds as flag_kinds
from cogtestbed.inference.summary import mle_summary as mle_summary
from cogtestbed.inference.summary import summary_kind as summary_kind
from cogtestbed.parameters import Parameter, ParameterSet

#: log of the largest double: exp of anything above it overflows to inf.
_LOG_MAX = math.log(np.finfo(float).max)

#: Half-width, in logit units, of the start grid of a logit-transformed parameter.
GRID_LOGIT_SPAN = 5.0
#: log u of a kernel row that holds no answer (scored 0 by the kernel): with u = 1 the lapse
#: mixture log((1 − ε)·1 + ε·1) stays 0 and has no gradient (:meth:`CognitiveModel.lapse_log_uniform`).
NO_ANSWER_LOG_UNIFORM = 0.0


@cache
def grid_neighbours(points: int, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices ``(node, neighbour)`` of every ordered pair of adjacent nodes (along one axis)
    of a product grid of ``points`` nodes per axis in ``ndim`` axes, C order (the start grid of
    :meth:`CognitiveModel.start_order`)."""
    index = np.arange(points ** ndim).reshape((points,) * ndim)
    nodes, neighbours = [], []
    for axis in range(ndim):
        lower = np.take(index, np.arange(points - 1), axis=axis).reshape(-1)
        upper = np.take(index, np.arange(1, points), axis=axis).reshape(-1)
        nodes += [upper, lower]
        neighbours += [lower, upper]
    return np.concatenate(nodes), np.concatenate(neighbours)


def subject_slices(trials: pd.DataFrame, by: Sequence[str] = ("subject", "session", "trial")
                   ) -> tuple[pd.DataFrame, list[tuple[Hashable, slice]]]:
    """The table sorted (stably) by ``by`` and each subject's rows in it, in that order.

    The columnar replacement of ``groupby("subject")`` for per-subject arrays: convert each
    column once (``ordered[col].to_numpy()``) and slice it per subject, instead of one pandas
    frame per subject.  Same subjects, keys and order as ``ordered.groupby("subject",
    sort=False)`` (rows without a subject are dropped, as groupby does)."""
    ordered = trials.sort_values(list(by), kind="stable")
    subject = ordered["subject"]
    if subject.isna().any():
        ordered = ordered[subject.notna()]
        subject = ordered["subject"]
    values = subject.to_numpy()
    if len(values) == 0:
        return ordered, []
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    keys = subject.iloc[starts].tolist()
    return ordered, [(key, slice(int(a), int(b))) for key, a, b in zip(keys, starts, ends, strict=True)]


@dataclass(frozen=True)
class MLEResult:
    """Maximum-likelihood estimate for one subject."""

    params: dict[str, float]
    nll: float
    n_obs: int
    converged: bool
    n_params: int

    @property
    def aic(self) -> float:
        return 2.0 * self.n_params + 2.0 * self.nll

    @property
    def bic(self) -> float:
        return self.n_params * float(np.log(max(self.n_obs, 1))) + 2.0 * self.nll


class CognitiveModel(ABC):
    """A model with a likelihood: parameters, data preparation, one pointwise kernel, MLE, PyMC.

    **The likelihood contract.**  A model sets :attr:`pointwise_kernel`, an ``@njit`` function::

        kernel(theta, obs_subject, *arrays) -> (ll, grad)

    * ``theta`` (n_subjects, K): natural-scale values of the kernel's K columns per subject
      (:attr:`kernel_columns`; by default the model's parameters in order);
    * ``obs_subject`` (n,) int64: the subject (row of ``theta``) of every observation, sorted,
      so a change of index starts a new subject (sequential models reset their state there);
    * ``arrays``: the observation arrays named by :attr:`observation_fields` (attributes of the
      per-subject data object, first axis = observation, masked by :meth:`observation_mask`;
      the first field is the observed variable of the PyMC model);
    * ``ll`` (n,): the log-likelihood of every observation, ``grad`` (n, K): its exact
      derivative with respect to that observation's subject's K columns (forward mode for
      sequential models).  Clipped probabilities contribute a constant and no gradient.

    The MLE calls the kernel with one subject (``theta`` of shape (1, K), ``obs_subject`` all
    zeros); PyMC calls it once for all subjects stacked.  From it the base class derives
    :meth:`pointwise`, :meth:`nll_grad` (NLL = −Σ ll), :meth:`nll`, :meth:`nll_many` (start
    grid), the numba MLE objective (:func:`~cogtestbed.inference.optim.search_objective`) and
    :meth:`pymc_model` (non-centred hierarchical, generic).  A model therefore writes: its
    parameters, ``subject_data``, ``n_observations``, the kernel and the three class attributes
    :attr:`pointwise_kernel`, :attr:`observation_fields` (+ :meth:`observation_mask`) and, when
    its kernel has columns the model fixes or ties, :attr:`kernel_columns`.  Tested for every
    registered model (conformance checks ``pointwise_likelihood``, ``likelihood_gradient``,
    ``search_objective``, ``lapse_likelihood``, ``pymc_likelihood``).

    **Without a hand gradient.**  A model may set :attr:`loglik_kernel` (the same kernel returning
    ``ll`` alone) instead of :attr:`pointwise_kernel`: its gradient is then taken by central finite
    differences (:mod:`cogtestbed.inference.numgrad`), everything else unchanged; writing the exact
    gradient is the optional speed-up (``benchmarks/numgrad_speed.py``).
    """

    #: Registry name (shared with the agent that simulates it), e.g. ``"rw-pm"``.
    name: ClassVar[str]
    #: Registry name of the experiment whose trial table the model reads.
    experiment: ClassVar[str]
    parameters: ClassVar[ParameterSet]
    #: Grid points per parameter used to pick MLE starting points.
    grid_points: ClassVar[int] = 7
    #: Local optimisations per fit (grid local minima first, see :meth:`start_order`).
    n_starts: ClassVar[int] = 5
    bfgs_stop: ClassVar[tuple[int, float, float]] = (MAX_ITER, GTOL, FTOL)  #: each start's iterations, gtol, ftol
    #: Fewest distinct valid answers of a subject from which :meth:`fit_identified` fits it
    #: (:data:`cogtestbed.no_data.MIN_DISTINCT_ANSWERS`).
    min_distinct_answers: ClassVar[int] = 2
    #: Named linear contrasts of parameters that studies may test (power analysis), e.g.
    #: ``{"optimism_bias": {"alpha_pos": 1.0, "alpha_neg": -1.0}}`` for α⁺ − α⁻.
    contrasts: ClassVar[Mapping[str, Mapping[str, float]]] = {}
    #: The model's likelihood: ``@njit kernel(theta, obs_subject, *arrays) -> (ll, grad)`` (see
    #: the class docstring).  None only for models without a likelihood, or with :attr:`loglik_kernel`.
    pointwise_kernel: ClassVar[Any] = None
    #: The likelihood without a hand-written gradient: ``@njit kernel(theta, obs_subject, *arrays)
    #: -> ll`` (the contract of :attr:`pointwise_kernel`, ``ll`` alone).  Read where no
    #: ``pointwise_kernel`` is set: the gradient is then taken by central finite differences within
    #: the parameters' bounds (:mod:`cogtestbed.inference.numgrad`); a hand gradient is the faster option.
    loglik_kernel: ClassVar[Any] = None
    #: Attribute names of the per-subject data object passed to the kernel after
    #: ``obs_subject``, in order; the first is the PyMC model's observed variable.
    observation_fields: ClassVar[tuple[str, ...]] = ()
    #: The kernel's columns: each the name of a free parameter or a constant the model fixes
    #: (e.g. RW's ``("alpha", "alpha", "beta")`` into the RW± kernel).  None: the parameters.
    kernel_columns: ClassVar[tuple[str | float, ...] | None] = None
    #: Name of the observed variable of the PyMC model.
    observed_name: ClassVar[str] = "y"
    #: Parameters whose subject values the hierarchical PyMC model samples centred,
    #: u_i ~ Normal(mu, sigma), instead of non-centred offsets: those each subject's data pin
    #: more tightly than the population spread (Betancourt & Girolami 2015).  Same prior.
    centred_parameters: ClassVar[tuple[str, ...]] = ()
    #: Whether a hierarchical fit also samples centred the parameters its subjects' data pin, chosen from the data
    #: before sampling (:mod:`cogtestbed.inference.centring`: each subject's Laplace standard error against the
    #: population's spread); False (the default): the declared :attr:`centred_parameters` alone.  On for the
    #: families where ``benchmarks/studies/centring_by_data.py`` found it kept (docs/benchmarks.md).
    centre_pinned: ClassVar[bool] = False
    #: Parameters whose per-subject MLE runs to a bound of its search often at the designs the model
    #: is fitted to (a likelihood ridge): a two-group power test compares their estimates by ranks, not
    #: means (the bounded-estimate rule, :func:`~cogtestbed.studies.model_studies.two_group_test`).
    rank_tested_parameters: ClassVar[tuple[str, ...]] = ()
    #: NUTS target acceptance for hierarchical fits (None: the sampler default of
    #: :func:`cogtestbed.inference.hierarchical.fit_hierarchical`).
    target_accept: ClassVar[float | None] = None
    #: Whether nutpie adapts a low-rank-modified mass matrix (Seyboldt 2024) for hierarchical
    #: fits: for models whose subject posterior is strongly correlated, where a diagonal mass
    #: matrix forces tiny steps.
    low_rank_mass_matrix: ClassVar[bool] = False
    #: The likelihood of :meth:`pymc_model` where it is on purpose not the kernel's (a short
    #: name, e.g. the collider's response model); empty: the kernel's (conformance check
    #: ``pymc_likelihood``: PyMC log-likelihood = −NLL).
    other_pymc_likelihood: ClassVar[str] = ""
    #: 2 where the observation is a binary choice (0/1) whose kernel log-likelihood is log P(observed
    #: choice): a hierarchical fit can then draw replicated choices (``posterior_predictive=True``,
    #: :mod:`~cogtestbed.inference.hierarchical_idata`).  None: any other observation.
    choice_options: ClassVar[int | None] = None
    #: Names of the axes of the model's data arrays with two or more axes, e.g. ``{"questions": ("obs",
    #: "question_field")}``: the InferenceData names them; unnamed ones become ``obs`` or
    #: ``{array}_{axis}``.
    data_dims: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    # -- data -------------------------------------------------------------------------
    @abstractmethod
    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        """Per-subject arrays the likelihood reads, keyed by subject id (table order kept)."""

    @abstractmethod
    def n_observations(self, data: Any) -> int:
        """Number of observations that enter the likelihood (for BIC)."""

    def observation_mask(self, data: Any) -> np.ndarray | None:
        """Which observations of ``data`` enter the kernel (None: all)."""
        return None

    #: Number of valid answers of every observation, for the uniform of a lapse mixture
    #: (:func:`with_lapse`); None: the model declares :meth:`lapse_log_uniform` itself.
    lapse_options: ClassVar[int | None] = None

    def lapse_log_uniform(self, data: Any) -> np.ndarray:
        """log u of every observation of ``data`` (before :meth:`observation_mask`): the
        probability or density of the observation under a *random answer* (a lapse mixture,
        :func:`with_lapse`), in the same measure as the kernel's log-likelihood.

        The contract: 1/|A| for a discrete answer uniform over its valid answers (the default,
        from :attr:`lapse_options`); for a continuous answer the uniform density over its valid
        range, carried to the scale the kernel scores (the Jacobian of a log-odds transform, for
        instance); the product over the answers of an observation that holds several (a whole
        two-step trial, a BART balloon); a documented default for a distribution-valued answer
        (a flat Dirichlet).  A row the kernel keeps but scores 0 because it holds no answer (an
        invalid trial that only drives a filter) has :data:`NO_ANSWER_LOG_UNIFORM`, which leaves
        it at 0 for every ε.  It is also what a synthetic subject's random lapse draws
        (:meth:`cogtestbed.environments.base.TextEnv.random_answer`), so the mixture is exact
        for simulated lapses."""
        if self.lapse_options is None:
            raise InputError(f"model {self.name!r} does not declare the answers a lapse is uniform over "
                             "(lapse_options or lapse_log_uniform), so it cannot take a lapse term")
        n = np.asarray(getattr(data, self.observation_fields[0])).shape[0]
        return np.full(n, -np.log(self.lapse_options))

    # -- the likelihood (derived from the pointwise kernel) -----------------------------
    def kernel_arrays(self, data: Any) -> tuple[np.ndarray, ...]:
        """One subject's kernel arrays (:attr:`observation_fields`, masked, contiguous)."""
        mask = self.observation_mask(data)
        out = []
        for name in self.observation_fields:
            arr = np.asarray(getattr(data, name))
            out.append(np.ascontiguousarray(arr if mask is None else arr[mask]))
        return tuple(out)

    def embedding(self) -> tuple[np.ndarray, np.ndarray]:
        """(E, c): the kernel's columns are ``c + θ·E`` (E (k, K) 0/1, c the fixed constants)."""
        cached = getattr(self, "_embedding", None)
        if cached is not None:
            return cached
        names = self.parameters.names
        columns = names if self.kernel_columns is None else self.kernel_columns
        embed = np.zeros((len(names), len(columns)))
        offset = np.zeros(len(columns))
        for c, col in enumerate(columns):
            if isinstance(col, str):
                if col not in names:
                    raise InputError(f"{self.name}: kernel column {col!r} is not a parameter ({', '.join(names)})")
                embed[names.index(col), c] = 1.0
            else:
                offset[c] = float(col)
        self._embedding: tuple[np.ndarray, np.ndarray] = (embed, offset)
        return self._embedding

    def kernel_theta(self, theta: np.ndarray) -> np.ndarray:
        """Free parameters (k,) or (m, k) → the kernel's columns (K,) or (m, K)."""
        embed, offset = self.embedding()
        return offset + np.asarray(theta, dtype=np.float64) @ embed

    @classmethod
    def _class_kernel(cls, attribute: str) -> Any:
        """The class attribute ``attribute`` as set (read from the class: a numba dispatcher read
        through an instance would bind it like a method), or None."""
        for klass in cls.__mro__:
            if attribute in klass.__dict__:
                k = klass.__dict__[attribute]
                return k.__func__ if isinstance(k, staticmethod) else k
        return None

    @classmethod
    def kernel(cls) -> Any:
        """The :attr:`pointwise_kernel`; else the kernel of :attr:`loglik_kernel` with its gradient
        by finite differences (:func:`~cogtestbed.inference.numgrad.numerical_gradient_kernel`); else None."""
        kernel = cls._class_kernel("pointwise_kernel")
        loglik = None if kernel is not None else cls._class_kernel("loglik_kernel")
        if loglik is None:
            return kernel
        from cogtestbed.inference.numgrad import numerical_gradient_kernel

        names = cls.parameters.names
        columns = names if cls.kernel_columns is None else cls.kernel_columns
        bounds = [cls.parameters[col] if isinstance(col, str) else None for col in columns]
        return numerical_gradient_kernel(
            loglik, len(cls.observation_fields), [-np.inf if p is None else p.lower for p in bounds],
            [np.inf if p is None else p.upper for p in bounds], [p is not None for p in bounds])

    def _kernel(self) -> Any:
        kernel = self.kernel()
        if kernel is None:
            raise NotImplementedError(f"model {self.name!r} has no pointwise likelihood kernel")
        return kernel

    def pointwise(self, theta: np.ndarray, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """Per-observation log-likelihood (n,) and its gradient (n, k) in the free parameters."""
        arrays = self.kernel_arrays(data)
        n = arrays[0].shape[0] if arrays else 0
        full = np.ascontiguousarray(self.kernel_theta(theta)[None, :])
        ll, grad = self._kernel()(full, np.zeros(n, dtype=np.int64), *arrays)
        embed, _ = self.embedding()
        return ll, grad @ embed.T

    def nll_grad(self, theta: np.ndarray, data: Any) -> tuple[float, np.ndarray]:
        """Negative log-likelihood −Σ ll and its gradient at natural-scale ``theta``."""
        ll, grad = self.pointwise(theta, data)
        return float(-ll.sum()), -grad.sum(axis=0)

    def nll(self, theta: np.ndarray, data: Any) -> float:
        return self.nll_grad(theta, data)[0]

    def nll_many(self, thetas: np.ndarray, data: Any) -> np.ndarray:
        """NLL at each row of ``thetas``: one kernel call that treats every row as a subject
        with a copy of ``data`` (the kernel's own multi-subject path; no extra compilation)."""
        arrays = self.kernel_arrays(data)
        full = np.ascontiguousarray(self.kernel_theta(np.atleast_2d(thetas)))
        m = full.shape[0]
        n = arrays[0].shape[0] if arrays else 0
        if n == 0:
            return np.zeros(m)
        tiled = tuple(np.ascontiguousarray(np.tile(a, (m,) + (1,) * (a.ndim - 1))) for a in arrays)
        ll, _ = self._kernel()(full, np.repeat(np.arange(m, dtype=np.int64), n), *tiled)
        return -ll.reshape(m, n).sum(axis=1)

    # -- Bayesian ---------------------------------------------------------------------
    def pymc_model(self, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
        """The model as a ``pm.Model`` for the subjects of ``trials``.

        Generic (:func:`cogtestbed.inference.hierarchical.kernel_pymc_model`): non-centred
        ``subject_parameters``, the pooled kernel arrays as ``pm.Data`` and the pointwise Op.
        Contract for overrides: declare the parameters with ``subject_parameters``
        (coords ``subject``), then one observed variable (dims ``obs``) and a
        ``pm.Data("obs_subject", ...)`` mapping each observation to its subject index.
        """
        if self.kernel() is None:
            raise NotImplementedError(f"model {self.name!r} has no PyMC version yet")
        from cogtestbed.inference.hierarchical import kernel_pymc_model

        self.require_observations(self.subject_data(trials))
        return kernel_pymc_model(self, trials, hierarchical)

    def sample_nuisance(self, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, float]]:
        """One prior draw of the PyMC likelihood's parameters outside :attr:`parameters`.

        Returns (posterior variable → true value, agent parameter → value); simulation-based
        calibration simulates with the agent values so that data and model agree.  ``name[k]``
        names the k-th entry of a vector variable.  Default: none.
        """
        return {}, {}

    @property
    def has_pymc(self) -> bool:
        """Whether :meth:`pymc_model` is available (hierarchical fits)."""
        return self.kernel() is not None or type(self).pymc_model is not CognitiveModel.pymc_model

    def contrast(self, name: str, values: Mapping[str, Any]) -> Any:
        """Value of the named contrast for parameter values (arrays or scalars)."""
        if name in self.parameters.names:
            return values[name]
        try:
            weights = self.contrasts[name]
        except KeyError:
            raise InputError(
                f"unknown effect {name!r} for model {self.name}; choose a parameter "
                f"({', '.join(self.parameters.names)}) or a contrast "
                f"({', '.join(self.contrasts) or 'none'})"
            ) from None
        return sum(w * values[p] for p, w in weights.items())

    # -- maximum likelihood -------------------------------------------------------------
    def start_grid(self) -> np.ndarray:
        """Grid of natural-scale starting candidates spanning the whole parameter box (cached).

        Logit-transformed parameters get nodes evenly spaced in logit (±``GRID_LOGIT_SPAN``), so
        the grid is dense near both bounds where likelihoods often have separate basins (e.g. a
        learning rate of 0.02 with a high β); log-transformed ones get log-spaced nodes between
        their search floor and ceiling; others linear interior nodes.
        """
        cached = getattr(self, "_grid", None)
        if cached is not None:
            return cached
        axes = []
        for p in self.parameters:
            n = self.grid_points
            if p.transform == "logit":
                u = 1.0 / (1.0 + np.exp(-np.linspace(-GRID_LOGIT_SPAN, GRID_LOGIT_SPAN, n)))
                axes.append(p.lower + (p.upper - p.lower) * u)
            else:
                lo, hi = p.search_bounds()
                axes.append(np.array([p.from_search(s) for s in np.linspace(lo, hi, n + 2)[1:-1]]))
        self._grid: np.ndarray = np.array(list(itertools.product(*axes)), dtype=np.float64)
        return self._grid

    def search_codes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-parameter search map of :func:`~cogtestbed.inference.optim.natural_from_search`:
        (codes, lower, upper-or-cap)."""
        cached = getattr(self, "_search_codes", None)
        if cached is not None:
            return cached
        codes, lo, hi = [], [], []
        for p in self.parameters:
            codes.append(SINE if self._sine_scaled(p) else EXP if p.transform == "log" else IDENTITY)
            lo.append(p.lower)
            hi.append(p.upper)
        self._search_codes: tuple[np.ndarray, np.ndarray, np.ndarray] = (
            np.array(codes, dtype=np.int64), np.array(lo), np.array(hi))
        return self._search_codes

    def objective_args(self, data: Any) -> tuple[Any, ...]:
        """Arguments of the derived search-scale objective for one subject's data."""
        arrays = self.kernel_arrays(data)
        n = arrays[0].shape[0] if arrays else 0
        embed, offset = self.embedding()
        return (*self.search_codes(), embed, offset, np.zeros(n, dtype=np.int64), arrays)

    @staticmethod
    def _sine_scaled(p: Parameter) -> bool:
        """Whether the numba search uses the sine map for ``p`` (finite, non-log bounds)."""
        return p.transform != "log" and np.isfinite(p.lower) and np.isfinite(p.upper)

    def to_search(self, theta: np.ndarray) -> np.ndarray:
        """Natural parameters → numba search scale (see :mod:`cogtestbed.inference.optim`)."""
        out = []
        for p, v in zip(self.parameters, theta, strict=True):
            if self._sine_scaled(p):
                out.append(float(np.arcsin(np.clip(2 * (v - p.lower) / (p.upper - p.lower) - 1, -1, 1))))
            elif p.transform == "log":
                out.append(float(np.log(max(v - p.lower, 1e-300))))
            else:
                out.append(float(v))
        return np.array(out)

    def to_natural(self, z: np.ndarray) -> np.ndarray:
        """Numba search scale → natural parameters, clipped into their bounds."""
        out = []
        for p, v in zip(self.parameters, z, strict=True):
            if self._sine_scaled(p):
                x = p.lower + 0.5 * (p.upper - p.lower) * (1 + np.sin(v))
            elif p.transform == "log":  # at or past the upper bound without exp's overflow (exp(710) = inf)
                x = p.upper if v >= min(math.log(p.upper - p.lower), _LOG_MAX) else p.lower + np.exp(v)
            else:
                x = v
            out.append(min(max(float(x), p.lower), p.upper))  # np.clip's result (NaN stays NaN), without its overhead
        return np.array(out)

    def fit_subject(self, data: Any, n_starts: int | None = None, grid_nll: np.ndarray | None = None) -> MLEResult:
        """Multi-start fit of one subject (see module docstring; ``grid_nll``: its start grid's NLL where
        known, :meth:`grid_nlls`).  A subject without a valid observation has no estimate: NaN parameters,
        ``converged`` False."""
        if self.n_observations(data) == 0:
            nan = float("nan")
            return MLEResult({p: nan for p in self.parameters.names}, nan, 0, False, len(self.parameters))
        return self._fit_numba(data, self.n_starts if n_starts is None else n_starts, grid_nll)

    def require_observations(self, data: Mapping[Hashable, Any]) -> None:
        """Refuse to fit data in which no subject has a valid observation (one clear error)."""
        if not any(self.n_observations(d) > 0 for d in data.values()):
            raise InputError(f"no valid trials to fit {self.name!r} to: all {len(data)} subject(s) have only "
                             "invalid (missing) answers")

    def _result(self, theta: np.ndarray, nll: float, converged: bool, data: Any) -> MLEResult:
        n_obs = self.n_observations(data)
        return MLEResult(
            params=dict(zip(self.parameters.names, map(float, theta), strict=True)),
            nll=float(nll),
            n_obs=n_obs,
            converged=bool(converged) and n_obs > 0,  # nothing was fitted to no observation
            n_params=len(self.parameters),
        )

    def _unconstrained_grid(self) -> np.ndarray:
        cached = getattr(self, "_z_grid", None)
        if cached is None:
            cached = np.ascontiguousarray([self.to_search(row) for row in self.start_grid()])
            self._z_grid = cached
        return cached

    def start_order(self, grid_nll: np.ndarray) -> np.ndarray:
        """Grid indices in the order starts are tried: the grid's discrete local minima (each a
        separate basin, best first), then the remaining points by NLL."""
        order = np.argsort(grid_nll, kind="stable")
        if grid_nll.size != self.grid_points ** len(self.parameters):  # a model with its own (non-product) grid
            return order
        node, neighbour = grid_neighbours(self.grid_points, len(self.parameters))
        values = np.asarray(grid_nll).reshape(-1)
        is_min = values <= np.inf  # False for NaN; a point is a minimum if ≤ each neighbour along every axis
        is_min[node[~(values[node] <= values[neighbour])]] = False
        return np.concatenate([order[is_min[order]], order[~is_min[order]]])

    def grid_nlls(self, subjects: Sequence[Any]) -> list[np.ndarray] | None:
        """Each subject's :meth:`nll_many` of the start grid, computed together where that costs less; None: not."""
        return None

    def _fit_numba(self, data: Any, n_starts: int, grid_nll: np.ndarray | None = None) -> MLEResult:
        grid_nll = self.nll_many(self.start_grid(), data) if grid_nll is None else grid_nll
        starts = np.ascontiguousarray(self._unconstrained_grid()[self.start_order(grid_nll)[:n_starts]])
        z, value, converged = mle_driver(self._kernel())(starts, self.objective_args(data), *self.bfgs_stop, np.inf)
        return self._result(self.to_natural(z), value, converged, data)

    def _fit_scipy(self, data: Any, n_starts: int) -> MLEResult:
        """Reference path: scipy's L-BFGS-B on the box with :meth:`nll_grad` (benchmarks)."""
        from scipy.optimize import minimize

        params = self.parameters.parameters
        grid = self.start_grid()
        grid_nll = self.nll_many(grid, data)
        order = self.start_order(grid_nll)
        bounds = [p.search_bounds() for p in params]

        def objective(s: np.ndarray) -> tuple[float, np.ndarray]:
            theta = np.array([p.from_search(v) for p, v in zip(params, s, strict=True)])
            value, grad = self.nll_grad(theta, data)
            jac = np.array([p.search_jacobian(v) for p, v in zip(params, s, strict=True)])
            return value, grad * jac

        best_theta, best_nll, converged = grid[order[0]], float(grid_nll[order[0]]), False
        for idx in order[:n_starts]:
            s0 = np.array([p.to_search(v) for p, v in zip(params, grid[idx], strict=True)])
            res = minimize(objective, s0, jac=True, method="L-BFGS-B", bounds=bounds)
            if res.fun <= best_nll:
                best_nll = float(res.fun)
                best_theta = np.array([p.from_search(v) for p, v in zip(params, res.x, strict=True)])
                converged = bool(res.success)
        return self._result(best_theta, best_nll, converged, data)

    def fit_mle(
        self, trials: pd.DataFrame, n_starts: int | None = None, subjects: Iterable[Hashable] | None = None,
        identify: bool = False, intervals: bool | Iterable[str] = True,
    ) -> pd.DataFrame:
        """Fit every subject; one row per subject with estimates, NLL, AIC, BIC, convergence (each
        fit counted on a long computation's progress line, :func:`cogtestbed.progress.unit_progress`).

        ``identify``: also say whether the data pin the estimate (:mod:`cogtestbed.inference.identification`:
        the fit failed, or a likelihood-ratio interval is unbounded within the parameter's declared
        range): columns ``identified`` and ``unidentified_reason`` (None where pinned), and give the
        parameters named by ``intervals`` (True: every one; False: none) their likelihood-ratio 95 %
        interval (columns ``{name}_lo95`` and ``{name}_hi95``:
        :func:`~cogtestbed.inference.identification.profile_interval`).  The flag costs one or two
        profile fits per parameter (the ends of its range,
        :class:`~cogtestbed.inference.identification.SubjectProfile`); an interval two root findings on
        the profile, each a handful of profile fits: ask only for the intervals a row must show."""
        from cogtestbed.inference.identification import continued_fit
        from cogtestbed.progress import unit_phase, unit_tick

        data = self.subject_data(trials)
        self.require_observations(data)
        keys = list(data) if subjects is None else list(subjects)
        shown = self._interval_names(intervals) if identify else []
        rows = []
        unit_phase(f"{self.name} fitted by maximum likelihood to each unit", len(keys))
        grids = dict(zip(keys, self.grid_nlls([data[k] for k in keys]) or [], strict=False))  # same NLL, shared work
        for key in keys:
            fit = self.fit_subject(data[key], n_starts, grids.get(key))
            fit = continued_fit(self, data[key], fit) if identify else fit  # judged where it stops: a bound
            unit_tick()
            row: dict[str, Any] = {"subject": key, **fit.params, "nll": fit.nll, "aic": fit.aic, "bic": fit.bic,
                   "n_obs": fit.n_obs, "converged": fit.converged}
            if identify:
                row.update(self._judged(data[key], fit, shown))
            rows.append(row)
        out = pd.DataFrame(rows)
        if identify:
            from cogtestbed.inference.identification import shared_estimates

            names = list(self.parameters.names)
            shared = shared_estimates(self, {r["subject"]: [r[n] for n in names] for r in rows}, data)
            reasons = [r["unidentified_reason"] or shared.get(r["subject"]) for r in rows]
            out["unidentified_reason"] = pd.Series(reasons, index=out.index, dtype=object)
            out["identified"] = out["unidentified_reason"].isna()
        return out

    def _interval_names(self, intervals: bool | Iterable[str]) -> list[str]:
        """The parameters whose intervals a fit's rows show (``intervals`` of :meth:`fit_mle`)."""
        if isinstance(intervals, bool):
            return list(self.parameters.names) if intervals else []
        wanted = set(intervals)
        unknown = wanted - set(self.parameters.names)
        if unknown:
            raise InputError(f"no parameter {sorted(unknown)} in model {self.name!r}")
        return [p for p in self.parameters.names if p in wanted]

    def _judged(self, data: Any, fit: MLEResult, shown: Sequence[str]) -> dict[str, Any]:
        """One subject's flag (``unidentified_reason``) and the intervals of ``shown`` (NaN where an
        estimate is NaN), from one lazy profile (:class:`~cogtestbed.inference.identification.SubjectProfile`)."""
        from cogtestbed.inference.identification import SubjectProfile, unidentified_reason

        profile = SubjectProfile(self, data, fit)
        intervals = profile.intervals(shown)  # a failed fit's too: every row shows them
        row: dict[str, Any] = {}
        for p in shown:
            iv = intervals.get(p)
            row[f"{p}_lo95"] = iv.lower if iv is not None else float("nan")
            row[f"{p}_hi95"] = iv.upper if iv is not None else float("nan")
        row["unidentified_reason"] = unidentified_reason(self, data, fit, profile=profile)
        return row

    def degenerate_subjects(self, trials: pd.DataFrame) -> dict[Any, str]:
        """The subjects of ``trials`` whose valid answers take fewer than
        :attr:`min_distinct_answers` values, each with the reason (the one rule,
        :func:`cogtestbed.no_data.degenerate_units`): what :meth:`fit_identified` and the
        hierarchical fits (:func:`~cogtestbed.inference.hierarchical.on_identified_subjects`) leave
        unfitted."""
        from cogtestbed.no_data import degenerate_units

        return degenerate_units(trials, self.min_distinct_answers)

    def fit_identified(self, trials: pd.DataFrame, n_starts: int | None = None,
                       intervals: bool | Iterable[str] = True) -> pd.DataFrame:
        """:meth:`fit_mle` under the rule for degenerate answers (:mod:`cogtestbed.no_data`) and
        with each estimate judged (``identify``): a subject whose valid answers take fewer than
        :attr:`min_distinct_answers` values is not fitted (its parameters, NLL, AIC and BIC are NaN,
        ``converged`` False); every fitted subject carries each parameter's likelihood-ratio 95 %
        interval, and one whose fit failed or whose interval is unbounded within the parameter's
        declared range keeps its values but is flagged (:mod:`cogtestbed.inference.identification`).
        Every row says whether the data pin it (``identified``) and, where they do not, why
        (``null_reason``).  What ``cogtestbed fit`` and :func:`cogtestbed.fit` report; summaries
        are over every fitted subject, the flags beside them (:func:`mle_summary`).  ``intervals``:
        the parameters whose intervals the rows show (True: every one, what the fit reports; False:
        none, the flags alone, computed from the ends of each profile: :meth:`fit_mle`)."""
        data = self.subject_data(trials)
        self.require_observations(data)
        degenerate = self.degenerate_subjects(trials)
        keys = [k for k in data if k not in degenerate]
        fits = (self.fit_mle(trials, n_starts=n_starts, subjects=keys, identify=True, intervals=intervals) if keys
                else pd.DataFrame())
        nan = float("nan")
        skipped = pd.DataFrame([{"subject": k, **dict.fromkeys(self.parameters.names, nan), "nll": nan, "aic": nan,
                                 "bic": nan, "n_obs": self.n_observations(data[k]), "converged": False,
                                 "unidentified_reason": degenerate[k], "identified": False}
                                for k in data if k in degenerate])
        out = pd.concat([f for f in (fits, skipped) if not f.empty], ignore_index=True)
        out = out.rename(columns={"unidentified_reason": "null_reason"})
        out["identified"] = out["identified"].astype(bool)
        out = out[[c for c in out.columns if c not in ("identified", "null_reason")] + ["identified", "null_reason"]]
        order = {k: i for i, k in enumerate(data)}
        return out.sort_values("subject", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- lapse mixture
#: The lapse rate ε of a lapse mixture (:func:`with_lapse`): the share of answers drawn uniformly
#: over the valid answers (Wichmann & Hill 2001's λ).  Logit-transformed; the prior's median
#: logit −3 is ε ≈ 0.05, its SD 1.5 spans ε from about 0.003 to 0.5 at ±2 SD.
LAPSE = Parameter("lapse", 0.0, 1.0, 0.05, "lapse rate: share of uniformly random answers",
                  prior_mean=-3.0, prior_sd=1.5, transform="logit")
#: Largest log u/p in the ε-gradient of the lapse mixture (finite at ε = 0, where u/p can overflow).
LAPSE_LOG_RATIO_CAP = 700.0
#: Name of the per-observation uniform log-density array appended to a lapse model's kernel.
LAPSE_FIELD = "lapse_log_uniform"


@njit(cache=True)
def lapse_mixture(eps: np.ndarray, obs_subject: np.ndarray, ll0: np.ndarray, g0: np.ndarray,
                  log_u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log p = log((1 − ε)·p_model + ε·u) per observation, by log-sum-exp, and its gradient.

    ``eps`` (n_subjects,) the lapse rate of each subject, ``ll0``/``g0`` the model kernel's
    log-likelihood and gradient, ``log_u`` the log of the uniform probability (1/|A|) or density
    (1/range) of an answer.  With w = (1 − ε)·p_model / p, ∂log p/∂θ = w·∂ll0/∂θ and
    ∂log p/∂ε = (u − p_model) / p (the last gradient column).
    """
    n, k = g0.shape
    ll = np.empty(n)
    grad = np.empty((n, k + 1))
    for j in range(n):
        e = eps[obs_subject[j]]
        a = np.log1p(-e) + ll0[j] if e < 1.0 else -np.inf
        b = np.log(e) + log_u[j] if e > 0.0 else -np.inf
        top = max(a, b)
        lp = top + np.log(np.exp(a - top) + np.exp(b - top))
        w = np.exp(a - lp)
        for c in range(k):
            grad[j, c] = w * g0[j, c] if w > 0.0 else 0.0
        # u/p − p_model/p; u/p is at most 1/ε, unbounded only at ε = 0 (a fixed column whose
        # gradient is multiplied by 0): capped at e^LAPSE_LOG_RATIO_CAP so that stays 0, not NaN
        grad[j, k] = np.exp(min(log_u[j] - lp, LAPSE_LOG_RATIO_CAP)) - np.exp(ll0[j] - lp)
        ll[j] = lp
    return ll, grad


_LAPSE_KERNELS: dict[tuple[int, int], Any] = {}


def lapse_kernel(base_kernel: Any, n_fields: int) -> Any:
    """The pointwise kernel of ``base_kernel`` mixed with a uniform lapse: its last theta column
    is ε and its last array the per-observation uniform log-density (numba, built once)."""
    key = (id(base_kernel), n_fields)
    if key not in _LAPSE_KERNELS:
        args = "".join(f"a{i}, " for i in range(n_fields))
        src = (f"def kernel(theta, obs_subject, {args}log_u):\n"
               f"    k = theta.shape[1] - 1\n"
               f"    ll0, g0 = base(np.ascontiguousarray(theta[:, :k]), obs_subject, {args})\n"
               f"    return lapse_mixture(np.ascontiguousarray(theta[:, k]), obs_subject, ll0, g0, log_u)\n")
        namespace: dict[str, Any] = {"base": base_kernel, "np": np, "lapse_mixture": lapse_mixture}
        exec(compile(src, f"<lapse kernel of {getattr(base_kernel, '__name__', 'kernel')}>", "exec"), namespace)
        _LAPSE_KERNELS[key] = njit(namespace["kernel"])
    return _LAPSE_KERNELS[key]


class _LapseData:
    """A subject's data with the uniform log-density of each observation (:data:`LAPSE_FIELD`)."""

    def __init__(self, base: Any, log_uniform: np.ndarray) -> None:
        self.unlapsed = base
        self.lapse_log_uniform = np.asarray(log_uniform, dtype=np.float64)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["unlapsed"], name)


class _LapseMixin(CognitiveModel):
    """What a lapse model changes in its base model: data (plus the uniform log-density), and the
    generic likelihood-derived methods (a base model's fast paths compute the lapse-free NLL)."""

    base_model: ClassVar[CognitiveModel]
    lapse_fixed: ClassVar[float | None]

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        data = self.base_model.subject_data(trials)
        return {k: _LapseData(d, self.base_model.lapse_log_uniform(d)) for k, d in data.items()}

    def n_observations(self, data: Any) -> int:
        return self.base_model.n_observations(data.unlapsed)

    def observation_mask(self, data: Any) -> np.ndarray | None:
        return self.base_model.observation_mask(data.unlapsed)

    nll_many = CognitiveModel.nll_many
    grid_nlls = CognitiveModel.grid_nlls
    start_grid = CognitiveModel.start_grid
    fit_subject = CognitiveModel.fit_subject
    pymc_model = CognitiveModel.pymc_model


def invalid_rate(trials: pd.DataFrame) -> dict[str, float]:
    """The invalid-answer rate of a trial table as a binomial proportion with its 95 % Wilson
    interval (Wilson 1927): invalid answers carry no choice information, so a lapse mixture
    leaves them out and their rate is estimated on its own."""
    from scipy.stats import binomtest

    valid = trials["valid"].to_numpy(dtype=bool)
    n, k = int(valid.size), int((~valid).sum())
    if n == 0:
        raise InputError("no trials: the invalid-answer rate is undefined")
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return {"estimate": k / n, "lo95": float(ci.low), "hi95": float(ci.high), "n_invalid": k, "n_trials": n}


def with_lapse(model: CognitiveModel, lapse: float | str | None = "fit") -> CognitiveModel:
    """``model`` with a lapse mixture p(a) = (1 − ε)·p_model(a) + ε·u(a) on every observation.

    ``u`` is uniform over the valid answers (1/|A|; for a continuous answer the uniform density
    over its range), declared by the model's :meth:`CognitiveModel.lapse_log_uniform`.
    ``lapse="fit"`` adds the parameter :data:`LAPSE` (ε, logit-transformed, so MLE, the PyMC
    builder and every study see it as one more parameter); a number fixes ε; None returns
    ``model``.  Invalid answers are already masked out of every likelihood (they carry no choice
    information): their rate is estimated separately, as a binomial proportion of the trials.
    The mixture acts on each observation of the model's kernel, i.e. on a whole trial where one
    observation holds several answers (a two-step trial's two stages lapse together).
    """
    if lapse is None:
        return model
    if isinstance(model, _LapseMixin):
        raise InputError(f"model {model.name!r} already has a lapse term")
    if (model.lapse_options is None
            and getattr(model.lapse_log_uniform, "__func__", None) is CognitiveModel.lapse_log_uniform):
        raise InputError(f"model {model.name!r} does not declare the answers a lapse is uniform over "
                         "(lapse_options or lapse_log_uniform), so it cannot take a lapse term")
    fixed = None if lapse == "fit" else float(lapse)
    if fixed is not None and not 0.0 <= fixed < 1.0:
        raise InputError(f"a fixed lapse rate must be in [0, 1), got {lapse!r}")
    base = type(model)
    kernel = lapse_kernel(model._kernel(), len(model.observation_fields))
    columns = tuple(model.kernel_columns or model.parameters.names)
    params = model.parameters if fixed is not None else ParameterSet((*model.parameters, LAPSE), model.name)
    attrs: dict[str, Any] = {
        "base_model": model, "lapse_fixed": fixed, "parameters": params,
        "pointwise_kernel": kernel, "observation_fields": (*model.observation_fields, LAPSE_FIELD),
        "kernel_columns": (*columns, "lapse" if fixed is None else fixed),
        "__doc__": f"{base.__doc__ or model.name} With a lapse mixture (ε {'fitted' if fixed is None else fixed}).",
    }
    cls = type(f"{base.__name__}Lapse", (_LapseMixin, base), attrs)
    return cls()

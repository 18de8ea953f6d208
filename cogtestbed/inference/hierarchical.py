"""Bayesian (PyMC) fits behind the :class:`~cogtestbed.inference.base.CognitiveModel` contract.

The contract a model implements — ``pymc_model(trials, hierarchical=True) -> pm.Model`` — is
kept small by this module doing the generic part:

1. :func:`subject_parameters` declares every parameter of a :class:`ParameterSet` in the
   current ``pm.Model`` and returns per-subject tensors.  A model's ``pymc_model`` calls it, then
   writes only its likelihood.  Naming convention (generic code relies on it):

   =====================  ===============================================================
   ``{p}_mu``             population mean on the unconstrained scale (hierarchical only),
                          prior ``Normal(p.prior_mean, p.prior_sd)``
   ``{p}_sigma``          population SD on the unconstrained scale (hierarchical only),
                          prior ``HalfNormal(sd_scale · p.prior_sd)``
   ``{p}_z``              non-centred subject offsets ``Normal(0, 1)``, dims ``subject``
   ``{p}_u``              centred subject values on the unconstrained scale (a parameter the
                          model declares in ``centred_parameters``; also the independent
                          subjects of ``hierarchical=False``), dims ``subject``
   ``{p}``                subject values on the natural scale (Deterministic, dims ``subject``)
   ``{p}_pop``            population median on the natural scale, ``constrain({p}_mu)``
   =====================  ===============================================================

   Subject ``i`` has ``u_i = {p}_mu + {p}_sigma · {p}_z[i]`` (non-centred, Papaspiliopoulos
   et al. 2007) and ``{p}[i] = constrain(u_i)`` with the parameter's own transform (logit /
   log / identity).  A parameter named in ``centred`` is sampled centred instead,
   ``u_i ~ Normal({p}_mu, {p}_sigma)``: the same prior, the better geometry when every subject's
   data pin ``u_i`` more tightly than the population spread (Papaspiliopoulos et al. 2007;
   Betancourt & Girolami 2015), where non-centred offsets correlate with ``{p}_mu``.
   With ``hierarchical=False`` subjects are independent:
   ``u_i ~ Normal(p.prior_mean, p.prior_sd)``.  The model has coords ``subject`` (the trial
   table's subject ids, table order) and one observed variable whose pointwise log-likelihood
   is stored for PSIS-LOO.

2. :func:`fit_hierarchical` samples any such model — nutpie when installed, PyMC's NUTS
   otherwise — and returns :class:`BayesFit`: ArviZ ``InferenceData`` (posterior, sample
   stats, log-likelihood) plus :class:`Diagnostics` (R-hat, bulk/tail ESS, divergences), with a
   :class:`ConvergenceWarning` when a threshold fails (Vehtari et al. 2021: R-hat ≤ 1.01,
   ESS ≥ 100 per chain, no divergences).

3. :func:`loo` / :func:`compare_loo` compare fits by PSIS-LOO (Vehtari, Gelman & Gabry 2017).

4. :func:`kernel_pymc_model` is the one PyMC builder of every model with a likelihood: the
   model's pointwise kernel (the :class:`~cogtestbed.inference.base.CognitiveModel` contract)
   wrapped in :func:`pointwise_loglik_op`, the subject arrays pooled by
   :func:`pool_model_arrays`, the parameters from :func:`subject_parameters`.  A model declares
   only its data packing (``observation_fields``, ``observation_mask``, ``kernel_columns``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import logging
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError, outside_stacklevel
from cogtestbed.inference.reproducible import strict_float
from cogtestbed.parameters import Parameter, ParameterSet

Sampler = Literal["auto", "nutpie", "pymc"]

#: Diagnostic thresholds (Vehtari et al. 2021, "Rank-normalization, folding, and localization").
RHAT_MAX = 1.01
ESS_MIN_PER_CHAIN = 100
#: NUTS target acceptance rate unless the model or the caller asks for another.
TARGET_ACCEPT = 0.9
#: Population SD prior scale relative to the parameter's prior SD (HalfNormal(0.5 · prior_sd)).
SD_SCALE = 0.5


class ConvergenceWarning(UserWarning):
    """A Bayesian fit failed a diagnostic threshold (R-hat, ESS or divergences)."""


# ----------------------------------------------------------------------------- transforms
def constrain(p: Parameter, z: Any) -> Any:
    """Pytensor version of :meth:`Parameter.to_constrained` (sigmoid / exp / identity)."""
    import pytensor.tensor as pt

    if p.transform == "logit":
        return p.lower + (p.upper - p.lower) * pt.sigmoid(z)
    if p.transform == "log":
        return p.lower + pt.exp(z)
    return z


@dataclass(frozen=True)
class SubjectParams:
    """Per-subject tensors: ``natural[p]`` (bounded scale) and ``unconstrained[p]``."""

    natural: dict[str, Any]
    unconstrained: dict[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.natural[name]


def subject_parameters(
    parameters: ParameterSet,
    hierarchical: bool = True,
    dims: str = "subject",
    sd_scale: float = SD_SCALE,
    centred: Sequence[str] = (),
    shifts: Mapping[str, Any] | None = None,
) -> SubjectParams:
    """Declare ``parameters`` in the model on the context stack (see module table); the
    parameters named in ``centred`` are sampled centred (hierarchical models only).  ``shifts``
    adds a per-subject tensor to a parameter's unconstrained value (the crossed prompt-form effect
    of :func:`forms_pymc_model`).

    Must be called inside ``with pm.Model(coords={dims: ...})``.
    """
    import pymc as pm

    unknown = sorted(set(centred) - set(parameters.names))
    if unknown:
        raise InputError(f"centred parameters {unknown} are not parameters of {parameters.owner} "
                         f"({', '.join(parameters.names)})")
    natural: dict[str, Any] = {}
    unconstrained: dict[str, Any] = {}
    for p in parameters:
        if hierarchical:
            mu = pm.Normal(f"{p.name}_mu", p.prior_mean, p.prior_sd)
            sigma = pm.HalfNormal(f"{p.name}_sigma", sd_scale * p.prior_sd)
            if p.name in centred:
                u = pm.Normal(f"{p.name}_u", mu, sigma, dims=dims)
            else:
                u = mu + sigma * pm.Normal(f"{p.name}_z", 0.0, 1.0, dims=dims)
            pm.Deterministic(f"{p.name}_pop", constrain(p, mu))
        else:
            u = pm.Normal(f"{p.name}_u", p.prior_mean, p.prior_sd, dims=dims)
        if shifts and p.name in shifts:
            u = u + shifts[p.name]
        unconstrained[p.name] = u
        natural[p.name] = pm.Deterministic(p.name, constrain(p, u), dims=dims)
    return SubjectParams(natural, unconstrained)


def sample_hierarchical_prior(
    parameters: ParameterSet, n_subjects: int, rng: np.random.Generator, sd_scale: float = SD_SCALE
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """One draw of the hierarchical prior of :func:`subject_parameters` (numpy).

    Returns (population values ``{p}_mu``/``{p}_sigma``/``{p}_pop``, natural subject values, inside
    every parameter's bounds: :meth:`~cogtestbed.parameters.Parameter.inside`).
    Simulating from it and fitting with the same model is what makes coverage and SBC exact.
    """
    pop: dict[str, float] = {}
    subj: dict[str, np.ndarray] = {}
    for p in parameters:
        mu = rng.normal(p.prior_mean, p.prior_sd)
        sigma = abs(rng.normal(0.0, sd_scale * p.prior_sd))
        z = rng.normal(size=n_subjects)
        pop[f"{p.name}_mu"], pop[f"{p.name}_sigma"] = float(mu), float(sigma)
        pop[f"{p.name}_pop"] = float(p.inside(p.to_constrained(mu)))
        subj[p.name] = p.inside(p.to_constrained(mu + sigma * z))
    return pop, subj


def pool_subject_arrays(
    data: Mapping[Any, Any], fields: Sequence[str], keep: Any = None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Concatenate per-subject observation arrays for a pooled PyMC likelihood.

    ``data`` maps subject → an object with array attributes ``fields`` (a model's
    ``subject_data``); ``keep(d)`` optionally masks the observations that enter the likelihood.
    Returns the subject index of every observation (in ``data`` order, sorted) and the arrays.
    """
    if not data:
        raise InputError("no subjects with observations to pool")
    masks = []
    for d in data.values():
        m = None if keep is None else keep(d)
        masks.append(np.ones(len(getattr(d, fields[0])), dtype=bool) if m is None else np.asarray(m, dtype=bool))
    obs_subject = np.concatenate([np.full(int(m.sum()), i, dtype=np.int64) for i, m in enumerate(masks)])
    arrays = {name: np.ascontiguousarray(np.concatenate(
        [np.asarray(getattr(d, name))[m] for d, m in zip(data.values(), masks, strict=True)]))
        for name in fields}
    return obs_subject, arrays


def pool_model_arrays(model: Any, trials: pd.DataFrame
                      ) -> tuple[list[Any], np.ndarray, dict[str, np.ndarray]]:
    """A model's kernel arrays of all subjects of ``trials``, stacked for the pointwise Op.

    Returns the subject ids (``subject_data`` order), the subject index of every observation and
    the arrays by :attr:`~cogtestbed.inference.base.CognitiveModel.observation_fields` name.
    """
    data = model.subject_data(trials)
    idx, arrays = pool_subject_arrays(data, model.observation_fields, model.observation_mask)
    return list(data), idx, arrays


def kernel_pymc_model(model: Any, trials: pd.DataFrame, hierarchical: bool = True) -> Any:
    """The generic PyMC model of a :class:`~cogtestbed.inference.base.CognitiveModel`.

    Non-centred subject parameters (:func:`subject_parameters`; centred for the model's declared
    ``centred_parameters``), stacked into the kernel's
    columns (``kernel_columns``: free parameters or constants), the pooled observation arrays as
    ``pm.Data`` (so a cached nutpie compilation is re-pointed at new data of the same shape), and
    one observed variable ``model.observed_name`` whose pointwise logp is the model's kernel
    through :func:`pointwise_loglik_op` (exact gradients for NUTS, per-observation
    log-likelihood for PSIS-LOO).  The first observation field is the observed value.
    """
    import pymc as pm
    import pytensor.tensor as pt

    kernel = model.kernel()
    if kernel is None:
        raise NotImplementedError(f"model {model.name!r} has no pointwise likelihood kernel")
    op = pointwise_loglik_op(kernel, model.name)
    subjects, idx, arrays = pool_model_arrays(model, trials)
    columns = model.kernel_columns or model.parameters.names
    with pm.Model(coords={"subject": subjects, "obs": np.arange(idx.shape[0])}) as m:
        theta = subject_parameters(model.parameters, hierarchical,
                                   centred=getattr(model, "centred_parameters", ()))
        first = theta[model.parameters.names[0]]
        mat = pt.stack([theta[c] if isinstance(c, str) else pt.zeros_like(first) + float(c)
                        for c in columns], axis=1)
        subj = pm.Data("obs_subject", idx, dims="obs")
        data = [pm.Data(name, arr, dims="obs" if arr.ndim == 1 else None)
                for name, arr in arrays.items()]
        observe_pointwise(model.observed_name, op, mat, subj, *data)
    m.cogtestbed_key = ("kernel", model.name, hierarchical)
    return m


#: Prior scale of a prompt form's SD on a parameter's unconstrained scale (HalfNormal): a form
#: shifting a logit by 1 is a large wording effect; a choice of ours, no paper sets it.
FORM_SD_SCALE = 0.5


def forms_pymc_model(model: Any, trials: pd.DataFrame, form_parameters: Sequence[str],
                     form_sd_scale: float = FORM_SD_SCALE) -> Any:
    """The hierarchical model of :func:`kernel_pymc_model` with **crossed subject and prompt-form
    effects**: every parameter in ``form_parameters`` gets, besides its subject effect, a
    non-centred form effect ``{p}_form_sigma · {p}_form_z[form]`` (``{p}_form_sigma ~
    HalfNormal(form_sd_scale)``, dims ``form``) added on its unconstrained scale, the form being
    the subject's ``form`` column.  ``{p}_form_sigma`` is the between-form SD, estimated with its
    posterior (sample it with :func:`fit_hierarchical`, which reports R-hat, ESS and divergences)."""
    import pymc as pm
    import pytensor.tensor as pt

    if "form" not in trials.columns:
        raise InputError("a forms model needs the table's 'form' column (simulate or run with --forms)")
    unknown = [p for p in form_parameters if p not in model.parameters.names]
    if unknown or not form_parameters:
        raise InputError(f"form effects on {list(form_parameters)}: give parameters of {model.name} "
                         f"({', '.join(model.parameters.names)})")
    kernel = model.kernel()
    if kernel is None:
        raise NotImplementedError(f"model {model.name!r} has no pointwise likelihood kernel")
    op = pointwise_loglik_op(kernel, model.name)
    subjects, idx, arrays = pool_model_arrays(model, trials)
    form_of = trials.groupby("subject", sort=False)["form"].first()
    forms, form_idx = np.unique(form_of.loc[list(subjects)].to_numpy(dtype=np.int64), return_inverse=True)
    columns = model.kernel_columns or model.parameters.names
    coords = {"subject": subjects, "obs": np.arange(idx.shape[0]), "form": forms}
    with pm.Model(coords=coords) as m:
        shifts = {}
        # pm.Data, not a constant: a compiled sampler is reused for another table of the same shape
        subject_form = pm.Data("subject_form", form_idx.astype(np.int64), dims="subject")
        for name in form_parameters:
            sigma = pm.HalfNormal(f"{name}_form_sigma", form_sd_scale)
            z = pm.Normal(f"{name}_form_z", 0.0, 1.0, dims="form")
            shifts[name] = (sigma * z)[subject_form]
        theta = subject_parameters(model.parameters, True, centred=getattr(model, "centred_parameters", ()),
                                   shifts=shifts)
        first = theta[model.parameters.names[0]]
        mat = pt.stack([theta[c] if isinstance(c, str) else pt.zeros_like(first) + float(c)
                        for c in columns], axis=1)
        subj = pm.Data("obs_subject", idx, dims="obs")
        data = [pm.Data(name, arr, dims="obs" if arr.ndim == 1 else None) for name, arr in arrays.items()]
        observe_pointwise(model.observed_name, op, mat, subj, *data)
    m.cogtestbed_key = ("kernel-forms", model.name, tuple(form_parameters))
    return m


# ----------------------------------------------------------------------------- numba likelihood op
def pointwise_loglik_op(kernel: Any, name: str) -> Any:
    """A pytensor Op evaluating a model's numba likelihood kernel, for PyMC and nutpie.

    ``kernel(theta, obs_subject, *data) -> (ll, grad)``: ``theta`` (n_subjects, k) natural-scale
    parameters, ``obs_subject`` (n_obs,) the subject index of every observation (sorted, so a
    change of index starts a new subject), ``ll`` (n_obs,) the log-likelihood of each
    observation and ``grad`` (n_obs, k) its derivative with respect to that observation's
    subject's parameters (forward-mode inside the kernel).  The Op's gradient sums those rows
    per subject, so NUTS gets exact gradients from the same kernel the MLE uses.  nutpie runs
    the kernel natively (a numba dispatch is registered), PyMC's C backend through ``perform``.
    Every model with a sequential likelihood (RL, two-step, horizon, …) can use this Op.
    One Op is built per (kernel, name) and reused, so models call this in ``pymc_model``.
    """
    key = (id(kernel), name)
    if key not in _OPS:
        _OPS[key] = _PointwiseLogLik(kernel, name)
    return _OPS[key]


_OPS: dict[tuple[int, str], Any] = {}


def _define_op() -> Any:
    import pytensor.tensor as pt
    from pytensor.gradient import disconnected_type
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class PointwiseLogLik(Op):
        __props__ = ("kernel", "name")

        def __init__(self, kernel: Any, name: str) -> None:
            self.kernel = kernel
            self.name = name

        def make_node(self, *inputs: Any) -> Any:  # inputs: theta, obs_subject, *data
            theta = pt.as_tensor_variable(inputs[0])
            obs_subject = pt.as_tensor_variable(inputs[1])
            data_t = [pt.as_tensor_variable(d) for d in inputs[2:]]
            outs = [pt.dvector(), pt.dmatrix()]
            return Apply(self, [theta, obs_subject, *data_t], outs)

        def perform(self, node: Any, inputs: Any, output_storage: Any) -> None:
            ll, grad = self.kernel(*inputs)
            output_storage[0][0] = ll
            output_storage[1][0] = grad

        def connection_pattern(self, node: Any) -> list[list[bool]]:
            return [[True, True]] + [[False, False]] * (len(node.inputs) - 1)

        def grad(self, inputs: Any, output_grads: Any) -> list[Any]:
            theta, obs_subject = inputs[0], inputs[1]
            _, dll = self(*inputs)  # type: ignore[misc]
            g_ll = output_grads[0]
            theta_bar = pt.inc_subtensor(pt.zeros_like(theta)[obs_subject], g_ll[:, None] * dll)
            return [theta_bar] + [disconnected_type() for _ in inputs[1:]]

        def __str__(self) -> str:
            return f"PointwiseLogLik{{{self.name}}}"

    try:
        from pytensor.link.numba.dispatch.basic import register_funcify_and_cache_key

        @register_funcify_and_cache_key(PointwiseLogLik)
        def _numba(op: Any, node: Any = None, **kwargs: Any) -> Any:
            kernel = op.kernel

            from numba import njit

            @njit
            def run(*args):  # type: ignore[no-untyped-def]
                return kernel(*args)

            return run, _kernel_cache_key(kernel)
    except ImportError:  # pragma: no cover - older pytensor: object-mode fallback
        pass
    return PointwiseLogLik


def _kernel_cache_key(kernel: Any) -> str | None:
    """PyTensor's on-disk cache key of the Op running ``kernel``: the kernel's name and a digest of
    the package's sources (:func:`~cogtestbed.inference.optim.cache_tag`), or None (compiled in
    every process, never cached) for a kernel with no stable name (a lapse kernel made by ``exec``).

    The cached function holds the compiled kernel *and everything it calls*, so the key changes with
    any source file of the package, not only the kernel's own source: a key from the kernel's
    source alone served a stale likelihood after an edit of a helper it inlines, and could not be
    made for a kernel without source (a hierarchical fit with a lapse term raised ``OSError``)."""
    from cogtestbed.inference.optim import cache_tag

    tag = cache_tag(kernel)
    return None if tag is None else f"cogtestbed-pointwise-{kernel.__module__}-{tag}"


_OP_CLASS: Any = None


def _PointwiseLogLik(kernel: Any, name: str) -> Any:
    global _OP_CLASS
    if _OP_CLASS is None:
        _OP_CLASS = _define_op()
    return _OP_CLASS(kernel, name)


def observe_pointwise(name: str, op: Any, theta: Any, obs_subject: Any,
                      observed: Any, *data: Any, dims: str = "obs") -> Any:
    """Observed variable whose per-observation logp is ``op(theta, obs_subject, observed, *data)``.

    ``observed`` is passed to the kernel right after ``obs_subject``; pointwise log-likelihood
    (for PSIS-LOO) comes for free because it is a real observed variable.  Pass the trial
    arrays as ``pm.Data`` so :func:`fit_hierarchical` can reuse a compiled sampler.
    """
    import pymc as pm
    import pytensor.tensor as pt

    dtype = getattr(observed, "dtype", "int64")

    def logp(value: Any, th: Any, subj: Any) -> Any:
        return op(th, subj, pt.cast(value, dtype), *data)[0]

    # obs_subject is a distribution parameter so PyMC can infer the support shape (n).
    return pm.CustomDist(name, theta, pt.as_tensor_variable(obs_subject), logp=logp,
                         observed=observed, dims=dims, signature="(s,k),(n)->(n)")


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
        return (f"max R-hat {rhat} (<= {RHAT_MAX}), min bulk ESS {self.min_ess_bulk:.0f} and min "
                f"tail ESS {self.min_ess_tail:.0f} (>= {self.ess_floor}), {self.divergences} divergences (0): "
                f"{self.verdict}")

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
    div = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
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
    )


def _worst(table: pd.DataFrame, column: str, reduce: Callable[[np.ndarray], Any]) -> float | None:
    """``reduce`` over a column's finite values; None where it has none (one chain has no R-hat)."""
    values = table[column].to_numpy(float) if column in table and len(table) else np.array([])
    values = values[~np.isnan(values)]
    return float(reduce(values)) if len(values) else None


@dataclass
class BayesFit:
    """A Bayesian fit: the InferenceData and its diagnostics."""

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


def on_identified_subjects(model: Any, trials: pd.DataFrame, sample: Callable[[pd.DataFrame], BayesFit]) -> BayesFit:
    """``sample`` (a hierarchical fit) on the subjects of ``trials`` whose valid answers identify
    ``model``, under the rule of :meth:`~cogtestbed.inference.base.CognitiveModel.fit_identified`
    (:meth:`~cogtestbed.inference.base.CognitiveModel.degenerate_subjects`): the others are left
    out (the population is estimated from the identified subjects), named in the fit's
    :attr:`BayesFit.unidentified` and :attr:`BayesFit.flags`, with null rows in its subject
    summary.  Where no subject is identified (a table whose every valid answer is one value, say),
    the posterior would reflect only the prior: :class:`~cogtestbed.no_data.DegenerateAnswers` is
    raised, in one line with the reason."""
    from cogtestbed.no_data import DegenerateAnswers, degenerate_reason, unfitted_flag, valid_answers, valid_rows

    degenerate = model.degenerate_subjects(trials)
    if not degenerate:
        return sample(trials)
    kept = trials[~trials["subject"].isin(list(degenerate))]
    if valid_rows(kept) == 0:
        reason = degenerate_reason(valid_answers(trials).to_numpy(), model.min_distinct_answers) or (
            f"each of the {len(degenerate)} subjects' valid answers is degenerate ({next(iter(degenerate.values()))})")
        raise DegenerateAnswers(f"{getattr(model, 'name', 'model')}: no subject's answers identify the model: "
                                f"{reason}; a hierarchical posterior would reflect only its prior, so none is "
                                "sampled (--method mle reports each subject null with its reason)")
    fit = sample(kept)
    fit.unidentified = dict(degenerate)
    fit.flags.append(unfitted_flag(degenerate) + f"; the posterior (population included) is of the other "
                     f"{kept['subject'].nunique()} subject(s)")
    return fit


def nutpie_available() -> bool:
    return importlib.util.find_spec("nutpie") is not None


def fit_hierarchical(
    model: Any,
    trials: pd.DataFrame,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 0,
    sampler: Sampler = "auto",
    hierarchical: bool = True,
    cores: int | None = None,
    target_accept: float | None = None,
    progressbar: bool = False,
    warn: bool = True,
    log_likelihood: bool = True,
    max_draws: int | None = None,
) -> BayesFit:
    """Sample ``model.pymc_model(trials, hierarchical)`` and diagnose the run.

    ``model`` is a :class:`~cogtestbed.inference.base.CognitiveModel` (or any object with
    ``pymc_model``) or an already built ``pm.Model``.  ``sampler="auto"`` uses nutpie (Rust NUTS
    on a numba-compiled logp, Seyboldt et al.) when installed, else PyMC's NUTS; both draw from
    the same posterior.  The returned InferenceData holds the pointwise log-likelihood (for
    PSIS-LOO; ``log_likelihood=False`` skips it, e.g. in SBC loops where it is not used).  A
    :class:`ConvergenceWarning` names every failed threshold when ``warn``.  ``target_accept``
    defaults to the model's own ``target_accept`` attribute (models with stiff posteriors, such
    as near-deterministic choosers, raise it), else :data:`TARGET_ACCEPT`.

    ``max_draws``: where a run fails only its ESS or R-hat checks (no divergent transition: those
    call for another geometry, not more draws), sample again with twice the draws per chain, the
    same seed and tuning, until every check passes or the next run would exceed ``max_draws``
    (Vehtari et al. 2021 recommend more draws for a low ESS).  ``diagnostics.n_draws`` is the draws
    per chain of the run returned, ``diagnostics.seconds`` the time of all runs.

    A seeded fit gives the same draws in every process on one machine and lock, whatever the
    state of the compilation caches (the models are compiled without fast-math,
    :func:`~cogtestbed.inference.reproducible.strict_float`); across CPUs they agree to Monte
    Carlo error.
    """
    import pymc as pm

    _check_sampling(draws, tune, chains, max_draws)
    if target_accept is None:
        target_accept = float(getattr(model, "target_accept", None) or TARGET_ACCEPT)
    pm_model = model if isinstance(model, pm.Model) else model.pymc_model(trials, hierarchical)
    use = _sampler_to_use(sampler)
    cores = cores or min(chains, 2)
    start = time.perf_counter()
    free = [v.name for v in pm_model.free_RVs]
    run = functools.partial(_sample, pm_model, use, model, hierarchical, tune=tune, chains=chains, seed=seed,
                            cores=cores, target_accept=target_accept, progressbar=progressbar)
    idata = run(draws)
    diag = diagnose(idata, float("nan"), use, var_names=free)
    while _more_draws_help(diag) and max_draws is not None and 2 * draws <= max_draws:
        draws *= 2
        idata = run(draws)
        diag = diagnose(idata, float("nan"), use, var_names=free)
    diag = dataclasses.replace(diag, seconds=time.perf_counter() - start)
    if log_likelihood:
        with pm_model:
            pm.compute_log_likelihood(idata, progressbar=False)
    _add_constant_data(idata, pm_model)
    if warn and not diag.ok:
        warnings.warn(
            f"{getattr(model, 'name', 'model')}: sampler diagnostics failed: "
            + "; ".join(diag.problems) + " — do not trust this posterior without more tuning/draws"
            + (" (max_draws samples again with more draws where only ESS or R-hat fail)."
               if _more_draws_help(diag) else "."),
            ConvergenceWarning, stacklevel=outside_stacklevel(),
        )
    return BayesFit(idata, diag, getattr(model, "name", ""))


def _check_sampling(draws: int, tune: int, chains: int, max_draws: int | None) -> None:
    """Refuse draws, tuning, chains or ``max_draws`` that no sampler run can take."""
    if draws < 1 or chains < 1 or tune < 0:
        raise InputError(f"sampling needs draws >= 1, chains >= 1 and tune >= 0; got draws={draws}, "
                         f"chains={chains}, tune={tune}")
    if max_draws is not None and max_draws < draws:
        raise InputError(f"max_draws ({max_draws}) must be at least draws ({draws})")


def _sampler_to_use(sampler: str) -> str:
    """``auto`` resolves to nutpie where installed, else PyMC; any other name must be one of the two."""
    use = sampler
    if use == "auto":
        use = "nutpie" if nutpie_available() else "pymc"
    if use not in ("nutpie", "pymc"):
        raise InputError(f"sampler must be auto, nutpie or pymc, got {sampler!r}")
    return use


def _sample(pm_model: Any, use: str, model: Any, hierarchical: bool, draws: int, *, tune: int, chains: int,
            seed: int, cores: int, target_accept: float, progressbar: bool) -> Any:
    """One sampler run of ``draws`` per chain (nutpie on the cached compiled model, or PyMC's NUTS)."""
    import pymc as pm

    from cogtestbed.progress import for_sampling, nutpie_progress, pymc_callback

    # the command line's reporter, where one is open and no bar of the sampler's own is asked for
    progress = None if progressbar else for_sampling(
        f"sampling {getattr(model, 'name', '') or 'the model'} ({chains} chains x {tune} tune + {draws} draws)")
    if progress is not None:  # the up-front estimate, before the set-up
        units = (tune + draws) * chains / max(1, min(chains, cores)) * _n_observed(pm_model)
        progress.expect(f"{use}:{_kind_name(model, pm_model)}", units,
                        compiled=use == "nutpie" and _compiled_key(pm_model, getattr(model, "name", id(model)),
                                                                   hierarchical) in _COMPILED)
    if use == "nutpie":
        with strict_float():
            compiled = _nutpie_compiled(pm_model, getattr(model, "name", id(model)), hierarchical)
        import nutpie

        # nutpie's own bar only where the caller asks for it (progressbar=True); with a reporter open, its
        # progress is routed to our single line (nutpie_progress) and nutpie draws nothing itself
        routed = nutpie_progress(progress, cores) if progress is not None else contextlib.nullcontext()
        with routed:
            idata = nutpie.sample(
                compiled, draws=draws, tune=tune, chains=chains, seed=seed, cores=cores,
                target_accept=target_accept, progress_bar=progressbar or progress is not None,
                store_divergences=False,
                low_rank_modified_mass_matrix=bool(getattr(model, "low_rank_mass_matrix", False)),
            )
        if progress is not None:
            progress.finish()
        return idata
    extra = {"callback": pymc_callback(progress, draws, tune, chains)} if progress is not None else {}
    with pm_model, _quiet_pymc(), strict_float():
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
            target_accept=target_accept, progressbar=progressbar, compute_convergence_checks=False, **extra,
        )
    if progress is not None:
        progress.finish()
    return idata


def _more_draws_help(diag: Diagnostics) -> bool:
    """Whether a failed run failed only on ESS or R-hat (no divergence), which more draws can mend."""
    return not diag.ok and diag.divergences == 0


_COMPILED: dict[Any, Any] = {}


def _nutpie_compiled(pm_model: Any, name: Any, hierarchical: bool) -> Any:
    """nutpie-compiled model, reused across fits with data of the same shapes.

    Compiling a model to numba takes seconds; a recovery or SBC study refits one model to
    many data sets of one shape.  The data live in ``pm.Data`` containers, so a cached
    compilation is pointed at the new arrays with nutpie's ``with_data``.
    """
    import nutpie

    data = {d.name: d.get_value() for d in pm_model.data_vars}
    key = _compiled_key(pm_model, name, hierarchical)
    if key not in _COMPILED:
        if len(_COMPILED) > 8:
            _COMPILED.clear()
        _COMPILED[key] = nutpie.compile_pymc_model(pm_model)
        return _COMPILED[key]
    import dataclasses

    cached = _COMPILED[key]
    compiled = cached.with_data(**{k: v for k, v in data.items() if k in cached.shared_data})
    # Coordinates (subject ids) come from the new model, not the cached one.
    coords = {**(cached.coords or {}), **{k: pd.Index(v) for k, v in pm_model.coords.items()}}
    return dataclasses.replace(compiled, _coords=coords)


def _compiled_key(pm_model: Any, name: Any, hierarchical: bool) -> tuple[Any, ...]:
    """The key of a compiled model in :data:`_COMPILED`: models equal in it share one compilation."""
    data = {d.name: d.get_value() for d in pm_model.data_vars}
    # A bare pm.Model has name "": the free variables (and an optional ``cogtestbed_key`` set by
    # the builder) keep different models with equal data shapes (e.g. pooling variants) apart.
    return (name, hierarchical, getattr(pm_model, "cogtestbed_key", None),
            tuple(v.name for v in pm_model.free_RVs),
            tuple(sorted((k, v.shape, str(v.dtype)) for k, v in data.items())),
            tuple(sorted((k, len(v)) for k, v in pm_model.coords.items())),
            _constant_digest(pm_model))


def _kind_name(model: Any, pm_model: Any) -> str:
    """A model's name for the sampling cost model (a bare pm.Model: its free variables)."""
    name = getattr(model, "name", "") or ""
    return name if name else ",".join(sorted(v.name for v in pm_model.free_RVs))[:120]


def _n_observed(pm_model: Any) -> int:
    """Observations of the model (the data a gradient evaluation visits): the longest data array,
    ``pm.Data`` or observed constant; at least 1."""
    sizes = [int(np.size(d.get_value())) for d in pm_model.data_vars]
    for rv in pm_model.observed_RVs:
        data = getattr(pm_model.rvs_to_values.get(rv), "data", None)
        if data is not None:
            sizes.append(int(np.size(data)))
    return max([1, *sizes])


def _constant_digest(pm_model: Any) -> str:
    """SHA-256 of the graph's constants (observed arrays and index arrays given as numpy rather
    than ``pm.Data``): ``with_data`` cannot re-point those, so they must be part of the key."""
    import hashlib

    from pytensor.graph.traversal import ancestors
    from pytensor.tensor.variable import TensorConstant

    outputs = [*pm_model.observed_RVs, *pm_model.deterministics, *pm_model.free_RVs]
    digest = hashlib.sha256()
    for var in ancestors(outputs):
        if isinstance(var, TensorConstant) and var.data.size > 1:
            digest.update(np.ascontiguousarray(var.data).tobytes())
    for rv in pm_model.observed_RVs:
        value = pm_model.rvs_to_values[rv]
        if isinstance(value, TensorConstant):
            digest.update(np.ascontiguousarray(value.data).tobytes())
    return digest.hexdigest()


def _add_constant_data(idata: Any, pm_model: Any) -> None:
    """Store the model's ``pm.Data`` (e.g. ``obs_subject``) in ``constant_data`` (nutpie omits it)."""
    import xarray as xr

    if "constant_data" in idata.groups():
        return
    dims = pm_model.named_vars_to_dims
    ds = xr.Dataset({d.name: (dims.get(d.name, [f"{d.name}_dim_{i}" for i in range(d.ndim)]),
                              d.get_value()) for d in pm_model.data_vars})
    idata.add_groups(constant_data=ds)


class _quiet_pymc:
    """Silence PyMC's per-fit INFO logging (sampler banner) inside studies."""

    def __enter__(self) -> None:
        self._logger = logging.getLogger("pymc")
        self._level = self._logger.level
        self._logger.setLevel(logging.WARNING)

    def __exit__(self, *exc: Any) -> None:
        self._logger.setLevel(self._level)


# ----------------------------------------------------------------------------- model comparison
def loo(fit: BayesFit | Any, by_subject: bool = True) -> Any:
    """PSIS-LOO (ArviZ ``az.loo``) of a fit; ``by_subject`` (default) leaves out whole subjects.

    Leaving out one subject (the sum of its trials' log-likelihood) is the default because in a
    sequential learning model single trials are not exchangeable, and trials whose probability
    is clipped (CogBench's [1e-5, 1 − 1e-5]) have a constant log-likelihood that breaks the
    Pareto-k fit.  ``by_subject=False`` gives the usual per-trial LOO.
    """
    import arviz as az

    idata = fit.idata if isinstance(fit, BayesFit) else fit
    if not by_subject:
        return az.loo(idata, pointwise=True)
    ll = idata.log_likelihood
    name = next(iter(ll.data_vars))
    obs_subject = idata.constant_data["obs_subject"].values
    arr = ll[name].values  # chain, draw, obs
    summed = np.stack([arr[..., obs_subject == s].sum(-1) for s in np.unique(obs_subject)], -1)
    import xarray as xr

    new = idata.copy()
    new.log_likelihood = xr.Dataset({name: (("chain", "draw", "subject_obs"), summed)})
    return az.loo(new, pointwise=True)


def compare_loo(fits: Mapping[str, BayesFit | Any], by_subject: bool = True) -> pd.DataFrame:
    """ArviZ ``compare`` of several fits by PSIS-LOO (rank 0 = best expected log predictive)."""
    import arviz as az

    return az.compare({k: loo(v, by_subject) for k, v in fits.items()})

"""The pytensor Op that evaluates a model's numba pointwise likelihood kernel, with its exact gradient,
inside PyMC and nutpie (:func:`pointwise_loglik_op`), and the observed variable it feeds
(:func:`observe_pointwise`).  :mod:`cogtestbed.inference.hierarchical` builds every kernel model on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit

from cogtestbed.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

from cogtestbed.inference.reproducible import unique_numba_symbols


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
            theta_bar = _segment_sum_op()(output_grads[0], dll, obs_subject, theta)
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
_SEGMENT_SUM: Any = None


@njit(cache=True)
def segment_sum(weight: np.ndarray, rows: np.ndarray, obs_subject: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Σ over each subject's observations of ``weight[t] · rows[t, :]``, shaped like ``theta``
    (n_subjects, k): the gradient of the pointwise Op with respect to the subject parameters in one
    pass (no (n_obs, k) product and scatter of the generic graph: at 73,250 observations those took
    as long as the likelihood kernel itself)."""
    out = np.zeros(theta.shape)
    for t in range(rows.shape[0]):
        s = obs_subject[t]
        w = weight[t]
        for c in range(rows.shape[1]):
            out[s, c] += w * rows[t, c]
    return out


def _segment_sum_op() -> Any:
    """The pytensor Op of :func:`segment_sum` (numba in nutpie, ``perform`` elsewhere), built once."""
    global _SEGMENT_SUM
    if _SEGMENT_SUM is None:
        _SEGMENT_SUM = _define_segment_sum()()
    return _SEGMENT_SUM


def _define_segment_sum() -> Any:
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class SegmentSum(Op):
        __props__ = ()

        def make_node(self, *inputs: Any) -> Any:  # inputs: weight (n,), rows (n, k), obs_subject (n,), theta
            return Apply(self, [pt.as_tensor_variable(x) for x in inputs], [pt.dmatrix()])

        def perform(self, node: Any, inputs: Any, output_storage: Any) -> None:
            weight, rows, obs_subject, theta = inputs
            out = np.zeros(np.shape(theta))
            np.add.at(out, obs_subject, np.asarray(weight)[:, None] * rows)
            output_storage[0][0] = out

    try:
        from pytensor.link.numba.dispatch.basic import register_funcify_and_cache_key

        @register_funcify_and_cache_key(SegmentSum)
        def _numba(op: Any, node: Any = None, **kwargs: Any) -> Any:
            from cogtestbed.inference.optim import cache_tag

            tag = cache_tag(segment_sum)
            return segment_sum, (None if tag is None else f"cogtestbed-segment-sum-{tag}")
    except ImportError:  # pragma: no cover - older pytensor: object-mode fallback
        pass
    return SegmentSum


def _PointwiseLogLik(kernel: Any, name: str) -> Any:
    global _OP_CLASS
    if _OP_CLASS is None:
        # before any graph with the Op is compiled: symbols no other process's cache entry shares
        unique_numba_symbols()
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


# ----------------------------------------------------------------------------- pooled observations
#: Population SD prior scale relative to the parameter's prior SD (HalfNormal(0.5 · prior_sd)).
SD_SCALE = 0.5


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

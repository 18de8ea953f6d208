"""A likelihood kernel's gradient by finite differences: a model without a hand-written gradient.

The likelihood contract (:class:`~cogtestbed.inference.base.CognitiveModel`) is a numba kernel
``kernel(theta, obs_subject, *arrays) -> (ll, grad)``, ``grad`` the exact derivative of each
observation's log-likelihood in its subject's K columns.  A contributor may instead set
``loglik_kernel``, the same kernel returning ``ll`` alone; :func:`numerical_gradient_kernel` turns
it into a full kernel whose gradient is the central difference of ``ll`` in each column, so the
MLE, the PyMC Op and every conformance check run on it unchanged.  A hand gradient
(``pointwise_kernel``) stays the faster option: the differences cost 2 extra likelihood passes per
free column (``benchmarks/numgrad_speed.py`` prints the difference).

Each column c is moved for every subject at once (an observation depends on its own subject's
columns only, the contract's ``obs_subject``), by h = :data:`FD_STEP` · max(1, |θ|), shortened to
the distance to the column's bound where the parameter lies within h of it (then the difference
is one-sided at the bound itself).  A central difference's error is O(h²) from the third
derivative plus O(ε·|ll| / h) from rounding; h ∝ ε^(1/3) balances the two (Nocedal & Wright 2006,
Numerical Optimization, §8.1).  Columns the model fixes to a constant (:attr:`kernel_columns`)
get no gradient (the embedding multiplies it by 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

#: Relative step of the central differences: ε^(1/3) of float64 (Nocedal & Wright 2006, §8.1).
FD_STEP = float(np.finfo(np.float64).eps) ** (1.0 / 3.0)

_KERNELS: dict[tuple[Any, ...], Any] = {}


@njit(cache=True)
def difference_steps(theta: np.ndarray, c: int, lower: float, upper: float,
                     step: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(theta moved up in column ``c``, moved down, the up steps, the down steps) per subject:
    h = step · max(1, |θ|), each side shortened to the distance to its bound."""
    up = theta.copy()
    down = theta.copy()
    m = theta.shape[0]
    h_up = np.empty(m)
    h_down = np.empty(m)
    for s in range(m):
        x = theta[s, c]
        h = step * max(1.0, abs(x))
        h_up[s] = max(0.0, min(h, upper - x))
        h_down[s] = max(0.0, min(h, x - lower))
        up[s, c] = x + h_up[s]
        down[s, c] = x - h_down[s]
    return up, down, h_up, h_down


@njit(cache=True)
def difference_column(grad: np.ndarray, c: int, ll_up: np.ndarray, ll_down: np.ndarray, h_up: np.ndarray,
                      h_down: np.ndarray, obs_subject: np.ndarray) -> None:
    """Column ``c`` of ``grad``: (ll(θ + h⁺) − ll(θ − h⁻)) / (h⁺ + h⁻) per observation."""
    for j in range(grad.shape[0]):
        s = obs_subject[j]
        width = h_up[s] + h_down[s]
        grad[j, c] = (ll_up[j] - ll_down[j]) / width if width > 0.0 else 0.0


def numerical_gradient_kernel(loglik: Any, n_fields: int, lower: Sequence[float], upper: Sequence[float],
                              free: Sequence[bool]) -> Any:
    """The full kernel ``(theta, obs_subject, *arrays) -> (ll, grad)`` of the log-likelihood
    kernel ``loglik(theta, obs_subject, *arrays) -> ll`` (``n_fields`` arrays), its gradient by
    central differences in each ``free`` column within ``[lower, upper]`` (module docstring).
    Built once per (kernel, columns) and compiled by numba on first call."""
    key = (id(loglik), n_fields, tuple(lower), tuple(upper), tuple(free))
    if key not in _KERNELS:
        args = "".join(f"a{i}, " for i in range(n_fields))
        src = (f"def kernel(theta, obs_subject, {args}):\n"
               f"    ll = base(theta, obs_subject, {args})\n"
               f"    grad = np.zeros((ll.shape[0], theta.shape[1]))\n"
               f"    for c in range(theta.shape[1]):\n"
               f"        if FREE[c]:\n"
               f"            up, down, h_up, h_down = steps(theta, c, LOWER[c], UPPER[c], STEP)\n"
               f"            columns(grad, c, base(up, obs_subject, {args}), base(down, obs_subject, {args}),\n"
               f"                    h_up, h_down, obs_subject)\n"
               f"    return ll, grad\n")
        namespace: dict[str, Any] = {
            "base": loglik, "np": np, "steps": difference_steps, "columns": difference_column, "STEP": FD_STEP,
            "LOWER": np.asarray(lower, dtype=np.float64), "UPPER": np.asarray(upper, dtype=np.float64),
            "FREE": np.asarray(free, dtype=np.bool_)}
        name = getattr(loglik, "__name__", "loglik")
        exec(compile(src, f"<finite-difference kernel of {name}>", "exec"), namespace)
        _KERNELS[key] = (loglik, njit(namespace["kernel"]))  # keeps loglik alive, so its id stays unique
    return _KERNELS[key][1]

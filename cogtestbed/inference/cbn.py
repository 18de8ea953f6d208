"""The collider's causal Bayes net (CBN): closed forms, their exact gradient, parameters and data.

Shared by the thesis point fit and the CBN models (:mod:`cogtestbed.inference.causal`), the
hierarchical zero-one-inflated Beta model (:mod:`cogtestbed.inference.causal_hierarchical`) and
the synthetic agents.

**Closed forms** (Dettki 2025, Eq. 4.1 and App. A.3 with its typos corrected).  With canonical
items (C1 = the queried cause), e(c1, c2) = P(E=1 | C1=c1, C2=c2) and the joint
P(C1=c1, C2=c2) = π(c1, c2)::

    I = e00    II = e01    III = e11
    IV = π11 / (π11 + π01)                 V = π10 / (π10 + π00)
    VI = e11 π11 / (e11 π11 + e01 π01)     VIII = e10 π10 / (e10 π10 + e00 π00)
    VII = (e11 π11 + e10 π10) / Z,  Z = Σ e·π
    IX = (1−e11) π11 / ((1−e11) π11 + (1−e01) π01)
    X = ((1−e11) π11 + (1−e10) π10) / (1 − Z)
    XI = (1−e10) π10 / ((1−e10) π10 + (1−e00) π00)

The leaky noisy-OR (Dettki 2025, Eq. 2.1) is e(c1, c2) = 1 − (1−b)(1−m1)^c1 (1−m2)^c2 with
independent causes (π = products of pC1, pC2); the logistic link (Dettki et al., CogSci 2025) is
e = σ(w0 + w1 c1 + w2 c2).  :func:`noisy_or_table_grad` / :func:`logistic_table_grad` give the
11 probabilities with exact derivatives (one quotient rule N/(N + M) covers every task but
IV/V).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.numerics import sigmoid
from cogtestbed.parameters import Parameter

N_TASKS = 11
ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI")
_EPS = 1e-300
#: Floor of the denominators of the gradient tables (its square stays a normal double).
_DEN_FLOOR = 1e-150
#: Derivative columns of the task tables (four CBN inputs).
N_GRAD_COLUMNS = 4


# ----------------------------------------------------------------------------- closed forms
@njit(cache=True)
def task_probs_general(e00: float, e01: float, e10: float, e11: float, p11: float, p10: float,
                       p01: float, p00: float, out: np.ndarray) -> None:
    """The 11 task probabilities for likelihoods e_c1c2 and cause joint π_c1c2 (module eqs.)."""
    out[0] = e00
    out[1] = e01
    out[2] = e11
    out[3] = p11 / max(p11 + p01, _EPS)
    out[4] = p10 / max(p10 + p00, _EPS)
    out[5] = e11 * p11 / max(e11 * p11 + e01 * p01, _EPS)
    z = e11 * p11 + e10 * p10 + e01 * p01 + e00 * p00
    out[6] = (e11 * p11 + e10 * p10) / max(z, _EPS)
    out[7] = e10 * p10 / max(e10 * p10 + e00 * p00, _EPS)
    out[8] = (1 - e11) * p11 / max((1 - e11) * p11 + (1 - e01) * p01, _EPS)
    out[9] = ((1 - e11) * p11 + (1 - e10) * p10) / max(1 - z, _EPS)
    out[10] = (1 - e10) * p10 / max((1 - e10) * p10 + (1 - e00) * p00, _EPS)


@njit(cache=True)
def noisy_or_probs(b: float, m1: float, m2: float, pc1: float, pc2: float, out: np.ndarray) -> None:
    """Leaky noisy-OR CBN with independent causes (thesis Eq. 2.1 / 4.1)."""
    e00 = b
    e01 = 1 - (1 - b) * (1 - m2)
    e10 = 1 - (1 - b) * (1 - m1)
    e11 = 1 - (1 - b) * (1 - m1) * (1 - m2)
    task_probs_general(e00, e01, e10, e11, pc1 * pc2, pc1 * (1 - pc2), (1 - pc1) * pc2,
                       (1 - pc1) * (1 - pc2), out)


@njit(cache=True)
def logistic_probs(w0: float, w1: float, w2: float, pc1: float, pc2: float, out: np.ndarray) -> None:
    """Logistic-link CBN: e(c1, c2) = σ(w0 + w1·c1 + w2·c2), independent causes."""
    task_probs_general(sigmoid(w0), sigmoid(w0 + w2), sigmoid(w0 + w1), sigmoid(w0 + w1 + w2),
                       pc1 * pc2, pc1 * (1 - pc2), (1 - pc1) * pc2, (1 - pc1) * (1 - pc2), out)


def cbn_predictions(b: float, m1: float, m2: float, pc1: float, pc2: float | None = None) -> np.ndarray:
    """The 11 noisy-OR predictions (I…XI) as an array (``pc2`` defaults to ``pc1``)."""
    out = np.empty(N_TASKS)
    noisy_or_probs(b, m1, m2, pc1, pc1 if pc2 is None else pc2, out)
    return out


# ----------------------------------------------------------------------------- exact gradients
@njit(cache=True)
def _prod(w: np.ndarray, i: int, j: int, out: int, compl_i: bool) -> None:
    """w[out] = (1 − w[i] if ``compl_i`` else w[i]) · w[j] on (value, gradient) rows."""
    a0 = 1.0 - w[i, 0] if compl_i else w[i, 0]
    sg = -1.0 if compl_i else 1.0
    w[out, 0] = a0 * w[j, 0]
    for k in range(1, N_GRAD_COLUMNS + 1):
        w[out, k] = a0 * w[j, k] + sg * w[i, k] * w[j, 0]


@njit(cache=True)
def _ratio(w: np.ndarray, n1: int, n2: int, m1: int, m2: int, out: np.ndarray) -> None:
    """out = N / (N + M) with N = w[n1] (+ w[n2]) and M = w[m1] (+ w[m2]) (index −1: absent).

    N + M is floored at :data:`_DEN_FLOOR` (both vanish only where a parameter sits exactly on
    a bound, e.g. σ(θ) rounding to 1 during a line search), as :func:`task_probs_general` does.
    """
    n0 = w[n1, 0] + (w[n2, 0] if n2 >= 0 else 0.0)
    m0 = w[m1, 0] + (w[m2, 0] if m2 >= 0 else 0.0)
    den = max(n0 + m0, _DEN_FLOOR)
    out[0] = n0 / den
    for k in range(1, N_GRAD_COLUMNS + 1):
        nv = w[n1, k] + (w[n2, k] if n2 >= 0 else 0.0)
        mv = w[m1, k] + (w[m2, k] if m2 >= 0 else 0.0)
        out[k] = (nv * m0 - mv * n0) / (den * den)


@njit(cache=True)
def _table_from_rows(w: np.ndarray, q: float, out: np.ndarray) -> None:
    """Fill ``out`` (11, 5) from the likelihood rows ``w[0:4]`` = e00, e01, e10, e11 (value and
    derivatives w.r.t. the four inputs, the last being p_c = q) and the cause prior q."""
    # rows 4–6: π11, π10 (= π01), π00
    w[4, :] = 0.0
    w[5, :] = 0.0
    w[6, :] = 0.0
    w[4, 0], w[4, N_GRAD_COLUMNS] = q * q, 2.0 * q
    w[5, 0], w[5, N_GRAD_COLUMNS] = q * (1.0 - q), 1.0 - 2.0 * q
    w[6, 0], w[6, N_GRAD_COLUMNS] = (1.0 - q) * (1.0 - q), -2.0 * (1.0 - q)
    # rows 7–10: e·π for (11, 01, 10, 00); rows 11–14: (1 − e)·π
    _prod(w, 3, 4, 7, False)
    _prod(w, 1, 5, 8, False)
    _prod(w, 2, 5, 9, False)
    _prod(w, 0, 6, 10, False)
    _prod(w, 3, 4, 11, True)
    _prod(w, 1, 5, 12, True)
    _prod(w, 2, 5, 13, True)
    _prod(w, 0, 6, 14, True)
    out[0, :] = w[0]
    out[1, :] = w[1]
    out[2, :] = w[3]
    out[3, :] = 0.0
    out[3, 0], out[3, N_GRAD_COLUMNS] = q, 1.0
    out[4, :] = out[3, :]
    _ratio(w, 7, -1, 8, -1, out[5])       # VI
    _ratio(w, 7, 9, 8, 10, out[6])        # VII
    _ratio(w, 9, -1, 10, -1, out[7])      # VIII
    _ratio(w, 11, -1, 12, -1, out[8])     # IX
    _ratio(w, 11, 13, 12, 14, out[9])     # X
    _ratio(w, 13, -1, 14, -1, out[10])    # XI


@njit(cache=True)
def noisy_or_table_grad(b: float, m1: float, m2: float, q: float, out: np.ndarray) -> None:
    """The 11 noisy-OR task probabilities (module equations) and their derivatives.

    ``out`` (11, 5): column 0 the value, columns 1–4 ∂/∂b, ∂/∂m1, ∂/∂m2, ∂/∂p_c.
    """
    nb, n1, n2 = 1.0 - b, 1.0 - m1, 1.0 - m2
    w = np.zeros((15, N_GRAD_COLUMNS + 1))
    w[0, 0], w[0, 1] = b, 1.0
    w[1, 0], w[1, 1], w[1, 3] = 1.0 - nb * n2, n2, nb
    w[2, 0], w[2, 1], w[2, 2] = 1.0 - nb * n1, n1, nb
    w[3, 0], w[3, 1], w[3, 2], w[3, 3] = 1.0 - nb * n1 * n2, n1 * n2, nb * n2, nb * n1
    _table_from_rows(w, q, out)


@njit(cache=True)
def logistic_table_grad(w0: float, w1: float, w2: float, q: float, out: np.ndarray) -> None:
    """The 11 logistic-link task probabilities and their derivatives w.r.t. (w0, w1, w2, p_c);
    e(c1, c2) = σ(w0 + w1·c1 + w2·c2), so ∂e/∂w_i = e(1 − e)·[input i is on]."""
    w = np.zeros((15, N_GRAD_COLUMNS + 1))
    for row, x, on1, on2 in ((0, w0, 0.0, 0.0), (1, w0 + w2, 0.0, 1.0), (2, w0 + w1, 1.0, 0.0),
                             (3, w0 + w1 + w2, 1.0, 1.0)):
        e = sigmoid(x)
        slope = e * (1.0 - e)
        w[row, 0], w[row, 1], w[row, 2], w[row, 3] = e, slope, slope * on1, slope * on2
    _table_from_rows(w, q, out)


# ----------------------------------------------------------------------------- parameters, data
B = Parameter.unit("b", 0.2, "leak: P(E=1) with no cause present", prior_mean=-1.0, prior_sd=1.5)
M_ = Parameter.unit("m", 0.7, "causal strength (m1 = m2)", prior_mean=0.5, prior_sd=1.5)
M1 = Parameter.unit("m1", 0.7, "strength of the queried cause", prior_mean=0.5, prior_sd=1.5)
M2 = Parameter.unit("m2", 0.7, "strength of the alternative cause", prior_mean=0.5, prior_sd=1.5)
PC = Parameter.unit("p_c", 0.5, "prior P(C=1) of each cause", prior_mean=0.0, prior_sd=1.0)



def valid_judgments(trials: pd.DataFrame) -> pd.DataFrame:
    """Valid rows with ``y`` = rating / 100."""
    ok = trials["valid"].astype(bool) & trials["action"].notna()
    out = trials.loc[ok].copy()
    out["y"] = out["action"].astype(float) / 100.0
    return out

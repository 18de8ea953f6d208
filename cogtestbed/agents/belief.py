"""Synthetic agents of the belief-coherence experiment (Yamin et al. 2026, §2).

Every agent holds a subjective belief P_S(θ|x) = σ(κ·logit p*(x) + δ): the truth for κ = 1,
δ = 0, otherwise a *monotone* miscalibration (which must trigger neither T1 nor T2).  It reports
p_E = clip(P_S + σ·z, 0, 1) with z ~ N(0, 1) drawn afresh on every belief call (``report_noise``
σ), and decides on P_S in a separate call:

* ``logit-rum``: random-utility maximiser with Gumbel noise (Def. 3.1, Eq. 3):
  Pr(a) ∝ exp(scale · Σ_θ P_S(θ|x) u(a, θ)); utilities u(a, θ) over (No, Yes, Defer) × (θ=0, 1).
  In log-odds against No this is the 4-parameter MNL α_a + β_a·p
  (:func:`~cogtestbed.inference.belief_models.mnl_coefficients`).
* ``pt-rum``: prospect-theory RUM in the proof form of Prop. 3.3 (Eq. 8): π̃(1) = w(p),
  π̃(0) = 1 − w(p), with Tversky–Kahneman w(p) = p^γ / (p^γ + (1−p)^γ)^{1/γ}.
* ``loss-rum`` / ``chow``: losses ℓ(Yes,0) = c_FP, ℓ(No,1) = c_FN, ℓ(Defer,·) = c_D, correct
  actions 0; ``loss-rum`` chooses by a logit on −scale·E[ℓ] with TK weighting γ, ``chow`` takes
  the argmin (Chow's rule: No for p < c_D/c_FN, Yes for p > 1 − c_D/c_FP, Defer between, when
  c_D < c_FP·c_FN/(c_FP+c_FN)).

Negative controls (one tunable size each): ``leak`` (the decision uses P_S + leak·(θ − P_S): a
hidden-information leak the report omits), ``nonmono-report`` (p_E = P_S + d·sin(3πP_S)/3),
``nonmono-defer`` (Defer's utility gains bump·sin(4πp), so Defer/(No+Defer) is not monotone),
``loss-report`` (the report moves with the stated loss: logit shift ±shift under π_MSE / π_ABS,
shift/2 under π_Bayes), ``lie-incoherent`` (beliefs given z shifted by ``incoherence`` in log-odds).

Edge cases: ``random`` (Remark 3.4: uniform action and an independent uniform report — passes
T1), ``probit3`` (3-action probit RUM with correlated Yes/Defer errors: a RUM without IIA, which
T2 can flag), ``pt-literal`` (the literal Def. 3.2 weighting w(p)u(a,1) + w(1−p)u(a,0), whose
pairwise share can be non-monotone with a dominated action).

LIE answers: a coherent agent states P_S(θ|x, z_j) = σ(κ·logit p*(x,z_j) + δ) (plus report
noise) and the distribution of z closest to P*(z|x) in KL that satisfies the law of iterated
expectations for its own beliefs (exponential tilting, :func:`coherent_aux`).

Every step draws :data:`DRAWS` uniforms; the same ``@njit`` step function serves the gymnasium
step path and the batch kernel, so both produce identical tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numba import njit

from cogtestbed.agents.base import SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.belief import (
    BELIEF,
    DECISION,
    DEFER,
    EXPERIMENT,
    LIE_AUX,
    LIE_COND,
    MAX_AUX_STATES,
    NO,
    YES,
    BeliefDesign,
    BeliefSessions,
    ground_truth,
    step_arrays,
)
from cogtestbed.interpreted import kernel
from cogtestbed.numerics import logit, sigmoid, std_normal
from cogtestbed.parameters import Parameter, ParameterSet

#: Uniforms drawn per call (report noise 2; logit choice + forced choice 2; probit 6; random
#: aux vector up to MAX_AUX_STATES).
DRAWS = MAX_AUX_STATES
#: Kernel agent kinds.
K_RANDOM, K_MNL, K_PROBIT, K_LITERAL, K_LEAK, K_NM_REPORT, K_NM_DEFER, K_LOSS_REPORT, K_LIE = range(9)
#: Layout of the kernel parameter vector.
P_KAPPA, P_DELTA, P_SIGMA, P_U, P_SCALE, P_GAMMA, P_EFFECT, P_DET = 0, 1, 2, 3, 9, 10, 11, 12
N_KERNEL_PARAMS = 13
#: Log-odds shift direction of the loss-sensitive report per variant (π0, MSE, ABS, Bayes).
SHIFT_DIRECTION = np.array([0.0, 1.0, -1.0, 0.5])
#: Probabilities are clipped to [EPS, 1 − EPS] before logit transforms.
EPS = 1e-9

# -- parameters ------------------------------------------------------------------------------
KAPPA = Parameter.positive("calib_slope", 1.0, upper=10.0,
                           description="κ: slope of the miscalibration map in log-odds (1 = calibrated)")
DELTA = Parameter("calib_bias", -5.0, 5.0, 0.0, "δ: offset of the miscalibration map in log-odds")
SIGMA = Parameter("report_noise", 0.0, 0.5, 0.0, "σ: sd of the Gaussian noise on every stated probability")
BELIEF_PARAMS = (KAPPA, DELTA, SIGMA)
#: The digest's quick-simulation utilities over (No, Yes, Defer) × (θ=0, θ=1), scale 6.
DEFAULT_UTILITIES = {"u_no_0": 1.0, "u_no_1": -1.0, "u_yes_0": -1.0, "u_yes_1": 1.0,
                     "u_defer_0": 0.4, "u_defer_1": 0.4}
UTILITY_PARAMS = tuple(Parameter(n, -100.0, 100.0, v, f"u({n[2:-2]}, θ={n[-1]})")
                       for n, v in DEFAULT_UTILITIES.items())
SCALE = Parameter.positive("scale", 6.0, upper=200.0, description="logit scale (inverse temperature)")
GAMMA = Parameter("gamma", 0.28, 3.0, 0.61, "Tversky-Kahneman probability-weighting γ (1 = linear)")
C_FP = Parameter.positive("c_fp", 1.0, upper=100.0, description="loss of a false positive (Yes when θ=0)")
C_FN = Parameter.positive("c_fn", 1.0, upper=100.0, description="loss of a false negative (No when θ=1)")
C_D = Parameter.positive("c_d", 0.3, upper=100.0, description="loss of deferring")
#: Upper bound 1000: the ``loss`` model's, so every scale the model's population draws take is one the agent plays.
LOSS_SCALE = Parameter.positive("scale", 10.0, upper=1000.0, description="logit scale on expected loss")
UNIT_GAMMA = Parameter("gamma", 0.28, 3.0, 1.0, "Tversky-Kahneman γ (1 = expected loss)")


def _effect(name: str, default: float, upper: float, description: str) -> Parameter:
    return Parameter(name, 0.0, upper, default, description)


# -- numba core -------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def tk_weight(p: float, gamma: float) -> float:
    """Tversky–Kahneman (1992) probability weighting w(p) = p^γ / (p^γ + (1−p)^γ)^{1/γ}."""
    if gamma == 1.0:
        return p
    a = p**gamma
    b = (1.0 - p) ** gamma
    return a / (a + b) ** (1.0 / gamma)


@njit(cache=True, inline="always")
def subjective(p: float, kappa: float, delta: float) -> float:
    """P_S = σ(κ·logit p + δ): a monotone miscalibration of the true posterior."""
    if kappa == 1.0 and delta == 0.0:
        return p
    q = min(max(p, EPS), 1.0 - EPS)
    return sigmoid(kappa * logit(q) + delta)


#: The tilt λ of :func:`coherent_aux` is solved until the log-odds of the tilted mean within the reachable
#: range [min q, max q] is within this of the target's, which puts Σ_j w_j q_j within (max q − min q)·1e-13/4
#: of the target (cogtestbed's choice: well under the 1e-12 the tests ask, well over the rounding of the
#: sums, ~1e-16).
TILT_TOL = 1e-13
#: At most this many evaluations of the tilt (Newton steps, or splits of the bracket where a step leaves
#: it); measured (``python benchmarks/tilt_evaluations.py``, 26 Nov 2026): 4.3 on average and at most 20
#: over the tests' random cases; at most 25 where a middle state holds all but ε of pz (ε down to
#: 1e-300); 5.2 on average and at most 28 over 19,670 adversarial cases (denormal pz, q within 1e-15 of 1
#: or spread over 1e-90 … 1, targets a hair from an end).  Each step off the open side at least doubles
#: its reach (:func:`open_step`), so any double λ is reached in ~45, and no case measured came near the
#: cap; running out of it raises (:func:`solve_tilt`) rather than return an unconverged tilt.
TILT_MAX_ITER = 100


@njit(cache=True)
def coherent_aux(pz: np.ndarray, q: np.ndarray, target: float, k: int, out: np.ndarray) -> None:
    """The distribution w over z closest in KL to ``pz`` with Σ_j w_j q_j = ``target``.

    Exponential tilting w_j ∝ pz_j exp(λ q_j) (:func:`solve_tilt`); the target is clamped to the
    reachable range [min q, max q] over the support of pz, and at an end of it the solution is the limit
    λ → ±∞: pz restricted to the states whose q is that end.
    """
    lo_q, hi_q = 1.0, 0.0
    for j in range(k):
        if pz[j] > 0.0:
            lo_q = min(lo_q, q[j])
            hi_q = max(hi_q, q[j])
    target = min(max(target, lo_q), hi_q)
    if target <= lo_q or target >= hi_q:  # an end of the range (every q equal included)
        den = 0.0
        for j in range(k):
            out[j] = pz[j] if pz[j] > 0.0 and q[j] == target else 0.0
            den += out[j]
    else:
        den = solve_tilt(pz, q, target, k, lo_q, hi_q, out)[0]
    for j in range(k):
        out[j] /= den


@njit(cache=True)
def solve_tilt(pz: np.ndarray, q: np.ndarray, target: float, k: int, lo_q: float, hi_q: float,
               out: np.ndarray) -> tuple[float, int]:
    """Fill ``out`` with the unnormalised tilt w at the λ whose mean is ``target`` (strictly inside
    (lo_q, hi_q)); return Σ w and the number of evaluations of the tilt it took.

    Newton's method on φ(λ) = log((m − lo_q)/(hi_q − m)) − log((target − lo_q)/(hi_q − target)), m the
    tilted mean: increasing in λ like m, linear for two states (solved in one step) and nearly so in the
    tails, where Newton on m itself crawls.  Safeguarded as Numerical Recipes' ``rtsafe``: once the signs
    of φ bracket the root, a step that leaves the bracket or is not half the one before last splits the
    bracket instead (:func:`split`: geometrically across orders of magnitude).  While a side is open the
    step goes at most :func:`open_step` far (Newton's step can be ~1/ε where a middle state of pz holds all
    but ε).  Stops at |φ| ≤ :data:`TILT_TOL` or when the bracket can shrink no more; raises after
    :data:`TILT_MAX_ITER` evaluations without either.
    """
    goal = math.log(target - lo_q) - math.log(hi_q - target)
    gap = hi_q - lo_q
    logp = np.empty(k)  # log pz, −∞ off the support (filled once λ leaves 0)
    lam, lo_lam, hi_lam = 0.0, -math.inf, math.inf
    step_last, step_before, grow = math.inf, math.inf, 1.0
    logged = False
    for n in range(1, TILT_MAX_ITER + 1):
        den, above, below, logged = tilt_sums(n == 1, pz, logp, q, k, lam, lo_q, hi_q, out, logged)
        phi = tilt_phi(above, below, goal)
        if abs(phi) <= TILT_TOL:
            return den, n
        if phi < 0.0:
            lo_lam = lam
        else:
            hi_lam = lam
        slope = tilt_slope(pz, q, k, lo_q, hi_q, out, den, above, below)
        if lo_lam > -math.inf and hi_lam < math.inf:  # bracketed
            nxt, done = bracketed_step(lam, phi, slope, lo_lam, hi_lam, step_before, gap)
            if done:
                return den, n
        else:
            nxt, grow = open_side_step(lam, phi, slope, gap, grow)
        step_last, step_before = abs(nxt - lam), step_last
        lam = nxt
    raise ArithmeticError("coherent_aux: the tilt did not converge in TILT_MAX_ITER evaluations")


@njit(cache=True, inline="always")
def tilt_sums(first: bool, pz: np.ndarray, logp: np.ndarray, q: np.ndarray, k: int, lam: float, lo_q: float,
              hi_q: float, out: np.ndarray, logged: bool) -> tuple[float, float, float, bool]:
    """The tilt at λ into ``out`` and its sums (:func:`end_sums`), and whether ``logp`` holds log pz: at the
    first evaluation (λ = 0) pz itself, no logs (a calibrated subject's tilt ends there); in log space
    (:func:`tilt`) after it, or where a sum of pz's own underflowed (log pz filled into ``logp`` once)."""
    den, above, below = 0.0, 0.0, 0.0
    if first:
        den, above, below = tilt_at_zero(pz, q, k, lo_q, hi_q, out)
    if not first or above <= 0.0 or below <= 0.0:
        if not logged:
            for j in range(k):
                logp[j] = math.log(pz[j]) if pz[j] > 0.0 else -math.inf
            logged = True
        den, above, below = tilt(logp, q, k, lam, lo_q, hi_q, out)
    return den, above, below, logged


@njit(cache=True, inline="always")
def tilt_phi(above: float, below: float, goal: float) -> float:
    """φ of :func:`solve_tilt` from the tilt's end sums: ∓∞ where every weight sits at one end (underflow)."""
    if above <= 0.0 or below <= 0.0:
        return math.inf if above > 0.0 else -math.inf
    return math.log(above) - math.log(below) - goal


@njit(cache=True, inline="always")
def bracketed_step(lam: float, phi: float, slope: float, lo_lam: float, hi_lam: float, step_before: float,
                   gap: float) -> tuple[float, bool]:
    """The next λ once the signs of φ bracket the root (``rtsafe``): Newton's step where it stays inside
    and is at most half the step before last, else :func:`split`; and whether the bracket can shrink no
    more (the split is one of its ends)."""
    nxt = lam - phi / slope
    if lo_lam < nxt < hi_lam and abs(nxt - lam) <= 0.5 * step_before:
        return nxt, False
    nxt = split(lo_lam, hi_lam, 1.0 / gap)
    return nxt, nxt in (lo_lam, hi_lam)


@njit(cache=True, inline="always")
def open_side_step(lam: float, phi: float, slope: float, gap: float, grow: float) -> tuple[float, float]:
    """The next λ while a side of the bracket is open, and the next ``grow``: Newton's step (toward the open
    side: φ increases in λ) where it goes at most :func:`open_step` far, with ``grow`` reset; else that
    far (too long, or under λ's last bit: the bracket then closes and is split to its last bit), with
    ``grow`` doubled."""
    reach = open_step(lam, phi, gap, grow)
    nxt = lam - phi / slope if abs(phi) <= reach * slope else lam
    if nxt != lam:
        return nxt, 1.0
    return (lam + reach if phi < 0.0 else lam - reach), grow * 2.0


@njit(cache=True, inline="always")
def open_step(lam: float, phi: float, gap: float, grow: float) -> float:
    """The longest step from ``lam`` toward an open side of the bracket: the larger of |φ|/gap (φ finite),
    which never passes the root (φ's slope is at most gap, :func:`tilt_slope`), and ``grow``·max(|λ|, 1/gap),
    λ's scale (1/gap: one unit of log-odds across the range); ``grow`` doubles with each step so capped,
    so λ's exponent grows quadratically in the steps and any double is reached in ~45."""
    sure = abs(phi) / gap if abs(phi) < math.inf else 0.0  # φ = ±∞: every weight at one end, no measure
    return max(sure, grow * max(abs(lam), 1.0 / gap))


@njit(cache=True, inline="always")
def split(lo: float, hi: float, floor: float) -> float:
    """A point between ``lo`` < ``hi``: where both lie on one side of 0 (one may be 0) and the far one is
    over four times the near one (taken at least ``floor`` > 0, λ's smallest scale of interest), their
    geometric mean, so a bracket spanning orders of magnitude shrinks in as many steps as it spans
    doublings; else the midpoint."""
    near = max(lo, floor)
    if lo >= 0.0 and hi > 4.0 * near:
        return math.sqrt(near) * math.sqrt(hi)
    near = max(-hi, floor)
    if hi <= 0.0 and -lo > 4.0 * near:
        return -math.sqrt(near) * math.sqrt(-lo)
    return 0.5 * lo + 0.5 * hi


@njit(cache=True, inline="always")
def tilt_at_zero(pz: np.ndarray, q: np.ndarray, k: int, lo_q: float, hi_q: float,
                 out: np.ndarray) -> tuple[float, float, float]:
    """:func:`tilt` at λ = 0: out = pz (0 off the support), and the same sums."""
    for j in range(k):
        out[j] = pz[j] if pz[j] > 0.0 else 0.0
    return end_sums(out, q, k, lo_q, hi_q)


@njit(cache=True, inline="always")
def tilt(logp: np.ndarray, q: np.ndarray, k: int, lam: float, lo_q: float, hi_q: float,
         out: np.ndarray) -> tuple[float, float, float]:
    """out_j = exp(log pz_j + λ (q_j − r) − M) (``logp`` = log pz, −∞ off the support, where w is 0): the
    tilt in log space, r the end of [lo_q, hi_q] that keeps λ (q_j − r) ≤ 0 (so it is exact for q near r)
    and M the largest exponent (so the largest weight is 1 and none underflows that the sums need, denormal
    pz included: both sums cannot be 0, so an end is told right); returns
    (Σ w, Σ w (q − lo_q), Σ w (hi_q − q)): the mean's distances to the ends, times Σ w, as sums of
    non-negative terms (exact in relative terms however close the mean is to an end)."""
    ref = hi_q if lam > 0.0 else lo_q
    top = -math.inf
    for j in range(k):
        x = logp[j] + lam * (q[j] - ref)
        out[j] = x
        top = max(top, x)
    for j in range(k):
        out[j] = math.exp(out[j] - top)  # exp(−∞) = 0 off the support
    return end_sums(out, q, k, lo_q, hi_q)


@njit(cache=True, inline="always")
def end_sums(w: np.ndarray, q: np.ndarray, k: int, lo_q: float, hi_q: float) -> tuple[float, float, float]:
    """(Σ w, Σ w (q − lo_q), Σ w (hi_q − q)) of the weights ``w``: the tilted mean's distances to the ends
    of [lo_q, hi_q], times Σ w, as sums of non-negative terms (:func:`tilt`, :func:`tilt_at_zero`)."""
    den, above, below = 0.0, 0.0, 0.0
    for j in range(k):
        den += w[j]
        above += w[j] * (q[j] - lo_q)
        below += w[j] * (hi_q - q[j])
    return den, above, below


@njit(cache=True, inline="always")
def tilt_slope(pz: np.ndarray, q: np.ndarray, k: int, lo_q: float, hi_q: float, w: np.ndarray, den: float,
               above: float, below: float) -> float:
    """dφ/dλ at the tilt ``w``: Var_w(q)·(hi_q − lo_q)/((m − lo_q)(hi_q − m)), or NaN where it is not
    positive and finite (every weight at one end; the caller then steps by the bracket)."""
    if above <= 0.0 or below <= 0.0:
        return math.nan
    mean = lo_q + above / den
    spread = 0.0
    for j in range(k):
        if pz[j] > 0.0:
            d = q[j] - mean
            spread += w[j] * (d * d)
    # in this order no quotient overflows: spread/above ≤ below/den (Bhatia–Davis: Var ≤ (m − lo)(hi − m)),
    # so the slope is at most hi_q − lo_q; capped there, as the rounding of the mean can inflate the spread
    # far past it where the mean is within a few ulps of an end
    slope = min(spread / above / below * den, 1.0) * (hi_q - lo_q)
    return slope if 0.0 < slope < math.inf else math.nan


@njit(cache=True, inline="always")
def clip01(x: float) -> float:
    return min(max(x, 0.0), 1.0)


@njit(cache=True)
def action_values(kind: int, par: np.ndarray, p: float, values: np.ndarray) -> None:
    """Deterministic utilities V_a (a = No, Yes, Defer) at decision belief ``p`` (scaled).

    Proof form (Eq. 8): V_a = scale·[(1 − w(p)) u(a,0) + w(p) u(a,1)]; literal Def. 3.2:
    V_a = scale·[w(1−p) u(a,0) + w(p) u(a,1)]; ``nonmono-defer`` adds bump·sin(4πp) to Defer.
    """
    gamma = par[P_GAMMA]
    w1 = tk_weight(p, gamma)
    w0 = tk_weight(1.0 - p, gamma) if kind == K_LITERAL else 1.0 - w1
    for a in range(3):
        values[a] = par[P_SCALE] * (w0 * par[P_U + 2 * a] + w1 * par[P_U + 2 * a + 1])
    if kind == K_NM_DEFER:
        values[DEFER] += par[P_EFFECT] * np.sin(4.0 * np.pi * p)


@njit(cache=True)
def decide(kind: int, par: np.ndarray, p: float, u: np.ndarray) -> tuple[int, int]:
    """(action, forced choice) of one decision call."""
    values = np.empty(3)
    if kind == K_RANDOM:
        a = min(int(3.0 * u[2]), 2)
        return a, (YES if u[3] < 0.5 else NO) if a == DEFER else a
    action_values(kind, par, p, values)
    if kind == K_PROBIT:
        rho = par[P_EFFECT]
        z0 = std_normal(u[0], u[1])
        z1 = std_normal(u[2], u[3])
        z2 = std_normal(u[4], u[5])
        values[NO] += z0
        values[YES] += z1
        values[DEFER] += rho * z1 + np.sqrt(1.0 - rho * rho) * z2
        a = int(np.argmax(values))
        return a, YES if values[YES] > values[NO] else NO
    if par[P_DET] > 0.0:
        a = int(np.argmax(values))
        return a, YES if values[YES] > values[NO] else NO
    top = max(values[0], max(values[1], values[2]))
    e0 = np.exp(values[0] - top)
    e1 = np.exp(values[1] - top)
    e2 = np.exp(values[2] - top)
    total = e0 + e1 + e2
    if u[2] * total < e0:
        a = NO
    elif u[2] * total < e0 + e1:
        a = YES
    else:
        a = DEFER
    forced = a
    if a == DEFER:
        forced = YES if u[3] < sigmoid(values[YES] - values[NO]) else NO
    return a, forced


@njit(cache=True)
def agent_step(kind: int, par: np.ndarray, phase: int, arg: int, pstar: float, pcond: np.ndarray,
               pz: np.ndarray, k: int, theta: int, u: np.ndarray, aux: np.ndarray) -> tuple[float, float, int]:
    """One call: returns (value, p_no, forced) and fills ``aux`` on a lie_aux call.

    value = the stated P(Yes) (belief, lie_cond), the action (decision) or Σ aux (lie_aux).
    """
    ps = subjective(pstar, par[P_KAPPA], par[P_DELTA])
    if phase == DECISION:
        p_dec = ps + par[P_EFFECT] * (theta - ps) if kind == K_LEAK else ps
        a, forced = decide(kind, par, p_dec, u)
        return float(a), np.nan, forced
    if phase == LIE_AUX:
        if kind == K_RANDOM:
            den = 0.0
            for j in range(k):
                aux[j] = u[j]
                den += u[j]
            for j in range(k):
                aux[j] /= den
        else:
            q = np.empty(k)
            for j in range(k):
                q[j] = subjective(pcond[j], par[P_KAPPA], par[P_DELTA])
            coherent_aux(pz, q, ps, k, aux)
        total = 0.0
        for j in range(k):
            total += aux[j]
        return total, np.nan, -1
    if kind == K_RANDOM:
        r = u[0]
        return r, 1.0 - r, -1
    if phase == LIE_COND:
        base = subjective(pcond[arg], par[P_KAPPA], par[P_DELTA])
        if kind == K_LIE:
            base = sigmoid(logit(min(max(base, EPS), 1.0 - EPS)) + par[P_EFFECT])
    else:
        base = ps
        if kind == K_NM_REPORT:
            base = clip01(ps + par[P_EFFECT] * np.sin(3.0 * np.pi * ps) / 3.0)
        elif kind == K_LOSS_REPORT and arg > 0:
            base = sigmoid(logit(min(max(ps, EPS), 1.0 - EPS)) + par[P_EFFECT] * SHIFT_DIRECTION[arg])
    r = base
    if par[P_SIGMA] > 0.0:
        r = clip01(base + par[P_SIGMA] * std_normal(u[0], u[1]))
    return r, 1.0 - r, -1


@njit(cache=True)
def simulate_belief_kernel(kind: int, par: np.ndarray, phase: np.ndarray, arg: np.ndarray,
                           config: np.ndarray, theta: np.ndarray, pstar: np.ndarray, pcond: np.ndarray,
                           pz: np.ndarray, k: int, uniforms: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Play N sessions: (value, p_no, forced, aux) per step (see :func:`agent_step`)."""
    n, steps = config.shape
    value = np.empty((n, steps))
    p_no = np.empty((n, steps))
    forced = np.empty((n, steps), dtype=np.int64)
    aux = np.full((n, steps, MAX_AUX_STATES), np.nan)
    row = np.zeros(MAX_AUX_STATES)
    for i in range(n):
        for t in range(steps):
            c = config[i, t]
            u = uniforms[i, t * DRAWS:(t + 1) * DRAWS]
            lie_aux = phase[t] == LIE_AUX  # the only calls that write the row
            if lie_aux:
                # element loops, not slice assignments: numba would compile a slice assignment's shape
                # error message (its string machinery), 1.9 of the 5.2 s this kernel compiled in
                for j in range(MAX_AUX_STATES):
                    row[j] = np.nan
            v, pn, f = agent_step(kind, par[i], phase[t], arg[t], pstar[c], pcond[c], pz[c], k,
                                  theta[i, t], u, row)
            value[i, t] = v
            p_no[i, t] = pn
            forced[i, t] = f
            if lie_aux:
                for j in range(MAX_AUX_STATES):
                    aux[i, t, j] = row[j]
    return value, p_no, forced, aux


# -- agents ------------------------------------------------------------------------------------
class BeliefAgent(SyntheticAgent):
    """Base of the belief-coherence agents: parameters → kernel vector, one step function."""

    experiment: ClassVar[str] = EXPERIMENT
    draws_per_trial: ClassVar[int] = DRAWS
    kind: ClassVar[int] = K_MNL
    #: Name of the negative-control size parameter (stored in the kernel's effect slot).
    effect_name: ClassVar[str | None] = None
    deterministic: ClassVar[bool] = False
    #: CPU µs a step interpreted of a calibrated subject (κ = 1, δ = 0: its belief is p* itself, so no
    #: log-odds map, and a lie_aux step's tilt sits at λ = 0 up to rounding: one evaluation): measured
    #: 5.3–7.5 µs for every agent and network at the defaults, up to 8.8–9.0 with report noise 0.5
    #: (diabetes, nonmono-report; 26 Nov 2026, load ~5 on 2 CPUs: ``python benchmarks/bench_first_call.py
    #: --interpreted-cost``, whose cases include these): see the base class; 9.8–10.1 for that case after
    #: the tilt's audit (a step off λ = 0 now takes logs), at load ~7.  It was 55 µs (50–54
    #: measured) while the tilt was a 100-step bisection.
    interpreted_step_us: ClassVar[float] = 10.0
    #: The same for a miscalibrated subject (κ ≠ 1 or δ ≠ 0: the log-odds map on every belief, Newton
    #: steps for the tilt), one flat figure over the worst design (cogtestbed's choice: simpler than a
    #: figure by design, and a miscalibrated run rarely fits the interpreted budget anyway): measured 9.0
    #: µs at the default design, 14.0 on alarm, and 18.3–26.2 where κ = 10 meets a lie node with 5–6
    #: states and π0 alone with no decision (the LIE steps' share raised: child ChestXray, heart Race,
    #: diabetes Education), whose tilts take the most evaluations (26 Nov 2026, load ~5 on 2 CPUs,
    #: log-space tilt: ``python benchmarks/bench_first_call.py --interpreted-cost``); declared
    #: with a third's margin.  It was 15 while the tilt's first Newton step was unbounded and its
    #: weights not in log space (measured then 16.3–19.3 on those designs).
    MISCALIBRATED_STEP_US: ClassVar[float] = 35.0

    @classmethod
    def interpreted_cost_us(cls, design: Any, params: Mapping[str, Any]) -> float:
        """:attr:`MISCALIBRATED_STEP_US` for the subjects with ``calib_slope`` ≠ 1 or ``calib_bias`` ≠ 0,
        :attr:`interpreted_step_us` for the others (on every network: both figures cover the costliest)."""
        kappa = np.asarray(params.get("calib_slope", 1.0), dtype=np.float64)
        delta = np.asarray(params.get("calib_bias", 0.0), dtype=np.float64)
        miscalibrated = float(np.mean((kappa != 1.0) | (delta != 0.0)))
        return float(cls.interpreted_step_us + miscalibrated * (cls.MISCALIBRATED_STEP_US - cls.interpreted_step_us))

    @classmethod
    def kernel_params(cls, params: Mapping[str, Any], n: int) -> np.ndarray:
        """(n, N_KERNEL_PARAMS) kernel parameter matrix from per-subject arrays."""
        out = np.zeros((n, N_KERNEL_PARAMS))

        def get(name: str, default: float) -> np.ndarray:
            return np.broadcast_to(np.asarray(params.get(name, default), dtype=np.float64), (n,))

        out[:, P_KAPPA] = get("calib_slope", 1.0)
        out[:, P_DELTA] = get("calib_bias", 0.0)
        out[:, P_SIGMA] = get("report_noise", 0.0)
        for j, value in enumerate(cls.utilities(params, n).values()):
            out[:, P_U + j] = np.broadcast_to(value, (n,))
        out[:, P_SCALE] = get("scale", 1.0)
        out[:, P_GAMMA] = get("gamma", 1.0)
        if cls.effect_name is not None:
            out[:, P_EFFECT] = get(cls.effect_name, 0.0)
        out[:, P_DET] = 1.0 if cls.deterministic else 0.0
        return out

    @classmethod
    def utilities(cls, params: Mapping[str, Any], n: int) -> dict[str, np.ndarray]:
        """u(a, θ) in kernel order (No, Yes, Defer) × (0, 1)."""
        return {k: np.asarray(params.get(k, v), dtype=np.float64) for k, v in DEFAULT_UTILITIES.items()}

    def _reset_state(self) -> None:
        self._vector = self.kernel_params(self.params, 1)[0]

    def act(self, obs: Mapping[str, Any]) -> Any:
        u = self.uniforms()
        k = int(obs["n_aux"])
        aux = np.full(MAX_AUX_STATES, np.nan)
        phase = int(obs["kind"])
        arg = int(obs["variant"]) if phase == BELIEF else int(obs["z_state"])
        value, p_no, forced = agent_step(self.kind, self._vector, phase, arg, float(obs["p_star"]),
                                         np.asarray(obs["p_cond"], dtype=np.float64),
                                         np.asarray(obs["aux_true"], dtype=np.float64), k,
                                         int(obs["hidden_theta"]), np.ascontiguousarray(u), aux)
        if phase == DECISION:
            return np.array([value, forced])
        if phase == LIE_AUX:
            return aux[:k]
        return np.array([p_no, value])

    @classmethod
    def simulate_batch(cls, design: BeliefDesign, sessions: BeliefSessions,
                       params: Mapping[str, np.ndarray], uniforms: np.ndarray) -> Outcomes:
        gt = ground_truth(design)
        a = step_arrays(design, sessions)
        n = sessions.n_subjects
        k = gt.n_aux
        pc = np.zeros((len(gt.pstar), MAX_AUX_STATES))
        pz = np.zeros((len(gt.pstar), MAX_AUX_STATES))
        pc[:, :k], pz[:, :k] = gt.pcond, gt.pz
        value, p_no, forced, aux = kernel(simulate_belief_kernel)(
            cls.kind, cls.kernel_params(params, n), np.ascontiguousarray(a["phase"][0]),
            np.ascontiguousarray(a["arg"][0]), np.ascontiguousarray(a["config"]),
            np.ascontiguousarray(a["theta"]), gt.pstar, pc, pz, k, np.ascontiguousarray(uniforms))
        played = np.ones(value.shape, dtype=bool)
        return Outcomes(action=value, reward=np.full(value.shape, np.nan), valid=played.copy(), played=played,
                        raw_response=np.full(value.shape, None, dtype=object),
                        parse_error=np.full(value.shape, None, dtype=object),
                        extra={"p_no": p_no, "forced": forced, "aux": aux})


def _set(*params: Parameter, owner: str) -> ParameterSet:
    return ParameterSet((*BELIEF_PARAMS, *params), owner)


class LogitRUM(BeliefAgent):
    """Logit RUM (Def. 3.1, Eq. 3) with utilities u(a, θ) and a scale."""

    name: ClassVar[str] = "logit-rum"
    parameters: ClassVar[ParameterSet] = _set(*UTILITY_PARAMS, SCALE, owner="logit-rum")


class PTRUM(BeliefAgent):
    """Prospect-theory RUM (Def. 3.2 in the proof form of Eq. 8) with TK weighting γ."""

    name: ClassVar[str] = "pt-rum"
    parameters: ClassVar[ParameterSet] = _set(*UTILITY_PARAMS, SCALE, GAMMA, owner="pt-rum")


class PTLiteral(BeliefAgent):
    """Literal Def. 3.2 weighting w(p)u(a,1) + w(1−p)u(a,0); default Defer is dominated by No."""

    name: ClassVar[str] = "pt-literal"
    kind: ClassVar[int] = K_LITERAL
    parameters: ClassVar[ParameterSet] = _set(
        *(Parameter(p.name, p.lower, p.upper, -1.5 if p.name.startswith("u_defer") else p.default, p.description)
          for p in UTILITY_PARAMS), SCALE, Parameter("gamma", 0.28, 3.0, 0.4, GAMMA.description),
        owner="pt-literal")


class LossRUM(BeliefAgent):
    """Logit on expected loss (c_FP, c_FN, c_D) with TK weighting γ (the loss-form decider)."""

    name: ClassVar[str] = "loss-rum"
    parameters: ClassVar[ParameterSet] = _set(C_FP, C_FN, C_D, LOSS_SCALE, UNIT_GAMMA, owner="loss-rum")

    @classmethod
    def utilities(cls, params: Mapping[str, Any], n: int) -> dict[str, np.ndarray]:
        c_fp = np.asarray(params.get("c_fp", C_FP.default), dtype=np.float64)
        c_fn = np.asarray(params.get("c_fn", C_FN.default), dtype=np.float64)
        c_d = np.asarray(params.get("c_d", C_D.default), dtype=np.float64)
        zero = np.zeros_like(c_fp)
        return {"u_no_0": zero, "u_no_1": -c_fn, "u_yes_0": -c_fp, "u_yes_1": zero,
                "u_defer_0": -c_d, "u_defer_1": -c_d}


class ChowAgent(LossRUM):
    """Deterministic expected-loss minimiser (Chow's rule)."""

    name: ClassVar[str] = "chow"
    deterministic: ClassVar[bool] = True
    parameters: ClassVar[ParameterSet] = _set(C_FP, C_FN, C_D, owner="chow")


class Probit3(BeliefAgent):
    """3-action probit RUM: N(0,1) errors, corr(ε_Yes, ε_Defer) = ρ (no IIA)."""

    name: ClassVar[str] = "probit3"
    kind: ClassVar[int] = K_PROBIT
    effect_name: ClassVar[str | None] = "rho"
    parameters: ClassVar[ParameterSet] = _set(
        *UTILITY_PARAMS, Parameter.positive("scale", 2.0, upper=200.0, description="utility scale (error sd 1)"),
        Parameter("rho", -0.95, 0.95, 0.9, "correlation of the Yes and Defer errors"), owner="probit3")


class RandomAgent(BeliefAgent):
    """Remark 3.4: uniform action and an independent uniform report (passes T1)."""

    name: ClassVar[str] = "random"
    kind: ClassVar[int] = K_RANDOM
    interpreted_step_us: ClassVar[float] = 5.0  # measured 4.0 (no tilt: the network does not matter)
    MISCALIBRATED_STEP_US: ClassVar[float] = 5.0  # no calibration parameters
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")


def _control(agent_name: str, kind_: int, effect: Parameter, doc: str) -> type[BeliefAgent]:
    cls = type(agent_name.title().replace("-", ""), (BeliefAgent,), {
        "__doc__": doc, "name": agent_name, "kind": kind_, "effect_name": effect.name,
        "parameters": _set(*UTILITY_PARAMS, SCALE, effect, owner=agent_name),
    })
    return cls


LeakAgent = _control("leak", K_LEAK, _effect("leak", 0.2, 1.0, "weight of θ in the decision belief"),
                     "Hidden-information leak: decides on P_S + leak·(θ − P_S), reports P_S.")
NonMonotoneReport = _control("nonmono-report", K_NM_REPORT,
                             _effect("distortion", 0.6, 1.0, "d in p_E = P_S + d·sin(3πP_S)/3"),
                             "Reports a non-monotone distortion of its belief.")
NonMonotoneDefer = _control("nonmono-defer", K_NM_DEFER,
                            _effect("bump", 3.0, 50.0, "amplitude of bump·sin(4πp) on Defer's utility"),
                            "Deferral rule non-monotone in p.")
LossReport = _control("loss-report", K_LOSS_REPORT,
                      _effect("shift", 1.0, 5.0, "log-odds shift of the report under a stated loss"),
                      "Report moves with the stated loss (T3).")
LieIncoherent = _control("lie-incoherent", K_LIE,
                         _effect("incoherence", 1.0, 5.0, "log-odds shift of beliefs given z"),
                         "Beliefs given the withheld covariate break the law of iterated expectations.")

AGENTS: dict[str, type[SyntheticAgent]] = {a.name: a for a in (
    LogitRUM, PTRUM, LossRUM, ChowAgent, LeakAgent, NonMonotoneReport, NonMonotoneDefer, LossReport,
    LieIncoherent, RandomAgent, Probit3, PTLiteral)}

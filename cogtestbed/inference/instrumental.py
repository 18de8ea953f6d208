"""Rescorla–Wagner models of instrumental learning and CogBench's metrics for the task.

Model (Coda-Forno et al. 2024; Lefebvre et al. 2017): one value pair per casino, initialised at 0.5;
after choosing arm ``a`` in casino ``c`` and receiving ``r``::

    δ = r − V[c, a]                                   (prediction error)
    V[c, a] ← V[c, a] + α·δ                           (RW)
    V[c, a] ← V[c, a] + (α⁺ if δ > 0 else α⁻)·δ      (RW±)

Policy: ``P(a) = softmax(β·V[c])``; with two arms ``P(0) = σ(β·(V[c,0] − V[c,1]))``, computed in
log-space (log-sum-exp).  CogBench's likelihood clips each choice probability to
[1e-5, 1 − 1e-5] before taking the log; bounds are α ∈ [0, 1], β ∈ [0, 1e5].

RW is RW± with α⁺ = α⁻ = α, so one numba kernel serves both (the RW gradient is the sum of the two
learning-rate gradients).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from cogtestbed.errors import InputError
from cogtestbed.inference.base import CognitiveModel, subject_slices
from cogtestbed.interpreted import kernel
from cogtestbed.lapse import INVALID, RANDOM
from cogtestbed.metrics_result import MetricsResult, metrics_result
from cogtestbed.numerics import SIGMOID_MARGIN, sigmoid_margin
from cogtestbed.parameters import Parameter, ParameterSet

EXPERIMENT = "instrumental-learning"
#: Initial value of every arm (rewards are 0 or 1; CogBench starts at the midpoint).
V0 = 0.5
#: CogBench's likelihood clipping.
CLIP_LO, CLIP_HI = 1e-5, 1.0 - 1e-5
#: CogBench's grid-searched "optimal" reference agents (store.py): best α at β = 316, best
#: optimism bias at β = 17.  Their distances are CogBench's behaviour_score3 / behaviour_score4.
OPTIMAL_LEARNING_RATE = 0.069
OPTIMAL_OPTIMISM_BIAS = 0.172
BETA_MAX = 1e5
#: |x| = |β·(V_c − V_o)| beyond which CogBench's clip decides log P(choice) (its crossing is
#: logit(1 − 1e-5) ≈ 11.513; at 11.6 the unclipped value lies 8e-7 past the clip, far beyond rounding),
#: so the kernels skip the exponential and logarithm there and get the same bits.
CLIP_X = 11.6

ALPHA = Parameter.unit("alpha", 0.3, "learning rate", prior_mean=-1.0, prior_sd=1.5)
ALPHA_POS = Parameter.unit(
    "alpha_pos", 0.3, "learning rate after positive prediction errors", prior_mean=-1.0, prior_sd=1.5
)
ALPHA_NEG = Parameter.unit(
    "alpha_neg", 0.3, "learning rate after negative prediction errors", prior_mean=-1.0, prior_sd=1.5
)
BETA = Parameter.positive(
    "beta",
    5.0,
    upper=BETA_MAX,
    description="softmax inverse temperature",
    prior_mean=1.5,
    prior_sd=1.0,
    search_floor=1e-3,
    search_ceiling=BETA_MAX,
)


# ----------------------------------------------------------------------------- kernels
@njit(cache=True, inline="always")
def prob_arm0(beta: float, v0: float, v1: float) -> float:
    """P(arm 0) = σ(β·(v0 − v1)), evaluated without overflow: with e = exp(−|x|), 1 / (1 + e)
    for x ≥ 0 and e / (1 + e) below, one exponential and a select instead of a branch (the
    same floating-point operations as the two-branch form, so the same bits)."""
    x = beta * (v0 - v1)
    e = math.exp(-abs(x))
    return (1.0 if x >= 0.0 else e) / (1.0 + e)


#: :func:`prob_arm0` uncompiled, for a step path that compiles nothing: ``math.exp`` is the C library's
#: ``exp``, which the compiled function calls too (``llvm.exp.f64``), so the same bits
#: (``tests/test_auto_method.py`` checks both on 10⁵ inputs).
prob_arm0_python = prob_arm0.py_func


@njit(cache=True, inline="always")
def log_prob_choice(beta: float, v_chosen: float, v_other: float) -> float:
    """log P(chosen) = β·v_c − logsumexp(β·v_c, β·v_o) = −log1p(exp(−x)), x = β(v_c − v_o)."""
    x = beta * (v_chosen - v_other)
    if x >= 0.0:
        return -np.log1p(np.exp(-x))
    return x - np.log1p(np.exp(x))


@njit(cache=True, inline="always")
def rw_learning_rate(alpha_pos: float, alpha_neg: float, delta: float) -> float:
    """α⁺ if δ > 0 else α⁻ (CogBench: a zero prediction error uses α⁻; its update is 0)."""
    return alpha_pos if delta > 0.0 else alpha_neg


#: Lanes of the simulation kernel's vector loop (:func:`simulate_rwpm_kernel`): each lane is one
#: (subject, casino) value pair; a group of ``SIM_LANES // n_casinos`` subjects fills them.  32 (8 AVX2
#: vectors, 8 subjects of 4 casinos) measured fastest of 8–256 (``bench_simulate_path.py --lanes``): fewer
#: lanes pay the loop's fixed cost per visit, more spill the visit buffer out of the L1 cache.
SIM_LANES = 32
# Fields of the kernel's visit buffer (one row of SIM_LANES per field, one block of rows per visit):
# inputs u, the two arms' rewards, lapse kind and lapse uniform; outputs recorded arm and reward.
_U, _R0, _R1, _KIND, _LAPSE_U, _ARM, _REWARD, _N_FIELDS = range(8)
# Fields of the lane state: the value pair, α⁺, α⁻, β, and the choice of the current visit (its
# :func:`~cogtestbed.numerics.sigmoid_margin`: arm 1 iff ≥ 0).
_V0, _V1, _APOS, _ANEG, _BETA, _MARGIN, _N_STATE = range(7)
_VISIT = _N_FIELDS * SIM_LANES
# First-call compile cost: the kernel's helpers that only compiled code calls take numba's
# ``no_cpython_wrapper`` and ``no_cfunc_wrapper`` options (CPU target options numba's own overloads use;
# its type stubs omit them, hence the ``type: ignore``), so numba builds no Python or C entry point for
# them; ``_simulate_rwpm``, called from Python only, builds no C one.  The kernel writes conditional
# expressions for ``min``/``max`` and stores floats into integer arrays without ``int()``: numba compiles
# each of those builtins as an overload of its own.


@njit(cache=True, inline="always")
def rw_visit(
    v0: float,
    v1: float,
    arm1: bool,
    r0: float,
    r1: float,
    alpha_pos: float,
    alpha_neg: float,
    kind: float,
    lapse_u: float,
) -> tuple[float, float, float, float]:
    """One RW± trial in a casino with values (v0, v1), the agent having chosen arm 1 iff ``arm1``:
    (new v0, new v1, recorded arm, recorded reward), with selects only (no branch).

    The lapse ``kind`` (:mod:`cogtestbed.lapse`, as a float) decides the recorded answer like
    :func:`~cogtestbed.lapse.lapsed_choice`: an invalid answer records arm −1 and reward NaN and
    teaches nothing; a random one is arm 1 iff 2·u ≥ 1 (``random_choice(u, 2)`` = min(⌊2u⌋, 1), 2u
    exact) and is learned from.  The chosen value gets V + α·δ with α = :func:`rw_learning_rate`, the
    same operations as the agent's step-path update, so the same bits.
    """
    invalid = kind == INVALID
    arm1 = (lapse_u * 2.0 >= 1.0) if kind == RANDOM else arm1
    reward = r1 if arm1 else r0
    value = v1 if arm1 else v0
    delta = reward - value
    learned = value + rw_learning_rate(alpha_pos, alpha_neg, delta) * delta
    new0 = v0 if (arm1 or invalid) else learned
    new1 = learned if (arm1 and not invalid) else v1
    return new0, new1, (-1.0 if invalid else (1.0 if arm1 else 0.0)), (np.nan if invalid else reward)


@njit(cache=True, inline="always")
def _choose_lanes(buffer: np.ndarray, base: int, state: np.ndarray) -> int:
    """The choice of every lane in one visit (its block starts at ``base`` in the visit buffer), stored
    as its margin in ``_MARGIN``: the first vectorised loop of :func:`simulate_rwpm_kernel`.

    The margin is :func:`~cogtestbed.numerics.sigmoid_margin` (no libm call, no branch: LLVM compiles
    the loop to AVX2 instructions over 4 lanes); returns how many lanes fell within
    :data:`~cogtestbed.numerics.SIGMOID_MARGIN`, which :func:`_decide_close_lanes` decides exactly.
    """
    close = 0
    for lane in range(SIM_LANES):
        x = state[_BETA * SIM_LANES + lane] * (state[_V0 * SIM_LANES + lane] - state[_V1 * SIM_LANES + lane])
        d = sigmoid_margin(buffer[base + lane + _U * SIM_LANES], x)
        state[_MARGIN * SIM_LANES + lane] = d
        close += not abs(d) > SIGMOID_MARGIN
    return close


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]
def _decide_close_lanes(buffer: np.ndarray, base: int, state: np.ndarray) -> None:
    """Decide each lane whose margin is within :data:`~cogtestbed.numerics.SIGMOID_MARGIN` exactly as
    the step path (arm 0 iff u < :func:`prob_arm0`), storing the choice as a margin of ±1.

    Rarely called (a lane's margin is within it with probability at most 2·10⁻⁶): deciding before the
    visit is played, rather than replaying it, keeps the first call from compiling a second copy of
    :func:`rw_visit`."""
    for lane in range(SIM_LANES):
        at = _MARGIN * SIM_LANES + lane
        if abs(state[at]) > SIGMOID_MARGIN:
            continue
        p = prob_arm0(state[_BETA * SIM_LANES + lane], state[_V0 * SIM_LANES + lane], state[_V1 * SIM_LANES + lane])
        state[at] = -1.0 if buffer[base + lane + _U * SIM_LANES] < p else 1.0


@njit(cache=True, inline="always")
def _advance_lanes(buffer: np.ndarray, base: int, state: np.ndarray, lapses: bool) -> None:
    """Play one visit of every lane with the choices :func:`_choose_lanes` stored (arm 1 iff its
    margin ≥ 0): the second vectorised loop of :func:`simulate_rwpm_kernel`, branch-free."""
    for lane in range(SIM_LANES):
        at = base + lane
        new0, new1, arm, reward = rw_visit(
            state[_V0 * SIM_LANES + lane],
            state[_V1 * SIM_LANES + lane],
            state[_MARGIN * SIM_LANES + lane] >= 0.0,
            buffer[at + _R0 * SIM_LANES],
            buffer[at + _R1 * SIM_LANES],
            state[_APOS * SIM_LANES + lane],
            state[_ANEG * SIM_LANES + lane],
            buffer[at + _KIND * SIM_LANES] if lapses else 0.0,
            buffer[at + _LAPSE_U * SIM_LANES] if lapses else 0.0,
        )
        state[_V0 * SIM_LANES + lane] = new0
        state[_V1 * SIM_LANES + lane] = new1
        buffer[at + _ARM * SIM_LANES] = arm
        buffer[at + _REWARD * SIM_LANES] = reward


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]
def _visit_offsets(casino: np.ndarray, n_casinos: int, group: int, j: int, out: np.ndarray, counts: np.ndarray) -> int:
    """Where each trial of one subject (group slot ``j``) lives in the visit buffer: the block of its
    visit number within its casino, the lane of (subject, casino).  Returns the most visits of a casino."""
    counts[:] = 0
    most = 0
    for t in range(casino.shape[0]):
        c = casino[t]
        if c < 0 or c >= n_casinos:
            raise InputError("casino index out of range")
        k = counts[c]
        counts[c] = k + 1
        if k + 1 > most:
            most = k + 1
        out[t] = k * _VISIT + c * group + j
    return most  # a running maximum: ``counts.max()`` would compile numpy's reduction (0.5 s cold)


def simulate_rwpm_kernel(
    casino: np.ndarray,
    reward_draws: np.ndarray,
    alpha_pos: np.ndarray,
    alpha_neg: np.ndarray,
    beta: np.ndarray,
    uniforms: np.ndarray,
    n_casinos: int,
    lapse_kind: np.ndarray,
    lapse_u: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Play N pre-drawn sessions with RW± agents (RW: α⁺ = α⁻; random: β = 0).

    ``casino`` (N, T) holds 0-based casino indices, ``reward_draws`` (N, T, 2) the pre-sampled
    outcome of each arm, ``uniforms`` (N, T) the choice uniforms: arm 0 iff u < P(arm 0)
    (:func:`prob_arm0`, bit for bit).  ``lapse_kind``/``lapse_u`` (N, T): pre-drawn lapses
    (:mod:`cogtestbed.lapse`), or arrays with no rows for none; an invalid step records −1,
    pays nothing and teaches nothing, a random arm is learned from.  Returns (action, reward, valid).

    Speed without changing a bit.  A casino's value pair changes only on its own visits, so each
    (subject, casino) pair is an independent recursion over its visits: :data:`SIM_LANES` such pairs
    (``SIM_LANES // n_casinos`` subjects) are laid out side by side, their trials gathered into a visit
    buffer (one block per visit number, one row per field), and each visit of all lanes is two
    branch-free loops that LLVM vectorises: the choices, decided by the table-free exponential of
    :func:`~cogtestbed.numerics.sigmoid_margin` (:func:`_choose_lanes`; the rare ones within its error
    margin are then decided exactly, :func:`_decide_close_lanes`), and the visit played with them
    (:func:`_advance_lanes`).  Results are scattered back in
    trial order.  The arrays are allocated here, in numpy, and :func:`_simulate_rwpm` fills them: numba
    would compile an allocation routine per dtype and rank (a third of the first call's compile time).
    """
    n, t_max = casino.shape
    if n_casinos < 1 or n_casinos > SIM_LANES:
        raise InputError("the RW± kernel plays 1 to SIM_LANES casinos")
    actions = np.empty((n, t_max), dtype=np.int64)
    rewards = np.empty((n, t_max), dtype=np.float64)
    valid = np.ones((n, t_max), dtype=np.bool_)
    buffer = np.zeros((max(t_max, 1), _N_FIELDS, SIM_LANES))
    buffer[:, _U, :] = 0.25  # lanes with no visit play a harmless dummy
    state = np.zeros(_N_STATE * SIM_LANES)
    offsets = np.empty((SIM_LANES // n_casinos, t_max), dtype=np.uint64)
    counts = np.empty(n_casinos, dtype=np.int64)
    lapsed = lapse_kind.shape[0] > 0
    kernel(_simulate_rwpm)(
        casino,
        reward_draws,
        alpha_pos,
        alpha_neg,
        beta,
        uniforms,
        n_casinos,
        lapse_kind if lapsed else None,
        lapse_u if lapsed else None,
        actions,
        rewards,
        valid,
        buffer.reshape(-1),
        state,
        offsets,
        counts,
    )
    return actions, rewards, valid


@njit(cache=True, error_model="numpy", no_cfunc_wrapper=True)  # type: ignore[call-overload]
def _simulate_rwpm(
    casino: np.ndarray,
    reward_draws: np.ndarray,
    alpha_pos: np.ndarray,
    alpha_neg: np.ndarray,
    beta: np.ndarray,
    uniforms: np.ndarray,
    n_casinos: int,
    lapse_kind: np.ndarray | None,
    lapse_u: np.ndarray | None,
    actions: np.ndarray,
    rewards: np.ndarray,
    valid: np.ndarray,
    buffer: np.ndarray,
    state: np.ndarray,
    offsets: np.ndarray,
    counts: np.ndarray,
) -> None:
    """The loops of :func:`simulate_rwpm_kernel`, filling its ``actions``, ``rewards`` and ``valid``
    (all True on entry) with the work arrays it allocated: the visit ``buffer`` (its choice uniforms
    set to a dummy), the lane ``state`` (zeros), visit ``offsets`` (group, T) and casino ``counts``.

    ``lapse_kind``/``lapse_u`` are None for no lapses: ``is None`` on an argument is decided when
    numba compiles (its dead-branch pruning), so a call compiles one copy of the vector loop, with or
    without lapses, only the one it uses (a run-time switch between two inlined copies cost the first
    call half a second of compiling).
    """
    n, t_max = casino.shape
    group = SIM_LANES // n_casinos
    u_row, r0_row, r1_row = buffer[_U * SIM_LANES :], buffer[_R0 * SIM_LANES :], buffer[_R1 * SIM_LANES :]
    kind_row, lapse_u_row = buffer[_KIND * SIM_LANES :], buffer[_LAPSE_U * SIM_LANES :]
    arm_row, reward_row = buffer[_ARM * SIM_LANES :], buffer[_REWARD * SIM_LANES :]
    for start in range(0, n, group):
        m = group if group < n - start else n - start
        depth = 0
        for j in range(group):
            i = start + (j if j < m else m - 1)  # empty slots of the last group copy its last subject's rates
            for c in range(n_casinos):
                state[_APOS * SIM_LANES + c * group + j] = alpha_pos[i]
                state[_ANEG * SIM_LANES + c * group + j] = alpha_neg[i]
                state[_BETA * SIM_LANES + c * group + j] = beta[i]
            if j >= m:
                continue
            at = offsets[j]
            most = _visit_offsets(casino[i], n_casinos, group, j, at, counts)
            depth = most if most > depth else depth
            u, draws = uniforms[i], reward_draws[i]
            for t in range(t_max):
                o = at[t]
                u_row[o] = u[t]
                r0_row[o] = draws[t, 0]
                r1_row[o] = draws[t, 1]
            if lapse_kind is not None and lapse_u is not None:
                kinds, lu = lapse_kind[i], lapse_u[i]
                for t in range(t_max):
                    kind_row[at[t]] = kinds[t]
                    lapse_u_row[at[t]] = lu[t]
        state[_V0 * SIM_LANES : (_V1 + 1) * SIM_LANES] = V0
        for k in range(depth):
            base = k * _VISIT
            if _choose_lanes(buffer, base, state):
                _decide_close_lanes(buffer, base, state)
            if lapse_kind is None:
                _advance_lanes(buffer, base, state, False)
            else:
                _advance_lanes(buffer, base, state, True)
        for j in range(m):
            at = offsets[j]
            arm, paid = actions[start + j], rewards[start + j]
            for t in range(t_max):
                arm[t] = arm_row[at[t]]
                paid[t] = reward_row[at[t]]
            if lapse_kind is not None:
                ok = valid[start + j]
                for t in range(t_max):
                    ok[t] = arm[t] >= 0


@njit(cache=True)
def rwpm_nll_many_kernel(
    thetas: np.ndarray, casino: np.ndarray, action: np.ndarray, reward: np.ndarray, n_casinos: int
) -> np.ndarray:
    """NLL (no gradient) at each (α⁺, α⁻, β) row of ``thetas``, for MLE start grids.

    A measured fast path kept beside the one likelihood (:func:`rwpm_pointwise_kernel`): the value
    trajectory depends on (α⁺, α⁻) only, so consecutive rows that share them (β varies fastest in
    a product grid) reuse one pass of the RW± recursion and each row costs one clipped
    log-sigmoid per trial.  The grid is most of an RW± fit; through the generic kernel loop
    the fit takes longer (``benchmarks/bench_instrumental_mle.py``).  Equal, term by term, to
    −Σ :func:`rwpm_pointwise_kernel` (tested).
    """
    n_t = casino.shape[0]
    out = np.empty(thetas.shape[0])
    diffs = np.empty(n_t)
    values = np.empty((n_casinos, 2))
    prev_pos, prev_neg = -1.0, -1.0
    log_lo, log_hi = np.log(CLIP_LO), np.log(CLIP_HI)
    for k in range(thetas.shape[0]):
        a_pos, a_neg, beta = thetas[k, 0], thetas[k, 1], thetas[k, 2]
        if a_pos != prev_pos or a_neg != prev_neg:
            values[:, :] = V0
            for t in range(n_t):
                a = action[t]
                if a < 0:
                    diffs[t] = np.nan  # invalid trial: skipped by the likelihood
                    continue
                c = casino[t]
                diffs[t] = values[c, a] - values[c, 1 - a]
                delta = reward[t] - values[c, a]
                values[c, a] += rw_learning_rate(a_pos, a_neg, delta) * delta
            prev_pos, prev_neg = a_pos, a_neg
        nll = 0.0
        for t in range(n_t):
            d = diffs[t]
            if d != d:
                continue
            x = beta * d
            if x >= CLIP_X:
                nll -= log_hi
            elif x <= -CLIP_X:
                nll -= log_lo
            else:
                nll -= min(max(log_prob_choice(beta, d, 0.0), log_lo), log_hi)
        out[k] = nll
    return out


# ----------------------------------------------------------------------------- likelihood kernel
@njit(cache=True)
def rwpm_pointwise_kernel(
    theta: np.ndarray,
    obs_subject: np.ndarray,
    action: np.ndarray,
    casino: np.ndarray,
    reward: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """RW± likelihood (the models' pointwise kernel): per-trial log P(choice) and its gradient
    w.r.t. the subject's (α⁺, α⁻, β).

    CogBench's clipped likelihood (module docstring); values reset to V₀ when ``obs_subject``
    changes; only valid trials are passed in (an invalid trial neither counts nor learns).
    Forward-mode derivatives of the values: for the chosen arm with rate α (selected by the
    sign of δ), ∂V'/∂α = δ + (1 − α)·∂V/∂α and ∂V'/∂α_other = (1 − α)·∂V/∂α_other; a clipped
    trial contributes a constant, hence no gradient.  The recursion runs first, then the log-sigmoids
    over all trials: the recursion's loop carries no transcendental call and the exponentials do not wait
    on each other (faster than one loop doing both: ``benchmarks/bench_rw_pymc.py``, docs/benchmarks.md).

    PyMC formulation chosen by measurement (``benchmarks/bench_rw_pymc.py``, 50 subjects × 96
    trials, logp+gradient): a pytensor ``scan`` over trials and a loop-free closed form were both
    much slower than this kernel inside the pointwise Op.
    """
    n = action.shape[0]
    n_casinos = 1
    for t in range(n):
        n_casinos = max(n_casinos, casino[t] + 1)
    x = np.empty(n)  # β·(V_chosen − V_other) of each trial
    grad = np.empty((n, 3))  # d x / d (α⁺, α⁻, β), times d log σ(x) / d x below
    values = np.full((n_casinos, 2), V0)
    d_pos = np.zeros((n_casinos, 2))
    d_neg = np.zeros((n_casinos, 2))
    current = -1
    for t in range(n):  # the values' recursion (sequential; no transcendental function)
        s = obs_subject[t]
        if s != current:
            current = s
            values[:, :] = V0
            d_pos[:, :] = 0.0
            d_neg[:, :] = 0.0
        alpha_pos, alpha_neg, beta = theta[s, 0], theta[s, 1], theta[s, 2]
        a = action[t]
        c = casino[t]
        o = 1 - a
        diff = values[c, a] - values[c, o]
        x[t] = beta * diff
        grad[t, 0] = beta * (d_pos[c, a] - d_pos[c, o])
        grad[t, 1] = beta * (d_neg[c, a] - d_neg[c, o])
        grad[t, 2] = diff
        delta = reward[t] - values[c, a]
        if delta > 0.0:
            values[c, a] += alpha_pos * delta
            d_pos[c, a] = delta + (1.0 - alpha_pos) * d_pos[c, a]
            d_neg[c, a] = (1.0 - alpha_pos) * d_neg[c, a]
        else:
            values[c, a] += alpha_neg * delta
            d_neg[c, a] = delta + (1.0 - alpha_neg) * d_neg[c, a]
            d_pos[c, a] = (1.0 - alpha_neg) * d_pos[c, a]
    # log σ(x) and its slope 1 − σ(x) from e = exp(−|x|), overflow-free: one pass over the trials after the
    # recursion, the exponentials independent of each other (the recursion's loop carries no transcendental call)
    e = np.empty(n)
    for t in range(n):
        e[t] = np.exp(-abs(x[t]))
    ll = np.empty(n)
    log_lo = np.log(CLIP_LO)
    log_hi = np.log(CLIP_HI)
    for t in range(n):
        slope = 0.0  # clipped (CLIP_X, or log p beyond the clip): a constant, no gradient
        if x[t] >= CLIP_X:
            ll[t] = log_hi
        elif x[t] <= -CLIP_X:
            ll[t] = log_lo
        else:
            if x[t] >= 0.0:
                logp, sigma_slope = -np.log1p(e[t]), e[t] / (1.0 + e[t])
            else:
                logp, sigma_slope = x[t] - np.log1p(e[t]), 1.0 / (1.0 + e[t])
            if logp < log_lo:
                ll[t] = log_lo
            elif logp > log_hi:
                ll[t] = log_hi
            else:
                ll[t], slope = logp, sigma_slope
        for j in range(3):  # a clipped row is 0, not 0 · (β·∂V): that is NaN where β·∂V overflows
            grad[t, j] = grad[t, j] * slope if slope != 0.0 else 0.0
    return ll, grad


# ----------------------------------------------------------------------------- models
@dataclass(frozen=True)
class BanditData:
    """One subject's trials: 0-based casino, chosen arm (−1 if invalid), reward."""

    casino: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    n_casinos: int


def bandit_data(trials: pd.DataFrame) -> dict[Hashable, BanditData]:
    """Split a trial table into per-subject arrays (trial order within subject preserved)."""
    n_casinos = int(trials["casino"].max())
    ordered, slices = subject_slices(trials)
    action = ordered["action"].astype("Int64").fillna(-1).to_numpy(dtype=np.int64)
    action = np.where(ordered["valid"].to_numpy(dtype=bool), action, -1)
    casino = ordered["casino"].to_numpy(dtype=np.int64) - 1
    reward = ordered["reward"].fillna(0.0).to_numpy(dtype=np.float64)
    return {
        subject: BanditData(casino=casino[rows], action=action[rows], reward=reward[rows], n_casinos=n_casinos)
        for subject, rows in slices
    }


class _BanditModel(CognitiveModel):
    experiment: ClassVar[str] = EXPERIMENT
    observation_fields: ClassVar[tuple[str, ...]] = ("action", "casino", "reward")
    observed_name: ClassVar[str] = "choice"
    choice_options: ClassVar[int | None] = 2  # one of the casino's two machines
    lapse_options: ClassVar[int | None] = 2  # a lapse picks either machine

    pointwise_kernel: ClassVar[Any] = rwpm_pointwise_kernel

    def subject_data(self, trials: pd.DataFrame) -> dict[Hashable, Any]:
        return bandit_data(trials)

    def n_observations(self, data: BanditData) -> int:
        return int(np.sum(data.action >= 0))

    def observation_mask(self, data: BanditData) -> np.ndarray:
        return data.action >= 0

    def nll_many(self, thetas: np.ndarray, data: BanditData) -> np.ndarray:
        """Start-grid NLLs through the value-only fast path :func:`rwpm_nll_many_kernel`."""
        full = np.ascontiguousarray(self.kernel_theta(np.atleast_2d(thetas)))
        return rwpm_nll_many_kernel(full, data.casino, data.action, data.reward, data.n_casinos)


class RescorlaWagner(_BanditModel):
    """RW with softmax: parameters (α, β); the RW± kernel with α⁺ = α⁻ = α."""

    name: ClassVar[str] = "rw"
    parameters: ClassVar[ParameterSet] = ParameterSet((ALPHA, BETA), "rw")
    kernel_columns: ClassVar[tuple[str | float, ...] | None] = ("alpha", "alpha", "beta")
    grid_points: ClassVar[int] = 15
    n_starts: ClassVar[int] = 8
    #: nutpie's low-rank mass matrix: by the rule written before the run, on fresh data sets 2 and 3 it gave
    #: at least the diagonal's min bulk ESS per CPU-second at R-hat <= 1.01 with no more divergences
    #: (docs/benchmarks.md, "The low-rank mass matrix per family").
    low_rank_mass_matrix: ClassVar[bool] = True


class RescorlaWagnerPM(_BanditModel):
    """RW± with softmax: parameters (α⁺, α⁻, β)."""

    name: ClassVar[str] = "rw-pm"
    parameters: ClassVar[ParameterSet] = ParameterSet((ALPHA_POS, ALPHA_NEG, BETA), "rw-pm")
    # 9³ grid + 8 starts from its local minima: on all 271 CogBench runs within 3e-5 of a
    # 11³-grid / 20-start search and never worse than CogBench's differential evolution.
    grid_points: ClassVar[int] = 9
    n_starts: ClassVar[int] = 8
    contrasts: ClassVar[Mapping[str, Mapping[str, float]]] = {"optimism_bias": {"alpha_pos": 1.0, "alpha_neg": -1.0}}


MODELS: dict[str, CognitiveModel] = {"rw": RescorlaWagner(), "rw-pm": RescorlaWagnerPM()}


# ----------------------------------------------------------------------------- metrics
def cogbench_metrics(trials: pd.DataFrame, n_starts: int | None = None) -> MetricsResult:
    """CogBench's instrumental-learning scores, per run and averaged over runs.

    Per run (store.py): performance = mean reward; learning rate = α of the RW fit; optimism bias
    = α⁺ − α⁻ of the RW± fit; plus the distances to CogBench's optimal reference agents
    (behaviour_score3/4).  CogBench reports the mean over runs of each score.  Invalid answers
    (none in CogBench's data) are excluded from the mean reward and from the likelihood;
    ``n_invalid`` counts them.
    """
    rw = MODELS["rw"].fit_mle(trials, n_starts=n_starts).set_index("subject")
    pm = MODELS["rw-pm"].fit_mle(trials, n_starts=n_starts).set_index("subject")
    per_run = []
    for subject, df in trials.groupby("subject", sort=True):
        a, b = rw.loc[subject], pm.loc[subject]
        bias = float(b["alpha_pos"] - b["alpha_neg"])
        per_run.append(
            {
                "run": int(subject) if isinstance(subject, (int, np.integer)) else subject,
                "performance": float(df["reward"].mean()),
                "learning_rate": float(a["alpha"]),
                "optimism_bias": bias,
                "alpha": float(a["alpha"]),
                "beta": float(a["beta"]),
                "nll_rw": float(a["nll"]),
                "alpha_pos": float(b["alpha_pos"]),
                "alpha_neg": float(b["alpha_neg"]),
                "beta_pm": float(b["beta"]),
                "nll_rw_pm": float(b["nll"]),
                "distance_to_optimal_learning_rate": abs(float(a["alpha"]) - OPTIMAL_LEARNING_RATE),
                "distance_to_optimal_optimism_bias": abs(bias - OPTIMAL_OPTIMISM_BIAS),
                "converged": bool(a["converged"] and b["converged"]),
                "n_trials": len(df),
                "n_invalid": int((~df["valid"].astype(bool)).sum()),
            }
        )
    table = pd.DataFrame(per_run)
    metrics = {
        key: float(table[key].mean())
        for key in (
            "performance",
            "learning_rate",
            "optimism_bias",
            "distance_to_optimal_learning_rate",
            "distance_to_optimal_optimism_bias",
        )
    }
    metrics["n_runs"] = len(table)
    metrics["invalid_rate"] = float(table["n_invalid"].sum() / max(table["n_trials"].sum(), 1))
    flags = [f"run {r['run']}: an MLE fit did not converge" for r in per_run if not r["converged"]]
    return metrics_result(metrics, "per_run", per_run, int(table["n_invalid"].sum()), flags)

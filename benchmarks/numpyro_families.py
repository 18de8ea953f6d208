"""JAX likelihoods of the families whose NumPyro versions were added second (issue 54 item 1): two-step
(hybrid, model-based, model-free), the restless bandit's Kalman chooser, belief coherence (MNL, loss, on
decisions counted per distinct belief), the collider CBN's zero-one-inflated Beta and the revealed-belief dissonant
model.  Imported by ``numpyro_models.py`` in NumPyro's environment; imports no cogtestbed code.

Each function is a transcription of the package's numba kernel (named in its docstring): the same
clipping and floors, the same resets, the same padding rules; the benchmark checks every one against
the kernel at three prior draws and the joint log density against PyMC's before anything is timed.
Signature ``(theta, data, static) -> per-observation log-likelihood`` as in ``numpyro_models.LIKELIHOODS``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: twostep.py: values start at Q0, each stage's probability is floored at CLIP, P(common) = 0.7.
TWOSTEP_Q0, TWOSTEP_CLIP, TWOSTEP_COMMON = 0.5, 1e-10, 0.7
#: restless.py: reward sd, prior of each arm's value, confidence floor, the open outer levels.
KALMAN_OBS_SD, KALMAN_PRIOR_MEAN, KALMAN_PRIOR_SD, KALMAN_FLOOR = 8.0, 50.0, 20.0, 1e-12
#: causal_hierarchical.py: μ clip, censoring width.
ZOIB_MU_CLIP, ZOIB_CENSOR = 1e-6, 1e-6
#: revealed_model.py: the Dirichlet's ε floor and the smallest noise ν.
REVEALED_EPS, REVEALED_NOISE_FLOOR = 1e-6, 1e-6


def twostep_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Two-step hybrid learner (:func:`cogtestbed.inference.twostep.hybrid_pointwise_kernel`): columns
    (w, α, β, λ, p).  Values reset at a subject's or session's first trial; a trial without a
    first-stage answer scores 0 and breaks stickiness; one without a second-stage answer scores its
    first stage only and does not learn; each stage's log probability is floored at log 1e-10."""
    import jax
    import jax.numpy as jnp

    w, alpha, beta, lam, persev = (theta[:, k] for k in range(5))
    n_subj = theta.shape[0]
    c_mb = 2.0 * TWOSTEP_COMMON - 1.0
    log_clip = np.log(TWOSTEP_CLIP)

    def step(state: Any, xs: Any) -> Any:
        qmf, q2, prev = state  # (S, 2), (S, 2, 2), (S,) previous first-stage action, -1 none
        a1, new, planet, a2, r, m = xs
        reset = m & (new > 0)
        qmf = jnp.where(reset[:, None], TWOSTEP_Q0, qmf)
        q2 = jnp.where(reset[:, None, None], TWOSTEP_Q0, q2)
        prev = jnp.where(reset, -1, prev)
        valid1 = m & (a1 >= 0)
        valid2 = valid1 & (a2 >= 0)
        x = beta * (w * c_mb * (q2[:, 0].max(-1) - q2[:, 1].max(-1)) + (1.0 - w) * (qmf[:, 0] - qmf[:, 1]))
        x = x + persev * ((prev == 0).astype(x.dtype) - (prev == 1).astype(x.dtype))
        ll1 = jnp.maximum(jax.nn.log_sigmoid(jnp.where(a1 == 0, x, -x)), log_clip)
        oh_s = jax.nn.one_hot(planet, 2)
        oh_c = jax.nn.one_hot(jnp.maximum(a2, 0), 2)
        oh_a = jax.nn.one_hot(jnp.maximum(a1, 0), 2)
        q2s = (q2 * oh_s[:, :, None]).sum(1)
        y = beta * (q2s[:, 0] - q2s[:, 1])
        ll2 = jnp.maximum(jax.nn.log_sigmoid(jnp.where(a2 == 0, y, -y)), log_clip)
        ll = jnp.where(valid1, ll1, 0.0) + jnp.where(valid2, ll2, 0.0)
        q_sc = (q2s * oh_c).sum(-1)
        d1 = q_sc - (qmf * oh_a).sum(-1)
        d2 = r - q_sc
        qmf = jnp.where(valid2[:, None], qmf + oh_a * (alpha * d1 + alpha * lam * d2)[:, None], qmf)
        q2 = jnp.where(valid2[:, None, None], q2 + oh_s[:, :, None] * oh_c[:, None, :] * (alpha * d2)[:, None, None],
                       q2)
        prev = jnp.where(m, jnp.where(a1 >= 0, a1, -1), prev)
        return (qmf, q2, prev), ll

    init = (jnp.full((n_subj, 2), TWOSTEP_Q0), jnp.full((n_subj, 2, 2), TWOSTEP_Q0), jnp.full(n_subj, -1))
    xs = tuple(d[k].T for k in ("a1", "new_session", "planet", "a2", "reward", "mask"))
    _, ll = jax.lax.scan(step, init, xs)
    return ll.T


def _interval_log_prob(lo: Any, hi: Any) -> Any:
    """log(Φ(hi) − Φ(lo)), lo < hi finite (the open bounds passed as ±50), reflected into the lower
    tail where both lie above 0 (:func:`cogtestbed.inference.restless.interval_log_prob`)."""
    import jax.numpy as jnp
    from jax.scipy.special import log_ndtr

    flip = lo > 0.0
    lo, hi = jnp.where(flip, -hi, lo), jnp.where(flip, -lo, hi)
    l_hi, l_lo = log_ndtr(hi), log_ndtr(lo)
    return l_hi + jnp.log1p(-jnp.exp(jnp.minimum(l_lo - l_hi, -1e-300)))


def kalman_chooser_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Restless-bandit Kalman chooser (:func:`cogtestbed.inference.restless.kalman_pointwise_kernel`):
    columns (drift sd, β, κ, δ, σ_c).  Choice log σ(±β(m₁ − m₀)); a confidence report of level k
    scores log[Φ((logit((k+½)/100) − μ)/σ_c) − Φ((logit((k−½)/100) − μ)/σ_c)] (outer bins open,
    floored at log 1e-12), μ = κ·logit Φ(u) + δ, Φ(u) clipped to [1e-9, 1 − 1e-9]; then the chosen
    arm's Kalman update and both arms' drift.  State reset at a subject's or session's first trial."""
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import ndtr

    drift, beta, gain, bias, noise = (theta[:, k] for k in range(5))
    n_subj = theta.shape[0]
    obs_var = KALMAN_OBS_SD ** 2
    log_floor = np.log(KALMAN_FLOOR)

    def step(state: Any, xs: Any) -> Any:
        mean, var = state
        a, level, r, new, m = xs
        reset = m & (new > 0)
        mean = jnp.where(reset[:, None], KALMAN_PRIOR_MEAN, mean)
        var = jnp.where(reset[:, None], KALMAN_PRIOR_SD ** 2, var)
        x = beta * (mean[:, 1] - mean[:, 0])
        lp = jax.nn.log_sigmoid(jnp.where(a == 1, x, -x))
        oh = jax.nn.one_hot(a, 2)
        m_c, m_o = (mean * oh).sum(-1), (mean * (1.0 - oh)).sum(-1)
        v_c, v_o = (var * oh).sum(-1), (var * (1.0 - oh)).sum(-1)
        p = jnp.clip(ndtr((m_c - m_o) / jnp.sqrt(v_c + v_o)), 1e-9, 1.0 - 1e-9)
        mu = gain * (jnp.log(p) - jnp.log1p(-p)) + bias
        k = level.astype(mean.dtype)
        open_lo, open_hi = level <= 1, level >= 99
        lo = jnp.where(open_lo, -50.0, (jnp.log(jnp.where(open_lo, 1.0, (k - 0.5) / (100.5 - k))) - mu) / noise)
        hi = jnp.where(open_hi, 50.0, (jnp.log(jnp.where(open_hi, 1.0, (k + 0.5) / (99.5 - k))) - mu) / noise)
        lc = jnp.maximum(_interval_log_prob(lo, hi), log_floor)
        ll = jnp.where(m, lp + jnp.where(level >= 0, lc, 0.0), 0.0)
        g = v_c / (v_c + obs_var)
        mean = jnp.where(m[:, None], mean + oh * (g * (r - m_c))[:, None], mean)
        var = jnp.where(m[:, None], var * (1.0 - oh * g[:, None]) + (drift * drift)[:, None], var)
        return (mean, var), ll

    init = (jnp.full((n_subj, 2), KALMAN_PRIOR_MEAN), jnp.full((n_subj, 2), KALMAN_PRIOR_SD ** 2))
    xs = tuple(d[k].T for k in ("choice", "conf_level", "reward", "new_session", "mask"))
    _, ll = jax.lax.scan(step, init, xs)
    return ll.T


def _counted_log_softmax3(v: Any, d: dict[str, Any]) -> Any:
    """Σ_a n_a · log softmax(v)[a] per row, the counts ``n_no``, ``n_yes``, ``n_defer`` of ``d``."""
    import jax
    import jax.numpy as jnp

    counts = jnp.stack([d["n_no"], d["n_yes"], d["n_defer"]], axis=1)
    return jnp.sum(counts * jax.nn.log_softmax(v, axis=-1), axis=-1)


def mnl_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Belief-coherence MNL on decisions counted per distinct belief
    (:func:`cogtestbed.inference.belief_models.mnl_counts_kernel`):
    Σ_a n_a·log softmax(0, m_Y + b_Y(p − ½), m_D + b_D(p − ½))[a].  Columns (m_Y, b_Y, m_D, b_D)."""
    import jax.numpy as jnp

    th = theta[d["subject"]]
    x = d["p"] - 0.5
    v = jnp.stack([jnp.zeros_like(x), th[:, 0] + th[:, 1] * x, th[:, 2] + th[:, 3] * x], axis=1)
    return _counted_log_softmax3(v, d)


def loss_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Belief-coherence loss-form decider on decisions counted per distinct belief
    (:func:`cogtestbed.inference.belief_models.loss_counts_kernel`):
    V = (−s(1 − c_FP)w, −s·c_FP(1 − w), −s·c_D), w the Tversky–Kahneman weight of p (clipped into
    [1e-9, 1 − 1e-9]) with γ, from the same inputs as the package's kernel since 28 Nov 2026: log q and
    log(1 − q), every power exp(γ log q).  Columns (c_FP, c_D, s, γ)."""
    import jax.numpy as jnp

    th = theta[d["subject"]]
    c_fp, c_d, s, gamma = th[:, 0], th[:, 1], th[:, 2], th[:, 3]
    log_q, log_1q = d["log_q"], d["log_1q"]
    a, b = jnp.exp(gamma * log_q), jnp.exp(gamma * log_1q)
    w = jnp.exp(gamma * log_q - jnp.log(a + b) / gamma)
    v = jnp.stack([-s * (1.0 - c_fp) * w, -s * c_fp * (1.0 - w), -s * c_d], axis=1)
    return _counted_log_softmax3(v, d)


def _noisy_or_tasks(b: Any, m1: Any, m2: Any, q: Any) -> Any:
    """The 11 noisy-OR task probabilities (``noisy_or_tasks_pt`` of tests/test_causal_hierarchical.py)."""
    import jax.numpy as jnp

    e00, e01, e10 = b, 1 - (1 - b) * (1 - m2), 1 - (1 - b) * (1 - m1)
    e11 = 1 - (1 - b) * (1 - m1) * (1 - m2)
    p11, p10, p01, p00 = q * q, q * (1 - q), (1 - q) * q, (1 - q) * (1 - q)
    z = e11 * p11 + e10 * p10 + e01 * p01 + e00 * p00
    return jnp.stack([
        e00, e01, e11, q, q,
        e11 * p11 / (e11 * p11 + e01 * p01),
        (e11 * p11 + e10 * p10) / z,
        e10 * p10 / (e10 * p10 + e00 * p00),
        (1 - e11) * p11 / ((1 - e11) * p11 + (1 - e01) * p01),
        ((1 - e11) * p11 + (1 - e10) * p10) / (1 - z),
        (1 - e10) * p10 / ((1 - e10) * p10 + (1 - e00) * p00)], axis=-1)


def zoib_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Collider CBN, zero-one-inflated Beta (:func:`cogtestbed.inference.causal_hierarchical.zoib_pointwise_kernel`):
    columns (b, m1, m2, p_c, κ, π0, π1).  y = 0: log π0; y = 1: log π1; else log(1 − π0 − π1) + the
    Beta(μκ, (1 − μ)κ) log density, μ = CBN_task clipped to [1e-6, 1 − 1e-6], y within 1e-6 of an
    endpoint censored (the leading term of the incomplete beta function)."""
    import jax.numpy as jnp
    from jax.scipy.special import gammaln

    th = theta[d["subject"]]
    table = _noisy_or_tasks(th[:, 0], th[:, 1], th[:, 2], th[:, 3])
    mu = jnp.clip(jnp.take_along_axis(table, d["task"][:, None], axis=1)[:, 0], ZOIB_MU_CLIP, 1.0 - ZOIB_MU_CLIP)
    kappa, pi0, pi1 = th[:, 4], th[:, 5], th[:, 6]
    a, bb = mu * kappa, (1.0 - mu) * kappa
    base = jnp.log(1.0 - pi0 - pi1) + gammaln(kappa) - gammaln(a) - gammaln(bb)
    y = d["y"]
    log_c, log_1mc = np.log(ZOIB_CENSOR), np.log1p(-ZOIB_CENSOR)
    inner = jnp.clip(y, ZOIB_CENSOR, 1.0 - ZOIB_CENSOR)
    beta = base + (a - 1.0) * jnp.log(inner) + (bb - 1.0) * jnp.log1p(-inner)
    right = base + bb * log_c + a * log_1mc - jnp.log(bb)
    left = base + a * log_c + bb * log_1mc - jnp.log(a)
    cont = jnp.where(y >= 1.0 - ZOIB_CENSOR, right, jnp.where(y <= ZOIB_CENSOR, left, beta))
    return jnp.where(y <= 0.0, jnp.log(pi0), jnp.where(y >= 1.0, jnp.log(pi1), cont))


def dissonant_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Revealed-belief dissonant softmax (:func:`cogtestbed.inference.revealed_model.dissonant_pointwise_kernel`):
    ``theta`` rows are (subject, scenario) cells, columns (τ, β_first, β_label, β_anchor, β_round,
    β_mid, κ, θ, β_pos, ν).  η over an item's k outcomes (padded rows masked); exact answers: the
    Dirichlet log density of x at concentration c·q̃ (c = 1/max(ν, 1e-6), q̃ = (1 − kε)q + ε);
    sampled and generated answers: Σ N·x·log q over the outcomes drawn."""
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import gammaln

    w = theta[d["subject"]]
    k = d["k"]
    width = d["x"].shape[1]
    real = jnp.arange(width)[None, :] < k[:, None]
    feat = d["feat"]
    revb = w[:, 0:1] * d["base"] + jnp.einsum("rf,rfj->rj", w[:, 1:6], feat[:, :5]) - w[:, 6:7] * feat[:, 5]
    cols = jnp.arange(width)[None, :]
    staa = w[:, 7:8] * (cols == d["correct"][:, None]) + w[:, 8:9] * (cols == 0)
    eta = jnp.where(real, jnp.where(d["channel"][:, None] == 0, revb, staa), -jnp.inf)
    lq = jnp.where(real, jax.nn.log_softmax(eta, axis=1), 0.0)
    c = 1.0 / jnp.maximum(w[:, 9], REVEALED_NOISE_FLOOR)
    qs = (1.0 - k * REVEALED_EPS)[:, None] * jnp.exp(lq) + REVEALED_EPS
    cq = c[:, None] * qs
    lx = d["lx"]
    dirichlet = gammaln(c) + jnp.where(real, (cq - 1.0) * lx - gammaln(cq), 0.0).sum(1)
    counts = d["x"] * d["nsamp"][:, None]
    multinomial = jnp.where(real & (counts > 0.0), counts * lq, 0.0).sum(1)
    return jnp.where(d["method"] == 0, dirichlet, multinomial)


#: name -> (layout, likelihood), merged into ``numpyro_models.LIKELIHOODS``.
LIKELIHOODS = {
    "twostep": ("padded", twostep_loglik),
    "kalman-chooser": ("padded", kalman_chooser_loglik),
    "mnl": ("flat", mnl_loglik),
    "loss": ("flat", loss_loglik),
    "zoib": ("flat", zoib_loglik),
    "dissonant": ("flat", dissonant_loglik),
}


def zoib_globals(n_rows: int) -> list[Any]:
    """The zero-one-inflated Beta's population sites, as :func:`cogtestbed.inference.causal_hierarchical.build_model`
    declares them: κ ~ LogNormal(2, 1) and (π0, π1, π_cont) ~ Dirichlet(1, 1, 8), the simplex written
    with PyMC's own transform (``pi_simplex__``: the first K − 1 log values minus their mean, the
    log Jacobian of ``SimplexTransform``), so the unconstrained spaces of the two models are one.
    Returns the kernel's columns κ, π0, π1 (one row each)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import logsumexp
    from numpyro.distributions import constraints

    kappa = numpyro.sample("kappa", dist.LogNormal(2.0, 1.0))
    raw = numpyro.sample("pi_simplex__", dist.ImproperUniform(constraints.real_vector, (), event_shape=(2,)))
    full = jnp.concatenate([raw, -raw.sum(keepdims=True)])
    pi = jnp.exp(full - logsumexp(full))
    n = 3.0
    total = raw.sum()
    log_jac = jnp.log(n) + n * total - n * logsumexp(jnp.concatenate([raw + total, jnp.zeros(1)]))
    numpyro.factor("pi_simplex", dist.Dirichlet(jnp.array([1.0, 1.0, 8.0])).log_prob(pi) + log_jac)
    ones = jnp.ones(n_rows)
    return [kappa * ones, pi[0] * ones, pi[1] * ones]


#: name -> function declaring a likelihood's population-level sites outside the subject parameters and
#: returning the kernel columns they fill (appended after ``columns``).
GLOBALS = {"zoib": zoib_globals}

"""NumPyro versions of cogtestbed's hierarchical models, written for
``benchmarks/bench_hierarchical_vs_numpyro.py`` (issue 54 item 1).

Runs in its own environment, never the package's (``make bench-numpyro`` builds ``.venv-numpyro`` with
``numpyro==0.22.0 jax==0.10.2 numpy``); it imports no cogtestbed code.  The benchmark writes a spec
(``.npz``: the pooled observation arrays of every data set, the parameters' priors and transforms, the
kernel's columns, the sampler settings, the check points) and calls::

    .venv-numpyro/bin/python benchmarks/numpyro_models.py SPEC.npz OUT.npz

(``--check-only``: the checks alone) which prints one JSON line (CPU and wall seconds of each fit, the
log-likelihood and joint log density at the check points, ``grad_us``: CPU µs of one jitted log density
and gradient evaluation) and writes the draws of every free variable
and the divergences and leapfrog steps of every draw to ``OUT.npz``.

The prior is :func:`cogtestbed.inference.hierarchical.subject_parameters`' exactly: per parameter
``{p}_mu ~ Normal(prior_mean, prior_sd)``, ``{p}_sigma ~ HalfNormal(sd_scale · prior_sd)``, non-centred
``{p}_z ~ Normal(0, 1)`` per subject (``{p}_u ~ Normal(mu, sigma)`` for a centred parameter), the subject
value ``constrain(mu + sigma · z)`` (logit / log / identity).  The likelihood of each model is a JAX
transcription of the package's numba kernel (the same clipping, the same resets per subject), checked by
the benchmark against the kernel at fixed parameters.  NUTS with NumPyro's defaults (diagonal mass
matrix, dense off), the package's target acceptance, chains run one after another (``sequential``:
CPU time is what is compared), float64 as the package.  All data sets have one shape, so the model is
compiled once (``jit_model_args=True``) and the first fit's time includes that compilation.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpyro_families  # the benchmarks folder is this script's, so on sys.path


# ----------------------------------------------------------------------------- data layout
def padded(obs_subject: np.ndarray, arrays: dict[str, np.ndarray], n_subjects: int) -> dict[str, np.ndarray]:
    """The pooled arrays (sorted by subject) as (n_subjects, T_max) blocks and a ``mask`` of real
    observations, for likelihoods that run a recursion over each subject's trials."""
    counts = np.bincount(obs_subject, minlength=n_subjects)
    t_max = int(counts.max())
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos = np.arange(len(obs_subject)) - starts[obs_subject]
    out = {}
    for name, arr in arrays.items():
        block = np.zeros((n_subjects, t_max) + arr.shape[1:], dtype=arr.dtype)
        block[obs_subject, pos] = arr
        out[name] = block
    mask = np.zeros((n_subjects, t_max), dtype=bool)
    mask[obs_subject, pos] = True
    out["mask"] = mask
    return out


# ----------------------------------------------------------------------------- likelihoods
def rwpm_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """RW± (:func:`cogtestbed.inference.instrumental.rwpm_pointwise_kernel`): values start at 0.5 per
    casino, log P(choice) = log σ(β·(V_c − V_o)) clipped to [log 1e-5, log(1 − 1e-5)], the chosen value
    moves by α⁺·δ if δ > 0 else α⁻·δ.  ``theta`` columns (α⁺, α⁻, β); RW passes (α, α, β).

    A ``lax.scan`` over trials, vectorised over subjects; the (casino, arm) cells are one-hot rows, so a
    step is dense arithmetic (measured 1.6 ms per value-and-gradient at 50 × 96 on the loaded machine,
    against 1.8 ms with scatter/gather indexing and no faster with ``unroll`` 8 or 32)."""
    import jax
    import jax.numpy as jnp

    n_subj, cells = theta.shape[0], 2 * int(static["n_casinos"])
    ap, an, beta = theta[:, 0], theta[:, 1], theta[:, 2]
    lo, hi = np.log(1e-5), np.log(1.0 - 1e-5)
    chosen = jax.nn.one_hot((d["casino"] * 2 + d["action"]).T, cells)
    other = jax.nn.one_hot((d["casino"] * 2 + 1 - d["action"]).T, cells)

    def step(values: Any, xs: Any) -> Any:
        h, h_other, r, m = xs
        vc, vo = (values * h).sum(-1), (values * h_other).sum(-1)
        ll = jnp.clip(jax.nn.log_sigmoid(beta * (vc - vo)), lo, hi)
        delta = r - vc
        change = jnp.where(m, jnp.where(delta > 0.0, ap, an) * delta, 0.0)
        return values + h * change[:, None], jnp.where(m, ll, 0.0)

    v0 = jnp.full((n_subj, cells), 0.5)
    _, ll = jax.lax.scan(step, v0, (chosen, other, d["reward"].T, d["mask"].T))
    return ll.T


def hyperbolic_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Hyperbolic discounting (:func:`cogtestbed.inference.discounting.hyperbolic_pointwise_kernel`):
    log σ(±(V1 − V2)/(τ·S)), V = A/(1 + k·D), clipped below at log 1e-10.  Columns (k, τ)."""
    import jax
    import jax.numpy as jnp

    th = theta[d["subject"]]
    k, tau = th[:, 0], th[:, 1]
    q = d["questions"]
    x = (q[:, 0] / (1.0 + k * q[:, 1]) - q[:, 2] / (1.0 + k * q[:, 3])) / q[:, 4]
    z = x / tau
    u = jnp.where(d["choice"] == 0, z, -z)
    return jnp.maximum(jax.nn.log_sigmoid(u), np.log(1e-10))


def prospect_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Prospect theory (:func:`cogtestbed.inference.risky.pt_pointwise_kernel`): u(o) = A·(o/A)^α for
    gains, −λ·A·(−o/A)^α for losses (A = 20), V = mean of a lottery's two values, log σ(±θ·(V₁ − V₂)).
    Columns (λ, α, θ); expected value passes (1, 1, θ)."""
    import jax
    import jax.numpy as jnp

    anchor = 20.0
    th = theta[d["subject"]]
    lam, alpha, sens = th[:, 0:1], th[:, 1:2], th[:, 2]
    o = d["outcomes"]
    r = jnp.abs(o) / anchor
    m = anchor * jnp.where(r > 0.0, r, 1.0) ** alpha
    u = jnp.where(o > 0.0, m, jnp.where(o < 0.0, -lam * m, 0.0))
    diff = 0.5 * (u[:, 0] + u[:, 1]) - 0.5 * (u[:, 2] + u[:, 3])
    sign = jnp.where(d["choice"] == 0, 1.0, -1.0)
    return jax.nn.log_sigmoid(sign * sens * diff)


def gaussian_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Generalised Bayes (:func:`cogtestbed.inference.probabilistic.gaussian_pointwise_kernel`):
    log N(y; β0 + β1·x1 + β2·x2, σ²).  Columns (β1, β2, β0, σ)."""
    import jax.numpy as jnp

    th = theta[d["subject"]]
    u = (d["y"] - (th[:, 2] + th[:, 0] * d["x1"] + th[:, 1] * d["x2"])) / th[:, 3]
    return -jnp.log(th[:, 3]) - 0.5 * np.log(2.0 * np.pi) - 0.5 * u * u


def _gaussian(v: Any, mean: Any, sd: Any, log_w: Any, log_sd: Any = None) -> Any:
    """log N(v; mean, sd²) − log W per observation (``log_sd``: log sd where the caller has it, else taken here)."""
    import jax.numpy as jnp

    r = (v - mean) / sd
    return -0.5 * np.log(2.0 * np.pi) - (jnp.log(sd) if log_sd is None else log_sd) - 0.5 * r * r - log_w


def linear_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Linear magnitude observer (:func:`cogtestbed.inference.magnitude.linear_pointwise`):
    v ~ N(w·u + b, σ²), minus log W.  Columns (w, b, σ)."""
    import jax.numpy as jnp

    th = theta[d["subject"]]
    # log σ once a subject, as the package's kernel takes it since 28 Nov 2026
    log_sd = jnp.log(theta[:, 2])[d["subject"]]
    return _gaussian(d["v"], th[:, 0] * d["u"] + th[:, 1], th[:, 2], d["log_w"], log_sd)


def static_bayes_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Static-Bayes magnitude observer (:func:`cogtestbed.inference.magnitude_fits.static_pointwise`):
    v ~ N((1 − w)·u + w·μ_p, σ²), minus log W.  Columns (w_prior, μ_p, σ)."""
    th = theta[d["subject"]]
    w = th[:, 0]
    return _gaussian(d["v"], (1.0 - w) * d["u"] + w * th[:, 1], th[:, 2], d["log_w"])


def kalman_magnitude_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Kalman magnitude observer (:func:`cogtestbed.inference.magnitude.kalman_pointwise`): the filter
    (μ = 0.5, P = 1 at a subject's and a session's first trial; P⁻ = P + q, K = P⁻/(P⁻ + 1)) runs over
    every trial; a valid answer scores N(v; μ, σ²) − log W, μ updated on that trial's u.
    Columns (q/r, σ)."""
    import jax
    import jax.numpy as jnp

    q, sd = theta[:, 0], theta[:, 1]
    n_subj = theta.shape[0]

    def step(state: Any, xs: Any) -> Any:
        mu, p = state
        u, v, valid, log_w, first, m = xs
        mu = jnp.where(first, 0.5, mu)
        p = jnp.where(first, 1.0, p)
        pm = p + q
        k = pm / (pm + 1.0)
        mu = mu + k * (u - mu)
        p = (1.0 - k) * pm
        ll = _gaussian(v, mu, sd, log_w)
        return (mu, p), jnp.where(m & valid, ll, 0.0)

    first = d["first"].at[:, 0].set(True)
    xs = tuple(x.T for x in (d["u"], d["v"], d["valid"], d["log_w"], first, d["mask"]))
    _, ll = jax.lax.scan(step, (jnp.full(n_subj, 0.5), jnp.ones(n_subj)), xs)
    return ll.T


def bart_target_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """BART target model (:func:`cogtestbed.inference.bart.target_pointwise_kernel`): a discretised
    logistic target T (mean μ of the balloon's type, scale s); a kept balloon of b pumps scores
    log P(T = b), a popped one log P(T ≥ b), clipped below at log 1e-12.  Columns (μ_128, μ_32, μ_8, s)."""
    import jax
    import jax.numpy as jnp

    th = theta[d["subject"]]
    mu = jnp.take_along_axis(th[:, :3], d["type_idx"][:, None], axis=1)[:, 0]
    s = th[:, 3]
    b = d["pumps"].astype(th.dtype)
    hi, lo = (b + 0.5 - mu) / s, (b - 0.5 - mu) / s
    kept = jnp.where(d["pumps"] == 0, jax.nn.log_sigmoid(hi),
                     jax.nn.log_sigmoid(hi) + jax.nn.log_sigmoid(-lo) + jnp.log1p(-jnp.exp(lo - hi)))
    lp = jnp.where(d["exploded"], jax.nn.log_sigmoid(-lo), kept)
    return jnp.maximum(lp, np.log(1e-12))


def info_bonus_loglik(theta: Any, d: dict[str, Any], static: dict[str, Any]) -> Any:
    """Horizon task information bonus (:func:`cogtestbed.inference.horizon.bonus_pointwise_kernel`):
    log σ(±(Δm + A_h·ΔI + b)/T_h), h the game's horizon.  Columns (A_1, A_6, T_1, T_6, b)."""
    import jax
    import jax.numpy as jnp

    th = theta[d["subject"]]
    h6 = d["h6"]
    a = jnp.where(h6, th[:, 1], th[:, 0])
    t = jnp.where(h6, th[:, 3], th[:, 2])
    x = (d["dm"] + a * d["di"] + th[:, 4]) / t
    return jax.nn.log_sigmoid(jnp.where(d["y"] == 1, x, -x))


#: Likelihood of each benchmarked model: (data layout, function of (theta, data, static) -> log-likelihood
#: array whose sum is the model's; ``static``: the spec's constants, such as sizes).  ``padded``:
#: (n_subjects, T) blocks of :func:`padded`; ``flat``: the pooled arrays with ``subject``, the
#: subject index of every observation.
LIKELIHOODS: dict[str, tuple[str, Callable[[Any, dict[str, Any], dict[str, Any]], Any]]] = {
    "rw-pm": ("padded", rwpm_loglik),
    "hyperbolic": ("flat", hyperbolic_loglik),
    "prospect-theory": ("flat", prospect_loglik),
    "generalised-bayes": ("flat", gaussian_loglik),
    "linear": ("flat", linear_loglik),
    "static-bayes": ("flat", static_bayes_loglik),
    "kalman-magnitude": ("padded", kalman_magnitude_loglik),
    "bart-target": ("flat", bart_target_loglik),
    "info-bonus": ("flat", info_bonus_loglik),
}
LIKELIHOODS.update(numpyro_families.LIKELIHOODS)


# ----------------------------------------------------------------------------- model
def constrain(p: dict[str, Any], u: Any) -> Any:
    """:func:`cogtestbed.inference.hierarchical.constrain` in JAX."""
    import jax
    import jax.numpy as jnp

    if p["transform"] == "logit":
        return p["lower"] + (p["upper"] - p["lower"]) * jax.nn.sigmoid(u)
    if p["transform"] == "log":
        return p["lower"] + jnp.exp(u)
    return u


def theta_matrix(natural: dict[str, Any], columns: list[Any], n_subjects: int) -> Any:
    """The kernel's parameter matrix (n_subjects, k): a column per ``kernel_columns`` entry, a
    parameter's subject values or a constant."""
    import jax.numpy as jnp

    return jnp.stack([natural[c] if isinstance(c, str) else jnp.full((n_subjects,), float(c)) for c in columns],
                     axis=1)


def scenario_columns(natural: dict[str, Any], meta: dict[str, Any], n_subjects: int) -> dict[str, Any]:
    """The revealed-belief model's per-(subject, scenario) values
    (:func:`cogtestbed.inference.revealed_hierarchical.dissonant_pymc_model`): every parameter repeated
    over the scenarios, a pooled bias plus ``{p}_scenario_sd · {p}_scenario_z[s, c]`` (non-centred,
    ``{p}_scenario_sd ~ HalfNormal(scale)``) in the scenarios that carry its feature; rows are the
    cells ``subject · n_scenarios + scenario``."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    n_scen, pooled = meta["n_scenarios"], meta["scenario_pooling"]
    out = {}
    for name, value in natural.items():
        cells = jnp.repeat(value[:, None], n_scen, axis=1)
        if name in pooled:
            sd = numpyro.sample(f"{name}_scenario_sd", dist.HalfNormal(meta["scenario_sd_scale"]))
            z = numpyro.sample(f"{name}_scenario_z", dist.Normal(0.0, 1.0).expand((n_subjects, len(pooled[name]))))
            cells = cells.at[:, jnp.asarray(pooled[name])].add(sd * z)
        out[name] = cells.reshape(n_subjects * n_scen)
    return out


def make_model(meta: dict[str, Any], centred_names: Sequence[str] | None = None) -> Callable[..., None]:
    """The hierarchical NumPyro model of ``meta`` (the benchmark's spec), sampling ``centred_names`` centred (default:
    ``meta["centred"]``, data set 0's, as the package's model of that data set does)."""
    import numpyro
    import numpyro.distributions as dist

    params, sd_scale = meta["parameters"], meta["sd_scale"]
    centred = set(meta["centred"] if centred_names is None else centred_names)
    _, loglik = LIKELIHOODS[meta["likelihood"]]
    n_subjects, static = meta["n_subjects"], meta.get("static", {})
    extra_columns = numpyro_families.GLOBALS.get(meta["likelihood"])

    def model(data: dict[str, Any]) -> None:
        import jax.numpy as jnp

        natural = {}
        for p in params:
            name = p["name"]
            mu = numpyro.sample(f"{name}_mu", dist.Normal(p["prior_mean"], p["prior_sd"]))
            sigma = numpyro.sample(f"{name}_sigma", dist.HalfNormal(sd_scale * p["prior_sd"]))
            with numpyro.plate("subject", n_subjects):
                if name in centred:
                    u = numpyro.sample(f"{name}_u", dist.Normal(mu, sigma))
                else:
                    u = mu + sigma * numpyro.sample(f"{name}_z", dist.Normal(0.0, 1.0))
            natural[name] = constrain(p, u)
        rows = n_subjects
        if meta.get("scenario_pooling") is not None:
            natural = scenario_columns(natural, meta, n_subjects)
            rows = n_subjects * meta["n_scenarios"]
        theta = theta_matrix(natural, meta["columns"], rows)
        if extra_columns is not None:
            theta = jnp.concatenate([theta, jnp.stack(extra_columns(rows), axis=1)], axis=1)
        numpyro.factor("loglik", loglik(theta, data, static).sum())

    return model


def data_of(spec: Any, meta: dict[str, Any], rep: int) -> dict[str, Any]:
    """Data set ``rep`` of the spec in the likelihood's layout."""
    import jax.numpy as jnp

    layout, _ = LIKELIHOODS[meta["likelihood"]]
    idx = spec[f"r{rep}_obs_subject"]
    arrays = {f: spec[f"r{rep}_{f}"] for f in meta["fields"]}
    out: dict[str, Any] = padded(idx, arrays, meta["n_subjects"]) if layout == "padded" else {**arrays, "subject": idx}
    return {k: jnp.asarray(v) for k, v in out.items()}


# ----------------------------------------------------------------------------- checks and fits
def checks(spec: Any, meta: dict[str, Any], model: Callable[..., None]) -> dict[str, Any]:
    """Log-likelihood at the check matrices and the joint log density (Jacobians included, on the
    unconstrained scale: log σ for the SDs) at the check points, on data set 0."""
    import jax.numpy as jnp
    from numpyro.infer.util import potential_energy

    data = data_of(spec, meta, 0)
    _, loglik = LIKELIHOODS[meta["likelihood"]]
    ll = [float(loglik(jnp.asarray(th), data, meta.get("static", {})).sum()) for th in spec["check_theta"]]
    logp = []
    for point in meta["check_points"]:
        unconstrained = {k.removesuffix("_log__"): jnp.asarray(v) for k, v in point.items()}
        logp.append(-float(potential_energy(model, (data,), {}, unconstrained)))
    return {"check_loglik": ll, "check_logp": logp}


def grad_cost(spec: Any, meta: dict[str, Any], model: Callable[..., None], repeats: int = 300) -> float:
    """CPU µs of one log density and gradient evaluation (jitted, on data set 0, after a warm call)."""
    import jax
    from numpyro.infer.util import initialize_model

    info = initialize_model(jax.random.PRNGKey(0), model, model_args=(data_of(spec, meta, 0),))
    value_and_grad = jax.jit(jax.value_and_grad(info.potential_fn))
    x = info.param_info.z
    jax.block_until_ready(value_and_grad(x))
    start = time.process_time()
    for _ in range(repeats):
        jax.block_until_ready(value_and_grad(x))
    return (time.process_time() - start) / repeats * 1e6


def run(spec_path: str, out_path: str, fit: bool = True) -> dict[str, Any]:
    import jax
    import numpyro
    from numpyro.infer import MCMC, NUTS

    numpyro.enable_x64()
    spec = np.load(spec_path, allow_pickle=False)
    meta = json.loads(str(spec["meta"]))
    model = make_model(meta)
    result: dict[str, Any] = {"numpyro": numpyro.__version__, "jax": jax.__version__, **checks(spec, meta, model)}
    if not fit:
        return {**result, "grad_us": grad_cost(spec, meta, model)}
    samplers: dict[tuple[str, ...], Any] = {}  # one per parameterisation, as the package keeps one compiled model each
    draws: dict[str, np.ndarray] = {}
    fits = []
    for rep, seed in enumerate(meta["seeds"]):
        centred = tuple(meta.get("centred_by_rep", [meta["centred"]] * len(meta["seeds"]))[rep])
        if centred not in samplers:
            kernel = NUTS(make_model(meta, centred), target_accept_prob=meta["target_accept"])
            samplers[centred] = MCMC(kernel, num_warmup=meta["tune"], num_samples=meta["draws"],
                                     num_chains=meta["chains"], chain_method="sequential", progress_bar=False,
                                     jit_model_args=True)
        mcmc = samplers[centred]
        data = data_of(spec, meta, rep)
        cpu, wall = time.process_time(), time.perf_counter()
        # progress, for a run stopped by a CPU limit: the process CPU when this data set's fit began
        print(json.dumps({"started": rep, "process_cpu_s": cpu, "numpyro": numpyro.__version__,
                          "jax": jax.__version__}), flush=True)
        mcmc.run(jax.random.PRNGKey(seed), data, extra_fields=("diverging", "num_steps"))
        samples = mcmc.get_samples(group_by_chain=True)
        jax.block_until_ready(samples)
        fits.append({"rep": rep, "cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall})
        for name, value in samples.items():
            draws[f"r{rep}_{name}"] = np.asarray(value)
        extra = mcmc.get_extra_fields(group_by_chain=True)
        draws[f"r{rep}_diverging"] = np.asarray(extra["diverging"])
        draws[f"r{rep}_num_steps"] = np.asarray(extra["num_steps"])
        np.savez(out_path, **draws)  # after every data set: the fits that finished survive a CPU limit
        print(json.dumps({"finished": fits[-1]}), flush=True)
    return {**result, "fits": fits}


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[2:] not in ([], ["--check-only"]):
        print("usage: numpyro_models.py SPEC.npz OUT.npz [--check-only]", file=sys.stderr)
        return 2
    start = time.process_time()
    result = run(argv[0], argv[1], fit=argv[2:] != ["--check-only"])
    result["process_cpu_s"] = time.process_time() - start
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The sampling noise floor of an N-sample estimate of a k-outcome distribution (revealed belief,
Yamin et al.: the floor a sampled estimate cannot beat).  The environment reports it beside a
sampled run (:meth:`~cogtestbed.environments.revealed.RevealedBeliefEnv.sampling_note`) and the
metrics (:mod:`cogtestbed.inference.revealed`) and studies read it from here."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from cogtestbed.errors import InputError

#: Floor of both distributions in the symmetric KL (then renormalised); see module docstring.
SYMKL_EPS = 1e-9
#: Monte-Carlo repetitions of the sampling noise floor reported beside sampled estimates.
FLOOR_REPS = 4000


def noise_floor(k: int, n: int, reps: int = FLOOR_REPS, seed: int = 0) -> dict[str, float]:
    """Expected metrics of an N-sample estimate of a uniform k-outcome distribution (the paper's
    sampling noise floor): mean and 95th percentile of Chebyshev, mean L1 and symmetric KL (computed
    once per arguments in a process: every dry run of a sampled design states it)."""
    return dict(_noise_floor(int(k), int(n), int(reps), int(seed)))


@functools.lru_cache(maxsize=256)
def _noise_floor(k: int, n: int, reps: int, seed: int) -> tuple[tuple[str, float], ...]:
    rng = np.random.default_rng([seed, k, n])
    q = np.full(k, 1.0 / k)
    counts = rng.multinomial(n, q, size=reps)
    p = counts / n
    cheb = np.max(np.abs(p - q), axis=1)
    pe = np.maximum(p, SYMKL_EPS)
    pe = pe / pe.sum(axis=1, keepdims=True)
    kl = np.sum((pe - q) * (np.log(pe) - np.log(q)), axis=1)
    return (("chebyshev_mean", float(cheb.mean())), ("chebyshev_p95", float(np.quantile(cheb, 0.95))),
            ("l1_mean", float(np.abs(p - q).sum(axis=1).mean())), ("symkl_mean", float(kl.mean())))


#: Growth factor of the candidate N while it still misses the floor target (:func:`samples_for_floor`).
_FLOOR_STEP = 1.05


def samples_for_floor(k: int, n: int, target: float) -> int:
    """Smallest N (to within :data:`_FLOOR_STEP`) at which :func:`noise_floor`'s E[Chebyshev] of a
    uniform k-outcome distribution is at most ``target``: the CLT scaling E ∝ N^(-1/2) from the
    floor at ``n``, then grown until the simulated floor meets the target."""
    if target <= 0:
        raise InputError(f"a noise-floor target must be positive, got {target}")
    floor = noise_floor(k, n)["chebyshev_mean"]
    if floor <= target:
        return n
    m = math.ceil(n * (floor / target) ** 2)
    while noise_floor(k, m)["chebyshev_mean"] > target:
        m = math.ceil(m * _FLOOR_STEP)
    return m


def sampling_floor_note(ks: list[int], n: int, target: float) -> tuple[str, dict[str, Any]]:
    """The warning of a run whose distributions are N-sample estimates: the sampling noise floor
    (:func:`noise_floor`: E[Chebyshev], E[L1], E[symKL] of a uniform k-outcome distribution,
    this project's addition, not the paper's) for every outcome-set size ``ks``, and the N that brings E[Chebyshev]
    below ``target`` for all of them.  Returns (one line, its figures unrounded)."""
    floors = {int(k): noise_floor(int(k), n) for k in sorted(set(ks))}
    need = {k: samples_for_floor(k, n, target) for k in floors}
    worst = max(need, key=lambda k: (need[k], floors[k]["chebyshev_mean"]))
    needed = need[worst]
    cells = "; ".join(f"k={k}: E[Chebyshev]={f['chebyshev_mean']:.3f} E[L1]={f['l1_mean']:.3f} "
                      f"E[symKL]={f['symkl_mean']:.3f}" for k, f in floors.items())
    advice = (f"E[Chebyshev] <= {target:g} for every k already" if needed <= n else
              f"N >= {needed} brings E[Chebyshev] <= {target:g} for every k (worst k={worst})")
    line = (f"sampled estimates: the backend cannot score, so every distribution is estimated from N={n} "
            f"sampled completions; sampling alone gives (uniform k-outcome floor) {cells}; {advice}")
    detail = {"floors": {str(k): f for k, f in floors.items()}, "target_chebyshev": target,
              "worst_k": worst, "n_for_target": needed}
    return line, detail

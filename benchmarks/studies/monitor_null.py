"""The one-LLM RW± optimism monitor's null over a nuisance region: type-I of the likelihood-ratio e-process
(:mod:`cogtestbed.planning.kinds.monitor.monitor_lr`) at every point of an α × β grid, with a look after every
subject up to 3× its cap, and its power / expected subjects under the plan's effect beside the fixed t-test's.

Roles and seeds (``SeedSequence([seed, 94, role, k])``): the *choosing* role fixes the mixture weights (the
plan's population under the effect), the cap (the smallest size with power ≥ the target on choosing studies)
and the fixed t-test's size (the smallest reaching the target on the choosing pool's per-subject MLEs); every
printed figure comes from *measuring* pools simulated afresh.  Studies are random orderings of one of 10
disjoint sub-pools of a pool simulated once per point (a random permutation of i.i.d. subjects is i.i.d.):
the MC SE is the larger of the binomial and the between-sub-pool one, and the upper bound the larger of
rate + 1.645 SE and Clopper–Pearson's.

Two nulls are measured: the declared one (every subject of the LLM at the same α⁺ = α⁻ = α and β, 12 points)
and the plan's own population with the effect removed (subjects scattered between them, sd_between on the
unconstrained scale), which the declared null does not cover.

``python benchmarks/studies/monitor_null.py [--studies 2000] [--choose-studies 500] [--level 0.05] [--seed 0]
[--quick]`` (about 50 CPU ms a null study of 3× the cap; the 12-point table at 2,000 studies ≈ 25 CPU min)
(``--quick``: 200 studies, 4 points, a reduced check).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from scipy import stats

from cogtestbed.planning.kinds.monitor.monitor_lr import (
    NUISANCE_BETA,
    crossings,
    nuisance_pool,
    null_model_of,
    null_region,
    prior_weights,
)
from cogtestbed.planning.kinds.monitor.monitor_pools import rate_and_se, upper_bound
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import declared_studies, spec_from_decl
from cogtestbed.studies.model_studies import power_parameters

BATCHES = 10
CHOOSE_LENGTH = 60
POWER = 0.8
TABLE_ALPHA = (0.1, 0.3, 0.7)


def seed_of(seed: int, role: int, k: int) -> int:
    return int(np.random.SeedSequence([seed, 94, role, k]).generate_state(1)[0] >> 1)


def question() -> Any:
    exp = get_experiment("instrumental-learning")
    decl = next(d for _, d in declared_studies(exp) if d.kind == "power" and d.parameter == "optimism_bias")
    return exp, spec_from_decl(exp, decl, reps=1)


def fixed_size(mle: np.ndarray, level: float, rng: np.random.Generator, reps: int = 2000) -> int:
    """The smallest n whose two-sided one-sample t-test of the MLE differences reaches :data:`POWER` on
    resampled studies of the pool ``mle``."""
    x = mle[np.isfinite(mle)]
    for n in range(3, x.size // 2):
        draws = np.stack([rng.permutation(x)[:n] for _ in range(reps)])
        if (stats.ttest_1samp(draws, 0.0, axis=1).pvalue < level).mean() >= POWER:
            return n
    return x.size // 2


def fixed_power(mle: np.ndarray, n: int, level: float, rng: np.random.Generator, reps: int) -> tuple[float, float]:
    sub = np.array_split(mle[np.isfinite(mle)], BATCHES)
    which = np.arange(reps) % BATCHES
    draws = np.stack([rng.permutation(sub[b])[:n] for b in which])
    return rate_and_se(stats.ttest_1samp(draws, 0.0, axis=1).pvalue < level, which)


def row(label: str, t: np.ndarray, which: np.ndarray, cap: int) -> str:
    capped = (t > 0) & (t <= cap)
    rate, se = rate_and_se(capped, which)
    anytime, any_se = rate_and_se(t > 0, which)
    up, up_any = upper_bound(rate, se, t.size), upper_bound(anytime, any_se, t.size)
    return f"  {label:<28} {rate:>8.4f} {up:>8.4f} {anytime:>10.4f} {up_any:>8.4f} {t.size:>7}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--level", type=float, default=0.05)
    ap.add_argument("--choose-studies", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    reps = 200 if a.quick else a.studies
    alphas, betas = ((0.1, 0.7), (1.0, 30.0)) if a.quick else (TABLE_ALPHA, NUISANCE_BETA)
    start = time.process_time()
    exp, spec = question()
    model = exp.model(spec.models[0])
    null = exp.model(null_model_of(model.name, spec.effect))
    rng = np.random.default_rng(np.random.SeedSequence([a.seed, 94, 9]))
    # choosing: weights, cap, fixed size
    w = prior_weights(model, power_parameters(spec, model, 4000, np.random.default_rng(seed_of(a.seed, 0, 0))))
    c_alt, c_null, c_data, c_mle = nuisance_pool(spec, None, BATCHES * CHOOSE_LENGTH, seed_of(a.seed, 0, 1),
                                                 contrasts=True)
    t_c, _ = crossings(null, c_alt, c_null, c_data, w, a.level, min(reps, a.choose_studies), CHOOSE_LENGTH, rng,
                       BATCHES)
    by_n = np.array([((t_c > 0) & (t_c <= n)).mean() for n in range(1, CHOOSE_LENGTH + 1)])
    cap = int(np.flatnonzero(by_n >= POWER)[0] + 1) if (by_n >= POWER).any() else CHOOSE_LENGTH
    n_fix = fixed_size(c_mle, a.level, rng)
    length = 3 * cap
    # measuring: the effect
    m_alt, m_null, m_data, m_mle = nuisance_pool(spec, None, BATCHES * max(length, n_fix), seed_of(a.seed, 1, 0),
                                                 contrasts=True)
    t_e, w_e = crossings(null, m_alt, m_null, m_data, w, a.level, reps, cap, rng, BATCHES)
    pw, pw_se = rate_and_se(t_e > 0, w_e)
    e_n, e_se = rate_and_se(np.where(t_e > 0, t_e, cap), w_e)
    f_pw, f_se = fixed_power(m_mle, n_fix, a.level, rng, reps)
    region = null_region(exp, model.name, spec.effect)
    print(f"RW± optimism bias {spec.effect_size:g}, one LLM, {spec.trials[0] or 'design'} trials; likelihood-ratio "
          f"e-process, level {a.level}; declared null: every subject at one (α⁺ = α⁻ = α, β) in "
          + ", ".join(f"{k} ∈ [{lo:g}, {hi:g}]" for k, (lo, hi) in region.items()))
    print(f"under the effect ({reps} studies): monitor cap {cap}, power {pw:.3f}±{pw_se:.3f}, E[n] {e_n:.1f}"
          f"±{e_se:.1f}; fixed t-test n {n_fix} (chosen on the choosing pool), power {f_pw:.3f}±{f_se:.3f}; "
          f"cost of the monitor against the fixed design {100 * (e_n / n_fix - 1):+.1f}%")
    print(f"null rejections, looks after every subject; pools of {BATCHES} sub-pools × {length} subjects per "
          "point, studies = random orderings of one sub-pool:")
    print(f"  {'null':<28} {'to cap':>8} {'upper':>8} {'to 3×cap':>10} {'upper':>8} {'studies':>7}")
    k = 0
    for al in alphas:
        for be in betas:
            k += 1
            p_alt, p_null, p_data, _ = nuisance_pool(spec, None, BATCHES * length, seed_of(a.seed, 2, k),
                                                     {"alpha": al, "beta": be})
            t, which = crossings(null, p_alt, p_null, p_data, w, a.level, reps, length, rng, BATCHES)
            print(row(f"alpha {al:g}, beta {be:g}", t, which, cap), flush=True)
    h_alt, h_null, h_data, _ = nuisance_pool(spec.model_copy(update={"effect_size": 0.0}), None, BATCHES * length,
                                             seed_of(a.seed, 3, 0))
    t, which = crossings(null, h_alt, h_null, h_data, w, a.level, reps, length, rng, BATCHES)
    print(row("plan population, no effect*", t, which, cap))
    print("  * subjects scattered between them (outside the declared null: shown, not guaranteed)")
    print(f"CPU {time.process_time() - start:.0f} s")


if __name__ == "__main__":
    main()

"""The two-step one-LLM monitor's null beyond the plan's population: a probe of the composite-null treatment.

The two-step one-LLM monitor (hybrid ``w`` + 0.2) tests "the per-subject MLE of ``w`` less 0.5 has mean within
0 ± δ", ``δ`` its null mean's bias measured at the plan's simulated population only (no nuisance region is
declared for hybrid ``w``).  This probe measures that statistic's null mean for LLMs with ``w`` = 0.5 at the plan's
medians and at the 8 corners of a half-fraction (``persev``'s sign = the product of the others') over the
experiment's declared recovery ranges (alpha 0.2-0.8, beta 2-8, lam 0-1, persev -0.5-0.5), and the recorded
rule's (``monitor.jsonl``'s row: the Kelly bet, ``δ``, futility, cap) null rejection there: studies resampled
with replacement from each point's simulated subjects (the rate for an LLM whose subjects are that pool; the
pool's own mean error, its SE printed, dominates), within the design (to the cap) and at any look to 3× the cap.
Then what the full composite-null study (the treatment RW± got, ``monitor_composite.py``) would cost, from this
run's CPU seconds per simulated subject.

``python benchmarks/studies/monitor_twostep_null.py [--subjects 100] [--studies 2000] [--seed 0]
[--row benchmarks/studies/monitor.jsonl]`` (about 0.1 CPU s a simulated subject: 900 subjects ≈ 2 CPU min).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from cogtestbed.planning.kinds.monitor.eprocess import first_crossing, log_capital, tested_scale
from cogtestbed.planning.kinds.monitor.monitor_pools import upper_bound
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import declared_studies, spec_from_decl

QUESTION = "two-step power: hybrid w 0.2, one LLM"
#: The nuisance ranges probed: the experiment's declared recovery ranges of the hybrid model's other parameters.
RANGES = {"alpha": (0.2, 0.8), "beta": (2.0, 8.0), "lam": (0.0, 1.0), "persev": (-0.5, 0.5)}


def points() -> list[dict[str, float]]:
    """The plan's medians, then the 2^(4-1) half-fraction's corners (persev high where the others' signs multiply
    to +1)."""
    out = [{"alpha": 0.5, "beta": 5.0, "lam": 0.5, "persev": 0.0}]
    for signs in itertools.product((-1, 1), repeat=3):
        s = (*signs, int(np.prod(signs)))
        out.append({k: RANGES[k][0 if v < 0 else 1] for k, v in zip(RANGES, s, strict=True)})
    return out


def pool(spec: Any, point: dict[str, float], n: int, seed: int) -> np.ndarray:
    """``n`` simulated subjects' statistic (the per-subject MLE of ``w`` less its null value) at ``w`` = the null
    value and the other parameters at ``point``."""
    from cogtestbed.planning.kinds.sequential.seqsim import subject_contrasts
    from cogtestbed.studies.model_studies import one_sample_null
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_model

    exp = get_experiment(spec.experiment)
    model = exp.model(spec.models[0])
    null = one_sample_null(spec.model_copy(update={"effect_size": 0.0}), model)
    true = {"w": np.full(n, null), **{k: np.full(n, float(v)) for k, v in point.items()}}
    table = simulate_model(spec, exp, model.name, true, n, seed_of(np.random.SeedSequence(seed)),
                           design_for_trials(exp, spec.trials[0], spec.design), int(spec.runs[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return subject_contrasts(spec, model, table, n, null)


def rejections(x: np.ndarray, rule: dict[str, Any], reps: int, rng: np.random.Generator) -> tuple[float, float]:
    """The recorded rule's null rejection on ``reps`` studies resampled from ``x``: within the design (to the
    cap, futility stops included) and at any look to 3× the cap."""
    cap, (lo, hi) = int(rule["cap"]), rule["bounds"]
    x = x[np.isfinite(x)]
    studies = x[rng.integers(0, x.size, (reps, 3 * cap))]
    y, m, w = tested_scale(studies, lo, hi, rule["halfwidth"])
    log_k = log_capital(y, m, planned=rule["planned_bet"], halfwidth=w)
    t = first_crossing(log_k, rule["level"])
    fut = rule.get("futility")
    low = log_k <= math.log(fut) if fut else np.zeros(log_k.shape, bool)
    f = np.where(low.any(axis=-1), low.argmax(axis=-1) + 1, 0)
    design = (t > 0) & (t <= cap) & ((f == 0) | (t < f))
    return float(design.mean()), float((t > 0).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=100, help="simulated subjects per point")
    ap.add_argument("--studies", type=int, default=2000, help="studies resampled per point")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--row", default="benchmarks/studies/monitor.jsonl", help="the JSON-lines file with the rule")
    a = ap.parse_args()
    rows = [json.loads(x) for x in Path(a.row).read_text().splitlines() if x.strip()]
    rule = [r for r in rows if r["question"] == QUESTION][-1]
    exp = get_experiment("two-step")
    decl = next(d for _, d in declared_studies(exp) if d.kind == "power" and d.parameter == "w")
    spec = spec_from_decl(exp, decl, reps=1, groups=1)
    rng = np.random.default_rng(np.random.SeedSequence([a.seed, 94, 2]))
    print(f"{QUESTION}: recorded rule bet {rule['planned_bet']:.3f}, null 0 ± {rule['halfwidth']:.4f} (the plan's "
          f"population), futility K_t <= {rule['futility']}, cap {rule['cap']}; w = 0.5 at every point, "
          f"{a.subjects} subjects each, {a.studies} studies resampled per point")
    print(f"  {'alpha':>5} {'beta':>5} {'lam':>4} {'persev':>6} {'null mean':>10} {'SE':>7} {'SD':>6} "
          f"{'to cap':>7} {'upper':>7} {'any look':>9} {'upper':>7}")
    cpu, simulated, means = 0.0, 0, []
    for k, point in enumerate(points()):
        start = time.process_time()
        x = pool(spec, point, a.subjects, int(np.random.SeedSequence([a.seed, 94, 1, k]).generate_state(1)[0] >> 1))
        cpu, simulated = cpu + time.process_time() - start, simulated + a.subjects
        v = x[np.isfinite(x)]
        r, ra = rejections(v, rule, a.studies, rng)
        means.append((float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))))
        se_r, se_a = (math.sqrt(p * (1 - p) / a.studies) for p in (r, ra))
        print(f"  {point['alpha']:>5g} {point['beta']:>5g} {point['lam']:>4g} {point['persev']:>6g} "
              f"{v.mean():>+10.4f} {means[-1][1]:>7.4f} {v.std(ddof=1):>6.3f} {r:>7.4f} "
              f"{upper_bound(r, se_r, a.studies):>7.4f} {ra:>9.4f} {upper_bound(ra, se_a, a.studies):>7.4f}",
              flush=True)
    per = cpu / simulated
    lo, hi = min(m - 2 * s for m, s in means), max(m + 2 * s for m, s in means)
    print(f"null means over the {len(means)} points: {min(m for m, _ in means):+.4f} to "
          f"{max(m for m, _ in means):+.4f} (interval with 2 SE margins [{lo:+.4f}, {hi:+.4f}]; the plan's null "
          f"0 ± {rule['halfwidth']:.4f}); {per:.3f} CPU s a simulated subject ({cpu:.0f} s for {simulated})")
    for cap in (int(rule["cap"]), 2 * int(rule["cap"])):
        # monitor_composite.py's design: 16 choosing points x 200, a 2,000-subject choosing effect pool, a measuring
        # effect pool of 10 sub-pools x 2 x the cap, 17 fresh points (the 2^4 corners and the center) x 10 x 3 x cap
        units = 16 * 200 + 2000 + 10 * 2 * cap + 17 * 10 * 3 * cap
        print(f"the full composite-null study at a cap of {cap}: {units} simulated subjects, about "
              f"{units * per / 60:.0f} CPU min")


if __name__ == "__main__":
    main()

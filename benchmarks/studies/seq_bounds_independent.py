"""An independent re-simulation of a published sequential plan's bounds (issue 47's done-when).

``plan --looks auto`` on RW± optimism bias 0.2 publishes its looks and bounds in plan.json
(``sequential.design``) and its operating figures (fresh type-I with its upper bound, power, expected
subjects; the Gaussian robustness row).  This script checks them with none of the package's sequential
code (no ``seqplan``/``seqsim``/``seqpaths``/``seqauto``/``seqfair``): the package only generates the data
and fits each subject (``power_parameters`` → ``simulate_model`` → ``fit_mle``: the model the plan states
it rests on, searched as plan.json's ``statistic.fit`` records, or the plan's trained amortised estimate from
the same record, through ``seqamortised.statistic_of``: issue 71); the
t-test at each look, the Z of its p-value, the crossing rules and the Monte-Carlo loop
are written here, and the Gaussian check is a multivariate-normal rectangle probability (Genz's
algorithm, ``scipy.stats.multivariate_normal.cdf``), not a simulation.

* **Type-I**: null studies (the effect removed), every study simulated to the last look; a study rejects
  when, at some look k, ``Z_k ≥ efficacy_k`` or ``Z_k ≤ −efficacy_other_k`` (non-binding futility:
  futility ignored, as the plan measures it); one-sided 95 % Clopper–Pearson upper bound.
* **Power**: effect studies; the first look where Z crosses a bound decides (futility obeyed: a run stops
  at ``Z_k < futility_k``; the last look rejects at ``Z_K ≥ efficacy_K``).
* **Agreement**: the difference from the published figure with its 95 % interval (both MC errors).

``Z_k = sign(mean)·Φ⁻¹(1 − p/2)`` of the two-sided one-sample t-test of the first ``n_k`` subjects'
α̂⁺ − α̂⁻ (the statistic plan.json names).  Seeds ``SeedSequence([SEED, hypothesis, block])``, none of the
plan's.

``python benchmarks/studies/seq_bounds_independent.py [--plan DIR/plan.json] [--null 2000] [--effect 1000]
[--workers 1]`` (without ``--plan``: the bounds published in docs/results/plan.md, :data:`PUBLISHED`;
about 1.6 CPU ms a subject fitted, every study fitted to 35 subjects).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

#: The plan of docs/results/plan.md ("--looks auto since issue 47"): plan.json's ``study`` and
#: ``sequential.design`` bounds, and the figures it reports (``cogtestbed plan instrumental-learning --model
#: rw-pm --effect optimism_bias=0.2 --power 0.8 --level 0.05 --llm openai:gpt-4o-mini --looks auto --seed 0``).
PUBLISHED: dict[str, Any] = {
    "study": {"kind": "power", "experiment": "instrumental-learning", "trials": [96], "runs": [1], "design": {},
              "reps": 178, "seed": 0, "params": {}, "lapse": None, "models": ["rw-pm"], "method": "mle",
              "subjects": [26], "lapse_fit": None, "effect": "optimism_bias", "effect_size": 0.2, "base": {},
              "sd_between": 0.5, "level": 0.05, "fixed": {}},
    "sizes": [4, 7, 10, 14, 18, 21, 24, 28, 32, 35],
    "efficacy": [2.695808, 2.656601, 2.618253, 2.58861, 2.566701, 2.551049, 2.540445, 2.533963, 2.530898, 2.530702],
    "efficacy_other": [2.84512, 2.805913, 2.767565, 2.737922, 2.716013, 2.700361, 2.689757, 2.683275, 2.68021,
                       2.680014],
    "futility": [-0.847686, -0.29425, 0.135259, 0.491948, 0.800367, 1.074655, 1.324425, 1.557524, 1.78205, 2.530702],
    "direction": 1.0,
    "reported": {"type1": (27, 1000), "power": (806, 1000), "expected_null": 11.817, "expected_effect": 19.047,
                 "gaussian_type1": (7397, 200000)},
}
SEED, BLOCK = 20_251_125, 50


def from_plan(path: Path) -> dict[str, Any]:
    """The same fields from a plan.json written by ``plan --looks auto``."""
    d = json.loads(path.read_text())
    seq = d["sequential"]
    des = seq["design"]
    gauss = [r for r in seq["robustness"]["rows"] if r["alternative"].startswith("Gaussian")]
    return {"study": d["study"], "fit": (des.get("statistic") or {}).get("fit"), "sizes": des["sizes"],
            "efficacy": des["efficacy"],
            "efficacy_other": des["efficacy_other"] or des["efficacy"], "futility": des["futility"],
            "direction": des["direction"],
            "reported": {"type1": (seq["null"]["type1_check"]["hits"], seq["null"]["type1_check"]["sims"]),
                         "power": (round(seq["effect"]["rejection_rate"] * seq["effect"]["sims"]),
                                   seq["effect"]["sims"]),
                         "expected_null": seq["null"]["expected_units"],
                         "expected_effect": seq["effect"]["expected_units"],
                         "gaussian_type1": (gauss[0]["hits"], gauss[0]["sims"]) if gauss else None}}


def contrasts(study: dict[str, Any], effect: float, n_top: int, block: int, reps: int,
              fit: dict[str, Any] | None = None) -> np.ndarray:
    """``reps`` studies × ``n_top`` subjects' α̂⁺ − α̂⁻ (NaN where a subject has no fit), drawn and fitted by
    the package's data layer (module docstring); ``fit``: the per-subject search the plan recorded
    (``statistic.fit``: its start grid and BFGS starts, issue 71), else the model's own."""
    from cogtestbed.planning.kinds.sequential.seqamortised import AmortisedFit, statistic_of
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import power_parameters
    from cogtestbed.studies.study_data import design_for_trials, seed_of, simulate_model
    from cogtestbed.studies.study_kinds import load_study

    spec = load_study(json.dumps({**study, "effect_size": effect}))
    exp = get_experiment(spec.experiment)
    model = exp.model(spec.models[0])
    design = design_for_trials(exp, spec.trials[0], spec.design)
    n = reps * n_top
    param_seq, sim_seq = np.random.SeedSequence([SEED, int(effect != 0), block]).spawn(2)
    true = power_parameters(spec, model, n, np.random.default_rng(param_seq))
    table = simulate_model(spec, exp, model.name, true, n, seed_of(sim_seq), design, spec.runs[0])
    values = np.full(n, np.nan)
    how = statistic_of({"fit": fit})
    if isinstance(how, AmortisedFit):  # the plan's trained estimate, on the test's scale less its null already
        for key, v in how.estimates(model, table).items():
            values[int(str(key))] = v
        return values.reshape(reps, n_top)
    fits = how.fitter(model).fit_mle(table)
    values[fits["subject"].to_numpy(int)] = (fits["alpha_pos"] - fits["alpha_neg"]).to_numpy(float)
    return values.reshape(reps, n_top)


def look_z(values: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Z of the two-sided one-sample t-test on each study's first n_k values (NaNs left out; Z 0 without a p)."""
    out = np.zeros((values.shape[0], len(sizes)))
    for k, n in enumerate(sizes):
        for i, row in enumerate(values[:, :n]):
            v = row[np.isfinite(row)]
            sd = float(np.std(v, ddof=1)) if v.size > 1 else 0.0
            if sd == 0.0:
                continue
            t = float(np.mean(v)) / (sd / math.sqrt(v.size))
            p = 2 * float(stats.t.sf(abs(t), v.size - 1))
            out[i, k] = math.copysign(float(stats.norm.isf(p / 2)), t)
    return out


def outcomes(z: np.ndarray, plan: dict[str, Any]) -> dict[str, np.ndarray]:
    """Per study: rejected ignoring futility (either side), rejected toward the effect with futility obeyed,
    and the subjects at the stop (futility obeyed)."""
    eff, oth, fut = (np.asarray(plan[k]) for k in ("efficacy", "efficacy_other", "futility"))
    toward = z * plan["direction"]
    up, down = toward >= eff, toward <= -oth
    stop = up | down | (toward < fut)
    stop[:, -1] = True
    first = np.argmax(stop, axis=1)
    rows = np.arange(z.shape[0])
    return {"any": (up | down).any(axis=1), "power": up[rows, first],
            "units": np.asarray(plan["sizes"])[first]}


def gaussian_type1(plan: dict[str, Any]) -> float:
    """1 − P(−other_k < Z_k < efficacy_k for every k) for Z on Brownian motion at the looks (corr √(n_j/n_k))."""
    n = np.asarray(plan["sizes"], float)
    cov = np.sqrt(np.minimum.outer(n, n) / np.maximum.outer(n, n))
    lo, hi = -np.asarray(plan["efficacy_other"]), np.asarray(plan["efficacy"])
    return 1.0 - float(stats.multivariate_normal.cdf(hi, mean=np.zeros(n.size), cov=cov, lower_limit=lo,
                                                     maxpts=2_000_000, abseps=1e-7, releps=1e-7, rng=SEED))


def _block(args: tuple[dict[str, Any], float, int, int]) -> np.ndarray:
    plan, effect, block, reps = args
    return look_z(contrasts(plan["study"], effect, plan["sizes"][-1], block, reps, plan.get("fit")), plan["sizes"])


def paths(plan: dict[str, Any], effect: float, studies: int, workers: int) -> np.ndarray:
    jobs = [(plan, effect, b, min(BLOCK, studies - b * BLOCK)) for b in range(math.ceil(studies / BLOCK))]
    if workers <= 1:
        return np.vstack([_block(j) for j in jobs])
    with ProcessPoolExecutor(workers) as pool:
        return np.vstack(list(pool.map(_block, jobs)))


def _cpu() -> float:
    """CPU seconds of this process and its finished workers."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def agree(hits: int, n: int, ref: tuple[int, int]) -> str:
    p, q = hits / n, ref[0] / ref[1]
    se = math.sqrt(p * (1 - p) / n + q * (1 - q) / ref[1])
    d = p - q
    verdict = "agrees" if abs(d) <= 1.96 * se else "DIFFERS"
    return f"difference {d:+.4f} [95% {d - 1.96 * se:+.4f}, {d + 1.96 * se:+.4f}]: {verdict}"


def _statistic_words(fit: dict[str, Any] | None) -> str:
    """The per-subject statistic plan.json records, in words (an amortised one by its grid, not its coefficients)."""
    if not fit:
        return "the model own MLE search"
    if fit.get("estimator") == "amortised":
        return (f"the plan's amortised estimate ({len(fit['coefficients'])} coefficients on the NLL at "
                f"{fit['start_grid_size']} grid points)")
    return str(fit)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", type=Path, default=None, help="a plan.json of plan --looks auto (default: PUBLISHED)")
    ap.add_argument("--null", type=int, default=2000, help="null studies")
    ap.add_argument("--effect", type=int, default=1000, help="effect studies")
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    plan = PUBLISHED if a.plan is None else from_plan(a.plan)
    rep = plan["reported"]
    start, cpu = time.perf_counter(), _cpu()
    print(f"bounds: {len(plan['sizes'])} looks at {plan['sizes']}, from {a.plan or 'docs/results/plan.md (PUBLISHED)'}"
          f"; subjects estimated by {_statistic_words(plan.get('fit'))}")
    g = gaussian_type1(plan)
    if rep["gaussian_type1"]:
        h, n = rep["gaussian_type1"]
        se = math.sqrt(g * (1 - g) / n)
        print(f"Gaussian look statistics: type-I {g:.4f} (multivariate-normal rectangle, Genz) vs reported "
              f"{h / n:.4f} ({h}/{n} Brownian paths): difference {h / n - g:+.4f}, its MC SE {se:.4f}")
    null = outcomes(paths(plan, 0.0, a.null, a.workers), plan)
    hits = int(null["any"].sum())
    upper = float(stats.beta.ppf(0.95, hits + 1, a.null - hits)) if hits < a.null else 1.0
    print(f"type-I {hits / a.null:.4f} ({hits}/{a.null} null studies, futility ignored), one-sided 95% upper bound "
          f"{upper:.4f} ({'<=' if upper <= 0.05 else 'NOT <='} .05); reported {rep['type1'][0] / rep['type1'][1]:.4f} "
          f"({rep['type1'][0]}/{rep['type1'][1]}): {agree(hits, a.null, rep['type1'])}")
    print(f"  expected subjects under the null (futility obeyed) {null['units'].mean():.2f} ± "
          f"{null['units'].std(ddof=1) / math.sqrt(a.null):.2f}; reported {rep['expected_null']:.2f}")
    eff = outcomes(paths(plan, float(plan["study"]["effect_size"]), a.effect, a.workers), plan)
    hits = int(eff["power"].sum())
    print(f"power {hits / a.effect:.4f} ({hits}/{a.effect} effect studies, futility obeyed); reported "
          f"{rep['power'][0] / rep['power'][1]:.4f}: {agree(hits, a.effect, rep['power'])}")
    print(f"  expected subjects under the effect {eff['units'].mean():.2f} ± "
          f"{eff['units'].std(ddof=1) / math.sqrt(a.effect):.2f}; reported {rep['expected_effect']:.2f}")
    print(f"({time.perf_counter() - start:.0f} s wall, {_cpu() - cpu:.0f} s CPU with the workers; "
          f"{(a.null + a.effect) * plan['sizes'][-1]:,} subjects fitted)")


if __name__ == "__main__":
    main()

"""Sequential plans of two more targets of issue 33, proven on synthetic agents: two-step
model-basedness between two LLMs and belief-coherence T1c (a rationality test).

Each target's whole sequential procedure is simulated exactly as ``plan --looks`` simulates it
(:func:`cogtestbed.planning.kinds.sequential.seqplan.simulate_paths`: the fixed plan's metric/test on every look's
prefix of the same simulated runs, common random numbers across designs), under the null and under
the target effect, in batches saved as they finish (``DIR/<target>.npz``), so a run cut short keeps
its studies.  ``report`` then applies the stopping rule (:func:`~cogtestbed.planning.kinds.sequential.seqplan.operate`
with :func:`~cogtestbed.planning.kinds.sequential.seqplan.boundaries`) to every maximum size and reads the best fixed
design from the same replicates (the fixed test at each size of a grid: power ± MC SE).

    python benchmarks/studies/sequential_targets.py simulate twostep --sims 1000 --out DIR
    python benchmarks/studies/sequential_targets.py simulate t1c --sims 1000 --out DIR
    (or in two processes: simulate t1c --sims 500 --out DIR, and simulate t1c --sims 500 --first 500 --out DIR)
    python benchmarks/studies/sequential_targets.py report twostep --out DIR
    python benchmarks/studies/sequential_targets.py report t1c --out DIR

Targets (the project's choices, not a paper's):

* ``twostep``: CogBench two-step model-basedness (pooled stay regression's interaction), hybrid
  agent w = 0.3 vs w = 0.7 (β = 5, other parameters the agent's defaults), 30 days per run, runs per
  LLM on the size axis; the null: both at w = 0.3.  The difference test is the fixed plan's z-test
  of two pooled estimates (``difference_test``).  Fixed plan of this target:
  ``cogtestbed plan two-step --metric model_basedness --compare hybrid:w=0.3,beta=5 hybrid:w=0.7,beta=5
  --llm openai:gpt-4o-mini --llm openai:gpt-4o --runs 4:120`` → 100 runs × 30 days, $8.8705.
* ``t1c``: belief-coherence T1c (``t1_lr``: LR test of the multinomial logit A ~ p vs A ~ (p, θ),
  χ² with 2 df), the ``leak`` agent at leak = 0.02 vs the null leak = 0, the declared test-power
  design (π0 only, no LIE phase) at 50 contexts × 5 repetitions per run, runs on the size axis.

Rule: K looks at ``round(k/K · N)`` units, Lan–DeMets Pocock α-spending (α/2 per side), non-binding
β-spending futility at the drift giving the efficacy bounds 80 % power (the plan's defaults of the
headline cell); the chosen maximum has the least expected units under the effect with type-I
a one-sided 95 % upper bound ≤ α and power ≥ .80.  Costs are linear in runs at a fixed design, so the saving in dollars
equals the saving in runs.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from cogtestbed.planning.kinds.sequential.seqfair import upper_bound
from cogtestbed.planning.kinds.sequential.seqpaths import boundaries, simulate_paths
from cogtestbed.planning.kinds.sequential.seqplan import look_sizes, null_spec, operate
from cogtestbed.studies.driver import study_spec

LEVEL, POWER, LOOKS, SPENDING = 0.05, 0.80, 5, "pocock"
BATCH = 25


def target(name: str) -> dict[str, Any]:
    """The study spec, trials, null agent, maximum sizes and fixed-size grid of a target."""
    if name == "twostep":
        spec = study_spec(kind="metric-power", experiment="two-step", agent="hybrid", metric="model_basedness",
                          compare=({"w": 0.3, "beta": 5.0}, {"w": 0.7, "beta": 5.0}), seed=0)
        return {"spec": spec, "trials": 30, "null": None, "maxima": (100, 115, 130),
                "fixed": tuple(range(70, 131, 10)), "dollars_per_unit": 8.8705 / 100}
    if name == "t1c":
        spec = study_spec(kind="test-power", experiment="belief-coherence", agent="leak", test="t1_lr",
                          params={"leak": 0.02}, design={"variants": ("pi0",), "lie_node": "none", "n_contexts": 50},
                          seed=0)
        return {"spec": spec, "trials": None, "null": "leak:leak=0", "maxima": (18, 20, 22, 25, 28, 30),
                "fixed": tuple(range(10, 31, 2)), "dollars_per_unit": None}
    raise SystemExit(f"unknown target {name!r}: twostep or t1c")


def all_sizes(t: dict[str, Any]) -> list[int]:
    return sorted({*t["fixed"], *(n for m in t["maxima"] for n in look_sizes(m, LOOKS))})


def simulate(name: str, sims: int, out: Path, first: int = 0) -> None:
    """Simulate ``sims`` sequential studies per hypothesis (replicates ``first``…) in batches, saving
    after each batch (``DIR/<name>.npz``, or ``DIR/<name>-<first>.npz`` from another first replicate:
    ``report`` reads every part)."""
    t = target(name)
    sizes = all_sizes(t)
    specs = {"effect": t["spec"], "null": null_spec(t["spec"], t["null"])}
    path = out / (f"{name}.npz" if first == 0 else f"{name}-{first}.npz")
    have: dict[str, list[np.ndarray]] = {k: [] for k in ("z1", "e1", "z0", "e0")}
    start, cpu = time.perf_counter(), time.process_time()
    for b in range(first, first + sims, BATCH):
        reps = list(range(b, min(b + BATCH, first + sims)))
        for key, spec in (("1", specs["effect"]), ("0", specs["null"])):
            z, e = simulate_paths(spec.model_dump_json(), t["trials"], 1, max(sizes), sizes, spec.seed, reps)
            have["z" + key].append(z)
            have["e" + key].append(e)
        np.savez(path, sizes=np.asarray(sizes), **{k: np.concatenate(v) for k, v in have.items()})
        print(f"{name}: {reps[-1] + 1 - first} studies per hypothesis, {time.perf_counter() - start:.0f} s wall, "
              f"{time.process_time() - cpu:.0f} s CPU", flush=True)


def chi2_type1(fractions: list[float], bounds: list[float], df: int, paths: int = 200_000, seed: int = 0) -> float:
    """Type-I error of efficacy bounds ``|Z_k| ≥ b_k`` when ``Z_k = Φ⁻¹(1 − p_k/2)`` comes from a χ²_df
    statistic of nested Gaussian data (the canonical structure of a df-dimensional score: a
    df-dimensional Brownian motion observed at ``fractions``); df = 1 is the bounds' own model."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    t = np.asarray(fractions, float)
    steps = rng.standard_normal((paths, t.size, df)) * np.sqrt(np.diff(np.concatenate([[0.0], t])))[None, :, None]
    w = np.cumsum(steps, axis=1)
    chi2 = (w ** 2).sum(axis=2) / t[None, :]
    z = stats.norm.isf(stats.chi2.sf(chi2, df) / 2)
    return float(np.mean((z >= np.asarray(bounds)[None, :]).any(axis=1)))


def calibrated(b: Any, z0: np.ndarray, e0: np.ndarray, z1: np.ndarray, e1: np.ndarray,
               cols: list[int]) -> dict[str, Any]:
    """``plan --looks``' calibration (:func:`~cogtestbed.planning.kinds.sequential.seqsim.calibrate_shift`, futility
    binding) set on the first half of the null studies and measured on the second half (type-I) and
    on every effect study (power)."""
    from cogtestbed.planning.kinds.sequential.seqsim import calibrate_shift, null_scores

    half = z0.shape[0] // 2
    shift = calibrate_shift(null_scores(b, z0[:half], cols, 0.0), LEVEL)
    cb = b.with_shift(shift, {"side_level": LEVEL, "null_sims": half})
    null, eff = operate(cb, z0[half:], e0[half:], cols, 0.0, None), operate(cb, z1, e1, cols, 0.0, None)
    return {"shift": shift, "type1": (null.rate, null.mc_se), "null_sims": int(z0.shape[0] - half),
            "power": (eff.rate, eff.mc_se), "units_effect": float(eff.units.mean()),
            "units_null": float(null.units.mean())}


def _rate(x: np.ndarray) -> tuple[float, float]:
    p = float(np.mean(x))
    return p, math.sqrt(p * (1 - p) / x.size)


def report(name: str, out: Path) -> dict[str, Any]:
    """The fixed designs' power, every maximum's operating characteristics and the chosen one."""
    t = target(name)
    parts = [np.load(p) for p in sorted(out.glob(f"{name}*.npz"))]
    sizes = [int(n) for n in parts[0]["sizes"]]
    if any([int(n) for n in p["sizes"]] != sizes for p in parts):
        raise SystemExit(f"the parts of {name} in {out} were simulated at different sizes")
    col = {n: i for i, n in enumerate(sizes)}
    z1, e1, z0, e0 = (np.concatenate([p[k] for p in parts]) for k in ("z1", "e1", "z0", "e0"))
    crit = 1.959964  # the fixed test at level .05, two-sided
    fixed = []
    for n in t["fixed"]:
        fixed.append({"units": n, "power": _rate(np.abs(z1[:, col[n]]) >= crit),
                      "type1": _rate(np.abs(z0[:, col[n]]) >= crit)})
    best = next((f for f in fixed if f["power"][0] >= POWER), None)
    rows = []
    for m in t["maxima"]:
        looks = look_sizes(m, LOOKS)
        b = boundaries(looks, LEVEL, SPENDING, True, POWER)
        cols = [col[n] for n in looks]
        null, eff = operate(b, z0, e0, cols, 0.0, None), operate(b, z1, e1, cols, 0.0, None)
        no_fut = boundaries(looks, LEVEL, SPENDING, False, POWER)
        eff_only = operate(no_fut, z0, e0, cols, 0.0, None)
        rows.append({"max": m, "looks": list(looks), "efficacy": [round(x, 3) for x in b.efficacy],
                     "futility": [round(x, 3) for x in (b.futility or ())],
                     "type1": (null.rate, null.mc_se), "power": (eff.rate, eff.mc_se),
                     "type1_efficacy_only": (eff_only.rate, eff_only.mc_se),
                     "units_effect": float(eff.units.mean()), "units_null": float(null.units.mean()),
                     "stop_effect": eff.stop_distribution(LOOKS), "stop_null": null.stop_distribution(LOOKS),
                     "per_look_null_rejection": [float(np.mean(np.abs(z0[:, c]) >= crit)) for c in cols],
                     "stopping_bias": eff.summary(LOOKS)["stopping_bias"],
                     "normal_theory_type1": {f"chi2_df{d}": chi2_type1(list(b.fractions), list(no_fut.efficacy), d)
                                             for d in (1, 2)},
                     "calibrated": calibrated(b, z0, e0, z1, e1, cols)})
    sims = int(z1.shape[0])
    for r in rows:  # acceptance (issue 47): the one-sided 95% upper bound of type-I at most alpha
        r["type1_upper"] = upper_bound(int(round(r["type1"][0] * sims)), sims)
    ok = [r for r in rows if r["type1_upper"] <= LEVEL and r["power"][0] >= POWER]
    chosen = min(ok, key=lambda r: r["units_effect"]) if ok else None
    result = {"target": name, "sims": sims, "fixed": fixed, "best_fixed": best, "maxima": rows,
              "chosen": chosen}
    if chosen is not None and best is not None:
        result["saving_percent"] = 100 * (1 - chosen["units_effect"] / best["units"])
        result["saving_percent_null"] = 100 * (1 - chosen["units_null"] / best["units"])
    return result


def show(r: dict[str, Any], dollars_per_unit: float | None) -> None:
    print(f"{r['target']}: {r['sims']} simulated sequential studies per hypothesis; "
          f"{LOOKS} {SPENDING} looks with futility; accepted: one-sided 95% upper bound of type-I <= alpha")
    for f in r["fixed"]:
        print(f"  fixed {f['units']:>4}: power {f['power'][0]:.3f} ± {f['power'][1]:.3f}, "
              f"type-I {f['type1'][0]:.3f} ± {f['type1'][1]:.3f}")
    best = r["best_fixed"]
    print("  best fixed:", "none reaches .80" if best is None else
          f"{best['units']} units, power {best['power'][0]:.3f} ± {best['power'][1]:.3f}")
    for row in r["maxima"]:
        print(f"  max {row['max']:>4} looks {row['looks']} |Z| bounds {row['efficacy']} futility {row['futility']}")
        print(f"       type-I {row['type1'][0]:.4f} ± {row['type1'][1]:.4f} (upper 95% {row['type1_upper']:.4f}; "
              "efficacy only "
              f"{row['type1_efficacy_only'][0]:.4f} ± {row['type1_efficacy_only'][1]:.4f}); power "
              f"{row['power'][0]:.4f} ± {row['power'][1]:.4f}; E[units] effect {row['units_effect']:.1f}, "
              f"null {row['units_null']:.1f}")
        print(f"       stop (effect) {[round(x, 3) for x in row['stop_effect']]}; (null) "
              f"{[round(x, 3) for x in row['stop_null']]}; single-look null rejection "
              f"{[round(x, 3) for x in row['per_look_null_rejection']]}; stopping bias {row['stopping_bias']}")
        cal = row["calibrated"]
        t1, pw = cal["type1"], cal["power"]
        print(f"       calibrated on null studies 1-{r['sims'] // 2} (shift {cal['shift']:+.3f}), measured on the "
              f"other {cal['null_sims']}: type-I {t1[0]:.4f} ± {t1[1]:.4f}, power {pw[0]:.4f} ± {pw[1]:.4f}, "
              f"E[units] effect {cal['units_effect']:.1f}, null {cal['units_null']:.1f}")
        theory = row["normal_theory_type1"]
        print(f"       efficacy-only type-I of these bounds on nested Gaussian data: a 1-df statistic "
              f"{theory['chi2_df1']:.4f}, a chi2(2) statistic as |Z| {theory['chi2_df2']:.4f} (200,000 paths)")
    c = r["chosen"]
    if c is None:
        print("  chosen: none has a type-I upper bound <= alpha and power >= .80")
        return
    print(f"  chosen: max {c['max']}: type-I {c['type1'][0]:.4f} ± {c['type1'][1]:.4f}, power {c['power'][0]:.4f} ± "
          f"{c['power'][1]:.4f}, expected units {c['units_effect']:.1f} (effect) / {c['units_null']:.1f} (null) "
          f"vs fixed {best['units'] if best else None}: saving {r.get('saving_percent', float('nan')):.1f}% "
          f"(null {r.get('saving_percent_null', float('nan')):.1f}%)")
    if dollars_per_unit and best:
        expected, fixed = c["units_effect"] * dollars_per_unit, best["units"] * dollars_per_unit
        print(f"  dollars (linear in runs, the fixed plan's prices): expected ${expected:.4f} vs fixed ${fixed:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("simulate", "report"))
    ap.add_argument("target", choices=("twostep", "t1c"))
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0, help="first replicate (split a target over processes)")
    ap.add_argument("--out", type=Path, default=Path("runs/sequential_targets"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.what == "simulate":
        simulate(args.target, args.sims, args.out, args.first)
        return
    r = report(args.target, args.out)
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        show(r, target(args.target)["dollars_per_unit"])


if __name__ == "__main__":
    main()

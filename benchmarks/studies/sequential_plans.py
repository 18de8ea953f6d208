"""Group-sequential plans proven on synthetic agents across three targets (issue 33).

For each target it runs ``cogtestbed plan … --looks K --json`` (the fixed plan, then the whole
sequential procedure simulated under the null and the target effect) and prints the chosen
sequential design beside the best fixed design: type-I error and power with their MC SE (checked:
type-I by its one-sided 95 % upper bound against α, power against target − 2 SE), the stopping-look
distribution, expected and maximum calls and dollars, the saving, the stopping bias of the estimate and the wall time.

    python benchmarks/studies/sequential_plans.py rw          # RW± optimism bias 0.2 (the headline)
    python benchmarks/studies/sequential_plans.py twostep     # model-basedness between two LLMs
    python benchmarks/studies/sequential_plans.py t1c         # belief-coherence T1c against a leak
    python benchmarks/studies/sequential_plans.py normality [SIMS]   # RW± look statistic vs normal theory
    (the two-step and T1c cells with 1,000 studies per hypothesis and the non-normality diagnostics:
    benchmarks/studies/sequential_targets.py)
    options: --looks K --spending pocock|obrien-fleming --no-futility --sims N --out DIR
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

from cogtestbed.planning.kinds.sequential.seqfair import upper_bound

TARGETS = {
    "rw": ["instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2",
           "--llm", "openai:gpt-4o-mini"],
    "twostep": ["two-step", "--metric", "model_basedness", "--compare", "hybrid:w=0.3,beta=5",
                "hybrid:w=0.7,beta=5", "--llm", "openai:gpt-4o-mini", "--llm", "openai:gpt-4o", "--runs", "4:120"],
    # leak 0.2 at the default design reaches power 1 with 2 runs (too few for looks): a leak of 0.02 on
    # the declared test-power design (pi0 only, no LIE phase) at 50 contexts per run
    "t1c": ["belief-coherence", "--test", "t1_lr", "--agent", "leak:leak=0.02", "--null", "leak:leak=0",
            "--design", "variants=pi0", "--design", "lie_node=none", "--design", "n_contexts=50",
            "--llm", "openai:gpt-4o-mini", "--runs", "10:60"],
}


def normality(sims: int, trials: int = 96, n_top: int = 40) -> None:
    """How close the RW± look statistic is to the normal theory the spending bounds assume: whole
    simulated null paths (optimism bias 0; seeds of their own) of ``n_top`` subjects x ``trials``
    trials, and per prefix size the mean, SD, skewness and two-sided 5 % tail of Z (normal: 0, 1,
    0, .05), the correlation of Z between looks against the canonical sqrt(n_j/n_k), and the null
    mean and SD of the per-subject contrast (its bias)."""
    import numpy as np
    from scipy import stats

    from cogtestbed.planning.kinds.sequential.seqsim import Simulator
    from cogtestbed.studies.driver import study_spec

    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.0, seed=0, trials=(trials,))
    sizes = tuple(range(2, n_top + 1))
    start = time.perf_counter()
    (paths,) = Simulator(trials, 1, n_top, sizes, sims, 4242, workers=2).run([(spec, 9, None)])
    z = paths.z
    print(f"{sims} whole null paths of {n_top} subjects x {trials} trials ({time.perf_counter() - start:.0f} s); "
          f"per-subject contrast under the null: mean {paths.reference:+.4f}")
    for n in (2, 3, 5, 8, 10, 13, 16, 20, 26, 30, 34, 40):
        col = z[:, n - 2]
        print(f"  n={n:2d}: Z mean {col.mean():+.3f} SD {col.std(ddof=1):.3f} skew {stats.skew(col):+.2f}  "
              f"P(|Z|>=1.96) {np.mean(np.abs(col) >= 1.96):.3f}  P(Z>=1.96) {np.mean(col >= 1.96):.3f}")
    for a, b in ((3, 10), (10, 20), (20, 40)):
        r = np.corrcoef(z[:, a - 2], z[:, b - 2])[0, 1]
        print(f"  corr(Z at {a}, Z at {b}) {r:.3f} (canonical {math.sqrt(a / b):.3f})")


def main() -> None:
    if sys.argv[1:2] == ["normality"]:
        normality(int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("target", choices=sorted(TARGETS))
    ap.add_argument("--looks", type=int, default=10)
    ap.add_argument("--spending", default="pocock")
    ap.add_argument("--no-futility", action="store_true")
    ap.add_argument("--sims", type=int, default=1000, help="--seq-sims of the plan (per hypothesis)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--seed", type=int, default=0, help="the plan's --seed (fresh simulations of every hypothesis)")
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "cogtestbed", "plan", *TARGETS[args.target], "--power", "0.8", "--level", "0.05",
           "--looks", str(args.looks), "--spending", args.spending, "--seq-sims", str(args.sims), "--json",
           "--seed", str(args.seed)]
    if not args.no_futility:
        cmd.append("--futility")
    if args.out is not None:
        cmd += ["-o", str(args.out)]
    print("$", " ".join(cmd[1:]), flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(proc.stderr[-3000:])
    payload = json.loads(proc.stdout)
    seq = payload["sequential"]
    power = payload["power"]
    print(f"fixed: {payload['chosen']['design']}, power {power['rate']:.3f} ± {power['mc_se']:.3f}"
          f", {payload['cost']['calls']:,} calls, ${payload['cost']['dollars']:.4f}")
    if seq.get("chosen", True) is None:
        print("sequential:", seq["reason"])
        return
    d, e, n = seq["design"], seq["effect"], seq["null"]
    level, target = d["level"], payload["target"]["power"]
    print(f"sequential: {d['looks']} looks ({d['spending']}{', futility' if d['futility'] else ''}) at "
          f"{d['sizes']} {d['size_axis']}")
    ub = upper_bound(int(round(n["rejection_rate"] * n["sims"])), n["sims"])
    print(f"  type-I {n['rejection_rate']:.4f} ± {n['mc_se']:.4f} (one-sided 95% upper bound {ub:.4f}: "
          f"{'ok' if ub <= level else f'ABOVE alpha by {ub - level:.4f}'}); power {e['rejection_rate']:.4f} ± "
          f"{e['mc_se']:.4f} (target − 2 SE = {target - 2 * e['mc_se']:.4f}: "
          f"{'ok' if e['rejection_rate'] >= target - 2 * e['mc_se'] else 'BELOW'}); {e['sims']} sequential "
          "studies each")
    print("  stopping look under the effect:", [round(p, 3) for p in e["stop_look"]])
    print("  stopping look under the null:  ", [round(p, 3) for p in n["stop_look"]])
    ex, ex0, mx, fx = seq["expected"]["effect"], seq["expected"]["null"], seq["maximum"], seq["fixed"]
    print(f"  expected calls {ex['calls']:,.0f} (null {ex0['calls']:,.0f}, max {mx['calls']:,}) "
          f"vs fixed {fx['calls']:,}")
    print(f"  expected ${ex['dollars']:.4f} under the effect (null ${ex0['dollars']:.4f}, max ${mx['dollars']:.4f}) vs "
          f"fixed ${fx['dollars']:.4f}: saving ${fx['dollars'] - ex['dollars']:.4f} = {seq['saving']['percent']:.1f}%")
    print(f"  estimate: mean at stop {e['mean_estimate_at_stop']}, reference (full size) {e['reference_estimate']}, "
          f"stopping bias {e['stopping_bias']}")
    cal = d.get("calibration")
    if cal is not None:
        print(f"  efficacy bounds {d['efficacy']} (shift {cal['shift']:+.3f} from the spending function's, set on "
              f"{cal['null_sims']} calibration null studies to reject at {cal['side_level']} in the effect's "
              f"direction); against it {d.get('efficacy_other')}")
    print("  maximum sizes simulated:", ", ".join(f"{c['max_' + d['size_axis']]}: power {c['power']:.3f} type-I "
                                                   f"{c['type1']:.3f} E[units] {c['expected_units_effect']:.1f}"
                                                   for c in seq["candidates"]))
    print(f"  wall {wall:.1f} s (fixed search {payload['search']['seconds']:.1f} s wall, "
          f"{payload['search'].get('cpu_seconds', float('nan')):.1f} s CPU; sequential simulation "
          f"{seq['seconds']:.1f} s wall, {seq.get('cpu_seconds', float('nan')):.1f} s CPU, "
          f"{seq.get('units_simulated', 0):,} units fitted)")


if __name__ == "__main__":
    main()

"""Group-sequential plans proven on synthetic agents across three targets (issue 33).

For each target it runs ``cogtestbed plan … --looks K --json`` (the fixed plan, then the whole
sequential procedure simulated under the null and the target effect) and prints the chosen
sequential design beside the best fixed design: type-I error and power with their MC SE (checked
against α + 2 SE and target − 2 SE), the stopping-look distribution, expected and maximum calls
and dollars, the saving, the stopping bias of the estimate and the wall time.

    python benchmarks/studies/sequential_plans.py rw          # RW± optimism bias 0.2 (the headline)
    python benchmarks/studies/sequential_plans.py twostep     # model-basedness between two LLMs
    python benchmarks/studies/sequential_plans.py t1c         # belief-coherence T1c against a leak
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target", choices=sorted(TARGETS))
    ap.add_argument("--looks", type=int, default=10)
    ap.add_argument("--spending", default="pocock")
    ap.add_argument("--no-futility", action="store_true")
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "cogtestbed", "plan", *TARGETS[args.target], "--power", "0.8", "--level", "0.05",
           "--looks", str(args.looks), "--spending", args.spending, "--seq-sims", str(args.sims), "--json"]
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
    se0 = math.sqrt(level * (1 - level) / n["sims"])
    print(f"sequential: {d['looks']} looks ({d['spending']}{', futility' if d['futility'] else ''}) at "
          f"{d['sizes']} {d['size_axis']}")
    print(f"  type-I {n['rejection_rate']:.4f} ± {n['mc_se']:.4f} (α + 2 SE = {level + 2 * se0:.4f}: "
          f"{'ok' if n['rejection_rate'] <= level + 2 * se0 else 'ABOVE'}); power {e['rejection_rate']:.4f} ± "
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
    print(f"  estimate: mean at stop {e['mean_estimate_at_stop']}, at the maximum {e['mean_estimate_at_max']}, "
          f"stopping bias {e['stopping_bias']}")
    print(f"  wall {wall:.1f} s (fixed search {payload['search']['seconds']:.1f} s, sequential simulation "
          f"{seq['seconds']:.1f} s)")


if __name__ == "__main__":
    main()

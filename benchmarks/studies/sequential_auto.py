"""``plan --looks auto`` on the headline cell of issue 40: RW± (model rw-pm) optimism bias 0.2, 80 %
power, α = .05, priced for openai:gpt-4o-mini.

Runs ``cogtestbed plan instrumental-learning --model rw-pm --effect optimism_bias=0.2 --power 0.8
--level 0.05 --llm openai:gpt-4o-mini --looks auto --json -o DIR`` (1,000 studies under the effect,
1,000 calibration and 1,000 search null studies, then 1,000 + 1,000 fresh confirmation studies) and
prints the chosen design, its type-I error on fresh null studies that chose nothing with its one-sided
95 % upper bound (issue 47: accepted when the bound is ≤ .05, else by how much not), its power on
fresh studies (± MC SE), the saving as an estimate with its 95 % interval against the fixed test at the
sequential design's measured type-I (the comparator's size from a probit power curve; its own fresh
type-I), the data-generating assumptions and the robustness check's type-I under alternatives.

    python benchmarks/studies/sequential_auto.py [--seed 0] [--workers 2] [--out DIR] [--binding-futility]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CELL = ["instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2", "--power", "0.8",
        "--level", "0.05", "--llm", "openai:gpt-4o-mini", "--looks", "auto"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--binding-futility", action="store_true")
    ap.add_argument("--seq-sims", type=int, default=None)
    ap.add_argument("--null-sims", type=int, default=None)
    ap.add_argument("--report", type=Path, default=None, help="only print the figures of an existing plan.json")
    a = ap.parse_args()
    if a.report is not None:
        report(json.loads(a.report.read_text()), float("nan"))
        return
    out = a.out or Path(tempfile.mkdtemp(prefix="seqauto-")) / "plan"
    cmd = [sys.executable, "-m", "cogtestbed", "plan", *CELL, "--seed", str(a.seed), "--workers", str(a.workers),
           "--json", "-o", str(out)]
    cmd += ["--binding-futility"] if a.binding_futility else []
    cmd += ["--seq-sims", str(a.seq_sims)] if a.seq_sims else []
    cmd += ["--null-sims", str(a.null_sims)] if a.null_sims else []
    print("$", " ".join(cmd[2:]), flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        print(proc.stderr[-3000:])
        raise SystemExit(proc.returncode)
    report(json.loads((out / "plan.json").read_text()), wall)


def report(plan: dict, wall: float) -> None:
    seq, power, cost = plan["sequential"], plan["power"], plan["cost"]
    print(f"fixed plan: {plan['chosen']['design']}, power {power['rate']:.3f} ± {power['mc_se']:.3f}, "
          f"${cost['dollars']:.4f} (nominal t-test)")
    if seq.get("chosen", True) is None:
        raise SystemExit(f"sequential: none: {seq['reason']}")
    d, e, n, s, auto = seq["design"], seq["effect"], seq["null"], seq["saving"], seq["auto"]
    for line in auto["lines"]:
        print(line.strip())
    print(f"chosen: {d['looks']} looks at {d['sizes']} ({d['spending']}, futility "
          f"{'on' if d['futility'] else 'off'}{', binding' if d.get('futility_binding') else ''}), "
          f"bounds: {d['calibration'].get('method')}")
    t1, se1 = n["rejection_rate"], n["mc_se"]
    pw, sep = e["rejection_rate"], e["mc_se"]
    chk = n.get("type1_check") or {}
    print(f"type-I {t1:.4f} ± {se1:.4f} on {n['sims']:,} fresh null studies that chose nothing "
          f"({'futility ignored' if not d.get('futility_binding') else 'futility obeyed'}), one-sided 95% upper "
          f"bound {chk.get('upper', float('nan')):.4f} [target: upper bound <= .05: "
          + ("met" if chk.get("meets") else f"NOT met, by {chk.get('excess', float('nan')):.4f}") + "]")
    print(f"power {pw:.3f} ± {sep:.3f} on {e['sims']:,} fresh studies under the effect "
          f"[target >= .80: {'met' if pw >= 0.80 else 'NOT met'}]")
    ex = seq["expected"]["effect"]
    print(f"expected ${ex['dollars']:.4f} under the effect ({ex['calls']:,.0f} calls), "
          f"${seq['expected']['null']['dollars']:.4f} under the null, at most ${seq['maximum']['dollars']:.4f}")
    print(s["statement"])
    pct = s["percent"]
    print(f"(first size whose simulated power crossed the target) saving against {seq['fixed'].get('label')}, "
          f"${seq['fixed']['dollars']:.4f}: {pct:.1f}%")
    est = s.get("estimate")
    if est:
        ft = est.get("fixed_type1") or {}
        lo, hi = est["interval"]
        print(f"saving estimate {est['percent']:.1f}% [95% {lo:.1f}, {hi:.1f}] against the fixed test at the "
              f"sequential design's measured type-I {est['level']:.4f}: comparator {est['fixed_size']:.1f} "
              f"[{est['fixed_size_interval'][0]:.1f}, {est['fixed_size_interval'][1]:.1f}] subjects (probit power "
              f"curve); the comparator's own fresh type-I {ft.get('rate', float('nan')):.4f} (upper 95% "
              f"{ft.get('upper', float('nan')):.4f}) at {ft.get('size')} subjects [target >= 30%: "
              f"{'met' if lo >= 30 else ('point met, interval not' if est['percent'] >= 30 else 'NOT met')}]")
    for line in seq.get("assumptions", []):
        print(f"model: {line}")
    rob = seq.get("robustness")
    if rob:
        for r in rob["rows"]:
            print(f"robustness: {r['alternative']}: type-I {r['rate']:.4f} ({r['hits']}/{r['sims']:,}), upper 95% "
                  f"{r['upper']:.4f}")
        print(f"robustness: worst: {rob['worst']['alternative']}, type-I {rob['worst']['rate']:.4f}")
    pf = seq.get("plan_fixed", {})
    if pf.get("saving_percent") is not None:
        print(f"(against the fixed plan's own design, {pf['size']} subjects, nominal t-test, ${pf['dollars']:.4f}: "
              f"{pf['saving_percent']:.1f}%)")
    fair = auto["fair_fixed"]
    if fair.get("chosen"):
        c = fair["chosen"]
        se = math.sqrt(c["power"] * (1 - c["power"]) / fair["sims"])
        ck = fair.get("confirm_check") or {}
        print(f"fair fixed comparator (size chosen on the calibration nulls, critical values re-calibrated on the "
              f"search nulls): {c['size']} subjects, critical {c['critical']:.3f}, power {c['power']:.3f} ± "
              f"{se:.3f}, type-I on the fresh null studies {fair.get('confirm_type1')} (upper 95% "
              f"{ck.get('upper', float('nan')):.4f})")
    for row in auto["confirmed"]:
        print(f"  confirmed: {row['looks']} looks {row['spending']} futility={row['futility']} max {row['maximum']}: "
              f"search power {row['search_power']:.3f} type-I {row['search_type1']:.3f} E[n] "
              f"{row['search_expected_units']:.2f}; fresh power {row['power']:.3f} type-I {row['type1']:.3f} "
              f"(upper {row.get('type1_upper', float('nan')):.3f}) "
              f"E[n] {row['expected_units']:.2f} {'PASS' if row['passes'] else 'fail'}")
    print(f"time: {wall:.0f} s wall in all; sequential {seq['seconds']:.0f} s wall, {seq['cpu_seconds']:.0f} s CPU, "
          f"{seq['units_simulated']:,} subjects fitted")


if __name__ == "__main__":
    main()

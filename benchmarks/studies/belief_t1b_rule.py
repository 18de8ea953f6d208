"""T1b's two decision rules on the same simulated studies (Yamin et al. 2026, 200 contexts x 5 reps).

Each study runs T1b once (200 bootstrap resamples, as the calibration table) and records both
rules' decisions: ``placebo`` (improvement of theta against those of 4 locally permuted placebos,
Student t with 3 df, one-sided at alpha) and ``paper`` (lower end of the 95 % CI of the improvement
above 0).
Size: calibrated logit RUM at report noise 0, with the seeds of the calibration table's T1b cell
(``belief_size.py --calibration --tests t1_nested`` gives both rules' rates on the same studies,
one cell per rule, at twice the cost).  Power: the hidden-information leak agent at ``--leak``.
Prints one line per 10 studies and the final table "cell, studies, placebo rate +- MC SE, paper
rate +- MC SE"; ``-o DIR`` saves ``t1b_rules[.shard-I-of-N].parquet`` (one row per study) every
10 studies; ``--shard I/N`` runs only the studies whose index is I modulo N (run N processes to use
N cores) and ``--from DIR`` prints the table of every parquet file in DIR.

    python benchmarks/studies/belief_t1b_rule.py --size-sims 300 --power-sims 50 -o runs/t1b --shard 0/2 &
    python benchmarks/studies/belief_t1b_rule.py --size-sims 300 --power-sims 50 -o runs/t1b --shard 1/2
    python benchmarks/studies/belief_t1b_rule.py --from runs/t1b
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from belief_family import CALIBRATION_TESTS, simulate_outcomes, study_design

from cogtestbed.environments.belief import BeliefCoherenceEnv
from cogtestbed.inference import belief as tests

#: Bootstrap resamples per study (as the calibration table and the declared studies).
STUDY_BOOT = 200


def run_cell(name: str, agent: str, params: dict[str, Any], n: int, seed: int, rows: list[dict[str, Any]],
             output: Path | None, shard: tuple[int, int] = (0, 1)) -> None:
    """``n`` studies of ``agent`` (those of ``shard`` = (I, N): index ≡ I mod N); appends one row per
    study with both rules' decisions."""
    design = study_design("t1_nested")
    sessions, outcomes, _ = simulate_outcomes(agent, params, design, n, seed)
    table = BeliefCoherenceEnv.trials_table(design, sessions, outcomes, agent=agent)
    start = time.process_time()
    done_here = 0
    for i, (_, part) in enumerate(table.groupby("subject", sort=True)):
        if i % shard[1] != shard[0]:
            continue
        r = tests.t1_nested(part, tests.LEVEL, n_boot=STUDY_BOOT, seed=seed + i)
        rows.append({"cell": name, "study": i, "placebo": r["reject_placebo"], "paper": r["reject_paper"],
                     "improvement": r["estimate"], "placebo_improvement": r["placebo_estimate"],
                     "p_placebo": r["rules"]["placebo"]["p_value"], "p_paper": r["rules"]["paper"]["p_value"]})
        done_here += 1
        if done_here % 10 == 0:
            done = pd.DataFrame([x for x in rows if x["cell"] == name])
            print(f"{name}: {done_here} studies, placebo {done['placebo'].mean():.3f}, paper "
                  f"{done['paper'].mean():.3f} ({(time.process_time() - start) / done_here:.1f} s CPU per study)",
                  flush=True)
            save(rows, output, shard)


def save(rows: list[dict[str, Any]], output: Path | None, shard: tuple[int, int]) -> None:
    """Write the rows so far to ``output`` (one file per shard)."""
    if output is None:
        return
    output.mkdir(parents=True, exist_ok=True)
    suffix = "" if shard == (0, 1) else f".shard-{shard[0]}-of-{shard[1]}"
    pd.DataFrame(rows).to_parquet(output / f"t1b_rules{suffix}.parquet", index=False)


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` with 0 ≤ I < N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes I/N, got {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard I/N needs 0 <= I < N, got {text!r}")
    return i, n


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per cell: studies, each rule's rejection rate and MC SE, median improvements."""
    out = []
    for cell, part in frame.groupby("cell", sort=False):
        row: dict[str, Any] = {"cell": cell, "studies": len(part)}
        for rule in ("placebo", "paper"):
            rate = float(part[rule].mean())
            row[rule] = f"{rate:.3f} ± {np.sqrt(rate * (1 - rate) / len(part)):.3f}"
        row["median improvement %"] = float(part["improvement"].median())
        row["median placebo %"] = float(part["placebo_improvement"].median())
        out.append(row)
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-sims", type=int, default=300)
    parser.add_argument("--power-sims", type=int, default=50)
    parser.add_argument("--leak", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--from", dest="source", type=Path, default=None, help="re-print a saved run")
    parser.add_argument("-o", "--output", type=Path, default=None)
    parser.add_argument("--shard", type=parse_shard, default=(0, 1), help="I/N: run the studies with index I mod N")
    args = parser.parse_args()
    if args.source is not None:
        files = sorted(args.source.glob("t1b_rules*.parquet"))
        print(summary(pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)).to_string(index=False))
        return
    rows: list[dict[str, Any]] = []
    size_seed = args.seed + 1000 * CALIBRATION_TESTS.index("t1_nested")  # the calibration table's T1b cell
    run_cell("logit RUM, σ = 0", "logit-rum", {"report_noise": 0.0}, args.size_sims, size_seed, rows, args.output,
             args.shard)
    run_cell(f"leak {args.leak}", "leak", {"leak": args.leak}, args.power_sims, size_seed + 500, rows, args.output,
             args.shard)
    save(rows, args.output, args.shard)
    print(summary(pd.DataFrame(rows)).to_string(index=False))


if __name__ == "__main__":
    main()

"""Size of the belief-coherence tests vs report noise (Yamin et al. 2026, 200 contexts x 5 reps).

Runs the size study (calibrated logit RUM, sigma in {0, .05, .10, .15}) for T1c, its
repetition-averaged variant and T2 with 500 simulated studies per cell, T1a with 100 (its local
permutation null costs ~1 s per study), prints the table and writes docs/belief_size_vs_noise.png.
``--from DIR [DIR ...]`` re-plots saved ``results.parquet`` files instead of simulating.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from cogtestbed.validation.belief import plot_size, size_study

OUT = Path(__file__).resolve().parents[2] / "docs" / "belief_size_vs_noise.png"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="sources", nargs="*", type=Path, default=None)
    parser.add_argument("--sims", type=int, default=500)
    parser.add_argument("--cmi-sims", type=int, default=100)
    args = parser.parse_args()
    if args.sources:
        frame = pd.concat([pd.read_parquet(p / "results.parquet") for p in args.sources], ignore_index=True)
    else:
        frame = pd.concat([size_study(("t1_lr", "t1_lr_mean", "t2"), n_sims=args.sims),
                           size_study(("t1_cmi",), n_sims=args.cmi_sims)], ignore_index=True)
    print(frame.pivot(index="report_noise", columns="test", values="rate").to_string())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    plot_size(frame, OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

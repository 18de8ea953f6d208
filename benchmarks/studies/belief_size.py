"""Size of the belief-coherence tests (Yamin et al. 2026, 200 contexts x 5 reps).

Default mode: the size study (calibrated logit RUM, sigma in {0, .05, .10, .15}) for T1c, its
repetition-averaged variant and T2 with 500 simulated studies per cell, T1a with 100, prints the
table and writes docs/belief_size_vs_noise.png.  ``--from DIR [DIR ...]`` re-plots saved
``results.parquet`` files instead of simulating.

``--calibration``: the size-calibration table — every test on rational agents (alpha = .05):
"test, agent, sigma, studies, rate, MC SE, exact 95 % upper bound, target, within?" (T2 also on
Remark 3.4's random agent, the flat-share null where its permutation rule is exact).
``--tests t1_cmi,t2`` keeps the cells of those tests (in that order), ``--sims N`` overrides the
studies per cell (default 500; 200 on the noise curves, T1b 300, T4 200, T3 at sigma = 0 100),
``-o DIR`` saves ``calibration.parquet`` after each cell, ``--from DIR ...`` re-prints.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
from belief_family import calibration_cells, calibration_row, plot_size, size_study

OUT = Path(__file__).resolve().parents[2] / "docs" / "belief_size_vs_noise.png"


def print_calibration(frame: pd.DataFrame) -> None:
    """The calibration table as plain text."""
    shown = frame.assign(sigma=frame["sigma"].map(lambda s: "–" if pd.isna(s) else f"{s:.2f}"))
    cols = ["test", "agent", "sigma", "studies", "rate", "mc_se", "upper95", "target", "ok"]
    print(shown[cols].rename(columns={"mc_se": "MC SE", "upper95": "95% upper", "ok": "within?"})
          .to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def calibration(args: argparse.Namespace) -> None:
    if args.sources:
        frame = pd.concat([pd.read_parquet(p / "calibration.parquet") for p in args.sources], ignore_index=True)
    else:
        keep = args.tests.split(",") if args.tests else None
        cells = [c for c in calibration_cells() if keep is None or c.test in keep]
        if keep is not None:  # cells in the order of --tests
            cells.sort(key=lambda c: keep.index(c.test))
        start, rows = time.process_time(), []
        for cell in cells:  # one line per finished cell; the table so far is saved after each
            rows.append(calibration_row(cell, n_sims=args.sims, seed=args.seed))
            print(f"{rows[-1]['test']} {cell.agent} σ={cell.sigma}: {rows[-1]['rate']:.3f} "
                  f"± {rows[-1]['mc_se']:.3f} ({rows[-1]['studies']} studies)", flush=True)
            if args.output is not None:
                args.output.mkdir(parents=True, exist_ok=True)
                pd.DataFrame(rows).to_parquet(args.output / "calibration.parquet", index=False)
        frame = pd.DataFrame(rows)
        print(f"({time.process_time() - start:.0f} s CPU)")
    print_calibration(frame)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="sources", nargs="*", type=Path, default=None)
    parser.add_argument("--sims", type=int, default=None)
    parser.add_argument("--cmi-sims", type=int, default=100)
    parser.add_argument("--calibration", action="store_true", help="the size-calibration table")
    parser.add_argument("--tests", default=None, help="calibration: comma-separated tests to keep")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()
    if args.calibration:
        calibration(args)
        return
    if args.sources:
        frame = pd.concat([pd.read_parquet(p / "results.parquet") for p in args.sources], ignore_index=True)
    else:
        frame = pd.concat([size_study(("t1_lr", "t1_lr_mean", "t2"), n_sims=args.sims or 500),
                           size_study(("t1_cmi",), n_sims=args.cmi_sims)], ignore_index=True)
    print(frame.pivot(index="report_noise", columns="test", values="rate").to_string())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    plot_size(frame, OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

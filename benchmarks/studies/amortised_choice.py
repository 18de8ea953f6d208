"""Issue 71: what ``plan --looks auto`` chooses as its per-subject statistic, family by family.

Before it simulates, ``plan --looks auto`` trains the amortised estimate of ``seqamortised`` (a ridge regression of
each subject's true effect on its NLL at the 3-node start grid) and keeps it only where, on 500 fresh subjects under
the null and 500 under the effect, its standardized effect is positive and at least 0.975 times the coarse-start
MLE's (``seqamortised.choose_statistic``).  This script runs that choice as the plan runs it, at each family's
plan (the documented RW± and prospect-theory plans, and one parameter effect of other families' headline models,
those of ``amortised_statistic.py``), and prints per family: the choice, both standardized effects, the subjects
the amortised estimate needs for the MLE's power (as a share), the training R² and the CPU seconds the choice took
(training and validation; kernels compiled or loaded first).

    python benchmarks/studies/amortised_choice.py [--families rw-pm,prospect-theory,...] [--record amortised-choice]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from amortised_statistic import FAMILIES, Family  # noqa: E402


def spec_of(f: Family) -> Any:
    from cogtestbed.studies.driver import study_spec

    trials = {"trials": (f.trials,)} if f.trials else {}
    return study_spec(kind="power", experiment=f.experiment, models=(f.model,), effect=f.effect, effect_size=f.size,
                      seed=0, **trials)


def row(name: str, f: Family) -> list[str]:
    """One family's choice, as the plan makes it."""
    from cogtestbed.planning.kinds.sequential import seqamortised

    spec = spec_of(f)
    null = spec.model_copy(update={"effect_size": 0.0})
    small = spec.model_copy(update={"seed": 99})
    old = seqamortised.TRAIN_SUBJECTS, seqamortised.VALIDATION
    seqamortised.TRAIN_SUBJECTS, seqamortised.VALIDATION = 130, 10
    try:  # every kernel compiled or loaded before the clock
        seqamortised.choose_statistic(small, small.model_copy(update={"effect_size": 0.0}), f.trials, 1)
    finally:
        seqamortised.TRAIN_SUBJECTS, seqamortised.VALIDATION = old
    start = time.process_time()
    _, choice = seqamortised.choose_statistic(spec, null, f.trials, 1)
    cpu = time.process_time() - start
    d = choice.get("standardized_effect") or {}

    def fmt(v: float | None) -> str:
        return "" if v is None else f"{v:.3f}"

    ratio = choice.get("subjects_ratio")
    return [name, f"{f.effect}={f.size:g}", choice["chosen"], fmt(d.get("amortised")), fmt(d.get("coarse_start_mle")),
            "" if ratio is None else f"{ratio:.2f}", fmt(choice.get("training_r2")), f"{cpu:.1f}"]


COLUMNS = ["family", "effect", "chosen", "d amortised", "d MLE", "n/MLE", "R²", "CPU s"]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"comma-separated, of {', '.join(FAMILIES)}")
    ap.add_argument("--record", default=None, help="also write benchmarks/studies/results/NAME.json")
    o = ap.parse_args(argv)
    names = [x for x in o.families.split(",") if x]
    if not names or not set(names) <= set(FAMILIES):
        print(f"give families of {', '.join(FAMILIES)}", file=sys.stderr)
        return 2
    load = os.getloadavg()[0]
    rows = []
    print("  ".join(COLUMNS), flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            rows.append(row(name, FAMILIES[name]))
            print("  ".join(rows[-1]), flush=True)
    print(f"(load {load:.1f} at the start)")
    if o.record:
        import recorded

        title = ("plan --looks auto's statistic choice per family: d, the standardized effect on 500 fresh subjects "
                 "under the null and 500 under the effect; n/MLE, the subjects the amortised estimate needs for the "
                 "MLE's power, as a share; R², the training R²; CPU s, the choice's training and validation")
        command = " ".join(["python benchmarks/studies/amortised_choice.py", *(argv or sys.argv[1:])])
        recorded.write(o.record, command, [{"title": title, "columns": COLUMNS, "rows": rows}],
                       notes=f"seed 0 plans; load {load:.1f} at the start (CPU seconds measured under that load)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The matrix run of issue 46: every experiment × its models and agents × every workflow, over seeds,
parameter draws (prior, bounds, defaults) and small designs; prints the table experiment × workflow →
runs, tracebacks, typed refusals, unidentified units, unflagged nulls (:mod:`cogtestbed.validation.matrix`).

Run it in pieces (one process each, ``--workers``-free: every case runs in this process), each
appending its outcomes to a JSON-lines file, then print the table of all pieces::

    PYTHONPATH=. python benchmarks/studies/matrix.py run --experiment temporal-discounting --n 40 \\
        --workflows simulate,fit-mle --out matrix_output/td.jsonl
    PYTHONPATH=. python benchmarks/studies/matrix.py table matrix_output/*.jsonl

``run --full`` runs the whole matrix at the sizes of docs/matrix.md (``make test-matrix``; it exits 1
when a cell outside :data:`~cogtestbed.validation.matrix.KNOWN_OPEN` has a traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cogtestbed.registry import experiment_names
from cogtestbed.validation.matrix import (
    KNOWN_OPEN,
    WORKFLOWS,
    MatrixResult,
    markdown,
    matrix_table,
    read_outcomes,
    run_matrix,
)

#: Cases per target of each workflow in the full run (docs/matrix.md): the cheap workflows carry
#: the count, the slow ones run a few tiny cases each.
FULL: dict[str, int] = {
    "simulate": 500, "simulate-file": 8, "metrics": 10, "fit-mle": 200, "fit-hierarchical": 1, "recover": 12,
    "power": 8, "model-recovery": 8, "sbc": 1, "forms": 4, "plan": 1, "study": 1,
}
#: Fewer cases where one run takes seconds (revealed belief's 960-trial sessions have no trials
#: field to shrink; belief coherence's metrics fit random forests).
FULL_EXCEPT: dict[tuple[str, str], int] = {
    ("revealed-belief", "fit-mle"): 40, ("revealed-belief", "simulate"): 100, ("belief-coherence", "metrics"): 2,
    ("belief-coherence", "simulate"): 120, ("magnitude", "simulate"): 250,
    ("revealed-belief", "power"): 3, ("revealed-belief", "metrics"): 4,
}


def _counts(args: argparse.Namespace, experiment: str) -> dict[str, int]:
    """Cases per target of each workflow asked for on ``experiment``."""
    workflows = args.workflows.split(",") if args.workflows else list(WORKFLOWS)
    unknown = sorted(set(workflows) - set(WORKFLOWS))
    if unknown:
        raise SystemExit(f"error: unknown workflow(s) {', '.join(unknown)}; choose from {', '.join(WORKFLOWS)}")
    return {w: (FULL_EXCEPT.get((experiment, w), FULL[w]) if args.n is None else args.n) for w in workflows}


def run(args: argparse.Namespace) -> int:
    names = args.experiment.split(",") if args.experiment else experiment_names()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with out.open("a") as fh:
        def write(o) -> None:  # type: ignore[no-untyped-def]
            fh.write(json.dumps(o.row(), default=float) + "\n")
            fh.flush()
            if o.status == "traceback":
                print(f"TRACEBACK {o.case.experiment} {o.case.workflow} {o.case.target}: {o.error[:160]} "
                      f"[{o.where}]", file=sys.stderr, flush=True)

        result = MatrixResult()
        for name in names:
            counts = _counts(args, name)
            result.outcomes += run_matrix([name], list(counts), counts, args.seed, on_outcome=write).outcomes
    print(markdown(result.table()))
    print(f"\n{len(result.outcomes):,} runs in {time.perf_counter() - start:.0f} s (1 process)")
    return 0


def table(args: argparse.Namespace) -> int:
    frame = read_outcomes(args.files)
    t = matrix_table(frame)
    print(markdown(t))
    seconds = float(frame["seconds"].sum()) if len(frame) else 0.0
    print(f"\n{len(frame):,} runs, {seconds:,.0f} s of workflow time")
    tb = frame[frame["status"] == "traceback"]
    if len(tb):
        print("\ntracebacks (experiment, workflow: error [where] x count):")
        for (exp, wf, err, where), g in tb.groupby(["experiment", "workflow", "error", "where"]):
            known = " (known open)" if (exp, wf) in KNOWN_OPEN else ""
            print(f"  {exp}, {wf}{known}: {err[:200]} [{where}] x {len(g)}")
    open_cells = {(e, w) for e, w in zip(tb["experiment"], tb["workflow"], strict=True)} - set(KNOWN_OPEN)
    return 1 if args.strict and open_cells else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run cases and append their outcomes to --out")
    r.add_argument("--experiment", help="comma list (default: every registered experiment)")
    r.add_argument("--workflows", help=f"comma list of {', '.join(WORKFLOWS)} (default: all)")
    r.add_argument("--n", type=int, help="cases per target of each workflow (default: the full run's)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", default="matrix_output/outcomes.jsonl")
    t = sub.add_parser("table", help="the table of outcome files")
    t.add_argument("files", nargs="+")
    t.add_argument("--strict", action="store_true", help="exit 1 on a traceback outside the known-open cells")
    args = parser.parse_args(argv)
    return run(args) if args.command == "run" else table(args)


if __name__ == "__main__":
    sys.exit(main())

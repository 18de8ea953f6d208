"""The centred parameterisation of the parameters each subject's data pin, per family, on fresh data sets (issue 71
item 4).

    python benchmarks/studies/centring_per_family.py                       # every case (~40 min on 2 cores)
    python benchmarks/studies/centring_per_family.py --cases bart,rw        # some cases
    python benchmarks/studies/centring_per_family.py ... --save DIR         # also keep what the bench printed
    python benchmarks/studies/centring_per_family.py --from DIR            # the outputs of earlier runs, re-read
    python benchmarks/studies/centring_per_family.py ... --record NAME     # also benchmarks/studies/results/NAME.json

A hierarchical fit samples a subject's parameter non-centred (``u_i = mu + sigma * z_i``) unless the model names it
in ``centred_parameters`` (``u_i ~ Normal(mu, sigma)``).  Where each subject's data pin ``u_i`` much more tightly
than the population spreads it, the non-centred offsets are tied to ``mu`` along a ridge that NUTS crosses in long
trajectories, and the centred form is the better geometry (Papaspiliopoulos, Roberts & Skoeld 2007; Betancourt &
Girolami 2015); where they do not, the centred form has the funnel.  Both are the same posterior.

The rule, written down before the first run (28 Nov 2026, 08:30 UTC), on data sets no earlier comparison used:

1. **Which parameters** (data sets 6 and 7): the package's side of ``bench_hierarchical_vs_numpyro.py`` at the
   product's setting (20 subjects, 4 chains x (500 tune + 1000 draws), nutpie on one thread, data sets 6 to 9 in
   one process) prints, per parameter, the median over subjects of the posterior SD of a subject's unconstrained
   value over the posterior mean of the population SD (``pinned``).  The candidate centres, besides the
   parameters the model centres already, every parameter with ``pinned`` < 0.5 on both data sets 6 and 7 (the
   data's own SD then under about 0.58 of the population's; the two forms break even near 0.71 in the
   normal-normal model).  No candidate where none qualifies.
2. **Whether** (data sets 8 and 9): the candidate (``--centred``, a second process on data sets 7 to 9, data set 7
   its warm-up, as data set 6 is the first process's) is taken where, on both data sets 8 and 9, it gives at least
   the product's min bulk ESS per CPU-second, at max R-hat <= 1.01 and with no more divergences.

No other data decide it.  The collider (its own zero-one-inflated Beta model) and revealed-belief dissonant (every
parameter centred already) are not cases.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from lowrank_per_family import cell, fits, holds, write_record  # noqa: E402  (a sibling study script, not a package)

BENCH = HERE.parent / "bench_hierarchical_vs_numpyro.py"
CASES = ["generalised-bayes", "magnitude-linear", "bart", "belief-mnl", "belief-loss", "rw-pm", "two-step-hybrid",
         "magnitude-kalman", "rw", "hyperbolic", "prospect-theory", "expected-value", "static-bayes", "horizon",
         "two-step-model-based", "two-step-model-free", "restless-kalman"]
COMMON = ["--package-only", "--subjects", "20", "--draws", "1000", "--tune", "500", "--cores", "1"]
PRODUCT_ARGS = [*COMMON, "--first-data-set", "6", "--reps", "4"]
CANDIDATE_ARGS = [*COMMON, "--first-data-set", "7", "--reps", "3"]
WHICH, WHETHER = (6, 7), (8, 9)
PINNED = 0.5
RHAT = 1.01
COLUMNS = ["case", "data set", "product (centred)", "pinned", "candidate (centred)", "candidate / product",
           "verdict"]
CELL = ("Each fit: min bulk ESS per CPU-second (min bulk ESS; CPU s), max R-hat, divergences, leapfrog steps a draw; "
        "pinned: per parameter, the median over subjects of a subject's posterior SD (unconstrained) over the "
        "population SD's posterior mean; data sets 6 and 7 choose the candidate (centre where pinned < 0.5 on both), "
        "8 and 9 decide it (rate >= the product's, R-hat <= 1.01, no more divergences on both)")


def bench(case: str, args: list[str]) -> str:
    """What the bench prints for ``case`` with ``args``, in a fresh process on one thread."""
    env = {"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(BENCH), *args, "--cases", case], capture_output=True, text=True,
                          check=False, env={**os.environ, **env})
    return done.stdout


def candidate(product: dict[int, dict[str, Any]]) -> list[str]:
    """The parameters the candidate centres (step 1), or [] where none qualifies beyond the model's own."""
    if not all(k in product for k in WHICH):
        return []
    already = list(product[WHICH[0]]["centred"])
    pinned = [p for p in product[WHICH[0]]["pinned"]
              if p not in already and all(product[k]["pinned"].get(p, 1.0) < PINNED for k in WHICH)]
    return already + pinned if pinned else []


def outputs(case: str, source: Path | None, save: Path | None) -> tuple[str, str | None]:
    """The product's and the candidate's bench outputs of ``case`` (None: no candidate), read or run."""
    if source is not None:
        other = source / f"{case}-candidate.txt"
        return (source / f"{case}-product.txt").read_text(encoding="utf-8"), (
            other.read_text(encoding="utf-8") if other.is_file() else None)
    product = bench(case, PRODUCT_ARGS)
    names = candidate(fits(product))
    other = bench(case, [*CANDIDATE_ARGS, "--centred", ",".join(names)]) if names else None
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        (save / f"{case}-product.txt").write_text(product, encoding="utf-8")
        if other is not None:
            (save / f"{case}-candidate.txt").write_text(other, encoding="utf-8")
    return product, other


def pinned_cell(row: dict[str, Any]) -> str:
    return " ".join(f"{p} {v:.2f}" for p, v in row["pinned"].items())


def case_rows(case: str, product_text: str, candidate_text: str | None) -> tuple[list[list[str]], bool]:
    """The case's table rows and whether the rule takes its candidate."""
    product = fits(product_text)
    names = candidate(product)
    other = fits(candidate_text) if candidate_text is not None else {}
    rows = []
    for k in sorted(product):
        judged = k in WHETHER and k in other
        verdict = ("holds" if holds(product[k], other[k]) else "fails") if judged else (
            "chooses" if k in WHICH else "")
        rows.append([case, str(k), f"{cell(product[k])} ({','.join(product[k]['centred']) or '-'})",
                     pinned_cell(product[k]),
                     f"{cell(other[k])} ({','.join(other[k]['centred'])})" if k in other else "-",
                     f"{other[k]['ess_per_cpu_s'] / product[k]['ess_per_cpu_s']:.2f}" if k in other else "-",
                     verdict])
    takes = bool(names) and all(k in other and k in product and holds(product[k], other[k]) for k in WHETHER)
    rows.append([case, "rule", "", "", f"candidate: {','.join(names) or 'none'}", "",
                 "takes the candidate" if takes else "keeps the product's"])
    return rows, takes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated bench cases")
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="read DIR/CASE-product.txt (and DIR/CASE-candidate.txt where there is a candidate)")
    ap.add_argument("--save", type=Path, default=None, help="also write what the bench printed to DIR")
    ap.add_argument("--record", default=None, help="also write benchmarks/studies/results/NAME.json")
    ap.add_argument("--provenance", default=None, help="with --from: when, on which code and at what load the "
                                                        "outputs were made (the record's notes)")
    o = ap.parse_args(argv)
    cases = [c for c in o.cases.split(",") if c]
    if unknown := [c for c in cases if c not in CASES]:
        print(f"unknown cases {unknown}: give cases of {', '.join(CASES)}", file=sys.stderr)
        return 2
    if o.source is not None and not all((o.source / f"{c}-product.txt").is_file() for c in cases):
        print(f"--from {o.source}: give a folder with CASE-product.txt for {', '.join(cases)}", file=sys.stderr)
        return 2
    rows, taken = [], []
    for case in cases:
        case_table, takes = case_rows(case, *outputs(case, o.source, o.save))
        rows += case_table
        taken += [case] if takes else []
    verdict = f"the rule takes its candidate for: {', '.join(taken) or 'none'}"
    print("\n".join([CELL, " | ".join(COLUMNS), *(" | ".join(r) for r in rows), verdict]))
    if o.record:
        write_record(o, "centring_per_family.py", CASES, CELL, verdict,
                     [{"title": "fresh data sets 6 to 9", "columns": COLUMNS, "rows": rows}],
                     made="made by --save runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The centred parameterisation chosen from each data set, against the non-centred default, per family, on fresh
data sets (issue 71 item 4).

    python benchmarks/studies/centring_by_data.py --product DIR --save DIR    # every case (~30 min on 2 cores)
    python benchmarks/studies/centring_by_data.py --product DIR --from DIR    # the outputs of earlier runs, re-read
    python benchmarks/studies/centring_by_data.py ... --record NAME   # also benchmarks/studies/results/NAME.json

``cogtestbed.inference.centring`` chooses, before a hierarchical fit samples, which parameters it samples centred:
those each subject's data pin (the Laplace standard errors at the subjects' estimates against the population's
spread: ``pinned`` < 0.5).  This study compares that choice with the default it replaces (the model's declared
``centred_parameters`` alone, every other parameter non-centred) on data sets 8 and 9 of every case of
``bench_hierarchical_vs_numpyro.py`` (20 subjects, 4 chains x (500 tune + 1000 draws), nutpie on one thread).

* The default's fits: ``DIR/CASE-product.txt`` of ``--product DIR``, what ``centring_per_family.py --save DIR``
  kept (the code before the data's choice, data sets 6 to 9 in one process; 8 and 9 are its third and fourth fits).
* The data's fits: the package with the choice, data sets 7 to 9 in one process (7 its warm-up; 8 and 9 its second
  and third fits), run now (``--save DIR`` keeps ``DIR/CASE-data.txt``) or read (``--from DIR``).
* The estimate against the posterior: on data sets 6 to 9, the Laplace ``pinned`` the choice is made from against
  the posterior's (the default's fit: the median over subjects of the posterior SD of a subject's unconstrained value
  over the population SD's posterior mean), and whether the two agree on the side of 0.5.

The rule, written down before the data's fits ran (28 Nov 2026, 08:50 UTC): **the data's choice replaces the
default** where, over every case's data sets 8 and 9, it (a) draws no more divergences in all, (b) leaves no more
fits above R-hat 1.01, and (c) gives a median ratio of min bulk ESS per CPU-second (the data's / the default's) of at
least 1.  **A family opts out** (``centre_pinned = False``) where, on its two data sets, the data's choice draws more
divergences in all or gives a lower rate on both.

Amended (28 Nov 2026, 09:34 UTC, after the data's fits of four cases had run and before the other thirteen's): **the
rule counts only the fits whose parameterisation the data's choice changed** (the "changed" fits: another set of
parameters centred than the default's).  A fit it did not change is the same sampler on the same data, and differs
from the default's by the two processes' timing alone: as first written, two-step hybrid (nothing centred on either
data set; rates 0.98 and 0.94 of the default's) would have opted out on timing noise, and the unchanged fits would
pull the median towards 1 by load alone.  Unchanged fits are listed, marked "same parameterisation".
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from centring_per_family import CASES, COMMON  # noqa: E402  (sibling study scripts, not a package)
from lowrank_per_family import cell, fits  # noqa: E402

BENCH = HERE.parent / "bench_hierarchical_vs_numpyro.py"
DATA_ARGS = [*COMMON, "--first-data-set", "7", "--reps", "3"]
JUDGED, ESTIMATED = (8, 9), (6, 7, 8, 9)
RHAT = 1.01
COLUMNS = ["case", "data set", "default (centred)", "data's choice (centred)", "data / default", "verdict"]
PINNED_COLUMNS = ["case", "data set", "pinned: Laplace / posterior per parameter", "agree on the side of 0.5"]
CELL = ("Each fit: min bulk ESS per CPU-second (min bulk ESS; CPU s), max R-hat, divergences, leapfrog steps a draw, "
        "and the parameters sampled centred")


def bench(case: str) -> str:
    """What the bench prints for ``case`` with the data's choice, in a fresh process on one thread."""
    env = {"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(BENCH), *DATA_ARGS, "--cases", case], capture_output=True, text=True,
                          check=False, env={**os.environ, **env})
    return done.stdout


def laplace_pinned(case: str) -> dict[int, dict[str, float]]:
    """The Laplace pinned measure of every parameter on data sets 6 to 9 of ``case`` (what the choice reads)."""
    from bench_hierarchical_vs_numpyro import CASES as BENCH_CASES
    from bench_hierarchical_vs_numpyro import tables

    from cogtestbed.inference.centring import pinned_by_data
    from cogtestbed.registry import get_experiment

    spec = dataclasses.replace(BENCH_CASES[case], subjects=min(20, BENCH_CASES[case].subjects))
    model = get_experiment(spec.experiment).model(spec.model)  # belief coherence's cells: the same likelihood
    return {k: pinned_by_data(model, model.subject_data(t))
            for k, t in zip(ESTIMATED, tables(spec, len(ESTIMATED), ESTIMATED[0]), strict=True)}


def fit_cell(row: dict[str, Any]) -> str:
    return f"{cell(row)} ({','.join(row.get('centred', [])) or '-'})"


def case_rows(case: str, default: dict[int, dict[str, Any]], data: dict[int, dict[str, Any]]
              ) -> tuple[list[list[str]], dict[str, Any]]:
    """The case's rows on the judged data sets, and its totals for the rule."""
    rows, ratios, changed = [], [], []
    for k in JUDGED:
        if k not in default or k not in data:
            rows.append([case, str(k), fit_cell(default[k]) if k in default else "-",
                         fit_cell(data[k]) if k in data else "-", "-", "missing"])
            continue
        ratio = data[k]["ess_per_cpu_s"] / default[k]["ess_per_cpu_s"]
        same = data[k].get("centred", []) == default[k].get("centred", [])
        if not same:
            ratios.append(ratio)
            changed.append(k)
        rows.append([case, str(k), fit_cell(default[k]), fit_cell(data[k]), f"{ratio:.2f}",
                     "same parameterisation" if same else "changed"])
    complete = all(k in default and k in data for k in JUDGED)
    divergences = [sum(side[k]["divergences"] for k in changed) for side in (default, data)]
    high = [sum(side[k]["max_rhat"] > RHAT for k in changed) for side in (default, data)]
    opts_out = bool(changed) and (divergences[1] > divergences[0] or all(r < 1 for r in ratios))
    verdict = ("nothing changed" if not changed else "opts out" if opts_out else "keeps the data's choice")
    rows.append([case, f"changed fits ({len(changed)})", f"divergences {divergences[0]}, R-hat > 1.01 in {high[0]}",
                 f"divergences {divergences[1]}, R-hat > 1.01 in {high[1]}", "",
                 verdict if complete else "incomplete"])
    return rows, {"ratios": ratios, "divergences": divergences, "high": high, "opts_out": opts_out,
                  "complete": complete, "changed": len(changed)}


def pinned_rows(case: str, default: dict[int, dict[str, Any]], laplace: dict[int, dict[str, float]]
                ) -> tuple[list[list[str]], int, int]:
    """Laplace against posterior pinned per data set; the parameters compared and those on the same side of 0.5."""
    rows, compared, agreed = [], 0, 0
    for k in ESTIMATED:
        posterior = default.get(k, {}).get("pinned", {})
        pairs = [(p, laplace[k][p], posterior[p]) for p in laplace.get(k, {}) if p in posterior]
        same = [(lap < 0.5) == (post < 0.5) for _, lap, post in pairs]
        compared, agreed = compared + len(pairs), agreed + sum(same)
        rows.append([case, str(k), " ".join(f"{p} {lap:.2f}/{post:.2f}" for p, lap, post in pairs),
                     f"{sum(same)} of {len(pairs)}"])
    return rows, compared, agreed


def verdict(totals: dict[str, dict[str, Any]]) -> str:
    complete = [t for t in totals.values() if t["complete"]]
    ratios = [r for t in complete for r in t["ratios"]]
    div = [sum(t["divergences"][i] for t in complete) for i in (0, 1)]
    high = [sum(t["high"][i] for t in complete) for i in (0, 1)]
    median = statistics.median(ratios) if ratios else float("nan")
    takes = bool(ratios) and div[1] <= div[0] and high[1] <= high[0] and median >= 1
    out = [c for c, t in totals.items() if t["opts_out"]]
    return (f"over the {len(ratios)} changed fits of {len(complete)} cases' data sets 8 and 9: divergences {div[0]} "
            f"(default) against {div[1]} (the data's choice), fits above R-hat 1.01 {high[0]} against {high[1]}, "
            f"median rate ratio {median:.2f}: "
            f"the data's choice {'replaces' if takes else 'does not replace'} the default; opting out: "
            f"{', '.join(out) or 'none'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated bench cases")
    ap.add_argument("--product", type=Path, required=True, help="centring_per_family.py's --save folder")
    ap.add_argument("--from", dest="source", type=Path, default=None, help="read DIR/CASE-data.txt")
    ap.add_argument("--save", type=Path, default=None, help="also write what the bench printed to DIR")
    ap.add_argument("--record", default=None, help="also write benchmarks/studies/results/NAME.json")
    ap.add_argument("--provenance", default=None, help="when, on which code and at what load the outputs were made")
    o = ap.parse_args(argv)
    cases = [c for c in o.cases.split(",") if c]
    missing = [c for c in cases if c not in CASES or not (o.product / f"{c}-product.txt").is_file()
               or (o.source is not None and not (o.source / f"{c}-data.txt").is_file())]
    if missing:
        print(f"cases {missing}: give cases of {', '.join(CASES)} with --product DIR/CASE-product.txt "
              f"(and --from DIR/CASE-data.txt)", file=sys.stderr)
        return 2
    rows, estimate_rows, totals, compared, agreed = [], [], {}, 0, 0
    for case in cases:
        text = (o.source / f"{case}-data.txt").read_text(encoding="utf-8") if o.source else bench(case)
        if o.save is not None:
            o.save.mkdir(parents=True, exist_ok=True)
            (o.save / f"{case}-data.txt").write_text(text, encoding="utf-8")
        default = fits((o.product / f"{case}-product.txt").read_text(encoding="utf-8"))
        case_table, totals[case] = case_rows(case, default, fits(text))
        more, n, same = pinned_rows(case, default, laplace_pinned(case))
        rows, estimate_rows = rows + case_table, estimate_rows + more
        compared, agreed = compared + n, agreed + same
    summary = verdict(totals)
    agreement = f"Laplace and posterior pinned on the same side of 0.5 in {agreed} of {compared}"
    print("\n".join([CELL, " | ".join(COLUMNS), *(" | ".join(r) for r in rows), summary, "",
                     " | ".join(PINNED_COLUMNS), *(" | ".join(r) for r in estimate_rows), agreement]))
    if o.record:
        import recorded

        command = "python benchmarks/studies/centring_by_data.py --product DIR" + (
            "" if cases == CASES else f" --cases {o.cases}")
        notes = f"{CELL}; {summary}; {agreement}"
        if o.source is not None:
            notes = f"the data's fits re-read with --from ({o.provenance or 'provenance not given'}). " + notes
        recorded.write(o.record, command,
                       [{"title": "data sets 8 and 9: the default against the data's choice", "columns": COLUMNS,
                         "rows": rows},
                        {"title": "data sets 6 to 9: the Laplace pinned against the posterior's",
                         "columns": PINNED_COLUMNS, "rows": estimate_rows}], notes=notes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

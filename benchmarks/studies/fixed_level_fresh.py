"""The fixed test's type-I error on fresh, independent null studies, for each two-LLM plan question.

A monitor plan's "fixed" row and the monitor study (``benchmarks/studies/monitor.py``) measure the fixed test on
*pools*: studies resampled from one finite set of simulated units per hypothesis.  Every study then shares the
pool's chance offset (a null pool whose mean sits 2–3 SE off zero makes the two-sided test reject more than α in
every study drawn from it), so a pool's rejection rate is not the test's level.  This script measures the level
the way a claim "the fixed test exceeds α" needs: ``--sims`` (≥ 1,000) null studies, each simulated afresh
(its own units, seeds of its own: the package's power study with both groups the same setting), at the fixed
size the monitor study recorded, with the rate's MC SE and its 95 % Clopper–Pearson interval; "exceeds α" only
where the interval's lower end is above α.

    python benchmarks/studies/fixed_level_fresh.py                       # every question with a recorded size
    python benchmarks/studies/fixed_level_fresh.py --questions "temporal-discounting metric-power" --sims 1000
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: The monitor study's recorded questions (their fixed sizes and pool figures).
RECORDED = Path(__file__).with_name("monitor.jsonl")
#: Seed of the fresh null studies (a stream no plan or pool uses).
SEED = 95_003_001


def recorded(path: Path = RECORDED) -> dict[str, dict[str, Any]]:
    """The monitor study's rows by question."""
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["question"]] = row
    return out


def two_llm_questions(names: Sequence[str] | None = None) -> Iterator[tuple[str, Any]]:
    """(question, study) of every declared two-LLM plan question (a metric difference or a model parameter between
    two LLMs) whose name starts with one of ``names`` (all without)."""
    from cogtestbed.planning.monitor_questions import declared_questions

    from cogtestbed.registry import experiment_names, get_experiment

    for e in experiment_names():
        for q in declared_questions(get_experiment(e), (2,)):
            if q.spec is not None and (not names or any(q.name.startswith(n) for n in names)):
                yield q.name, q.spec


def null_study(spec: Any, size: int, sims: int, seed: int) -> Any:
    """``spec`` under the null at ``size`` units per group: a metric difference between one setting and itself,
    or a parameter's difference of 0."""
    common = {"reps": sims, "seed": seed}
    if getattr(spec, "compare", None) is not None:
        return spec.model_copy(update={**common, "compare": (spec.compare[0], spec.compare[0]), "runs": (size,)})
    return spec.model_copy(update={**common, "effect_size": 0.0, "subjects": (size,), "critical_p": None})


def level_row(question: str, spec: Any, size: int, sims: int, seed: int = SEED) -> dict[str, Any]:
    """The fixed test's rejection rate at ``size`` over ``sims`` fresh null studies, with its MC SE and interval."""
    from scipy import stats

    from cogtestbed.studies.driver import run_study

    start = time.perf_counter()
    table = run_study(null_study(spec, size, sims, seed), workers=1).table
    p = table["p_value"].to_numpy(float)
    level = float(getattr(spec, "level", 0.05) or 0.05)
    k, n = int(np.sum(p < level)), int(p.size)
    lo = float(stats.beta.ppf(0.025, k, n - k + 1)) if k else 0.0
    hi = float(stats.beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0
    r = k / n
    return {"question": question, "size": size, "studies": n, "without_p": int(np.sum(~np.isfinite(p))),
            "rate": r, "mc_se": math.sqrt(r * (1 - r) / n), "ci95": [lo, hi], "level": level,
            "exceeds": lo > level, "seconds": round(time.perf_counter() - start)}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", nargs="*", default=None, help="question name prefixes (default: all)")
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--json", default=None, help="append each row as a JSON line to this file")
    args = ap.parse_args(argv)
    if args.sims < 1000:
        raise SystemExit("error: --sims below 1,000: a level claim needs at least 1,000 fresh null studies")
    rec = recorded()
    print(f"{'question':<70} {'n':>4} {'pool (monitor study)':>22} {'fresh':>18} {'95% CI':>16}  exceeds α")
    for name, spec in two_llm_questions(args.questions):
        fixed = (rec.get(name) or {}).get("fixed_measured") or (rec.get(name) or {}).get("fixed")
        if not fixed:
            continue
        row = level_row(name, spec, int(fixed["n"]), args.sims)
        pool = f"{fixed['null_rejection']:.4f} ± {fixed['null_rejection_se']:.4f}"
        print(f"{name:<70} {row['size']:>4} {pool:>22} {row['rate']:>9.4f} ± {row['mc_se']:.4f} "
              f"[{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}]  {'YES' if row['exceeds'] else 'no'}   "
              f"({row['seconds']} s)", flush=True)
        if args.json:
            with open(args.json, "a") as fh:
                fh.write(json.dumps({**row, "pool": fixed}) + "\n")


if __name__ == "__main__":
    main()

"""Where an LLM-against-people plan's CPU goes, and the least it can cost at its protocol.

Risky choice's headline plan (λ of an LLM against all 282 of Spektor et al.'s people, ``--population
human:spektor2024-all``) simulates, in every study, 282 people drawn afresh from the population and
fits each by per-subject MLE; its calibration runs at least ``MIN_NULL_STUDIES`` null studies and as
many fresh ones at the chosen design (plus the search's).  So its CPU is, to a few per cent, the number of
per-subject fits times the CPU of one.  This script prints:

* ``fits``: the CPU of one prospect-theory fit at 98 trials (282 simulated deciders of the Spektor
  design, best of ``--repeats``), split into the start grid's NLL (9 × 9 × 9 rows: the group's at once
  where the model shares its terms, ``grid_shared``, else each subject's row kernel), the BFGS from the
  best starts, and the rest (Python: data packing, start order, results);
* ``floor``: the fits the headline plan's calibration alone makes (null and fresh studies × (people +
  the LLM's subjects at the largest size searched)) and the CPU they take at that rate: the least the
  plan can cost on this machine while every study fits its own people;
* ``reduced``: a reduced plan (30 of Spektor's people, λ + 1.0, ``--null-studies`` null and fresh
  studies instead of 1,000; one worker) — its CPU seconds and the figures it prints, to compare two
  checkouts (the same seed gives the same figures).

    python benchmarks/studies/people_plan_cost.py fits
    python benchmarks/studies/people_plan_cost.py floor
    python benchmarks/studies/people_plan_cost.py reduced --null-studies 20 --json /tmp/reduced.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from _timing import best_cpu_of  # noqa: E402

PEOPLE = 282
#: The headline question's largest LLM size (``--subjects 5:60``).
LLM_MAX = 60


def _deciders(n: int, seed: int = 0) -> Any:
    from cogtestbed.conformance.suite import prior_draws
    from cogtestbed.inference.risky import MODELS
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    model = MODELS["prospect-theory"]
    true = prior_draws(model.parameters, n, np.random.default_rng(seed))
    return model, simulate(get_experiment("risky-choice"), "prospect-theory", n, seed, params=true)


def fit_cpu(repeats: int) -> dict[str, float]:
    """CPU ms per subject of a whole ``fit_mle``, its start grid's NLL and its BFGS (282 deciders)."""
    from cogtestbed.inference.optim import mle_driver

    model, table = _deciders(PEOPLE)
    data = list(model.subject_data(table).values())
    grid = model.start_grid()
    driver = mle_driver(model._kernel())
    starts = []
    for d in data:
        order = model.start_order(model.nll_many(grid, d))[:model.n_starts]
        starts.append((np.ascontiguousarray(model._unconstrained_grid()[order]), model.objective_args(d)))

    shared = getattr(model, "grid_nlls", lambda _: None)(data) is not None  # the group's grid at once

    def grids() -> None:
        if shared:
            model.grid_nlls(data)
            return
        for d in data:
            model.nll_many(grid, d)

    def bfgs() -> None:
        for s, a in starts:
            driver(s, a, *model.bfgs_stop, np.inf)

    whole = best_cpu_of(lambda: model.fit_mle(table), repeats=repeats)
    g, b = best_cpu_of(grids, repeats=repeats), best_cpu_of(bfgs, repeats=repeats)
    ms = {k: round(1e3 * v / len(data), 3) for k, v in (("fit", whole), ("grid", g), ("bfgs", b))}
    return {**ms, "rest": round(ms["fit"] - ms["grid"] - ms["bfgs"], 3), "subjects": len(data),
            "grid_shared": shared}


def floor(per_fit_ms: float) -> dict[str, Any]:
    """The headline plan's calibration fits and their CPU at ``per_fit_ms``."""
    from cogtestbed.studies.people_level import MIN_NULL_STUDIES

    studies = 2 * MIN_NULL_STUDIES
    fits = studies * (PEOPLE + LLM_MAX)
    return {"null_and_fresh_studies": studies, "fits_at_most": fits, "people_fits": studies * PEOPLE,
            "per_fit_ms": per_fit_ms, "cpu_s_people_alone": round(studies * PEOPLE * per_fit_ms / 1e3, 1),
            "cpu_s_at_most": round(fits * per_fit_ms / 1e3, 1)}


def reduced(null_studies: int) -> dict[str, Any]:
    """The reduced plan's CPU seconds (this process) and its payload's figures (no timings)."""
    import cogtestbed as ct
    import cogtestbed.studies.people_level as people_level

    people_level.MIN_NULL_STUDIES = null_studies
    start = time.process_time()
    plan = ct.plan("risky-choice", model="prospect-theory", effect={"lambda": 1.0}, llm="openai:gpt-4o-mini",
                   population="human:spektor2024", subjects="10:40", mc_se=0.1, workers=1)
    cpu = time.process_time() - start
    return {"cpu_s": round(cpu, 1), "load": os.getloadavg()[0], "figures": _figures(plan.payload),
            "lines": plan.lines()}


def _figures(x: Any) -> Any:
    """``x`` without its timings (keys naming seconds, CPU, wall or an ETA)."""
    if isinstance(x, dict):
        return {k: _figures(v) for k, v in x.items()
                if not any(w in k for w in ("second", "cpu", "wall", "eta", "elapsed"))}
    if isinstance(x, list):
        return [_figures(v) for v in x]
    return x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("fits", "floor", "reduced"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--null-studies", type=int, default=20)
    ap.add_argument("--json", type=Path, default=None, help="reduced: write the figures here")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    if args.what == "fits":
        print(json.dumps({"bench": "prospect-theory fit, 98 trials, CPU ms per subject", **fit_cpu(args.repeats),
                          "load": load}))
    elif args.what == "floor":
        print(json.dumps({"bench": "headline plan's calibration fits", **floor(fit_cpu(args.repeats)["fit"]),
                          "load": load}))
    else:
        out = reduced(args.null_studies)
        if args.json is not None:
            args.json.write_text(json.dumps(out["figures"], indent=1, sort_keys=True, default=str))
        print("\n".join(out.pop("lines")))
        print(json.dumps({"bench": "reduced people plan", "cpu_s": out["cpu_s"], "load": out["load"]}))


if __name__ == "__main__":
    main()

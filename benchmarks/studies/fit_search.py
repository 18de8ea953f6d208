"""``plan --fit hierarchical`` on RW± optimism bias 0.2: sizes tried, power per size, time (issue 40 item 6).

The README's plan target (instrumental learning, rw-pm, optimism_bias = 0.2, 80 % power, α .05,
gpt-4o-mini prices): the per-subject MLE's plan (``ct.plan``, ``--mc-se``), then the size searched
with the hierarchical test from its choice (:func:`cogtestbed.planning.fitcheck.search_hierarchical`,
what ``plan --fit hierarchical`` runs after the MLE's search): each size tried with its power ± MC SE
and cost, the number of hierarchical fits, the chosen design and cost against the MLE's, and the
chosen size's bias and coverage.  With no ``--draws`` it is exactly
``cogtestbed plan instrumental-learning --model rw-pm --effect optimism_bias=0.2 --llm openai:gpt-4o-mini
--fit hierarchical --fit-sims N`` (2 chains x 500 draws per fit); ``--draws D`` fits each study with D
draws after D tuning steps (cheaper, less precise intervals: say so when quoting it).

    python benchmarks/studies/fit_search.py [--fit-sims 20] [--mc-se 0.03] [--workers 2] [--draws D]
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    import cogtestbed as ct
    from cogtestbed.planning.fitcheck import fit_check_lines

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit-sims", type=int, default=20)
    ap.add_argument("--mc-se", type=float, default=0.03)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--draws", type=int, default=None)
    ap.add_argument("--trials", default=None, help="--trials of the plan (default: the plan's own range)")
    opts = ap.parse_args()
    args = {"llm": "openai:gpt-4o-mini", "model": "rw-pm", "effect": "optimism_bias=0.2", "power": 0.8,
            "mc_se": opts.mc_se, "workers": opts.workers, "trials": opts.trials}
    print(f"RW± optimism bias 0.2, 80% power, --mc-se {opts.mc_se}, --fit-sims {opts.fit_sims}, "
          f"{opts.workers} workers, draws {opts.draws or 'default (500)'}; load {os.getloadavg()[0]:.1f}", flush=True)
    start = time.perf_counter()
    if opts.draws is None:
        payload = ct.plan("instrumental-learning", **args, fit="hierarchical", fit_sims=opts.fit_sims).to_dict()
        mle = payload["mle_chosen"]
        check = payload["fit_check"]
        chosen, cost = payload["chosen"], payload["cost"]
    else:
        mle, check, chosen, cost = _reduced(ct, args, opts)
    seconds = time.perf_counter() - start
    print(f"per-subject MLE plan: {mle['chosen']['design']}, power {mle['power']['rate']:.3f} "
          f"({mle['power']['sims']} sims), ${mle['cost']['dollars']:.4f}")
    for row in check["search"]:
        dollars = "-" if row.get("dollars") is None else f"${row['dollars']:.4f}"
        lo, hi = row["power_interval"]
        print(f"  hierarchical at {row['subjects']} subjects: power {row['power']:.3f} ± {row['power_mc_se']:.3f} "
              f"[95% {lo:.2f}, {hi:.2f}] ({row['studies']} fits), {dollars}")
    print(f"chosen with --fit hierarchical: {chosen['design']}, power {check['power']:.3f} ± "
          f"{check['power_mc_se']:.3f}, ${cost['dollars']:.4f} ({check['fits']} hierarchical fits, "
          f"search {check['seconds']:.0f} s; everything {seconds:.0f} s wall, load {os.getloadavg()[0]:.1f})")
    for line in fit_check_lines(check):
        print(line)


def _reduced(ct, args: dict, opts: argparse.Namespace) -> tuple[dict, dict, dict, dict]:
    """The MLE plan, then the hierarchical search with ``--draws`` draws per fit (the same functions
    ``plan --fit hierarchical`` calls, fewer draws)."""
    import dataclasses
    import json

    from cogtestbed.planning.fitcheck import search_hierarchical
    from cogtestbed.planning.pricing import Pricer
    from cogtestbed.planning.space import Point
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import design_for_trials
    from cogtestbed.studies.study_kinds import load_study

    plan = ct.plan("instrumental-learning", **args).to_dict()
    mle = {k: plan[k] for k in ("chosen", "cost", "power")}
    exp = get_experiment("instrumental-learning")
    point = Point(plan["chosen"]["subjects"], plan["chosen"]["runs"], plan["chosen"]["trials"])
    spec = load_study(json.dumps(plan["study"]))  # the study the MLE plan simulated
    pricer = Pricer(exp, ("openai:gpt-4o-mini",), seed=0)

    def price(at: Point):
        return pricer.exact(design_for_trials(exp, at.trials, at.design(spec.design)), at.subjects * at.runs)

    found = search_hierarchical(spec, exp, point, "subjects", 0.8, opts.fit_sims, opts.workers, price=price,
                                draws=opts.draws, tune=opts.draws)
    cost = dataclasses.asdict(price(found.point))
    chosen = {"design": found.point.label("subjects"), "subjects": found.point.subjects}
    return mle, found.check, chosen, cost


if __name__ == "__main__":
    main()

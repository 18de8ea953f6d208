"""An LLM's loss aversion against prospect-theory people, planned and priced (issue 52): the plan
``tests/test_population_risky.py`` runs, on its stand-in population (20 people, medians at the
model's prior means, between-subject SD 0.3 on the log scale), or on any population file
(``--population``, e.g. ``human:spektor2024``).  Prints the chosen design, its power
and price, and the plan's wall and CPU time.

    python benchmarks/studies/risky_people_plan.py                       # the stand-in, lambda=1.0
    python benchmarks/studies/risky_people_plan.py --population human:spektor2024 --effect 1.0 --subjects 10:200
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import cogtestbed as ct
from cogtestbed.inference.population import Population
from cogtestbed.registry import get_experiment

PEOPLE = 20


def stand_in(path: Path) -> str:
    """The test's stand-in population of prospect-theory people (seeded)."""
    model = get_experiment("risky-choice").model("prospect-theory")
    rng = np.random.default_rng(0)
    mu = {p.name: tuple(rng.normal(float(p.prior_mean), 0.05, 200)) for p in model.parameters}
    sigma = {p.name: tuple(np.abs(rng.normal(0.3, 0.02, 200))) for p in model.parameters}
    est = {p.name: tuple(float(v) for v in p.inside(p.to_constrained(rng.normal(float(p.prior_mean), 0.3, PEOPLE))))
           for p in model.parameters}
    Population(name="pt-stand-in", experiment="risky-choice", model="prospect-theory", subjects=PEOPLE, trials=98,
               mu=mu, sigma=sigma, estimates=est, source="simulated stand-in for people").save(path)
    return str(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--population", default=None, help="human:NAME or a file (default: the stand-in)")
    ap.add_argument("--effect", type=float, default=1.0, help="lambda difference (LLM minus people)")
    ap.add_argument("--subjects", default="5:40")
    ap.add_argument("--trials", default="98")
    ap.add_argument("--mc-se", type=float, default=0.1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pop = args.population or stand_in(Path(tmp) / "people.json")
        start, cpu = time.perf_counter(), time.process_time()
        plan = ct.plan("risky-choice", llm="openai:gpt-4o-mini", model="prospect-theory",
                       effect={"lambda": args.effect}, population=pop, subjects=args.subjects, trials=args.trials,
                       mc_se=args.mc_se, workers=1)
    payload = plan.to_dict()
    print(json.dumps({"target": payload["target"]["what"], "chosen": payload["chosen"],
                      "people": payload["study"]["people"], "wall_s": round(time.perf_counter() - start),
                      "cpu_s": round(time.process_time() - cpu)}, default=str))


if __name__ == "__main__":
    main()

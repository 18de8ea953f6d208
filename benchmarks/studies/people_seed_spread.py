"""The LLM-vs-people λ plan's power at seeds 0–4: how far the plan's recommended test's power moves with the seed.

The plan ``cogtestbed plan risky-choice --model prospect-theory --effect lambda=1.0 --llm openai:gpt-4o-mini
--population human:spektor2024-all`` sizes its design for the test it recommends: the nominal test where it
holds its level on the plan's null studies (at least 1,000, ``people_level.MIN_NULL_STUDIES``: upper
figure ≤ α + 2 MC SE), else the test at the critical p calibrated on those null studies.  This script plans it
at each seed and prints, per seed, the chosen design, the nominal test's level on the null studies, the
recommended test, the calibrated critical p and the recommended test's power measured on the plan's fresh
studies (seeds no search simulation used), then the spread (largest − smallest) of those powers.

    python benchmarks/studies/people_seed_spread.py                                   # spektor2024-all, seeds 0-4
    python benchmarks/studies/people_seed_spread.py --population stand-in --seeds 0,1  # the 20-person stand-in
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # the study scripts beside this one, also when a test loads it
from claims_audit import sibling  # noqa: E402  (the one loader of a sibling study script)

POPULATION = "human:spektor2024-all"


def recommended_power(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The recommended test of an LLM-against-people plan and its power on the plan's fresh studies: the
    calibrated test's where the plan recommends it, else the nominal test's (the calibrated section's
    fresh studies at the nominal level where it carries them, else the chosen design's power)."""
    cal = payload.get("calibrated_test") or {}
    chosen = payload["chosen"]
    if cal.get("recommended") == "calibrated":
        p = cal["power"]
        return {"test": "calibrated", "power": p["rate"], "mc_se": p["mc_se"], "critical_p": cal["critical_p"]}
    nominal = cal.get("nominal_power") or {"rate": chosen["power"], "mc_se": chosen["mc_se"]}
    return {"test": "nominal", "power": nominal["rate"], "mc_se": nominal["mc_se"],
            "critical_p": payload["target"].get("level", 0.05)}


def plan_at(seed: int, population: str, subjects: str, mc_se: float, workers: int) -> dict[str, Any]:
    """The λ + 1.0 plan at ``seed``: its chosen size, the nominal test's level, the recommended test and power."""
    import cogtestbed as ct

    payload = ct.plan("risky-choice", llm="openai:gpt-4o-mini", model="prospect-theory", effect={"lambda": 1.0},
                      population=population, subjects=subjects, mc_se=mc_se, seed=seed, workers=workers).to_dict()
    cal = payload.get("calibrated_test") or {}
    return {"seed": seed, "subjects": payload["chosen"]["subjects"], "search_power": payload["chosen"]["power"],
            "null_sims": cal.get("null_sims"), "nominal_type1": cal.get("nominal_rate"),
            "nominal_type1_mc_se": cal.get("nominal_rate_mc_se"), "nominal_holds": cal.get("nominal_holds"),
            "calibrated_critical_p": cal.get("critical_p"), "calibrated_power": (cal.get("power") or {}).get("rate"),
            **{f"recommended_{k}": v for k, v in recommended_power(payload).items()}}


def spread(rows: Sequence[Mapping[str, Any]]) -> float:
    """Largest less smallest recommended power over the seeds."""
    powers = [float(r["recommended_power"]) for r in rows]
    return max(powers) - min(powers)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--population", default=POPULATION, help="human:NAME, a file, or 'stand-in' (20 people)")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--subjects", default="10:200")
    ap.add_argument("--mc-se", type=float, default=0.03)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        pop = args.population
        if pop == "stand-in":
            pop = sibling("risky_people_plan").stand_in(Path(tmp) / "people.json")
        rows = []
        for s in (int(x) for x in args.seeds.split(",")):
            rows.append(plan_at(s, pop, args.subjects, args.mc_se, args.workers))
            print(json.dumps(rows[-1]), flush=True)
    powers = ", ".join(f"{r['recommended_power']:.3f}" for r in rows)
    print(f"recommended test's power over seeds {args.seeds}: {powers}; spread {spread(rows):.3f}")


if __name__ == "__main__":
    main()

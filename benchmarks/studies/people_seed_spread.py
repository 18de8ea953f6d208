"""The LLM-vs-people λ plan at seeds 0–4: how far its calibrated and recommended tests' powers move with the seed.

The plan ``cogtestbed plan risky-choice --model prospect-theory --effect lambda=1.0 --llm openai:gpt-4o-mini
--population human:spektor2024`` (Spektor's 30 people, the plan docs/human-data.md shows) sizes its design
for the test it recommends: the nominal test where it holds its level on the plan's null studies (at least
1,000, ``people_level.MIN_NULL_STUDIES``: upper figure ≤ α + 2 MC SE), else the test at the critical p
calibrated on those null studies.  This script plans it
at each seed and prints, per seed, the chosen design, the nominal test's level on the null studies, the
recommended test, the calibrated critical p, the calibrated test's power and the recommended test's power, both
measured on the plan's fresh studies (seeds no search simulation used; as many as its null studies), then the
spread (largest − smallest) of each power over the seeds.

    python benchmarks/studies/people_seed_spread.py                                   # spektor2024, seeds 0-4
    python benchmarks/studies/people_seed_spread.py --population human:spektor2024-all  # all 282 people (hours)
    python benchmarks/studies/people_seed_spread.py --seeds 3 > s3.jsonl    # one seed a process, then
    python benchmarks/studies/people_seed_spread.py --combine s0.jsonl s1.jsonl s2.jsonl s3.jsonl s4.jsonl
    python benchmarks/studies/people_seed_spread.py --population stand-in --seeds 0,1  # the 20-person stand-in
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # the study scripts beside this one, also when a test loads it
from claims_audit import sibling  # noqa: E402  (the one loader of a sibling study script)

POPULATION = "human:spektor2024"


def recommended_power(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The recommended test of an LLM-against-people plan and its power on the plan's fresh studies: the
    calibrated test's where the plan recommends it, else the nominal test's (the calibrated section's
    fresh studies at the nominal level where it carries them, else the chosen design's power, read off the
    studies that chose the design: marked ``from_choosing_pool``)."""
    cal = payload.get("calibrated_test") or {}
    chosen = payload["chosen"]
    if cal.get("recommended") == "calibrated":
        p = cal["power"]
        return {"test": "calibrated", "power": p["rate"], "mc_se": p["mc_se"], "critical_p": cal["critical_p"]}
    nominal = cal.get("nominal_power") or {"rate": chosen["power"], "mc_se": chosen["mc_se"],
                                           "from_choosing_pool": True}
    return {"test": "nominal", "power": nominal["rate"], "mc_se": nominal["mc_se"],
            "critical_p": payload["target"].get("level", 0.05),
            "from_choosing_pool": bool(nominal.get("from_choosing_pool"))}


def plan_at(seed: int, population: str, subjects: str | None, mc_se: float, workers: int) -> dict[str, Any]:
    """The λ + 1.0 plan at ``seed``: its chosen size, the nominal test's level, the recommended test and power."""
    import cogtestbed as ct

    start = time.perf_counter()
    payload = ct.plan("risky-choice", llm="openai:gpt-4o-mini", model="prospect-theory", effect={"lambda": 1.0},
                      population=population, mc_se=mc_se, seed=seed, workers=workers,
                      **({"subjects": subjects} if subjects else {})).to_dict()
    cal = payload.get("calibrated_test") or {}
    return {"seed": seed, "subjects": payload["chosen"]["subjects"], "search_power": payload["chosen"]["power"],
            "null_sims": cal.get("null_sims"), "nominal_type1": cal.get("nominal_rate"),
            "nominal_type1_mc_se": cal.get("nominal_rate_mc_se"), "nominal_holds": cal.get("nominal_holds"),
            "calibrated_critical_p": cal.get("critical_p"), "calibrated_power": (cal.get("power") or {}).get("rate"),
            "calibrated_power_mc_se": (cal.get("power") or {}).get("mc_se"),
            "fresh_studies": (cal.get("power") or {}).get("sims"), "seconds": round(time.perf_counter() - start),
            **{f"recommended_{k}": v for k, v in recommended_power(payload).items()}}


def spread(rows: Sequence[Mapping[str, Any]], key: str = "recommended_power") -> float:
    """Largest less smallest of ``key`` (a power) over the seeds."""
    powers = [float(r[key]) for r in rows]
    return max(powers) - min(powers)


def plan_seeds(args: argparse.Namespace) -> list[dict[str, Any]]:
    """:func:`plan_at` of each of ``args.seeds``, each row printed as a JSON line as it comes."""
    with tempfile.TemporaryDirectory() as tmp:
        pop = args.population
        if pop == "stand-in":
            pop = sibling("risky_people_plan").stand_in(Path(tmp) / "people.json")
        rows = []
        for s in (int(x) for x in args.seeds.split(",")):
            rows.append(plan_at(s, pop, args.subjects, args.mc_se, args.workers))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--population", default=POPULATION, help="human:NAME, a file, or 'stand-in' (20 people)")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--subjects", default=None, help="the searched range (default: the plan's own)")
    ap.add_argument("--mc-se", type=float, default=0.03)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--combine", nargs="+", default=None,
                    help="instead of planning, read the seeds' rows (the JSON lines this script printed, one run a "
                         "seed) from these files and print the spreads")
    args = ap.parse_args(argv)
    if args.combine:
        rows = [json.loads(line) for f in args.combine for line in Path(f).read_text().splitlines()
                if line.startswith("{")]
        args.seeds = ",".join(str(r["seed"]) for r in rows)
    else:
        rows = plan_seeds(args)
    for key, what in (("calibrated_power", "calibrated test's"), ("recommended_power", "recommended test's")):
        powers = ", ".join(f"{r[key]:.3f}" for r in rows)
        print(f"{what} power over seeds {args.seeds}: {powers}; spread {spread(rows, key):.3f}")
    tests = sorted({r["recommended_test"] for r in rows})
    print(f"recommended: {', '.join(tests)}; nominal type-I on the null studies: "
          + ", ".join(f"{r['nominal_type1']:.3f}" for r in rows))


if __name__ == "__main__":
    main()

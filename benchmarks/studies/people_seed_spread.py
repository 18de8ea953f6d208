"""The LLM-vs-people λ plan at seeds 0–4: how far its calibrated and recommended tests' powers move with the seed.

The plan ``cogtestbed plan risky-choice --model prospect-theory --effect lambda=1.0 --llm openai:gpt-4o-mini
--population human:spektor2024`` (Spektor's 30 people, the plan docs/human-data.md shows) sizes its design
for the test it recommends: the nominal test where it holds its level on the plan's level null studies (at least
1,000, ``people_level.MIN_NULL_STUDIES``, which choose nothing: rate ≤ α + 2 MC SE), else the test at the critical
p calibrated on twice as many other null studies (only then simulated).  This script plans it
at each seed and prints, per seed, the chosen design, the nominal test's level on the null studies, the
recommended test, the calibrated critical p and the calibrated test's power (where the plan calibrates: "-"
elsewhere) and the recommended test's power, both measured on the plan's fresh studies (seeds no search
simulation used; as many as its level null studies), then the
spread (largest − smallest) of each power over the seeds.

    python benchmarks/studies/people_seed_spread.py                                   # spektor2024, seeds 0-4
    python benchmarks/studies/people_seed_spread.py --population human:spektor2024-all  # all 282 people (hours)
    python benchmarks/studies/people_seed_spread.py --seeds 3 > s3.jsonl    # one seed a process, then
    python benchmarks/studies/people_seed_spread.py --combine s0.jsonl s1.jsonl s2.jsonl s3.jsonl s4.jsonl
    python benchmarks/studies/people_seed_spread.py --population stand-in --seeds 0,1  # the 20-person stand-in
    python benchmarks/studies/people_seed_spread.py --predict      # the spread to expect, before any seed is run

``--predict`` works the spread out in advance (a second block: the recommended test's power under the plan's
rule, :func:`predicted_rule_spread`) (:func:`predicted_spread`, seconds): the calibrated test's power
moves with the seed through two draws, the critical p (an order statistic of the null p-values) and the fresh
studies that measure the power (binomial); it prints, for several null and fresh study counts, the SD of the
calibrated power over seeds, the mean spread over five seeds and the chance that the spread reaches 0.05, at the
documented plan's figures (nominal power 0.846 on 1,000 fresh studies, nominal level 0.055 on 1,000 null studies,
calibration target 0.0375), under a normal model of the test's statistic and one design at every seed.
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

import numpy as np

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
    """Largest less smallest of ``key`` (a power) over the seeds that have it (NaN where none has: a plan whose
    nominal test holds its level calibrates nothing)."""
    powers = [float(r[key]) for r in rows if r.get(key) is not None]
    return max(powers) - min(powers) if powers else float("nan")


#: The documented Spektor λ + 1.0 plan's figures the prediction starts from: the nominal test's power on the fresh
#: studies, its rejection rate on the null studies, the level and the calibration's target.
SPEKTOR_FIGURES = {"power": 0.846, "null_rate": 0.055, "level": 0.05, "target": 0.0375}


def predicted_spread(null_sims: int, fresh_sims: int, seeds: int = 5, reps: int = 20_000, seed: int = 0,
                     figures: Mapping[str, float] = SPEKTOR_FIGURES) -> dict[str, float]:
    """The calibrated power's spread over ``seeds`` seeds to expect with ``null_sims`` calibration null studies and
    ``fresh_sims`` fresh studies: per replicate, each seed's critical p is the ⌊target·n⌋+1-th of ``null_sims``
    null p-values (a Beta order statistic of uniforms, scaled by the nominal test's null rate over the level), its
    power that of a two-sided z-test whose power at the level is ``figures['power']``, read on ``fresh_sims``
    binomial studies.  Returns the power's SD over seeds, the mean spread and P(spread ≥ 0.05)."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    delta = stats.norm.isf(figures["level"] / 2) + stats.norm.ppf(figures["power"])
    k = int(figures["target"] * null_sims) + 1
    crit = rng.beta(k, null_sims - k + 1, size=(reps, seeds)) * figures["level"] / figures["null_rate"]
    power = stats.norm.cdf(delta - stats.norm.isf(crit / 2))
    measured = rng.binomial(fresh_sims, power) / fresh_sims
    spread = measured.max(axis=1) - measured.min(axis=1)
    return {"sd": float(measured.std(axis=1, ddof=1).mean()), "mean_spread": float(spread.mean()),
            "p_spread_ge_005": float((spread >= 0.05).mean())}


def predicted_rule_spread(null_rate: float, level_sims: int, calibration_sims: int, fresh_sims: int, seeds: int = 5,
                          reps: int = 20_000, seed: int = 0,
                          figures: Mapping[str, float] = SPEKTOR_FIGURES) -> dict[str, float]:
    """The recommended test's power spread over ``seeds`` seeds under the plan's rule (``people_level``): the
    nominal test's level is measured on ``level_sims`` null studies that choose nothing; where its rate is at most
    α + 2 MC SE (:func:`~cogtestbed.studies.people_level.nominal_holds`) the nominal test is recommended and its
    power read on ``fresh_sims`` fresh studies, else the critical p is calibrated on ``calibration_sims`` other null
    studies (at :func:`~cogtestbed.planning.kinds.sequential.seqauto.calibration_level`) and the calibrated test's
    power read on the same fresh studies.  ``null_rate``: the nominal test's true level; the normal model and the
    one design at every seed of :func:`predicted_spread`.  Returns the power's SD over seeds, the mean spread,
    P(spread ≥ 0.05) and the chance that at least one seed recommends the calibrated test."""
    from scipy import stats

    from cogtestbed.planning.kinds.sequential.seqauto import calibration_level
    from cogtestbed.studies.people_level import nominal_holds

    rng = np.random.default_rng(seed)
    level = figures["level"]
    delta = stats.norm.isf(level / 2) + stats.norm.ppf(figures["power"])
    rejected = rng.binomial(level_sims, null_rate, size=(reps, seeds))
    holds = np.vectorize(lambda r: nominal_holds(int(r), level_sims, level))(rejected)
    pair = round(2 * calibration_sims * level_sims / (calibration_sims + level_sims))  # calibration_pair_count
    k = int(calibration_level(level, pair) * calibration_sims) + 1
    crit = rng.beta(k, calibration_sims - k + 1, size=(reps, seeds)) * level / null_rate
    power = np.where(holds, figures["power"], stats.norm.cdf(delta - stats.norm.isf(crit / 2)))
    measured = rng.binomial(fresh_sims, power) / fresh_sims
    spread = measured.max(axis=1) - measured.min(axis=1)
    return {"sd": float(measured.std(axis=1, ddof=1).mean()), "mean_spread": float(spread.mean()),
            "p_spread_ge_005": float((spread >= 0.05).mean()), "p_any_calibrated": float((~holds).any(axis=1).mean())}


def predict_rule_lines() -> list[str]:
    """:func:`predicted_rule_spread` at the plan's counts (1,000 level, 1,000 fresh) and calibration pools of
    1,000-4,000 null studies, for true nominal levels 0.050, 0.055 (the documented plan's) and 0.065, a line each."""
    out = ["predicted spread of the recommended test's power over seeds 0-4 under the plan's rule (the nominal "
           "test's level on 1,000 null studies that choose nothing; the calibrated test only where it is above "
           "alpha + 2 MC SE, calibrated on other null studies; 1,000 fresh studies):"]
    for rate in (0.050, 0.055, 0.065):
        for cal in (1_000, 2_000, 4_000):
            r = predicted_rule_spread(rate, 1_000, cal, 1_000)
            out.append(f"  true nominal level {rate:.3f}, {cal:>5,} calibration null studies: SD over seeds "
                       f"{r['sd']:.4f}, mean spread {r['mean_spread']:.3f}, P(spread >= 0.05) "
                       f"{r['p_spread_ge_005']:.2f}, P(some seed calibrates) {r['p_any_calibrated']:.2f}")
    return out


def predict_lines() -> list[str]:
    """:func:`predicted_spread` at the plan's current counts (1,000 and 1,000) and larger ones, a line each."""
    out = ["predicted spread of the calibrated power over seeds 0-4 (normal model, one design at every seed):"]
    for nulls, fresh in ((1_000, 1_000), (2_000, 1_000), (4_000, 1_000), (4_000, 4_000)):
        r = predicted_spread(nulls, fresh)
        out.append(f"  {nulls:>5,} null, {fresh:>5,} fresh studies: SD over seeds {r['sd']:.4f}, mean spread "
                   f"{r['mean_spread']:.3f}, P(spread >= 0.05) {r['p_spread_ge_005']:.2f}")
    order, hd = quantile_sds(1_000, SPEKTOR_FIGURES["target"])
    out.append(f"  the critical p from 1,000 uniform null p-values: SD {order:.4f} as the order statistic, {hd:.4f} as "
               f"the Harrell-Davis quantile (scipy.stats.mstats.hdquantiles): {1 - hd / order:.0%} less")
    return out


def quantile_sds(n: int, q: float, reps: int = 400, seed: int = 1) -> tuple[float, float]:
    """The SD over ``reps`` samples of ``n`` uniforms of their ``q`` quantile: the ⌊q·n⌋+1-th order statistic (the
    calibration's) and the Harrell–Davis estimate (scipy)."""
    from scipy.stats import mstats

    rng = np.random.default_rng(seed)
    draws = np.sort(rng.random((reps, n)), axis=1)
    order = draws[:, int(q * n)]
    hd = np.array([float(mstats.hdquantiles(d, [q])[0]) for d in draws])
    return float(order.std(ddof=1)), float(hd.std(ddof=1))


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
    ap.add_argument("--predict", action="store_true", help="print the spread to expect (no plan is run)")
    args = ap.parse_args(argv)
    if args.predict:
        print("\n".join(predict_lines() + predict_rule_lines()))
        return
    if args.combine:
        rows = [json.loads(line) for f in args.combine for line in Path(f).read_text().splitlines()
                if line.startswith("{")]
        args.seeds = ",".join(str(r["seed"]) for r in rows)
    else:
        rows = plan_seeds(args)
    for key, what in (("calibrated_power", "calibrated test's"), ("recommended_power", "recommended test's")):
        powers = ", ".join("-" if r.get(key) is None else f"{r[key]:.3f}" for r in rows)
        gap = spread(rows, key)
        said = "- (no seed has it)" if gap != gap else f"{gap:.3f}"  # NaN: no seed calibrates
        print(f"{what} power over seeds {args.seeds}: {powers}; spread {said}")
    tests = sorted({r["recommended_test"] for r in rows})
    print(f"recommended: {', '.join(tests)}; nominal type-I on the null studies: "
          + ", ".join(f"{r['nominal_type1']:.3f}" for r in rows))


if __name__ == "__main__":
    main()

"""The claims audit's people row: the nominal test's type-I error on the plan's level null studies and on fresh ones.

The audit's LLM-against-people plan (prospect theory's λ + 1.0 against the 20-person stand-in population,
``claims_audit.audit_people``; it chooses 5 LLM subjects at 98 trials) read a nominal type-I error of 0.087 on its
1,000 level null studies and 0.047 ± 0.017 on 150 fresh ones.  This script measures that design's nominal
(two-sided, α = .05) rejection rate on three pools of null studies, without planning again (the plan's study at
its chosen design, built as the plan builds it):

* ``level``: the plan's own level null studies (``seed + NULL_SEED_OFFSET``, the plan's simulator
  :func:`~cogtestbed.planning.plan.one_size_table`): reproduces the plan's figure;
* ``plan-fresh``: the plan's simulator on seeds no plan uses (``seed + AUDIT_SEED_OFFSET + 7``);
* ``study-fresh``: the package's study driver (:func:`~cogtestbed.studies.driver.run_study`, the audit's
  re-simulation) on the audit's own fresh null seeds (``seed + AUDIT_SEED_OFFSET + 1``).

Where ``level`` and ``plan-fresh`` differ by more than their MC error the plan's pool is off by chance; where
``plan-fresh`` and ``study-fresh`` differ, the two simulators draw different nulls.

    python benchmarks/studies/people_null_pools.py --pools level,plan-fresh,study-fresh --sims 1000
    python benchmarks/studies/people_null_pools.py --pools study-fresh --sims 2000 > b.jsonl   # one a process
    python benchmarks/studies/people_null_pools.py --combine a.jsonl b.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from claims_audit import AUDIT_SEED_OFFSET, LLM, MC_SE, sibling  # noqa: E402

#: The audit plan's chosen design (``claims-audit`` record: 5 LLM subjects, 98 trials, one run).
SUBJECTS, TRIALS = 5, 98
POOLS = ("level", "plan-fresh", "study-fresh")


class _Spec(Exception):
    def __init__(self, spec: Any) -> None:
        super().__init__("spec")
        self.spec = spec


def plan_spec(population: str, seed: int = 0) -> Any:
    """The audit plan's study (its searched spec, as :class:`~cogtestbed.planning.plan.Planner` holds it),
    stopping the plan before it simulates anything."""
    import cogtestbed as ct
    from cogtestbed.planning.plan import Planner

    def stop(self: Any) -> None:
        raise _Spec(self.spec)

    original = Planner.plan
    Planner.plan = stop  # type: ignore[method-assign]
    try:
        ct.plan("risky-choice", llm=LLM, model="prospect-theory", effect={"lambda": 1.0}, population=population,
                subjects="5:40", trials=str(TRIALS), mc_se=MC_SE, seed=seed, workers=1)
    except _Spec as got:
        return got.spec
    finally:
        Planner.plan = original  # type: ignore[method-assign]
    raise RuntimeError("the plan did not reach its search")


def pool_p_values(spec: Any, pool: str, sims: int) -> np.ndarray:
    """The nominal test's p-values and directions on ``sims`` null studies of ``pool``."""
    from cogtestbed.planning.plan import one_size_table
    from cogtestbed.planning.space import Point
    from cogtestbed.studies.driver import run_study
    from cogtestbed.studies.people_level import NULL_SEED_OFFSET

    base = int(spec.seed)
    null = spec.model_copy(update={"effect_size": 0.0, "critical_p": None})
    point = Point(SUBJECTS, 1, TRIALS)
    if pool == "study-fresh":
        from cogtestbed.planning.space import study_at

        at = study_at(null, point, sims).model_copy(update={"seed": base + AUDIT_SEED_OFFSET + 1})
        table = run_study(at, workers=1).table
    else:
        seed = base + (NULL_SEED_OFFSET if pool == "level" else AUDIT_SEED_OFFSET + 7)
        table = one_size_table(null.model_copy(update={"seed": seed}), point, sims, 1, f"{pool} null studies at")
    return table["p_value"].to_numpy(float)


def row(pool: str, p: np.ndarray, seconds: float) -> dict[str, Any]:
    """A pool's nominal rejection rate at .05 with its binomial MC SE."""
    hits = np.nan_to_num(p, nan=1.0) < 0.05
    rate = float(hits.mean())
    return {"pool": pool, "sims": int(p.size), "rejected": int(hits.sum()), "rate": rate,
            "mc_se": math.sqrt(max(rate * (1 - rate), 1e-12) / p.size), "seconds": round(seconds)}


def line(r: dict[str, Any]) -> str:
    return (f"{r['pool']:<12} {r['rejected']:>5} of {r['sims']:>5}: type-I {r['rate']:.4f} ± {r['mc_se']:.4f} "
            f"({r['seconds']} s)")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pools", default=",".join(POOLS))
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--combine", nargs="+", default=None, help="print the rows of earlier runs' JSON lines")
    ap.add_argument("--record", default=None, metavar="NAME",
                    help="write the rows to benchmarks/studies/results/NAME.json (recorded.py prints it)")
    ap.add_argument("--command", default=None, help="with --record: the command lines recorded")
    args = ap.parse_args(argv)
    if args.combine:
        rows = [json.loads(x) for f in args.combine for x in Path(f).read_text().splitlines() if x.startswith("{")]
    else:
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            spec = plan_spec(sibling("risky_people_plan").stand_in(Path(tmp) / "people.json"))
            for pool in args.pools.split(","):
                start = time.process_time()
                rows.append(row(pool, pool_p_values(spec, pool, args.sims), time.process_time() - start))
                print(json.dumps(rows[-1]), flush=True)
    out = [line(r) for r in rows]
    for a, b in zip(rows, rows[1:], strict=False):
        z = (a["rate"] - b["rate"]) / math.hypot(a["mc_se"], b["mc_se"])
        out.append(f"{a['pool']} - {b['pool']}: {a['rate'] - b['rate']:+.4f} ({z:+.2f} MC SE of the difference)")
    print("\n".join(out))
    if args.record:
        sibling("recorded").write(args.record, args.command or " ".join(["python", *sys.argv]), [], output=out)


if __name__ == "__main__":
    main()

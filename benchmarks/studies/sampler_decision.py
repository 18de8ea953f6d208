"""Issue 73's sampler decision: the experimental Gibbs sampler against maintained NUTS routes.

The Metropolis-within-Gibbs sampler (``sampler="gibbs"``, cogtestbed/inference/hierarchical_gibbs.py) stays
only if no maintained route reaches the population gate (max R-hat <= 1.01, 0 divergences) at <= 2x its CPU
on the populations it builds (``build_populations.py``: ``shahar2019``, ``spektor2024-all``).  Each route is
one fit with no doubling of the draws, run in its own process (CPU seconds: the process's threads and its
finished child processes, :func:`build_populations.cpu_seconds`, fair on a loaded machine where wall time is
not); the routes run side by side.

    python benchmarks/studies/sampler_decision.py shahar2019            # every route, then the table
    python benchmarks/studies/sampler_decision.py shahar2019 --route nutpie-lowrank   # one route: a JSON line
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_populations as bp  # noqa: E402


@dataclass(frozen=True)
class Route:
    sampler: str
    chains: int
    tune: int
    draws: int
    low_rank: bool = False


#: Per population: the Gibbs sampler as it built the shipped population, and the maintained routes the issue
#: names (nutpie with a low-rank mass matrix, longer chains, more chains), each sized near 2x Gibbs's CPU.
ROUTES = {
    "shahar2019": {
        "gibbs": Route("gibbs", 4, 1000, 2000),
        "nutpie-lowrank": Route("nutpie", 4, 1000, 1000, low_rank=True),
        "nutpie-longer": Route("nutpie", 4, 1000, 2000),
        "nutpie-8-chains": Route("nutpie", 8, 500, 1000),
    },
    "spektor2024-all": {  # hours of CPU each: docs/risky-choice.md records the runs
        "gibbs": Route("gibbs", 4, 1000, 16000),
        "nutpie-longer": Route("nutpie", 4, 1000, 3000),
    },
}


def run_route(name: str, route_name: str) -> dict[str, object]:
    """Fit population ``name`` by one route; its diagnostics and CPU seconds."""
    from cogtestbed.inference.hierarchical import fit_hierarchical

    build, route = bp.POPULATIONS[name], ROUTES[name][route_name]
    table, _ = bp.table_of(build, build.subjects)
    model = bp.configured_model(build, build.centred, route.low_rank)
    cpu, wall = bp.cpu_seconds(), time.perf_counter()
    fit = fit_hierarchical(model, table, draws=route.draws, tune=route.tune, chains=route.chains, seed=0,
                           max_draws=route.draws, warn=False, log_likelihood=False, sampler=route.sampler)
    d = fit.diagnostics
    rhat = float("nan") if d.max_rhat is None else float(d.max_rhat)
    return {"route": route_name, "chains x (tune + draws)": f"{route.chains} x ({route.tune} + {route.draws})",
            "cpu_s": round(bp.cpu_seconds() - cpu), "wall_s": round(time.perf_counter() - wall),
            "max_rhat": round(rhat, 4), "min_ess_bulk": round(float(d.min_ess_bulk)),
            "min_ess_tail": round(float(d.min_ess_tail)), "divergences": int(d.divergences),
            "gate": bool(rhat <= 1.01 and d.divergences == 0)}


def table(rows: list[dict[str, object]]) -> str:
    """The markdown table, with each route's CPU as a multiple of the Gibbs sampler's."""
    gibbs = next((float(r["cpu_s"]) for r in rows if r["route"] == "gibbs"), float("nan"))  # type: ignore[arg-type]
    head = "| route | chains x (tune + draws) | CPU s | x Gibbs CPU | wall s | max R-hat | min bulk / tail ESS | " \
           "divergences | gate |"
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        lines.append(f"| {r['route']} | {r['chains x (tune + draws)']} | {r['cpu_s']} | "
                     f"{float(r['cpu_s']) / gibbs:.2f} | {r['wall_s']} | {r['max_rhat']} | "  # type: ignore[arg-type]
                     f"{r['min_ess_bulk']} / {r['min_ess_tail']} | {r['divergences']} | "
                     f"{'passes' if r['gate'] else 'fails'} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", choices=sorted(ROUTES))
    ap.add_argument("--route", default=None, help="run this route only and print its JSON line")
    args = ap.parse_args()
    if args.route is not None:
        print(json.dumps(run_route(args.name, args.route)), flush=True)
        return
    print(f"uptime: {os.getloadavg()}", flush=True)
    procs = [subprocess.Popen([sys.executable, __file__, args.name, "--route", r], stdout=subprocess.PIPE, text=True)
             for r in ROUTES[args.name]]
    rows = []
    for p in procs:
        out, _ = p.communicate()
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    print(f"uptime: {os.getloadavg()}")
    print(table(rows))


if __name__ == "__main__":
    main()

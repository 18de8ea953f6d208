"""Issue 73's sampler decision: the experimental Gibbs sampler against maintained NUTS routes.

The Metropolis-within-Gibbs sampler (``sampler="gibbs"``, cogtestbed/inference/hierarchical_gibbs.py) stays
only if no maintained route reaches the population gate (max R-hat <= 1.01, 0 divergences) at <= 2x its CPU
on the populations it builds (``build_populations.py``: ``shahar2019``, ``spektor2024-all``).  Each route is
one fit with no doubling of the draws, run in its own process (CPU seconds: the process's threads and its
finished child processes, :func:`build_populations.cpu_seconds`, fair on a loaded machine where wall time is
not); the routes run side by side.

    python benchmarks/studies/sampler_decision.py shahar2019            # every route, then the table
    python benchmarks/studies/sampler_decision.py shahar2019 --route nutpie-lowrank   # one route: a JSON line
    python benchmarks/studies/sampler_decision.py spektor2024-all --out FILE   # also append each JSON line to FILE

Each maintained route runs under a CPU cap (``RLIMIT_CPU``, :data:`CPU_CAP`: a multiple of the Gibbs sampler's
recorded CPU on that population, generous enough that a route near 2x still reports its diagnostics); a route
the cap stops reports ``"stopped": "cpu cap"`` and fails the gate by construction.
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
        "gibbs": Route("gibbs", 4, 1000, 8000),
        # 0.83 CPU s a draw for centred diagonal NUTS (4 x (1,000 + 2,000): 9,903 s), so 2x Gibbs's 1,004 s
        # buys about 2,400 draws in all
        "nutpie-lowrank": Route("nutpie", 4, 300, 300, low_rank=True),
        "nutpie-longer": Route("nutpie", 4, 1000, 3000),
    },
}

#: Per population, the Gibbs sampler's recorded CPU seconds (docs/benchmarks.md: shahar2019 256 s at
#: 4 x (1,000 + 2,000); spektor2024-all 1,004 s at 4 x (1,000 + 8,000)) and the cap's multiple of it.
GIBBS_CPU = {"shahar2019": 256.0, "spektor2024-all": 1004.0}
CPU_CAP = {"shahar2019": 3.0, "spektor2024-all": 2.0}


def cap_cpu(name: str, route_name: str) -> None:
    """Stop this process (SIGXCPU) once a maintained route has spent its CPU cap on population ``name``."""
    import resource

    if route_name != "gibbs":
        cap = int(GIBBS_CPU[name] * CPU_CAP[name])
        resource.setrlimit(resource.RLIMIT_CPU, (cap, cap + 5))


def run_route(name: str, route_name: str) -> dict[str, object]:
    """Fit population ``name`` by one route; its diagnostics and CPU seconds."""
    from cogtestbed.inference.hierarchical import fit_hierarchical

    cap_cpu(name, route_name)

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


def table(rows: list[dict[str, object]], gibbs_recorded: float) -> str:
    """The markdown table, with each route's CPU as a multiple of the Gibbs sampler's (the side-by-side run's
    where there is one, else ``gibbs_recorded``)."""
    gibbs = next((float(r["cpu_s"]) for r in rows if r["route"] == "gibbs"), gibbs_recorded)  # type: ignore[arg-type]
    head = "| route | chains x (tune + draws) | CPU s | x Gibbs CPU | wall s | max R-hat | min bulk / tail ESS | " \
           "divergences | gate |"
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        cpu = r["cpu_s"]
        ratio = (f"{float(cpu) / gibbs:.2f}" if isinstance(cpu, (int, float))
                 else f"stopped at {CPU_CAP_OF(gibbs, cpu)}" if str(cpu).startswith(">=") else "stopped")
        lines.append(f"| {r['route']} | {r['chains x (tune + draws)']} | {cpu} | {ratio} | {r['wall_s']} | "
                     f"{r['max_rhat']} | {r['min_ess_bulk']} / {r['min_ess_tail']} | {r['divergences']} | "
                     f"{'passes' if r['gate'] else 'fails'} |")
    return "\n".join(lines)


def CPU_CAP_OF(gibbs: float, cpu: object) -> str:  # noqa: N802
    """The cap a stopped route reached, as a multiple of the Gibbs CPU (its row's ``cpu_s`` is ``">= N"``)."""
    return f"{float(str(cpu).removeprefix('>= ')) / gibbs:.2f}x"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", choices=sorted(ROUTES))
    ap.add_argument("--route", default=None, help="run this route only and print its JSON line")
    ap.add_argument("--routes", default=None, help="comma-separated routes to run (default: all)")
    ap.add_argument("--out", type=Path, default=None, help="also append each JSON line and the table to this file")
    args = ap.parse_args()
    if args.route is not None:
        print(json.dumps(run_route(args.name, args.route)), flush=True)
        return
    def say(line: str) -> None:
        print(line, flush=True)
        if args.out is not None:
            with args.out.open("a") as f:
                f.write(line + "\n")

    say(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC {args.name} load average {os.getloadavg()}")
    names = args.routes.split(",") if args.routes else list(ROUTES[args.name])
    procs = [subprocess.Popen([sys.executable, __file__, args.name, "--route", r], stdout=subprocess.PIPE, text=True)
             for r in names]
    rows = []
    for r, p in zip(names, procs, strict=True):
        out, _ = p.communicate()
        lines = out.strip().splitlines()
        rows.append(json.loads(lines[-1]) if p.returncode == 0 and lines else stopped_row(args.name, r, p.returncode))
        say(json.dumps(rows[-1]))
    say(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC load average {os.getloadavg()}")
    say(table(rows, GIBBS_CPU[args.name]))


def stopped_row(name: str, route_name: str, returncode: int) -> dict[str, object]:
    """The row of a route whose process did not finish: stopped by the CPU cap (SIGXCPU: its CPU is the cap)
    or by another signal (its CPU is not known)."""
    route = ROUTES[name][route_name]
    capped = returncode in (-24, 152)
    return {"route": route_name, "chains x (tune + draws)": f"{route.chains} x ({route.tune} + {route.draws})",
            "cpu_s": f">= {int(GIBBS_CPU[name] * CPU_CAP[name])}" if capped else "-", "wall_s": "-",
            "max_rhat": "-", "min_ess_bulk": "-", "min_ess_tail": "-", "divergences": "-", "gate": False,
            "stopped": f"exit {returncode}" + (" (SIGXCPU: the CPU cap)" if capped else "")}


if __name__ == "__main__":
    main()

"""``cogtestbed plan`` for RW± optimism bias 0.2 at 80 % power: wall and CPU time, MC error.

Target (closing note of the planning feature): subjects 10–200 × trials 96–480 searched in ≤ 60 s on
2 cores with Monte-Carlo error ≤ 0.03 at the chosen design.  Prints the chosen design with its
calls, tokens and dollars (openai:gpt-4o-mini prices, the dry-run path), the frontier, the wall
time and the CPU time of this process and its workers (on a shared machine the CPU time / cores
is the figure to compare with the target; the first run also compiles the numba kernels).
"""

from __future__ import annotations

import os
import resource
import time

from cogtestbed.planning.plan import Planner
from cogtestbed.planning.pricing import Pricer
from cogtestbed.planning.space import design_axes
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import study_spec

LLM = "openai:gpt-4o-mini"


def main() -> None:
    exp = get_experiment("instrumental-learning")
    spec = study_spec(kind="power", experiment=exp.name, models=("rw-pm",), effect="optimism_bias",
                     effect_size=0.2, seed=0)
    size, others = design_axes(spec, exp, "10:200", None, "96:480")
    pricer = Pricer(exp, (LLM,), seed=0)
    workers = min(2, os.cpu_count() or 1)
    start, own0 = time.perf_counter(), _own_cpu()
    result = Planner(spec, pricer, size, others, target=0.8, workers=workers).plan()
    wall, own = time.perf_counter() - start, _own_cpu() - own0
    c, e = result.chosen, result.chosen.estimate
    assert c.cost is not None
    print(f"chosen: {c.point.label('subjects')}: power {e.rate:.3f} ± {e.mc_se:.3f} (MC SE, {e.sims} sims); "
          f"{c.cost.calls:,} calls, {c.cost.prompt_tokens:,} prompt tokens, ${c.cost.dollars:.4f} on {LLM}")
    for f in result.frontier:
        assert f.cost is not None
        print(f"  frontier {f.point.label('subjects'):>26}: power {f.estimate.rate:.2f} ± {f.estimate.mc_se:.2f} "
              f"${f.cost.dollars:.4f}")
    print(f"designs simulated: {len(result.evaluated)}, simulated studies: {result.simulations}, "
          f"combinations pruned: {len(result.pruned)}")
    pool = result.cpu_seconds - own
    # the parent prices designs and runs each batch's first task while the workers wait: its CPU time is
    # serial; the workers' CPU time spreads over the cores
    bound = max(own + pool / workers, result.cpu_seconds / workers)
    print(f"wall {wall:.1f} s ({os.getloadavg()[0]:.1f} load on {os.cpu_count()} CPUs); CPU {result.cpu_seconds:.1f} s "
          f"= parent {own:.1f} s + workers {pool:.1f} s; on {workers} dedicated cores <= {bound:.1f} s "
          f"(parent + workers / {workers}); target <= 60 s: {'met' if bound <= 60 else 'MISSED'}; "
          f"MC SE {e.mc_se:.3f} <= 0.03: {'met' if e.mc_se <= 0.03 else 'MISSED'}")


def _own_cpu() -> float:
    """CPU seconds of this process alone (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()

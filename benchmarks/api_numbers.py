"""The numbers of issue #38, printed: ``python benchmarks/api_numbers.py [--runs N] [--skip-workflow]``.

1. ``cogtestbed --help`` CPU time (user + system, ``/usr/bin/time -f %U+%S``), median of N runs;
2. the Python workflow (simulate 40 RW± subjects → MLE → hierarchical → plot, ``ct.`` names only):
   its line count, that it runs, and its wall time;
3. the import graph (``tests/test_import_graph.py``): upward imports and cycles, ``TYPE_CHECKING``
   imports included.
"""

from __future__ import annotations

import argparse
import graphlib
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: simulate 40 RW± subjects → MLE → hierarchical → plot, as docs/api.md shows it.
WORKFLOW = '''\
import cogtestbed as ct

trials = ct.simulate("instrumental-learning", "rw-pm", subjects=40, seed=1,
                     params={"alpha_pos": [0.2, 0.5, 0.8, 0.35] * 10, "alpha_neg": 0.3, "beta": 5.0})
mle = ct.fit("instrumental-learning", trials, model="rw-pm")                    # one row per subject
post = ct.fit("instrumental-learning", trials, model="rw-pm", method="hierarchical", draws=500, chains=2)
print(post.diagnostics.report())                                                 # R-hat, ESS, divergences
figures = ct.plot_recovery(trials, mle, post)                                    # true vs estimated
print(figures.paths)
'''


def help_cpu(runs: int) -> list[float]:
    """CPU seconds (user + system) of ``cogtestbed --help``, one per run."""
    exe = shutil.which("cogtestbed") or str(Path(sys.executable).with_name("cogtestbed"))
    out = []
    for _ in range(runs):
        proc = subprocess.run(["/usr/bin/time", "-f", "%U %S", exe, "--help"], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
        user, system = proc.stderr.strip().splitlines()[-1].split()
        out.append(float(user) + float(system))
    return out


def graph_numbers() -> tuple[int, int]:
    """(upward imports, modules on an import cycle) of the package."""
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tests" / "test_import_graph.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    graph = mod.import_graph(type_checking=True)
    try:
        graphlib.TopologicalSorter(graph).prepare()
        cycles = 0
    except graphlib.CycleError as exc:
        cycles = len(exc.args[1]) - 1
    return len(mod.upward_imports(graph)), cycles


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--skip-workflow", action="store_true")
    args = ap.parse_args()
    cpu = help_cpu(args.runs)
    print(f"cogtestbed --help: median {statistics.median(cpu):.3f} s CPU (user+sys) over {args.runs} runs "
          f"(min {min(cpu):.3f}, max {max(cpu):.3f})")
    upward, cycles = graph_numbers()
    print(f"import graph: {upward} upward imports, {cycles} modules on a cycle (TYPE_CHECKING imports included)")
    lines = [ln for ln in WORKFLOW.splitlines() if ln.strip()]
    uses = {w.split("(")[0] for ln in lines for w in ln.split() if w.startswith("ct.")}
    print(f"workflow: {len(lines)} non-blank lines, names used: {', '.join(sorted(uses))}")
    if not args.skip_workflow:
        start = time.perf_counter()
        exec(compile(WORKFLOW, "workflow", "exec"), {})  # noqa: S102 - the documented example, run as written
        print(f"workflow ran in {time.perf_counter() - start:.1f} s (wall)")


if __name__ == "__main__":
    main()

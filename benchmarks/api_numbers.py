"""The numbers of issue #38: ``python benchmarks/api_numbers.py [--runs N] [--before DIR] [--skip-workflow]``.

1. ``cogtestbed --help`` CPU time (user + system of the process), median of N runs, as the console
   script and as ``python -m cogtestbed``; ``--before DIR`` measures another checkout alongside;
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
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
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


def help_cpu(runs: int, trees: list[Path]) -> dict[tuple[str, Path], list[float]]:
    """CPU seconds (user + system, the child's ``getrusage``) of ``cogtestbed --help`` as the console
    script and as ``python -m cogtestbed``, one per run, for each checkout in ``trees``; the runs of
    all (command, checkout) pairs are interleaved, so a change of load falls on each alike.  Run
    from a folder outside every checkout (``python -m`` puts the working folder first on the path)."""
    exe = shutil.which("cogtestbed") or str(Path(sys.executable).with_name("cogtestbed"))
    commands = {"cogtestbed --help": [exe, "--help"], "python -m cogtestbed --help": [sys.executable, "-m",
                                                                                       "cogtestbed", "--help"]}
    out: dict[tuple[str, Path], list[float]] = {(name, tree): [] for name in commands for tree in trees}
    with tempfile.TemporaryDirectory() as elsewhere:
        for _ in range(runs):
            for name, tree in out:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(commands[name], stdout=subprocess.DEVNULL, cwd=elsewhere, check=True,
                               env={**os.environ, "PYTHONPATH": str(tree)})
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                out[name, tree].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
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
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--before", type=Path, help="Another checkout whose --help is measured alongside.")
    ap.add_argument("--skip-workflow", action="store_true")
    args = ap.parse_args()
    trees = [ROOT, *([args.before] if args.before else [])]
    for (name, tree), cpu in help_cpu(args.runs, trees).items():
        q1, _, q3 = statistics.quantiles(cpu, n=4)
        print(f"{name} ({tree}): median {statistics.median(cpu):.3f} s CPU (user+sys) over {args.runs} runs "
              f"(quartiles {q1:.3f}, {q3:.3f})")
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

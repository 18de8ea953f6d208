"""Whole-workflow times, before and after: what a user waits for, in one run.

Each workflow is a whole ``cogtestbed`` process, run in two checkouts (``--before`` and ``--after``,
each imported through ``PYTHONPATH``) alternately, round after round, so that both see the same
load; the order within a round flips every other round. A first, untimed round fills both
checkouts' numba on-disk caches and bytecode caches (every timing is warm; ``--warmup 0`` skips it
where both are warm already). Prints the median wall
and CPU seconds (the process and its workers) of each workflow in each checkout and the change:

* ``cogtestbed --help``;
* ``cogtestbed demo`` (simulate -> metrics -> power -> report, ``make demo``'s job);
* ``cogtestbed metrics instrumental-learning <CogBench gpt-4.csv> --json`` (warm numba cache);
* ``cogtestbed recover instrumental-learning --model rw-pm --subjects 50 --reps 100 --method mle
  --seed 1 --json`` (the README's recovery study, 2 workers);
* ``cogtestbed plan instrumental-learning --model rw-pm --effect optimism_bias=0.2 --power 0.8
  --llm openai:gpt-4o-mini --json`` (the README's planning benchmark, 2 workers).

On a shared machine compare the CPU columns; the wall columns are what a user of an idle machine
waits. Usage::

    git -C /work/main worktree add /work/wt-before a1c057e   # the checkout to compare against
    python benchmarks/bench_workflows.py --before /work/wt-before [--after .] [--repeats 3] [--only help,metrics]
        [--warmup 1] [--after-args demo=--no-real-model]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPT4 = ROOT.parent / "shared/data/cogbench/InstrumentalLearning/gpt-4.csv"

#: Workflow name -> its ``cogtestbed`` arguments, given a fresh output folder.
WORKFLOWS: dict[str, Callable[[Path], list[str]]] = {
    "help": lambda out: ["--help"],
    "demo": lambda out: ["demo", "-o", str(out), "--force"],
    "metrics": lambda out: ["metrics", "instrumental-learning", str(GPT4), "--json"],
    "recover": lambda out: ["recover", "instrumental-learning", "--model", "rw-pm", "--subjects", "50",
                            "--reps", "100", "--method", "mle", "--seed", "1", "--workers", "2", "--json"],
    "plan": lambda out: ["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2",
                         "--power", "0.8", "--llm", "openai:gpt-4o-mini", "--workers", "2", "--json", "-o", str(out)],
}


@dataclass
class Times:
    """Wall and CPU seconds of every timed run of one workflow in one checkout."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def run(checkout: Path, args: list[str], scratch: Path) -> tuple[float, float]:
    """(wall s, CPU s of the process and its children) of ``python -m cogtestbed ARGS`` importing ``checkout``."""
    wall, cpu, _ = timed_cogtestbed(checkout, args, scratch)
    return wall, cpu


def timed_cogtestbed(checkout: Path, args: list[str], scratch: Path) -> tuple[float, float, str]:
    """(wall s, CPU s of the process and its children, its stdout) of ``python -m cogtestbed ARGS``
    importing ``checkout``, in ``scratch``; a failure raises with the end of its stderr."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "NUMBA_CACHE_DIR")}
    env.update({"PYTHONPATH": str(checkout), "COLUMNS": "100"})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cogtestbed", *args], capture_output=True, text=True, cwd=scratch,
                          env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{checkout}: cogtestbed {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def one_round(checkouts: dict[str, Path], names: list[str], flip: bool, scratch: Path,
              extra: dict[tuple[str, str], list[str]]) -> dict[tuple[str, str], tuple[float, float]]:
    """Every workflow once in every checkout, the checkouts alternating workflow by workflow; ``extra``:
    arguments added to a (workflow, side)'s command."""
    sides = list(checkouts)[::-1] if flip else list(checkouts)
    out = {}
    for name in names:
        for side in sides:
            folder = Path(tempfile.mkdtemp(prefix=f"{name}-{side}-", dir=scratch))
            args = WORKFLOWS[name](folder / "out") + extra.get((name, side), [])
            out[(name, side)] = run(checkouts[side], args, folder)
            shutil.rmtree(folder, ignore_errors=True)
    return out


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} CPUs"


def table(times: dict[tuple[str, str], Times], names: list[str]) -> str:
    """Medians per workflow: before, after and the change, wall and CPU."""
    head = ("| workflow | before wall s | after wall s | change | before CPU s | after CPU s | change |\n"
            "|---|---:|---:|---:|---:|---:|---:|")
    rows = [head]
    for name in names:
        b, a = times[(name, "before")], times[(name, "after")]
        bw, aw, bc, ac = (statistics.median(v) for v in (b.wall, a.wall, b.cpu, a.cpu))
        rows.append(f"| {name} | {bw:.2f} | {aw:.2f} | {100 * (aw / bw - 1):+.0f} % | {bc:.2f} | {ac:.2f} | "
                    f"{100 * (ac / bc - 1):+.0f} % |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="The checkout to compare against.")
    parser.add_argument("--after", type=Path, default=ROOT, help="The checkout measured (default: this one).")
    parser.add_argument("--repeats", type=int, default=3, help="Timed rounds (default 3); medians are printed.")
    parser.add_argument("--only", default=",".join(WORKFLOWS), help="Comma list of workflows (default: all).")
    parser.add_argument("--after-args", action="append", default=[], metavar="WORKFLOW=ARGS",
                        help="Arguments added to a workflow in the after checkout only, e.g. "
                             "'demo=--no-real-model' (an option the before checkout lacks).")
    parser.add_argument("--warmup", type=int, default=1,
                        help="Untimed rounds first (default 1; 0 where both checkouts' caches are already warm).")
    opts = parser.parse_args()
    names = [n for n in opts.only.split(",") if n]
    unknown = sorted(set(names) - set(WORKFLOWS))
    if unknown:
        parser.error(f"unknown workflow(s) {', '.join(unknown)}; choose from {', '.join(WORKFLOWS)}")
    checkouts = {"before": opts.before.resolve(), "after": opts.after.resolve()}
    extra = {(spec.partition("=")[0], "after"): spec.partition("=")[2].split() for spec in opts.after_args}
    for side, path in checkouts.items():
        commit = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
        print(f"{side}: {path} ({commit or 'not a git checkout'})", flush=True)
    times = {(n, s): Times() for n in names for s in checkouts}
    with tempfile.TemporaryDirectory(prefix="bench-workflows-") as tmp:
        scratch = Path(tmp)
        for _ in range(opts.warmup):
            print(f"warm-up round (fills both caches; {load()})", flush=True)
            one_round(checkouts, names, False, scratch, extra)
        for k in range(opts.repeats):
            for key, (wall, cpu) in one_round(checkouts, names, k % 2 == 1, scratch, extra).items():
                times[key].wall.append(wall)
                times[key].cpu.append(cpu)
            print(f"round {k + 1}/{opts.repeats} done ({load()}): "
                  + ", ".join(f"{n} {times[(n, 'before')].wall[-1]:.2f}/{times[(n, 'after')].wall[-1]:.2f} s"
                              for n in names), flush=True)
    print(f"\nmedians of {opts.repeats} alternated rounds ({load()}):\n")
    print(table(times, names))


if __name__ == "__main__":
    main()

"""Fixed costs a user feels around the fits: start-up, help pages, compilation, study overhead.

Prints, each as wall and CPU seconds of whole processes (the machine may be shared: CPU time is
the figure to compare; the load average is printed with each):

* ``cogtestbed --help`` and every ``cogtestbed COMMAND --help`` (target ≤ 0.5 s each);
* ``import cogtestbed.cli``;
* ``cogtestbed metrics instrumental-learning <CogBench gpt-4.csv>`` with a cold numba cache
  (an empty ``NUMBA_CACHE_DIR``) and warm (the same directory again; target ≤ 1.5 s), then
  ``cogtestbed metrics`` on gpt-4's file of every CogBench task and ``cogtestbed fit rw-pm
  gpt-4.csv --method mle`` (warm; target ≤ 1.5 s each);
* the compile share of a recovery worker: a worker forked after the parent ran the first task
  (as :func:`~cogtestbed.studies.driver.run_study` does) and, for contrast, a fresh
  interpreter loading everything from the on-disk cache;
* ``cogtestbed recover instrumental-learning --model rw-pm --reps 100 --subjects 50 --workers 2``
  (target ≤ 15 s on 2 cores).

Each fitting call is printed next to the floor measured in the same run: a process that only
imports what every such call needed (``python -c "import pandas, numba, scipy.linalg"``), and the
same imports without the interpreter's teardown, as the command line ends
(:func:`cogtestbed.cli.exit_process`).

With ``--baseline DIR`` (another checkout, e.g. ``main`` before a change) every fitting call also
runs in that checkout, alternating with this one run by run, and is printed with the CPU and wall
this checkout saves: a before/after comparison under the same load.

Usage: ``python benchmarks/bench_fixed_costs.py [--reps 100] [--repeats 3] [--skip-recovery]
[--skip-help] [--skip-worker] [--baseline DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COGBENCH = ROOT.parent / "shared/data/cogbench"
GPT4 = COGBENCH / "InstrumentalLearning/gpt-4.csv"
#: The CogBench experiments and the folders of their released files.
COGBENCH_TASKS = {"instrumental-learning": "InstrumentalLearning", "bart": "BART", "horizon": "HorizonTask",
                  "two-step": "TwoStepTask", "restless-bandit": "RestlessBandit",
                  "probabilistic-reasoning": "ProbabilisticReasoning", "temporal-discounting": "TemporalDiscounting"}
HELP_TARGET, FIT_TARGET, RECOVERY_TARGET = 0.5, 1.5, 15.0
#: The imports every fitting call needs: pandas (with pyarrow), numba and the scipy.linalg numba's
#: linear algebra loads on a kernel's first use; no cogtestbed call can start faster.
FLOOR = "import pandas, numba, scipy.linalg"
#: What a fitting call imports now, ended as the command line ends its process (``os._exit``).
QUICK_FLOOR = "import os, pandas, numba; os._exit(0)"

WORKER_PROBE = """
import json, multiprocessing, os, sys, time
from numba.core.event import install_timer
from cogtestbed.studies.driver import run_chunk, StudySpec, study_spec
spec = study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",), subjects=(50,),
                 reps=6, seed=0)
payload, tasks = spec.model_dump_json(), spec.tasks()

def worker(chunk, queue):
    compile_s = [0.0]
    def add(dt): compile_s[0] += dt
    cpu, wall = time.process_time(), time.perf_counter()
    with install_timer("numba:compile", add):
        run_chunk(payload, chunk)
    queue.put({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall, "compile": compile_s[0]})

fork = multiprocessing.get_context("fork")
queue = fork.Queue()
if sys.argv[1] == "forked":  # as run_study: the parent runs the first task, then forks
    run_chunk(payload, tasks[:1])
p = fork.Process(target=worker, args=(tasks[1:], queue))
p.start(); out = queue.get(); p.join()
print(json.dumps(out))
"""


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} CPUs"


def run(args: list[str], env: dict[str, str] | None = None, root: Path = ROOT) -> tuple[float, float, str]:
    """(wall s, CPU s of the process and its children, stdout) of ``python ARGS`` in the checkout ``root``.

    Python's bytecode cache is on (``PYTHONDONTWRITEBYTECODE`` dropped), as in any installed copy:
    a warm machine has compiled both the kernels (numba's cache) and the modules (``.pyc``).
    """
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=root, check=False,
                          env={**base, "PYTHONPATH": str(root), "COLUMNS": "100", **(env or {})})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def best(args: list[str], repeats: int = 3, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Best wall and best CPU of ``repeats`` runs."""
    runs = [run(args, env)[:2] for _ in range(repeats)]
    return min(w for w, _ in runs), min(c for _, c in runs)


def best_of_both(args: list[str], baseline: Path, repeats: int = 3) -> tuple[tuple[float, float], tuple[float, float]]:
    """Best (wall, CPU) of ``repeats`` runs here and in ``baseline``, the two alternating run by run."""
    here, there = [], []
    for _ in range(repeats):
        here.append(run(args)[:2])
        there.append(run(args, root=baseline)[:2])
    return ((min(w for w, _ in here), min(c for _, c in here)),
            (min(w for w, _ in there), min(c for _, c in there)))


def fit_call(label: str, args: list[str], repeats: int, baseline: Path | None) -> None:
    """One fitting call (warm caches), next to the baseline checkout's where one is given."""
    run(args)  # fills the cache of this checkout's kernels
    if baseline is None:
        line(label, *best(args, repeats), FIT_TARGET)
        return
    run(args, root=baseline)
    (wall, cpu), (base_wall, base_cpu) = best_of_both(args, baseline, repeats)
    line(label, wall, cpu, FIT_TARGET)
    print(f"{'  baseline ' + baseline.name:<46} wall {base_wall:6.2f} s  CPU {base_cpu:6.2f} s  "
          f"(saved here: wall {base_wall - wall:+.2f} s, CPU {base_cpu - cpu:+.2f} s)", flush=True)


def line(label: str, wall: float, cpu: float, target: float | None = None) -> None:
    verdict = "" if target is None else f"  target ≤ {target:g} s: {'met' if cpu <= target else 'MISSED'} (CPU)"
    print(f"{label:<46} wall {wall:6.2f} s  CPU {cpu:6.2f} s  ({load()}){verdict}", flush=True)


def bench_help() -> None:
    commands = run(["-c", "import json, typer.main; from cogtestbed.cli import app; "
                          "print(json.dumps(sorted(typer.main.get_command(app).commands)))"])[2]
    line("cogtestbed --help", *best(["-m", "cogtestbed", "--help"]), HELP_TARGET)
    for name in json.loads(commands.strip().splitlines()[-1]):
        line(f"cogtestbed {name} --help", *best(["-m", "cogtestbed", name, "--help"], repeats=2), HELP_TARGET)
    line("import cogtestbed.cli", *best(["-c", "import cogtestbed.cli"]))


def cogbench_file(folder: str) -> Path:
    """gpt-4's released file of a CogBench task (the first agent's where gpt-4 has none)."""
    path = COGBENCH / folder / "gpt-4.csv"
    return path if path.exists() else sorted((COGBENCH / folder).glob("*.csv"))[0]


def bench_fit_call(repeats: int = 3, baseline: Path | None = None) -> None:
    line(f'floor: python -c "{FLOOR}"', *best(["-c", FLOOR], repeats))
    line(f'floor: python -c "{QUICK_FLOOR}"', *best(["-c", QUICK_FLOOR], repeats))
    args = ["-m", "cogtestbed", "metrics", "instrumental-learning", str(GPT4), "--json"]
    with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
        env = {"NUMBA_CACHE_DIR": cache}
        line("metrics gpt-4.csv, cold numba cache", *run(args, env)[:2])
        line("metrics gpt-4.csv, warm numba cache", *best(args, repeats, env=env), FIT_TARGET)
    for name, folder in COGBENCH_TASKS.items():  # every fitting call on one CogBench file (warm cache)
        path = cogbench_file(folder)
        fit_call(f"metrics {name} {path.name}", ["-m", "cogtestbed", "metrics", name, str(path), "--json"], repeats,
                 baseline)
    with tempfile.TemporaryDirectory(prefix="fit-") as out:
        args = ["-m", "cogtestbed", "fit", "rw-pm", str(GPT4), "--method", "mle", "-o", out, "--force", "--json"]
        fit_call("fit rw-pm gpt-4.csv --method mle", args, repeats, baseline)
    line(f'floor: python -c "{FLOOR}"', *best(["-c", FLOOR], repeats))
    line(f'floor: python -c "{QUICK_FLOOR}"', *best(["-c", QUICK_FLOOR], repeats))


def bench_worker() -> None:
    for mode, label in (("forked", "worker forked after the parent's first task"),
                        ("fresh", "fresh worker (parent compiled nothing)")):
        out = json.loads(run(["-c", WORKER_PROBE, mode])[2].strip().splitlines()[-1])
        print(f"{label:<46} wall {out['wall']:6.2f} s  CPU {out['cpu']:6.2f} s, compiling {out['compile']:5.2f} s "
              f"wall ({100 * out['compile'] / max(out['wall'], 1e-9):.0f} % of the worker's wall)  ({load()})",
              flush=True)


def bench_recovery(reps: int) -> None:
    args = ["-m", "cogtestbed", "recover", "instrumental-learning", "--model", "rw-pm", "--reps", str(reps),
            "--subjects", "50", "--workers", "2", "--json"]
    wall, cpu, out = run(args)
    seconds = json.loads(out.strip().splitlines()[-1])["seconds"]
    line(f"recover rw-pm {reps} reps x 50 subjects, 2 workers", wall, cpu)
    print(f"{'':<46} study {seconds:.2f} s wall; CPU/2 = {cpu / 2:.2f} s "
          f"(the 2-core wall on an idle machine); target ≤ {RECOVERY_TARGET:g} s: "
          f"{'met' if cpu / 2 <= RECOVERY_TARGET else 'MISSED'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100, help="Recovery data sets (default 100).")
    parser.add_argument("--repeats", type=int, default=3, help="Runs of each fitting call; the best is shown.")
    parser.add_argument("--skip-recovery", action="store_true", help="Skip the recovery study.")
    parser.add_argument("--skip-help", action="store_true", help="Skip the help pages.")
    parser.add_argument("--skip-worker", action="store_true", help="Skip the recovery-worker compile probe.")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="Another checkout: run every fitting call there too, alternating, and print the saving.")
    opts = parser.parse_args()
    if not opts.skip_help:
        bench_help()
    bench_fit_call(opts.repeats, None if opts.baseline is None else opts.baseline.resolve())
    if not opts.skip_worker:
        bench_worker()
    if not opts.skip_recovery:
        bench_recovery(opts.reps)


if __name__ == "__main__":
    main()

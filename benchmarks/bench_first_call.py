"""CPU of the first ``cogtestbed simulate`` after a fresh install, and of a warm one (issue 54, item 2).

Runs the README's first command (``cogtestbed simulate instrumental-learning --agent rw-pm ...
--subjects 50``) in fresh processes:

* **cold**: numba's cache emptied (a new, empty ``NUMBA_CACHE_DIR``, which numba reads and writes
  instead of the package's ``__pycache__``) and a new, empty ``XDG_CACHE_HOME`` (every cogtestbed
  cache directory), as after ``pip install``; Python's bytecode cache is written but the kernels compile;
* **warm**: the same two directories again, as on every later call.

Prints user + system CPU seconds of the whole process (children included) for each of ``--repeats``
cold and warm runs, the best of each, the numba compile time of a cold run (numba's
``numba:compile`` events, outermost dispatchers), the kernels it compiled, and the machine's load
(the machine may be shared: CPU time inflates under load, the best run is the figure).  Target: cold
≤ 2 s CPU.

Usage: ``python benchmarks/bench_first_call.py [--repeats 3]``; ``--every-experiment``: one cold and one
warm first call of each experiment's first generating agent (10 subjects), the matrix (``--compile``: and
the compile CPU and dispatchers of the same call on the compiled path, ``--method batch``; ``--only NAME``:
one experiment);
``--interpreted-cost``: CPU microseconds a step of every agent's batch path with its kernels run as plain
Python (``method="interpreted"``, subjects enough for 5,000 steps, at least 2; a session's most steps), beside
the figure the agent declares for that design and those parameters (``SyntheticAgent.interpreted_cost_us``,
which ``method="auto"`` budgets with), at the defaults and at the parameter and design cases ``COST_CASES``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COLD_TARGET = 2.0
#: The README's first command (Quick start).
COMMAND = ["-m", "cogtestbed", "simulate", "instrumental-learning", "--agent", "rw-pm", "--param", "alpha_pos=0.4",
           "--param", "alpha_neg=0.2", "--param", "beta=5", "--subjects", "50", "--seed", "1"]
#: A cold call in-process, printing the numba compile seconds and the compiled dispatchers.
COMPILE_PROBE = """
import sys, time
from numba.core import event
done, depth, total = [], [0], [0.0]
class Outer(event.Listener):
    def on_start(self, ev):
        depth[0] += 1
        if depth[0] == 1: self.t = time.process_time()
    def on_end(self, ev):
        depth[0] -= 1
        done.append(ev.data["dispatcher"].py_func.__qualname__)
        if depth[0] == 0:  # the command line ends with os._exit: report after each outermost compile
            total[0] += time.process_time() - self.t
            print(f"compile CPU {total[0]:.2f} s;", len(done), "dispatchers:", ", ".join(sorted(set(done))),
                  file=sys.stderr, flush=True)
event.register("numba:compile", Outer())
from cogtestbed.cli import console_main
sys.argv = ["cogtestbed", *sys.argv[1:]]
console_main()
"""


def run(args: list[str], numba_dir: str, cache_home: str, out: Path) -> float:
    """CPU seconds (user + system, children included) of ``python ARGS -o OUT --force``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(NUMBA_CACHE_DIR=numba_dir, XDG_CACHE_HOME=cache_home, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, *args, "-o", str(out), "--force"], capture_output=True, text=True,
                          cwd=ROOT, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    compiled = [line for line in done.stderr.splitlines() if line.startswith("compile CPU")]
    if compiled:
        print("  " + compiled[-1])
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def every_experiment(compile_too: bool, only: str | None = None) -> None:
    """One cold and one warm first call of every registered experiment (its first model's generating
    agent, 10 subjects, default design): the matrix beside the README's command; ``compile_too``: also
    the compile CPU and dispatchers of the same call on the compiled path (``--method batch``); ``only``:
    that experiment alone."""
    from _timing import agent_of

    from cogtestbed.registry import experiment_names, get_experiment

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trials.parquet"
        for name in [only] if only else experiment_names():
            agent = agent_of(get_experiment(name))
            command = ["-m", "cogtestbed", "simulate", name, "--agent", agent, "--subjects", "10", "--seed", "1"]
            numba_dir, cache_home = tempfile.mkdtemp(dir=tmp), tempfile.mkdtemp(dir=tmp)
            cold = run(command, numba_dir, cache_home, out)
            warm = run(command, numba_dir, cache_home, out)
            verdict = "meets" if cold <= COLD_TARGET else "misses"
            print(f"{name} ({agent}): cold {cold:.2f} s CPU ({verdict} {COLD_TARGET:.0f} s), warm {warm:.2f} s")
            if compile_too:
                print("  compiled path (--method batch), cold:")
                run(["-c", COMPILE_PROBE, *command[2:], "--method", "batch"], tempfile.mkdtemp(dir=tmp),
                    tempfile.mkdtemp(dir=tmp), out)


#: (experiment, agent, parameters, design fields) beyond the defaults whose per-step cost an agent's
#: ``interpreted_cost_us`` makes depend on them (revealed belief's Dirichlet noise and sample count, the
#: collider's Beta response noise, belief coherence's miscalibration), and belief coherence's costliest
#: measured cases of either figure (report noise on diabetes; miscalibration at the bounds on alarm).
COST_CASES = [
    *(("revealed-belief", "dissonant", {"noise": v}, {}) for v in (0.01, 0.1, 0.5, 1.0)),
    ("revealed-belief", "dissonant", {"noise": 1.0, "kappa": 50.0}, {}),
    *(("revealed-belief", "dissonant-sampler", {}, {"n_samples": n}) for n in (1, 300, 1000)),
    *(("collider", agent, {"kappa": k}, {}) for agent in ("cbn", "logistic") for k in (0.05, 1.0, 20.0, 1e4)),
    *(("belief-coherence", "logit-rum", {}, {"network": net}) for net in ("asia", "cancer", "alarm")),
    ("belief-coherence", "nonmono-report", {"report_noise": 0.5}, {"network": "diabetes"}),
    ("belief-coherence", "logit-rum", {"calib_slope": 3.0, "calib_bias": 1.0}, {}),
    ("belief-coherence", "nonmono-report", {"calib_slope": 10.0, "calib_bias": -5.0, "report_noise": 0.5},
     {"network": "alarm"}),
    # the worst the tilt audit found (issue 54): κ = 10 on lie nodes with 5-6 states, the LIE steps' share
    # raised by π0 alone and no decision
    *(("belief-coherence", agent, params, {"network": "child", "lie_node": "ChestXray", "variants": ("pi0",),
                                            "decision": False})
      for agent, params in (("logit-rum", {"calib_slope": 10.0}),
                            ("nonmono-report", {"calib_slope": 10.0, "report_noise": 0.5}),
                            ("nonmono-report", {"calib_slope": 10.0, "calib_bias": 5.0, "report_noise": 0.5}))),
    *(("belief-coherence", "nonmono-report", {"calib_slope": 10.0, "report_noise": 0.5},
       {"network": net, "lie_node": node, "variants": ("pi0",), "decision": False})
      for net, node in (("heart", "Race"), ("diabetes", "Education"))),
]


def interpreted_cost() -> None:
    """µs per step of every agent's interpreted batch path (default parameters and design, then
    :data:`COST_CASES`), beside the figure ``method="auto"`` budgets with
    (``SyntheticAgent.interpreted_cost_us`` of the same design and parameters)."""
    from cogtestbed.registry import experiment_names, get_experiment

    for name in experiment_names():
        for agent in get_experiment(name).agents:
            cost_line(name, agent, {}, {})
    for name, agent, params, fields in COST_CASES:
        cost_line(name, agent, params, fields)


#: Steps a measurement plays at least (subjects enough for short sessions: a run's fixed costs amortised).
MEASURED_STEPS = 5_000


def cost_line(name: str, agent: str, params: dict[str, float], fields: dict[str, Any]) -> None:
    """Print one agent's measured µs a step interpreted (subjects enough for :data:`MEASURED_STEPS`, at
    least 2, after a one-subject warm-up) beside its declared figure for the same design and parameters;
    flag it when above."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    exp = get_experiment(name)
    design = exp.env_cls.design_cls(**fields)
    steps = int(exp.env_cls.max_steps(design))
    n = max(2, -(-MEASURED_STEPS // steps))
    simulate(name, agent, 1, 0, params, design=design, method="interpreted")  # the twins built, numpy's paths warm
    start = time.process_time()
    simulate(name, agent, n, 1, params, design=design, method="interpreted")
    per_step = 1e6 * (time.process_time() - start) / (n * steps)
    declared = exp.agent(agent).interpreted_cost_us(design, params)
    flag = "" if per_step <= declared else "  ABOVE the declared figure"
    case = " ".join(f"{k}={v:g}" if isinstance(v, float | int) else f"{k}={v}" for k, v in {**params, **fields}.items())
    print(f"{name} {agent}{' ' + case if case else ''}: {per_step:.1f} µs a step ({steps} steps a session), "
          f"declared {declared:g}{flag}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--every-experiment", action="store_true",
                        help="one cold and one warm first call of every experiment (10 subjects) instead")
    parser.add_argument("--compile", action="store_true",
                        help="with --every-experiment: also each call's compile CPU on the compiled path")
    parser.add_argument("--only", metavar="EXPERIMENT", help="with --every-experiment: that experiment alone")
    parser.add_argument("--interpreted-cost", action="store_true",
                        help="µs a step of every agent's interpreted batch path instead")
    args = parser.parse_args()
    if args.interpreted_cost:
        interpreted_cost()
        return
    if args.every_experiment:
        every_experiment(args.compile, args.only)
        return
    repeats = args.repeats
    one, five, _ = os.getloadavg()
    print(f"cogtestbed {' '.join(COMMAND[2:])}  (load {one:.1f}/{five:.1f} on {os.cpu_count()} CPUs)")
    cold, warm = [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trials.parquet"
        for r in range(repeats):
            numba_dir, cache_home = tempfile.mkdtemp(dir=tmp), tempfile.mkdtemp(dir=tmp)
            start = time.perf_counter()
            cold.append(run(COMMAND, numba_dir, cache_home, out))
            print(f"cold run {r + 1}: {cold[-1]:.2f} s CPU ({time.perf_counter() - start:.2f} s wall)")
            warm.append(run(COMMAND, numba_dir, cache_home, out))
            print(f"warm run {r + 1}: {warm[-1]:.2f} s CPU")
        print("compile of one cold call, in-process:")
        run(["-c", COMPILE_PROBE, *COMMAND[2:]], tempfile.mkdtemp(dir=tmp), tempfile.mkdtemp(dir=tmp), out)
    verdict = "meets" if min(cold) <= COLD_TARGET else "misses"
    print(f"first call (cold): best {min(cold):.2f} s CPU ({verdict} the {COLD_TARGET:.0f} s target); "
          f"warm: best {min(warm):.2f} s CPU")
    one, five, _ = os.getloadavg()
    print(f"(load {one:.1f}/{five:.1f} at the end)")


if __name__ == "__main__":
    main()

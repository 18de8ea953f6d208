"""A seeded fit gives the same draws in every process on one machine (issue 50): run one seeded fit
in fresh processes under different conditions and print the digest of each.

    python benchmarks/studies/reproducible_fits.py check                       # RW± hierarchical + MLE, every condition
    python benchmarks/studies/reproducible_fits.py check --all                 # every family's models
    python benchmarks/studies/reproducible_fits.py check --experiment two-step --model hybrid --method hierarchical
    python benchmarks/studies/reproducible_fits.py one instrumental-learning rw-pm --method hierarchical

``one`` fits once and prints one JSON line (the digest of the draws and sampler statistics,
:func:`~cogtestbed.inference.reproducible.draws_digest`, or of the MLE table,
:func:`~cogtestbed.inference.reproducible.table_digest`).  ``check`` runs ``one`` in a fresh process
per condition, in this order, all sharing one set of cache directories made for the check:

* ``cold``: empty caches (numba's ``NUMBA_CACHE_DIR``, PyTensor's ``base_compiledir`` with its
  numba cache, the timings store), so the fit compiles everything;
* ``warm``: the caches the cold run filled;
* ``load``: warm, with a CPU-bound process beside it;
* ``one-cpu``: warm, the process pinned to one CPU (``sched_setaffinity``: numba, OpenBLAS and
  nutpie see one core);
* ``hashseed``: warm, another ``PYTHONHASHSEED`` (every other run has ``PYTHONHASHSEED=0``);
* ``prior``: warm, after another fit in the same process (the same model on other data).

Conditions combine with ``+`` (``--conditions cold,load+one-cpu+hashseed+prior``: a cold run, then
one warm run under all four; what the tests run).  It prints one JSON line per run and a verdict
line per fit, and exits 1 where any digest differs.
``--cold numba`` keeps PyTensor's C compile directory (``compiledir``) of the calling environment,
so only numba code is compiled cold (the C code of the initial point and the log-likelihood is the
same file either way; what the default test suite uses, to save the C compiler's seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONDITIONS = ("cold", "warm", "load", "one-cpu", "hashseed", "prior")
#: The small seeded fit every check runs (subjects, draws and tuning steps per chain, chains).
SUBJECTS, DRAWS, CHAINS = 4, 60, 2
#: Longest a run may take (a cold compilation on a loaded 2-core machine takes minutes).
CHILD_TIMEOUT_S = 3600


def small_table(experiment: str, model: str, subjects: int, seed: int) -> Any:
    """A seeded table of ``subjects`` simulated from ``model``'s hierarchical prior on the
    conformance suite's small design (every family's own generator)."""
    import numpy as np

    from cogtestbed.conformance.config import CheckConfig
    from cogtestbed.conformance.suite import simulate_from_model, small_design
    from cogtestbed.inference.hierarchical import sample_hierarchical_prior
    from cogtestbed.registry import get_experiment

    spec = get_experiment(experiment)
    _, params = sample_hierarchical_prior(spec.model(model).parameters, subjects, np.random.default_rng(seed))
    return simulate_from_model(spec, model, params, seed, small_design(spec, CheckConfig()))


def issue50_table() -> Any:
    """The issue's small fit: RW±, 20 subjects drawn from the hierarchical prior (``default_rng(2024)``),
    the default design (96 trials), simulation seed 100."""
    import numpy as np

    from cogtestbed.inference.hierarchical import sample_hierarchical_prior
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    spec = get_experiment("instrumental-learning")
    _, params = sample_hierarchical_prior(spec.model("rw-pm").parameters, 20, np.random.default_rng(2024))
    return simulate(spec, "rw-pm", 20, 100, params)


def fit_once(experiment: str, model: str, method: str, subjects: int = SUBJECTS, draws: int = DRAWS,
             chains: int = CHAINS, prior_fit: bool = False, issue50: bool = False) -> dict[str, Any]:
    """One seeded fit (``ct.fit``, seed 0) of a small table (``issue50``: :func:`issue50_table`, RW±,
    200 + 200 draws): its digest and timings."""
    import warnings

    import cogtestbed as ct
    from cogtestbed.inference.reproducible import draws_digest, table_digest

    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short chain's ConvergenceWarning is expected here
        if prior_fit:
            ct.fit(experiment, small_table(experiment, model, subjects, 7), model=model, method=method,
                   draws=draws, chains=chains, seed=3)
        if issue50:
            experiment, model, draws = "instrumental-learning", "rw-pm", 200
        table = issue50_table() if issue50 else small_table(experiment, model, subjects, 1)
        fit = ct.fit(experiment, table, model=model, method=method, draws=draws, chains=chains, seed=0)
    digest = table_digest(fit) if method == "mle" else draws_digest(fit)
    if method == "mle":
        shown = {"nll_sum": float(fit["nll"].sum())}
    else:
        post = fit.idata.posterior
        first = next((str(v) for v in post.data_vars if str(v).endswith("_mu")), str(next(iter(post.data_vars))))
        shown = {f"{first}_sum": float(post[first].sum()), "max_rhat": fit.diagnostics.max_rhat}
    return {"experiment": experiment, "model": model, "method": method, "digest": digest, **shown,
            "wall_s": round(time.perf_counter() - start, 1), "cpu_s": round(time.process_time() - cpu, 1)}


def condition_env(condition: str, caches: Path, cold: str = "all") -> dict[str, str]:
    """The environment of a run under ``condition``: the check's cache directories (fresh for the
    first, ``cold``, run; ``cold="inherit"``: the caller's caches) and ``PYTHONHASHSEED``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONHASHSEED"] = "12345" if "hashseed" in condition.split("+") else "0"
    if cold == "inherit":
        return env
    env["NUMBA_CACHE_DIR"] = str(caches / "numba")
    env["COGTESTBED_TIMINGS"] = str(caches / "timings.json")
    env["XDG_CACHE_HOME"] = str(caches / "xdg")
    flags = [f"base_compiledir={caches / 'pytensor'}"]
    if cold == "numba":
        from pytensor import config

        flags.append(f"compiledir={config.compiledir}")
    env["PYTENSOR_FLAGS"] = ",".join([*filter(None, [env.get("PYTENSOR_FLAGS")]), *flags])
    return env


class _cpu_load:
    """A CPU-bound process beside the run while the block runs (stopped by its own id after); at
    the lowest priority (``nice 19``), so it takes what the run and a shared machine leave idle."""

    def __enter__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", "import os\nos.nice(19)\nwhile True: pass"])

    def __exit__(self, *exc: Any) -> None:
        self.proc.kill()
        self.proc.wait()


def run_condition(experiment: str, model: str, methods: Sequence[str], condition: str, caches: Path,
                  cold: str = "all", subjects: int = SUBJECTS, draws: int = DRAWS,
                  issue50: bool = False) -> list[dict[str, Any]]:
    """``one`` in a fresh process under ``condition`` (see the module docstring): a row per method."""
    import contextlib

    method = methods[0] if len(methods) == 1 else "both"
    cmd = [sys.executable, str(Path(__file__).resolve()), "one", experiment, model, "--method", method,
           "--subjects", str(subjects), "--draws", str(draws)]
    if issue50:
        cmd.append("--issue50")
    parts = condition.split("+")
    if "prior" in parts:
        cmd.append("--prior-fit")
    first_cpu = min(os.sched_getaffinity(0))
    pin = (lambda: os.sched_setaffinity(0, {first_cpu})) if "one-cpu" in parts else None
    load = _cpu_load() if "load" in parts else contextlib.nullcontext()
    with load:
        done = subprocess.run(cmd, env=condition_env(condition, caches, cold), capture_output=True, text=True,
                              preexec_fn=pin, check=False, timeout=CHILD_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{experiment}/{model} {method} under {condition} failed:\n{done.stderr[-3000:]}")
    return [{**json.loads(line), "condition": condition} for line in done.stdout.strip().splitlines()
            if line.startswith("{")]


def check(experiment: str, model: str, methods: Sequence[str], conditions: Sequence[str] = CONDITIONS,
          cold: str = "all", subjects: int = SUBJECTS, draws: int = DRAWS,
          issue50: bool = False) -> list[dict[str, Any]]:
    """Every condition's run of one model's fits, in order, in one set of fresh cache directories
    (a row per run and method)."""
    with tempfile.TemporaryDirectory(prefix="cogtestbed-repro-") as tmp:
        return [row for condition in conditions
                for row in run_condition(experiment, model, methods, condition, Path(tmp), cold, subjects, draws,
                                         issue50)]


def every_model() -> list[tuple[str, str]]:
    """(experiment, model) of every registered model with a PyMC version."""
    from cogtestbed.registry import experiment_names, get_experiment

    out = []
    for name in experiment_names():
        spec = get_experiment(name)
        out += [(name, m) for m in spec.models if spec.model(m).has_pymc]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("one", help="one seeded fit: print its digest")
    one.add_argument("experiment")
    one.add_argument("model")
    for p in (one, chk := sub.add_parser("check", help="one fit in fresh processes under every condition")):
        p.add_argument("--method", choices=("hierarchical", "mle", "both"), default="both")
        p.add_argument("--subjects", type=int, default=SUBJECTS)
        p.add_argument("--draws", type=int, default=DRAWS)
    one.add_argument("--prior-fit", action="store_true", help="fit other data with the same model first")
    one.add_argument("--issue50", action="store_true", help="the issue's small fit (RW±, 20 subjects, 2 x 200 + 200)")
    chk.add_argument("--experiment", default="instrumental-learning")
    chk.add_argument("--model", default="rw-pm")
    chk.add_argument("--all", action="store_true", help="every family's models with a PyMC version")
    chk.add_argument("--issue50", action="store_true", help="the issue's small fit (RW±, 20 subjects, 2 x 200 + 200)")
    chk.add_argument("--conditions", default=",".join(CONDITIONS))
    chk.add_argument("--cold", choices=("all", "numba", "inherit"), default="all",
                     help="what the first run finds: empty caches (all), empty numba caches with PyTensor's C "
                          "cache of this environment (numba), or this environment's caches (inherit)")
    args = parser.parse_args(argv)
    methods = ("hierarchical", "mle") if args.method == "both" else (args.method,)
    if args.command == "one":
        for method in methods:
            print(json.dumps(fit_once(args.experiment, args.model, method, args.subjects, args.draws,
                                      prior_fit=args.prior_fit, issue50=args.issue50)), flush=True)
        return 0
    conditions = [c for c in args.conditions.split(",") if c]
    unknown = sorted({part for c in conditions for part in c.split("+")} - set(CONDITIONS))
    if unknown:
        print(f"unknown conditions {unknown}: choose from {', '.join(CONDITIONS)}", file=sys.stderr)
        return 2
    models = every_model() if args.all else [(args.experiment, args.model)]
    ok = True
    for experiment, model in models:
        rows = check(experiment, model, methods, conditions, args.cold, args.subjects, args.draws, args.issue50)
        for row in rows:
            print(json.dumps(row), flush=True)
        for method in methods:
            same = len({r["digest"] for r in rows if r["method"] == method}) == 1
            ok &= same
            print(json.dumps({"experiment": experiment, "model": model, "method": method,
                              "runs": sum(r["method"] == method for r in rows), "identical": same}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

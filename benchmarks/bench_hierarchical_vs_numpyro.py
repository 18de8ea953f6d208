"""Hierarchical fits against NumPyro (issue 54 item 1): min bulk ESS per CPU-second and R-hat of the
package's PyMC model of each family, beside the same model written in NumPyro for the benchmark (the
same priors, likelihood and data: ``benchmarks/numpyro_models.py``).

    make bench-numpyro                                      # builds .venv-numpyro, runs every case
    python benchmarks/bench_hierarchical_vs_numpyro.py --cases rw-pm --numpyro-python .venv-numpyro/bin/python
    python benchmarks/bench_hierarchical_vs_numpyro.py --list

For each case: ``--reps`` data sets simulated with cogtestbed from one draw each of the model's
hierarchical prior (:func:`~cogtestbed.inference.hierarchical.sample_hierarchical_prior`, seeded), fitted
by :func:`~cogtestbed.inference.hierarchical.fit_hierarchical` with the product's settings (nutpie, the
model's target acceptance, ``chains`` × (``tune`` + ``draws``), seed = rep; ``--cores`` threads, default 1:
chains one after another, as NumPyro's) in this process, then by NumPyro's NUTS in a subprocess of the
NumPyro environment (same chains, tuning, draws, target acceptance).  Both report CPU seconds of the fit
(process CPU time, every thread, model building and compilation included: the first data set compiles, the
next reuse the compiled model on both sides) and the same diagnostics
(:func:`~cogtestbed.inference.hierarchical.diagnose` over the free variables: min bulk and tail ESS, max
R-hat, divergences) and the mean leapfrog steps per draw after tuning (``mean_steps``).  The pointwise
log-likelihood for PSIS-LOO, which ``ct.fit`` adds after sampling, is left out (NumPyro computes none).

Before timing, the two models are checked to be the same: the log-likelihood of data set 0 at three
parameter matrices drawn from the prior (the package's numba kernel against the JAX transcription) and
the joint log density (priors, Jacobians and likelihood) at three random unconstrained points (PyMC's
``compile_logp`` against NumPyro's ``potential_energy``) must agree within 1e-6 relative; a case that
fails is reported and not timed.  ``--check-only`` does only that, and times one log density and gradient
evaluation on each side (``grad_us``, CPU µs: where the time goes, with ``mean_steps``).

Prints one JSON line per case and data set, then a Markdown table (``ratio``: the package's min bulk
ESS per CPU-second over NumPyro's).  Exits 1 where a check fails, 2 where NumPyro's environment is
missing.  CPU time, not wall: the machine is shared.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: The two models agree where their log-likelihoods and log densities differ by at most this, relative.
AGREE_REL = 1e-6
#: The NumPyro environment's Python (``make bench-numpyro`` builds it).
NUMPYRO_PYTHON = ROOT / ".venv-numpyro" / "bin" / "python"


@dataclass(frozen=True)
class Case:
    """One benchmarked model: its experiment, the NumPyro likelihood's name, subjects, and whether the
    data come from ``simulate`` with the model's own agent (the issue's RW± recipe) or the generator."""

    experiment: str
    model: str
    likelihood: str
    subjects: int = 50
    direct: bool = False
    rng_seed: int = 2024
    #: Fields of the experiment's default design changed for the benchmark (a smaller magnitude session).
    design: tuple[tuple[str, Any], ...] = ()
    #: Sessions a subject plays, pooled (``simulate_from_model(runs=...)``): a horizon session is one
    #: game, a probabilistic-reasoning session two judgements.
    runs: int = 1
    #: How the PyMC model pools the table: ``kernel`` (``pool_model_arrays``, the generic builder),
    #: ``counts`` (belief coherence's decisions counted per distinct belief), ``zoib`` (the collider's own
    #: zero-one-inflated Beta model), ``scenarios`` (revealed belief's (subject, scenario) cells).
    pooling: str = "kernel"


#: One magnitude task, base condition, text, three ranges of 50 trials: 150 answers a subject (the default
#: design's 9,000 a subject would make one fit of 50 subjects minutes long on both sides).
MAGNITUDE_DESIGN = (("task", "marker-location"), ("conditions", ("base",)), ("modalities", ("text",)))

#: A revealed-belief grid of ≈ 130 items a subject (both channels) instead of the paper's ≈ 500: every
#: scenario and variant, fewer dice, observations and options (a 50-subject fit of the full grid is
#: 48,000 rows of 36 outcomes, far beyond a few CPU-minutes on both sides).
REVEALED_DESIGN = (("dice_faces", (4, 6)), ("n_dice", (1, 2)), ("observations", ("smaller", "even", "not_first")),
                   ("coin_biases", (1, 3)), ("choice_options", (2, 4)), ("preference_biases", (1, 2)))

CASES: dict[str, Case] = {
    "rw-pm": Case("instrumental-learning", "rw-pm", "rw-pm", direct=True),
    "rw": Case("instrumental-learning", "rw", "rw-pm", direct=True),
    "hyperbolic": Case("temporal-discounting", "hyperbolic", "hyperbolic"),
    "prospect-theory": Case("risky-choice", "prospect-theory", "prospect-theory"),
    "expected-value": Case("risky-choice", "expected-value", "prospect-theory"),
    "generalised-bayes": Case("probabilistic-reasoning", "generalised-bayes", "generalised-bayes", runs=20),
    "magnitude-linear": Case("magnitude", "linear", "linear", design=MAGNITUDE_DESIGN),
    "static-bayes": Case("magnitude", "static-bayes", "static-bayes", design=MAGNITUDE_DESIGN),
    "magnitude-kalman": Case("magnitude", "kalman", "kalman-magnitude", design=MAGNITUDE_DESIGN),
    "bart": Case("bart", "target", "bart-target"),
    "horizon": Case("horizon", "info-bonus", "info-bonus", runs=40),
    "two-step-hybrid": Case("two-step", "hybrid", "twostep"),
    "two-step-model-based": Case("two-step", "model-based", "twostep"),
    "two-step-model-free": Case("two-step", "model-free", "twostep"),
    "restless-kalman": Case("restless-bandit", "kalman", "kalman-chooser"),
    "belief-mnl": Case("belief-coherence", "mnl", "mnl", pooling="counts"),
    "belief-loss": Case("belief-coherence", "loss", "loss", pooling="counts"),
    "collider-3p": Case("collider", "cbn-3p", "zoib", pooling="zoib"),
    "collider-4p": Case("collider", "cbn-4p", "zoib", pooling="zoib"),
    "revealed-dissonant": Case("revealed-belief", "dissonant", "dissonant", subjects=10, pooling="scenarios",
                               design=REVEALED_DESIGN),
}


def tables(case: Case, reps: int, first: int = 0) -> list[Any]:
    """``reps`` seeded tables of ``case``, data sets ``first`` … ``first + reps − 1`` (simulation seeds
    100 + data set; one prior draw each, in data-set order from one generator, so data set k is the same
    table whatever ``first`` and ``reps`` are)."""
    from cogtestbed.conformance.suite import simulate_from_model
    from cogtestbed.inference.hierarchical import sample_hierarchical_prior
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    exp = get_experiment(case.experiment)
    model = exp.model(case.model)
    rng = np.random.default_rng(case.rng_seed)
    out = []
    for rep in range(first + reps):
        _, true = sample_hierarchical_prior(model.parameters, case.subjects, rng)
        agent = model.sample_nuisance(rng)[1] if case.pooling == "zoib" else None
        if rep < first:  # an earlier data set's draws, consumed so that data set ``rep`` stays the same
            continue
        if agent is not None:  # the response model's κ and π drawn from their priors, given to the agent
            gen = exp.generator(case.model)
            params = {**{k: np.asarray(v, dtype=np.float64) for k, v in gen.agent_params(true).items()},
                      **{k: np.full(case.subjects, v) for k, v in agent.items()}}
            out.append(simulate(exp, gen.agent, case.subjects, 100 + rep, params=params,
                                design=exp.design_cls(**dict(case.design))))
        elif case.direct:
            out.append(simulate(exp, case.model, case.subjects, 100 + rep, true))
        else:
            out.append(simulate_from_model(exp, case.model, true, 100 + rep, exp.design_cls(**dict(case.design)),
                                           runs=case.runs))
    return out


def column_matrix(model: Any, natural: dict[str, np.ndarray]) -> np.ndarray:
    """The kernel's parameter matrix of subject values ``natural`` (``kernel_columns``)."""
    n = len(next(iter(natural.values())))
    columns = model.kernel_columns or model.parameters.names
    return np.ascontiguousarray(np.stack(
        [natural[c] if isinstance(c, str) else np.full(n, float(c)) for c in columns], axis=1))


def pooled_arrays(case: Case, model: Any, table: Any) -> tuple[list[Any], np.ndarray, dict[str, np.ndarray]]:
    """(subjects, kernel row of every observation, the kernel's arrays) as the case's PyMC model pools them."""
    from cogtestbed.inference.hierarchical import pool_model_arrays

    if case.pooling == "counts":
        return pool_model_arrays(model.counts_model(), table)
    if case.pooling == "zoib":
        from cogtestbed.inference.causal_hierarchical import model_data

        d = model_data(table)
        return d["subjects"], d["obs_subject"], {"y": d["y"], "task": d["task"]}
    if case.pooling == "scenarios":
        from cogtestbed.inference.revealed_hierarchical import cell_arrays

        subjects, _, cell, arrays = cell_arrays(model, table)
        return subjects, cell, arrays
    return pool_model_arrays(model, table)


def case_kernel(case: Case, model: Any) -> Any:
    """The numba kernel behind the case's PyMC likelihood."""
    if case.pooling == "zoib":
        from cogtestbed.inference.causal_hierarchical import zoib_pointwise_kernel

        return zoib_pointwise_kernel
    if case.pooling == "counts":
        return model.counts_model().kernel()
    return model.kernel()


def case_columns(case: Case, model: Any) -> list[Any]:
    """The kernel's columns filled from the subject parameters (the zero-one-inflated Beta's κ, π0,
    π1 follow, from the NumPyro model's population sites)."""
    columns = list(model.kernel_columns or model.parameters.names)
    return columns[:4] if case.pooling == "zoib" else columns


def scenario_meta(case: Case, model: Any, data: list[Any]) -> dict[str, Any]:
    """Revealed belief: the scenarios and the biases pooled across them (the same for every data set)."""
    if case.pooling != "scenarios":
        return {}
    from cogtestbed.environments.revealed_items import SCENARIOS
    from cogtestbed.inference.revealed_hierarchical import SCENARIO_SD_SCALE, cell_arrays, pooled_scenarios

    pooled = []
    for table in data:
        _, scenario, _, arrays = cell_arrays(model, table)
        pooled.append(pooled_scenarios(arrays, scenario))
    if any(p != pooled[0] for p in pooled):
        raise RuntimeError("the data sets pool different scenarios: one NumPyro model cannot serve them all")
    return {"n_scenarios": len(SCENARIOS), "scenario_sd_scale": SCENARIO_SD_SCALE,
            "scenario_pooling": {k: list(v) for k, v in pooled[0].items()}}


def check_matrix(case: Case, model: Any, n_rows: int, rng: np.random.Generator) -> np.ndarray:
    """One kernel parameter matrix drawn from the prior (rows: the kernel's subjects)."""
    from cogtestbed.inference.hierarchical import sample_hierarchical_prior

    if case.pooling == "scenarios":
        from cogtestbed.environments.revealed_items import SCENARIOS

        n_scen = len(SCENARIOS)
        subject = column_matrix(model, sample_hierarchical_prior(model.parameters, n_rows // n_scen, rng)[1])
        cells = np.repeat(subject, n_scen, axis=0)
        cells[:, 1:6] += rng.normal(0.0, 0.3, size=(len(cells), 5))  # scenario deviations of the biases
        return np.ascontiguousarray(cells)
    natural = sample_hierarchical_prior(model.parameters, n_rows, rng)[1]
    n = len(next(iter(natural.values())))
    matrix = np.stack([natural[c] if isinstance(c, str) else np.full(n, float(c))
                       for c in case_columns(case, model)], axis=1)
    if case.pooling == "zoib":
        truth = model.sample_nuisance(rng)[0]
        extra = [truth["kappa"], truth["pi[0]"], truth["pi[1]"]]
        matrix = np.concatenate([matrix, np.tile(extra, (n, 1))], axis=1)
    return np.ascontiguousarray(matrix)


def static_of(case: Case, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Constants the NumPyro likelihood needs as Python values (shapes)."""
    if case.likelihood == "rw-pm":
        return {"n_casinos": int(arrays["casino"].max()) + 1}
    return {}


def write_spec(case: Case, data: list[Any], path: Path, sampler: dict[str, Any]) -> dict[str, Any]:
    """Write the NumPyro spec of ``case`` and return the package's check values (log-likelihood at the
    check matrices, joint log density at the check points)."""
    from cogtestbed.inference.hierarchical import SD_SCALE
    from cogtestbed.registry import get_experiment

    model = get_experiment(case.experiment).model(case.model)
    pooled = [pooled_arrays(case, model, t) for t in data]
    subjects, idx0, arrays0 = pooled[0]
    rng = np.random.default_rng(7)
    thetas = [check_matrix(case, model, int(idx0.max()) + 1, rng) for _ in range(3)]
    kernel = case_kernel(case, model)
    check_ll = [float(kernel(th, idx0, *arrays0.values())[0].sum()) for th in thetas]
    pm_model = model.pymc_model(data[0])
    logp = pm_model.compile_logp()
    points = []
    for _ in range(3):
        point = {k: rng.normal(0.0, 0.7, size=np.shape(v)) for k, v in pm_model.initial_point().items()}
        points.append(point)
    check_logp = [float(logp(p)) for p in points]
    centred_by_rep = [centred_of(case, model, t) for t in data]
    meta = {
        "likelihood": case.likelihood, "n_subjects": len(subjects), "fields": list(arrays0),
        "parameters": [{"name": p.name, "transform": p.transform, "lower": float(p.lower), "upper": float(p.upper),
                        "prior_mean": float(p.prior_mean), "prior_sd": float(p.prior_sd)} for p in model.parameters],
        "centred": centred_by_rep[0], "centred_by_rep": centred_by_rep, "sd_scale": SD_SCALE,
        "columns": case_columns(case, model), "static": static_of(case, arrays0), **scenario_meta(case, model, data),
        "check_points": [{k: np.asarray(v).tolist() for k, v in p.items()} for p in points], **sampler,
    }
    arrays = {"meta": np.array(json.dumps(meta)), "check_theta": np.stack(thetas)}
    for rep, (_, idx, arr) in enumerate(pooled):
        arrays[f"r{rep}_obs_subject"] = idx
        arrays.update({f"r{rep}_{k}": v for k, v in arr.items()})
    np.savez(path, **arrays)
    return {"check_loglik": check_ll, "check_logp": check_logp, "trials": int(len(idx0)) // len(subjects)}


def centred_of(case: Case, model: Any, table: Any) -> list[str]:
    """The parameters the package's hierarchical model of ``table`` samples centred (its ``{p}_u`` free variables: the
    model's declared ones and those the data pin, ``cogtestbed.inference.centring``); NumPyro's model of that data set
    samples the same ones centred."""
    free = {v.name for v in model.pymc_model(table).free_RVs}
    return [p for p in model.parameters.names if f"{p}_u" in free]


def package_grad_cost(case: Case, table: Any, repeats: int = 300) -> float:
    """CPU µs of one log density and gradient evaluation of the package's PyMC model (PyTensor's NUMBA
    mode, what nutpie compiles, called from Python: an upper bound of nutpie's own call)."""
    from cogtestbed.registry import get_experiment

    pm_model = get_experiment(case.experiment).model(case.model).pymc_model(table)
    f = pm_model.logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
    f.set_extra_values({})
    x = np.concatenate([np.ravel(v) for v in pm_model.initial_point().values()])
    f(x)
    start = time.process_time()
    for _ in range(repeats):
        f(x)
    return (time.process_time() - start) / repeats * 1e6


def fit_package(case: Case, data: list[Any], sampler: dict[str, Any]) -> list[dict[str, Any]]:
    """Fit every table with the package (in this process) and return CPU seconds and diagnostics.  PyMC is imported
    before the first fit's clock starts, as ``numpyro_models.py`` imports JAX and NumPyro before its own (and as the
    checks of a run against NumPyro import it before this): a library's import is not part of a fit on either side
    (with ``--package-only`` the first fit paid PyMC's import until 28 Nov 2026, about 2 CPU-s)."""
    import pymc  # noqa: F401  (the import, outside the timed fits)

    from cogtestbed.inference.hierarchical import fit_hierarchical
    from cogtestbed.registry import get_experiment

    model = get_experiment(case.experiment).model(case.model)
    rows = []
    for rep, table in enumerate(data):
        cpu, wall = time.process_time(), time.perf_counter()
        fit = fit_hierarchical(model, table, draws=sampler["draws"], tune=sampler["tune"], chains=sampler["chains"],
                               seed=sampler["seeds"][rep], cores=sampler["cores"], warn=False, log_likelihood=False)
        steps = fit.idata.sample_stats["n_steps"].values if "n_steps" in fit.idata.sample_stats else np.nan
        rows.append({"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall,
                     **fit.diagnostics.columns(), "sampler": fit.diagnostics.sampler,
                     "mean_steps": float(np.mean(steps)), "pinned": pinned(model, fit.idata.posterior)})
    for row, table in zip(rows, data, strict=True):  # outside the fits' clocks
        row["centred"] = centred_of(case, model, table)
    return rows


def pinned(model: Any, posterior: Any) -> dict[str, float]:
    """Per parameter, how tightly the data pin a subject against the population's spread: the median over subjects of
    the posterior SD of the subject's unconstrained value, over the posterior mean of the population SD ``{p}_sigma``
    (below 1, the data pin subjects more tightly than the population spreads them: the regime where the centred
    parameterisation mixes better, Papaspiliopoulos et al. 2007; Betancourt & Girolami 2015).  Parameters without a
    population SD in the posterior are left out."""
    out = {}
    for p in model.parameters:
        if p.name not in posterior or f"{p.name}_sigma" not in posterior:
            continue
        values = np.asarray(posterior[p.name].values, dtype=np.float64)
        unconstrained = p.to_unconstrained(values.reshape(-1, values.shape[-1]))
        spread = float(np.mean(posterior[f"{p.name}_sigma"].values))
        out[p.name] = float(np.median(np.std(unconstrained, axis=0)) / spread)
    return out


def numpyro_diagnostics(draws: Any, rep: int) -> dict[str, Any]:
    """The package's :func:`diagnose` of NumPyro's draws of data set ``rep`` (free variables)."""
    import arviz as az

    from cogtestbed.inference.hierarchical import diagnose

    prefix = f"r{rep}_"
    stats = (f"{prefix}diverging", f"{prefix}num_steps")
    posterior = {k[len(prefix):]: draws[k] for k in draws.files if k.startswith(prefix) and k not in stats}
    idata = az.from_dict(posterior=posterior, sample_stats={"diverging": draws[stats[0]]})
    steps = float(np.mean(draws[stats[1]])) if stats[1] in draws.files else float("nan")
    return {**diagnose(idata, var_names=sorted(posterior), sampler="numpyro").columns(), "mean_steps": steps}


def fit_numpyro(python: Path, spec: Path, out: Path, check_only: bool = False,
                cpu_limit: float | None = None) -> dict[str, Any]:
    """Run ``numpyro_models.py`` in NumPyro's environment; its JSON line.

    ``cpu_limit``: CPU seconds the process may use (``RLIMIT_CPU``: the kernel stops it with SIGXCPU; where a
    kernel does not enforce the limit, as this project's sandboxed machines did not on 28 Nov 2026, a watchdog
    reads the process's CPU from ``/proc`` every :data:`WATCH_S` seconds and sends SIGXCPU itself).
    A process stopped so returns the fits that finished and ``unfinished``: the data set it was
    fitting and the CPU seconds that fit had used when it was stopped (the process's CPU from
    ``getrusage`` less its CPU when the fit began), a lower bound of its cost."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [str(python), str(ROOT / "benchmarks" / "numpyro_models.py"), str(spec), str(out)]
    limit = None if cpu_limit is None else int(np.ceil(cpu_limit))

    def set_limit() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 30))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with subprocess.Popen(command + (["--check-only"] if check_only else []), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, preexec_fn=set_limit) as child:
        stop = threading.Event()
        send, close = _signaller(child.pid)
        watchdog = threading.Thread(target=_watch_cpu, args=(child.pid, send, limit, stop), daemon=True)
        if limit is not None:
            watchdog.start()
        try:
            stdout, stderr = child.communicate()
        except BaseException:
            child.kill()
            raise
        finally:
            stop.set()
            if limit is not None:
                watchdog.join()
            close()
    proc = subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [json.loads(line) for line in proc.stdout.strip().splitlines() if line.startswith("{")]
    # SIGXCPU comes from the soft limit, SIGKILL from the hard one (30 s later) or from elsewhere (the
    # out-of-memory killer).  The bound is the CPU the process had used, measured on process_time's clock
    # (its lines' clock), not the limit: the kernel checks the limit on a tick-sampled clock that runs ahead
    # (seen: stopped at 0.76 s of process_time by a 1 s limit).
    if limit is not None and (proc.returncode == -signal.SIGXCPU or (proc.returncode == -signal.SIGKILL
                                                                     and used >= limit)):
        return stopped_at_limit(lines, used)
    if proc.returncode != 0:
        raise RuntimeError(f"numpyro_models.py failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = lines[-1]
    return result


#: Seconds between the watchdog's reads of a NumPyro process's CPU (:func:`fit_numpyro`).
WATCH_S = 2.0


def process_cpu_s(pid: int) -> float | None:
    """A process's user + system CPU seconds from ``/proc/PID/stat`` (None where it cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _signaller(pid: int) -> tuple[Any, Any]:
    """(``send(sig)``, ``close()``) for the child ``pid``: through a pidfd (Linux), so that a signal never reaches
    another process that reuses the number after the child is reaped; ``os.kill`` where there is none."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return (lambda sig: os.kill(pid, sig)), (lambda: None)
    return (lambda sig: signal.pidfd_send_signal(fd, sig)), (lambda: os.close(fd))


def _watch_cpu(pid: int, send: Any, limit: int | None, stop: threading.Event) -> None:
    """Send SIGXCPU (through ``send``) once ``pid``'s CPU passes ``limit``, and SIGKILL 30 s later if it is still
    running (what ``RLIMIT_CPU``'s soft and hard limits do where the kernel enforces them)."""
    while limit is not None and not stop.wait(WATCH_S):
        used = process_cpu_s(pid)
        if used is None:
            return
        if used >= limit:
            for sig, wait in ((signal.SIGXCPU, 30.0), (signal.SIGKILL, 0.0)):
                with contextlib.suppress(ProcessLookupError):
                    send(sig)
                if stop.wait(wait):
                    return
            return


def stopped_at_limit(lines: Sequence[dict[str, Any]], used: float) -> dict[str, Any]:
    """What a NumPyro run stopped after ``used`` CPU seconds leaves: the finished fits and the one it was
    in, if any: a stop after a fit's ``finished`` line and before the next ``started`` (or after the
    last fit) leaves no unfinished fit, not the finished one again."""
    started = [line for line in lines if "started" in line]
    if not started:  # stopped before its first fit began (imports and checks)
        raise RuntimeError(f"numpyro_models.py used its {used:.0f} CPU-s before its first fit began")
    last = started[-1]
    fits = [line["finished"] for line in lines if "finished" in line]
    result = {"numpyro": last["numpyro"], "jax": last["jax"], "fits": fits}
    if last["started"] not in {fit["rep"] for fit in fits}:
        result["unfinished"] = {"rep": last["started"], "cpu_s_at_least": used - last["process_cpu_s"]}
    return result


def agree(ours: Sequence[float], theirs: Sequence[float]) -> float:
    """The largest relative difference of two lists of values."""
    return max(abs(a - b) / max(abs(a), 1e-300) for a, b in zip(ours, theirs, strict=True))


def run_case(name: str, case: Case, args: argparse.Namespace, python: Path) -> list[dict[str, Any]]:
    """Check, fit and compare one case; one row per data set."""
    first = args.first_data_set
    sampler = {"chains": args.chains, "draws": args.draws, "tune": args.draws if args.tune is None else args.tune,
               "seeds": list(range(first, first + args.reps)), "cores": args.cores}
    from cogtestbed.registry import get_experiment

    if args.subjects is not None and args.subjects < case.subjects:
        case = dataclasses.replace(case, subjects=args.subjects)

    model = get_experiment(case.experiment).model(case.model)
    sampler["target_accept"] = float(getattr(model, "target_accept", None) or 0.9)
    data = tables(case, args.reps, first)
    if args.package_only:  # the package's fits alone (before/after a change of the package)
        rows = [{"case": name, "rep": first + rep, "subjects": case.subjects,
                 "observations": len(pooled_arrays(case, model, t)[1]), "load_average": os.getloadavg(), **_rates(fit)}
                for rep, (t, fit) in enumerate(zip(data, fit_package(case, data, sampler), strict=True))]
        for row in rows:
            print(json.dumps(row), flush=True)
        return [{"same_model": True}]
    with tempfile.TemporaryDirectory() as tmp:
        spec, out = Path(tmp) / "spec.npz", Path(tmp) / "draws.npz"
        ours = write_spec(case, data, spec, sampler)
        checked = fit_numpyro(python, spec, out, check_only=True)
        ll_rel = agree(ours["check_loglik"], checked["check_loglik"])
        logp_rel = agree(ours["check_logp"], checked["check_logp"])
        same = ll_rel <= AGREE_REL and logp_rel <= AGREE_REL
        if args.check_only:
            print(json.dumps({"case": name, "loglik_rel_diff": ll_rel, "logp_rel_diff": logp_rel, "same_model": same,
                              "package": ours, "numpyro": checked,
                              "grad_us": {"package": package_grad_cost(case, data[0]),
                                          "numpyro": checked["grad_us"]}}), flush=True)
            return [{"same_model": same}]
        if same:
            theirs = fit_numpyro(python, spec, out, cpu_limit=args.numpyro_cpu_limit)
            np_rows = numpyro_rows(theirs, out, checked["grad_us"], args.reps)
    pkg_rows = fit_package(case, data, sampler) if same else [{} for _ in range(args.reps)]
    if same:
        grad = package_grad_cost(case, data[0])
        pkg_rows = [{**r, "grad_us": grad} for r in pkg_rows]
    if not same:
        np_rows, theirs = [{} for _ in range(args.reps)], checked
    rows = []
    for rep, (pkg, npy) in enumerate(zip(pkg_rows, np_rows, strict=True)):
        row = {"case": name, "experiment": case.experiment, "model": case.model, "rep": first + rep,
               "first_fit": rep == 0,
               "subjects": case.subjects, "trials": ours["trials"], "chains": args.chains, "draws": args.draws,
               "tune": sampler["tune"], "cores": args.cores, "load_average": os.getloadavg(),
               "loglik_rel_diff": ll_rel, "logp_rel_diff": logp_rel, "same_model": same,
               "package": _rates(pkg), "numpyro": _rates(npy), "numpyro_version": theirs["numpyro"],
               "jax_version": theirs["jax"]}
        if same and "ess_per_cpu_s" in row["numpyro"]:
            row["ratio"] = row["package"]["ess_per_cpu_s"] / row["numpyro"]["ess_per_cpu_s"]
            row["attribution"] = attribution(row)
        elif same and row["numpyro"].get("unfinished"):
            row.update(ratio_bounds(row))
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def numpyro_rows(theirs: dict[str, Any], out: Path, grad_us: float, reps: int) -> list[dict[str, Any]]:
    """One row per data set of NumPyro's run: the finished fits diagnosed, then the fit its CPU limit
    stopped (``unfinished``, its CPU so far as ``cpu_s``), then ``not_started`` for the rest."""
    draws = np.load(out) if theirs["fits"] else None
    rows = [{**f, **numpyro_diagnostics(draws, f["rep"]), "grad_us": grad_us} for f in theirs["fits"]]
    stopped = theirs.get("unfinished")
    if stopped is not None:
        rows.append({"unfinished": True, "cpu_s": stopped["cpu_s_at_least"], "grad_us": grad_us})
    return rows + [{"not_started": True} for _ in range(reps - len(rows))]


def ratio_bounds(row: dict[str, Any]) -> dict[str, float]:
    """Lower bounds of the ratio where NumPyro's fit was stopped after ``cpu_s`` CPU seconds.

    NumPyro's min bulk ESS per CPU-second is below ``ess_max / cpu_s``, where ``ess_max`` is the
    largest bulk ESS ArviZ can report for ``n = chains × draws`` draws: ``n · log10(n)`` (its estimate
    of the autocorrelation time is floored at ``1 / log10(n)``).  So the ratio is above
    ``package rate · cpu_s / ess_max`` (``ratio_at_least``); ``ratio_at_least_if_ess_at_most_draws``
    is the bound if NumPyro's ESS had been at most its draws (the usual case, not a certainty)."""
    n = row["chains"] * row["draws"]
    rate, cpu = row["package"]["ess_per_cpu_s"], row["numpyro"]["cpu_s"]
    return {"ratio_at_least": rate * cpu / (n * np.log10(n)), "ratio_at_least_if_ess_at_most_draws": rate * cpu / n}


def attribution(row: dict[str, Any]) -> dict[str, float]:
    """The ratio split into measured factors (each > 1 favours the package):

    * ``gradient``: NumPyro's CPU µs per log density + gradient over the package's;
    * ``steps``: NumPyro's leapfrog steps a draw (after tuning) over the package's;
    * ``ess_per_draw``: the package's min bulk ESS a draw over NumPyro's;
    * ``rest``: what the three leave, ``ratio / (gradient · steps · ess_per_draw)``: tuning (its length
      in steps is not recorded on both sides), compilation and the sampler's own cost per step;

    and each side's ``sampling_share``: the CPU its post-tuning gradients account for,
    grad µs × steps × chains × draws over the fit's CPU seconds (the rest: tuning, compilation,
    the sampler's overhead)."""
    p, n = row["package"], row["numpyro"]
    gradient = n["grad_us"] / p["grad_us"]
    steps = n["mean_steps"] / p["mean_steps"]
    ess = (p["min_ess_bulk"] / (row["chains"] * row["draws"])) / (n["min_ess_bulk"] / (row["chains"] * row["draws"]))

    def share(side: dict[str, Any]) -> float:
        return side["grad_us"] * 1e-6 * side["mean_steps"] * row["chains"] * row["draws"] / side["cpu_s"]

    return {"gradient": gradient, "steps": steps, "ess_per_draw": ess, "rest": row["ratio"] / (gradient * steps * ess),
            "sampling_share_package": share(p), "sampling_share_numpyro": share(n)}


def _rates(fit: dict[str, Any]) -> dict[str, Any]:
    if "min_ess_bulk" not in fit:  # no fit, or NumPyro's stopped at its CPU limit
        return dict(fit)
    return {**fit, "ess_per_cpu_s": fit["min_ess_bulk"] / fit["cpu_s"]}


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The Markdown tables of docs/benchmarks.md: the comparison, then the ratio's measured factors."""
    lines = ["| case | data set | data (subjects × answers, chains × (tune + draws)) | package ESS/CPU-s "
             "(bulk, tail ESS; CPU s) | NumPyro ESS/CPU-s (bulk, tail ESS; CPU s) | ratio | R-hat package / NumPyro | "
             "divergences |", "|---|---|---|---|---|---|---|---|"]
    factors = ["| case | data set | gradient µs package / NumPyro | steps a draw package / NumPyro | "
               "× gradient | × steps | × ESS a draw | × rest | sampling share package / NumPyro |",
               "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p, n = r["package"], r["numpyro"]
        if not r["same_model"]:
            lines.append(f"| {r['case']} | {r['rep']} | not timed: the models differ "
                         f"({r['loglik_rel_diff']:.1e}, {r['logp_rel_diff']:.1e}) | | | | | |")
            continue
        label = f"{r['rep']}{' (compiles)' if r.get('first_fit', r['rep'] == 0) else ''}"
        head = (f"| {r['experiment']} {r['model']} | {label} | {r['subjects']} × {r['trials']}, {r['chains']} × "
                f"({r['tune']} + {r['draws']}) | {p['ess_per_cpu_s']:.1f} ({p['min_ess_bulk']:.0f}, "
                f"{p['min_ess_tail']:.0f}; {p['cpu_s']:.1f}) | ")
        if "ratio" not in r:  # NumPyro stopped at its CPU limit in this data set, or before it
            bound = math.floor(r.get("ratio_at_least", 0.0) * 100) / 100  # a lower bound, printed rounded down
            lines.append(head + (f"unfinished after {n['cpu_s']:.0f} CPU-s | **> {bound:.2f}×** | "
                                 if n.get("unfinished") else "not begun (CPU limit) | | ")
                         + f"{p['max_rhat']:.3f} / – | {p['divergences']} / – |")
            continue
        lines.append(head + f"{n['ess_per_cpu_s']:.1f} ({n['min_ess_bulk']:.0f}, "
                     f"{n['min_ess_tail']:.0f}; {n['cpu_s']:.1f}) | **{r['ratio']:.2f}×** | "
                     f"{p['max_rhat']:.3f} / {n['max_rhat']:.3f} | {p['divergences']} / {n['divergences']} |")
        a = r["attribution"]
        factors.append(
            f"| {r['experiment']} {r['model']} | {label} | {p['grad_us']:.0f} / {n['grad_us']:.0f} | "
            f"{p['mean_steps']:.1f} / {n['mean_steps']:.1f} | {a['gradient']:.2f} | {a['steps']:.2f} | "
            f"{a['ess_per_draw']:.2f} | {a['rest']:.2f} | {a['sampling_share_package']:.2f} / "
            f"{a['sampling_share_numpyro']:.2f} |")
    return "\n".join(lines) + "\n\n" + "\n".join(factors)


def centred_names(spec: str, model: Any) -> tuple[str, ...]:
    """The parameters of ``model`` that ``--centred spec`` names (those of the model's parameters among them)."""
    if spec == "none":
        return ()
    names = model.parameters.names
    return tuple(names) if spec == "all" else tuple(n for n in names if n in spec.split(","))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases (--list)")
    parser.add_argument("--reps", type=int, default=2, help="data sets per case (the first compiles)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain (and tuning steps unless --tune)")
    parser.add_argument("--tune", type=int, default=None, help="tuning steps per chain (default: --draws)")
    parser.add_argument("--subjects", type=int, default=None, help="at most this many subjects per data set")
    parser.add_argument("--cores", type=int, default=1,
                        help="nutpie's threads (1: chains one after another, as NumPyro's 'sequential')")
    parser.add_argument("--numpyro-python", type=Path, default=Path(os.environ.get("NUMPYRO_PYTHON", NUMPYRO_PYTHON)))
    parser.add_argument("--numpyro-cpu-limit", type=float, default=None, metavar="SECONDS",
                        help="stop NumPyro's process after this much CPU (imports and checks included); the data "
                             "set it was fitting gets a lower bound of its CPU and of the ratio")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--mass-matrix-from-gradients", action="store_true",
                        help="the package's nutpie fits adapt the mass matrix from draws and gradients (nutpie's "
                             "default; cogtestbed's is the draws alone: MASS_MATRIX_FROM_GRADIENTS)")
    parser.add_argument("--low-rank-mass-matrix", action="store_true",
                        help="the package's nutpie fits use nutpie's low-rank mass matrix on every case (the "
                             "model's low_rank_mass_matrix attribute set on its class for this process)")
    parser.add_argument("--diagonal-mass-matrix", action="store_true",
                        help="the package's nutpie fits use the diagonal mass matrix on every case, also where the "
                             "model declares the low-rank one (the per-family comparison, "
                             "benchmarks/studies/lowrank_per_family.py)")
    parser.add_argument("--target-accept", type=float, default=None, metavar="P",
                        help="NUTS target acceptance of both sides on every case, in place of the model's "
                             "target_accept attribute (set on its class for this process; the per-family comparison, "
                             "benchmarks/studies/target_accept_per_family.py)")
    parser.add_argument("--centred", default=None, metavar="NAMES",
                        help="the parameters both sides sample centred on every case, in place of the model's "
                             "centred_parameters attribute and of the data's choice (centre_pinned off; set on its "
                             "class for this process): 'none', 'all', or comma-separated names (the per-family "
                             "comparison, benchmarks/studies/centring_per_family.py)")
    parser.add_argument("--first-data-set", type=int, default=0, metavar="K",
                        help="fit data sets K … K + reps − 1 (seed = data set), e.g. fresh data sets for a "
                             "comparison chosen on data sets 0 … K − 1, or a later data set against NumPyro without "
                             "refitting data set 0; data set K is then each side's first fit in its process and "
                             "compiles, so its CPU is not that of the same data set under --reps K + n")
    parser.add_argument("--package-only", action="store_true",
                        help="only the package's fits (no NumPyro, no checks): before/after a change of the package")
    parser.add_argument("--check-only", action="store_true",
                        help="only check that the two models agree, and time one log density + gradient on each side")
    args = parser.parse_args(argv)
    if args.list:
        for name, case in CASES.items():
            print(f"{name}: {case.experiment} {case.model}, {case.subjects} subjects")
        return 0
    names = [c for c in args.cases.split(",") if c]
    unknown = [c for c in names if c not in CASES]
    if (unknown or args.reps < 1 or args.chains < 2 or args.draws < 1 or (args.tune is not None and args.tune < 1)
            or (args.subjects is not None and args.subjects < 2) or args.cores < 1
            or (args.numpyro_cpu_limit is not None and not args.numpyro_cpu_limit > 0)
            or args.first_data_set < 0
            or (args.low_rank_mass_matrix and args.diagonal_mass_matrix)
            or (args.target_accept is not None and not 0.5 <= args.target_accept < 1)):
        print(f"give cases of {', '.join(CASES)}, --reps >= 1, --chains >= 2, --draws, --tune, --cores >= 1, "
              f"--subjects >= 2, --numpyro-cpu-limit > 0, --first-data-set >= 0, "
              f"at most one of --low-rank-mass-matrix and --diagonal-mass-matrix, --target-accept in [0.5, 1) "
              f"(unknown: {unknown})",
              file=sys.stderr)
        return 2
    if not args.numpyro_python.exists() and not args.package_only:
        print(f"no NumPyro environment at {args.numpyro_python}: run 'make bench-numpyro' (or give --numpyro-python)",
              file=sys.stderr)
        return 2
    if args.mass_matrix_from_gradients:
        from cogtestbed.inference import hierarchical_sampling

        hierarchical_sampling.MASS_MATRIX_FROM_GRADIENTS = True
    from cogtestbed.registry import get_experiment

    models = {name: get_experiment(CASES[name].experiment).model(CASES[name].model) for name in names}
    if args.low_rank_mass_matrix or args.diagonal_mass_matrix:
        for model in models.values():  # the class, so every instance the fit builds has it
            type(model).low_rank_mass_matrix = args.low_rank_mass_matrix
    if args.target_accept is not None:
        for model in models.values():
            type(model).target_accept = args.target_accept
    if args.centred is not None:
        for model in models.values():  # exactly these: the data no longer choose
            type(model).centred_parameters = centred_names(args.centred, model)
            type(model).centre_pinned = False
    print(json.dumps({"load_average": os.getloadavg(), "cases": names,
                      "mass_matrix_from_gradients": args.mass_matrix_from_gradients,
                      "low_rank_mass_matrix": {n: bool(type(m).low_rank_mass_matrix) for n, m in models.items()},
                      "target_accept": {n: type(m).target_accept for n, m in models.items()},
                      "centred": {n: list(getattr(m, "centred_parameters", ())) for n, m in models.items()}}),
          flush=True)
    rows = [row for name in names for row in run_case(name, CASES[name], args, args.numpyro_python)]
    if not (args.check_only or args.package_only):
        print(table(rows))
    return 0 if all(r["same_model"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

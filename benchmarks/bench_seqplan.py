"""Fixed vs sequential ``cogtestbed plan`` for RW± optimism bias 0.2 at 80 % power: wall and CPU.

Issue 33's speed target: a sequential plan (``--looks 10 --spending pocock --futility``) within 2×
the time of the fixed plan on 2 cores.  Each round runs both as whole ``cogtestbed`` processes
(``--workers 2 --json``; the order flips every other round so both see the same load) after one
untimed round that fills the numba and bytecode caches, and prints every round and the medians:
wall seconds, CPU seconds of the process and its workers, and the sequential/fixed ratio.
``--seq-sims N`` times the sequential plan at N simulated studies per hypothesis (default: the
plan's own default, as many as give ``--mc-se`` 0.03 at 80 % power).  On a shared machine compare
the CPU columns.

    python benchmarks/bench_seqplan.py [--rounds 3] [--seq-sims 1000] [--warmup 1]
    python benchmarks/bench_seqplan.py --profile 100   # cProfile of the sequential simulation alone
    python benchmarks/bench_seqplan.py --twostep [--fixed] [--checkout DIR] [--save PLAN.json]
        # issue 40's two-LLM two-step plan (5 looks, gpt-4o vs gpt-4o-mini; --fixed: the fixed plan, gpt-4o
        # for both): wall and CPU seconds of the process and its workers, $ and the design
    python benchmarks/bench_seqplan.py --path-cost 20   # CPU s per simulated path of that 5-look plan
    python benchmarks/bench_seqplan.py --auto [--workers 1] [--seq-sims 200 --null-sims 200] [--rounds 1] \
        [--baseline DIR]   # DIR: another checkout whose --looks auto is timed in the same alternation
        # issue 54 item 4: the fixed plan vs plan --looks auto (whole processes): wall, CPU, subjects
        # fitted, CPU per fitted subject, the chosen design's fresh type-I with its upper bound and MC SE, and the
        # ratio (target: auto <= 2x the fixed plan's wall on 2 cores)
    python benchmarks/bench_seqplan.py --profile-auto 200   # cProfile of plan --looks auto's search
    python benchmarks/bench_seqplan.py --search-cost 1000 [--baseline DIR]   # CPU of its serial search and bootstraps
    python benchmarks/bench_seqplan.py --fits 1500   # issue 71: per-subject statistics auto could simulate, compared
    python benchmarks/bench_seqplan.py --cap-agreement 150 [FAMILY ...] [--record NAME]   # issue 71: per family,
        # --looks auto's BFGS iteration cap against none on the same subjects: agreement of every estimate, CPU ms a
        # subject (--record: into benchmarks/studies/results/NAME.json, which benchmarks/studies/recorded.py prints)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_workflows import timed_cogtestbed  # noqa: E402 - the workflow benchmark's timer

FIXED = ["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2", "--power", "0.8",
         "--llm", "openai:gpt-4o-mini", "--workers", "2", "--json"]
SEQUENTIAL = [*FIXED, "--looks", "10", "--spending", "pocock", "--futility"]


def timed(args: list[str], scratch: Path, checkout: Path = ROOT) -> tuple[float, float, dict]:
    """(wall s, CPU s of the process and its children, the plan's JSON) of ``cogtestbed ARGS``."""
    wall, cpu, out = timed_cogtestbed(checkout, args, scratch)
    return wall, cpu, json.loads(out)


def profile(sims: int) -> None:
    """Where a sequential plan's time goes: ``plan_sequential`` of the headline cell (26 subjects x 96
    trials fixed, 10 Pocock looks, futility) at ``sims`` studies per hypothesis, one process, under
    cProfile; the functions taking the most time of their own."""
    import cProfile
    import pstats

    from cogtestbed.planning.kinds.sequential.seqplan import plan_sequential
    from cogtestbed.studies.driver import study_spec

    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2, seed=0, trials=(96,))
    plan_sequential(spec, 26, 96, 1, 10, "pocock", True, 0.8, sims=2, workers=1)  # kernels loaded first
    prof = cProfile.Profile()
    prof.enable()
    res = plan_sequential(spec, 26, 96, 1, 10, "pocock", True, 0.8, sims=sims, workers=1)
    prof.disable()
    print(f"{sims} studies per hypothesis: {res.subjects:,} subjects fitted, {res.cpu_seconds:.1f} s CPU")
    pstats.Stats(prof).sort_stats("tottime").print_stats(12)


def profile_auto(sims: int) -> None:
    """Where ``plan --looks auto``'s time goes: ``seqauto.plan_auto`` of the headline cell (26 subjects x 96 trials
    fixed) at ``sims`` studies per set (effect and each null set), one process, under cProfile after an unprofiled run
    at 100 that compiles or loads the kernels: the functions with the most cumulative time (issue 54 item 4) and
    with the most time of their own."""
    import cProfile
    import pstats
    import time

    from cogtestbed.planning.kinds.sequential.seqauto import plan_auto
    from cogtestbed.studies.driver import study_spec

    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2, seed=0, trials=(96,))
    plan_auto(spec, 26, 96, 1, 0.8, sims=100, null_sims=100, workers=1)  # kernels compiled or loaded first
    prof = cProfile.Profile()
    cpu = time.process_time()
    prof.enable()
    res = plan_auto(spec, 26, 96, 1, 0.8, sims=sims, null_sims=sims, workers=1)
    prof.disable()
    print(f"{sims} studies per set: {res.result.subjects:,} subjects fitted, {time.process_time() - cpu:.1f} s CPU")
    stats = pstats.Stats(prof)
    stats.sort_stats("cumtime").print_stats(30)
    stats.sort_stats("tottime").print_stats(12)  # the functions' own time: the BFGS and the start grid's kernel


def search_cost(sims: int, baseline: Path | None, rounds: int = 2) -> None:
    """CPU of ``plan --looks auto``'s serial main-process work (issue 71) at ``sims`` paths a set, each in a
    process of its own, alternating with ``baseline``'s code where given: :func:`search_cost_child`."""
    import subprocess

    sides = [("this", ROOT)] + ([("baseline", baseline)] if baseline is not None else [])
    for r in range(rounds):
        for name, code in (sides if r % 2 == 0 else sides[::-1]):
            env = {**os.environ, "PYTHONPATH": str(code)}
            out = subprocess.run([sys.executable, __file__, "--search-cost-child", str(sims)], env=env, check=True,
                                 capture_output=True, text=True).stdout.strip()
            print(f"round {r + 1} {name:8s} ({code}): {out}; load {os.getloadavg()[0]:.1f}", flush=True)


def search_cost_child(sims: int) -> None:
    """The serial parts of ``plan --looks auto`` on synthetic Gaussian paths (``sims`` a set, the headline cell's
    sizes: fixed size 26, maxima 20-36): the 108 rule shapes' bounds, the search's scoring of every rule, and the
    fair comparator's two bootstraps (the smoothed comparator, 1,000 effect and 2,000 null paths; the joint
    saving), CPU seconds of each."""
    import time
    from types import SimpleNamespace

    import numpy as np

    from cogtestbed.planning.kinds.sequential import seqauto
    from cogtestbed.planning.kinds.sequential.seqfair import FIXED_MIN_FACTOR, joint_saving, smoothed_comparator
    from cogtestbed.planning.kinds.sequential.seqplan import candidate_maxima, look_sizes

    fixed_size, n_top = 26, math.ceil(seqauto.MAX_FACTOR * 26)
    lo_fixed, lo = math.floor(FIXED_MIN_FACTOR * fixed_size), math.floor(seqauto.MIN_FACTOR * fixed_size)
    looks = [k for k in seqauto.LOOKS if 2 * k <= n_top]
    maxima = candidate_maxima(max(4, math.floor(seqauto.MIN_FACTOR * lo_fixed)), n_top, fixed_size)
    fixed_sizes = candidate_maxima(lo_fixed, n_top, fixed_size)
    sizes = tuple(sorted({n for k in looks for m in maxima if m >= 2 * k for n in look_sizes(m, k)}
                         | set(fixed_sizes)))
    rng = np.random.default_rng(5)

    def paths(drift: float, reps: int) -> SimpleNamespace:
        n = np.asarray(sizes, float)
        steps = rng.normal(size=(reps, n.size)) * np.sqrt(np.diff(np.r_[0, n]))
        z = (np.cumsum(steps, axis=1) + drift * n) / np.sqrt(n)
        return SimpleNamespace(z=z, est=z / 10)

    eff, cal, nul = paths(0.55, sims), paths(0.0, sims), paths(0.0, sims)
    t0 = time.process_time()
    seqauto.shapes(seqauto.calibration_level(0.05, sims), 0.8)
    t1 = time.process_time()
    found = seqauto.search(eff, cal, nul, sizes, maxima, fixed_sizes, lo, 0.05, 0.8, 1.0, False)
    t2 = time.process_time()
    cols = [sizes.index(n) for n in fixed_sizes]
    null = np.vstack([cal.z[:, cols], nul.z[:, cols]])
    smoothed_comparator(eff.z[:, cols], null, fixed_sizes, 1.0, 0.037, 0.8, 0)
    t3 = time.process_time()
    joint_saving({"effect": eff.z[:, cols], "null": null}, rng.random(2 * sims) < 0.037, rng.integers(0, 9, sims),
                 list(np.linspace(1, 9, 9)), 0.3, fixed_sizes, 1.0, 0.05, 0.8, 0)
    t4 = time.process_time()
    print(f"rule shapes {t1 - t0:.2f} s CPU, scoring {found.searched['rules']:,} rules {t2 - t1:.2f} s, smoothed "
          f"comparator {t3 - t2:.2f} s, joint saving {t4 - t3:.2f} s ({found.searched['passing']} rules passing)")


#: Issue 40's two-LLM two-step comparison, fixed (gpt-4o for both LLMs: the target is <= $75 per LLM at
#: 80 % power) ...
TWOSTEP = ["plan", "two-step", "--metric", "model_basedness", "--compare", "hybrid:w=0.3,beta=5",
           "hybrid:w=0.45,beta=5", "--llm", "openai:gpt-4o", "--llm", "openai:gpt-4o", "--workers", "2", "--json"]
#: ... and the issue's 5-look command as it names it (gpt-4o vs gpt-4o-mini; target <= 5 min on 2 cores).
TWOSTEP_LOOKS = [*TWOSTEP[:TWOSTEP.index("--llm")], "--llm", "openai:gpt-4o", "--llm", "openai:gpt-4o-mini",
                 "--workers", "2", "--json", "--looks", "5", "--spending", "pocock", "--futility"]
#: The wall-clock target of the 5-look plan on 2 idle cores, seconds.
TWOSTEP_TARGET_S = 300


def twostep(looks: bool, checkout: Path = ROOT, save: Path | None = None) -> None:
    """The two-step comparison of issue 40 as one whole ``cogtestbed plan`` process (of ``checkout``):
    wall and CPU seconds of the process and its workers (with the load average, the machine being
    shared: on a loaded machine compare CPU, and CPU / 2 is the least wall 2 idle cores could take),
    the chosen fixed design and its dollars per LLM, and with ``looks`` the 5-look plan's operating
    characteristics and saving; ``save``: the plan's JSON written there (to compare two checkouts)."""
    args = TWOSTEP_LOOKS if looks else TWOSTEP
    print("$ cogtestbed", " ".join(args), f"(code of {checkout})", flush=True)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-twostep-") as tmp:
        wall, cpu, payload = timed(args, Path(tmp), checkout)
    one, five, fifteen = os.getloadavg()
    if save is not None:
        save.write_text(json.dumps(payload, indent=1))
    c = payload["chosen"]
    llms = payload["run"]["llms"]
    target = f" (target <= {TWOSTEP_TARGET_S} s on 2 idle cores)" if looks else ""
    print(f"WALL {wall:.1f} s{target}; CPU {cpu:.1f} s of the process and its workers; load average "
          f"{load0[0]:.1f} at the start, {one:.1f}/{five:.1f}/{fifteen:.1f} at the end, {os.cpu_count()} CPUs "
          f"(CPU / 2 = {cpu / 2:.0f} s: the least wall 2 cores could take)")
    search = payload["search"]
    print(f"  fixed search: {search['seconds']:.1f} s wall, {search['cpu_seconds']:.1f} s CPU, "
          f"{search['simulations']:,} simulated studies of {search['designs_simulated']} designs, each priced by "
          "its dry run")
    seq = payload.get("sequential") or {}
    if "cpu_seconds" in seq:
        print(f"  sequential simulation: {seq['seconds']:.1f} s wall, {seq['cpu_seconds']:.1f} s CPU, "
              f"{seq['simulations']:,} simulated studies (+ {seq['calibration_simulations']:,} calibration)")
    per_llm = "; ".join(f"{r['llm']} ${r['estimated_cost_usd']:.2f}" for r in payload["cost"]["per_llm"])
    print(f"fixed: {c['design']}, power {c['power']:.3f} ± {c['mc_se']:.3f}, ${payload['cost']['dollars']:.2f} for "
          f"both LLMs ({', '.join(llms)}): {per_llm} (target <= $75 for gpt-4o)")
    for note in payload.get("notes") or []:
        print("note:", note)
    if seq and seq.get("chosen", True) is not None:
        e, n = seq["effect"], seq["null"]
        print(f"sequential: sizes {seq['design']['sizes']}, power {e['rejection_rate']:.3f} ± {e['mc_se']:.3f}, "
              f"type-I {n['rejection_rate']:.3f} ± {n['mc_se']:.3f} ({n['sims']} fresh null studies), expected "
              f"saving {seq['saving']['percent']:.1f}%; {seq['saving']['statement']}")
    elif seq:
        print("sequential:", seq.get("reason"))


def path_cost(paths: int) -> None:
    """CPU seconds per simulated sequential path of the two-step comparison (2 x 1,599 runs x 20 days,
    the 5-look plan's candidate maxima 1,023-1,599 around the fixed 1,279 runs: every look of every
    candidate tested on the same path), in this process, after one untimed path."""
    import time

    from cogtestbed.planning.kinds.sequential.seqpaths import simulate_paths
    from cogtestbed.planning.kinds.sequential.seqplan import candidate_maxima, look_sizes
    from cogtestbed.studies.driver import study_spec

    spec = study_spec(kind="metric-power", experiment="two-step", agent="hybrid", params={"beta": 5.0},
                      metric="model_basedness", compare=({"w": 0.3}, {"w": 0.45}), seed=0)
    maxima = candidate_maxima(1023, 1599, 1279)
    sizes = tuple(sorted({n for m in maxima for n in look_sizes(m, 5)}))
    simulate_paths(spec.model_dump_json(), 20, 1, 1599, sizes, 0, [0])
    start = time.process_time()
    simulate_paths(spec.model_dump_json(), 20, 1, 1599, sizes, 0, list(range(1, paths + 1)))
    cpu = (time.process_time() - start) / paths
    one, five, _ = os.getloadavg()
    print(f"{len(maxima)} candidate maxima, {len(sizes)} prefix sizes per path: {cpu:.3f} CPU s per path "
          f"({paths} paths; load {one:.1f}/{five:.1f})")


def auto(rounds: int, workers: int, seq_sims: int | None, null_sims: int | None, baseline: Path | None = None) -> None:
    """The fixed plan and ``plan --looks auto`` of the same cell, alternating, ``rounds`` times each (after one
    untimed fixed plan that fills the caches): wall and CPU of each whole process with its workers, the
    subjects each fitted (the fixed search's power studies; the sequential part's ``units_simulated``) and
    the ratio of the medians; ``baseline``: also ``--looks auto`` of that checkout's code (``auto-base``) in
    the same alternation, and the ratio of the two."""
    common = ["--workers", str(workers)]
    sizes = (["--seq-sims", str(seq_sims)] if seq_sims else []) + (["--null-sims", str(null_sims)] if null_sims else [])
    runs = {"fixed": [*FIXED[:-3], *common, "--json"], "auto": [*FIXED[:-3], *common, "--json", "--looks", "auto",
                                                               *sizes]}
    code = {"fixed": ROOT, "auto": ROOT}
    if baseline is not None:
        runs["auto-base"], code["auto-base"] = runs["auto"], baseline
        print(f"auto-base: the code of {baseline}", flush=True)
    print("$ cogtestbed", " ".join(runs["auto"]), flush=True)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    with tempfile.TemporaryDirectory(prefix="bench-seqauto-") as tmp:
        timed(runs["fixed"], Path(tmp))
        for r in range(rounds):
            for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
                wall, cpu, payload = timed(runs[name], Path(tmp), code[name])
                times[name].append((wall, cpu))
                search = payload["search"]
                fits = sum(e["sims"] * e["subjects"] for e in payload["evaluated"])
                load = "/".join(f"{x:.1f}" for x in os.getloadavg()[:2])
                line = (f"round {r + 1} {name:9s}: wall {wall:7.1f} s  CPU {cpu:7.1f} s  (load {load}); fixed search "
                        f"{search['cpu_seconds']:.1f} s CPU, {fits:,} subjects fitted")
                seq = payload.get("sequential") or {}
                if "units_simulated" in seq:
                    line += (f"; sequential {seq['seconds']:.1f} s wall, {seq['cpu_seconds']:.1f} s CPU, "
                             f"{seq['units_simulated']:,} subjects fitted "
                             f"({1000 * seq['cpu_seconds'] / max(seq['units_simulated'], 1):.2f} CPU ms each)")
                print(line, flush=True)
                if "type1_check" in seq.get("null", {}):
                    print(_auto_guarantees(seq), flush=True)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
    for name in [n for n in runs if n != "fixed"]:
        print(f"{name} / fixed: wall {med[name][0] / med['fixed'][0]:.2f}x, CPU {med[name][1] / med['fixed'][1]:.2f}x "
              f"(target: wall <= 2x on 2 idle cores; on a shared machine compare CPU)")
    if baseline is not None:
        print(f"auto / auto-base: wall {med['auto'][0] / med['auto-base'][0]:.2f}x, "
              f"CPU {med['auto'][1] / med['auto-base'][1]:.2f}x")


def fits(n: int) -> None:
    """The per-subject statistics ``plan --looks auto`` could simulate (issue 71), on the same ``n`` simulated
    96-trial RW± subjects under the null and ``n`` under optimism bias 0.2: CPU ms a subject, the share within
    1e-3 of the full fitter's contrast, the null and effect means and the standardized effect (what the t-test's
    power rests on): the full fitter, coarse-start MLEs (grid nodes a parameter x BFGS starts; ``AUTO_FIT`` is
    4 x 2 with at most 50 BFGS iterations a start, against 200 before), and grid posterior means of the contrast (no
    per-subject optimisation: the NLL on the grid alone)."""
    import time

    import numpy as np

    from cogtestbed.planning.kinds.sequential.seqfit import AUTO_FIT, FULL_FIT, SubjectFit
    from cogtestbed.planning.kinds.sequential.seqsim import _chunk_table, subject_contrasts
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.driver import study_spec
    from cogtestbed.studies.study_data import design_for_trials
    from cogtestbed.studies.study_kinds import PowerStudy

    exp = get_experiment("instrumental-learning")
    model = exp.model("rw-pm")
    design = design_for_trials(exp, 96, {})

    def grid_mean(g: int):  # type: ignore[no-untyped-def]
        def run(spec, table):  # type: ignore[no-untyped-def]
            m = SubjectFit(g, 1).fitter(model)
            grid, data = m.start_grid(), m.subject_data(table)
            names = model.parameters.names
            c = np.asarray(model.contrast("optimism_bias", {p: grid[:, i] for i, p in enumerate(names)}))
            out = np.full(n, np.nan)
            for k, d in data.items():
                nll = m.nll_many(grid, d)
                w = np.exp(-(nll - nll.min()))
                out[int(str(k))] = float(w @ c / w.sum())
            return out
        return run

    rows = {"full MLE (9^3 grid, 8 starts)": FULL_FIT, "auto MLE 4^3, 2 starts, <=50 it": AUTO_FIT,
            "MLE 4^3, 2 starts, <=200 it": SubjectFit(4, 2),
            "  the same, <=50 it, gtol 1e-4": SubjectFit(4, 2, 50, 1e-4, 1e-9),
            "MLE 4^3 grid, 1 start": SubjectFit(4, 1), "MLE 5^3 grid, 2 starts": SubjectFit(5, 2),
            "grid posterior mean 4^3": grid_mean(4), "grid posterior mean 9^3": grid_mean(9)}
    got: dict[tuple[str, float], tuple[np.ndarray, float]] = {}
    for es in (0.0, 0.2):
        spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                          effect_size=es, seed=0, trials=(96,))
        assert isinstance(spec, PowerStudy)
        table = _chunk_table(spec, exp, model, design, 1, n, np.random.SeedSequence(200 + int(es * 10)))
        for name, how in rows.items():
            start = time.process_time()
            v = (subject_contrasts(spec, model, table, n, fit=how)
                 if isinstance(how, SubjectFit) else how(spec, table))
            got[(name, es)] = (v, 1000 * (time.process_time() - start) / n)
    f0, f1 = got[(next(iter(rows)), 0.0)][0], got[(next(iter(rows)), 0.2)][0]
    print(f"{n} null and {n} effect subjects (96 trials; load {os.getloadavg()[0]:.1f})")
    for name in rows:
        (v0, c0), (v1, c1) = got[(name, 0.0)], got[(name, 0.2)]
        agree = np.mean(np.r_[np.abs(v0 - f0), np.abs(v1 - f1)] <= 1e-3)
        sd = math.sqrt((v0.var() + v1.var()) / 2)
        print(f"{name:31s} {(c0 + c1) / 2:6.3f} CPU ms  within 1e-3 of full {agree:6.1%}  null mean {v0.mean():+.4f}  "
              f"effect mean {v1.mean():+.4f}  standardized effect {(v1.mean() - v0.mean()) / sd:.3f}")


def cap_agreement(n: int, only: list[str]) -> list[str]:
    """Per family (``experiment/model``; every registered model unless ``only`` names some), ``plan --looks
    auto``'s fit (``seqfit.AUTO_FIT``: its grid and starts, each BFGS start capped at the family's iterations)
    against the same search without the cap, on the same ``n`` simulated subjects (``seqfit.iteration_agreement``,
    seed 5): the share whose every estimate agrees within 1e-3 (relative above 1), the share whose uncapped search
    had settled (the same estimates at 150 iterations as at 200) and the agreement among those (the bound
    ``tests/test_seqfit.py`` asserts, ``seqfit.CAP_AGREEMENT``), the CPU ms a subject of each (two alternated
    rounds), and for a family whose cap is not the uniform 50 the two agreements 50 would give.  Returns the lines
    printed."""
    from cogtestbed.planning.kinds.sequential.seqfit import (
        AUTO_MAX_ITER,
        AUTO_MAX_ITER_OF,
        SubjectFit,
        iteration_agreement,
    )
    from cogtestbed.registry import experiment_names, get_experiment

    lines: list[str] = []

    def say(line: str) -> None:
        print(line.rstrip(), flush=True)
        lines.append(line.rstrip())

    say(f"{n} subjects a family (default design, default parameters scattered SD 0.5 on the unconstrained scale, "
        f"seed 5; load {os.getloadavg()[0]:.1f} at the start)")
    say(f"{'family':42s} {'cap':>4s} {'agree':>7s} {'settled':>8s} {'agree|settled':>14s} {'CPU ms':>7s} "
        f"{'uncapped':>9s}  at 50: agree, agree|settled")
    for fam in [f"{e}/{m}" for e in experiment_names() for m in get_experiment(e).models]:
        if only and fam not in only:
            continue
        got = iteration_agreement(fam, n, seed=5, rounds=2)
        at50 = ""
        if fam in AUTO_MAX_ITER_OF:
            u = iteration_agreement(fam, n, seed=5, fit=SubjectFit(4, 2, AUTO_MAX_ITER))
            at50 = f"{u.agree:6.1%}, {u.agree_settled:6.1%}"
        say(f"{fam:42s} {got.max_iter:4d} {got.agree:7.1%} {got.settled:8.1%} {got.agree_settled:14.1%} "
            f"{got.cpu_ms:7.2f} {got.own_cpu_ms:9.2f}  {at50}")
    say(f"load {os.getloadavg()[0]:.1f} at the end (2 cores shared)")
    return lines


def _auto_guarantees(seq: dict) -> str:
    """The chosen design's fresh type-I error with its one-sided upper bound and MC SE, its fresh power,
    and the statistic its studies simulated (issue 71: the guarantees the speed must keep)."""
    chk, n, e = seq["null"]["type1_check"], seq["null"], seq["effect"]
    d = seq["design"]
    fit = d["statistic"].get("fit") or {}
    return (f"  chosen {d['spending']} {len(d['sizes'])} looks to {d['sizes'][-1]}: "
            f"fresh type-I {chk['rate']:.4f} ± {n['mc_se']:.4f} (one-sided 95% upper bound {chk['upper']:.4f}, "
            f"{chk['sims']:,} fresh null studies; <= .05: {chk['upper'] <= 0.05}), power {e['rejection_rate']:.3f} ± "
            f"{e['mc_se']:.3f}; statistic: " + (
                f"amortised estimate from the NLL at {fit['start_grid_size']} grid points"
                if fit.get("estimator") == "amortised" else
                f"per-subject MLE from {fit.get('start_grid_size', 'the full')} grid points, "
                f"{fit.get('n_starts', 'the model')} starts, at most {fit.get('max_iter', 200)} BFGS iterations each"))


def main() -> None:
    if sys.argv[1:2] == ["--auto"]:
        ap = argparse.ArgumentParser(description="plan --looks auto vs the fixed plan, timed")
        ap.add_argument("--auto", action="store_true")
        ap.add_argument("--rounds", type=int, default=1)
        ap.add_argument("--workers", type=int, default=1)
        ap.add_argument("--seq-sims", type=int, default=None)
        ap.add_argument("--null-sims", type=int, default=None)
        ap.add_argument("--baseline", type=Path, default=None,
                        help="also time --looks auto of this checkout's code, alternating (e.g. the main checkout)")
        o = ap.parse_args()
        auto(o.rounds, o.workers, o.seq_sims, o.null_sims, None if o.baseline is None else o.baseline.resolve())
        return
    if sys.argv[1:2] == ["--search-cost"]:
        ap = argparse.ArgumentParser(description="looks auto's serial search and bootstraps, CPU")
        ap.add_argument("--search-cost", type=int, default=1000)
        ap.add_argument("--baseline", type=Path, default=None)
        o = ap.parse_args()
        search_cost(o.search_cost, None if o.baseline is None else o.baseline.resolve())
        return
    if sys.argv[1:2] == ["--search-cost-child"]:
        search_cost_child(int(sys.argv[2]))
        return
    if sys.argv[1:2] == ["--fits"]:
        fits(int(sys.argv[2]) if len(sys.argv) > 2 else 1500)
        return
    if sys.argv[1:2] == ["--cap-agreement"]:
        ap = argparse.ArgumentParser(description="plan --looks auto's iteration cap per family against none")
        ap.add_argument("--cap-agreement", type=int, default=150, metavar="SUBJECTS")
        ap.add_argument("families", nargs="*", help="experiment/model (default: every family)")
        ap.add_argument("--record", default=None, help="also write the lines to benchmarks/studies/results/NAME.json")
        o = ap.parse_args()
        lines = cap_agreement(o.cap_agreement, o.families)
        if o.record:
            sys.path.insert(0, str(Path(__file__).resolve().parent / "studies"))
            import recorded

            recorded.write(o.record, " ".join(["python benchmarks/bench_seqplan.py", *sys.argv[1:]]), [], output=lines)
        return
    if sys.argv[1:2] == ["--profile-auto"]:
        profile_auto(int(sys.argv[2]) if len(sys.argv) > 2 else 200)
        return
    if sys.argv[1:2] == ["--path-cost"]:
        path_cost(int(sys.argv[2]) if len(sys.argv) > 2 else 20)
        return
    if sys.argv[1:2] == ["--profile"]:
        profile(int(sys.argv[2]) if len(sys.argv) > 2 else 100)
        return
    if sys.argv[1:2] == ["--twostep"]:
        ap = argparse.ArgumentParser(description="issue 40's two-step plan, timed")
        ap.add_argument("--twostep", action="store_true")
        ap.add_argument("--fixed", action="store_true", help="the fixed plan only (gpt-4o for both LLMs)")
        ap.add_argument("--checkout", type=Path, default=ROOT, help="time this checkout's code (default: this one)")
        ap.add_argument("--save", type=Path, default=None, help="write the plan's JSON here")
        opts = ap.parse_args()
        twostep(looks=not opts.fixed, checkout=opts.checkout.resolve(), save=opts.save)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seq-sims", type=int, default=None)
    opts = ap.parse_args()
    sequential = SEQUENTIAL + ([] if opts.seq_sims is None else ["--seq-sims", str(opts.seq_sims)])
    runs = {"fixed": FIXED, "sequential": sequential}
    print("$ cogtestbed", " ".join(sequential), flush=True)
    times: dict[str, list[tuple[float, float]]] = {"fixed": [], "sequential": []}
    with tempfile.TemporaryDirectory(prefix="bench-seqplan-") as tmp:
        for _ in range(opts.warmup):
            timed(FIXED, Path(tmp))
        for r in range(opts.rounds):
            order = list(runs) if r % 2 == 0 else list(runs)[::-1]
            for name in order:
                wall, cpu, payload = timed(runs[name], Path(tmp))
                times[name].append((wall, cpu))
                extra = ""
                if "sequential" in payload and payload["sequential"].get("chosen", True) is not None:
                    seq = payload["sequential"]
                    extra = (f"; saving {seq['saving']['percent']:.1f}%, power {seq['effect']['rejection_rate']:.3f}, "
                             f"type-I {seq['null']['rejection_rate']:.3f} ({seq['effect']['sims']} studies each), "
                             f"{seq['units_simulated']:,} subjects fitted")
                one, five, _ = os.getloadavg()
                print(f"round {r + 1} {name:10s}: wall {wall:6.1f} s  CPU {cpu:6.1f} s  (load {one:.1f}/{five:.1f})"
                      + extra, flush=True)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
    for k, (w, c) in med.items():
        print(f"median {k:10s}: wall {w:6.1f} s  CPU {c:6.1f} s")
    print(f"sequential / fixed: wall {med['sequential'][0] / med['fixed'][0]:.2f}x, "
          f"CPU {med['sequential'][1] / med['fixed'][1]:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()

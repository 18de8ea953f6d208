"""Anytime-valid monitoring validated on every experiment's declared plan questions (issue 74): per question the
fixed t-test, the group-sequential design (3 looks, Lan-DeMets O'Brien-Fleming, calibrated) and the betting
e-process looked at after every unit, side by side at equal power (target 0.80): expected units under the effect
and the null, the most, power and type-I error (one-sided 95 % upper bound), each with its MC SE.  The saving
compares the monitor with the fixed test a researcher would run (Welch, rank or one-sample t as the question
declares) sized for the monitor's own power, both measured on the fresh pools (``fixed*``: that size; ``pow
f/m``: the fixed test's power at its whole size and the monitor's), with a joint 95 % interval (jackknife over
the sub-pools).

The questions come from the experiments' declarations (:func:`~monitor_questions.
declared_questions`: every declared ``power`` study, one LLM and two, and ``metric-power`` study), not from a
hand list; each is sized and measured from simulated pools alone (:func:`~monitor_questions.validate_question`,
beside this script): the per-unit statistic simulated once per pool and resampled into 2,000
studies per hypothesis; the rule chosen on choosing pools, every figure measured on fresh measuring pools.
Dollars are the plan's (``plan --monitor``); here the sizes are in units (subjects, pairs, pairs of runs).

    # one process per chunk (each appends one JSON line per question), then the table of all of them
    nice python benchmarks/studies/monitor.py run --experiment instrumental-learning --out monitor.jsonl
    python benchmarks/studies/monitor.py table monitor.jsonl
    python benchmarks/studies/monitor.py run --out monitor.jsonl    # every experiment (about 1 h CPU)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def questions(experiments: list[str] | None, groups: tuple[int, ...]) -> Iterator[Any]:
    """Every declared plan question of the experiments named (default: every registered experiment)."""
    from monitor_questions import declared_questions

    from cogtestbed.registry import experiment_names, get_experiment

    for name in experiments or experiment_names():
        yield from declared_questions(get_experiment(name), groups)


def run(args: argparse.Namespace) -> None:
    """Validate each question, appending its JSON line to ``args.out`` (a question already there is skipped)."""
    import warnings

    from monitor_questions import validate_question

    out = Path(args.out)
    done = {json.loads(x)["question"] for x in out.read_text().splitlines() if x.strip()} if out.exists() else set()
    for q in questions(args.experiment, tuple(args.groups)):
        if q.name in done or (args.question and not any(t in q.name for t in args.question)):
            continue
        wall = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row = ({"reason": q.needs} if q.spec is None else
                   validate_question(q.spec, sims=args.studies, seed=args.seed, max_units=args.max_units,
                                     pool_factor=args.pool_factor))
        load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
        line = {"question": q.name, "needs": q.needs, **row, "wall_s": time.perf_counter() - wall, "uptime": load}
        with out.open("a") as fh:
            fh.write(json.dumps(line, default=float) + "\n")
        print(f"{q.name}: {line.get('cpu_s', 0):.0f} s CPU, {line['wall_s']:.0f} s wall; {load}", file=sys.stderr,
              flush=True)


#: Why a row has no saving at equal power: its pools were simulated before the comparator existed, and the
#: comparator needs them (they are not recorded); ``monitor.py run`` of the question into a new file measures it.
NO_EQUAL_POWER = "not measured (a row of 27 Nov, before the equal-power comparator; its pools are not recorded)"


def _pm(x: float, se: float, fmt: str = ".3f") -> str:
    return f"{x:{fmt}}±{se:{fmt}}"


def rows(r: Mapping[str, Any]) -> list[str]:
    """The three designs of one validated question (or the reason it is not), as table lines."""
    if "cap" not in r:
        return [f"{r['question']}: {r['reason']}"]
    fx, gs = r["fixed"], r.get("group_sequential")
    unit = {"subject": "subjects", "pair": "pairs"}.get(r["unit"], "pairs of runs")
    out = [f"{r['question']} ({unit}; {r['trials'] or 'default'} trials; statistic {r['statistic']})",
           f"  {'design':<11} {'E[n] effect':>12} {'E[n] null':>11} {'max':>4} {'power':>12} {'type-I (upper)':>22}",
           f"  {'fixed':<11} {fx['n']:>12} {fx['n']:>11} {fx['n']:>4} {_pm(fx['power'], fx['power_se']):>12} "
           f"{_pm(fx['null_rejection'], fx['null_rejection_se'], '.4f'):>14} ({fx['null_upper']:.4f})"]
    if fx.get("test"):  # a composite null: the fixed and group-sequential designs are the tests valid for it
        out.append(f"  fixed and group-seq.: the {fx['test']} (valid for the same null; type-I on the "
                   f"{fx['null_studies']})")
    if isinstance(gs, Mapping):
        out.append(f"  {'group-seq.':<11} {_pm(gs['expected_effect'], gs['expected_effect_se'], '.1f'):>12} "
                   f"{gs['expected_null']:>11.1f} {gs['max']:>4} {_pm(gs['power'], gs['power_se']):>12} "
                   f"{_pm(gs['null_rejection'], gs['null_rejection_se'], '.4f'):>14} ({gs['null_upper']:.4f})")
    else:
        out.append(f"  {'group-seq.':<11} {'-':>12} (a fixed size of {fx['n']} leaves fewer than 2 units per look)")
    out.append(f"  {'monitor':<11} {_pm(r['expected_effect'], r['expected_effect_se'], '.1f'):>12} "
               f"{r['expected_null']:>11.1f} {r['cap']:>4} {_pm(r['power'], r['power_se']):>12} "
               f"{_pm(r['null_rejection'], r['null_rejection_se'], '.4f'):>14} ({r['null_upper']:.4f})")
    eq = r.get("equal_power") or {}
    if eq:
        out.append(f"  at equal power: the fixed {eq['test']} needs {eq['fixed_size']:.1f}±{eq['fixed_size_se']:.1f} "
                   f"for the monitor's power {_pm(eq['sequential_power'], eq['sequential_power_se'])} (its power at "
                   f"{eq['fixed_size_whole']}: {_pm(eq['fixed_power'], eq['fixed_power_se'])}; fresh pools)")
    s, lo, hi = (100 * x for x in (r["saving"], *r.get("saving_interval", [math.nan, math.nan])))
    fut = r.get("futility")
    out.append(f"  monitor: {r['test']} test{f', futility at K_t <= {fut:g}' if fut else ''}; saving against the "
               f"fixed test at equal power under the effect {s:+.1f}% (joint 95% {lo:+.1f}% to {hi:+.1f}%); null "
               f"rejection at any look to {r['longest']}: {r['null_rejection_any']:.4f} (upper "
               f"{r['null_upper_any']:.4f}); {r['null_studies']} null studies per design")
    from cogtestbed.planning.kinds.monitor.monitor_kind import recommended

    if recommended(r) == "fixed":
        out.append(f"  recommended: the fixed design (the monitor costs {-100 * r['saving']:.1f}% more at equal "
                   "power under the effect, over the 10% bar)")
    if r.get("test") == "mean" and not r.get("null_points"):
        out.append("  null: the plan's simulated population without the effect (not every LLM without it); no "
                   "nuisance region is declared for this effect, so the type-I figures hold for that population only")
    if not eq:
        out.append(f"  at equal power: {NO_EQUAL_POWER}")
    out.append(f"  validity needs: {r['property']}")
    out += null_table(r)
    out.append(f"  {r['simulated_units'] or 'cached'} simulated units, {r['cpu_s']:.0f} s CPU"
               + (f"; {r['command']}" if r.get("command") else ""))
    return out


def null_table(r: Mapping[str, Any]) -> list[str]:
    """A composite null's table: the monitor's null rejection at every fresh point of the nuisance region, within
    its design (to the cap, futility stops included) and at any look to 3× the cap, with one-sided 95 % upper
    bounds (none without ``null_points``)."""
    points = r.get("null_points") or []
    if not points:
        return []
    names = list(r["nuisance_region"])
    region = ", ".join(f"{k} in [{v[0]:g}, {v[1]:g}]" for k, v in r["nuisance_region"].items())
    a, b = r["null_interval"]
    out = [f"  null over the nuisance region ({region}; null interval [{a:+.4f}, {b:+.4f}]): {len(points)} fresh "
           "points",
           f"    {'point':<26} {'to cap':>8} {'upper':>8} {'any look':>9} {'upper':>8} {'E[n]':>6} {'studies':>7}"]
    for p in points:
        where = " ".join(f"{k} {p[k]:<8.3g}" for k in names)
        out.append(f"    {where:<26} {p['rejection']:>8.4f} {p['upper']:>8.4f} {p['rejection_any']:>9.4f} "
                   f"{p['upper_any']:>8.4f} {p['expected']:>6.1f} {p['studies']:>7}")
    worst = max(p["upper"] for p in points)
    worst_any = max(p["upper_any"] for p in points)
    ok = "every point <= alpha" if max(worst, worst_any) <= r["level"] else "OVER alpha at some point"
    out.append(f"    largest upper bound {worst:.4f} to the cap, {worst_any:.4f} at any look to "
               f"{max(p['longest'] for p in points)} (level {r['level']:g}): {ok}")
    return out


def brief(r: Mapping[str, Any]) -> str:
    """One line per question: its units, E[n] under the effect of the three designs, the monitor's saving and
    type-I upper bound (or the reason it is not monitored)."""
    if "cap" not in r:
        return f"{r['question'][:62]:<62} {'not monitored':>38}"
    gs = r.get("group_sequential")
    seq = f"{gs['expected_effect']:.1f}" if isinstance(gs, Mapping) else "-"
    eq = r.get("equal_power") or {}
    if not eq:  # measured before the equal-power comparator: no saving at equal power to show
        return (f"{r['question'][:62]:<62} {'-':>6} {'-':>9} {seq:>6} {r['expected_effect']:>6.1f} {'-':>18} "
                f"{r['null_upper']:>7.4f}  {NO_EQUAL_POWER}")
    lo, hi = (100 * x for x in r["saving_interval"])
    saving = f"{100 * r['saving']:+.1f}% [{lo:+.0f},{hi:+.0f}]"
    from cogtestbed.planning.kinds.monitor.monitor_kind import recommended

    return (f"{r['question'][:62]:<62} {eq['fixed_size']:>6.1f} {eq['fixed_power']:>4.2f}/{r['power']:.2f} "
            f"{seq:>6} {r['expected_effect']:>6.1f} {saving:>18} {r['null_upper']:>7.4f}"
            + ("  the fixed design recommended" if recommended(r) == "fixed" else ""))


def table(files: list[str], short: bool = False) -> None:
    """Print the table of every question in the JSON-lines ``files`` (the last line of a question wins);
    ``short``: one line each (:func:`brief`)."""
    found: dict[str, dict[str, Any]] = {}
    for f in files:
        for x in Path(f).read_text().splitlines():
            if x.strip():
                r = json.loads(x)
                found[r["question"]] = r
    if short:
        print(f"{'question':<62} {'fixed*':>6} {'pow f/m':>9} {'g-seq':>6} {'mon.':>6} {'saving [95% joint]':>18} "
              f"{'type-I':>7}")
    for r in sorted(found.values(), key=lambda r: r["question"]):
        print(brief(r) if short else "\n".join(rows(r)))
    valid = [r for r in found.values() if "cap" in r]
    worst = max((r["null_upper"] for r in valid), default=float("nan"))
    print(f"{len(found)} declared questions, {len(valid)} validated; largest type-I upper bound of the monitor "
          f"{worst:.4f}; {sum(r.get('cpu_s', 0) for r in found.values()) / 60:.0f} min CPU in all")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="validate the declared questions, one JSON line each")
    r.add_argument("--experiment", action="append", help="default: every registered experiment")
    r.add_argument("--question", action="append", help="only the questions whose name contains this text")
    r.add_argument("--groups", type=int, nargs="+", default=[1, 2], choices=[1, 2],
                   help="LLMs per model-effect question (1: one LLM; 2: the difference between two)")
    r.add_argument("--studies", type=int, default=4000, help="simulated studies per hypothesis")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--max-units", type=int, default=120, help="skip a question whose fixed design needs more")
    r.add_argument("--pool-factor", type=int, default=None,
                   help="longest studies per measuring sub-pool (default the plan's, 2): more, a smaller MC error")
    r.add_argument("--out", default="monitor.jsonl")
    t = sub.add_parser("table", help="print the table of JSON-lines files")
    t.add_argument("files", nargs="+")
    t.add_argument("--brief", action="store_true", help="one line per question: E[n] under the effect of each design")
    args = ap.parse_args()
    run(args) if args.command == "run" else table(args.files, args.brief)


if __name__ == "__main__":
    main()

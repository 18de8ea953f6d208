"""Every ``cogtestbed plan`` command README.md and docs/ show, timed (issue 71, item 2).

Each command of a fenced code block (backslash continuations joined) runs as a child process with its
``-o`` replaced by a temporary folder; printed per plan: exit status, wall and CPU seconds (the child's
``resource.getrusage``, or its process tree polled every 0.5 s where that is more: a plan stopped at
``--limit`` has its pool workers' CPU counted too), the seconds its processes waited on a run queue for a
CPU (``/proc/PID/schedstat``: on a loaded machine, what wall holds beyond CPU), the slowest step of its
plan.json (the largest ``seconds`` it records, by path),
its CPU seconds of the main process alone (the serial part) and, from the two, an *estimate* of its wall on 2
idle cores (``main + workers / 2``: :func:`idle_wall`, what a loaded machine can still say), and whether the
plan's own estimate line ("a look of N-M simulations takes X to Y") contains the measured time of every look
(each look's wall from the times the plan's lines were read: :func:`look_seconds`) and of the search's seconds
over the designs it searched.  A plan reading a pilot the docs make (``--pilot runs/pilot``, ``--pilot
pilot.parquet``) reads one made by the docs' own command first (:data:`PILOTS`, not timed); a command whose
other files are not here or that elides its arguments (``…``) is listed as skipped; a plan that exits with
an error prints its last line.

    python benchmarks/bench_plans.py                      # every plan, each stopped at --limit s
    python benchmarks/bench_plans.py --list; python benchmarks/bench_plans.py --pick 1,9,13 --limit 600
    python benchmarks/bench_plans.py --pick 8 --baseline /tmp/base   # old checkout and this one, alternating

``--baseline DIR`` runs each picked plan from another checkout (``git archive REV | tar -x -C DIR``) and from
this one, alternately (``--rounds`` times), printing both CPU figures and their ratio: on a machine shared
with other jobs only a side-by-side CPU comparison means anything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
#: The pilots the documented plans read, each made by the command the docs make it with (the commands appear in
#: docs/plan.md and docs/prompt-forms.md: ``tests/test_bench_plans.py``); made once per run, in a temporary
#: folder, before the plans that read them are timed (their own time is not counted).
PILOTS = {
    "runs/pilot": "cogtestbed run instrumental-learning --llm hf:tiny-random --subjects 3 --seed 1 -o {out}",
    "pilot.parquet": "cogtestbed simulate instrumental-learning -a rw-pm --subjects 80 --forms 8 --form-sd "
                     "alpha_pos=0.15 -o {out}",
}
LOOK = re.compile(r"a look of [\d,]+-[\d,]+ simulations takes (?P<lo>[^ ]+(?: [^ ]+)*?) to (?P<hi>.+?) "
                  r"(?:before|on \d+ workers?)")


def documented_plans() -> list[tuple[str, str]]:
    """(file, command) of every ``cogtestbed plan`` command in a fenced block of README.md and docs/*.md
    (a pipe after it dropped)."""
    out: list[tuple[str, str]] = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        fenced, lines = False, []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif fenced:
                lines.append(line)
            else:
                lines.append("")
        for line in "\n".join(lines).replace("\\\n", " ").splitlines():
            line = line.strip().lstrip("$ ").split(" #")[0].split(" | ")[0]
            command = " ".join(line.split())
            if command.startswith("cogtestbed plan ") and command not in {c for _, c in out}:
                out.append((path.relative_to(ROOT).as_posix(), command))
    return out


def seconds_of(text: str) -> float | None:
    """Seconds of a duration as the planner prints it (``5.7 s``, ``22 min 42 s``, ``1 h 3 min``, ``850 ms``)."""
    units = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d[\d.]*(?:e[+-]?\d+)?)\s*(ms|s|min|h)\b", text)
    return sum(float(v) * units[u] for v, u in parts) if parts else None


def slowest(payload: Any, path: str = "") -> tuple[str, float]:
    """(path, seconds) of the largest ``seconds`` entry of ``payload`` (not under ``study``: the spec
    carries its population's own fit time, which is no step of the plan)."""
    best = ("", -1.0)
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key == "study" and not path:
                continue
            here = f"{path}.{key}" if path else key
            if key == "seconds" and isinstance(value, int | float):
                best = max(best, (path or key, float(value)), key=lambda b: b[1])
            else:
                best = max(best, slowest(value, here), key=lambda b: b[1])
    elif isinstance(payload, list):
        for i, value in enumerate(payload):
            best = max(best, slowest(value, f"{path}[{i}]"), key=lambda b: b[1])
    return best


def watch(pid: int, seen: dict[int, tuple[float, float]]) -> None:
    """Record, for ``pid`` and every descendant, its CPU seconds (user + system, its own) and the seconds it
    has waited on a run queue for a CPU (``/proc/PID/schedstat``'s second field): on a loaded machine the
    waits are what wall time holds beyond CPU time."""
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return
    for proc in procs:
        with contextlib.suppress(psutil.Error, OSError, ValueError, IndexError):
            t = proc.cpu_times()
            queued = int(Path(f"/proc/{proc.pid}/schedstat").read_text().split()[1]) / 1e9
            seen[proc.pid] = (t.user + t.system, queued)


#: A plan's line for a finished look of the search: ``20 subjects, ... : power 0.73 ± 0.045 MC SE [..] (96 sims)``.
LOOK_DONE = re.compile(r": power .*\(\d[\d,]* sims\)\s*$")


def look_seconds(said: list[tuple[float, str]]) -> list[float]:
    """The wall seconds of each look of a plan's search, from the times its lines were read: from the
    estimate line (the first look) or the previous look's line to the line of the look's result.  A
    look's time holds what the search does between looks (pricing the design on the pool, fitting
    the power curve), as a user waits for it."""
    start = next((t for t, line in said if "a look of" in line), None)
    if start is None:
        return []
    out = []
    for t, line in said:
        if t > start and LOOK_DONE.search(line):
            out.append(t - start)
            start = t
    return out


def reused_looks(said: list[tuple[float, str]]) -> list[bool]:
    """For each look of :func:`look_seconds`, whether its design's leading size (``30 subjects, …``) is
    below one looked at before: in a plan of an LLM against people (``--population``, ``--human``) every
    subject of such a look was fitted at the larger size (``power_sims.PowerEvaluator`` hands the fits on),
    so it simulates nothing new and its seconds say nothing about the estimate of a look."""
    seen: list[int] = []
    out = []
    for _, line in said:
        if LOOK_DONE.search(line):
            size = re.match(r"\s*([\d,]+) ", line)
            n = int(size.group(1).replace(",", "")) if size else None
            out.append(n is not None and bool(seen) and n < max(seen))
            if n is not None:
                seen.append(n)
    return out


def idle_wall(cpu: float, main_cpu: float, cores: int = 2) -> float:
    """An estimate, not a measurement: the wall seconds of a plan on ``cores`` idle cores, from what a loaded
    machine still measures honestly (CPU seconds, which waiting on a run queue does not inflate).

    The main process's CPU is the plan's serial part (imports, the timed task of its estimate, the pool's
    first task, pricing, the report); its pool workers' CPU (the rest) runs on ``cores`` at once while the
    main process waits for them.  ``main + workers / cores`` is the wall where the workers keep every core
    busy; a pool whose chunks end unevenly leaves a core idle for a while, so the real idle wall may be
    somewhat longer (never shorter than ``max(main, cpu / cores)``)."""
    workers = max(cpu - main_cpu, 0.0)
    return main_cpu + workers / cores


_PILOT_DIR: list[tempfile.TemporaryDirectory[str]] = []


def made_pilot(name: str, root: Path = ROOT) -> Path:
    """The pilot ``name`` of :data:`PILOTS`, made by its documented command in a temporary folder kept for the
    process (once per checkout ``root``)."""
    if not _PILOT_DIR:
        _PILOT_DIR.append(tempfile.TemporaryDirectory())
    out = Path(_PILOT_DIR[0].name) / str(abs(hash(str(root)))) / name
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        argv = shlex.split(PILOTS[name].format(out=out))[1:]
        subprocess.run([sys.executable, "-m", "cogtestbed", *argv], check=True, cwd=root, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(root)})
    return out


def run(command: str, limit: float, root: Path = ROOT, cpu_limit: float | None = None) -> dict[str, Any]:
    """Run one documented plan from checkout ``root`` (its package first on the path); its figures."""
    argv = shlex.split(command)[1:]
    if "…" in command or "..." in command:
        return {"status": "skipped: arguments elided"}
    if "--pilot" in argv and argv[argv.index("--pilot") + 1] in PILOTS:
        argv[argv.index("--pilot") + 1] = str(made_pilot(argv[argv.index("--pilot") + 1], root))
    for flag in ("--pilot", "--human", "--prices"):
        if flag in argv and not (ROOT / argv[argv.index(flag) + 1]).exists():
            return {"status": f"skipped: {flag} {argv[argv.index(flag) + 1]} not here"}
    with tempfile.TemporaryDirectory() as tmp:
        if "-o" in argv:
            argv[argv.index("-o") + 1] = str(Path(tmp) / "plan")
        elif "--output" in argv:
            argv[argv.index("--output") + 1] = str(Path(tmp) / "plan")
        else:
            argv += ["-o", str(Path(tmp) / "plan")]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        env = {**os.environ, "PYTHONPATH": str(root)}
        child = subprocess.Popen([sys.executable, "-m", "cogtestbed", *argv], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, cwd=root, env=env)
        seen: dict[int, tuple[float, float]] = {}
        said: list[tuple[float, str]] = []  # (seconds since the start, line) of the plan's stderr

        def read() -> None:
            for line in child.stderr or []:
                said.append((time.perf_counter() - t0, line))

        reader = threading.Thread(target=read)
        reader.start()
        spent = 0.0
        while child.poll() is None and time.perf_counter() - t0 < limit and spent < (cpu_limit or float("inf")):
            watch(child.pid, seen)
            spent = sum(cpu for cpu, _ in seen.values())
            time.sleep(0.5)
        status = str(child.returncode) if child.returncode is not None else (
            f"> {cpu_limit:.0f} s CPU" if cpu_limit is not None and spent >= cpu_limit else f"> {limit:.0f} s")
        if child.returncode is None:
            watch(child.pid, seen)
            with contextlib.suppress(psutil.Error):
                for proc in [*psutil.Process(child.pid).children(recursive=True), psutil.Process(child.pid)]:
                    with contextlib.suppress(psutil.Error):
                        proc.kill()
        child.wait()
        reader.join()
        err = "".join(line for _, line in said)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        waited = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        polled = sum(cpu for cpu, _ in seen.values())
        out: dict[str, Any] = {"status": status, "wall": wall, "cpu": max(waited, polled),
                               "queued": sum(q for _, q in seen.values()),
                               "main_queued": seen.get(child.pid, (0.0, 0.0))[1],
                               "main_cpu": seen.get(child.pid, (0.0, 0.0))[0],
                               "processes": len(seen)}
        out["idle_wall"] = idle_wall(out["cpu"], out["main_cpu"])
        out["eta_errors"] = eta_errors(said)
        if status != "0":
            out["last"] = (err.strip().splitlines() or [""])[-1][:800]
        plan_json = Path(tmp) / "plan" / "plan.json"
        payload = json.loads(plan_json.read_text()) if plan_json.exists() else None
    if payload is not None:
        out["slowest"] = slowest(payload)
        chosen, power = payload.get("chosen") or {}, payload.get("power") or {}
        if chosen.get("design"):
            out["answer"] = f"{chosen['design']}, power {power.get('rate')} ({power.get('sims')} sims)"
    look = LOOK.search(" ".join(err.split()))
    if look:
        lo, hi = seconds_of(look["lo"]), seconds_of(look["hi"])
        out["estimate"] = f"{look['lo']} to {look['hi']}"
        looks = look_seconds(said)
        if looks and lo is not None and hi is not None:
            reused = reused_looks(said)[-len(looks):] if ("--population" in argv or "--human" in argv) else \
                [False] * len(looks)
            out["looks"] = [t for t, r in zip(looks, reused, strict=True) if not r]
            out["reused_looks"] = [t for t, r in zip(looks, reused, strict=True) if r]
            out["looks_outside"] = sum(not lo <= t <= hi for t in out["looks"])
        search = (payload or {}).get("search", {})
        designs = len((payload or {}).get("designs") or (payload or {}).get("frontier") or [])
        if isinstance(search, dict) and search.get("seconds") and designs and lo is not None and hi is not None:
            per_look = float(search["seconds"]) / designs
            out["look"] = per_look
            out["inside"] = lo <= per_look <= hi
    return out


def headline_plans() -> list[tuple[str, str]]:
    """(experiment: question, command) of every headline question the experiments declare
    (``ExperimentSpec.headline_questions``), each on 2 workers."""
    from cogtestbed.registry import experiment_names, get_experiment

    out = []
    for name in experiment_names():
        for q in get_experiment(name).headline_questions:
            out.append((f"{name}: {q.name}", shlex.join(["cogtestbed", "plan", name, *q.plan_args, "--workers", "2"])))
    return out


HEARTBEAT = re.compile(r"^(?P<phase>[^:]+: [^:]+): (?P<done>[\d,]+)/(?P<total>[\d,]+).*ETA (?P<eta>[^,]+)$")


def eta_errors(said: list[tuple[float, str]]) -> list[float]:
    """The ratio (≥ 1, either way) of each heartbeat ETA printed after the first design's result to the time
    its phase actually took to end (its next line that is not the phase's own heartbeat)."""
    out, first_done = [], False
    for i, (t, line) in enumerate(said):
        if not first_done:
            first_done = " sims)" in line
            continue
        m = HEARTBEAT.match(line.strip())
        eta = seconds_of(m["eta"]) if m else None
        if m is None or eta is None:
            continue
        end = next((t2 for t2, later in said[i + 1:] if not later.strip().startswith(m["phase"] + ":")), None)
        if end is not None:
            real = end - t
            out.append(max(eta, 1.0) / max(real, 1.0) if eta >= real else max(real, 1.0) / max(eta, 1.0))
    return out


def eta_words(errors: list[float]) -> str:
    """``median 1.6x, 82% within 2x, at most 23.0x (17 ETAs)`` of :func:`eta_errors`."""
    median = statistics.median(errors)
    within = sum(e <= 2 for e in errors) / len(errors)
    return f"median {median:.1f}x, {within:.0%} within 2x, at most {max(errors):.1f}x ({len(errors)} ETAs)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=300.0, help="seconds before a plan is stopped")
    ap.add_argument("--only", default=None, help="run only commands containing this text")
    ap.add_argument("--pick", default=None, help="run only these numbers of --list (e.g. 1,9,13)")
    ap.add_argument("--list", action="store_true", help="list the commands and stop")
    ap.add_argument("--baseline", type=Path, default=None, help="another checkout: run it and this one alternately")
    ap.add_argument("--rounds", type=int, default=1, help="with --baseline: old/new pairs per plan")
    ap.add_argument("--cpu-limit", type=float, default=None,
                    help="CPU seconds (process tree) before a plan is stopped: on a loaded machine, not wall")
    ap.add_argument("--headline", action="store_true",
                    help="the experiments' declared headline questions (paper design, two LLMs) instead of the docs'")
    ap.add_argument("--bound", action="store_true",
                    help="only each plan's --max-seconds bound: the plan run with --max-seconds 1, its refusal read")
    args = ap.parse_args()
    plans = [(f, c) for f, c in (headline_plans() if args.headline else documented_plans())
             if args.only is None or args.only in c]
    print(f"{len(plans)} {'headline' if args.headline else 'documented'} plan commands")
    # --pick's order is the order they run in (the quick ones first on a loaded machine)
    order = range(1, len(plans) + 1) if args.pick is None else [int(k) for k in args.pick.split(",")]
    for i in order:
        where, command = plans[i - 1]
        if args.list:
            print(f"{i:2d} {where}: {command}")
            continue
        if args.baseline is not None:
            compare(i, command, args.limit, args.baseline, args.rounds, args.cpu_limit)
            continue
        if args.bound:
            print(f"{i:2d} {bound_words(run(command + ' --max-seconds 1', args.limit, cpu_limit=args.cpu_limit))} | "
                  f"{where}: {command}", flush=True)
            continue
        r = run(command, args.limit, cpu_limit=args.cpu_limit)
        wall = "" if "wall" not in r else (
            f"{r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU ({r['main_cpu']:.1f} s of it the main process's), "
            f"≈ {r['idle_wall']:.0f} s idle wall (estimate: main + workers / 2), {r['queued']:.1f} s waiting for "
            f"a CPU ({r['main_queued']:.1f} s of it the main process's; {r['processes']} processes)")
        slow = f"; slowest step {r['slowest'][0]} {r['slowest'][1]:.1f} s" if r.get("slowest", ("", -1))[1] >= 0 \
            else ""
        est = look_words(r)
        over = " (over 120 s)" if r.get("wall", 0) > 120 else ""
        last = f"; said: {r['last']}" if r.get("last") else ""
        if r.get("eta_errors"):
            last += f"; ETA error after the first design: {eta_words(r['eta_errors'])}"
        if r.get("answer"):
            last += f"; answer: {r['answer']}"
        print(f"{i:2d} [{r['status']}] {wall}{over}{slow}{est}{last} | {where}: {command}", flush=True)


BOUND = re.compile(r"this plan's search may take up to (?P<bound>.+?) if it settles at the top of the range "
                   r"\((?P<studies>[\d,]+) simulated studies on (?P<workers>\d+) workers?; one takes (?P<one>.+?) at")


def bound_of(line: str) -> tuple[float, int, float] | None:
    """(bound seconds, simulated studies, seconds of the one timed study) of a ``--max-seconds`` refusal line."""
    m = BOUND.search(line)
    if m is None:
        return None
    bound, one = seconds_of(m["bound"]), seconds_of(m["one"])
    if bound is None or one is None:
        return None
    return bound, int(m["studies"].replace(",", "")), one


def bound_words(r: dict[str, Any]) -> str:
    """``bound 1 min 40 s (100.0 s; 432 studies; one 0.41 s), the probe 12.3 s CPU, load 3.1`` of a plan
    run with ``--max-seconds 1`` (what it said instead where it was not refused)."""
    found = bound_of(r.get("last", ""))
    load = os.getloadavg()[0]
    if found is None:
        return f"[{r['status']}] no bound read (load {load:.1f}): {r.get('last', '')}"
    bound, studies, one = found
    return (f"bound {bound:.1f} s ({studies:,} studies; one {one:.2f} s), the probe {r['cpu']:.1f} s CPU "
            f"{r['wall']:.1f} s wall, load {load:.1f}")


def look_words(r: dict[str, Any]) -> str:
    """``; estimate X to Y, looks 3.1-40.2 s (7, all inside), mean look 12.0 s: inside`` ('' without an estimate)."""
    if "estimate" not in r:
        return ""
    out = f"; estimate of a look {r['estimate']}"
    if r.get("looks"):
        looks, outside = r["looks"], r["looks_outside"]
        out += (f", measured looks {min(looks):.1f}-{max(looks):.1f} s ({len(looks)}, "
                f"{'all inside' if not outside else f'{outside} OUTSIDE'})")
    if r.get("reused_looks"):
        out += (f", {len(r['reused_looks'])} look(s) below a size already fitted (nothing new fitted: "
                f"{', '.join(f'{t:.1f} s' for t in r['reused_looks'])})")
    if "look" in r:
        out += f", search seconds per design {r['look']:.1f} s: {'inside' if r['inside'] else 'OUTSIDE'}"
    return out


def compare(i: int, command: str, limit: float, baseline: Path, rounds: int, cpu_limit: float | None) -> None:
    """Plan ``i`` from ``baseline`` and from this checkout, alternately: CPU (process tree), wall, the load."""
    for k in range(rounds):
        pair = []
        for label, root in (("new", ROOT), ("old", baseline)):
            load = os.getloadavg()[0]
            r = run(command, limit, root, cpu_limit)
            pair.append(r)
            est = look_words(r)
            print(f"{i:2d} round {k + 1} {label} [{r['status']}] {r['cpu']:.1f} s CPU ({r['main_cpu']:.1f} s main), "
                  f"≈ {r['idle_wall']:.0f} s idle wall (estimate), {r['wall']:.1f} s wall, load "
                  f"{load:.1f} at its start{est}{'; said: ' + r['last'] if r.get('last') else ''}", flush=True)
        stopped = "" if pair[1]["status"] == "0" else " (old stopped: its CPU is a lower bound)"
        print(f"{i:2d} round {k + 1}: new/old CPU {pair[0]['cpu'] / max(pair[1]['cpu'], 1e-9):.2f}{stopped}",
              flush=True)


if __name__ == "__main__":
    main()

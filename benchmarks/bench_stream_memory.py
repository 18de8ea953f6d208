"""Peak memory of simulating and recovering many RW subjects, streamed in chunks (issue 71, item 5).

Two child processes, each measured by its own peak resident memory (``resource.getrusage``):
(1) ``ct.simulate_file`` writes ``--subjects`` instrumental-learning RW subjects (96 trials each,
per-subject α and β drawn from ``--seed``) to Parquet, a chunk of subjects at a time; (2) the table is
read back a row group at a time and the first ``--recover`` subjects (default: all) are fitted by
per-subject MLE, chunk by chunk, their estimates kept (two floats a subject) and correlated with the
truth.  Target: each peak < 1 GB at any subject count, time linear in subjects.

    python benchmarks/bench_stream_memory.py --subjects 1000000            # the issue's figure (1.7 CPU-hours of fits)
    python benchmarks/bench_stream_memory.py --subjects 1000000 --record stream-memory-million  # into a results file
    python benchmarks/bench_stream_memory.py --subjects 100000 --recover 5000
    python benchmarks/bench_stream_memory.py --study 1000 10000           # ct.recover's peak, flat in subjects

Each step's peak is its own process's (``ru_maxrss``); the recovery keeps two floats a subject and one chunk
of table (a Parquet row group, or ``--batch-rows`` rows), so its memory is flat in the subject count:
``tests/test_stream_memory.py`` (slow) holds that at 1,000 against 6,000 subjects; the fast checks of the
streamed simulation are in ``tests/test_simulate_chunks.py``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIMULATE = """
import sys, resource, numpy as np, cogtestbed as ct
from cogtestbed.api.core import simulate_file
n, seed, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(seed)
params = {"alpha": rng.uniform(0.05, 0.95, n), "beta": rng.uniform(0.5, 8.0, n)}
rows = simulate_file("instrumental-learning", "rw", subjects=n, seed=seed, params=params, output=out)
print(rows, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
"""

STUDY = """
import sys, json, resource, time, numpy as np, cogtestbed as ct
n, seed = int(sys.argv[1]), int(sys.argv[2])
t0 = time.process_time()
study = ct.recover("instrumental-learning", "rw", subjects=n, reps=1, seed=seed, workers=1)
rows = study.table
pick = {p: rows[rows["parameter"] == p][["true", "estimate"]] for p in ("alpha", "beta")}
with np.errstate(divide="ignore"):  # scored on the log scale, as the study's summary does; 0 is left out
    pick["beta"] = np.log(pick["beta"]).replace([-np.inf, np.inf], np.nan)
r = {p: float(t.corr().iloc[0, 1]) for p, t in pick.items()}
print(json.dumps({"fitted": int(rows["subject"].nunique()), "rows": len(rows), "r_alpha": r["alpha"],
                  "r_beta": r["beta"], "beta_scored": int(pick["beta"].notna().all(axis=1).sum()),
                  "cpu": time.process_time() - t0,
                  "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""

RECOVER = """
import sys, json, resource, time, numpy as np, pandas as pd, pyarrow.parquet as pq, cogtestbed as ct
path, limit, batch_rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
truth, est = [], []  # two floats a subject each: 32 MB at 10**6
t0, done = time.process_time(), 0

def fit(table):
    global done
    table = table[table["subject"] < limit]
    if len(table):
        got = ct.fit("instrumental-learning", table, "rw", unit="subject")
        true = table.groupby("subject")[["param_alpha", "param_beta"]].first().loc[got["subject"]]
        truth.append(true.to_numpy()); est.append(got[["alpha", "beta"]].to_numpy())
        if len(est) % 20 == 0 or done == 0:
            print(f"{sum(map(len, est)):,} fitted, CPU {time.process_time() - t0:.0f} s, peak RSS "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.3f} GiB", file=sys.stderr, flush=True)
        done += 1

file, left = pq.ParquetFile(path), None
batches = file.iter_batches(batch_size=batch_rows) if batch_rows else \
    (file.read_row_group(i) for i in range(file.num_row_groups))
for batch in batches:
    part = batch.to_pandas()
    part = part if left is None else pd.concat([left, part], ignore_index=True)
    last = part["subject"].iloc[-1]  # a subject may go on in the next chunk
    left = part[part["subject"] == last]
    fit(part[part["subject"] != last])
    if last >= limit:
        left = None
        break
if left is not None:
    fit(left)
t, e = np.concatenate(truth), np.concatenate(est)
ok = np.isfinite(e).all(axis=1)
with np.errstate(divide="ignore", invalid="ignore"):
    log_e = np.log(e[:, 1])
on_log = ok & np.isfinite(log_e)  # an estimate of 0 is -inf on the log scale: left out of r(log beta), counted
print(json.dumps({"fitted": len(e), "r_alpha": float(np.corrcoef(t[ok, 0], e[ok, 0])[0, 1]),
                  "r_beta": float(np.corrcoef(np.log(t[on_log, 1]), log_e[on_log])[0, 1]),
                  "beta_scored": int(on_log.sum()),
                  "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""


def child(code: str, *args: str) -> tuple[str, float, float, float]:
    """(last line of stdout, wall s, CPU s, peak resident GiB of every child so far) of ``python -c code
    args``; each step prints its own peak."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, stdout=subprocess.PIPE, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return out.strip().splitlines()[-1], time.perf_counter() - t0, cpu, after.ru_maxrss / 2**20


def run(subjects: int, recover: int | None = None, seed: int = 71, batch_rows: int = 0,
        report: bool = True, lines: list[str] | None = None) -> dict[str, float]:
    """Simulate ``subjects`` RW subjects to Parquet and recover the first ``recover`` (default all), each
    step in its own process; returns each step's wall, CPU and peak RSS (GiB, the process's own) and the
    recovery's correlations.  ``batch_rows``: the recovery reads that many rows at a time (0: a Parquet row
    group at a time, about 48 MiB of table); ``lines`` collects what it prints."""
    lines = [] if lines is None else lines

    def say(line: str) -> None:
        lines.append(line)
        if report:
            print(line, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "trials.parquet")
        out, wall, cpu, _ = child(SIMULATE, str(subjects), str(seed), path)
        rows, peak = int(out.split()[0]), float(out.split()[1])
        say(f"simulate {subjects:,} subjects ({rows:,} trials): wall {wall:.1f} s, CPU {cpu:.1f} s, "
            f"peak RSS {peak:.2f} GiB")
        limit = subjects if recover is None else recover
        result, wall2, cpu2, _ = child(RECOVER, path, str(limit), str(batch_rows))
    r = json.loads(result)
    how = f"{batch_rows:,} rows at a time" if batch_rows else "by row group"
    say(f"recover {r['fitted']:,} subjects (per-subject MLE, streamed {how}): "
        f"wall {wall2:.1f} s, CPU {cpu2:.1f} s ({1000 * cpu2 / max(1, r['fitted']):.1f} ms a subject), "
        f"peak RSS {r['peak_gib']:.2f} GiB; r(alpha) {r['r_alpha']:.3f}, r(log beta) {r['r_beta']:.3f} "
        f"(over the {r['beta_scored']:,} beta estimates above 0)")
    say(f"peak < 1 GB: {max(peak, r['peak_gib']) * 2**30 < 1e9}")
    return {"simulate_wall": wall, "simulate_cpu": cpu, "simulate_peak_gib": peak, "recover_wall": wall2,
            "recover_cpu": cpu2, "recover_peak_gib": r["peak_gib"], "fitted": r["fitted"],
            "r_alpha": r["r_alpha"], "r_beta": r["r_beta"]}


def run_study(subjects: int, seed: int = 71) -> dict[str, float]:
    """``ct.recover`` of ``subjects`` RW subjects (one data set, per-subject MLE with likelihood-ratio
    intervals), in its own process: the study simulates and fits a chunk of subjects at a time, so its peak
    is a chunk's trials and the study's rows (issue 71 item 5)."""
    out, wall, cpu, _ = child(STUDY, str(subjects), str(seed))
    r = json.loads(out)
    print(f"ct.recover {r['fitted']:,} subjects ({r['rows']:,} rows; per-subject MLE with LR intervals): wall "
          f"{wall:.1f} s, CPU {cpu:.1f} s ({1000 * cpu / max(1, r['fitted']):.1f} ms a subject), peak RSS "
          f"{r['peak_gib']:.2f} GiB; r(alpha) {r['r_alpha']:.3f}, r(log beta) {r['r_beta']:.3f} (over the "
          f"{r['beta_scored']:,} beta estimates above 0)", flush=True)
    return {"wall": wall, "cpu": cpu, "peak_gib": r["peak_gib"], "fitted": r["fitted"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=1_000_000)
    ap.add_argument("--recover", type=int, default=None, help="fit only the first N subjects (default: all)")
    ap.add_argument("--seed", type=int, default=71)
    ap.add_argument("--batch-rows", type=int, default=0, help="rows the recovery reads at a time (0: a row group)")
    ap.add_argument("--study", type=int, nargs="*", default=None, metavar="N",
                    help="instead: `ct.recover` of N RW subjects in its own process, for each N given")
    ap.add_argument("--record", metavar="NAME", default=None,
                    help="also write what it prints to benchmarks/studies/results/NAME.json")
    args = ap.parse_args()
    if args.study:
        for n in args.study:
            run_study(n, args.seed)
        return
    lines: list[str] = []
    run(args.subjects, args.recover, args.seed, args.batch_rows, lines=lines)
    if args.record:
        record(args.record, " ".join(["python benchmarks/bench_stream_memory.py", *sys.argv[1:]]), lines)


def record(name: str, command: str, lines: list[str]) -> None:
    """Write the printed ``lines`` of ``command`` to the results file ``NAME`` (``benchmarks/studies/recorded.py``),
    with the machine's load average at the end of the run (the wall times depend on it)."""
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parent / "studies"))
    import recorded

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    recorded.write(name, command, [], output=lines,
                   notes=f"Load average at the end of the run (1, 5, 15 min): {load}, on 2 cores.")


if __name__ == "__main__":
    main()

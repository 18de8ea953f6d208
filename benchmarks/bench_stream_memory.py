"""Peak memory of simulating and recovering many RW subjects, streamed in chunks (issue 71, item 5).

Two child processes, each measured by its own peak resident memory (``resource.getrusage`` of the
children, after each): (1) ``ct.simulate_file`` writes ``--subjects`` instrumental-learning RW subjects
(96 trials each, per-subject α and β drawn from ``--seed``) to Parquet, a chunk of subjects at a time;
(2) the table is read back a row group at a time and the first ``--recover`` subjects (default: all) are
fitted by per-subject MLE, chunk by chunk, their estimates kept (two floats a subject) and correlated
with the truth.  Target: each peak < 1 GB at any subject count, time linear in subjects.

    python benchmarks/bench_stream_memory.py --subjects 1000000            # the issue's figure (hours of MLE)
    python benchmarks/bench_stream_memory.py --subjects 100000 --recover 5000

Not part of the test suite (slow); ``tests/test_simulate_chunks.py`` holds the fast checks.
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
import sys, numpy as np, cogtestbed as ct
from cogtestbed.api.core import simulate_file
n, seed, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(seed)
params = {"alpha": rng.uniform(0.05, 0.95, n), "beta": rng.uniform(0.5, 8.0, n)}
print(simulate_file("instrumental-learning", "rw", subjects=n, seed=seed, params=params, output=out))
"""

RECOVER = """
import sys, json, numpy as np, pandas as pd, pyarrow.parquet as pq, cogtestbed as ct
path, limit = sys.argv[1], int(sys.argv[2])
truth, est = [], []

def fit(table):
    table = table[table["subject"] < limit]
    if len(table):
        got = ct.fit("instrumental-learning", table, "rw", unit="subject")
        true = table.groupby("subject")[["param_alpha", "param_beta"]].first().loc[got["subject"]]
        truth.append(true.to_numpy()); est.append(got[["alpha", "beta"]].to_numpy())

file, left = pq.ParquetFile(path), None
for i in range(file.num_row_groups):
    part = file.read_row_group(i).to_pandas()
    part = part if left is None else pd.concat([left, part], ignore_index=True)
    last = part["subject"].iloc[-1]  # a subject may go on in the next row group
    left = part[part["subject"] == last]
    fit(part[part["subject"] != last])
    if last >= limit:
        left = None
        break
if left is not None:
    fit(left)
t, e = np.concatenate(truth), np.concatenate(est)
ok = np.isfinite(e).all(axis=1)
print(json.dumps({"fitted": len(e), "r_alpha": float(np.corrcoef(t[ok, 0], e[ok, 0])[0, 1]),
                  "r_beta": float(np.corrcoef(np.log(t[ok, 1]), np.log(e[ok, 1]))[0, 1])}))
"""


def child(code: str, *args: str) -> tuple[str, float, float, float]:
    """(stdout, wall s, CPU s, peak resident GiB) of ``python -c code args`` (the peak of every child so
    far: run the smaller step first)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return out.strip().splitlines()[-1], time.perf_counter() - t0, cpu, after.ru_maxrss / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=1_000_000)
    ap.add_argument("--recover", type=int, default=None, help="fit only the first N subjects (default: all)")
    ap.add_argument("--seed", type=int, default=71)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "trials.parquet")
        rows, wall, cpu, peak = child(SIMULATE, str(args.subjects), str(args.seed), path)
        print(f"simulate {args.subjects:,} subjects ({int(rows):,} trials): wall {wall:.1f} s, CPU {cpu:.1f} s, "
              f"peak RSS {peak:.2f} GiB")
        limit = args.subjects if args.recover is None else args.recover
        result, wall, cpu, peak2 = child(RECOVER, path, str(limit))
        r = json.loads(result)
        print(f"recover {r['fitted']:,} subjects (per-subject MLE, streamed by row group): wall {wall:.1f} s, "
              f"CPU {cpu:.1f} s ({1000 * cpu / max(1, r['fitted']):.1f} ms a subject), peak RSS {peak2:.2f} GiB "
              f"(largest child so far); r(alpha) {r['r_alpha']:.3f}, r(log beta) {r['r_beta']:.3f}")
        print("peak < 1 GB:", max(peak, peak2) * 2**30 < 1e9)


if __name__ == "__main__":
    main()

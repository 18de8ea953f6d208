"""Two-step metrics against CogBench's own scoring, on the same CogBench file (CPU time, best of N).

CogBench scores the task (``Experiments/TwoStepTask/store.py``, as its paper and code describe) by
reading the CSV, building each run's stay / reward / common arrays in a loop over runs and fitting
one pooled ``statsmodels`` OLS ``stay ~ 1 + reward + common + reward:common`` (±1 coding).  This
prints that reference's time, the time of :func:`cogtestbed.inference.twostep.cogbench_metrics` on
the imported table, and of import + metrics, with the ratio (target: ours no slower), and checks
that both give the same model-basedness.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _timing import best_cpu_of  # noqa: E402

from cogtestbed.registry import get_experiment  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "cogbench" / "TwoStepTask"
FILES = ("gpt-4.csv", "human.csv", "random.csv")
REPEATS = 10


def cogbench_score(path: Path) -> float:
    """CogBench's pooled stay regression (reconstructed): loop over runs, one statsmodels OLS."""
    import statsmodels.api as sm

    df = pd.read_csv(path)
    stays, rewards, commons = [], [], []
    for run in df["run"].unique():
        d = df[df["run"] == run]
        a1, state, reward = d["action1"].to_numpy(), d["state"].to_numpy(), d["reward"].to_numpy()
        stays.append((a1[1:] == a1[:-1]).astype(float))
        rewards.append(np.where(reward[:-1] == 0, -1.0, reward[:-1]))
        commons.append(np.where(a1[:-1] == state[:-1], 1.0, -1.0))
    stay, reward, common = (np.concatenate(x) for x in (stays, rewards, commons))
    x = sm.add_constant(np.column_stack([reward, common, reward * common]))
    return float(sm.OLS(stay, x).fit().params[3])


def main() -> None:
    spec = get_experiment("two-step")
    importer = spec.importer("cogbench")
    print(f"{'file':14s} {'CogBench ms':>12s} {'metrics ms':>11s} {'import+metrics ms':>18s} {'ratio':>6s}  "
          "model-basedness (ours / CogBench)")
    for name in FILES:
        path = (DATA / name).resolve()
        if not path.exists():
            print(f"{name:14s} (missing: {path})")
            continue
        table = importer.load(path)
        ref_s = best_cpu_of(lambda p=path: cogbench_score(p), REPEATS)
        metrics_s = best_cpu_of(lambda t=table: spec.metrics(t), REPEATS)
        whole_s = best_cpu_of(lambda p=path: spec.metrics(importer.load(p)), REPEATS)
        ours = spec.metrics(table)["metrics"]["model_basedness"]
        ratio = whole_s / ref_s
        print(f"{name:14s} {ref_s * 1e3:12.1f} {metrics_s * 1e3:11.1f} {whole_s * 1e3:18.1f} {ratio:6.2f}  "
              f"{ours:.6f} / {cogbench_score(path):.6f} [{'OK' if ratio <= 1.0 else 'SLOWER'}]")


if __name__ == "__main__":
    main()

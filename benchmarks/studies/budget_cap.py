"""Spend vs ``--max-cost`` of `cogtestbed run` against the local server: 20 seeded runs, never above.

Each run plays ``instrumental-learning`` (8 trials per subject) with the tiny local model behind the
project's OpenAI-compatible server (:mod:`cogtestbed.llm_adapters.servers.server`), priced at $1000 per
million tokens (a token costs $0.001, so a subject costs dollars and the caps bind).  The seed
draws the cap (uniform on $2–$14), the number of subjects (3–8) and the concurrency (1, 4 or 16,
so often above the number of subjects), and seeds the server's random 503 faults (10 % of requests)
that the client rides out with logged retries.  Every run starts from an empty cache, so every
call is paid.

Printed per run: cap, the run directory's total spend, the subjects the budget admitted and
finished, the new calls, and the calls paid for subjects that did not finish (must be 0); then the
largest spend/cap ratio.  The script exits non-zero if any run spent more than its cap.

    python benchmarks/studies/budget_cap.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from cogtestbed.api.run import LLMRun, execute_run
from cogtestbed.llm_adapters.clients.hf import HFClient
from cogtestbed.llm_adapters.servers.server import Fault, FaultInjector, serve

PRICES = '["openai:tiny-random"]\ninput = 1000\noutput = 1000\n'
#: Share of the server's requests answered 503 (seeded per run).
FAULT_RATE = 0.10
STEPS = 8  # visits_per_casino=2 → 8 trials per subject


def one_run(seed: int, url: str, work: Path, faults: FaultInjector) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    cap = float(np.round(rng.uniform(2.0, 14.0), 2))
    subjects = int(rng.integers(3, 9))
    concurrency = int(rng.choice([1, 4, 16]))
    faults.rng = np.random.default_rng([seed, 503])
    prices = work / "prices.toml"
    prices.write_text(PRICES)
    run_dir = work / f"run{seed}"
    request = LLMRun(
        experiment="instrumental-learning", llm="openai:tiny-random", output=run_dir, subjects=subjects,
        seed=seed, base_url=url, mode="completions", design=["visits_per_casino=2"],
        cache=work / f"cache{seed}.sqlite", concurrency=concurrency, max_cost=cap, prices=prices)
    result = execute_run(request)
    stats = json.loads((run_dir / "run.json").read_text())["stats"]
    calls = pd.read_parquet(run_dir / "calls.parquet")
    unfinished = ~calls["subject"].isin(np.flatnonzero(result.complete))
    return {"seed": seed, "cap_usd": cap, "spent_usd": stats["total_cost_usd"], "subjects": subjects,
            "concurrency": concurrency, "complete": stats["subjects_complete"], "new_calls": stats["new_calls"],
            "retries": stats["retries"], "paid_unfinished": int((~calls["cached"] & unfinished).sum()),
            "status": result.status}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    logging.getLogger("cogtestbed.llm_adapters").setLevel(logging.ERROR)  # retries: counted, not printed
    faults = FaultInjector(FAULT_RATE, Fault("status", 503, retry_after=0.0))
    rows = []
    with tempfile.TemporaryDirectory() as tmp, serve({"tiny-random": HFClient.tiny_random()}, faults) as url:
        for seed in range(args.runs):
            rows.append(one_run(seed, url, Path(tmp), faults))
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    table = pd.DataFrame(rows)
    table["spent/cap"] = table["spent_usd"] / table["cap_usd"]
    print(table.to_string(index=False))
    over = table[table["spent_usd"] > table["cap_usd"]]
    print(f"\n{len(table)} runs: max spent/cap = {table['spent/cap'].max():.3f}, runs over the cap: {len(over)}, "
          f"calls paid for unfinished subjects: {int(table['paid_unfinished'].sum())}, "
          f"retries ridden out: {int(table['retries'].sum())}")
    if len(over) or table["paid_unfinished"].sum():
        sys.exit(1)


if __name__ == "__main__":
    main()

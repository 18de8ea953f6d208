"""Hashes of horizon trial tables, to check that a faster simulate path leaves every table unchanged.

For every horizon agent, with and without lapses, at 12 games (seed 11), at sizes on either side of
the compiled paths' thresholds and at the benchmark's size, prints one SHA-256 per table (column
names, dtypes and every column's values, missing cells included) and of the sessions drawn alone
(every array, and the generator's state afterwards).  With ``--all``, also the tables of two agents
(with lapses for the second) of every registered experiment at 7 and 150 subjects, and of horizon
and instrumental learning at about 400 000 trials (:data:`LARGE_TRIALS`).  ``--save FILE`` writes
them as JSON; ``--against FILE`` compares with a saved run (the labels both hold) and exits 1 on any
difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.agents.lapse import Lapse
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import seed_streams, simulate

#: (games, seed) pairs: the small table, sizes around the compiled passes' thresholds, the benchmark's size.
CASES = ((12, 11), (1, 3), (999, 5), (13_334, 7), (53_333, 0))
LAPSES = (None, Lapse(invalid=0.1, random=0.15))
#: Subjects of the every-experiment tables (``--all``), and trials of the large ones.
ALL_SUBJECTS = (7, 150)
LARGE_TRIALS = 400_000
LARGE_EXPERIMENTS = ("horizon", "instrumental-learning")


def table_hash(table: pd.DataFrame) -> str:
    """SHA-256 of a table's column names, dtypes and values (missing cells marked)."""
    h = hashlib.sha256()
    for name in table.columns:
        column = table[name]
        h.update(f"{name}:{column.dtype}".encode())
        try:
            h.update(pd.util.hash_pandas_object(column, index=False).to_numpy().tobytes())
        except TypeError:  # cells pandas cannot hash (list columns): their text
            h.update(repr(column.tolist()).encode())
        h.update(column.isna().to_numpy().tobytes())
        if column.dtype.kind in "iufb":
            h.update(np.ascontiguousarray(column.to_numpy()).tobytes())
    return h.hexdigest()


def sessions_hash(n: int, seed: int) -> str:
    """SHA-256 of the horizon sessions of ``n`` games and the environment stream's state after them."""
    spec = get_experiment("horizon")
    rng = seed_streams(seed)[0]
    sessions = spec.env_cls.sample_sessions(spec.env_cls.design_cls(), n, rng)
    h = hashlib.sha256()
    for name in ("horizon", "unequal", "means", "rewards", "forced"):
        array = np.ascontiguousarray(getattr(sessions, name))
        h.update(f"{name}:{array.dtype}:{array.shape}".encode())
        h.update(array.tobytes())
    h.update(json.dumps(rng.bit_generator.state, sort_keys=True).encode())
    return h.hexdigest()


def all_hashes() -> dict[str, str]:
    """Every hash this script checks, by label."""
    spec = get_experiment("horizon")
    out: dict[str, str] = {}
    for n, seed in CASES:
        out[f"sessions n={n} seed={seed}"] = sessions_hash(n, seed)
        for agent in sorted(spec.agents):
            for lapse in LAPSES:
                label = f"{agent} n={n} seed={seed} lapse={lapse}"
                out[label] = table_hash(simulate(spec, agent, n, seed, lapse=lapse))
                if n <= 12:
                    out[label + " step"] = table_hash(simulate(spec, agent, n, seed, lapse=lapse, method="step"))
    return out


def every_experiment_hashes() -> dict[str, str]:
    """Hashes of two agents' tables (the second with lapses) of every experiment at :data:`ALL_SUBJECTS`,
    and at about :data:`LARGE_TRIALS` trials for :data:`LARGE_EXPERIMENTS`."""
    from cogtestbed.registry import experiment_names

    out: dict[str, str] = {}
    for name in experiment_names():
        spec = get_experiment(name)
        agents = sorted(spec.agents)[:2]
        sizes = list(ALL_SUBJECTS)
        if name in LARGE_EXPERIMENTS:
            sizes.append(max(10, LARGE_TRIALS // len(simulate(spec, agents[0], 1, 0))))
        for n in sizes:
            for k, agent in enumerate(agents):
                lapse = LAPSES[k % 2]
                out[f"{name} {agent} n={n} seed={n} lapse={lapse}"] = table_hash(
                    simulate(spec, agent, n, n, lapse=lapse))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", help="write the hashes to this JSON file")
    parser.add_argument("--against", help="compare with the hashes saved in this JSON file")
    parser.add_argument("--all", action="store_true", help="also every experiment's tables (two agents each)")
    args = parser.parse_args()
    hashes = all_hashes()
    if args.all:
        hashes.update(every_experiment_hashes())
    for label, digest in hashes.items():
        print(f"{digest[:16]}  {label}")
    if args.save:
        with open(args.save, "w") as f:
            json.dump(hashes, f, indent=1)
    if args.against:
        with open(args.against) as f:
            saved: dict[str, Any] = json.load(f)
        differ = [k for k in saved if hashes.get(k) != saved[k]]
        print(f"{len(saved) - len(differ)}/{len(saved)} identical" + (f"; DIFFER: {differ}" if differ else ""))
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()

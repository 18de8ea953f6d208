"""Fingerprints of every simulated trial table and of the sessions every environment draws: the guard
that a change to the simulate path (its draws, its table building) leaves every value unchanged.

A developer script, run on one machine before and after a change (it compares exact bytes, so it
is not a test: a table's floats may differ in the last bit between machines).  It fingerprints

* the table of **every registered experiment × every agent it registers**, without and with a
  lapse (rates scaled so that a session lapses on about 40 steps), at two seeds and a small size,
  and the step path's table (``method="step"``) of its first two agents where sessions are short;
* the **large tables** (at least :data:`LARGE_TRIALS` trials) of every experiment's first and last
  agent (the last with a lapse where its kernel plays lapses), which took the
  compiled passes that numpy-sized draws and table columns once switched to above a size
  threshold, and horizon's tables at the sizes around those thresholds (:data:`HORIZON_CASES`);
* for every experiment, the **sessions** ``sample_sessions`` draws (every array) and the environment
  stream's generator state afterwards, so an LLM run with a seed meets the same sessions as before;
* the small tables once more after the large ones (``… after-large``): a pass chosen by what the
  process had already loaded must not change a value.

A fingerprint is a SHA-256 of a table's column names, dtypes, missing cells and values (numeric
columns byte for byte).  ``--save FILE`` writes them as JSON; ``--against FILE`` compares with a
saved run and exits 1 on any difference, naming each label that differs.  Run it as
``python benchmarks/table_fingerprints.py --against benchmarks/fingerprints_lock.json``: the
fingerprints under the locked versions (``locks/test.txt``, issue 37), the reference for a change of
code or of the lock.  ``benchmarks/fingerprints_a1c057e.json`` holds those of main at commit a1c057e
(older, unlocked versions; list columns hashed by their text then): under the lock its 374 tables
without list columns are identical, and the 25 revealed-belief tables with list columns are hashed
differently now.  The six ``magnitude observer`` small tables were re-fingerprinted after issue 41
(commit 4df560c) wrote the observer's precision weights in variances, so that a zero noise or
``prior_sd = 0`` is simulated as its limit instead of dividing by zero: the same formula in exact
arithmetic; against the code before it, 4,122 of 71,942 answers of those tables differ, by at most
2 ulps (relative 4.3e-16), and no other table changed.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.lapse import Lapse
from cogtestbed.registry import Experiment, experiment_names, get_experiment
from cogtestbed.simulation import seed_streams, simulate

#: Seeds of the small tables.
SEEDS = (1, 2)
#: Rows of a small table (at least two subjects, fewer than this many trials where sessions are short).
SMALL_TRIALS = 4_000
#: Steps a session lapses on, about (the lapse rates are scaled to it; at most 10 % invalid, 15 % random).
LAPSED_STEPS = 40
#: Trials of a large table; restless-bandit needs more to draw a million normals.
LARGE_TRIALS = 400_000
LARGE_OVERRIDE = {"restless-bandit": 520_000}
#: Sessions longer than this skip the step path (it plays every step in Python).
STEP_MAX_TRIALS = 1_000
#: (games, seed) of horizon's tables around the old compiled thresholds and at the benchmark's size.
HORIZON_CASES = ((1, 3), (999, 5), (13_334, 7), (53_333, 0))


def _update_array(h: Any, name: str, array: np.ndarray) -> None:
    h.update(f"{name}:{array.dtype}:{array.shape}".encode())
    if array.dtype.kind == "O":
        h.update(repr(array.tolist()).encode())
    else:
        h.update(np.ascontiguousarray(array).tobytes())


def table_hash(table: pd.DataFrame) -> str:
    """SHA-256 of a table's index length, column names, dtypes, missing cells and values."""
    h = hashlib.sha256()
    h.update(f"{type(table.index).__name__}:{len(table)}".encode())
    for name in table.columns:
        column = table[name]
        dtype = column.dtype
        h.update(f"{name}:{dtype!r}".encode())
        missing = column.isna().to_numpy(dtype=bool)
        h.update(np.packbits(missing).tobytes())
        if dtype.kind in "iufb" and not isinstance(dtype, pd.CategoricalDtype):
            np_dtype = np.dtype(getattr(dtype, "numpy_dtype", dtype))
            values = (column.to_numpy(dtype=np_dtype, na_value=np_dtype.type(0)) if missing.any()
                      else column.to_numpy(dtype=np_dtype))
            h.update(np.ascontiguousarray(values).tobytes())
            continue
        try:
            h.update(pd.util.hash_pandas_object(column, index=False).to_numpy().tobytes())
        except TypeError:  # cells pandas cannot hash (list columns): their values as JSON, the same
            # whichever pandas gives the cells (lists under pandas 3, numpy arrays under pandas 2)
            cells = [None if cell is None else np.asarray(cell).tolist() for cell in column.tolist()]
            h.update(json.dumps(cells).encode())
    return h.hexdigest()


def _fields(value: Any, name: str) -> Iterator[tuple[str, Any]]:
    """(name, array or scalar) of every leaf of a sessions object (nested dataclasses, tuples, dicts)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _fields(getattr(value, f.name), f"{name}.{f.name}")
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from _fields(value[key], f"{name}[{key!r}]")
    elif isinstance(value, (list, tuple)) and any(isinstance(v, np.ndarray) for v in value):
        for k, v in enumerate(value):
            yield from _fields(v, f"{name}[{k}]")
    else:
        yield name, value


def sessions_hash(spec: Experiment, n: int, seed: int) -> str:
    """SHA-256 of the sessions of ``n`` subjects drawn from seed ``seed``'s environment stream, and of
    that stream's state after them."""
    rng = seed_streams(seed)[0]
    sessions = spec.env_cls.sample_sessions(spec.env_cls.design_cls(), n, rng)
    h = hashlib.sha256()
    for name, value in _fields(sessions, "sessions"):
        if isinstance(value, np.ndarray):
            _update_array(h, name, value)
        else:
            h.update(f"{name}={value!r}".encode())
    h.update(json.dumps(rng.bit_generator.state, sort_keys=True).encode())
    return h.hexdigest()


def session_trials(spec: Experiment) -> int:
    """Rows of one simulated session of the experiment's default design."""
    return len(simulate(spec, sorted(spec.agents)[0], 1, 0))


def lapse_for(per_session: int) -> Lapse:
    """Lapse rates under which a session of ``per_session`` trials lapses on about :data:`LAPSED_STEPS` steps."""
    rate = min(0.1, LAPSED_STEPS / 2.5 / per_session)
    return Lapse(invalid=round(rate, 6), random=round(1.5 * rate, 6))


def small_hashes(name: str, spec: Experiment, per: int, seeds: tuple[int, ...] = SEEDS,
                 suffix: str = "", lapses: bool = True, step: bool = True) -> dict[str, str]:
    """Every agent's small tables (and the step path's of the first two agents)."""
    out: dict[str, str] = {}
    n = max(2, SMALL_TRIALS // per)
    lapse_options = (None, lapse_for(per)) if lapses else (None,)
    for agent in sorted(spec.agents):
        for seed in seeds:
            for lapse in lapse_options:
                label = f"{name} {agent} n={n} seed={seed} lapse={lapse}{suffix}"
                out[label] = _guarded(lambda: simulate(spec, agent, n, seed, lapse=lapse))  # noqa: B023
    if step and per <= STEP_MAX_TRIALS:
        for k, agent in enumerate(sorted(spec.agents)[:2]):
            lapse = (None, lapse_for(per))[k]
            out[f"{name} {agent} n=2 seed=1 lapse={lapse} step{suffix}"] = _guarded(
                lambda: simulate(spec, agent, 2, 1, lapse=lapse, method="step"))  # noqa: B023
    return out


def _kernel_lapses(spec: Experiment, agent: str) -> bool:
    """Whether the agent's batch kernel plays lapses (elsewhere a large lapsed table is played step by step)."""
    from cogtestbed.agents.base import SyntheticAgent

    own = spec.agent(agent).simulate_batch_lapsed
    return getattr(own, "__func__", own) is not getattr(SyntheticAgent.simulate_batch_lapsed, "__func__", None)


def _guarded(make: Any) -> str:
    """The fingerprint of ``make()``'s table, or the error it raised (named, so it must stay the same)."""
    try:
        return table_hash(make())
    except Exception as exc:  # noqa: BLE001 - a refusal is recorded, and must stay a refusal
        return f"error {type(exc).__name__}: {exc}"


def every_hash(quick: bool = False) -> dict[str, str]:
    """Every fingerprint this script checks, by label (``quick``: the small tables and sessions only)."""
    out: dict[str, str] = {}
    specs = {name: get_experiment(name) for name in experiment_names()}
    per = {name: session_trials(spec) for name, spec in specs.items()}
    for name, spec in specs.items():
        for seed in SEEDS:
            n = max(2, SMALL_TRIALS // per[name])
            out[f"{name} sessions n={n} seed={seed}"] = sessions_hash(spec, n, seed)
        out.update(small_hashes(name, spec, per[name]))
    if quick:
        return out
    for name, spec in specs.items():
        n = -(-LARGE_OVERRIDE.get(name, LARGE_TRIALS) // per[name])
        out[f"{name} sessions n={n} seed=0"] = sessions_hash(spec, n, 0)
        agents = sorted(spec.agents)
        for k, agent in enumerate((agents[0], agents[-1])):
            lapse = lapse_for(per[name]) if k == 1 and _kernel_lapses(spec, agent) else None
            out[f"{name} {agent} n={n} seed={k} lapse={lapse}"] = _guarded(
                lambda: simulate(spec, agent, n, k, lapse=lapse))  # noqa: B023
    horizon = specs["horizon"]
    for n, seed in HORIZON_CASES:
        out[f"horizon sessions n={n} seed={seed}"] = sessions_hash(horizon, n, seed)
        for agent in sorted(horizon.agents):
            for lapse in (None, Lapse(invalid=0.1, random=0.15)):
                out[f"horizon {agent} n={n} seed={seed} lapse={lapse}"] = _guarded(
                    lambda: simulate(horizon, agent, n, seed, lapse=lapse))  # noqa: B023
    for name, spec in specs.items():  # once more, with whatever the large ones loaded
        out.update(small_hashes(name, spec, per[name], seeds=SEEDS[:1], suffix=" after-large", step=False))
    return out


def compare(hashes: dict[str, str], saved: dict[str, str]) -> list[str]:
    """Labels whose fingerprint differs from (or is missing against) the saved one."""
    return [label for label in saved if hashes.get(label) != saved[label]]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--save", help="write the fingerprints to this JSON file")
    parser.add_argument("--against", help="compare with the fingerprints in this JSON file (exit 1 on a difference)")
    parser.add_argument("--quick", action="store_true", help="the small tables and sessions only (no large tables)")
    parser.add_argument("--verbose", action="store_true", help="print every fingerprint")
    args = parser.parse_args()
    start = time.perf_counter()
    hashes = every_hash(quick=args.quick)
    if args.verbose:
        for label, digest in hashes.items():
            print(f"{digest[:16]}  {label}")
    print(f"{len(hashes)} fingerprints in {time.perf_counter() - start:.1f} s")
    if args.save:
        with open(args.save, "w") as f:
            json.dump(hashes, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.against:
        with open(args.against) as f:
            saved: dict[str, str] = json.load(f)
        if args.quick:
            saved = {k: v for k, v in saved.items() if k in hashes}
        differ = compare(hashes, saved)
        for label in differ:
            print(f"DIFFERS: {label}")
        print(f"{len(saved) - len(differ)}/{len(saved)} identical")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()

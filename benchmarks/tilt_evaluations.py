"""Evaluations of the tilt ``solve_tilt`` takes (the coherent agent's LIE answer, issue 54): the figures in
``TILT_MAX_ITER``'s comment.

    PYTHONPATH=$PWD python benchmarks/tilt_evaluations.py

Three sets, each printing the mean and the largest count: the tests' random cases (``random_case`` of
``tests/test_belief_tilt.py``, 10,000 draws); pz = [ε, 1 − 2ε, ε] on q = [0.1, mid, 0.95] with 840 (mid,
target) pairs a value of ε; 20,000 adversarial cases (denormal or tiny pz, q within 1e-15 of 1 or spread over
1e-90 … 1, targets a hair from an end), where it also counts the raised and the misses of the mean (over 1e-12
of the range, plus 8 ulps of its top for the rounding of Σ w q) and checks the interpreted twin bit for bit.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_belief_tilt import random_case  # noqa: E402

from cogtestbed.agents.belief import coherent_aux, solve_tilt  # noqa: E402
from cogtestbed.interpreted import interpreted  # noqa: E402


def evaluations(pz: np.ndarray, q: np.ndarray, target: float) -> int:
    """solve_tilt's evaluations for ``target`` clamped into pz's range; 0 at an end (no solve)."""
    lo, hi = q[pz > 0].min(), q[pz > 0].max()
    target = min(max(target, lo), hi)
    if not lo < target < hi:
        return 0
    return int(solve_tilt(pz, q, target, len(pz), lo, hi, np.zeros(8))[1])


def adversarial(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float] | None:
    k = int(rng.integers(2, 9))
    pz = rng.dirichlet(np.ones(k) * rng.choice([0.1, 1.0, 10.0]))
    if rng.random() < 0.5:
        pz[rng.integers(k)] = 10.0 ** -rng.uniform(0, 323)
    if rng.random() < 0.3:
        pz[rng.integers(k)] = 5e-324
    kind = rng.integers(3)
    q = [rng.random(k), 1 - 10.0 ** -rng.uniform(0, 15, k), 10.0 ** -rng.uniform(0, 90, k)][kind]
    lo, hi = q[pz > 0].min(), q[pz > 0].max()
    target = lo + (hi - lo) * (10.0 ** -rng.uniform(0, 14) if rng.random() < 0.5 else rng.random())
    if rng.random() < 0.5:
        target = hi - (target - lo)
    return (pz, q, float(target)) if lo < target < hi else None


def main() -> None:
    rng = np.random.default_rng(1)
    counts = [n for n in (evaluations(*random_case(rng)) for _ in range(10_000)) if n]
    print(f"random cases: {len(counts)} solved, mean {np.mean(counts):.1f}, max {max(counts)}")
    for eps in (1e-6, 1e-12, 1e-20, 1e-35, 1e-100, 1e-300):
        counts = [
            evaluations(np.array([eps, 1 - 2 * eps, eps]), np.array([0.1, mid, 0.95]), t)
            for mid in np.linspace(0.12, 0.93, 28)
            for t in np.linspace(0.11, 0.94, 30)
        ]
        print(f"middle state, eps {eps:.0e}: mean {np.mean(counts):.1f}, max {max(counts)}")
    rng, twin = np.random.default_rng(7), interpreted(coherent_aux)
    counts, raised, misses, differ = [], 0, 0, 0
    for _ in range(20_000):
        case = adversarial(rng)
        if case is None:
            continue
        pz, q, target = case
        k = len(pz)
        try:
            counts.append(evaluations(pz, q, target))
        except ArithmeticError:
            raised += 1
            print("raised:", pz.tolist(), q.tolist(), repr(target))
            continue
        w, w_twin = np.full(8, np.nan), np.full(8, np.nan)
        coherent_aux(pz, q, target, k, w)
        with np.errstate(all="ignore"):
            twin(pz, q, target, k, w_twin)
        differ += not np.array_equal(w, w_twin, equal_nan=True)
        lo, hi = q[pz > 0].min(), q[pz > 0].max()
        misses += not abs(math.fsum(w[:k] * q) - target) <= 1e-12 * (hi - lo) + 8 * np.spacing(hi)
    print(
        f"adversarial: {len(counts)} solved, mean {np.mean(counts):.1f}, max {max(counts)}; raised {raised}, "
        f"mean off by over 1e-12 of the range (+ 8 ulps) {misses}, twin differs {differ}"
    )


if __name__ == "__main__":
    main()

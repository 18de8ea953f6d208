"""What a hand-written gradient saves over the finite-difference default (issue 51, item 3).

A model may give its likelihood kernel without a gradient (``loglik_kernel``; the gradient is then
taken by central differences, :mod:`cogtestbed.inference.numgrad`) or with its exact gradient
(``pointwise_kernel``).  For two models this prints, per subject, the CPU time of one NLL + gradient
evaluation and of one multi-start MLE (the numba BFGS driver), hand gradient against finite
differences, best of ``--repeats`` rounds after a warm-up (compilation excluded; its one-off cost is
printed apart), and the largest difference of the MLEs:

* ``coin-guess`` ``softmax`` (docs/examples/coinguess; K = 1 column, 40 independent guesses): the
  log-likelihood alone is written as the walk-through's contributor would;
* ``instrumental-learning`` ``rw-pm`` (K = 3 columns, 96 sequential trials): the log-likelihood is
  the hand kernel's ``ll`` (an upper bound on the difference's cost: each of its 2K + 1 passes
  also computes the unused exact gradient).

    PYTHONPATH=. python benchmarks/numgrad_speed.py [--subjects 20] [--repeats 5]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from cogtestbed.inference.instrumental import rwpm_pointwise_kernel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "examples"))


@njit(cache=True)
def softmax_loglik(theta: np.ndarray, obs_subject: np.ndarray, y: np.ndarray, ev: np.ndarray) -> np.ndarray:
    """The coin-guess softmax's log P(y) per guess, log σ(±βL), without its gradient."""
    ll = np.empty(y.shape[0])
    for i in range(y.shape[0]):
        x = theta[obs_subject[i], 0] * ev[i]
        log_p = -math.log1p(math.exp(-x)) if x > 0 else x - math.log1p(math.exp(x))
        ll[i] = log_p if y[i] == 1 else log_p - x
    return ll


@njit(cache=True)
def rwpm_loglik(theta: np.ndarray, obs_subject: np.ndarray, action: np.ndarray, casino: np.ndarray,
                reward: np.ndarray) -> np.ndarray:
    """RW±'s per-trial log P(choice): the hand kernel's ``ll`` (its gradient computed and dropped)."""
    return rwpm_pointwise_kernel(theta, obs_subject, action, casino, reward)[0]


def _models() -> list[tuple[str, Any, Any, Any]]:
    """(label, hand-gradient model, finite-difference model, trial table) of each case."""
    from coinguess.models import Softmax
    from coinguess.spec import SPEC

    from cogtestbed.inference.instrumental import MODELS

    class SoftmaxFD(Softmax):
        pointwise_kernel = None
        loglik_kernel = softmax_loglik

    rwpm = type(MODELS["rw-pm"])

    class RWPMFD(rwpm):  # type: ignore[misc,valid-type]
        pointwise_kernel = None
        loglik_kernel = rwpm_loglik

    return [("coin-guess softmax (K=1, 40 guesses)", Softmax(), SoftmaxFD(), SPEC),
            ("instrumental-learning rw-pm (K=3, 96 trials)", MODELS["rw-pm"], RWPMFD(), "instrumental-learning")]


def _cpu_best(fn: Any, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def measure(label: str, hand: Any, numeric: Any, experiment: Any, subjects: int, repeats: int) -> dict[str, Any]:
    import cogtestbed as ct

    trials = ct.simulate(experiment, hand.name, subjects=subjects, seed=7)
    data = list(hand.subject_data(trials).values())
    theta = np.array([p.default for p in hand.parameters])
    compile_s = {}
    for key, model in (("hand", hand), ("fd", numeric)):
        start = time.process_time()
        model.nll_grad(theta, data[0])
        model.fit_subject(data[0])
        compile_s[key] = time.process_time() - start
    calls = 200
    row: dict[str, Any] = {"model": label, "n_obs": int(hand.n_observations(data[0]))}
    for key, model in (("hand", hand), ("fd", numeric)):
        row[f"grad_us_{key}"] = _cpu_best(lambda m=model: [m.nll_grad(theta, d) for d in data
                                                            for _ in range(calls // len(data) or 1)],
                                          repeats) / (len(data) * (calls // len(data) or 1)) * 1e6
        row[f"mle_ms_{key}"] = _cpu_best(lambda m=model: [m.fit_subject(d) for d in data], repeats) / len(data) * 1e3
    def estimate(model: Any, d: Any) -> np.ndarray:
        return np.array(list(model.fit_subject(d).params.values()))

    fits = [(estimate(hand, d), estimate(numeric, d)) for d in data]
    row["max_mle_diff"] = max(float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(a)))) for a, b in fits)
    row["compile_s_hand"], row["compile_s_fd"] = compile_s["hand"], compile_s["fd"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'model':<46} {'n_obs':>5}  {'NLL+grad µs: hand':>17} {'FD':>8} {'x':>5}  "
          f"{'MLE ms: hand':>12} {'FD':>8} {'x':>5}  {'max rel MLE diff':>16}  first call CPU s: hand / FD")
    for label, hand, numeric, experiment in _models():
        r = measure(label, hand, numeric, experiment, args.subjects, args.repeats)
        print(f"{r['model']:<46} {r['n_obs']:>5}  {r['grad_us_hand']:>17.2f} {r['grad_us_fd']:>8.2f} "
              f"{r['grad_us_fd'] / r['grad_us_hand']:>5.1f}  {r['mle_ms_hand']:>12.3f} {r['mle_ms_fd']:>8.3f} "
              f"{r['mle_ms_fd'] / r['mle_ms_hand']:>5.1f}  {r['max_mle_diff']:>16.1e}  "
              f"{r['compile_s_hand']:.1f} / {r['compile_s_fd']:.1f}")
    print(f"(CPU time per subject, best of {args.repeats} rounds over {args.subjects} subjects; the first call "
          "includes numba compilation: the hand kernels' is cached on disk, the finite-difference kernel's and its "
          "MLE driver's is not, so a new process pays it again)")


if __name__ == "__main__":
    main()

"""T1a's CMI under tied and rounded reports (issue 29): bias of tie treatments and T1a's size.

Null data (A ⊥ θ | p holds exactly): per study 200 contexts with p* ~ U(0, 1) and θ ~ Bernoulli(p*)
drawn once per context, five repetitions; the report p is either the same for all five
repetitions (``tied``: p* + N(0, .05), clipped) or drawn per repetition and rounded to .05
(``rounded``); the decision A ∈ {No, Yes, Defer} is a logit of the report (utilities 6(1 − p),
6p, 3.4), so it depends on θ only through p.

``bias``: mean CMI estimate over the studies for each tie treatment (rows as they are, the
mixed estimator's tie rule; a 1e-9 tie-breaking jitter; per-repetition slices; the default
half-resolution jitter :data:`~cogtestbed.inference.belief.CMI_JITTER`).  ``size``: rejection
rates at α of T1a's two rules (local permutation; the paper's bootstrap bound) as
:func:`~cogtestbed.inference.belief.t1_cmi_arrays` computes them.

    python benchmarks/studies/belief_cmi_ties.py bias --studies 200
    python benchmarks/studies/belief_cmi_ties.py size --studies 200 --n-perm 100 --n-boot 100
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from cogtestbed.inference.belief import CMI_JITTER, cmi_knn, jittered, t1_cmi_arrays

CONTEXTS, REPS = 200, 5
MODES = ("tied", "rounded")


def null_study(rng: np.random.Generator, mode: str) -> dict[str, np.ndarray]:
    """One null study's rows in (context, rep) order: a, θ, p, group, rep."""
    pstar = rng.random(CONTEXTS)
    theta = (rng.random(CONTEXTS) < pstar).astype(np.int64)
    if mode == "tied":
        p = np.repeat(np.clip(pstar + rng.normal(0.0, 0.05, CONTEXTS), 0.0, 1.0), REPS)
    else:
        noisy = np.clip(np.repeat(pstar, REPS) + rng.normal(0.0, 0.05, CONTEXTS * REPS), 0.0, 1.0)
        p = np.round(noisy / 0.05) * 0.05
    u = np.stack([6.0 * (1.0 - p), 6.0 * p, np.full(p.size, 3.4)], axis=1)
    prob = np.exp(u - u.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    a = (rng.random(p.size)[:, None] > prob.cumsum(axis=1)).sum(axis=1)
    return {"a": a, "theta": np.repeat(theta, REPS), "p": p, "group": np.repeat(np.arange(CONTEXTS), REPS),
            "rep": np.tile(np.arange(REPS), CONTEXTS)}


def treatment(name: str, d: dict[str, np.ndarray], rng: np.random.Generator) -> float:
    a, t, p = d["a"], d["theta"], d["p"]
    if name == "rows (tie rule)":
        return cmi_knn(a, t, p)
    if name == "jitter 1e-9":
        return cmi_knn(a, t, jittered(p, rng, 1e-9))
    if name == "per-rep slices":
        return float(np.mean([cmi_knn(a[d["rep"] == r], t[d["rep"] == r], p[d["rep"] == r]) for r in range(REPS)]))
    return cmi_knn(a, t, jittered(p, rng, CMI_JITTER))


def bias(studies: int, seed: int) -> None:
    names = ("rows (tie rule)", "jitter 1e-9", "per-rep slices", f"jitter ±{CMI_JITTER} (default)")
    print(f"mean CMI estimate on null data over {studies} studies ({CONTEXTS} contexts x {REPS} reps, k = 3)")
    for mode in MODES:
        for name in names:
            rng = np.random.default_rng(seed)
            v = np.array([treatment(name, null_study(rng, mode), rng) for _ in range(studies)])
            print(f"  {mode:8s} {name:26s} mean {v.mean():+.4f}  (MC SE {v.std(ddof=1) / math.sqrt(studies):.4f}, "
                  f"SD {v.std(ddof=1):.4f})", flush=True)


def size(studies: int, seed: int, n_perm: int, n_boot: int, level: float) -> None:
    print(f"T1a size at alpha = {level} over {studies} null studies ({n_perm} permutations, {n_boot} "
          "context-bootstrap resamples)")
    for mode in MODES:
        rng = np.random.default_rng(seed)
        perm = paper = inside = 0
        ests = []
        for s in range(studies):
            d = null_study(rng, mode)
            r = t1_cmi_arrays(d["a"], d["p"], d["theta"], d["group"], n_boot=n_boot, n_perm=n_perm, seed=seed + s,
                              level=level)
            perm += r["p_value"] < level
            paper += r["reject_paper"]
            inside += r["interval"][0] <= r["estimate"] <= r["interval"][1]
            ests.append(r["estimate"])
        se = math.sqrt(level * (1 - level) / studies)
        print(f"  {mode:8s} permutation {perm / studies:.3f}  paper rule {paper / studies:.3f}  (MC SE {se:.3f}); "
              f"mean estimate {np.mean(ests):+.4f}; interval contains its estimate in {inside}/{studies}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("bias", "size"))
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n-perm", type=int, default=100)
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--level", type=float, default=0.05)
    args = ap.parse_args()
    if args.what == "bias":
        bias(args.studies, args.seed)
    else:
        size(args.studies, args.seed, args.n_perm, args.n_boot, args.level)


if __name__ == "__main__":
    main()

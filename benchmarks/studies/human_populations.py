"""Issue 52 items 3-4: an LLM against a human population, the test a plan prices, validated.

The two-group test of ``plan EXP --model M --effect P=D --llm A --population human:NAME``: the
people's per-subject MLE (their number fixed: their data are already collected) against the LLM's
subjects, drawn from the population (one posterior draw of its group parameters per simulated
study) with the median of ``P`` moved by ``D``; a two-sided Welch t-test of the per-subject MLE
(log scale for a log-scaled parameter), or the Brunner–Munzel rank test for a parameter the model
declares in ``rank_tested_parameters`` (the bounded-estimate rule).  Prints the population, then

* the test's **type-I error** under the null — the LLM drawn from the human population itself
  (effect 0) — with its one-sided 95 % Clopper–Pearson upper bound, and
* its **power** at the effect ``--size``,

each over ``--sims`` simulated studies of ``--subjects`` LLM subjects at ``--trials`` trials (default:
the people's own median).

    python benchmarks/studies/human_populations.py --population human:cogbench-instrumental \
        --effect alpha_pos --size 0.1 --subjects 30 --sims 300

(The script's earlier default, ``--effect optimism_bias --size 0.15``, is refused on these people:
an optimism-bias effect moves α⁻ down by half its size, past 0 from their median α⁻ of 0.025.)
"""

from __future__ import annotations

import argparse
import time

import cogtestbed as ct
from cogtestbed.api.population import describe_population
from cogtestbed.planning.kinds.sequential.seqfair import upper_bound


def rejections(
    pop: ct.Population, effect: str, size: float, subjects: int, trials: int | None, sims: int, seed: int, workers: int
) -> tuple[int, int]:
    """(rejections in the effect's direction, or any at 0; studies) of the LLM-vs-people test."""
    study = ct.power(
        pop.experiment,
        pop.model,
        effect={effect: size},
        population=pop,
        groups=2,
        subjects=(subjects,),
        trials=None if trials is None else (trials,),
        sims=sims,
        seed=seed,
        workers=workers,
    )
    hits = study.table["detected"].astype(bool)
    return int(hits.sum()), int(hits.size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--population", default="human:cogbench-instrumental")
    ap.add_argument("--effect", default="alpha_pos")
    ap.add_argument("--size", type=float, default=0.1)
    ap.add_argument("--subjects", type=int, default=30)
    ap.add_argument("--trials", type=int, default=None, help="trials per LLM subject (default: the people's median)")
    ap.add_argument("--sims", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    pop = ct.population(args.population)
    print("\n".join(describe_population(pop)))
    trials = args.trials if args.trials is not None else pop.trials
    where = f"{args.subjects} LLM subjects x {trials} trials against the {pop.subjects} people"
    start = time.perf_counter()
    hits, n = rejections(pop, args.effect, 0.0, args.subjects, trials, args.sims, args.seed, args.workers)
    print(
        f"type-I error ({args.effect} = 0, the LLM drawn from the population; {where}): {hits / n:.3f} "
        f"({hits}/{n}), one-sided 95% upper bound {upper_bound(hits, n):.3f} (level 0.05)"
    )
    hits, n = rejections(pop, args.effect, args.size, args.subjects, trials, args.sims, args.seed, args.workers)
    se = (hits / n * (1 - hits / n) / n) ** 0.5
    print(f"power ({args.effect} moved by {args.size:g}; {where}): {hits / n:.3f} ± {se:.3f} MC SE ({n} sims)")
    print(f"({time.perf_counter() - start:.0f} s wall, --workers {args.workers})")


if __name__ == "__main__":
    main()

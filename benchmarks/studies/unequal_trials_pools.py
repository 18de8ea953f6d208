"""Issue 68: why the LLM-against-people Welch test misses its level, by resampling large pools.

For two posterior draws of CogBench's population, ``--pool`` people (96 trials, the people's
design) and ``--pool`` LLM subjects (at LLM:people trial ratios 1 and 4) are simulated and fitted
once; it prints each pool's mean, SD and skewness of the per-subject optimism-bias MLE, and the
Welch test's rejection rate at α = .05 over ``--resamples`` studies of 30 + 30 drawn from the pools
(people against LLM, and people against people), with its MC SE.  The pools' own sampling noise
(a difference of pool means) enters the people-against-LLM rate; the people-against-people rate
is the test's level for one distribution.

    python benchmarks/studies/unequal_trials_pools.py --pool 1200 --resamples 40000
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from cogtestbed.inference.population import load_population
from cogtestbed.registry import get_experiment
from cogtestbed.studies import model_studies as studies
from cogtestbed.studies.study_data import design_for_trials, fitted_model
from cogtestbed.studies.study_kinds import study_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", type=int, default=1200)
    parser.add_argument("--resamples", type=int, default=40000)
    parser.add_argument("--draws", default="3,11")
    args = parser.parse_args()
    pop = load_population("human:cogbench-instrumental")
    exp = get_experiment(pop.experiment)
    model = exp.model(pop.model)
    n, trials = args.pool, int(pop.trials or 96)
    rng = np.random.default_rng(0)
    for draw in (int(d) for d in args.draws.split(",")):
        people = None
        for ratio in (1, 4):
            spec = study_spec(kind="power", experiment=pop.experiment, models=(pop.model,), effect="optimism_bias",
                              effect_size=0.0, groups=2, from_population=pop, people=n, people_trials=trials,
                              subjects=(n,), trials=(ratio * trials,), reps=1, seed=68)
            fitter = fitted_model(spec, model)
            (ra, rb), (sa, sb) = np.random.default_rng(draw).spawn(2), np.random.SeedSequence(draw).spawn(2)
            if people is None:
                people = studies._people_values(spec, model, fitter, exp, ra, sa, draw)
            true = studies.power_parameters(spec, model, n, rb, draw=draw)
            llm = studies._group_values(spec, model, fitter, exp, true, n, sb,
                                        design_for_trials(exp, ratio * trials, spec.design), 1)
            line = [f"draw {draw}, ratio {ratio}:"]
            for name, v in (("people", people), ("LLM", llm)):
                line.append(f"{name} mean {v.mean():.4f} SD {v.std():.4f} skew {stats.skew(v):+.2f}")
            for name, a, b in (("people vs LLM", people, llm), ("people vs people", people[: n // 2], people[n // 2:])):
                ia, ib = rng.integers(0, a.size, (args.resamples, 30)), rng.integers(0, b.size, (args.resamples, 30))
                p = stats.ttest_ind(b[ib], a[ia], axis=1, equal_var=False).pvalue
                line.append(f"Welch {name} {(p < 0.05).mean():.4f} ± {np.sqrt(0.05 * 0.95 / args.resamples):.4f}")
            print("; ".join(line), flush=True)


if __name__ == "__main__":
    main()

"""Issue 68: does an LLM-against-people test hold its level when the groups differ in trials per subject?

Under the null (the LLM's subjects and the people drawn from one population, no effect) the plan's
two-group test (per-subject MLE; a Welch t-test, or the Brunner–Munzel rank test where estimates sit at
a bound) compares per-subject estimates of unequal precision when the LLM plays more trials than the
people did.  For LLM:people trial ratios 1, 2 and 4 this prints the null rejection rate over
``--studies`` simulated studies with its one-sided 95 % Clopper–Pearson upper bound and whether it is
<= alpha (the people: ``--people`` drawn afresh from the population per study at its own trial count;
the LLM: ``--llm-subjects`` at ratio x that count).

The test is the calibrated one (issue 68, :mod:`cogtestbed.studies.people_level`): its
critical p-value comes from ``--calibration`` null studies of the same design seeded apart, at α less
the calibration's noise margin (:func:`~cogtestbed.planning.kinds.sequential.seqauto.calibration_level`); the
fresh ``--studies`` then measure its level.  Each line also gives the nominal test's rejection rate
(p < α) on the same fresh studies, the uncorrected figure.

    python benchmarks/studies/unequal_trials_level.py --studies 1000 --calibration 400 --workers 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cogtestbed.inference.population import load_population
from cogtestbed.planning.kinds.sequential.seqauto import calibration_level
from cogtestbed.planning.kinds.sequential.seqfair import type1_check, type1_words
from cogtestbed.studies.driver import run_study
from cogtestbed.studies.people_level import calibrate_people_test
from cogtestbed.studies.study_kinds import study_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--population", default="human:cogbench-instrumental")
    parser.add_argument("--effect", default="optimism_bias")
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--calibration", type=int, default=400, help="null studies calibrating the critical p-value")
    parser.add_argument("--people", type=int, default=30)
    parser.add_argument("--llm-subjects", type=int, default=30)
    parser.add_argument("--ratios", default="1,2,4")
    parser.add_argument("--level", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    pop = load_population(args.population)
    people_trials = int(pop.trials or 96)
    print(f"null rejection of the LLM-against-people test, population {pop.name} ({pop.model}), effect {args.effect}, "
          f"{args.people} people x {people_trials} trials vs {args.llm_subjects} LLM subjects, {args.studies} studies")
    for ratio in (int(r) for r in args.ratios.split(",")):
        t0 = time.perf_counter()
        spec = study_spec(kind="power", experiment=pop.experiment, models=(pop.model,), effect=args.effect,
                          effect_size=0.0, groups=2, from_population=pop, people=args.people,
                          people_trials=people_trials, subjects=(args.llm_subjects,), trials=(ratio * people_trials,),
                          reps=args.studies, seed=68, level=args.level)
        cal = calibrate_people_test(spec, args.calibration, calibration_level(args.level, args.calibration),
                                    workers=args.workers)
        table = run_study(spec.model_copy(update={"critical_p": cal["critical_p"]}), workers=args.workers).table
        hits = int(table["detected"].astype(bool).sum())
        check = type1_check(hits, len(table), args.level)
        nominal = type1_check(int((np.asarray(table["p_value"], float) < args.level).sum()), len(table), args.level)
        print(f"  ratio {ratio} ({ratio * people_trials} LLM trials): calibrated critical p {cal['critical_p']:.4f} "
              f"(target {cal['target']:.4f} on {cal['null_sims']} null studies, {cal['nominal_rejected']} of them "
              f"p < {args.level:g}); fresh studies, calibrated test: {type1_words(check)}; nominal test: "
              f"{type1_words(nominal)}; test: {table['test'].iloc[0].split('(')[0].strip()}; "
              f"{time.perf_counter() - t0:.0f} s wall", flush=True)


if __name__ == "__main__":
    main()

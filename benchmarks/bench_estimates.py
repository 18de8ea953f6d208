"""How close the up-front time estimate of a study comes to its real wall time (issue 31).

``python benchmarks/bench_estimates.py`` prints, for a few small recovery studies of RW± (workers 1),
the estimate :func:`cogtestbed.planning.estimate.study_estimate` gives before the first task and
the wall time :func:`cogtestbed.studies.driver.run_study` then takes, and their ratio.
"""

from __future__ import annotations

from cogtestbed.planning.estimate import study_estimate
from cogtestbed.studies.driver import run_study, study_spec

JOBS = (((6, 12), (48, 96), 4), ((10, 20), (96, 192), 5), ((20, 40), (96, 192), 3))


def main() -> None:
    for subjects, trials, reps in JOBS:
        spec = study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",), subjects=subjects,
                          trials=trials, reps=reps, seed=1)
        est = study_estimate(spec, 1)
        assert est is not None
        real = run_study(spec, workers=1).seconds
        print(f"recovery rw-pm, subjects {subjects}, trials {trials}, {reps} reps ({est.tasks} tasks): "
              f"estimated {est.seconds:.2f} s, real {real:.2f} s, real/estimated {real / est.seconds:.2f}")


if __name__ == "__main__":
    main()

"""Does ``plan --fit hierarchical`` (or ``--lapse-fit``) remove the per-subject MLE's effect bias? (issue 40 item 6)

RW± optimism bias 0.2 (instrumental learning, rw-pm, the README's plan target) at one design
(``--subjects`` × ``--trials``, default the README plan's 26 × 96): the effect bias of the plan's
per-subject MLE t-test on ``--mle-studies`` fresh simulated studies (against the population mean of
the effect, the t-test's estimand: :func:`cogtestbed.planning.recovery.recovery_at`), and the
hierarchical test's bias, coverage and power on ``--studies`` fresh studies
(:func:`cogtestbed.planning.fitcheck.search_hierarchical` at this one size, no step; what
``plan --fit hierarchical`` measures at each size it tries: against the effect at the population
medians, exactly 0.2).  The size search itself: ``benchmarks/studies/fit_search.py``.  With ``--random R`` the answers
also lapse to random choices at rate R and the MLE is measured without and with a fitted lapse term
(``plan --lapse-fit fit``).  Each figure with its Monte-Carlo SE.

    python benchmarks/studies/fit_check.py [--subjects 26] [--trials 96] [--studies 20] [--mle-studies 200]
                                           [--random 0.1] [--workers 2] [--no-hierarchical]
"""

from __future__ import annotations

import argparse
import os
import time

from cogtestbed.planning.fitcheck import search_hierarchical
from cogtestbed.planning.kinds.power.power_sims import PowerEvaluator
from cogtestbed.planning.plan import FRESH_SEED_OFFSET
from cogtestbed.planning.recovery import recovery_at
from cogtestbed.planning.space import Point
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import study_spec


def mle_bias(spec, exp, point: Point, studies: int, workers: int) -> dict:
    """The per-subject MLE t-test's effect bias on ``studies`` fresh studies (as the plan measures it)."""
    fresh = PowerEvaluator(spec.model_copy(update={"seed": spec.seed + FRESH_SEED_OFFSET}), workers)
    try:
        est = fresh.ensure(point, studies)
    finally:
        fresh.close()
    rec = recovery_at(spec, exp, point, fresh.table(point))
    return {**rec, "power": est.rate, "power_mc_se": est.mc_se}


def show_mle(label: str, rec: dict) -> None:
    share = abs(rec["effect_bias"]) / abs(rec["effect_size"])
    print(f"{label}: effect bias {rec['effect_bias']:+.4f} ± {rec['effect_bias_mc_se']:.4f} (MC SE) against "
          f"{rec['estimand']:.4f} = {share:.0%} of the effect; coverage {rec['coverage']:.3f}; power "
          f"{rec['power']:.3f} ± {rec['power_mc_se']:.3f} ({rec['studies']} fresh studies)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=26)
    ap.add_argument("--trials", type=int, default=96)
    ap.add_argument("--studies", type=int, default=20)
    ap.add_argument("--mle-studies", type=int, default=200)
    ap.add_argument("--random", type=float, default=0.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-hierarchical", action="store_true")
    opts = ap.parse_args()
    exp = get_experiment("instrumental-learning")
    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2, seed=0, draws=500, tune=500, chains=2)
    if opts.random > 0:
        from cogtestbed.lapse import Lapse

        spec = spec.model_copy(update={"lapse": Lapse(invalid=0.0, random=opts.random)})
    point = Point(opts.subjects, 1, opts.trials)
    print(f"RW± optimism bias 0.2, {opts.subjects} subjects x {opts.trials} trials"
          + (f", random-choice lapses at {opts.random}" if opts.random else "") + f"; load {os.getloadavg()[0]:.1f}",
          flush=True)
    start = time.perf_counter()
    show_mle("per-subject MLE, no lapse term", mle_bias(spec, exp, point, opts.mle_studies, opts.workers))
    if opts.random > 0:
        show_mle("per-subject MLE, lapse term fitted (--lapse-fit fit)",
                 mle_bias(spec.model_copy(update={"lapse_fit": "fit"}), exp, point, opts.mle_studies, opts.workers))
    if not opts.no_hierarchical:
        c = search_hierarchical(spec, exp, point, "subjects", 0.8, opts.studies, opts.workers, max_steps=0).check
        print(f"hierarchical (--fit hierarchical): effect bias {c['effect_bias']:+.4f} ± {c['effect_bias_mc_se']:.4f} "
              f"(MC SE) against {c['estimand']:.4f} = {c['bias_share']:.0%} of the effect; coverage "
              f"{c['coverage']:.3f} ± {c['coverage_mc_se']:.3f}; power {c['power']:.3f} ± {c['power_mc_se']:.3f} "
              f"({c['studies']} fresh studies, {c['seconds']:.0f} s)", flush=True)
    print(f"{time.perf_counter() - start:.0f} s wall; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

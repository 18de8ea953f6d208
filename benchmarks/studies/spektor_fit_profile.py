"""Where the hierarchical prospect-theory fit of Spektor et al.'s participants spends its time (issue 52):
building the PyMC model, compiling it for nutpie, and sampling, each with its wall and CPU time, then
the sampler's leapfrog steps (one log-likelihood-and-gradient evaluation each), tree depth,
divergences, max R-hat and min bulk/tail ESS of the free variables, and the population medians.

    python benchmarks/studies/spektor_fit_profile.py 20 --draws 200 --chains 2
    python benchmarks/studies/spektor_fit_profile.py 60 --draws 300 --chains 2 [--centred lambda,alpha,theta]
    python benchmarks/studies/spektor_fit_profile.py 0 --draws 60 --chains 1 --target-accept 0.98

Participants: the seeded random subset of ``build_populations.py`` (0: all 282).  Draws = tuning steps.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_populations as bp  # noqa: E402

import cogtestbed as ct  # noqa: E402
from cogtestbed.inference.reproducible import strict_float  # noqa: E402

START, CPU = time.perf_counter(), time.process_time()


def stamp(what: str) -> None:
    print(f"[{time.perf_counter() - START:7.1f} s wall {time.process_time() - CPU:7.1f} s CPU] {what}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("subjects", type=int)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--centred", default="",
                    help="parameters sampled centred, comma-separated (default: none, the model's own)")
    ap.add_argument("--target-accept", type=float, default=0.9)
    args = ap.parse_args()
    import arviz as az
    import nutpie

    table, which = bp.table_of(bp.POPULATIONS["spektor2024"], args.subjects or None)
    stamp(f"{len(table)} choices of {which}")
    model = copy.copy(ct.get_experiment("risky-choice").model("prospect-theory"))  # the registry's stays as declared
    if args.centred:
        model.centred_parameters = tuple(args.centred.split(","))
    pm_model = model.pymc_model(table, True)
    stamp("PyMC model built")
    with strict_float():
        compiled = nutpie.compile_pymc_model(pm_model)
    stamp(f"compiled for nutpie ({compiled.n_dim} dimensions)")
    idata = nutpie.sample(compiled, draws=args.draws, tune=args.draws, chains=args.chains, seed=0,
                          cores=min(args.chains, 2), target_accept=args.target_accept, progress_bar=False,
                          store_divergences=False)
    stamp(f"sampled {args.chains} chains x {args.draws} tuning + {args.draws} draws")
    stats = idata.sample_stats
    steps = int(stats["n_steps"].sum())
    print(f"leapfrog steps {steps} ({steps / (2 * args.draws * args.chains):.0f} per iteration), mean depth "
          f"{float(stats['depth'].mean()):.2f}, divergences {int(stats['diverging'].sum())}")
    diag = az.summary(idata, var_names=[v.name for v in pm_model.free_RVs], kind="diagnostics")
    print(f"max R-hat {diag['r_hat'].max():.3f}, min bulk ESS {diag['ess_bulk'].min():.0f}, "
          f"min tail ESS {diag['ess_tail'].min():.0f} (worst: {diag['r_hat'].idxmax()})")
    print(az.summary(idata, var_names=["lambda_pop", "alpha_pop", "theta_pop"], kind="stats", hdi_prob=0.95))


if __name__ == "__main__":
    main()

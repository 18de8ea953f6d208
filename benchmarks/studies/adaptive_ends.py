"""Where an adaptive magnitude session on the prior weight asks, and why (issue 53; docs/adaptive.md).

The static-Bayes answer is a line in the stimulus position u (Ma, Wang & Fountas 2025, Sec. 3.2, model
2): v = (1 − w)·u + w·μ_p + σ_dec·z, so w_prior is one minus its slope, and the variance of a fitted
slope, σ²/Σ(u − ū)², is smallest with half the trials at each end of the range.  This prints the
expected information gain on w_prior of the 11 candidate positions at the prior, the share of the
adaptive trials at each position over subjects drawn from the prior (one block, the spec's
``study_design``), and how the split between the two ends follows each subject's true μ_p (the Fisher
information on w for a known μ_p is (μ_p − u)²/σ²: the end farther from μ_p tells more).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/studies/adaptive_ends.py --subjects 200 --trials 30
"""

from __future__ import annotations

import argparse
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: no BLAS threads spinning
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import cogtestbed as ct  # noqa: E402
from cogtestbed.experiments._adaptive import AdaptiveDecl, adaptive_model  # noqa: E402
from cogtestbed.inference.adaptive import AdaptiveDesigner  # noqa: E402
from cogtestbed.inference.adaptive_magnitude import adaptive_space  # noqa: E402
from cogtestbed.planning.kinds.adaptive.adaptive import prior_draws  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=200)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.subjects < 3 or args.trials < 1:
        raise SystemExit("--subjects must be >= 3 and --trials >= 1")
    exp = ct.get_experiment("magnitude")
    model = adaptive_model(exp)
    info = AdaptiveDesigner(model, adaptive_space(None), ("w_prior",)).information()
    print("EIG on w_prior at the prior, u = 0, 0.1, ..., 1 (nats):", " ".join(f"{v:.3f}" for v in info))
    natural = prior_draws(model, args.subjects, np.random.default_rng(args.seed))
    gen = exp.generators[model.name]
    assert isinstance(exp.adaptive, AdaptiveDecl)
    design = exp.env_cls.design_cls(**{**dict(exp.adaptive.study_design), "adaptive": ("w_prior",),
                                       "trials": args.trials})
    table = ct.simulate(exp, gen.agent, subjects=args.subjects, seed=args.seed, params=gen.agent_params(natural),
                        design=design)
    chosen = table["design_index"].to_numpy()
    share = np.bincount(chosen, minlength=info.size) / chosen.size
    print(f"{args.subjects} subjects x {args.trials} trials: share of asks at u = 0..1:",
          " ".join(f"{v:.3f}" for v in share))
    low = table.groupby("subject")["design_index"].apply(lambda s: float((s == 0).mean())).to_numpy()
    mu = natural["mu_p"]
    edges = [-np.inf, *np.quantile(mu, [1 / 3, 2 / 3]), np.inf]
    terciles = [round(float(low[(mu >= a) & (mu < b)].mean()), 3) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    print("share of u=0 asks by true mu_p tercile:", terciles)
    print("corr(share of u=0 asks, true mu_p):", round(float(np.corrcoef(low, mu)[0, 1]), 3))


if __name__ == "__main__":
    main()

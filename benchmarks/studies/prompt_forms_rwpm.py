"""Prompt forms as a random factor (issue 42): RW± optimism bias with a form SD of 0.15.

Null studies: α⁺ = α⁻ = 0.5, β = 5 (no optimism bias; at α = 0.5 a symmetric logit offset leaves
the population's bias at exactly 0), 8 prompt forms × 10 subjects × 96 trials, each form shifting
α⁺ by a Normal(0, 0.15) offset on the logit scale.  Prints, as one JSON line each:

* the type-I error of the forms-aware test (the t-test on the 8 form means of the bias-corrected
  effect: the MLE's bias under the null measured by ``--bias-sims`` simulated subjects and
  subtracted, Satterthwaite df), of the same test without the correction (``aware_uncorrected``)
  and of the naive t-test over the 80 subjects, each with its Monte-Carlo SE (target: aware's one-sided 95 %
  upper bound ≤ .05, printed as ``upper95``);
* the coverage of the 95 % Q-profile interval of the form SD of α⁺ (logit scale) with 8 forms
  (target 85-95 %), and the mean estimate;
* with ``--effect 0.2`` (α⁺ = 0.6, α⁻ = 0.4) the two tests' power instead.

Run: ``python benchmarks/studies/prompt_forms_rwpm.py --studies 1000`` (about 6 minutes of one
core with the bias correction's 200 simulated subjects a replicate, 2 without).  ``--rows FILE``
appends each replicate's row to a CSV as it finishes and ``--part I/N`` runs every N-th replicate
from the I-th (parallel parts share the seeds of one run); ``--summarise FILE`` prints the summary
of the rows in FILE.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cogtestbed.environments.forms import FormDesign
from cogtestbed.registry import get_experiment
from cogtestbed.studies.form_studies import BIAS_SIMS, FormStudySpec, form_replicate, summarise_form_study


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=1000)
    ap.add_argument("--forms", type=int, default=8)
    ap.add_argument("--per-form", type=int, default=10)
    ap.add_argument("--form-sd", type=float, default=0.15)
    ap.add_argument("--effect", type=float, default=0.0, help="α⁺ − α⁻ (0: null studies)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--visits", type=int, default=24, help="visits per casino (24: CogBench's 96 trials)")
    ap.add_argument("--bias-sims", type=int, default=BIAS_SIMS,
                    help="subjects simulated under the null to correct the MLE's bias (0: the uncorrected test)")
    ap.add_argument("--rows", type=Path, default=None, help="append each replicate's row to this CSV")
    ap.add_argument("--part", default="0/1", help="I/N: every N-th replicate from the I-th")
    ap.add_argument("--summarise", type=Path, default=None, help="summarise the rows of this CSV")
    args = ap.parse_args()
    params = {"alpha_pos": 0.5 + args.effect / 2, "alpha_neg": 0.5 - args.effect / 2, "beta": 5.0}
    design = get_experiment("instrumental-learning").design_cls(visits_per_casino=args.visits)
    spec = FormStudySpec("instrumental-learning", "rw-pm", "rw-pm",
                         FormDesign(tuple(range(args.forms)), {"alpha_pos": args.form_sd}), args.per_form,
                         params, contrast="optimism_bias", design=design, bias_sims=args.bias_sims)
    start = time.perf_counter()
    if args.summarise is not None:
        results = pd.read_csv(args.summarise)
    else:
        part, parts = (int(x) for x in args.part.split("/"))
        seeds = np.random.SeedSequence(args.seed).generate_state(args.studies, dtype=np.uint32)[part::parts]
        rows = []
        for s in seeds:
            rows.append(form_replicate(spec, int(s)))
            if args.rows is not None:
                pd.DataFrame(rows[-1:]).to_csv(args.rows, mode="a", header=not args.rows.exists(), index=False)
        results = pd.DataFrame(rows)
    summary = summarise_form_study(spec, results)
    print(json.dumps({"study": f"rw-pm optimism bias {args.effect}, form SD {args.form_sd} on logit α⁺, "
                      f"{args.forms} forms x {args.per_form} subjects x {4 * args.visits} trials, "
                      f"{len(results)} studies",
                      "seconds": round(time.perf_counter() - start), **summary}), flush=True)


if __name__ == "__main__":
    main()

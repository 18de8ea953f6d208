"""Why a population's hierarchical fit fails its gate on one participant (issue 52): the participant's
MLE (10 starts) and profile negative log-likelihood over one parameter (every other parameter re-fitted
at each value: :func:`cogtestbed.inference.identification.profile_nll`), relative to the MLE.

The participants are those ``build_populations.py NAME`` fits (the seeded subset where it has one).
Two separated low regions mean chains started at the population's centre can reach them at different
times, which more draws do not mend.

    python benchmarks/studies/participant_profile.py shahar2019 --subject 31 --parameter alpha
    python benchmarks/studies/participant_profile.py spektor2024-all --subject 273 --parameter lambda
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_populations as bp  # noqa: E402

import cogtestbed as ct  # noqa: E402
from cogtestbed.inference.identification import profile_nll  # noqa: E402

VALUES = {
    "alpha": (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9, 0.99),
    "lambda": (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0),
    "theta": (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", choices=sorted(bp.POPULATIONS))
    ap.add_argument("--subject", type=int, required=True, help="subject number in the fitted table")
    ap.add_argument("--parameter", required=True, help="the parameter profiled (alpha, lambda, theta: a grid)")
    ap.add_argument("--values", default="", help="comma-separated values (default: the parameter's grid)")
    args = ap.parse_args()
    build = bp.POPULATIONS[args.name]
    table, which = bp.table_of(build, build.subjects)
    assert isinstance(table, pd.DataFrame)
    model = ct.get_experiment(build.experiment).model(build.model)
    subjects = model.subject_data(table)
    if args.subject not in subjects:
        ap.error(f"--subject: {args.subject} is not a subject number of {args.name} (0-{len(subjects) - 1})")
    if args.parameter not in model.parameters.names:
        names = ", ".join(model.parameters.names)
        ap.error(f"--parameter: {args.parameter} is not a parameter of {build.model} ({names})")
    if not args.values and args.parameter not in VALUES:
        ap.error(f"--parameter {args.parameter} has no default grid: give --values")
    data = subjects[args.subject]
    fit = model.fit_subject(data, n_starts=10)
    participant = table.loc[table["subject"] == args.subject, "participant"].iloc[0]
    print(f"{args.name} subject {args.subject} (Psych-201 participant {participant}; {which}), "
          f"{model.n_observations(data)} choices")
    print("MLE " + ", ".join(f"{k} {v:.4g}" for k, v in fit.params.items()) + f"; NLL {fit.nll:.2f}")
    j = model.parameters.names.index(args.parameter)
    values = [float(v) for v in args.values.split(",")] if args.values else VALUES[args.parameter]
    print(f"{args.parameter}  profile NLL - MLE's (nats; the other parameters re-fitted)")
    for v in values:
        print(f"{v:<6} {profile_nll(model, data, j, v, n_starts=20)[0] - fit.nll:8.2f}")


if __name__ == "__main__":
    main()

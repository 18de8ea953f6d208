"""Why ``human:shahar2019`` is not shipped (issue 52): the hybrid model's likelihood of one participant of
the seeded 40-participant subset (``build_populations.py shahar2019``) has two separated regions, which
chains started at the population's centre reach at different times (max R-hat 1.087-1.135).

Prints the participant's MLE (10 starts) and the profile negative log-likelihood over the learning rate
alpha (every other parameter re-fitted at each alpha: :func:`cogtestbed.inference.identification.profile_nll`),
relative to the MLE.

    python benchmarks/studies/shahar_participant_profile.py            # subset participant 31
    python benchmarks/studies/shahar_participant_profile.py --subject 13
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_populations as bp  # noqa: E402

import cogtestbed as ct  # noqa: E402
from cogtestbed.inference.identification import profile_nll  # noqa: E402

ALPHAS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9, 0.99)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subject", type=int, default=31, help="participant of the seeded subset (0-39)")
    args = ap.parse_args()
    build = bp.POPULATIONS["shahar2019"]
    table, which = bp.table_of(build, build.subjects)
    model = ct.get_experiment(build.experiment).model(build.model)
    data = model.subject_data(table)[args.subject]
    fit = model.fit_subject(data, n_starts=10)
    participant = table.loc[table["subject"] == args.subject, "participant"].iloc[0]
    print(f"subset participant {args.subject} (Psych-201 participant {participant}; {which}), "
          f"{model.n_observations(data)} choices")
    print("MLE " + ", ".join(f"{k} {v:.4g}" for k, v in fit.params.items()) + f"; NLL {fit.nll:.2f}")
    j = model.parameters.names.index("alpha")
    print("alpha  profile NLL - MLE's (nats; the other parameters re-fitted)")
    for a in ALPHAS:
        print(f"{a:<6} {profile_nll(model, data, j, a, n_starts=20) - fit.nll:8.2f}")


if __name__ == "__main__":
    main()

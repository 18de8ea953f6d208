"""SmolLM2-135M-Instruct's per-choice NLL on held-out Shahar et al. (2019) participants beside the
hybrid model's (issue 52 item 5; Centaur's measure, Binz et al. 2025).

    PYTHONPATH=. python benchmarks/studies/centaur_nll.py [--held-out 5] [--seed 0] [--train 100]
        [--measurement first|both]

* Data: Psych-201 ``shahar2019twosteptask`` (554 participants, two measurements, ~630 marked
  choices and ~12,900 SmolLM2 tokens each).  The trial table comes from the experiment's
  ``psych201`` importer; the transcripts from the same file.
* Split: ``--held-out`` participants drawn by a seeded generator (``--seed``) from the subject
  numbers in their fixed order (:func:`cogtestbed.inference.heldout.heldout_split`, the draw of
  ``ct.heldout_nll``: one seed holds out the same participants in both); the rest are training
  participants, of which ``--train`` (seeded, all with ``--train 0``) fit the hybrid model by
  pooled MLE (one parameter vector).  The split is printed.
* ``--measurement first`` (the default, for CPU time): only the held-out participants' first
  measurement (at most 120 trials, two choices each: ~240 choices, ~4,900 tokens; one forward pass,
  no window) is scored, by both models; the hybrid is still fitted on every trial of the training
  participants.  ``--measurement both``: whole transcripts (~12,900 tokens); SmolLM2 reads 8,192,
  so each is scored with a sliding window of 8,192 tokens, each choice conditioned on at least
  ``--min-context`` (2,048) tokens before it (two forward passes per participant; not timed
  through this option: ``cogtestbed transcript-nll FILE -p 1 --overflow window --min-context 2048``
  took 404 s for one whole transcript, docs/human-data.md).  The text is fed raw, markers kept, as
  Centaur's evaluation does.
* Printed per held-out participant: SmolLM2's raw NLL (Centaur's: full-vocabulary log-prob of the
  choice token), its NLL renormalised over the two options of each choice, the hybrid model's
  held-out NLL, the task-blind position-bias model's (P(first option) per stage, fitted on the
  same training participants; the reference ``centaur_recovery.py`` shows chance cannot be),
  chance (log 2); then means with 95% t intervals over participants and the paired differences
  (normalised SmolLM2 − hybrid, − position bias; hybrid − position bias).  One JSON line each.
* Both models score the same choices: a held-out participant whose SmolLM2 choice count (marked
  choices in the transcript) differs from the hybrid's (choices in the trial table), or who is
  missing from either, stops the script with one line before anything per participant is printed
  (:func:`check_same_choices`).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cogtestbed.api.transcripts import participant_nll, transcript_nll
from cogtestbed.data.psych201 import read_records
from cogtestbed.inference.heldout import heldout_split, paired_comparison, pooled_fit, subject_nll
from cogtestbed.inference.twostep import position_bias_fit, position_bias_nll
from cogtestbed.llm_adapters.runs.transcript import shahar2019_options
from cogtestbed.registry import get_experiment

SECOND = "\n\nYou are now back 18 months later"
DATA = Path(__file__).resolve().parents[3] / "shared/data/psych201/shahar2019twosteptask/prompts.jsonl.zip"


def t_interval(values: np.ndarray) -> list[float] | None:
    from scipy import stats

    v = values[~np.isnan(values)]
    if v.size < 2:
        return None
    half = float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return [round(float(v.mean()) - half, 4), round(float(v.mean()) + half, 4)]


def check_same_choices(scored: pd.DataFrame, held_out: list[str]) -> None:
    """Exit with one line unless every held-out participant is in ``scored`` (the merge of SmolLM2's
    per-participant table with the hybrid's) with equal choice counts, ``n_choices_llm`` (marked
    choices of the transcript) and ``n_choices_hybrid`` (choices of the trial table)."""
    missing = sorted(set(held_out) - set(scored["participant"].astype(str)), key=str)
    differ = scored[scored["n_choices_llm"] != scored["n_choices_hybrid"]]
    if missing:
        raise SystemExit(
            f"centaur_nll: held-out participant(s) {', '.join(missing)} scored by only one of "
            "SmolLM2 and the hybrid model"
        )
    if len(differ):
        bad = ", ".join(f"{r.participant} ({r.n_choices_llm} vs {r.n_choices_hybrid})" for r in differ.itertuples())
        raise SystemExit(
            f"centaur_nll: SmolLM2 and the hybrid model scored different choice counts for participant(s) "
            f"{bad}: the transcript and the trial table disagree"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--held-out", type=int, default=5)
    ap.add_argument("--measurement", choices=("first", "both"), default="first")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train", type=int, default=100, help="training participants the hybrid is fitted to (0: all)")
    ap.add_argument("--min-context", type=int, default=2048)
    ap.add_argument("--data", default=str(DATA))
    args = ap.parse_args()

    exp = get_experiment("two-step")
    table = exp.importer("psych201").load(Path(args.data))
    # drawn over the subject numbers, as ct.heldout_nll draws it, so one seed holds out the same people
    participant_of = {s: str(p) for p, s in table.groupby("participant")["subject"].first().items()}
    train_subjects, test_subjects = heldout_split(list(participant_of), args.held_out, args.seed)
    train_ids = [participant_of[s] for s in train_subjects]
    test_ids = [participant_of[s] for s in test_subjects]
    if args.train:
        pick = np.random.default_rng(args.seed + 1).choice(
            len(train_ids), size=min(args.train, len(train_ids)), replace=False
        )
        train_ids = [train_ids[i] for i in sorted(pick)]
    print(
        json.dumps(
            {
                "split": {
                    "seed": args.seed,
                    "held_out": test_ids,
                    "n_train_fitted": len(train_ids),
                    "n_participants": len(participant_of),
                    "measurement": args.measurement,
                }
            }
        ),
        flush=True,
    )

    model = exp.model("hybrid")
    start = time.perf_counter()
    fit = pooled_fit(model, table[table["participant"].isin(train_ids)], n_starts=3)
    print(
        json.dumps(
            {
                "hybrid_pooled_fit": {k: round(v, 4) for k, v in fit.params.items()},
                "train_nll_per_choice": round(fit.nll / fit.n_obs, 4),
                "converged": fit.converged,
                "seconds": round(time.perf_counter() - start, 1),
            }
        ),
        flush=True,
    )
    scored = table[table["participant"].isin(test_ids)]
    records = [(r.participant, r.text) for r in read_records(args.data) if r.participant in set(test_ids)]
    if args.measurement == "first":  # the generator's sentence that opens the second measurement
        scored = scored[scored["session"] == 0]
        records = [(p, text.split(SECOND, 1)[0]) for p, text in records]
    held = subject_nll(model, fit.params, scored)
    bias = position_bias_fit(table[table["participant"].isin(train_ids)])
    held["position_bias"] = position_bias_nll(scored, bias)["nll_per_choice"].to_numpy()
    held["participant"] = held["subject"].map(participant_of)
    print(json.dumps({"position_bias_fit": [round(b, 4) for b in bias]}), flush=True)
    choices = transcript_nll(
        "hf:smollm2-135m", records, options=shahar2019_options, overflow="window", min_context=args.min_context,
        measures=["choice"],  # the per-choice measure only, as the study has always printed (issue 70 added psych201)
    )
    llm = participant_nll(choices).merge(
        held[["participant", "nll_per_choice", "n_choices", "position_bias"]],
        on="participant",
        suffixes=("_llm", "_hybrid"),
    )
    check_same_choices(llm, test_ids)
    for _, row in llm.iterrows():
        print(
            json.dumps(
                {
                    "participant": row["participant"],
                    "choices": int(row["n_choices_llm"]),
                    "hybrid_choices": int(row["n_choices_hybrid"]),
                    "smollm2_raw": round(row["nll_raw"], 4),
                    "smollm2_norm": round(row["nll_norm"], 4),
                    "hybrid": round(row["nll_per_choice"], 4),
                    "position_bias": round(row["position_bias"], 4),
                    "chance": round(math.log(2), 4),
                    "seconds": round(row["seconds"], 1),
                }
            ),
            flush=True,
        )
    summary = {
        name: {"mean": round(float(llm[col].mean()), 4), "ci95": t_interval(llm[col].to_numpy(float))}
        for name, col in (
            ("smollm2_raw", "nll_raw"),
            ("smollm2_norm", "nll_norm"),
            ("hybrid", "nll_per_choice"),
            ("position_bias", "position_bias"),
        )
    }
    by = llm.set_index("participant")
    diffs = {
        f"{a}_minus_{b}": paired_comparison(by[ca], by[cb])
        for a, ca, b, cb in (
            ("smollm2_norm", "nll_norm", "hybrid", "nll_per_choice"),
            ("smollm2_norm", "nll_norm", "position_bias", "position_bias"),
            ("hybrid", "nll_per_choice", "position_bias", "position_bias"),
        )
    }
    print(
        json.dumps(
            {
                "summary_nats_per_choice": summary,
                **diffs,
                "seconds_per_participant": round(float(np.mean(list(choices.attrs["seconds"].values()))), 1),
                "unscored_choices": int(choices["logp_raw"].isna().sum()),
            },
            default=str,
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()

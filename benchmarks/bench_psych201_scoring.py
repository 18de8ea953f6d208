"""Scoring Psych-201 data sets with SmolLM2-135M, the original path and today's side by side on the
same transcripts (issue 70, item 5):

* ``original`` — ``transcript-nll`` as it was before issue 70: one participant at a time, the
  per-choice measure only (:func:`cogtestbed.llm_adapters.runs.transcript.transcript_nll`, one
  teacher-forced pass per transcript, ``overflow="truncate"``);
* ``one_pass`` — ``ct.transcript_nll`` with all three measures (Psych-201's summed span NLL,
  Centaur's per-response average, the per-choice NLL): one pass per participant for every measure,
  participants sharing their opening batched over its key-value cache;
* ``one_pass_onednn`` (``--onednn``) — the same with the linear layers through oneDNN's packed
  float32 kernels (``onednn=True``).

The paths alternate within each round (the order flips every round), on the same participants.
Per data set and path it prints one JSON line (seconds per participant, wall clock and process CPU) and at the end
the ratio original / new per round and data set (mean, min, max), the projected time for 300
participants, the largest difference per participant between the paths' per-choice NLL (nats), between
``--onednn``'s Psych-201 measure and the default's, and,
with ``--check-plain``, between the Psych-201 measure and a plain one-pass implementation of the
evaluation script (tests/test_psych201_eval.py).  CPU; say the load (printed) with any figure.

    PYTHONPATH=. python benchmarks/bench_psych201_scoring.py --participants 2 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PSYCH201 = ROOT.parent / "shared" / "data" / "psych201"
DATA_SETS = ("franke2024bayesian", "busch2024_stroop", "thoma2025problearn")


def _original(client: Any, records: list[Any]) -> dict[str, float]:
    """The per-choice NLL (mean over scored choices) per participant, the pre-issue-70 way."""
    from cogtestbed.llm_adapters.runs.transcript import OPTION_SETS, transcript_nll

    out = {}
    for rec in records:
        table = transcript_nll(client, rec.text, options=OPTION_SETS.get(rec.data_set), overflow="truncate")
        out[rec.label] = float(-table["logp_raw"].dropna().mean())
    return out


def _one_pass(client: Any, records: list[Any], max_length: int, onednn: bool) -> Any:
    import cogtestbed as ct

    choices = ct.transcript_nll(client, records, overflow="truncate", max_length=max_length,
                                **({"onednn": True} if onednn else {}))
    summary = ct.participant_nll(choices)
    from cogtestbed.data.psych201 import record_label

    summary.index = summary["record"].map(record_label) + ":" + summary["participant"].astype(str)
    return summary


def _spread(values: list[float]) -> dict[str, float]:
    return {"mean": round(sum(values) / len(values), 2), "min": round(min(values), 2), "max": round(max(values), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-sets", nargs="+", default=list(DATA_SETS))
    parser.add_argument("--participants", type=int, default=2, help="per data set (the first in the file)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=32768)
    parser.add_argument("--onednn", action="store_true", help="also time one_pass_onednn")
    parser.add_argument("--check-plain", action="store_true", help="compare psych201_nll with a plain pass (slow)")
    args = parser.parse_args()

    from cogtestbed.data.psych201 import read_records
    from cogtestbed.llm_adapters import make_client

    client = make_client("hf:smollm2-135m", mode="completions")
    data = {d: read_records(PSYCH201 / d / "prompts.jsonl.zip")[:args.participants] for d in args.data_sets}
    paths = ["original", "one_pass", *(["one_pass_onednn"] if args.onednn else [])]
    common = {"bench": "psych201 scoring, SmolLM2-135M, CPU", "torch_threads": client.threads,
              "load_1min_at_start": round(os.getloadavg()[0], 1)}
    seconds: dict[tuple[str, str], list[float]] = {}
    cpu_seconds: dict[tuple[str, str], list[float]] = {}
    results: dict[tuple[str, str], Any] = {}
    for r in range(args.rounds):
        for d, records in data.items():
            for path in (paths if r % 2 == 0 else paths[::-1]):
                start, cpu = time.perf_counter(), time.process_time()
                results[d, path] = (_original(client, records) if path == "original" else
                                    _one_pass(client, records, args.max_length, path.endswith("onednn")))
                per = (time.perf_counter() - start) / len(records)
                per_cpu = (time.process_time() - cpu) / len(records)
                seconds.setdefault((d, path), []).append(per)
                cpu_seconds.setdefault((d, path), []).append(per_cpu)
                print(json.dumps({**common, "round": r, "data_set": d, "path": path, "participants": len(records),
                                  "seconds_per_participant": round(per, 3),
                                  "cpu_seconds_per_participant": round(per_cpu, 3),
                                  "load_1min": round(os.getloadavg()[0], 1)}), flush=True)
    summary: dict[str, Any] = {**common, "load_1min_at_end": round(os.getloadavg()[0], 1), "data_sets": {}}
    for d, records in data.items():
        row: dict[str, Any] = {"tokens_per_participant": round(sum(len(client.tokenizer(x.text)["input_ids"])
                                                                   for x in records) / len(records))}
        base = seconds[d, "original"]
        for path in paths[1:]:
            ratios = [b / n for b, n in zip(base, seconds[d, path], strict=True)]
            per = sum(seconds[d, path]) / len(seconds[d, path])
            table = results[d, path]
            diff = max(abs(table.loc[k, "nll_raw"] - v) for k, v in results[d, "original"].items())
            cpu_ratios = [b / n for b, n in zip(cpu_seconds[d, "original"], cpu_seconds[d, path], strict=True)]
            row[path] = {"seconds_per_participant": round(per, 3), "ratio": _spread(ratios),
                         "cpu_ratio": _spread(cpu_ratios),
                         "minutes_for_300": round(300 * per / 60, 1), "max_abs_diff_nll_raw": float(diff)}
            if path != "one_pass":  # the same measure, other kernels
                row[path]["max_abs_diff_psych201_vs_one_pass"] = float(
                    (table["psych201_nll"] - results[d, "one_pass"]["psych201_nll"]).abs().max())
            if args.check_plain:
                sys.path.insert(0, str(ROOT / "tests"))
                from test_psych201_eval import independent_span_nll

                row[path]["max_abs_diff_psych201_vs_plain"] = float(max(
                    abs(table.loc[x.label, "psych201_nll"] - sum(independent_span_nll(
                        client.hf_model, client.tokenizer, x.text, args.max_length))) for x in records))
        row["original"] = {"seconds_per_participant": round(sum(base) / len(base), 3),
                           "minutes_for_300": round(300 * sum(base) / len(base) / 60, 1)}
        summary["data_sets"][d] = row
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()

"""Scoring a Psych-201 data set with SmolLM2-135M, side by side on the same transcripts (issue 70):

* ``today_per_choice`` — ``transcript-nll`` as it was before issue 70: one participant at a time, the
  per-choice measure (``measures=["choice"]``; one teacher-forced pass per transcript);
* ``plain_eval`` — Psych-201's measure the way its script computes it: one plain forward pass per
  participant, every position's logits, cross-entropy (the test's independent implementation);
* ``batched`` — this package's Psych-201 measure: participants sharing their opening tokens
  batched over one key-value cache, only the span rows through the output layer
  (``measures=["psych201"]``);
* ``batched_no_prefix`` — the same with ``share_prefix=False`` (what the cache reuse adds).

Prints one JSON line per path (seconds per participant, wall and process CPU) and the ratios.  CPU
only; the machine's load changes the wall clock, process CPU time less so.

    PYTHONPATH=. python benchmarks/bench_psych201_scoring.py --data-set franke2024bayesian --participants 8
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PSYCH201 = ROOT.parent / "shared" / "data" / "psych201"


def _plain_eval(client: Any, texts: list[str], max_length: int) -> list[float]:
    """Psych-201's measure by one plain forward pass per participant (tests/test_psych201_eval.py)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_psych201_eval import independent_span_nll

    return [sum(independent_span_nll(client.hf_model, client.tokenizer, t, max_length)) for t in texts]


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-set", default="franke2024bayesian")
    parser.add_argument("--participants", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=32768)
    parser.add_argument("--skip-plain", action="store_true", help="leave out the plain forward passes (slow)")
    args = parser.parse_args()

    import cogtestbed as ct
    from cogtestbed.data.psych201 import read_records
    from cogtestbed.llm_adapters import make_client

    path = PSYCH201 / args.data_set / "prompts.jsonl.zip"
    records = read_records(path)[:args.participants]
    labels = [r.label for r in records]
    client = make_client("hf:smollm2-135m", mode="completions")
    n = len(records)
    tokens = sum(len(client.tokenizer(r.text[:args.max_length])["input_ids"]) for r in records)
    common = {"bench": "psych201 scoring, SmolLM2-135M, CPU", "data_set": args.data_set, "participants": n,
              "tokens": tokens, "torch_threads": client.threads}
    results: dict[str, tuple[float, float]] = {}

    def run(name: str, fn: Callable[[], Any]) -> Any:
        out, wall, cpu = _timed(fn)
        results[name] = (wall, cpu)
        print(json.dumps({**common, "path": name, "seconds_per_participant": round(wall / n, 3),
                          "cpu_seconds_per_participant": round(cpu / n, 3)}), flush=True)
        return out

    run("today_per_choice", lambda: ct.transcript_nll(client, path, participants=labels, measures=["choice"],
                                                      overflow="truncate"))
    if not args.skip_plain:
        plain = run("plain_eval", lambda: _plain_eval(client, [r.text for r in records], args.max_length))
    batched = run("batched", lambda: ct.transcript_nll(client, path, participants=labels, measures=["psych201"],
                                                       max_length=args.max_length))
    run("batched_no_prefix", lambda: ct.transcript_nll(client, path, participants=labels, measures=["psych201"],
                                                       max_length=args.max_length, share_prefix=False))
    summary = ct.participant_nll(batched)
    out = {**common, "speedup_vs_today": round(results["today_per_choice"][0] / results["batched"][0], 2),
           "cpu_speedup_vs_today": round(results["today_per_choice"][1] / results["batched"][1], 2),
           "prefix_gain": round(results["batched_no_prefix"][0] / results["batched"][0], 2)}
    if not args.skip_plain:
        out["speedup_vs_plain_eval"] = round(results["plain_eval"][0] / results["batched"][0], 2)
        from cogtestbed.data.psych201 import record_label

        ours = dict(zip(summary["record"].map(record_label) + ":" + summary["participant"], summary["psych201_nll"],
                        strict=True))
        out["max_abs_diff_vs_plain"] = float(max(abs(ours[k] - v) for k, v in zip(labels, plain, strict=True)))
    print(json.dumps(out))


if __name__ == "__main__":
    main()

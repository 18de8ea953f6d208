"""hf:smollm2-135m through every registered experiment: the figures of docs/real-model.md.

    python benchmarks/real_model.py                  # every experiment, both modes, + speed figures
    python benchmarks/real_model.py --only two-step  # one experiment
    python benchmarks/real_model.py --convert        # also time a first conversion (into a temp dir)

Prints, per experiment and mode, one short session's valid-answer rate, what the parsers rejected
(reason, count, one example answer), tokens per call, calls per second and whether the experiment's
metrics could be computed from that session; then the reload time of the converted copy and calls
per second of one CogBench session in-process and through the local OpenAI-compatible server.
Sessions: :data:`cogtestbed.runs.real_model.SHORT_DESIGNS`, seed 0, greedy, 8 tokens, stop at
a newline (``cogtestbed run``'s defaults).  Wall-clock figures depend on the machine and its load:
the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SPEED_EXPERIMENT = "instrumental-learning"


def sessions(client: Any, names: list[str], work: Path) -> list[dict[str, Any]]:
    from cogtestbed.runs.real_model import metrics_of, run_session, supported_modes

    rows = []
    for name in names:
        for mode in supported_modes(name):
            result, summary = run_session(client.with_chat(mode == "chat"), name, mode, work / f"{name}-{mode}",
                                          work / "cache.sqlite")
            metrics, reason = metrics_of(name, result.trials)
            row = {**summary.as_json(), "metrics": metrics, "metrics_reason": reason}
            print(json.dumps(row, default=str), flush=True)
            rows.append(row)
    return rows


def speed(client: Any, work: Path) -> dict[str, Any]:
    """Calls per second of one CogBench session (completions), in-process and through the server."""
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient
    from cogtestbed.llm_adapters.servers.server import serve
    from cogtestbed.runs.real_model import run_session

    raw = client.with_chat(False)
    _, here = run_session(raw, SPEED_EXPERIMENT, "completions", work / "speed-in", work / "speed-in.sqlite")
    with serve({"smollm2-135m": client}) as url:
        remote = OpenAIClient("smollm2-135m", base_url=url, mode="completions")
        _, there = run_session(remote, SPEED_EXPERIMENT, "completions", work / "speed-http",
                               work / "speed-http.sqlite", transport="server")
    return {"experiment": SPEED_EXPERIMENT, "calls": here.calls,
            "in_process_calls_per_s": here.calls_per_second, "server_calls_per_s": there.calls_per_second,
            "load_average": os.getloadavg()}


def reload_seconds(repeats: int = 5) -> dict[str, Any]:
    """Best and median of ``repeats`` loads of the converted copy (tokenizer + weights)."""
    import statistics

    from cogtestbed.llm_adapters.clients.hf import HFClient

    HFClient.smollm2()  # imports and the first read off disk
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        HFClient.smollm2()
        times.append(time.perf_counter() - start)
    return {"reload_best_s": round(min(times), 3), "reload_median_s": round(statistics.median(times), 3),
            "load_average": os.getloadavg()}


def convert_seconds() -> float:
    """A first conversion, into a fresh temporary cache."""
    from cogtestbed.llm_adapters.clients.smollm2 import ensure_converted

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        ensure_converted(Path(tmp))
        return round(time.perf_counter() - start, 1)


def markdown(rows: list[dict[str, Any]]) -> str:
    out = ["| experiment | mode | trials | valid | calls/s | prompt tok/call | rejected (count × reason: example) | "
           "metrics from one session |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rejected = "<br>".join(f"{n} × {reason}: `{r['examples'].get(reason, '')!r}`"
                               for reason, n in r["parse_reasons"].items()) or "—"
        metrics = "yes" if r["metrics"] is not None else f"no ({r['metrics_reason']})"
        valid = "—" if r["valid_rate"] is None else f"{r['valid_rate']:.0%} ({r['valid_trials']}/{r['trials']})"
        out.append(f"| {r['experiment']} | {r['mode']} | {r['trials']} | {valid} | {r['calls_per_second']} | "
                   f"{r['prompt_tokens_per_call']} | {rejected} | {metrics} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", action="append", help="experiment (repeatable; default: all)")
    parser.add_argument("--convert", action="store_true", help="also time a first conversion")
    parser.add_argument("--no-speed", action="store_true", help="skip the reload and calls/s figures")
    args = parser.parse_args(argv)
    from cogtestbed.llm_adapters.clients.hf import HFClient
    from cogtestbed.registry import experiment_names

    names = args.only or list(experiment_names())
    if args.convert:
        print(json.dumps({"first_conversion_s": convert_seconds()}), flush=True)
    client = HFClient.smollm2()
    with tempfile.TemporaryDirectory() as tmp:
        rows = sessions(client, names, Path(tmp))
        if not args.no_speed:
            print(json.dumps(reload_seconds()), flush=True)
            print(json.dumps(speed(client, Path(tmp))), flush=True)
    print(markdown(rows))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

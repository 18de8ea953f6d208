"""Every HTTP request is a call (issue 30): runs on the local OpenAI-compatible server
(:mod:`cogtestbed.llm_adapters.servers.server`, 127.0.0.1 only, the tiny random models) compared with the
server's own tally of requests and billed usage (:class:`~cogtestbed.llm_adapters.servers.server.Billing`).

Part 1, accounting: for each experiment and mode (exact scoring over completions, sampling over
chat, a completions server that returns no log-probabilities, images), the dry run's calls against
the HTTP requests the server received, and the run's settled cost (run.json) against the usage the
server billed, at an example price.

Part 2, caps: seeded ``--max-calls`` / ``--max-cost`` runs of the three newest families
(belief-coherence, magnitude, revealed-belief) with injected faults (503s, dropped connections) and
a server without log-probabilities: how many end above their cap, counted in the requests the server
answered (billed: a faulted request is answered with an error and bills nothing, so it is no call) and in
server-billed usage (the target is 0).

    PYTHONPATH=. python benchmarks/studies/http_accounting.py            # both parts, full
    PYTHONPATH=. python benchmarks/studies/http_accounting.py --quick    # a few runs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Example price of the served tiny models (USD per million tokens): large, so cents show.
PRICE_IN, PRICE_OUT = 1000.0, 2000.0
PRICES = "".join(f'["openai:{m}*"]\ninput = {PRICE_IN}\noutput = {PRICE_OUT}\n' for m in ("tiny-random", "smollm2"))

#: Small designs of each experiment (a subject is a few dozen requests at most).
DESIGNS: dict[str, tuple[str, ...]] = {
    "revealed-belief": ("scenarios=choice", "variants=regular", "choice_options=2,6", "n_samples=3"),
    "magnitude": ("task=line-ratio", "conditions=base", "modalities=image,text+image", "ranges=short",
                  "trials_per_session=2"),
    "belief-coherence": ("n_contexts=2", "n_reps=1"),
    "two-step": ("n_days=4",),
    "collider": ("scope=cell",),
}
#: The real model's runs (SmolLM2-135M-Instruct behind the same server): its answers stop before
#: --max-tokens, so billed completion tokens fall below the dry run's ceiling.
SMOLLM2_MODES = (("belief-coherence", "chat"), ("collider", "chat"), ("revealed-belief", "completions"))
_LOADED: dict[str, Any] = {}


@dataclass
class Served:
    url: str
    billing: Any
    faults: Any


@contextlib.contextmanager
def local_server(logprobs: bool = True, fault_rate: float = 0.0, drop: bool = False, seed: int = 0,
                 smollm2: bool = False) -> Iterator[Served]:
    """The tiny models behind the local server (127.0.0.1), with a billing tally and faults."""
    from cogtestbed.llm_adapters.clients.hf import HFClient
    from cogtestbed.llm_adapters.servers.server import Billing, Fault, FaultInjector, serve

    if not _LOADED:
        _LOADED.update({"tiny-random": HFClient.tiny_random(), "tiny-random-chat": HFClient.tiny_random(chat=True),
                        "tiny-random-vlm": HFClient.tiny_random_vlm()})
    if smollm2 and "smollm2-135m" not in _LOADED:
        _LOADED["smollm2-135m"] = HFClient.smollm2()
    models = dict(_LOADED)
    billing = Billing(logprobs=logprobs)
    faults = FaultInjector(fault_rate, Fault("drop") if drop else Fault("status", 503, retry_after=0), seed)
    with serve(models, faults, billing=billing) as url:
        yield Served(url, billing, faults)


def cli(args: list[str]) -> tuple[int, str]:
    """Run the command line in-process; (exit status, stdout)."""
    from typer.testing import CliRunner

    from cogtestbed.cli import app

    res = CliRunner().invoke(app, args)
    return res.exit_code, res.stdout


def run_args(experiment: str, mode: str, url: str, out: Path, subjects: int, seed: int,
             real: bool = False) -> list[str]:
    model = "smollm2-135m" if real else {"chat": "tiny-random-chat", "completions": "tiny-random"}[mode]
    if experiment == "magnitude" and not real:
        model, mode = "tiny-random-vlm", "chat"
    args = ["run", experiment, "--llm", f"openai:{model}", "--mode", mode, "--base-url", url,
            "--subjects", str(subjects), "--seed", str(seed), "-o", str(out), "--retry-for", "30"]
    for d in DESIGNS.get(experiment, ()):
        args += ["--design", d]
    return args


def billed_usd(billing: Any) -> float:
    return (billing.prompt_tokens * PRICE_IN + billing.completion_tokens * PRICE_OUT) / 1e6


def accounting_row(experiment: str, mode: str, root: Path, logprobs: bool = True, real: bool = False
                   ) -> dict[str, Any]:
    """One run without faults: dry-run calls and cost, HTTP requests and billed usage, run.json's."""
    with local_server(logprobs=logprobs, smollm2=real) as s:
        base = run_args(experiment, mode, s.url, root / "dry", 2, 0, real)
        code, out = cli([*base, "--dry-run"])
        if code != 0:
            return {"experiment": experiment, "mode": mode, "error": f"dry run exit {code}"}
        dry = json.loads(out)
        code, _ = cli(run_args(experiment, mode, s.url, root / "run", 2, 0, real))
        run = json.loads((root / "run" / "run.json").read_text())
        stats = run.get("stats") or {}
        return {"experiment": experiment, "model": "smollm2" if real else "tiny",
                "mode": mode + ("" if logprobs else ", no logprobs"),
                "exit": code, "scoring": (run.get("scoring") or {}).get("method"),
                "dry_calls": dry["calls"], "dry_calls_if_no_scoring":
                    (dry.get("if_the_server_cannot_score") or {}).get("calls"),
                "dry_usd_if_no_scoring": (dry.get("if_the_server_cannot_score") or {}).get("estimated_cost_usd"),
                "dry_calls_if_all_invalid": dry.get("calls_if_every_answer_is_invalid"),
                "http_requests": s.billing.requests, "run_calls": stats.get("total_calls"),
                "prompts_fixed": dry["prompts_are_the_runs"], "dry_prompt_tokens": dry["prompt_tokens"],
                "billed_prompt_tokens": s.billing.prompt_tokens,
                "dry_max_completion": dry["max_completion_tokens"],
                "billed_completion": s.billing.completion_tokens, "token_counts": dry["token_counts"].split(":")[0],
                "dry_usd": dry.get("estimated_cost_usd"), "dry_max_usd": dry.get("max_cost_usd"),
                "billed_usd": round(billed_usd(s.billing), 6),
                "run_usd": stats.get("total_cost_usd"), "retries": stats.get("retries")}


def cap_row(experiment: str, mode: str, root: Path, seed: int, cap: str, value: float, fault: str
            ) -> dict[str, Any]:
    """One capped run with faults: requests and billed usage against the cap."""
    with local_server(logprobs=fault != "no-logprobs", fault_rate=0.0 if fault == "no-logprobs" else 0.2,
                      drop=fault == "drop", seed=seed) as s:
        args = [*run_args(experiment, mode, s.url, root / f"cap-{seed}", 3, seed),
                f"--max-{cap}", f"{value:g}"]
        code, _ = cli(args)
        run_json = root / f"cap-{seed}" / "run.json"
        stats = json.loads(run_json.read_text()).get("stats") or {} if run_json.exists() else {}
        usd = billed_usd(s.billing)
        over = (s.billing.answered > value) if cap == "calls" else (usd > value + 1e-12)
        return {"experiment": experiment, "mode": mode, "fault": fault, "seed": seed, "cap": f"max-{cap}={value:g}",
                "exit": code, "http_requests": s.billing.requests, "billed_requests": s.billing.answered,
                "billed_usd": round(usd, 6),
                "retries": stats.get("retries"), "subjects_complete": stats.get("subjects_complete"),
                "over_cap": bool(over)}


def cap_runs(quick: bool) -> list[tuple[str, str, int, str, float, str]]:
    """(experiment, mode, seed, cap kind, cap, fault) of the seeded capped runs."""
    plan = []
    families = [("revealed-belief", "completions"), ("revealed-belief", "chat"), ("magnitude", "chat"),
                ("belief-coherence", "completions")]
    faults = ["503", "drop", "no-logprobs"]
    seed = 0
    for experiment, mode in families:
        for fault in faults:
            if fault == "no-logprobs" and mode != "completions":
                continue
            for cap, value in (("calls", 30.0), ("cost", 15.0)):
                plan.append((experiment, mode, seed, cap, value, fault))
                seed += 1
    return plan[:3] if quick else plan


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few runs (the default test suite's)")
    args = parser.parse_args(argv)
    import pandas as pd

    saved = {k: os.environ.get(k) for k in ("COGTESTBED_PRICES", "COGTESTBED_CACHE")}
    try:
        rows, caps = _runs(args.quick)
    finally:  # the environment as it was (the temporary files are gone)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print("accounting (no faults, 2 subjects; price in/out $1000/$2000 per Mtok):")
        print(pd.DataFrame(rows).to_string(index=False))
        print(f"\ncapped runs with faults ({len(caps)}):")
        print(pd.DataFrame(caps).to_string(index=False))
        print(f"\nover their cap (billed requests / billed usage): {sum(c['over_cap'] for c in caps)} of {len(caps)}")
    return {"accounting": rows, "caps": caps}


def _runs(quick: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        prices = root / "prices.toml"
        prices.write_text(PRICES)
        os.environ["COGTESTBED_PRICES"] = str(prices)
        os.environ["COGTESTBED_CACHE"] = str(root / "cache.sqlite")
        modes = [("revealed-belief", "completions", True, False), ("revealed-belief", "chat", True, False),
                 ("revealed-belief", "completions", False, False), ("magnitude", "chat", True, False),
                 ("belief-coherence", "completions", True, False), ("belief-coherence", "chat", True, False),
                 ("collider", "completions", True, False), ("collider", "chat", True, False),
                 ("two-step", "completions", True, False), ("two-step", "chat", True, False),
                 *((e, m, True, True) for e, m in SMOLLM2_MODES)]
        if quick:
            modes = modes[:3]
        rows = []
        for i, (experiment, mode, logprobs, real) in enumerate(modes):
            os.environ["COGTESTBED_CACHE"] = str(root / f"cache-a{i}.sqlite")
            rows.append(accounting_row(experiment, mode, root / f"a{i}", logprobs, real))
        caps = []
        for i, (experiment, mode, seed, cap, value, fault) in enumerate(cap_runs(quick)):
            os.environ["COGTESTBED_CACHE"] = str(root / f"cache-c{i}.sqlite")
            caps.append(cap_row(experiment, mode, root / f"c{i}", seed, cap, value, fault))
    return rows, caps


if __name__ == "__main__":
    main()

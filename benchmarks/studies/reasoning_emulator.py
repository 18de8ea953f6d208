"""Reasoning models against the project's emulator (issue 49): every experiment family, the ledger against
the server's bill, and a plan priced from a 1-session pilot against a 5-session run.

The server (:mod:`cogtestbed.llm_adapters.servers.server`) serves ``o3`` acting as OpenAI's o3
(:mod:`cogtestbed.llm_adapters.servers.emulators.reasoning`: refuses every field the capability table says o3
refuses, with OpenAI's 400; bills hidden reasoning tokens; answers in the form the prompt asks for).

Part 1: one session of every experiment family (the conformance suite's small design, shrunk where it
is large) run as ``openai:o3``: status, share of valid answers, requests the server refused (a refused
field would be one), and the run's ledger (``spend.jsonl``) against what the server billed: prompt,
completion and hidden reasoning tokens.

Part 2: a 1-session pilot of instrumental-learning, the plan's pricer
(:class:`~cogtestbed.planning.pricing.Pricer`, what ``cogtestbed plan`` prices with) fed the pilot's
completion tokens per call, its predicted cost of a 5-session run with another seed, and that run's
billed cost at o3's price.

    python benchmarks/studies/reasoning_emulator.py [--families a,b] [--skip-families]
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import cogtestbed as ct
from cogtestbed.conformance.suite import CheckConfig, small_design
from cogtestbed.llm_adapters.clients.hf import HFClient
from cogtestbed.llm_adapters.clients.prices import PriceTable
from cogtestbed.llm_adapters.middleware.limits import read_ledger
from cogtestbed.llm_adapters.runs.hidden_tokens import from_pilot
from cogtestbed.llm_adapters.servers.emulators.reasoning import ReasoningModel, format_answer
from cogtestbed.llm_adapters.servers.server import Billing, serve
from cogtestbed.registry import get_experiment

FAMILIES = ("bart", "belief-coherence", "collider", "horizon", "instrumental-learning", "magnitude",
            "probabilistic-reasoning", "restless-bandit", "revealed-belief", "temporal-discounting", "two-step")
#: Where the conformance suite's small design is large (or shows images to a text model), smaller.
SHRINK: dict[str, dict[str, Any]] = {
    "revealed-belief": {"scenarios": ["dice"], "variants": ["regular"], "dice_faces": [6], "n_dice": [1],
                        "n_samples": 5},
    "magnitude": {"modalities": ["text"], "conditions": ["base"]},
}
LLM = "openai:o3"


def design_items(name: str) -> dict[str, Any]:
    fields = small_design(get_experiment(name), CheckConfig()).model_dump(mode="json")
    fields.update(SHRINK.get(name, {}))
    return {k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in fields.items() if v is not None}


def run_one(model: HFClient, name: str, out: Path, subjects: int, seed: int, design: dict[str, Any] | None,
            cache: Path) -> tuple[Any, Billing]:
    billing = Billing()
    with serve({"o3": model}, billing=billing, reasoning={"o3": ReasoningModel(answer=format_answer)}) as url:
        result = ct.run(name, llm=LLM, output=out, base_url=url, subjects=subjects, seed=seed, cache=cache,
                        design=design)
    return result, billing


def families(model: HFClient, names: list[str], root: Path) -> None:
    print("family | status | valid | refused requests | ledger prompt/completion/reasoning | billed | equal")
    for name in names:
        t = time.monotonic()
        result, billing = run_one(model, name, root / name, 1, 0, design_items(name), root / "cache.sqlite")
        spend = read_ledger((root / name / "spend.jsonl").read_text().splitlines())
        ledger = (spend.prompt_tokens, spend.completion_tokens, spend.reasoning_tokens)
        billed = (billing.prompt_tokens, billing.completion_tokens, billing.reasoning_tokens)
        valid = result.trials["valid"].astype(bool)
        print(f"{name} | {result.status} | {valid.sum()}/{len(valid)} | {billing.requests - billing.answered} | "
              f"{'/'.join(map(str, ledger))} | {'/'.join(map(str, billed))} | {ledger == billed} "
              f"({time.monotonic() - t:.1f} s)", flush=True)


def pilot_vs_run(model: HFClient, root: Path, n: int = 5) -> None:
    from cogtestbed.planning.pricing import Pricer

    name = "instrumental-learning"
    exp = get_experiment(name)
    run_one(model, name, root / "pilot", 1, 0, None, root / "cache-pilot.sqlite")
    hidden = from_pilot(root / "pilot", LLM)
    design = exp.env_cls.design_cls()
    predicted = Pricer(exp, (LLM,), seed=1, hidden=hidden).exact(design, n)
    result, billing = run_one(model, name, root / "run", n, 1, None, root / "cache-run.sqlite")
    price = PriceTable().lookup(LLM)
    assert price is not None
    actual = price.cost(billing.prompt_tokens, billing.completion_tokens)
    assert predicted.dollars is not None and predicted.dollars_range is not None
    err = predicted.dollars / actual - 1
    per_call = hidden.per_call("text")
    print(f"pilot: 1 session, {per_call.calls} calls, {per_call.mean:.1f} completion tokens per call "
          f"(95% interval {per_call.low:.1f}-{per_call.high:.1f}; {per_call.reasoning_mean} hidden)")
    print(f"plan for {n} sessions (seed 1): ${predicted.dollars:.4f} (range ${predicted.dollars_range[0]:.4f}-"
          f"${predicted.dollars_range[1]:.4f}); {predicted.calls} calls, {predicted.prompt_tokens} prompt tokens "
          f"(estimated at 4 characters a token; {predicted.per_llm[0]['reasoning'].get('prompt_tokens_calibrated')} "
          "re-priced at the pilot's billed tokens per character)")
    print(f"run of {n} sessions: {result.status}, billed ${actual:.4f} ({billing.prompt_tokens} prompt, "
          f"{billing.completion_tokens} completion of which {billing.reasoning_tokens} hidden); "
          f"prediction error {err:+.1%} ({'within' if abs(err) <= 0.2 else 'OUTSIDE'} 20 %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--skip-families", action="store_true")
    args = parser.parse_args()
    logging.getLogger("cogtestbed").setLevel(logging.ERROR)
    model = HFClient.from_pretrained("tiny-random-chat")  # the tokenizer the emulator bills with
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_families:
            families(model, args.families.split(","), Path(tmp) / "families")
        pilot_vs_run(model, Path(tmp) / "plan")


if __name__ == "__main__":
    main()

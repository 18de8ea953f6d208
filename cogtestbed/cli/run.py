"""``cogtestbed run``: a real LLM as N subjects of any registered experiment."""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Annotated

import typer

from cogtestbed.cli.app import app, console_err, print_json
from cogtestbed.cli.simulate import _design_overrides


def default_cache() -> Path:
    """``$COGTESTBED_CACHE``, else ``$XDG_CACHE_HOME/cogtestbed/llm_cache.sqlite``."""
    if os.environ.get("COGTESTBED_CACHE"):
        return Path(os.environ["COGTESTBED_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cogtestbed" / "llm_cache.sqlite"


@app.command()
def run(
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory.")],
    experiment: Annotated[str | None, typer.Argument(
        help="Experiment name, e.g. instrumental-learning (optional with --plan).")] = None,
    llm: Annotated[str | None, typer.Option(
        "--llm", help="BACKEND:MODEL — hf:tiny-random, hf:<hub id or path>, openai:gpt-4o-mini, "
        "anthropic:claude-...; keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY.")] = None,
    subjects: Annotated[int, typer.Option(min=1, help="Independent subjects (sessions).")] = 1,
    seed: Annotated[int, typer.Option(help="Seed: the same sessions as `simulate --seed`.")] = 0,
    base_url: Annotated[str | None, typer.Option(
        help="OpenAI-compatible or Anthropic endpoint (vLLM, Ollama, llama.cpp, LM Studio...).")] = None,
    mode: Annotated[str, typer.Option(
        help="chat | completions (raw prompt, no chat template) | auto.")] = "auto",
    design: Annotated[list[str] | None, typer.Option(
        "--design", help="Design field NAME=VALUE (repeatable), e.g. visits_per_casino=6.")] = None,
    max_tokens: Annotated[int, typer.Option(min=1, help="Tokens per answer.")] = 8,
    temperature: Annotated[float, typer.Option(min=0.0, help="0 = greedy (CogBench).")] = 0.0,
    stop: Annotated[list[str] | None, typer.Option(
        help="Stop string (repeatable; backslash escapes such as \\n work). Default: newline.")] = None,
    reask: Annotated[int, typer.Option(min=0, help="Re-asks after an unparseable answer.")] = 0,
    top_logprobs: Annotated[int | None, typer.Option(
        help="Also request the top-k log-probabilities of each answer token.")] = None,
    cache: Annotated[Path | None, typer.Option(
        help="SQLite response cache (default $COGTESTBED_CACHE or ~/.cache/cogtestbed/).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Subjects played at once.")] = 8,
    rpm: Annotated[float | None, typer.Option(help="Requests per minute limit.")] = None,
    tpm: Annotated[float | None, typer.Option(help="Tokens per minute limit.")] = None,
    max_calls: Annotated[int | None, typer.Option(min=0, help="Stop before more new calls.")] = None,
    max_cost: Annotated[float | None, typer.Option(min=0.0, help="Stop before spending more (USD).")] = None,
    prices: Annotated[Path | None, typer.Option(help="Price table (TOML) overriding the defaults.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request.")] = 60.0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report calls, tokens and cost; call nothing.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --output.")] = False,
    plan: Annotated[Path | None, typer.Option(
        help="plan.json of `cogtestbed plan`: its experiment, design, subjects, seed, answer settings and "
        "limits (--llm may choose or replace its LLM).")] = None,
) -> None:
    """Run an LLM as subjects through an experiment; write the trial table and a manifest."""
    import asyncio

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from cogtestbed.llm_adapters import make_client, parse_spec
    from cogtestbed.llm_adapters.cache import CachedClient, ResponseCache
    from cogtestbed.llm_adapters.limits import Budget, PriceTable, RateLimiter
    from cogtestbed.llm_adapters.openai_client import redact_url
    from cogtestbed.llm_adapters.runner import RunConfig, run_experiment
    from cogtestbed.llm_adapters.runner import dry_run as estimate
    from cogtestbed.registry import get_experiment

    fields = _design_overrides(design or [])
    if plan is not None:
        from cogtestbed.validation.plan_report import plan_run_settings

        p = plan_run_settings(plan, experiment, llm, subjects, seed, design)
        experiment, llm, subjects, seed, fields = p["experiment"], p["llm"], p["subjects"], p["seed"], p["design"]
        max_tokens, temperature, reask = p["max_tokens"], p["temperature"], p["reask"]
        max_calls = max_calls if max_calls is not None else p["max_calls"]
        max_cost = max_cost if max_cost is not None else p["max_cost"]
    if experiment is None or llm is None:
        raise ValueError("run needs an EXPERIMENT and --llm (or --plan)")
    exp = get_experiment(experiment)
    backend, _ = parse_spec(llm)
    design_obj = exp.env_cls.design_cls(**fields)
    stops = tuple(codecs.decode(s, "unicode_escape") for s in stop) if stop else ("\n",)
    options = {} if backend == "hf" else {"timeout": timeout}
    client = make_client(llm, base_url=base_url, mode=mode, **options)
    config = RunConfig(
        experiment=exp.name, llm=llm, base_url=redact_url(base_url),
        mode="chat" if client.chat else "completions", n_subjects=subjects, seed=seed,
        design=design_obj.model_dump(mode="json"), max_tokens=max_tokens,
        temperature=temperature, stop=stops, reask=reask, top_logprobs=top_logprobs,
    )
    price = PriceTable(prices).lookup(llm)
    if dry_run:
        print_json(estimate(exp, design_obj, client, config, price))
        return
    client.check_ready()
    store = ResponseCache(cache or default_cache())
    cached = CachedClient(client, store, Budget(max_calls, max_cost, price), RateLimiter(rpm, tpm))
    total = subjects * exp.env_cls.max_steps(design_obj)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console_err, transient=True) as bar:
        task = bar.add_task(f"{exp.name} × {llm}", total=total)
        result = asyncio.run(run_experiment(
            exp, design_obj, cached, config, output, resume=resume, concurrency=concurrency,
            on_step=lambda: bar.advance(task)))
    store.close()
    s = result.stats
    console_err.print(
        f"{result.status}: {len(result.trials)} trials of {s['subjects_complete']} subjects "
        f"({s['invalid_trials']} invalid) in {output}; {s['calls_total']} calls, "
        f"{s['cache_hits']} from the cache, {s['new_calls']} new"
        + (f", ${s['cost_usd']:.4f}" if s["cost_usd"] is not None else "")
        + (f"; stopped: {s['stopped']} (--resume continues)" if s["stopped"] else ""),
        highlight=False,
    )

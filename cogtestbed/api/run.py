"""LLM runs: a real LLM as N subjects of any registered experiment (:func:`run`; ``cogtestbed run``
is a thin layer over it)."""

from __future__ import annotations

import codecs
import logging
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogtestbed.api.checks import public
from cogtestbed.api.console import console_err
from cogtestbed.api.core import design_overrides, with_adaptive
from cogtestbed.errors import InputError
from cogtestbed.request import build, derive_api, flat, request_block
from cogtestbed.runs.run_options import (
    DEFAULT_MAX_SERVICE_REQUESTS,
    DEFAULT_RETRY_WINDOW,
    PROGRESS_EVERY,
    RunRequest,
)


def default_cache() -> Path:
    """``$COGTESTBED_CACHE``, else ``$XDG_CACHE_HOME/cogtestbed/llm_cache.sqlite``."""
    if os.environ.get("COGTESTBED_CACHE"):
        return Path(os.environ["COGTESTBED_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cogtestbed" / "llm_cache.sqlite"


#: Exit status of a run stopped by its budget (``--max-calls`` / ``--max-cost``): the tables hold
#: the finished subjects; ``--resume --add-budget ...`` continues.  (2 is an input error, 1 a bug.)
EXIT_BUDGET_STOP = 3
#: Exit status of a run stopped by its budget (``--max-calls`` / ``--max-cost``): the tables hold
#: the finished subjects; ``--resume --add-budget ...`` continues.  (2 is an input error, 1 a bug.)
EXIT_BUDGET_STOP = 3


def parse_add_budget(items: list[str]) -> tuple[int, float]:
    """``calls=N`` / ``usd=X`` items (repeatable, or comma-separated) → (calls, USD) to add."""
    calls, usd = 0, 0.0
    for item in (part.strip() for raw in items for part in raw.split(",") if part.strip()):
        added_calls, added_usd = _budget_item(item)
        calls, usd = calls + added_calls, usd + added_usd
    return calls, usd


def _budget_item(item: str) -> tuple[int, float]:
    """One ``calls=N`` / ``usd=X`` item as (calls, USD) to add; refused unless a positive amount."""
    key, sep, value = item.partition("=")
    try:
        if not sep or key.strip() not in ("calls", "usd"):
            raise ValueError
        calls = int(value) if key.strip() == "calls" else 0
        usd = float(value) if key.strip() == "usd" else 0.0
        if not math.isfinite(usd):
            raise ValueError
    except ValueError:
        raise InputError(f"`add_budget` {item!r}: expected calls=N or usd=X, X a finite number (e.g. usd=0.5)"
                         ) from None
    if calls + usd <= 0:
        raise InputError(f"`add_budget` {item!r}: the amount must be positive")
    return calls, usd


@dataclass
class LLMRun:
    """One LLM's run (what :func:`execute_run` takes): the options of ``cogtestbed run``
    (:class:`~cogtestbed.runs.run_options.RunRequest`, where each is declared) for one of its
    LLMs, a plan's settings applied."""

    experiment: str
    llm: str
    output: Path
    subjects: int = 1
    seed: int = 0
    base_url: str | None = None
    mode: str = "auto"
    design: list[str] = field(default_factory=list)
    #: Design fields given as values (a plan's design); ``design`` items override them.
    design_fields: dict[str, Any] = field(default_factory=dict)
    #: ``None``: the experiment's (:meth:`TextEnv.answer_defaults`: 8 for a one-line answer).
    max_tokens: int | None = None
    #: ``None``: the experiment's paper's temperature (:class:`~cogtestbed.experiments.spec.Decoding`),
    #: else greedy (0); where a value comes from is recorded as ``decoding`` in the manifest.
    temperature: float | None = None
    #: Where ``temperature`` was set, when not on the command line (e.g. a plan).
    temperature_source: str | None = None
    stop: list[str] | None = None
    reask: int = 0
    top_logprobs: int | None = None
    cache: Path | None = None
    #: Key the response cache by the model's name alone, not the endpoint
    #: (:func:`~cogtestbed.llm_adapters.middleware.cache.cache_key`).
    share_cache: bool = False
    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    max_calls: int | None = None
    max_cost: float | None = None
    add_budget: list[str] = field(default_factory=list)
    prices: Path | None = None
    #: Dry run of a model without a price: count calls and tokens only (else refused, naming --prices).
    allow_unpriced: bool = False
    timeout: float = 60.0
    retry_for: float = DEFAULT_RETRY_WINDOW
    resume: bool = False
    progress_every: int = PROGRESS_EVERY
    #: Play only the first ``limit`` subjects (a sequential plan's look).
    limit: int | None = None
    #: ``--forms``: K or form ids; subjects are assigned to the prompt forms (balanced, seeded).
    forms: str | None = None
    #: Send the requests through the provider's batch API (:mod:`cogtestbed.llm_adapters.middleware.batch`).
    batch: bool = False
    #: Seconds between polls of a batch.
    poll_every: float = 30.0
    #: Most HTTP requests that are no model call (a batch API's uploads, polls, downloads) per invocation.
    max_service_requests: int = DEFAULT_MAX_SERVICE_REQUESTS
    #: ``--reasoning-effort``: OpenAI's ``reasoning_effort`` of a reasoning model.
    reasoning_effort: str | None = None
    #: ``--thinking-budget``: Anthropic's extended thinking on with this ``budget_tokens``; for OpenAI's
    #: reasoning models the hidden tokens each call's completion limit reserves.
    thinking_budget: int | None = None
    #: ``--adaptive``: parameters whose expected information chooses each next trial, with
    #: ``trials`` the session's length (design fields ``adaptive`` / ``trials``).
    adaptive: str | None = None
    trials: int | None = None
    #: Completion tokens per call measured in a pilot or assumed (a plan's ``run.completion_tokens_per_call``,
    #: :meth:`~cogtestbed.llm_adapters.runs.hidden_tokens.HiddenTokens.as_json`): the dry run's expected cost
    #: and its range are priced with them, as the plan's were.
    completion_tokens_per_call: dict[str, Any] | None = None
    #: ``run.json``'s ``request`` block: the options of ``ct.run`` / ``cogtestbed run`` as given
    #: (:func:`cogtestbed.request.request_block` of the :class:`RunRequest`), before a plan applied its settings.
    request: dict[str, Any] | None = None


def planned_request(llm: str, output: Path, opts: dict[str, Any]) -> tuple[LLMRun, dict[str, Any] | None]:
    """The :class:`LLMRun` of one LLM from ``run``'s options, a plan's settings applied (its
    design, subjects, seed, answer settings and limits; options given win where allowed), and the
    plan's run settings (None without ``--plan``)."""
    o = dict(opts)
    fields: dict[str, Any] = {}
    temperature_source: str | None = None
    p: dict[str, Any] | None = None
    if o["plan"] is not None:
        from cogtestbed.planning.plan_report import plan_run_settings

        p = plan_run_settings(o["plan"], o["experiment"], llm, o["subjects"], o["seed"], o["design"])
        o.update(experiment=p["experiment"], subjects=p["subjects"], seed=p["seed"], max_tokens=p["max_tokens"],
                 reask=p["reask"])
        for name in ("reasoning_effort", "thinking_budget"):  # the plan's reasoning controls unless given
            if o.get(name) is None and p.get(name) is not None:
                o[name] = p[name]
        fields = p["design"]
        if o["temperature"] is None:
            o["temperature"], temperature_source = p["temperature"], f"the plan ({o['plan']})"
        o["batch"] = bool(o["batch"] or p.get("batch"))
        o["max_calls"] = o["max_calls"] if o["max_calls"] is not None else p["max_calls"]
        o["max_cost"] = o["max_cost"] if o["max_cost"] is not None else p["max_cost"]
    if o["experiment"] is None:
        raise InputError("run needs an EXPERIMENT (or `plan`)")
    request = LLMRun(
        experiment=o["experiment"], llm=llm, output=output, subjects=o["subjects"], seed=o["seed"],
        forms=o.get("forms"),
        base_url=o["base_url"], mode=o["mode"], design=o["design"] or [], design_fields=fields,
        max_tokens=o["max_tokens"], temperature=o["temperature"], temperature_source=temperature_source,
        stop=o["stop"], reask=o["reask"], top_logprobs=o["top_logprobs"], cache=o["cache"],
        share_cache=o["share_cache"],
        concurrency=o["concurrency"], rpm=o["rpm"], tpm=o["tpm"], max_calls=o["max_calls"], max_cost=o["max_cost"],
        add_budget=o["add_budget"] or [], prices=o["prices"], allow_unpriced=o["allow_unpriced"], timeout=o["timeout"],
        retry_for=o["retry_for"], resume=o["resume"], progress_every=o["progress_every"], batch=o["batch"],
        poll_every=o["poll_every"],
        max_service_requests=o.get("max_service_requests", DEFAULT_MAX_SERVICE_REQUESTS),
        reasoning_effort=o.get("reasoning_effort"), thinking_budget=o.get("thinking_budget"),
        adaptive=o.get("adaptive"), trials=o.get("trials"), request=o.get("request"),
        completion_tokens_per_call=None if p is None else p.get("completion_tokens_per_call"))
    return request, p


def _sequential_kind(plan: Path) -> str | None:
    """The statistic kind of a sequential plan (None for a fixed plan)."""
    from cogtestbed.planning.plan_report import load_plan

    seq = load_plan(plan).get("sequential")
    return None if seq is None else str(seq["statistic"]["kind"])


def check_request(request: LLMRun) -> None:
    """Refuse absurd limits and settings in one line before anything is built or called: a rate
    limit of 0 or NaN is not "no limit", a negative top-k is not a request, a NaN budget is not a budget."""
    def positive(name: str, value: float | None) -> None:
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"{name} must be a positive number, got {value:g} (leave it out for no limit)")

    def non_negative(name: str, value: float | None) -> None:
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise InputError(f"{name} must be a finite number >= 0, got {value:g}")

    positive("`rpm`", request.rpm)
    positive("`tpm`", request.tpm)
    positive("`timeout`", request.timeout)
    positive("`poll_every`", request.poll_every)
    non_negative("`max_cost`", request.max_cost)
    non_negative("`max_calls`", request.max_calls)
    non_negative("`max_service_requests`", request.max_service_requests)
    non_negative("`retry_for`", request.retry_for)
    non_negative("`temperature`", request.temperature)
    if request.top_logprobs is not None and request.top_logprobs < 0:
        raise InputError(f"`top_logprobs` must be a count >= 0, got {request.top_logprobs}")
    if request.subjects < 1:
        raise InputError(f"`subjects` must be at least 1, got {request.subjects}")


def _client_and_config(request: LLMRun) -> tuple[Any, Any, Any, Any]:
    """(experiment, design, client, config) of a request."""
    from cogtestbed.environments.adaptive import is_adaptive
    from cogtestbed.environments.forms import resolve_forms
    from cogtestbed.llm_adapters.clients.backends import get_backend, make_client, parse_spec
    from cogtestbed.llm_adapters.middleware.retry import RetryPolicy
    from cogtestbed.llm_adapters.runs.config import RunConfig
    from cogtestbed.redact import redact_url
    from cogtestbed.registry import get_experiment

    check_request(request)
    exp = get_experiment(request.experiment)
    backend, _ = parse_spec(request.llm)
    design_obj = exp.env_cls.design_cls(**{**request.design_fields, **design_overrides(request.design)})
    design_obj = with_adaptive(exp, design_obj, request.adaptive, request.trials)
    if request.batch and is_adaptive(design_obj):
        raise InputError("`batch` refused for an adaptive session: its trials are chosen one at a time from the "
                         "answers so far, so no step can be sent in a batch ahead of the previous answer; run "
                         "without `batch`")
    answer = exp.env_cls.answer_defaults(design_obj)
    stops = tuple(codecs.decode(s, "unicode_escape") for s in request.stop) if request.stop else answer.stop
    if not request.timeout > 0:
        raise InputError(f"`timeout` must be a positive number of seconds, got {request.timeout:g}")
    options: dict[str, Any] = {} if not get_backend(backend).remote else {  # a local model has no transport
        "timeout": request.timeout, "retry": RetryPolicy(window=request.retry_for)}
    client = make_client(request.llm, base_url=request.base_url, mode=request.mode, **options)
    if request.batch:
        from cogtestbed.llm_adapters.middleware.batch.client import BatchClient

        client = BatchClient(client, poll=request.poll_every)
    temperature, _ = run_decoding(exp, request)
    allowance = reasoning_allowance(request.llm, request.reasoning_effort, request.thinking_budget)
    config = RunConfig(
        experiment=exp.name, llm=request.llm, base_url=redact_url(request.base_url),
        mode="chat" if client.chat else "completions", n_subjects=request.subjects, seed=request.seed,
        design=design_obj.model_dump(mode="json"), max_tokens=request.max_tokens or answer.max_tokens,
        temperature=temperature, stop=stops, reask=request.reask, top_logprobs=request.top_logprobs,
        forms=None if request.forms is None else resolve_forms(exp.prompt_forms, request.forms),
        reasoning_effort=request.reasoning_effort, thinking_budget=request.thinking_budget,
        hidden_allowance=allowance,
    )
    return exp, design_obj, client, config


def reasoning_allowance(llm: str, effort: str | None, budget: int | None) -> int | None:
    """The reasoning controls checked against the model's row of the capability table (one line where it
    has no such control or takes no such value), and the hidden tokens each call reserves
    (:func:`~cogtestbed.llm_adapters.clients.capabilities.hidden_allowance`)."""
    from cogtestbed.llm_adapters.clients.capabilities import capability_of, check_reasoning, hidden_allowance

    cap = capability_of(llm)
    check_reasoning(llm, cap, effort, budget)
    return hidden_allowance(cap, budget)


def run_decoding(exp: Any, request: LLMRun) -> tuple[float, dict[str, Any]]:
    """The run's temperature and its ``decoding`` manifest entry ({temperature, source}): the
    command line's or the plan's, else the experiment's paper's, else greedy."""
    from cogtestbed.experiments.spec import resolve_temperature

    temperature, source = resolve_temperature(exp.decoding, request.temperature)
    if request.temperature is not None and request.temperature_source:
        source = request.temperature_source
    return temperature, {"temperature": temperature, "source": source}


def answer_settings(exp: Any, design: Any, request: LLMRun) -> dict[str, Any]:
    """The run's stop strings and most tokens per answer and where each comes from (the command
    line, or the experiment's :meth:`~cogtestbed.environments.base.TextEnv.answer_defaults`)."""
    answer = exp.env_cls.answer_defaults(design)
    given = "given (--stop / --max-tokens, or the plan)"
    return {"stop": [codecs.decode(s, "unicode_escape") for s in request.stop] if request.stop else list(answer.stop),
            "stop_source": given if request.stop else answer.source,
            "max_tokens": request.max_tokens or answer.max_tokens,
            "max_tokens_source": given if request.max_tokens else answer.source}


def estimate_run(request: LLMRun) -> dict[str, Any]:
    """``--dry-run``: calls, tokens and cost, nothing called; with ``--max-calls`` / ``--max-cost``
    also how many subjects the budget admits at their worst case."""
    from cogtestbed.llm_adapters.clients.prices import PriceTable, require_price
    from cogtestbed.llm_adapters.middleware.limits import Budget
    from cogtestbed.llm_adapters.runs.pricing import dry_run as estimate

    standard = require_price(PriceTable(request.prices), request.llm, request.allow_unpriced)
    exp, design_obj, client, config = _client_and_config(request)
    price = run_price(request, standard)
    budget = Budget(request.max_calls, request.max_cost, price)
    hidden = None
    if request.completion_tokens_per_call is not None:
        from cogtestbed.llm_adapters.runs.hidden_tokens import HiddenTokens

        hidden = HiddenTokens.from_json(request.completion_tokens_per_call)
    report = estimate(exp, design_obj, client, config, price, budget, hidden)
    if request.batch and standard is not None:
        from cogtestbed.llm_adapters.middleware.batch.pricing import batch_report

        report = batch_report(report, standard)
    return {**report, "decoding": run_decoding(exp, request)[1], "answer": answer_settings(exp, design_obj, request)}


def run_price(request: LLMRun, standard: Any) -> Any:
    """The price the run pays: the table's, or with ``--batch`` its batch price (refused in one line
    where the table gives the model no ``batch_discount``)."""
    if not request.batch or standard is None:
        return standard
    from cogtestbed.llm_adapters.middleware.batch.pricing import batch_price

    return batch_price(standard, request.llm)


def adaptive_steps_note(exp: Any, design: Any) -> str | None:
    """For an adaptive session whose subject answers more than ``--trials`` steps (calls): how many and why
    (magnitude estimation plays ``--trials`` in every block; belief coherence asks each context in several
    calls), so a long run is no surprise; None otherwise."""
    from cogtestbed.environments.adaptive import is_adaptive

    if not is_adaptive(design):
        return None
    steps = int(exp.env_cls.max_steps(design))
    if steps <= design.trials:
        return None
    blocks = getattr(design, "blocks", ())
    why = (f"{len(blocks)} blocks x {design.trials} trials; one block: --design task=... conditions=... "
           "modalities=... ranges=..." if len(blocks) > 1 else "several calls per adaptive trial")
    return f"adaptive session: --trials {design.trials} asks up to {steps} calls per subject ({why})"


def execute_run(request: LLMRun) -> Any:
    """Check the run directory, build the client, play the run, write the tables; the RunResult."""
    from cogtestbed.llm_adapters.clients.prices import PriceTable
    from cogtestbed.llm_adapters.middleware.cache import CachedClient, ResponseCache
    from cogtestbed.llm_adapters.middleware.limits import Budget, Need, RateLimiter
    from cogtestbed.llm_adapters.runs.rundir import check_run_dir
    from cogtestbed.llm_adapters.runs.runner import run_experiment

    add_calls, add_usd = parse_add_budget(request.add_budget)
    if (add_calls or add_usd) and not request.resume:
        raise InputError("`add_budget` raises the budget of an existing run: use it with `resume`")
    check_request(request)
    check_run_dir(request.output, request.resume)  # before a model is loaded or anything is called
    exp, design_obj, client, config = _client_and_config(request)
    price = run_price(request, PriceTable(request.prices).lookup(request.llm))
    client.check_ready()
    store = ResponseCache(request.cache or default_cache())
    budget = Budget(request.max_calls, None, price, max_service_requests=request.max_service_requests)
    budget.max_cost = request.max_cost  # priced on opening the run (a resumed run may hold the limit)
    cached = CachedClient(client, store, budget, RateLimiter(request.rpm, request.tpm), shared=request.share_cache)
    total = request.subjects * exp.env_cls.max_steps(design_obj)
    transport = {"timeout": request.timeout, "rpm": request.rpm, "tpm": request.tpm,
                 "retry_for": request.retry_for, "batch": request.batch}
    show_retries()
    decoding = run_decoding(exp, request)[1]
    console_err.print(f"temperature {decoding['temperature']:g}: {decoding['source']}", highlight=False)
    note = adaptive_steps_note(exp, design_obj)
    if note:
        console_err.print(note, highlight=False)
    finished: list[int] = []
    interactive = console_err.is_terminal

    ended: list[int] = []  # every subject that ended, finished or stopped (a budget stop)

    def on_subject(i: int, complete: bool) -> None:
        ended.append(i)
        if complete:  # the progress line counts what the summary counts: finished subjects
            finished.append(i)
        if not interactive and (len(ended) % request.progress_every == 0 or len(ended) == request.subjects):
            s = cached.budget.summary()
            stopped = len(ended) - len(finished)
            console_err.print(f"{len(finished)}/{request.subjects} subjects done"
                              + (f" ({stopped} stopped unfinished)" if stopped else "")
                              + f"; {s['new_calls']} new calls"
                              + (f", ${s['cost_usd']:.4f}" if s["cost_usd"] is not None else ""),
                              highlight=False)

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), console=console_err, transient=True, disable=not interactive) as bar:
            task = bar.add_task(f"{exp.name} × {request.llm}", total=total)
            result = run_coroutine(run_experiment(
                exp, design_obj, cached, config, request.output, resume=request.resume,
                concurrency=request.concurrency, on_step=lambda: bar.advance(task), on_subject=on_subject,
                add_budget=Need(add_calls, add_usd), transport=transport, request=request.request,
                extra_manifest={"decoding": decoding, "answer": answer_settings(exp, design_obj, request)},
                limit=request.limit))
    finally:
        store.close()
    console_err.print(run_summary(result, request.output), highlight=False)
    return result


def run_summary(result: Any, output: Path) -> str:
    """The line a run ends with: its trials, its calls (those answered from a cache this run directory did not
    fill), and what the run directory paid for over every invocation, with this invocation's share where it
    was resumed (a monitored or sequential run resumes once per subject or look)."""
    s = result.stats
    priced = s["cost_usd"] is not None
    paid = f"{s['total_calls']} calls" + (f", ${s['total_cost_usd']:.4f}" if priced else "")
    if s.get("max_cost") is not None:
        paid += f" of ${s['max_cost']:g}"
    if s["new_calls"] != s["total_calls"]:
        paid += f" ({s['new_calls']} calls" + (f", ${s['cost_usd']:.4f}" if priced else "") + " in this invocation)"
    return (f"{result.status}: {len(result.trials)} trials of {s['subjects_complete']} subjects "
            f"({s['invalid_trials']} invalid) in {output}; {s['calls_total']} calls, {s['cache_hits']} from the "
            f"cache; paid by this run: {paid}"
            + (f"; stopped: {s['stopped']} (--resume --add-budget continues)" if s["stopped"] else ""))


def run_coroutine(coro: Any) -> Any:
    """``asyncio.run(coro)``, in a thread of its own where this thread already runs an event loop
    (a notebook's kernel), where ``asyncio.run`` refuses."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


class _StderrHandler(logging.Handler):
    """One line per record on the current ``sys.stderr``, redacted (:func:`cogtestbed.redact.redact`)
    and with its control characters escaped (:func:`cogtestbed.errors.printable`)."""

    def emit(self, record: logging.LogRecord) -> None:
        from cogtestbed.errors import printable
        from cogtestbed.redact import redact

        sys.stderr.write(printable(redact(self.format(record))) + "\n")


def show_retries() -> None:
    """Retries and budget notes of the LLM adapters go to stderr, one line each."""
    from cogtestbed import llm_adapters

    log = logging.getLogger(llm_adapters.__name__)
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        log.addHandler(_StderrHandler())
        log.setLevel(logging.INFO)


def model_dir(output: Path, index: int, llm: str) -> Path:
    """Run directory of the ``index``-th of two models under ``output`` (``1-hf-tiny-random``)."""
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in llm).strip("-")
    return output / f"{index + 1}-{slug}"


def _planned_llms(plan: Path | None, llms: Sequence[str] | None) -> list[str]:
    """The ``--llm`` given, else the LLM(s) a plan was priced for."""
    if plan is None or llms:
        return list(llms or [])
    from cogtestbed.planning.plan_report import load_plan

    return list(dict.fromkeys(load_plan(plan)["llms"]))


@dataclass
class PairedRun:
    """Two LLMs on the same sessions (``run --llm A --llm B``): each LLM's run result (``runs``, one
    run directory each under the output) and ``report``, the paired comparison written as
    ``paired.json`` (None where a budget stopped a run before both finished).

    Attributes
    ----------
    runs : list of RunResult
        The two LLMs' runs.
    report : dict, optional
        The paired comparison of every metric (``paired.json``).

    Examples
    --------
    ``ct.run(..., llm=[A, B])`` returns one (``docs/howto/compare-llms.md``):

    >>> import cogtestbed as ct
    >>> ct.PairedRun([], None).report is None
    True
    """

    runs: list[Any]
    report: dict[str, Any] | None

    @property
    def status(self) -> str:
        """``stopped`` where a budget stopped either run, else ``complete``."""
        return "stopped" if any(getattr(r, "status", None) == "stopped" for r in self.runs) else "complete"


@public(paths=('plan', 'prices'))
@derive_api(RunRequest)
def run(experiment: str | Any = None, **options: Any) -> Any:
    """Run an LLM as subjects through an experiment (``cogtestbed run``): the same run directory,
    response cache, budgets and resume as the command line.  ``llm`` is ``BACKEND:MODEL``
    (``hf:smollm2-135m`` runs a real model offline), or two of them to run both on the same sessions
    (one run directory each under ``output`` and ``paired.json``: a :class:`PairedRun`); ``plan`` a
    ``plan.json`` of :func:`cogtestbed.plan` (its experiment, design, subjects, seed, settings and
    limits, and its LLMs where ``llm`` is left out; a sequential plan runs look by look, appending
    each look to ``looks.jsonl``; a monitor plan unit by unit, two LLMs pair by pair, appending each step
    to ``monitor.jsonl``); ``design`` a mapping of design fields (or ``NAME=VALUE`` items).
    Returns the run's result (``.trials``, ``.stats``, ``.status``: ``complete`` or ``stopped`` by the
    budget; None where a sequential run had already stopped), or with ``dry_run`` the calls, tokens and
    cost it would take (a list: one per LLM).

    Returns
    -------
    RunResult or PairedRun or dict
        One LLM: its :class:`RunResult`; two: a :class:`PairedRun`; ``dry_run``: the estimate of calls,
        tokens and cost (a list of them for two LLMs).

    Examples
    --------
    >>> import cogtestbed as ct
    >>> estimate = ct.run("instrumental-learning", llm="openai:gpt-4o-mini", subjects=1, seed=1,
    ...                   design=["visits_per_casino=2"], output="run", dry_run=True)
    >>> estimate["calls"], estimate["subjects"], estimate["price_usd_per_mtok"]["input"]
    (8, 1, 0.15)
    """
    from cogtestbed.api.core import get_experiment
    from cogtestbed.experiments.spec import ExperimentSpec

    req = build(RunRequest, {**options, "experiment": experiment})
    # a spec object is registered here; a name is looked up with the run's other checks (in their order)
    name = get_experiment(experiment).name if isinstance(experiment, ExperimentSpec) else experiment
    plan_path = None if req.plan is None else Path(req.plan)
    llm = req.llms.llm
    llms = _planned_llms(plan_path, [llm] if isinstance(llm, str) else list(llm or []))
    design = req.sessions.design
    items = [f"{k}={v}" for k, v in design.items()] if isinstance(design, Mapping) else list(design or [])
    opts = {**flat(req), "experiment": name, "plan": plan_path, "design": items, "request": request_block(req)}
    output = Path(req.output)
    _warn_unidentified_run(name, opts)
    monitored = None if plan_path is None else _monitor_pairs(plan_path)
    if monitored is not None and monitored != (len(llms) == 2):
        raise InputError(f"`plan`: {plan_path} monitors " + ("pairs of two LLMs' units: run it with both LLMs"
                                                             if monitored else "one LLM: run it with one `llm`"))
    if len(llms) != 1:
        if monitored and not req.budget.dry_run:  # a monitor plan with `looks` keeps its group-sequential design
            return _run_monitored_pair(llms, output, opts)  # for comparison: the run executes the monitor
        if plan_path is not None and not req.budget.dry_run and _sequential_kind(plan_path) == "metric-power":
            return _run_sequential_pair(llms, output, opts)
        return _run_paired(llms, output, opts)
    return _run_one(llms[0], output, opts)


def _warn_unidentified_run(name: str | None, opts: dict[str, Any]) -> None:
    """Warn once, before a call is bought, where an experiment whose fits pool an agent's sessions
    (``pooling_unit == "session"``, e.g. the horizon task's games) would fit the LLM as one subject of ``subjects``
    sessions that do not identify a parameter of its first model at the default design (the design check's shipped
    table, :func:`cogtestbed.identified_sessions.warn_unidentified`).  A plan, a design, an adaptive session or a
    trial count leaves the run to the plan's own check (or to ``check-design``)."""
    from cogtestbed.identified_sessions import warn_unidentified
    from cogtestbed.registry import experiment_names, get_experiment

    if name not in experiment_names() or opts["plan"] is not None or opts["design"] or opts.get("adaptive") \
            or opts.get("trials"):
        return
    exp = get_experiment(name)
    if exp.models and exp.pooling_unit == "session":
        warn_unidentified(exp.name, next(iter(exp.models)), int(opts["subjects"]),
                          "run anyway (an LLM's sessions are fitted as one subject)",
                          "run anyway (expect r under 0.89 between true values and their estimates)", "--subjects")


def _monitor_pairs(plan: Path) -> bool | None:
    """Whether a plan's monitor compares two LLMs pair by pair (None: the plan monitors nothing)."""
    from cogtestbed.planning.plan_report import load_plan

    mon = load_plan(plan).get("monitor")
    return None if mon is None else bool(mon.get("pairs"))


def _run_monitored_pair(llms: list[str], output: Path, opts: dict[str, Any]) -> Any:
    """A monitored plan of two LLMs, pair by pair (:func:`cogtestbed.api.looks.run_monitored_pair`)."""
    from cogtestbed.api.looks import run_monitored_pair

    _two_llms(llms)
    pairs = [planned_request(llm, model_dir(output, i, llm), opts) for i, llm in enumerate(llms)]
    settings = pairs[0][1]
    assert settings is not None
    return run_monitored_pair([r for r, _ in pairs], output, dict(settings["monitor"]), execute_run)


def _run_one(llm: str, output: Path, opts: dict[str, Any]) -> Any:
    """One LLM's run (or its dry run, or a sequential plan's looks)."""
    request, settings = planned_request(llm, output, opts)
    if opts["dry_run"]:  # the estimate with the options it was given (``request``, as run.json's)
        return {**estimate_run(request), **({"request": request.request} if request.request is not None else {})}
    if settings is not None and settings.get("sequential") is not None:  # a group-sequential plan: look by look
        from cogtestbed.api.looks import run_sequential

        return run_sequential(request, {**settings["sequential"], "experiment": request.experiment}, execute_run)
    if settings is not None and settings.get("monitor") is not None:  # a monitored plan: subject by subject
        from cogtestbed.api.looks import run_monitored

        return run_monitored(request, dict(settings["monitor"]), execute_run)
    return execute_run(request)


def _two_llms(llms: list[str]) -> None:
    if len(llms) != 2 or llms[0] == llms[1]:
        raise InputError(f"`llm` takes one model, or two different models to pair; got {llms}")


def _run_sequential_pair(llms: list[str], output: Path, opts: dict[str, Any]) -> Any:
    """A sequential plan of a metric difference between two LLMs (:func:`cogtestbed.api.looks.run_sequential_pair`)."""
    from cogtestbed.api.looks import run_sequential_pair

    _two_llms(llms)
    pairs = [planned_request(llm, model_dir(output, i, llm), opts) for i, llm in enumerate(llms)]
    seq = pairs[0][1]
    assert seq is not None
    return run_sequential_pair([r for r, _ in pairs], output,
                               {**seq["sequential"], "experiment": pairs[0][0].experiment}, execute_run)


def _run_paired(llms: list[str], output: Path, opts: dict[str, Any]) -> Any:
    """Both models on the same sessions (one run directory each), then ``paired.json``: the headline
    metrics side by side with a paired test (:mod:`cogtestbed.runs.paired`) and the ``request``
    block of the options given (:func:`cogtestbed.request.request_block`, as in each ``run.json``).  A dry run:
    each model's estimate; a budget stop of the first model ends the run before the second starts."""
    import json

    from cogtestbed.registry import get_experiment, read_trials
    from cogtestbed.runs.paired import paired_report

    _two_llms(llms)
    dirs = [model_dir(output, i, llm) for i, llm in enumerate(llms)]
    runs: list[Any] = []
    for llm, path in zip(llms, dirs, strict=True):
        runs.append(_run_one(llm, path, opts))
        if getattr(runs[-1], "status", None) == "stopped":
            return PairedRun(runs, None)
    if opts["dry_run"]:
        return runs
    exp = get_experiment(opts["experiment"] or planned_request(llms[0], dirs[0], opts)[0].experiment)
    tables = {llm: read_trials(path / "trials.parquet") for llm, path in zip(llms, dirs, strict=True)}
    report = {**paired_report(exp, tables), "request": opts["request"]}  # the options, as each run.json's
    (output / "paired.json").write_text(json.dumps(report, indent=1, default=float) + "\n")
    return PairedRun(runs, report)

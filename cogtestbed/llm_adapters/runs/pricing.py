"""The dry run (``cogtestbed run --dry-run``, and ``plan``'s pricing of LLM runs): every request of a
run counted without sending one (:mod:`~cogtestbed.llm_adapters.runs.requests`), priced at the price table's
price (standard or batch) with the hidden tokens of a reasoning model, and the calls' range from every
answer valid to every answer invalid."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from cogtestbed.environments.base import Design
from cogtestbed.llm_adapters.clients.base import LLMClient
from cogtestbed.llm_adapters.clients.logprob_probe import PROBE_REQUESTS
from cogtestbed.llm_adapters.clients.prices import UNPRICED_NOTE, Price
from cogtestbed.llm_adapters.middleware.limits import SUBJECT_PROMPT_MARGIN, Budget, Need
from cogtestbed.llm_adapters.runs.config import (
    RunConfig,
    draw_sessions,
)
from cogtestbed.llm_adapters.runs.hidden_tokens import HiddenTokens, reasons, refusal
from cogtestbed.llm_adapters.runs.requests import (
    QUOTED_TOKENS_PER_TOKEN,
    RequestCount,
    budget_outlook,
    count_requests,
    count_requests_of,
    subject_needs,
)
from cogtestbed.llm_adapters.runs.runner import run_warnings
from cogtestbed.registry import Experiment


def ceil_usd(usd: float) -> float:
    """``usd`` rounded up to 1e-6 (a ceiling stays a ceiling when printed)."""
    return math.ceil(usd * 1e6 - 1e-6) / 1e6


def _token_counts(client: LLMClient, exact: bool) -> str:
    """Whose count ``prompt_tokens`` is, in words."""
    if not exact:
        return (f"approximate ({client.chars_per_token:g} characters a token, the {client.backend} rule: the "
                "model's tokenizer is not available here); max_cost_usd books one token per UTF-8 byte")
    source = getattr(client, "token_source", None) or f"the model's own tokenizer ({client.spec})"
    return f"exact: {source}, counted as the backend reports usage"


def _completion_note(c: RequestCount, config: RunConfig) -> str:
    """What is known before the run of the completion tokens the server will bill."""
    text = c.calls - c.scored_requests
    parts = []
    if c.scored_requests:
        parts.append(f"{c.scored_requests} scoring requests generate 1 token each (0 where the model's next "
                     "token ends the text)")
    if text:
        hidden = (f" ({config.max_tokens} of the answer, --max-tokens, and {config.hidden_allowance} hidden reasoning, "
                  "--thinking-budget)" if config.hidden_allowance else " (--max-tokens)")
        parts.append(f"{text} answers generate at most {config.completion_limit} tokens each{hidden}: how many, "
                     "the model decides during the run")
    return "; ".join(parts) + "; max_completion_tokens is their ceiling and is what the budget books"


def prompts_fixed(exp: Experiment, design: Design, c: RequestCount) -> bool:
    """Whether the run's prompts are the playthrough's: no step depends on an answer and no chat
    history quotes one."""
    return exp.env_cls.independent_of_answers(design) and c.quoted_answers == 0


def _cost_note(exp: Experiment, design: Design, c: RequestCount) -> str:
    """How the dry run's cost compares with the usage the run will be billed."""
    fixed = prompts_fixed(exp, design, c)
    prompts = ("prompt_tokens is the run's exact count (no prompt renders an earlier answer)" if c.exact and fixed
               else "prompt_tokens is exact for the playthrough's prompts; the run's prompts render its own answers"
               if c.exact else "prompt_tokens is an estimate")
    extra = []
    if c.quoted_answers:
        extra.append(f"{c.quoted_answers} answers quoted in chat histories at "
                     f"{QUOTED_TOKENS_PER_TOKEN} x max_tokens + 2 tokens each")
    if not exp.env_cls.independent_of_answers(design):
        extra.append(f"prompts +{SUBJECT_PROMPT_MARGIN:.0%} as the budget books them")
    return (f"{prompts}; billed cost <= max_cost_usd (the ceiling: completions at max_tokens"
            + "".join(f", {e}" for e in extra) + ")")


def dry_run(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
            price: Price | None, budget: Budget | None = None, hidden: HiddenTokens | None = None) -> dict[str, Any]:
    """Count the calls and tokens a run would spend, without calling the model.

    Prompts depend on earlier answers, so each session is played with valid random actions
    (``env.action_space``, seeded): the history grows as it does for a subject who always
    answers.  Completion tokens are counted at their maximum (``max_tokens`` per call), and the
    re-ask worst case is reported separately.  Cache hits are not subtracted.  Images are counted
    with the provider's documented formula (:mod:`cogtestbed.llm_adapters.clients.image_tokens`: OpenAI's
    512 px tiles, Anthropic's w·h/750) and included in ``prompt_tokens``; backends without one
    report ``image_tokens`` as ``None``.  With a limited ``budget`` the report adds each subject's
    worst case as the budget books it (:func:`subject_needs`) and how many subjects the budget
    admits.  A reasoning model's expected cost needs ``hidden``, its completion tokens per call measured in
    a pilot or assumed (:mod:`~cogtestbed.llm_adapters.runs.hidden_tokens`): then it is a range; without it null,
    with the reason.
    """
    return dry_runs(exp, design, [(client, config, price)], budget, hidden)[0]


def dry_runs(exp: Experiment, design: Design, runs: Sequence[tuple[LLMClient, RunConfig, Price | None]],
             budget: Budget | None = None, hidden: HiddenTokens | None = None,
             spread: bool = False) -> list[dict[str, Any]]:
    """:func:`dry_run` of each ``(client, config, price)`` of one design, the sessions played once for
    all of them (:func:`count_requests_of`): each report equals that run's own dry run.  The configs
    must agree on ``n_subjects``, ``seed`` and ``forms``.  ``spread``: each report also gives
    ``prompt_tokens_by_session``, the prompt tokens of each session (what a plan scales a sample of
    sessions by, :meth:`~cogtestbed.planning.pricing.Pricer.priced`)."""
    for client, _, _ in runs:
        if exp.env_cls.uses_images(design):
            client.check_images(1)
    config = runs[0][1]
    sessions = draw_sessions(exp, design, config.n_subjects, config.seed)
    pairs = [(client, cfg) for client, cfg, _ in runs]
    counts = count_requests_of(exp, design, pairs, sessions)
    # answers decide what is asked next: the run's range (its every-answer-invalid playthrough)
    lows = (None if exp.env_cls.independent_of_answers(design)
            else count_requests_of(exp, design, pairs, sessions, invalid=True))
    reports = [_dry_report(exp, design, client, cfg, price, sessions, c, None if lows is None else lows[k], budget)
               for k, ((client, cfg, price), c) in enumerate(zip(runs, counts, strict=True))]
    for (client, cfg, price), c, report in zip(runs, counts, reports, strict=True):
        if reasons(cfg.llm, cfg.thinking_budget):
            report.update(reasoning_cost(cfg, price, c, hidden, client.chars_per_token,
                                         pilot_calls_scale(report, cfg, c, hidden)))
        report.update(expected_cost(report, cfg, price, c, hidden, client.chars_per_token))
        if spread:
            report["prompt_tokens_by_session"] = list(c.session_prompt_tokens)
    return reports


def expected_cost(report: dict[str, Any], config: RunConfig, price: Price | None, c: RequestCount,
                  hidden: HiddenTokens | None, chars_per_token: float = 4.0) -> dict[str, Any]:
    """The one expected price of a run (the plan's and ``run --dry-run``'s): ``expected_cost_usd``
    and, where completion tokens per call are measured or assumed (``hidden``: a pilot of any model, or
    ``--assume-reasoning-tokens``), its range ``expected_cost_usd_range`` (the interval of the tokens per
    call, :meth:`~cogtestbed.llm_adapters.runs.hidden_tokens.HiddenTokens.cost_range`; prompt tokens
    re-priced at the pilot's billed tokens per character where they are an estimate).  Without a
    measurement: the booked cost (``max_tokens`` per call), no range."""
    if reasons(config.llm, config.thinking_budget):  # reasoning_cost priced the measurement already
        return {"expected_cost_usd": report.get("estimated_cost_usd"),
                **({"expected_cost_usd_range": report["estimated_cost_usd_range"]}
                   if "estimated_cost_usd_range" in report else {})}
    if hidden is None or price is None:
        return {"expected_cost_usd": report.get("estimated_cost_usd")}
    calls = {k: n for k, n in c.by_kind().items() if n}
    scale = pilot_calls_scale(report, config, c, hidden)
    low, mid, high = hidden.cost_range(price, hidden.prompt_tokens(c.prompt_tokens, chars_per_token, c.exact), calls,
                                       scale or (1.0, 1.0, 1.0), c.exact, pilot_prompts(config, hidden))
    return {"expected_cost_usd": round(mid, 4), "expected_cost_usd_range": [round(low, 4), round(high, 4)],
            "expected_completion_tokens_per_call": hidden.as_json(),
            **({"expected_calls": round(c.calls * scale[1])} if scale else {})}


def pilot_prompts(config: RunConfig, hidden: HiddenTokens | None) -> tuple[float, float, float] | None:
    """(low, expected, high) prompt tokens of a run of ``config.n_subjects`` sessions from a pilot of the same
    model and design (its billed prompt tokens per session: prompts that render earlier answers grow with the
    model's own answers, not a random playthrough's); None otherwise."""
    if hidden is None or hidden.design != config.design:
        return None
    per = hidden.prompt_tokens_per_session(config.n_subjects)
    return None if per is None else (per[0] * config.n_subjects, per[1] * config.n_subjects,
                                     per[2] * config.n_subjects)


def pilot_calls_scale(report: dict[str, Any], config: RunConfig, c: RequestCount,
                      hidden: HiddenTokens | None) -> tuple[float, float, float] | None:
    """Where answers decide what is asked next (the dry run's random playthrough is not the model's) and the
    pilot played the same design: (low, expected, high) of the pilot's calls per session
    (:meth:`~cogtestbed.llm_adapters.runs.hidden_tokens.HiddenTokens.calls_per_session`) over the dry run's;
    None otherwise."""
    if hidden is None or report.get("answer_independent", True) or not c.calls or hidden.design != config.design:
        return None
    per = hidden.calls_per_session(config.n_subjects)
    if per is None:
        return None
    dry = c.calls / config.n_subjects
    return per[0] / dry, per[1] / dry, per[2] / dry


def reasoning_cost(config: RunConfig, price: Price | None, c: RequestCount, hidden: HiddenTokens | None,
                   chars_per_token: float = 4.0, scale: tuple[float, float, float] | None = None) -> dict[str, Any]:
    """A reasoning model's dry-run entries: the expected cost and its range from ``hidden`` (completion tokens
    per call by step kind, hidden ones included; estimated prompt tokens re-priced at the pilot's billed
    tokens per character), or null with the reason where nothing measures them."""
    limit = {"answer": config.max_tokens, "hidden_allowance": config.hidden_allowance,
             "per_call": config.completion_limit}
    entry: dict[str, Any] = {"completion_limit": limit, "reasoning_effort": config.reasoning_effort,
                             "thinking_budget": config.thinking_budget}
    if hidden is None:
        why = refusal(config.llm) + " (options of `cogtestbed plan`; max_cost_usd is the ceiling)"
        return {"estimated_cost_usd": None, "estimated_cost_null_reason": why, "reasoning": entry}
    calls = {k: n for k, n in c.by_kind().items() if n}
    entry["completion_tokens_per_call"] = hidden.as_json()
    out: dict[str, Any] = {"reasoning": entry}
    prompt = hidden.prompt_tokens(c.prompt_tokens, chars_per_token, c.exact)
    if prompt != c.prompt_tokens:
        entry["prompt_tokens_calibrated"] = prompt
    if price is not None:
        low, mid, high = hidden.cost_range(price, prompt, calls, scale or (1.0, 1.0, 1.0), c.exact,
                                           pilot_prompts(config, hidden))
        out.update(estimated_cost_usd=round(mid, 4), estimated_cost_usd_range=[round(low, 4), round(high, 4)])
    return out


def _dry_report(exp: Experiment, design: Design, client: LLMClient, config: RunConfig, price: Price | None,
                sessions: Any, c: RequestCount, low: RequestCount | None, budget: Budget | None) -> dict[str, Any]:
    """One run's dry-run report from its counts (``low``: its every-answer-invalid playthrough, where
    answers decide what is asked next)."""
    calls = c.calls
    # prompts that render earlier answers may run longer than the playthrough's: the budget's margin
    margin = 1.0 if exp.env_cls.independent_of_answers(design) else 1.0 + SUBJECT_PROMPT_MARGIN
    report: dict[str, Any] = {
        "experiment": exp.name, "llm": config.llm, "subjects": config.n_subjects,
        "calls": calls, "prompt_tokens": c.prompt_tokens, "max_completion_tokens": c.completion,
        "images": c.n_images,
        "image_tokens": (c.img_tokens if not c.exact else "in prompt_tokens") if c.n_images else 0,
        "token_counts": _token_counts(client, c.exact),
        "completion_tokens": _completion_note(c, config),
        "price_usd_per_mtok": None if price is None else asdict(price),
        **({"unpriced": UNPRICED_NOTE} if price is None else {}),
        "estimated_cost_usd": None if price is None else round(price.cost(c.prompt_tokens, c.completion), 4),
        "max_cost_usd": None if price is None else ceil_usd(price.cost(math.ceil(c.bound_tokens * margin),
                                                                       c.completion)),
        "cost_vs_billed": _cost_note(exp, design, c),
        "prompts_are_the_runs": prompts_fixed(exp, design, c),
        "answer_independent": exp.env_cls.independent_of_answers(design),
        "longest_session_calls": c.longest_session,
    }
    report.update(_if_the_server_cannot_score(exp, design, client, config, sessions, price))
    if low is not None:
        report.update(_calls_range(exp, design, config, calls, low))
    if config.reask:
        report["calls_with_all_reasks"] = calls * (1 + config.reask)
    warnings = run_warnings(exp, design, client)
    if warnings:
        report["warnings"] = [w["message"] for w in warnings]
    if budget is not None and budget.limited:
        worst = [sum(subject_needs(exp, design, client, config, sessions, i, budget), Need())
                 for i in range(config.n_subjects)]
        report["worst_case_per_subject"] = {"calls": max(w.calls for w in worst),
                                            "usd": round(max(w.usd for w in worst), 6)}
        report["subjects_within_budget"] = budget_outlook(budget, worst)
    return report


def _if_the_server_cannot_score(exp: Experiment, design: Design, client: LLMClient, config: RunConfig,
                                sessions: Any, price: Price | None) -> dict[str, Any]:
    """The dry run's ``if_the_server_cannot_score`` entry (empty where the run cannot fall back):
    the run's probe may find a completions server that returns no log-probabilities, and then samples."""
    if exp.env_cls.sampling_note(design) is None or not client.can_score or not client.http:
        return {}
    client.can_score = False
    try:
        alt = count_requests(exp, design, client, config, sessions)
    finally:
        client.can_score = True
    probe = sum(client.billed_prompt_tokens(prompt)[0] for prompt, _, _ in PROBE_REQUESTS)
    probe_out = sum(out for _, out, _ in PROBE_REQUESTS)
    return {"if_the_server_cannot_score": {
        "calls": alt.calls + len(PROBE_REQUESTS), "estimated_cost_usd": None if price is None else round(
            price.cost(alt.prompt_tokens + probe, alt.completion + probe_out), 4),
        "note": f"a completions server that returns no log-probabilities, or inconsistent ones, is found by "
                f"the scoring probe ({len(PROBE_REQUESTS)} requests) before any subject's call; every scored "
                "step is then sampled"}}


def _calls_range(exp: Experiment, design: Design, config: RunConfig, calls: int, low: RequestCount) -> dict[str, Any]:
    """Where answers decide what is asked next: the requests when every answer is invalid (``low``:
    that playthrough's count), the ceiling no run exceeds (every step a session can take, each asked
    1 + reask times) and a note."""
    ceiling = max(calls * (1 + config.reask), config.n_subjects * exp.env_cls.max_steps(design) * (1 + config.reask))
    note = (
        f"the run makes {calls} requests when every answer is valid (none served from the cache; re-asks "
        f"add to it: calls_with_all_reasks) and {low.calls} when every answer is unparseable (later stages "
        "skipped; a subject's repeat of its own request at temperature 0 served from the cache); other "
        "mixes of answers fall in between, and requests that repeat another subject's may be cached too; "
        f"no run makes more than calls_ceiling = {ceiling} (every step a session can take"
        + (", each re-asked" if config.reask else "") + "), which sessions that run longer than the "
        "playthrough's (more pumps, a longer staircase) approach; max_cost_usd covers the playthrough's steps")
    return {"calls_if_every_answer_is_invalid": low.calls, "calls_ceiling": ceiling, "calls_range": note}

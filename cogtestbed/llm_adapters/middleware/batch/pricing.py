"""Batch prices and the batch part of a run's report (``--batch``: the price table's ``batch_discount``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.prices import Price
from cogtestbed.llm_adapters.middleware.batch.protocol import BATCH_WINDOW_HOURS

logger = logging.getLogger(__name__)


def batch_price(price: Price | None, spec: str) -> Price:
    """The price of ``spec`` in batch mode; ValueError (one line) where the table gives none."""
    batched = None if price is None else price.batch()
    if batched is None:
        raise InputError(f"`batch`: the price table has no batch_discount for {spec} (add one with `prices` FILE)")
    return batched


def batch_report(report: dict[str, Any], standard: Price) -> dict[str, Any]:
    """A dry run's report, made at the batch price (what the run books and pays), with the standard
    price's cost beside it: ``estimated_cost_usd`` / ``max_cost_usd`` are the batch prices,
    ``standard_estimated_cost_usd`` / ``standard_max_cost_usd`` the same requests at the standard price."""
    import math

    keep = 1.0 - (standard.batch_discount or 0.0)
    out = dict(report)
    standard_usd = standard.cost(report["prompt_tokens"], report["max_completion_tokens"])
    out["standard_estimated_cost_usd"] = round(standard_usd, 4)
    if report.get("max_cost_usd") is not None and keep > 0:
        out["standard_max_cost_usd"] = math.ceil(report["max_cost_usd"] / keep * 1e6 - 1e-6) / 1e6
    if isinstance(out.get("price_usd_per_mtok"), dict):  # the batch price, with the discount it has taken off
        out["price_usd_per_mtok"] = {**out["price_usd_per_mtok"], "batch_discount": standard.batch_discount,
                                     "batch_discount_applied": True}
    turns = batch_turnarounds(report)
    out["batch"] = {
        "discount": standard.batch_discount,
        "price_usd_per_mtok": out.get("price_usd_per_mtok"),
        "standard_price_usd_per_mtok": {"input": standard.input, "output": standard.output},
        **turns,
        "note": ("every request travels in the provider's batch API at its batch price; requests whose prompt "
                 "depends on no answer go out in one batch, across all subjects and steps; an experiment whose "
                 "next prompt depends on the previous answer plays its sessions in parallel waves (wave k holds "
                 "step k of every session), one batch turnaround (up to 24 h) per step; scored steps are sampled "
                 "(batch APIs serve no echo scoring)"),
    }
    if turns["worst_case_wall_hours"] > 24:
        warning = (f"batch mode: {turns['batch_turnarounds']} batch turnarounds, up to "
                   f"{turns['worst_case_wall_hours']:g} h ({turns['worst_case_wall_hours'] / 24:.1f} days) if each "
                   f"takes the provider's {BATCH_WINDOW_HOURS} h window")
        out["warnings"] = [*out.get("warnings", []), warning]
    return out


def batch_turnarounds(report: Mapping[str, Any]) -> dict[str, Any]:
    """How many batches a run waits for, one after another, from its dry run's ``report``: one where
    every prompt depends on no answer (all sent at once: ``answer_independent``), else the longest
    session's requests (its steps are asked one after another, every session's step k in one batch);
    each re-ask (``--reask``) may add one per step.  ``worst_case_wall_hours``: each batch taking the
    provider's :data:`BATCH_WINDOW_HOURS` (a batch line that fails and is asked again adds one more)."""
    steps = int(report.get("longest_session_calls") or 0)
    first = 1 if report.get("answer_independent") else steps
    reasks = int(report.get("calls_with_all_reasks") or 0) // max(int(report.get("calls") or 1), 1) - 1
    worst = first + max(reasks, 0) * steps
    return {"batch_turnarounds": first, "batch_turnarounds_with_all_reasks": worst,
            "worst_case_wall_hours": worst * BATCH_WINDOW_HOURS,
            "turnarounds_note": ("one batch holds every request whose prompt depends on no answer"
                                 if report.get("answer_independent") else
                                 f"one batch per step of the longest session ({steps} requests), all sessions' "
                                 "step k in one batch") + (f"; re-asks may add one per step ({worst} in all)"
                                                             if worst > first else "")}

"""A plan's fast pricing against the exhaustive dry run: a large design priced from the search's rendered
sessions, scaled (``Pricer.priced``), stays within its stated 99 % bound of every session rendered
(``Pricer.exact``); a sampled score's repeated requests counted once, ``n_samples`` times, count what they
counted one by one."""

from __future__ import annotations

import pytest

import cogtestbed.planning.pricing as pricing
from cogtestbed.llm_adapters.runs.requests import _grouped
from cogtestbed.planning.plan_report import sampling_words
from cogtestbed.planning.pricing import UNIT_SESSIONS, Pricer, scaled_reports
from cogtestbed.registry import get_experiment

TWO = ("openai:gpt-4o", "openai:gpt-4o-mini")


def _pricer(name: str) -> tuple[Pricer, object]:
    exp = get_experiment(name)
    return Pricer(exp, TWO, seed=0), exp.env_cls.design_cls()


@pytest.mark.parametrize("name", ["two-step", "collider", "temporal-discounting"])
def test_sampled_price_within_its_bound_of_the_exhaustive_one(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pricing, "EXACT_TRIALS", 0)  # every design above the limit: sampled
    pricer, design = _pricer(name)
    n = 12
    sampled, exact = pricer.priced(design, n), pricer.exact(design, n)
    assert exact.sampling is None and exact.source == "dry-run"
    assert sampled.source == "sampled" and sampled.sampling is not None
    assert sampled.sampling["sessions_rendered"] == UNIT_SESSIONS and sampled.sampling["sessions"] == n
    bound = sampled.sampling["prompt_tokens_bound"]
    assert abs(sampled.prompt_tokens - exact.prompt_tokens) <= bound
    assert exact.dollars is not None and sampled.dollars is not None
    assert abs(sampled.dollars - exact.dollars) <= sampled.sampling["dollars_bound"] + 2e-4  # reports round to 1e-4
    if name != "temporal-discounting":  # a fixed design: every session makes the same requests
        assert (sampled.calls, sampled.completion_tokens) == (exact.calls, exact.completion_tokens)
    if name == "collider":  # every session the same prompts: no spread, the same price
        assert bound == 0 and sampled.prompt_tokens == exact.prompt_tokens
    else:
        assert bound > 0
    assert "prompt_tokens_by_session" not in sampled.per_llm[0] and sampled.per_llm[0]["subjects"] == n


def test_small_designs_are_rendered_in_full() -> None:
    pricer, design = _pricer("collider")
    assert pricer.priced(design, 5).source == "dry-run"  # 5 x 240 trials: under EXACT_TRIALS
    assert pricer.priced(design, UNIT_SESSIONS).sampling is None


def test_scaled_report_counts_and_bound() -> None:
    report = {"subjects": 2, "calls": 10, "prompt_tokens": 300, "max_completion_tokens": 80,
              "estimated_cost_usd": 0.0011, "expected_cost_usd": 0.0011, "calls_range": "10 requests ...",
              "price_usd_per_mtok": {"input": 2.5, "output": 10.0, "batch_discount": 0.5},
              "prompt_tokens_by_session": [100, 200]}
    (out,) = scaled_reports([report], 6)
    assert (out["subjects"], out["calls"], out["prompt_tokens"], out["max_completion_tokens"]) == (6, 30, 900, 240)
    assert out["estimated_cost_usd"] == round((900 * 2.5 + 240 * 10.0) / 1e6, 4) == out["expected_cost_usd"]
    assert "calls_range" not in out and "prompt_tokens_by_session" not in out
    se = 70.71067811865476 * (6 * 6 / 2 + 6) ** 0.5  # sd of (100, 200) x sqrt(n^2/k + n)
    assert out["sampled"]["prompt_tokens_se"] == round(se)
    assert out["sampled"]["prompt_tokens_bound"] == pytest.approx(se * 63.657, rel=1e-3)  # t(0.995, 1 df)
    words = sampling_words({"sessions_rendered": 3, "sessions": 40, "dollars_bound": 0.42,
                            "prompt_tokens_bound": 5})
    assert words == " ± $0.42 (99 %: the prompts of 3 of 40 sessions rendered, scaled)"
    assert sampling_words(None) == ""


def test_repeated_requests_grouped() -> None:
    a, b = [{"role": "user", "content": "x"}], "raw"
    assert _grouped([(a, 5)] * 3 + [(b, 5), (b, 1)]) == [(a, 5, 3), (b, 5, 1), (b, 1, 1)]
    assert _grouped([(a, 5), ([{"role": "user", "content": "x"}], 5)])[0][2] == 1  # equal, not the same: apart


def test_sampled_scores_counted_as_before() -> None:
    """Revealed belief's sampled steps (100 draws of one prompt each, on a chat model): the counts the dry run
    gave when each draw was counted on its own (seed 0, one session of the default design)."""
    pricer, design = _pricer("revealed-belief")
    cost = pricer.exact(design, 1)
    assert (cost.calls, cost.prompt_tokens, cost.completion_tokens) == (192000, 18582800, 1536000)
    assert cost.dollars == pytest.approx(32.763)

"""Every HTTP request that may be billed is a call (issue 30): the budget, the dry run and ``run.json``
count the requests the local server (127.0.0.1) answers, the scoring probe included (a retry answered with
an error status bills nothing and is no call); a server
that cannot score is found before any subject's call; retries of scored calls are recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from study_scripts import load_study
from typer.testing import CliRunner
from versions import assert_exact_versions

from cogtestbed.cli import app

REVEALED = ("--design", "scenarios=choice", "--design", "variants=regular", "--design", "choice_options=2,6",
            "--design", "n_samples=3")


def _check_accounting(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert "error" not in row, row
        assert row["exit"] == 0, row
        assert row["run_calls"] == row["http_requests"], row  # every request counted, nothing else
        assert row["run_usd"] == pytest.approx(row["billed_usd"], abs=1e-6), row  # the server's usage
        assert row["dry_max_usd"] >= row["billed_usd"], row  # the dry run's bound holds
        # the dry run counts prompts with the served model's own tokenizer (loaded locally)
        assert row["token_counts"] == "exact", row
        assert row["billed_completion"] <= row["dry_max_completion"] or "no logprobs" in row["mode"], row
        if "no logprobs" in row["mode"]:
            assert row["scoring"] == "sampled" and row["dry_calls_if_no_scoring"] == row["http_requests"], row
            assert row["dry_usd_if_no_scoring"] >= row["billed_usd"], row
        elif row["experiment"] == "two-step":  # answers decide the stages: the run falls in the dry run's range
            assert row["dry_calls_if_all_invalid"] <= row["http_requests"] <= row["dry_calls"], row
            assert not row["prompts_fixed"], row
        elif not row["prompts_fixed"]:  # magnitude's chat history quotes the model's own answers
            assert row["experiment"] == "magnitude" and row["dry_calls"] == row["http_requests"], row
        else:  # no prompt renders an answer: the same requests, the same prompt tokens as billed
            assert row["dry_calls"] == row["http_requests"], row
            assert row["dry_prompt_tokens"] == row["billed_prompt_tokens"], row
            if row["model"] == "tiny":  # it never stops before --max-tokens: the ceiling is billed exactly
                assert row["billed_completion"] == row["dry_max_completion"], row
                assert row["dry_usd"] == pytest.approx(row["billed_usd"], abs=1e-6), row


def test_quick_study_counts_every_request_and_never_passes_a_cap() -> None:
    out = load_study("http_accounting").main(["--quick"])
    _check_accounting(out["accounting"])
    assert len(out["caps"]) == 3 and not any(c["over_cap"] for c in out["caps"])
    assert sum(c["retries"] or 0 for c in out["caps"]) > 0  # faults were ridden out and recorded


@pytest.mark.slow
def test_full_study_every_mode_and_twenty_capped_runs() -> None:
    out = load_study("http_accounting").main([])
    _check_accounting(out["accounting"])
    assert len(out["caps"]) >= 20 and not any(c["over_cap"] for c in out["caps"])


def test_retries_of_scored_calls_are_recorded(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogtestbed.llm_adapters.servers.server import Fault

    url, faults = server
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    faults.add(Fault("delay", seconds=0.0), Fault("delay", seconds=0.0),  # the probe's two requests pass
               *[Fault("status", 503, retry_after=0)] * 3)
    before = len(faults.log)
    res = CliRunner().invoke(app, ["run", "revealed-belief", "--llm", "openai:tiny-random", "--mode", "completions",
                                   "--base-url", url, "--subjects", "1", "-o", str(tmp_path / "run"), *REVEALED])
    assert res.exit_code == 0, res.output
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert_exact_versions(run["versions"])
    # the first scored item's first request met three 503s, each retried and recorded
    assert run["scoring"]["method"] == "exact" and run["scoring"]["probe_retries"] == 0
    assert int(calls["retries"].sum()) == 3 and run["stats"]["retries"] == 3
    retried = calls[calls["retries"] > 0]
    assert (retried["kind"] == "score").all() and retried["retry_log"].str.contains("HTTP 503").all()
    # every HTTP request that may be billed (the probe included) is a call of the budget; the three 503s
    # billed nothing and are none
    assert run["stats"]["total_calls"] == len(faults.log) - before - 3


def test_a_server_without_logprobs_is_found_before_any_subject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              tiny: Any) -> None:
    from cogtestbed.llm_adapters.servers.server import Billing, serve

    billing = Billing(logprobs=False)
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    with serve({"tiny-random": tiny}, billing=billing) as url:
        res = CliRunner().invoke(app, ["run", "revealed-belief", "--llm", "openai:tiny-random", "--mode",
                                       "completions", "--base-url", url, "--subjects", "1", "--max-calls", "14",
                                       "-o", str(tmp_path / "run"), *REVEALED])
    assert res.exit_code == 0, res.output
    assert "exact scoring refused" in res.stderr and "no echoed prompt log-probabilities" in res.stderr
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["scoring"]["method"] == "sampled" and run["warnings"]  # announced and recorded
    assert "no echoed prompt log-probabilities" in run["scoring"]["probe"]  # with why
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    assert set(calls["kind"]) == {"sample"} and len(calls) == 12  # no scoring request after the probe
    # 2 probe requests + 4 scored steps × 3 samples: the cap of 14 is met exactly, never passed
    assert billing.requests == run["stats"]["total_calls"] == 14


def test_a_plan_books_the_worst_of_exact_scoring_and_its_sampling_fallback() -> None:
    from cogtestbed.planning.pricing import _sum_reports

    report = {"calls": 37, "prompt_tokens": 900, "max_completion_tokens": 40, "estimated_cost_usd": 3.3,
              "token_counts": "approximate",
              "if_the_server_cannot_score": {"calls": 49, "estimated_cost_usd": 4.1}}
    cost = _sum_reports([report], "dry-run")
    assert cost.calls == 49 and cost.dollars == pytest.approx(4.1)
    cheaper = {**report, "if_the_server_cannot_score": {"calls": 25, "estimated_cost_usd": 2.0}}
    assert _sum_reports([cheaper], "dry-run").calls == 37

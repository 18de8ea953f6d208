"""Batch runs that always resume (issue 48 item 1): every end a batch can have — failed, expired,
cancelled, gone (404 after it was created), a corrupt result line, garbage ``request_counts``, answers
without usage, an answer also listed in the error file, conflicting duplicate answers — ends in a run
that (with ``--resume`` where it stopped) completes with a clean run's trial table, its ledger equal to
what the fault server billed (plus, where the bill cannot be known, the worst case of those lines), no
booking left open, and nothing asked twice that was billed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from study_scripts import load_study
from support.batch_emulator import BatchFault

#: Run in the default suite (each ~10 s); the rest are ``-m slow``.
QUICK = ("failed", "gone", "conflicting duplicate answers", "corrupt line")


@pytest.fixture(scope="module")
def study() -> Any:
    return load_study("batch_mode")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, study: Any) -> Path:
    (tmp_path / "prices.toml").write_text(study.PRICES)
    monkeypatch.setenv("COGTESTBED_PRICES", str(tmp_path / "prices.toml"))
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    return tmp_path


@pytest.fixture(scope="module")
def faults() -> Any:
    return load_study("batch_faults")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory, study: Any, faults: Any) -> list[Any]:
    root = tmp_path_factory.mktemp("clean")
    (root / "prices.toml").write_text(study.PRICES)
    mp = pytest.MonkeyPatch()
    mp.setenv("COGTESTBED_PRICES", str(root / "prices.toml"))
    mp.setenv("COGTESTBED_CACHE", str(root / "cache.sqlite"))
    try:
        return list(faults.clean_trials(root))
    finally:
        mp.undo()


@pytest.mark.parametrize("name", [n if n in QUICK else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(load_study("batch_faults").FAULTS)])
def test_every_batch_end_completes_with_the_clean_trials_and_the_billed_ledger(
        env: Path, faults: Any, clean: list[Any], name: str) -> None:
    row = faults.fault_row(name, env, clean)
    assert row["exit"] == faults.FAULTS[name][2], row
    if row["exit"]:  # refused in one line naming the id, and --resume completes the run
        assert "custom_id w0-1 is answered twice with different answers" in row["error_line"], row
        assert row["resume_exit"] == 0, row
    assert row["status"] == "complete" and row["same_trials"], row
    assert row["open_bookings"] == 0, row
    assert abs(row["ledger_minus_billed_minus_unknown"]) < 1e-9, row  # the ledger is what the server billed
    # nothing billed is asked again: a line is run twice only where its first run left no answer
    assert row["run_twice"] == (1 if name in ("gone", "conflicting duplicate answers", "corrupt line",
                                              "corrupt line naming its id") else 0), row
    whole = name in ("answered and in the error file", "garbage request_counts", "no usage")
    # one batch for all 40 collider requests, and where answers are missing one more that asks them again
    assert row["batches"] == (1 if whole else 2), row


#: Ends met by ``--resume`` collecting a batch an earlier invocation left (killed with it in flight):
#: (the fault, whether the line was billed, whether at its worst case, whether its answer is kept).
RECOVERED = {
    "failed": (BatchFault(fail="injected"), False, False, False),
    "gone": (BatchFault(gone_after=0), True, True, False),
    "no usage": (BatchFault(no_usage=(0,)), True, True, True),
    "corrupt line": (BatchFault(corrupt=(0,)), True, True, False),
    "garbage request_counts": (BatchFault(garbage_counts=True), True, False, True),
}


@pytest.mark.parametrize("name", sorted(RECOVERED))
def test_resume_collects_a_batch_left_in_flight_whatever_its_end(tmp_path: Path, tiny_chat: Any, name: str) -> None:
    """Killed after the batch was created: ``--resume`` collects it whatever its end — no error, its
    booking settled (the usage reported; the worst case where it is unknown, never $0), the answer
    kept where there is one, the wave done (the replay asks what has no answer)."""
    import asyncio

    from support.batch_emulator import BatchEmulator, serve_batches

    from cogtestbed.llm_adapters.clients.base import GenerateRequest
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient
    from cogtestbed.llm_adapters.clients.prices import Price
    from cogtestbed.llm_adapters.middleware.batch.client import BatchClient
    from cogtestbed.llm_adapters.middleware.batch.record import BatchRecord, open_ledger_ids
    from cogtestbed.llm_adapters.middleware.cache import ResponseCache, cache_key
    from cogtestbed.llm_adapters.middleware.limits import Budget, read_ledger

    fault, billed, at_worst, kept = RECOVERED[name]
    price = Price(1000.0, 2000.0)
    emulator = BatchEmulator({"tiny-random-chat": tiny_chat}, polls=1, faults=[fault])
    ledger = tmp_path / "spend.jsonl"
    request = GenerateRequest("Which option, A or B?", max_tokens=4)
    with serve_batches(emulator) as url:
        client = BatchClient(OpenAIClient("tiny-random-chat", base_url=url + "/v1"), poll=0.01)
        bound = client.inner.prompt_token_bound(request.prompt)
        worst = price.cost(bound, 4)
        ledger.write_text(json.dumps({"id": "L0", "reserve_usd": worst}) + "\n")
        key = cache_key(client, request)

        async def killed_then_resumed() -> None:
            batch_id = await client.provider.submit([client.provider.line("w0-0", request)], "tag-0")
            record = BatchRecord(tmp_path / "batches.jsonl")
            record.write({"event": "submit", "wave": 0, "tag": "tag-0", "lines": [
                {"custom_id": "w0-0", "key": key, "request": request.to_json(), "bound": bound,
                 "ledger_id": "L0", "worst_usd": worst}]})
            record.write({"event": "created", "wave": 0, "batch_id": batch_id})
            with ledger.open() as fh:
                budget = Budget(price=price, spent=read_ledger(fh))

            def append(event: dict[str, object]) -> None:
                with ledger.open("a") as out:
                    out.write(json.dumps(event) + "\n")

            budget.ledger = append
            client.attach(tmp_path, cache, budget, ledger)
            await client.recover()
            await client.aclose()

        cache = ResponseCache(tmp_path / "cache.sqlite")
        asyncio.run(killed_then_resumed())
    assert BatchRecord(tmp_path / "batches.jsonl").unfinished() == [] and open_ledger_ids(ledger) == set()
    with ledger.open() as fh:
        spend = read_ledger(fh)
    usage = emulator.tally.by_id.get("w0-0", (0, 0))
    expected = worst if at_worst else price.cost(*usage) if billed else 0.0
    assert spend.cost == pytest.approx(expected) and spend.calls == int(billed), (name, spend)
    if at_worst:
        assert spend.cost > 0
    assert (cache.get(key) is not None) == kept
    cache.close()

"""Batch mode (issue 39 item 6) against the local batch-endpoint emulator (127.0.0.1 only): calls and
dollars equal to the dry run's, expiry and partial errors re-asked, kill -9 + ``--resume`` loses and
duplicates nothing, sessions in parallel waves, batch prices in the table and the dry run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from study_scripts import load_study


def _check_kill(row: dict[str, Any]) -> None:
    assert row["killed_mid_poll"] and 0 < row["ran_before_kill"] < row["dry_calls"], row
    assert row["uninterrupted_exit"] == 0 and row["killed_exit"] == 0, row
    assert row["lost"] == 0 and row["duplicated"] == 0, row
    assert row["killed_ran"] == row["killed_calls"] == row["dry_calls"], row
    assert row["killed_usd"] == pytest.approx(row["dry_usd"], abs=1e-4), row
    assert row["same_trials"], row


@pytest.mark.slow
def test_kill_9_mid_poll_then_resume_loses_and_duplicates_nothing(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    study = load_study("batch_mode")
    (tmp_path / "prices.toml").write_text(study.PRICES)
    monkeypatch.setenv("COGTESTBED_PRICES", str(tmp_path / "prices.toml"))
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    _check_kill(study.kill_row("openai", tmp_path, 2))


@pytest.mark.slow
def test_quick_study_calls_dollars_faults_and_kill() -> None:
    out = load_study("batch_mode").main(["--quick"])
    for row in out["accounting"]:
        assert row["exit"] == 0, row
        assert row["run_calls"] == row["emulator_ran"], row  # every line run is a call, nothing else
        assert row["same_trials_as_one_by_one"], row  # batches change how requests travel, not the answers
        assert row["emulator_ran"] == row["one_by_one_requests"], row
        assert row["dry_standard_usd"] == pytest.approx(2 * row["dry_usd"], rel=1e-3), row  # half price
        if row["prompts_fixed"]:  # no prompt renders an answer: the dry run is the run
            assert row["run_calls"] == row["dry_calls"], row
            assert row["run_usd"] == pytest.approx(row["dry_usd"], abs=1e-4), row
        else:
            assert row["dry_calls_if_all_invalid"] <= row["run_calls"] <= row["dry_calls"], row
            assert row["run_usd"] <= row["dry_max_usd"], row
    for row in out["faults"]:  # one batch of every request: 1 ran, the rest expired; their re-ask has a failed line
        assert row["exit"] == 0 and row["expired"] == row["first_batch_lines"] - 1 and row["errored"] == 1, row
        assert row["reasked"] == row["expired"] + 1 and row["batches"] == 3, row
        assert row["same_trials_as_clean_run"], row
        assert row["run_calls"] == row["emulator_ran"] + row["errored"], row  # an errored line is a call; expired not
    for row in out["kills"]:
        _check_kill(row)


def test_anthropic_message_batches_expiry_and_errors_are_reasked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    study = load_study("batch_mode")
    (tmp_path / "prices.toml").write_text(study.PRICES)
    monkeypatch.setenv("COGTESTBED_PRICES", str(tmp_path / "prices.toml"))
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))  # restored after the study sets it
    row = study.fault_row("anthropic", tmp_path)
    # one batch of all 60 requests (3 subjects x 20): 1 ran, 59 expired; their re-ask has a failed line
    assert row["first_batch_lines"] == 60 and row["batches"] == 3, row
    assert row["exit"] == 0 and row["expired"] == 59 and row["errored"] == 1 and row["reasked"] == 60, row
    assert row["run_calls"] == row["emulator_ran"] + 1, row
    run = json.loads((tmp_path / "fault-anthropic" / "run.json").read_text())
    assert run["batch"]["provider"] == "anthropic" and run["transport"]["batch"] is True
    assert run["stats"]["subjects_complete"] == 3


class _ScriptedProvider:
    """A provider answering every line at once with its custom id; records the batches it got."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.http_requests = 0

    def line(self, custom_id: str, request: Any) -> dict[str, Any]:
        return {"custom_id": custom_id, "prompt": request.prompt}

    async def submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        self.batches.append([line["prompt"] for line in lines])
        return f"b{len(self.batches)}"

    async def status(self, batch_id: str) -> Any:
        from cogtestbed.llm_adapters.middleware.batch.protocol import BatchStatus

        return BatchStatus("completed", True, 1, 1, 0)

    async def results(self, batch_id: str, requests: Any) -> Any:
        from cogtestbed.llm_adapters.clients.base import Generation
        from cogtestbed.llm_adapters.middleware.batch.protocol import LineOutcome

        return {cid: LineOutcome(Generation(f"answer to {r.prompt}", 3, 2), billed=True) for cid, r in requests.items()}


def test_sequential_sessions_run_in_waves_of_one_step_each(tmp_path: Path) -> None:
    """Each session's next prompt depends on its previous answer: wave k holds step k of every session."""
    from cogtestbed.llm_adapters.clients.base import GenerateRequest
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient
    from cogtestbed.llm_adapters.clients.prices import Price
    from cogtestbed.llm_adapters.middleware.batch.client import BatchClient
    from cogtestbed.llm_adapters.middleware.cache import CURRENT_SUBJECT, ResponseCache, SubjectTicket
    from cogtestbed.llm_adapters.middleware.limits import Budget, Need

    client = BatchClient(OpenAIClient("m", base_url="http://127.0.0.1:9/v1"), poll=0.01)
    provider = _ScriptedProvider()
    client.provider = provider  # type: ignore[assignment]
    cache = ResponseCache(tmp_path / "cache.sqlite")
    budget = Budget(max_calls=12, price=Price(1.0, 2.0))
    client.attach(tmp_path, cache, budget, tmp_path / "spend.jsonl")

    async def session(i: int) -> list[str]:
        CURRENT_SUBJECT.set(SubjectTicket(i, lambda: Need()))
        answers, previous = [], "start"
        for step in range(3):
            gen = await client.agenerate(GenerateRequest(f"s{i} t{step} after {previous}", max_tokens=4))
            previous = gen.text
            answers.append(gen.text)
        client.subject_finished()
        return answers

    async def play() -> list[list[str]]:
        client.live = 4
        return list(await asyncio.gather(*(session(i) for i in range(4))))

    answers = asyncio.run(play())
    assert len(provider.batches) == 3  # three waves, not twelve requests one by one
    for step, batch in enumerate(provider.batches):
        assert sorted(p.split(" after ")[0] for p in batch) == [f"s{i} t{step}" for i in range(4)]
    assert answers[2][1] == "answer to s2 t1 after answer to s2 t0 after start"  # each step saw its answer
    assert budget.spent.calls == 12 and budget.spent.cost == pytest.approx(12 * (3 * 1 + 2 * 2) / 1e6)
    record = [json.loads(x) for x in (tmp_path / "batches.jsonl").read_text().splitlines()]
    assert [e["event"] for e in record] == ["submit", "created", "done"] * 3
    assert all(line["ledger_id"] for e in record if e["event"] == "submit" for line in e["lines"])
    cache.close()


def test_price_table_batch_discount_and_refusals(tmp_path: Path) -> None:
    from cogtestbed.llm_adapters.clients.prices import Price, PriceTable
    from cogtestbed.llm_adapters.middleware.batch.pricing import batch_price

    table = PriceTable()
    for spec in ("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5"):
        price = table.lookup(spec)
        assert price is not None and price.batch_discount == 0.5
        batched = batch_price(price, spec)
        assert (batched.input, batched.output) == (price.input / 2, price.output / 2)
    with pytest.raises(ValueError, match="no batch_discount for openai:x"):
        batch_price(Price(1.0, 2.0), "openai:x")
    bad = tmp_path / "bad.toml"
    bad.write_text('["openai:x"]\ninput = 1.0\noutput = 2.0\nbatch_discount = 1.5\n')
    with pytest.raises(ValueError, match="batch_discount is the share taken off"):
        PriceTable(bad)


def test_batch_is_refused_in_one_line_where_it_cannot_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli

    prices = tmp_path / "p.toml"
    prices.write_text('["openai:plain*"]\ninput = 1.0\noutput = 2.0\n')
    for args, message in (
            (["--llm", "hf:tiny-random"], "--batch needs a hosted backend"),
            (["--llm", "openai:plain-model", "--base-url", "http://127.0.0.1:9/v1", "--prices", str(prices)],
             "no batch_discount for openai:plain-model"),
            (["--llm", "openai:gpt-4o-mini", "--poll-every", "0"], "--poll-every must be a positive number")):
        code = run_cli(["run", "collider", *args, "--batch", "--dry-run", "-o", str(tmp_path / "r")])
        err = capsys.readouterr().err
        assert code == 2, err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_plan_prices_batch_mode_at_the_discount_and_shows_the_standard_price() -> None:
    from cogtestbed.planning.plan_report import summary_line
    from cogtestbed.planning.pricing import Pricer
    from cogtestbed.registry import get_experiment

    exp = get_experiment("two-step")
    design = exp.env_cls.design_cls(n_days=4)
    standard = Pricer(exp, ("openai:gpt-4o-mini",), seed=0).exact(design, 3)
    batch = Pricer(exp, ("openai:gpt-4o-mini",), seed=0, batch=True).exact(design, 3)
    assert batch.calls == standard.calls and batch.prompt_tokens == standard.prompt_tokens
    assert standard.dollars is not None and batch.dollars is not None and batch.standard_dollars is not None
    assert batch.dollars == pytest.approx(standard.dollars / 2, rel=1e-3)
    assert batch.standard_dollars == pytest.approx(standard.dollars, rel=1e-3)
    payload = {"chosen": {"design": "3 subjects", "sessions_per_llm": 3}, "cost": batch.as_dict(),
               "power": {"rate": 0.9, "sims": 100}, "target": {"power": 0.8, "what": "x"},
               "run": {"llms": ["openai:gpt-4o-mini"]}}
    assert "in batch mode" in summary_line(payload) and "at the standard price" in summary_line(payload)
    # each two-step answer decides the next prompt: one batch per step of the longest session (4 days x 2 stages)
    turns = batch.per_llm[0]["batch"]
    assert turns["batch_turnarounds"] == 8 == batch.per_llm[0]["longest_session_calls"]
    assert "8 batch turnaround(s), up to 192 h — WARNING: more than a day (8.0 days)" in summary_line(payload)


def test_resume_finds_a_batch_created_before_its_id_was_recorded(tmp_path: Path, tiny_chat: Any) -> None:
    """Killed between the provider accepting a batch and the ``created`` line: ``--resume`` finds the
    batch by the wave's tag (OpenAI's batch metadata), collects it, and settles its ledger booking."""
    from support.batch_emulator import BatchEmulator, serve_batches

    from cogtestbed.llm_adapters.clients.base import GenerateRequest
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient
    from cogtestbed.llm_adapters.clients.prices import Price
    from cogtestbed.llm_adapters.middleware.batch.client import BatchClient
    from cogtestbed.llm_adapters.middleware.batch.record import BatchRecord
    from cogtestbed.llm_adapters.middleware.cache import ResponseCache, cache_key
    from cogtestbed.llm_adapters.middleware.limits import Budget, read_ledger
    from cogtestbed.llm_adapters.runs.runner import _start_batches

    emulator = BatchEmulator({"tiny-random-chat": tiny_chat}, polls=1)
    ledger = tmp_path / "spend.jsonl"
    ledger.write_text(json.dumps({"id": "L0", "reserve_usd": 0.5}) + "\n")
    request = GenerateRequest("Which option, A or B?", max_tokens=4)
    with serve_batches(emulator) as url:
        client = BatchClient(OpenAIClient("tiny-random-chat", base_url=url + "/v1"), poll=0.01)
        key = cache_key(client, request)
        line = client.provider.line("w0-0", request)
        BatchRecord(tmp_path / "batches.jsonl").write(
            {"event": "submit", "wave": 0, "tag": "tag-0", "lines": [
                {"custom_id": "w0-0", "key": key, "request": request.to_json(), "ledger_id": "L0",
                 "worst_usd": 0.5}]})
        cache = ResponseCache(tmp_path / "cache.sqlite")
        with ledger.open() as fh:
            budget = Budget(price=Price(1000.0, 2000.0), spent=read_ledger(fh))

        def append(event: dict[str, object]) -> None:
            with ledger.open("a") as out:
                out.write(json.dumps(event) + "\n")

        budget.ledger = append

        async def killed_then_resumed() -> None:
            await client.provider.submit([line], "tag-0")  # accepted; the process died before recording it
            client.attach(tmp_path, cache, budget, ledger)
            await client.recover()
            await client.aclose()

        asyncio.run(killed_then_resumed())
    assert emulator.tally.requests_run == 1 and emulator.tally.http["batches.list"] == 1
    assert cache.get(key) is not None  # the answer is in the cache: the replay will not ask again
    billed = (emulator.tally.prompt_tokens * 1000.0 + emulator.tally.completion_tokens * 2000.0) / 1e6
    assert budget.spent.calls == 1 and budget.spent.cost == pytest.approx(billed)
    with ledger.open() as fh:
        assert read_ledger(fh).cost == pytest.approx(billed)  # the booking settled at the usage reported
    assert BatchRecord(tmp_path / "batches.jsonl").unfinished() == []
    cache.close()

    class _Plain:  # a run directory with batches in flight is not resumed without --batch
        base = object()

    BatchRecord(tmp_path / "batches.jsonl").write({"event": "submit", "wave": 1, "tag": "t", "lines": []})

    class _Dir:
        path = tmp_path

    with pytest.raises(ValueError, match="batch\\(es\\) in flight: resume it with `batch`"):
        asyncio.run(_start_batches(_Plain(), _Dir(), budget))  # type: ignore[arg-type]


def _one_batched_answer(client: Any, tmp_path: Path, budget: Any) -> Any:
    """Ask ``client`` (a BatchClient) one request as the only subject of a run; the answer or the error."""
    from cogtestbed.llm_adapters.clients.base import GenerateRequest
    from cogtestbed.llm_adapters.middleware.cache import ResponseCache

    cache = ResponseCache(tmp_path / "cache.sqlite")
    client.attach(tmp_path, cache, budget, tmp_path / "spend.jsonl")

    async def ask() -> Any:
        client.live = 1
        try:
            return await client.agenerate(GenerateRequest("Which option, A or B?", max_tokens=4))
        except Exception as exc:  # noqa: BLE001 - returned for the test to judge
            return exc
        finally:
            await client.aclose()

    try:
        return asyncio.run(ask())
    finally:
        cache.close()


def test_every_batch_api_request_is_counted_against_a_bounded_budget(tmp_path: Path, tiny_chat: Any) -> None:
    """Upload, create, polls and downloads are no model calls, but each is a service request of the budget
    (every one the emulator received, none uncounted), and the budget's bound stops the run before the next."""
    from support.batch_emulator import BatchEmulator, serve_batches

    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient
    from cogtestbed.llm_adapters.clients.prices import Price
    from cogtestbed.llm_adapters.middleware.batch.client import BatchClient
    from cogtestbed.llm_adapters.middleware.limits import Budget, BudgetExhausted

    emulator = BatchEmulator({"tiny-random-chat": tiny_chat}, polls=3)
    with serve_batches(emulator) as url:
        client = BatchClient(OpenAIClient("tiny-random-chat", base_url=url + "/v1"), poll=0.01)
        budget = Budget(price=Price(1.0, 2.0))
        gen = _one_batched_answer(client, tmp_path / "a", budget)
    assert not isinstance(gen, Exception), gen
    received = sum(emulator.tally.http.values())
    # one upload, one create, polls until it ended, the retrieve for its files, the output file
    assert emulator.tally.http["files.create"] == emulator.tally.http["batches.create"] == 1
    assert emulator.tally.http["batches.retrieve"] >= 3 and emulator.tally.http["files.content"] >= 1
    assert budget.service_requests == client.provider.http_requests == received
    assert budget.spent.calls == 1 and budget.summary()["service_requests"] == received

    emulator = BatchEmulator({"tiny-random-chat": tiny_chat}, polls=3)
    with serve_batches(emulator) as url:
        client = BatchClient(OpenAIClient("tiny-random-chat", base_url=url + "/v1"), poll=0.01)
        budget = Budget(price=Price(1.0, 2.0), max_service_requests=3)
        stopped = _one_batched_answer(client, tmp_path / "b", budget)
    assert isinstance(stopped, BudgetExhausted), stopped
    assert sum(emulator.tally.http.values()) == 3 == budget.service_requests  # upload, create, one poll; no 4th
    assert "`max_service_requests` 3" in str(stopped) and "batch poll" in str(stopped)
    with pytest.raises(ValueError, match="`max_service_requests`"):
        Budget(max_service_requests=-1)


def test_the_command_lines_default_bound_on_service_requests_is_the_librarys() -> None:
    from cogtestbed.api import run as run_api
    from cogtestbed.llm_adapters.middleware.limits import DEFAULT_MAX_SERVICE_REQUESTS

    assert run_api.DEFAULT_MAX_SERVICE_REQUESTS == DEFAULT_MAX_SERVICE_REQUESTS


def test_a_run_stopped_by_its_service_request_bound_exits_3_and_resumes(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``run --batch --max-service-requests N``: the request beyond N is not sent, the run stops as a budget
    stop does (exit 3, run.json says why and counts them), and ``--resume`` collects the batch in flight."""
    from support.batch_emulator import BatchEmulator, serve_batches

    study = load_study("batch_mode")
    (tmp_path / "prices.toml").write_text(study.PRICES)
    monkeypatch.setenv("COGTESTBED_PRICES", str(tmp_path / "prices.toml"))
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    emulator = BatchEmulator(study.models(), polls=2)
    out = tmp_path / "run"
    with serve_batches(emulator) as url:
        args = study.run_args("collider", "openai", url, out, 2)
        code, _ = study.cli([*args, "--max-service-requests", "3"])
        assert code == 3
        assert sum(emulator.tally.http.values()) == 3  # upload, create, one poll; the 4th never sent
        stopped = json.loads((out / "run.json").read_text())
        assert stopped["status"] == "stopped", stopped["status"]
        assert "`max_service_requests` 3" in json.dumps(stopped)
        assert study.cli([*args, "--resume"])[0] == 0
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete" and run["stats"]["subjects_complete"] == 2
    assert emulator.tally.requests_run == run["stats"]["total_calls"]  # nothing lost, nothing sent twice


def _batch_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, study: Any) -> None:
    (tmp_path / "prices.toml").write_text(study.PRICES)
    monkeypatch.setenv("COGTESTBED_PRICES", str(tmp_path / "prices.toml"))
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))


def test_a_60_prompt_collider_batch_run_sends_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 48 item 2: no collider prompt depends on an answer, so all 60 (3 subjects x 20) go in one
    batch; the dry run says 1 turnaround; the play reads them as this run's calls, not cache hits."""
    import pandas as pd
    from support.batch_emulator import BatchEmulator, serve_batches

    study = load_study("batch_mode")
    _batch_env(tmp_path, monkeypatch, study)
    emulator = BatchEmulator(study.models(), polls=2)
    with serve_batches(emulator) as url:
        args = study.run_args("collider", "openai", url, tmp_path / "run", 3)
        dry = json.loads(study.cli([*args[:-2], *args[-2:], "--dry-run", "-o", str(tmp_path / "dry")])[1])
        assert study.cli(args)[0] == 0
    assert dry["calls"] == 60 and dry["batch"]["batch_turnarounds"] == 1
    assert dry["batch"]["worst_case_wall_hours"] == 24 and not any("turnarounds" in w for w in dry.get("warnings", []))
    assert dry["price_usd_per_mtok"]["batch_discount"] == 0.5  # the discount the batch price has taken off
    assert emulator.tally.http["batches.create"] == 1 and emulator.tally.requests_run == 60
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["batch"]["batches"] == 1 and run["batch"]["lines"] == 60 and run["stats"]["total_calls"] == 60
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    assert len(calls) == 60 and not calls["cached"].any() and run["stats"]["cache_hits"] == 0


@pytest.mark.slow
def test_a_2_subject_instrumental_batch_run_sends_one_batch_per_step(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each instrumental-learning prompt renders the previous answer's outcome: one batch per step, each
    holding both subjects' step; the dry run counts as many turnarounds and warns past a day."""
    from support.batch_emulator import BatchEmulator, serve_batches

    study = load_study("batch_mode")
    _batch_env(tmp_path, monkeypatch, study)
    emulator = BatchEmulator(study.models(), polls=1)
    with serve_batches(emulator) as url:
        args = ["run", "instrumental-learning", "--llm", f"openai:{study.MODEL}", "--base-url", url + "/v1",
                "--subjects", "2", "-o", str(tmp_path / "run"), "--batch", "--poll-every", "0.01",
                "--design", "visits_per_casino=3"]
        dry = json.loads(study.cli([*args, "--dry-run", "-o", str(tmp_path / "dry")])[1])
        assert study.cli(args)[0] == 0
    steps = 4 * 3  # four casinos, three visits each
    assert dry["batch"]["batch_turnarounds"] == steps and dry["batch"]["worst_case_wall_hours"] == 24 * steps
    assert any(f"{steps} batch turnarounds" in w and "days" in w for w in dry["warnings"])
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["batch"]["batches"] == steps == emulator.tally.http["batches.create"]
    assert run["batch"]["lines"] == 2 * steps  # both subjects' step k in batch k


def test_run_batch_against_a_server_without_a_batch_api_says_so(server: Any, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli
    from cogtestbed.llm_adapters.middleware.limits import read_ledger

    study = load_study("batch_mode")
    _batch_env(tmp_path, monkeypatch, study)
    url, _ = server
    code = run_cli(study.run_args("collider", "openai", url.removesuffix("/v1"), tmp_path / "run", 1))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len([x for x in err if x.startswith("error")]) == 1 and "Traceback" not in "\n".join(err)
    assert "has no batch API (POST /v1/files answered HTTP 404); run without --batch" in err[-1], err
    ledger = tmp_path / "run" / "spend.jsonl"
    if ledger.exists():  # a run directory kept: nothing created, nothing booked
        with ledger.open() as fh:
            assert read_ledger(fh).cost == 0


def test_the_emulator_lists_its_models(tiny_chat: Any) -> None:
    import httpx
    from support.batch_emulator import BatchEmulator, serve_batches

    with serve_batches(BatchEmulator({"tiny-random-chat": tiny_chat})) as url:
        models = httpx.get(url + "/v1/models").json()
    assert [m["id"] for m in models["data"]] == ["tiny-random-chat"]

"""`cogtestbed run` under hostile conditions: a budget that is never exceeded and is a total over the
run directory, a locked run directory, transport settings that may change on resume, one-unit
commits, one-line backend errors with a consistent run state, logged retries, the fault-injecting
server's command line.  Real components: the tiny local model, the local OpenAI-compatible server,
the CLI in this process (its exit status and stderr)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("openai")

from filelock import FileLock  # noqa: E402

from cogtestbed.errors import InputError  # noqa: E402
from cogtestbed.llm_adapters.clients.prices import Price
from cogtestbed.llm_adapters.middleware.cache import CachedClient, ResponseCache  # noqa: E402
from cogtestbed.llm_adapters.middleware.limits import Budget, BudgetExhausted, Need, read_ledger  # noqa: E402
from cogtestbed.llm_adapters.runs import rundir as rundir_mod  # noqa: E402
from cogtestbed.llm_adapters.runs.config import RunConfig, draw_sessions
from cogtestbed.llm_adapters.runs.requests import subject_needs
from cogtestbed.llm_adapters.runs.runner import run_experiment  # noqa: E402
from cogtestbed.llm_adapters.servers.server import fault_injector  # noqa: E402
from cogtestbed.outputs import WriteFailed  # noqa: E402
from cogtestbed.registry import get_experiment  # noqa: E402

EXP = "instrumental-learning"
SMALL = ["--design", "visits_per_casino=2"]  # 8 trials per subject
#: USD per million tokens for the local model: 1000 makes a token cost $0.001.
PRICES = '["openai:tiny-random"]\ninput = 1000\noutput = 1000\n'


_last_stdout = ""


def cli(capsys, *args: str) -> tuple[int, str]:
    """Run the CLI in this process: (exit status, stderr); stdout is kept in ``_last_stdout``."""
    global _last_stdout
    from cogtestbed.cli import main

    argv, sys.argv = sys.argv, ["cogtestbed", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
    captured = capsys.readouterr()
    _last_stdout = captured.out
    return code, captured.err


def error_lines(err: str) -> list[str]:
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith("error:")]


def manifest(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def served(url: str, tmp: Path, *extra: str) -> list[str]:
    return [EXP, "--llm", "openai:tiny-random", "--mode", "completions", "--base-url", url,
            "--cache", str(tmp / "cache.sqlite"), *SMALL, *extra]


# ----------------------------------------------------------------------------- money
def test_max_cost_is_never_exceeded_and_pays_only_for_subjects_that_finish(tmp_path, capsys, server):
    """Concurrency above the number of subjects: the cap holds, and every paid call belongs to a
    subject that finished (the old reservation used ~4 chars/token and paid for partial subjects)."""
    url, _ = server
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    cap = 9.0
    code, err = cli(capsys, "run", *served(url, tmp_path, "--subjects", "4", "--concurrency", "8",
                                           "--prices", str(prices), "--max-cost", str(cap), "-o",
                                           str(tmp_path / "run")))
    assert code == 3, err  # a budget stop has its own exit status
    stats = manifest(tmp_path / "run")["stats"]
    assert 0 < stats["total_cost_usd"] <= cap
    assert stats["subjects_complete"] >= 1
    assert stats["new_calls"] == 8 * stats["subjects_complete"]  # nothing paid for unfinished subjects
    assert "admits" in err and "subjects" in err  # how many subjects the budget allows
    calls = pd.read_parquet(tmp_path / "run/calls.parquet")
    assert (calls["prompt_tokens"] * 1e-3 + calls["completion_tokens"] * 1e-3).sum() == pytest.approx(
        stats["total_cost_usd"], abs=1e-6)


def test_budget_is_a_total_over_resumes_and_add_budget_raises_it(tmp_path, capsys):
    run = tmp_path / "run"
    base = ["run", EXP, "--llm", "hf:tiny-random", "--subjects", "2", *SMALL,
            "--cache", str(tmp_path / "c.sqlite"), "-o", str(run)]
    code, err = cli(capsys, *base, "--max-calls", "12")
    assert code == 3 and manifest(run)["status"] == "stopped"
    assert manifest(run)["budget"] == {"max_calls": 12, "max_cost": None}
    code, err = cli(capsys, *base, "--resume")  # the same total: nothing more is paid
    assert code == 3 and manifest(run)["stats"]["new_calls"] == 0
    code, err = cli(capsys, *base, "--resume", "--max-calls", "99")
    assert code == 2 and len(error_lines(err)) == 1 and "--add-budget" in err
    code, err = cli(capsys, *base, "--add-budget", "calls=8")
    assert code == 2 and "--resume" in error_lines(err)[0]
    code, err = cli(capsys, *base, "--resume", "--add-budget", "calls=8")
    assert code == 0, err
    m = manifest(run)
    assert m["status"] == "complete" and m["budget"]["max_calls"] == 20
    assert m["stats"]["total_calls"] == 16 and m["stats"]["new_calls"] == 8
    # a second invocation while one holds the directory: one line, exit 2, nothing touched
    before = (run / "trials.parquet").read_bytes()
    with FileLock(str(run / ".lock"), timeout=0):
        code, err = cli(capsys, *base, "--resume")
    assert code == 2 and len(error_lines(err)) == 1 and "in use" in err
    assert (run / "trials.parquet").read_bytes() == before and manifest(run)["status"] == "complete"


def test_dry_run_says_how_many_subjects_the_budget_allows(tmp_path, capsys):
    code, _ = cli(capsys, "run", EXP, "--llm", "hf:tiny-random", "--subjects", "3", *SMALL, "--dry-run",
                  "--max-calls", "20", "-o", str(tmp_path / "r"))
    report = json.loads(_last_stdout)
    assert code == 0 and report["worst_case_per_subject"]["calls"] == 8 and report["subjects_within_budget"] == 2


def test_admission_is_in_subject_order_and_refuses_only_when_nothing_runs():
    async def scenario() -> list[str]:
        budget = Budget(max_calls=10)
        events: list[str] = []

        async def subject(i: int, need: float, uses: int) -> None:
            try:
                await budget.admit(i, Need(need))
            except BudgetExhausted:
                events.append(f"refused {i}")
                await budget.finish(i)
                return
            events.append(f"admitted {i}")
            for _ in range(uses):
                booking = budget.reserve(0, 0, i)
                await asyncio.sleep(0.01)
                budget.settle(booking, 0, 0, succeeded=True)
            await budget.finish(i)

        # subject 1 (needs 6) waits for subject 0 (holds 6, uses 2) to give back 4
        await asyncio.gather(subject(2, 9, 0), subject(1, 6, 6), subject(0, 6, 2))
        return events

    assert asyncio.run(scenario()) == ["admitted 0", "admitted 1", "refused 2"]


def test_worst_case_booking_and_the_ledger_of_a_killed_run():
    price = Price(1000.0, 1000.0)  # $0.001 per token
    budget = Budget(max_cost=0.05, price=price)
    booking = budget.reserve(30, 10)  # worst case $0.04
    with pytest.raises(BudgetExhausted, match="max_cost"):
        budget.reserve(5, 10)  # $0.015 more would break the cap if both used their worst case
    budget.settle(booking, 12, 3, succeeded=True)
    assert budget.cost == pytest.approx(0.015)
    budget.settle(budget.reserve(5, 10), 60, 10, succeeded=True)  # a server reporting past the bound
    assert budget.stopped and budget.stopped.startswith("overrun")
    with pytest.raises(BudgetExhausted):
        budget.reserve(1, 1)
    # a call booked but never settled (kill -9 mid-call) costs its worst case but is no call (its answer never
    # came: the resumed run asks it again); a cut line is ignored
    lines = ['{"id": "a-0", "reserve_usd": 0.04}', '{"id": "a-0", "settle_usd": 0.015, "calls": 1, '
             '"prompt_tokens": 12, "completion_tokens": 3}', '{"id": "b-0", "reserve_usd": 0.02}', '{"id": "b-1", "re']
    spent = read_ledger(lines)
    assert spent.calls == 1 and spent.cost == pytest.approx(0.035) and spent.prompt_tokens == 12


def test_subject_worst_case_covers_every_call_it_can_make(tiny):
    exp = get_experiment(EXP)
    design = exp.env_cls.design_cls(visits_per_casino=2)
    config = RunConfig(experiment=EXP, llm="hf:tiny-random", base_url=None, mode="completions", n_subjects=1,
                       seed=0, design=design.model_dump(mode="json"), reask=2)
    budget = Budget(price=Price(1.0, 1.0))
    needs = subject_needs(exp, design, tiny, config, draw_sessions(exp, design, 1, 0), 0, budget)
    assert len(needs) == 8 and all(n.calls == 3 for n in needs)  # every re-ask
    first = tiny.prompt_token_bound(exp.env_cls(design).reset(options={
        "session": draw_sessions(exp, design, 1, 0).subject(0)})[0]["prompt"])
    assert needs[0].usd >= 3 * budget.worst(first, config.max_tokens).usd


def test_a_budget_without_a_price_is_planned_in_calls_without_tokenizing(tiny, monkeypatch):
    exp = get_experiment(EXP)
    design = exp.env_cls.design_cls(visits_per_casino=2)
    config = RunConfig(experiment=EXP, llm="hf:tiny-random", base_url=None, mode="completions", n_subjects=1,
                       seed=0, design=design.model_dump(mode="json"), reask=2)
    bounded: list[object] = []
    real_bound = tiny.prompt_token_bound
    monkeypatch.setattr(tiny, "prompt_token_bound", lambda prompt: bounded.append(prompt) or real_bound(prompt))
    sessions = draw_sessions(exp, design, 1, 0)
    needs = subject_needs(exp, design, tiny, config, sessions, 0, Budget(max_calls=100))
    assert [(n.calls, n.usd) for n in needs] == [(3, 0.0)] * 8 and bounded == []
    priced = subject_needs(exp, design, tiny, config, sessions, 0, Budget(price=Price(1.0, 1.0)))
    # a step's first ask and its re-ask prompt (each re-ask sends the same one: priced once, counted reask times)
    assert [n.calls for n in priced] == [3] * 8 and len(bounded) == 8 * 2 and all(n.usd > 0 for n in priced)


# ----------------------------------------------------------------------------- run state
def test_transport_settings_may_change_on_resume_identity_may_not(tmp_path, capsys, server):
    url, faults = server
    run = str(tmp_path / "run")
    faults.add(*[rundir_fault(503)] * 2)  # two retries, logged and kept in calls.parquet
    code, err = cli(capsys, "run", *served(url, tmp_path, "--subjects", "2", "--progress-every", "1", "-o", run,
                                           "--share-cache"))
    assert code == 0, err
    assert "retry 1: HTTP 503" in err and "1/2 subjects done" in err and "2/2 subjects done" in err
    calls = pd.read_parquet(Path(run) / "calls.parquet")
    assert calls["retries"].sum() == 2 and calls["retry_log"].dropna().str.contains("HTTP 503").all()
    other = url.replace("127.0.0.1", "localhost")  # another address: only where the cache is shared (issue 39)
    code, err = cli(capsys, "run", *served(other, tmp_path, "--subjects", "2", "--concurrency", "1",
                                           "--timeout", "30", "--retry-for", "5", "-o", run, "--resume"))
    assert code == 2 and "was started with --share-cache" in error_lines(err)[0]
    code, err = cli(capsys, "run", *served(other, tmp_path, "--subjects", "2", "--concurrency", "1",
                                           "--timeout", "30", "--retry-for", "5", "-o", run, "--resume",
                                           "--share-cache"))
    assert code == 0, err
    assert manifest(Path(run))["transport"]["base_url"].startswith("http://localhost")
    code, err = cli(capsys, "run", *served(url, tmp_path, "--subjects", "2", "--seed", "4", "-o", run, "--resume"))
    assert code == 2 and "seed" in error_lines(err)[0]


def rundir_fault(status: int):
    from cogtestbed.llm_adapters.servers.server import Fault

    return Fault("status", status, retry_after=0.0)


def test_tables_and_manifest_are_one_unit_with_the_umask_mode(tmp_path, tiny, monkeypatch):
    exp = get_experiment(EXP)
    design = exp.env_cls.design_cls(visits_per_casino=2)
    config = RunConfig(experiment=EXP, llm=tiny.spec, base_url=None, mode="completions", n_subjects=1, seed=0,
                       design=design.model_dump(mode="json"))
    run = tmp_path / "run"

    def go(resume: bool):
        cached = CachedClient(tiny, ResponseCache(tmp_path / "c.sqlite"))
        return asyncio.run(run_experiment(exp, design, cached, config, run, resume=resume))

    old = os.umask(0o022)
    try:
        go(False)
        for path in run.iterdir():
            if path.is_file() and path.name != ".lock":
                assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
        before = {p.name: p.read_bytes() for p in run.iterdir() if p.suffix == ".parquet"}
        trials_manifest = json.loads((run / "trials.parquet.manifest.json").read_text())
        assert trials_manifest["trials_sha256"] == hashlib.sha256(before["trials.parquet"]).hexdigest()
        real_write = rundir_mod.write_files_together

        def disk_full(tmp):
            raise OSError(28, "No space left on device")

        def failing(writers):  # the call log cannot be written: nothing may change
            return real_write({p: disk_full if p.name == "calls.parquet" else w for p, w in writers.items()})

        monkeypatch.setattr(rundir_mod, "write_files_together", failing)
        with pytest.raises(WriteFailed, match="No space"):  # the one-line error naming the path (issue 41)
            go(True)
        monkeypatch.undo()
        assert {p.name: p.read_bytes() for p in run.iterdir() if p.suffix == ".parquet"} == before
        assert not [p for p in run.iterdir() if p.name.endswith(".tmp")]
        assert manifest(run)["status"] == "failed" and "No space" in manifest(run)["error"]
        go(True)  # a failed run is resumable
        assert manifest(run)["status"] == "complete"
    finally:
        os.umask(old)


@pytest.mark.parametrize("case", ["chat-on-base-model", "unknown-model", "bad-url", "timeout-0",
                                  "unknown-hf-model", "output-is-a-file"])
def test_backend_and_path_errors_are_one_line_and_leave_nothing(tmp_path, capsys, server, case):
    url, _ = server
    run = tmp_path / "run"
    args = {
        "chat-on-base-model": ["--llm", "openai:tiny-random", "--mode", "chat", "--base-url", url],
        "unknown-model": ["--llm", "openai:no-such-model", "--base-url", url],
        "bad-url": ["--llm", "openai:tiny-random", "--base-url", "http://127.0.0.1:9/v1", "--retry-for", "0"],
        "timeout-0": ["--llm", "openai:tiny-random", "--base-url", url, "--timeout", "0"],
        "unknown-hf-model": ["--llm", "hf:/no/such/model-dir"],
        "output-is-a-file": ["--llm", "hf:tiny-random"],
    }[case]
    if case == "output-is-a-file":
        run.write_text("not a directory")
    code, err = cli(capsys, "run", EXP, *args, *SMALL, "--cache", str(tmp_path / "c.sqlite"), "-o", str(run))
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1, err
    expected = {"chat-on-base-model": "--mode completions", "unknown-model": "not served",
                "bad-url": "cannot reach", "timeout-0": "--timeout", "unknown-hf-model": "cannot load",
                "output-is-a-file": "not a directory"}[case]
    assert expected in lines[0]
    if case == "output-is-a-file":
        assert run.read_text() == "not a directory"
    else:
        assert not run.exists()  # no empty run directory, no run.json left at "running"


def test_a_persistent_503_mid_run_fails_cleanly_and_resume_continues(tmp_path, capsys, server):
    url, faults = server
    run = str(tmp_path / "run")
    faults.add(*[rundir_fault(503)] * 200)
    code, err = cli(capsys, "run", *served(url, tmp_path, "--retry-for", "0.3", "-o", run))
    assert code == 2 and "HTTP 503" in error_lines(err)[0]
    assert not Path(run).exists()  # failed before any paid call: no trace
    faults.pending.clear()
    from cogtestbed.llm_adapters.servers.server import Fault

    faults.add(*[Fault("delay", seconds=0.0)] * 3, *[rundir_fault(503)] * 200)  # 3 answers, then an outage
    code, err = cli(capsys, "run", *served(url, tmp_path, "--retry-for", "0.3", "-o", run))
    assert code == 2 and len(error_lines(err)) == 1
    m = manifest(Path(run))
    assert m["status"] == "failed" and "HTTP 503" in m["error"]
    faults.pending.clear()
    code, err = cli(capsys, "run", *served(url, tmp_path, "-o", run, "--resume"))
    assert code == 0, err
    stats = manifest(Path(run))["stats"]
    assert manifest(Path(run))["status"] == "complete" and stats["cache_hits"] == 0  # its 3 answers are its calls
    assert stats["total_calls"] == stats["calls_total"] and stats["new_calls"] == stats["calls_total"] - 3


# ----------------------------------------------------------------------------- the server's faults
def test_the_cli_retry_default_is_the_library_one():
    from cogtestbed.api import run as run_cli
    from cogtestbed.llm_adapters.clients.base import DEFAULT_RETRY_WINDOW

    assert run_cli.DEFAULT_RETRY_WINDOW == DEFAULT_RETRY_WINDOW
    assert run_cli.parse_add_budget(["calls=5,usd=0.5", "usd=0.25"]) == (5, 0.75)
    for bad in ("calls=-1", "usd=abc", "dollars=3", "5"):
        with pytest.raises(ValueError, match="`add_budget`"):
            run_cli.parse_add_budget([bad])


def test_server_command_line_exposes_fault_injection():
    injector = fault_injector(0.2, 503, retry_after=2)
    assert injector is not None and injector.fault.status == 503 and injector.fault.retry_after == 2
    hits = [injector.next("/v1/completions") for _ in range(2000)]
    share = sum(h is not None for h in hits) / len(hits)
    assert 0.17 < share < 0.23
    again = fault_injector(0.2)
    assert [h is None for h in hits[:50]] == [again.next("/") is None for _ in range(50)]  # seeded
    assert fault_injector(0.5, drop=True).fault.kind == "drop"
    assert fault_injector(1, delay=2).fault.seconds == 2
    assert fault_injector() is None
    for bad in ({"fail_rate": 2}, {"status": 200, "fail_rate": 0.1}, {"drop": True, "status": 503}):
        with pytest.raises(InputError):
            fault_injector(**bad)

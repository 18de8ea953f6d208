"""Batch mode on the local batch-endpoint emulator (issue 39 item 6; 127.0.0.1 only, the tiny random chat
model behind :mod:`support.batch_emulator`).

Part 1, accounting: ``run --batch`` against ``run --batch --dry-run`` for OpenAI's Batch API and
Anthropic's Message Batches, on collider (no prompt renders an answer) and two-step (each prompt
depends on the previous answer: sessions in parallel waves): the requests the emulator ran, the run's
calls and settled dollars (run.json), and the dry run's calls and dollars at the batch price; the
same sessions run one request at a time through the project's server give the reference requests.

Part 2, faults: a batch that expires after one request and one with a failed request (500): every
failed line re-asked in a follow-up batch, the run completes with the trials of a clean run (every
other end a batch can have: ``batch_faults.py``).

Part 3, kill -9: a real ``cogtestbed run --batch`` subprocess killed with SIGKILL while it polls its
batch (collider: all its requests in one), then ``--resume``: the requests the emulator ran (as a
multiset of request bodies) against an uninterrupted run's — lost and duplicated requests (target 0
each), calls and dollars against the dry run.

    PYTHONPATH=. python benchmarks/studies/batch_mode.py            # all parts
    PYTHONPATH=. python benchmarks/studies/batch_mode.py --quick    # OpenAI only, smaller (the test suite's)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from unittest import mock

#: The batch APIs' emulator lives with the tests (tests/support/batch_emulator.py), outside the wheel.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

#: Example price of the tiny model (USD per million tokens) and the providers' documented batch discount.
PRICE_IN, PRICE_OUT, DISCOUNT = 1000.0, 2000.0, 0.5
PRICES = f'["*:tiny-random*"]\ninput = {PRICE_IN}\noutput = {PRICE_OUT}\nbatch_discount = {DISCOUNT}\n'
DESIGNS = {"collider": ("scope=cell",), "two-step": ("n_days=4",)}
MODEL = "tiny-random-chat"
_MODELS: dict[str, Any] = {}


def models() -> dict[str, Any]:
    from cogtestbed.llm_adapters.clients.hf import HFClient

    if not _MODELS:
        _MODELS[MODEL] = HFClient.tiny_random(chat=True)
    return _MODELS


def run_args(experiment: str, backend: str, root_url: str, out: Path, subjects: int, batch: bool = True,
             poll: float = 0.01) -> list[str]:
    url = root_url + "/v1" if backend == "openai" else root_url
    args = ["run", experiment, "--llm", f"{backend}:{MODEL}", "--base-url", url, "--subjects", str(subjects),
            "-o", str(out), "--retry-for", "10"]
    if batch:
        args += ["--batch", "--poll-every", str(poll)]
    for d in DESIGNS[experiment]:
        args += ["--design", d]
    return args


def cli(args: list[str]) -> tuple[int, str]:
    from typer.testing import CliRunner

    from cogtestbed.cli import app

    res = CliRunner().invoke(app, args)
    return res.exit_code, res.stdout


def _stats(out: Path) -> dict[str, Any]:
    return json.loads((out / "run.json").read_text())


def _trials(out: Path) -> list[Any]:
    import pandas as pd

    return pd.read_parquet(out / "trials.parquet").astype(str).values.tolist()


def accounting_row(experiment: str, backend: str, root: Path, subjects: int) -> dict[str, Any]:
    """One clean batch run against its dry run and against the same sessions sent one by one."""
    from support.batch_emulator import BatchEmulator, serve_batches

    from cogtestbed.llm_adapters.servers.server import Billing, serve

    tag = f"{experiment}-{backend}"
    os.environ["COGTESTBED_CACHE"] = str(root / f"{tag}-cache.sqlite")
    emulator = BatchEmulator(models(), polls=2)
    with serve_batches(emulator) as url:
        code, out = cli([*run_args(experiment, backend, url, root / f"{tag}-dry", subjects), "--dry-run"])
        dry = json.loads(out)
        code = cli(run_args(experiment, backend, url, root / tag, subjects))[0]
    run = _stats(root / tag)
    os.environ["COGTESTBED_CACHE"] = str(root / f"{tag}-single-cache.sqlite")
    billing = Billing()
    with serve(models(), billing=billing) as url:
        single = cli(run_args(experiment, backend, url.removesuffix("/v1"), root / f"{tag}-single", subjects,
                              batch=False))[0]
    stats, batch = run["stats"], run.get("batch") or {}
    return {"experiment": experiment, "provider": backend, "exit": code, "subjects": subjects,
            "waves": batch.get("waves"), "batch_http": batch.get("http_requests"),
            "emulator_ran": emulator.tally.requests_run, "run_calls": stats["total_calls"], "dry_calls": dry["calls"],
            "dry_calls_if_all_invalid": dry.get("calls_if_every_answer_is_invalid"),
            "one_by_one_requests": billing.requests if single == 0 else None,
            "same_trials_as_one_by_one": single == 0 and _trials(root / tag) == _trials(root / f"{tag}-single"),
            "run_usd": stats["total_cost_usd"], "dry_usd": dry["estimated_cost_usd"],
            "dry_standard_usd": dry["standard_estimated_cost_usd"], "dry_max_usd": dry["max_cost_usd"],
            "token_counts": dry["token_counts"].split(":")[0].split(" (")[0],
            "prompts_fixed": dry["prompts_are_the_runs"]}


def fault_row(backend: str, root: Path, subjects: int = 3) -> dict[str, Any]:
    """Expiry and a failed request (500) in the first two batches: re-asked, trials as a clean run's
    (the accounting part's collider run of as many subjects)."""
    from support.batch_emulator import BatchEmulator, BatchFault, serve_batches

    os.environ["COGTESTBED_CACHE"] = str(root / f"fault-{backend}-cache.sqlite")
    emulator = BatchEmulator(models(), polls=2, faults=[BatchFault(expire_after=1), BatchFault(errors=(0,))])
    with serve_batches(emulator) as url:
        code = cli(run_args("collider", backend, url, root / f"fault-{backend}", subjects))[0]
    run = _stats(root / f"fault-{backend}")
    batch = run.get("batch") or {}
    clean = root / f"collider-{backend}"
    events = [json.loads(x) for x in (root / f"fault-{backend}" / "batches.jsonl").read_text().splitlines()]
    first = next(e for e in events if e.get("event") == "submit")
    return {"provider": backend, "exit": code, "first_batch_lines": len(first["lines"]),
            "batches": batch.get("batches"), "expired": emulator.tally.expired, "errored": emulator.tally.errored,
            "reasked": batch.get("reasked"), "emulator_ran": emulator.tally.requests_run,
            "run_calls": run["stats"]["total_calls"],
            "same_trials_as_clean_run": clean.exists() and _trials(clean) == _trials(root / f"fault-{backend}")}


def _wait_for(path: Path, predicate: Any, proc: subprocess.Popen[str], seconds: float = 300) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if path.exists() and predicate(path.read_text()):
            return True
        time.sleep(0.05)
    return False


def kill_row(backend: str, root: Path, subjects: int) -> dict[str, Any]:
    """SIGKILL a real run while it polls its batch, resume it; compare with an uninterrupted run."""
    from support.batch_emulator import BatchEmulator, serve_batches

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    bodies: list[Counter[str]] = []
    rows: dict[str, Any] = {"provider": backend}
    for name in ("uninterrupted", "killed"):
        env["COGTESTBED_CACHE"] = str(root / f"kill-{name}-{backend}.sqlite")
        emulator = BatchEmulator(models(), polls=4)
        out = root / f"kill-{name}-{backend}"
        with serve_batches(emulator) as url:
            args = [sys.executable, "-m", "cogtestbed", *run_args("collider", backend, url, out, subjects, poll=0.1)]
            if name == "killed":
                proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                polling = _wait_for(out / "batches.jsonl", lambda t: t.count('"created"') >= 1, proc)
                time.sleep(0.3)  # mid-poll of its batch (collider: every request in one batch)
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                rows["killed_mid_poll"] = polling and proc.returncode == -signal.SIGKILL
                rows["ran_before_kill"] = emulator.tally.requests_run
                args.append("--resume")
            done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
            rows[f"{name}_exit"] = done.returncode
            if name == "uninterrupted":
                dry = json.loads(cli([*args[3:], "--dry-run"])[1])
                rows["dry_calls"], rows["dry_usd"] = dry["calls"], dry["estimated_cost_usd"]
        bodies.append(emulator.tally.bodies.copy())
        stats = _stats(out)["stats"]
        rows[f"{name}_ran"] = emulator.tally.requests_run
        rows[f"{name}_calls"], rows[f"{name}_usd"] = stats["total_calls"], stats["total_cost_usd"]
    rows["lost"] = sum((bodies[0] - bodies[1]).values())
    rows["duplicated"] = sum((bodies[1] - bodies[0]).values())
    rows["same_trials"] = _trials(root / f"kill-uninterrupted-{backend}") == _trials(root / f"kill-killed-{backend}")
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="OpenAI only, fewer subjects (the test suite's)")
    args = parser.parse_args(argv)
    import pandas as pd

    backends = ("openai",) if args.quick else ("openai", "anthropic")
    subjects = 3 if args.quick else 6
    # the two variables set below are restored on the way out
    with mock.patch.dict(os.environ), tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "prices.toml").write_text(PRICES)
        os.environ["COGTESTBED_PRICES"] = str(root / "prices.toml")
        rows = [accounting_row(e, b, root, subjects) for b in backends for e in DESIGNS]
        faults = [fault_row(b, root, subjects) for b in backends]
        kills = [kill_row(b, root, subjects) for b in backends]
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(f"accounting (price in/out ${PRICE_IN:g}/${PRICE_OUT:g} per Mtok, batch discount {DISCOUNT}):")
        print(pd.DataFrame(rows).to_string(index=False))
        print(f"\nexpiry and partial errors (collider, {subjects} subjects):")
        print(pd.DataFrame(faults).to_string(index=False))
        print("\nkill -9 mid-poll, then --resume (collider):")
        print(pd.DataFrame(kills).to_string(index=False))
    return {"accounting": rows, "faults": faults, "kills": kills}


if __name__ == "__main__":
    main()

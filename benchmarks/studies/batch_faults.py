"""Every end a batch can have, on the fault-injecting batch server (issue 48 item 1; 127.0.0.1 only,
the tiny random chat model behind :mod:`support.batch_emulator`).

A 2-subject collider run (its 40 requests in one batch) meets each fault in its first batch — failed,
expired, cancelled, gone (HTTP 404 after it was created), a corrupt result line (with and without its
custom id), garbage ``request_counts``, answers without usage, an answer also in the error file,
conflicting duplicate answers — and, where it stops, is resumed with ``--resume``.  Per fault: the exit
statuses, the batches, whether the trial table equals a clean run's, the ledger against what the server
billed (at the batch price) plus the worst case of the lines whose bill cannot be known, open bookings,
and requests run twice.

    PYTHONPATH=. python benchmarks/studies/batch_faults.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # support.batch_emulator
import batch_mode  # noqa: E402 - the study beside this one: prices, models, run arguments
from support.batch_emulator import BatchFault  # noqa: E402

SUBJECTS = 2
#: Every line of the faulty batch.
ALL = (-1,)
#: Each fault hits the run's first batch; ``unknown``: its lines whose bill the client cannot know (booked
#: at their worst case); ``exit``: the first invocation's exit status (2: refused, ``--resume`` completes it).
FAULTS: dict[str, tuple[BatchFault, tuple[int, ...], int]] = {
    "failed": (BatchFault(fail="injected: the input file failed validation"), (), 0),
    "expired": (BatchFault(expire_after=1), (), 0),
    "cancelled": (BatchFault(cancel_after=1), (), 0),
    "gone": (BatchFault(gone_after=1), ALL, 0),
    "corrupt line": (BatchFault(corrupt=(0,)), (0,), 0),
    "corrupt line naming its id": (BatchFault(corrupt=(1,), corrupt_named=True), (1,), 0),
    "garbage request_counts": (BatchFault(garbage_counts=True), (), 0),
    "no usage": (BatchFault(no_usage=(0,)), (0,), 0),
    "answered and in the error file": (BatchFault(also_error=(0,)), (), 0),
    "conflicting duplicate answers": (BatchFault(conflict=(1,)), (1,), 2),
}


def usd(prompt: int, completion: int) -> float:
    """What the server bills for these tokens at the batch price."""
    return (prompt * batch_mode.PRICE_IN + completion * batch_mode.PRICE_OUT) / 1e6 * (1 - batch_mode.DISCOUNT)


def clean_trials(root: Path) -> list[Any]:
    """The trial table of a run that meets no fault."""
    from support.batch_emulator import BatchEmulator, serve_batches

    with serve_batches(BatchEmulator(batch_mode.models(), polls=2)) as url:
        code = batch_mode.cli(batch_mode.run_args("collider", "openai", url, root / "clean", SUBJECTS))[0]
    assert code == 0, code
    return batch_mode._trials(root / "clean")


def fault_row(name: str, root: Path, clean: list[Any]) -> dict[str, Any]:
    """One fault: run, resume where it stopped, and compare (needs COGTESTBED_PRICES/CACHE set)."""
    import contextlib
    import io

    from support.batch_emulator import BatchEmulator, serve_batches

    from cogtestbed.cli import run_cli
    from cogtestbed.llm_adapters.middleware.batch.record import open_ledger_ids
    from cogtestbed.llm_adapters.middleware.limits import read_ledger

    fault, unknown, _ = FAULTS[name]
    emulator = BatchEmulator(batch_mode.models(), polls=2, faults=[fault])
    out = root / name.replace(" ", "-")
    err = io.StringIO()
    with serve_batches(emulator) as url:
        args = batch_mode.run_args("collider", "openai", url, out, SUBJECTS)
        with contextlib.redirect_stderr(err):
            first = run_cli(args)
            resumed = run_cli([*args, "--resume"]) if first else None
    run = json.loads((out / "run.json").read_text())
    events = [json.loads(x) for x in (out / "batches.jsonl").read_text().splitlines()]
    submitted = {line["custom_id"]: line for e in events if e.get("event") == "submit" for line in e["lines"]}
    if unknown == ALL:
        unknown = tuple(range(sum(1 for cid in submitted if cid.startswith("w0-"))))
    with (out / "spend.jsonl").open() as fh:
        ledger = read_ledger(fh).cost
    billed = usd(emulator.tally.prompt_tokens, emulator.tally.completion_tokens)
    worst = sum(submitted[f"w0-{j}"]["worst_usd"] - usd(*emulator.tally.by_id.get(f"w0-{j}", (0, 0)))
                for j in unknown)
    errors = [line for line in err.getvalue().splitlines() if line.startswith("error")]
    return {"fault": name, "exit": first, "resume_exit": resumed, "error_line": errors[0][:200] if errors else None,
            "batches": run["batch"]["batches"], "status": run["status"],
            "same_trials": batch_mode._trials(out) == clean, "ledger_usd": round(ledger, 6),
            "billed_usd": round(billed, 6), "worst_of_unknown_usd": round(worst, 6),
            "ledger_minus_billed_minus_unknown": round(ledger - billed - worst, 9),
            "open_bookings": len(open_ledger_ids(out / "spend.jsonl")), "run_twice": emulator.tally.duplicates}


def main() -> list[dict[str, Any]]:
    import pandas as pd

    # the two variables set below are restored on the way out
    with mock.patch.dict(os.environ), tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "prices.toml").write_text(batch_mode.PRICES)
        os.environ["COGTESTBED_PRICES"] = str(root / "prices.toml")
        os.environ["COGTESTBED_CACHE"] = str(root / "clean.sqlite")
        clean = clean_trials(root)
        rows = []
        for name in FAULTS:
            os.environ["COGTESTBED_CACHE"] = str(root / f"{name.replace(' ', '-')}.sqlite")
            rows.append(fault_row(name, root, clean))
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_colwidth", 90):
        print(f"collider, {SUBJECTS} subjects, one fault in the first batch (price in/out ${batch_mode.PRICE_IN:g}/"
              f"${batch_mode.PRICE_OUT:g} per Mtok, batch discount {batch_mode.DISCOUNT}):")
        print(pd.DataFrame(rows).drop(columns=["error_line"]).to_string(index=False))
        for row in rows:
            if row["error_line"]:
                print(f"{row['fault']}: {row['error_line']}")
    return rows


if __name__ == "__main__":
    main()

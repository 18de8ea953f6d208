"""``RUN_DIR/batches.jsonl``: the record of a run's batches that ``--resume`` reads (see
:mod:`cogtestbed.llm_adapters.middleware.batch`: **Resuming after a kill**), and the ledger's open bookings."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: The run directory's record of its batches (see module docstring).
BATCH_FILE = "batches.jsonl"


class BatchRecord:
    """``RUN_DIR/batches.jsonl``: one JSON line per event, each flushed and fsynced before the step it
    records is taken (see module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events = self.read(path)

    @staticmethod
    def read(path: Path) -> list[dict[str, Any]]:
        if not path.exists():
            return []
        events = []
        for raw in path.read_text().splitlines():
            try:
                events.append(json.loads(raw))
            except json.JSONDecodeError:  # a line cut by a kill: its step was never taken
                continue
        return events

    def write(self, event: dict[str, Any]) -> None:
        with self.path.open("a") as fh:
            fh.write(json.dumps(event, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.events.append(event)

    def next_wave(self) -> int:
        return 1 + max((int(e["wave"]) for e in self.events if e.get("event") == "submit"), default=-1)

    def unfinished(self) -> list[dict[str, Any]]:
        """The waves submitted without a ``done`` line: their ``submit`` event, with ``batch_id``
        where a ``created`` line gives it."""
        waves: dict[int, dict[str, Any]] = {}
        for e in self.events:
            kind, wave = e.get("event"), int(e.get("wave", -1))
            if kind == "submit":
                waves[wave] = {**e, "batch_id": None}
            elif kind == "created" and wave in waves:
                waves[wave]["batch_id"] = e.get("batch_id")
            elif kind == "done":
                waves.pop(wave, None)
        return list(waves.values())

    def summary(self) -> dict[str, int]:
        created = [e for e in self.events if e.get("event") == "created"]
        lines = sum(len(e.get("lines", [])) for e in self.events if e.get("event") == "submit")
        return {"batches": len(created), "lines_submitted": lines}


def unfinished_batches(run_dir: Path) -> int:
    """How many batches of the run in ``run_dir`` are still to be collected."""
    return len(BatchRecord(run_dir / BATCH_FILE).unfinished())


def open_ledger_ids(ledger: Path) -> set[str]:
    """Bookings of the ledger never settled (their process died while they were in flight)."""
    open_: set[str] = set()
    if not ledger.exists():
        return open_
    for raw in ledger.read_text().splitlines():
        try:
            event = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if "reserve_usd" in event:
            open_.add(str(event.get("id")))
        elif "settle_usd" in event:
            open_.discard(str(event.get("id")))
    return open_



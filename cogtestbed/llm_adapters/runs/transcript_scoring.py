"""A whole Psych-201 data set scored by a local model: the three measures per choice, participants
batched, progress reported, resumable after a kill (:func:`cogtestbed.transcript_nll`).

Per participant (a :class:`~cogtestbed.data.psych201.Record`, identity (record, participant)):

* ``psych201`` — Psych-201's evaluation measure (:mod:`cogtestbed.llm_adapters.runs.psych201_eval`):
  per choice ``psych201_nll``, the summed token NLL of the evaluation's response span at that
  choice (NaN with ``psych201_null_reason`` where the evaluation scores none: cut by its maximum
  length, or the tokenizer merges the mark);
* ``choice`` — the per-choice log-probabilities ``logp_raw``/``logp_norm``
  (:func:`cogtestbed.llm_adapters.runs.transcript.transcript_nll`).

**One pass for both**: a participant's tokens go through the model once; the
rows of its final hidden state that the response spans and the choices read (those of the choices'
first window, where its tokens are the evaluation's) go through the output layer together.  Only
a later window of ``overflow="window"`` and an option of several tokens get passes of their own,
as :func:`~cogtestbed.llm_adapters.runs.transcript.transcript_nll` gives them.

The ``checkpoint`` file holds one JSON line per finished participant (its rows, under a key made of
the model, the settings and the text): a rerun reads them back and scores only the others.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cogtestbed.data.psych201 import CHOICE, Record
from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.runs.psych201_eval import Prepared, prepare, score_texts
from cogtestbed.llm_adapters.runs.transcript import ChoicePlan, choice_rows, score_choices

#: The measures :func:`score_records` computes.
MEASURE_NAMES = ("psych201", "choice")
#: Seconds between progress lines off a terminal.
PROGRESS_EVERY = 30.0


def _key(model: str, settings: Mapping[str, Any], rec: Record) -> str:
    digest = hashlib.sha256(json.dumps([model, dict(settings), rec.experiment, rec.participant, rec.text],
                                       sort_keys=True, default=str).encode("utf-8"))
    return digest.hexdigest()


class Checkpoint:
    """Finished participants' rows in a JSON Lines file (None: kept in memory only)."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else Path(path)
        self.rows: dict[str, list[dict[str, Any]]] = {}
        if self.path is not None and self.path.exists():
            text = self.path.read_text(encoding="utf-8")
            lines = text.splitlines()
            if text and not text.endswith("\n"):  # a last line cut by a kill: dropped, scored again
                lines = lines[:-1]
                self.path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
            for k, line in enumerate(lines, start=1):
                try:
                    item = json.loads(line)
                    self.rows[item["key"]] = item["rows"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    raise InputError(f"{self.path} line {k} is not a checkpoint line of transcript-nll") from None

    def add(self, key: str, rows: list[dict[str, Any]]) -> None:
        self.rows[key] = rows
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "rows": rows}, allow_nan=True) + "\n")
                f.flush()


def _psych201_rows(rec: Record, prepared: Prepared | None, n: int, max_length: int) -> list[dict[str, Any]]:
    """Each marked choice's span NLL (summed where several spans fall on one choice)."""
    rows: list[dict[str, Any]] = [{"psych201_nll": math.nan, "psych201_tokens": 0, "psych201_null_reason": None}
                                  for _ in range(n)]
    if prepared is None:
        return rows
    for span, value, choice in zip(prepared.spans, prepared.nll, prepared.choice_of_span(), strict=True):
        if choice >= n:
            continue
        row = rows[choice]
        row["psych201_nll"] = value if math.isnan(row["psych201_nll"]) else row["psych201_nll"] + value
        row["psych201_tokens"] += span[1] - span[0]
    kept = len(prepared.text)
    for k, m in enumerate(CHOICE.finditer(rec.text)):
        if math.isnan(rows[k]["psych201_nll"]):
            rows[k]["psych201_null_reason"] = (
                f"cut by the evaluation's maximum length ({max_length:,} characters)" if m.start() >= kept - 2
                else "the evaluation finds no ' <<' token sequence before it (the tokenizer merges the mark)")
    return rows


class _Progress:
    def __init__(self, total: int, already: int) -> None:
        from cogtestbed.progress import current

        self.reporter = current()
        self.total, self.done, self.start, self.last = total, already, time.perf_counter(), -math.inf
        self.first = already

    def tick(self, n: int) -> None:
        self.done += n
        if self.reporter is None:
            return
        report, terminal = self.reporter
        now = time.perf_counter()
        final = self.done >= self.total
        if not (terminal or final or now - self.last >= PROGRESS_EVERY):
            return
        self.last = now
        rate = (self.done - self.first) / max(now - self.start, 1e-9)
        left = (self.total - self.done) / rate if rate > 0 else math.nan
        eta = "" if final or math.isnan(left) else f", about {left:,.0f} s left"
        report(f"transcript-nll: {self.done}/{self.total} participants scored ({now - self.start:,.0f} s{eta})", final)


def _job(client: Any, rec: Record, cp: ChoicePlan | None, psych201: bool, max_length: int) -> tuple[Prepared, bool]:
    """The participant's one pass (a :class:`Prepared`: the evaluation's tokens and spans where
    ``psych201``, the choices' rows added where their tokens are the same), and whether the
    choices' first window is read from it."""
    job = prepare(client.tokenizer, rec.text, max_length) if psych201 else Prepared(rec.text, [], [], [])
    if cp is None or cp.windows[0][0] != 0:
        return job, False
    need = choice_rows(cp)
    if not need:
        return job, False
    last = max(need)
    if not psych201:
        job.ids = cp.ids[:last + 1]
    if last >= len(job.ids) or job.ids[:last + 1] != cp.ids[:last + 1]:
        return job, False  # the evaluation's cut text tokenizes otherwise: a pass of its own
    job.extra = need
    return job, True


def score_records(client: Any, records: Sequence[Record], *, measures: Sequence[str],
                  choice_planner: Callable[[Record], ChoicePlan], max_length: int, batch_tokens: int,
                  share_prefix: bool, checkpoint: str | os.PathLike[str] | None, settings: Mapping[str, Any],
                  onednn: bool = False) -> tuple[list[pd.DataFrame], dict[str, float]]:
    """Each record's per-choice rows (the measures asked; module docstring) in ``records``' order,
    and the seconds each took (its group's time shared among its members); finished participants
    are read from and appended to ``checkpoint``.  ``choice_planner``: a record's per-choice plan
    (:func:`~cogtestbed.llm_adapters.runs.transcript.plan_choices`, with the caller's options);
    ``onednn``: the shared passes' linear layers through
    :func:`~cogtestbed.llm_adapters.runs.psych201_eval.onednn_linears`."""
    unknown = [m for m in measures if m not in MEASURE_NAMES]
    if unknown or not measures:
        raise InputError(f"measures are {', '.join(MEASURE_NAMES)}, got {', '.join(unknown) or 'none'}")
    store = Checkpoint(checkpoint)
    model = str(getattr(client, "model", ""))
    keys = [_key(model, {**settings, "measures": sorted(measures)}, r) for r in records]
    todo = [i for i, k in enumerate(keys) if k not in store.rows]
    plans = [choice_planner(records[i]) if "choice" in measures else None for i in todo]  # refusals first
    jobs = [_job(client, records[i], cp, "psych201" in measures, max_length) for i, cp in zip(todo, plans, strict=True)]
    progress = _Progress(len(records), len(records) - len(todo))
    seconds: dict[str, float] = {}
    clock = [time.perf_counter()]

    def done(group: list[int], prepared: list[Prepared]) -> None:
        spent = (time.perf_counter() - clock[0]) / len(group)
        for g, prep in zip(group, prepared, strict=True):
            rec, cp, (_, shared) = records[todo[g]], plans[g], jobs[g]
            start = time.perf_counter()
            n = len(CHOICE.findall(rec.text))
            table = score_choices(client, cp, prep.rows if shared else None) if cp is not None else pd.DataFrame(
                {"choice": range(n), "chosen": CHOICE.findall(rec.text)})
            rows = table.to_dict(orient="records")
            if "psych201" in measures:
                rows = [{**r, **e} for r, e in zip(rows, _psych201_rows(rec, prep, n, max_length), strict=True)]
            seconds[rec.label] = spent + time.perf_counter() - start
            store.add(keys[todo[g]], rows)
        progress.tick(len(group))
        clock[0] = time.perf_counter()

    if todo:
        score_texts(client, [], max_length=max_length, batch_tokens=batch_tokens, share_prefix=share_prefix,
                    done=done, jobs=[j for j, _ in jobs], onednn=onednn)
    return [pd.DataFrame(store.rows[k]) for k in keys], seconds

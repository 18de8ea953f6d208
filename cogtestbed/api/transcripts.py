"""``ct.transcript_nll``: a language model's per-choice log-likelihood on Psych-201 transcripts
(Centaur's measure; :mod:`cogtestbed.llm_adapters.runs.transcript`), and ``ct.heldout_nll``: a
cognitive model's per-choice NLL on held-out participants (:mod:`cogtestbed.inference.heldout`),
so the two can be set side by side on the same participants (``cogtestbed transcript-nll``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.api.checks import public
from cogtestbed.api.workflow_options import AUTO, HeldoutRequest, TranscriptNllRequest, ValidateRequest
from cogtestbed.data.psych201 import record_label, select_records
from cogtestbed.errors import InputError
from cogtestbed.inference.heldout import HeldOut
from cogtestbed.request import build, derive_api

#: A participant's identity in every table here: the record (its ``experiment`` field: the study or
#: source file) and the id, with the data set; ids repeat across records (Psych-201's
#: ``spektor2019contexteffects``: 130 records of 33 ids).
IDENTITY = ("participant", "record", "data_set")


def _client(llm: Any) -> Any:
    """The in-process model of ``llm`` (a spec such as ``hf:smollm2-135m``, or a client)."""
    from cogtestbed.llm_adapters import make_client

    client = make_client(llm, mode="completions") if isinstance(llm, str) else llm
    if not hasattr(client, "hf_model"):
        raise InputError(f"{getattr(client, 'spec', llm)}: transcript log-likelihood needs an in-process model "
                         "(hf:..., e.g. hf:smollm2-135m): a served API returns no log-probabilities of the "
                         "transcript's own tokens")
    return client


def _records(source: Any) -> list[Any]:
    """Records of a Psych-201 file, or the given records / (participant, text) pairs."""
    from cogtestbed.data.psych201 import Record, read_records

    if isinstance(source, (str, Path)):
        return read_records(source)
    out = []
    for k, item in enumerate(source):
        if isinstance(item, Record):
            out.append(item)
        else:
            if isinstance(item, str) or len(item) != 2:
                raise InputError(f"transcripts: give a Psych-201 file, records or (participant, text) pairs, "
                                 f"got {type(item).__name__} at position {k}")
            participant, text = item
            out.append(Record(str(text), "transcript", str(participant), k + 1))
    return out


@public(paths=("transcripts",))
@derive_api(TranscriptNllRequest)
def transcript_nll(llm: Any, transcripts: str | Path | Sequence[Any], **kwargs: Any) -> pd.DataFrame:
    """Per-choice log-likelihood of ``llm`` (an in-process model) on each participant's transcript.

    ``transcripts``: a Psych-201 file (``prompts.jsonl[.zip]``), or records or ``(participant, text)``
    pairs.  ``participants``: the ids to score (all by default).  ``options``: ``"auto"``
    (the option sets declared for the data set in
    :data:`~cogtestbed.llm_adapters.runs.transcript.OPTION_SETS`), None, a list or a function (see
    :func:`cogtestbed.llm_adapters.runs.transcript.transcript_nll`, with ``overflow``, ``window`` and
    ``min_context``).  The text is fed raw (no chat template), as Centaur's evaluation does.

    Returns one row per marked choice, with ``participant`` and ``data_set`` first; the seconds
    each participant took are in ``attrs["seconds"]``.  Summarise with :func:`participant_nll`.
    """
    from cogtestbed.llm_adapters.runs.transcript import OPTION_SETS, OVERFLOWS
    from cogtestbed.llm_adapters.runs.transcript import transcript_nll as score

    req = build(TranscriptNllRequest, {**kwargs, "llm": llm})
    participants, options, overflow, window, min_context = (req.participants, req.options, req.overflow, req.window,
                                                            req.min_context)
    if overflow not in OVERFLOWS:  # before the model loads
        raise InputError(f"overflow must be one of {', '.join(OVERFLOWS)}, got {overflow!r}")
    records = _records(transcripts)
    if participants is not None:
        records = select_records(records, participants)
    client = _client(llm)
    parts, seconds = [], {}
    for rec in records:
        opts = OPTION_SETS.get(rec.data_set) if isinstance(options, str) and options == AUTO else options
        start = time.perf_counter()
        table = score(client, rec.text, options=opts, overflow=overflow,  # type: ignore[arg-type]
                      window=window, min_context=min_context)
        seconds[rec.label] = time.perf_counter() - start
        parts.append(table.assign(participant=rec.participant, record=rec.experiment, data_set=rec.data_set))
    out = pd.concat(parts, ignore_index=True)
    out = out[[*IDENTITY, *[c for c in out.columns if c not in IDENTITY]]]
    out.attrs.update(model=getattr(client, "model", str(llm)), seconds=seconds, overflow=overflow,
                     window=window or client.context_length, min_context=min_context)
    return out


@public()
def participant_nll(choices: pd.DataFrame) -> pd.DataFrame:
    """Per participant of a :func:`transcript_nll` table: choices, choices scored, and the mean
    per-choice NLL (nats) raw (Centaur's) and normalised over the options; NaN where none scored."""
    def one(df: pd.DataFrame) -> pd.Series:
        raw, norm = df["logp_raw"].dropna(), df["logp_norm"].dropna()
        return pd.Series({"n_choices": len(df), "n_scored_raw": len(raw), "n_scored_norm": len(norm),
                          "nll_raw": float(-raw.mean()) if len(raw) else np.nan,
                          "nll_norm": float(-norm.mean()) if len(norm) else np.nan})

    rows = [{"participant": p, "record": r, "data_set": d, **one(df)}
            for (p, r, d), df in choices.groupby(list(IDENTITY), sort=False)]
    out = pd.DataFrame(rows)
    key = out["record"].map(record_label) + ":" + out["participant"].astype(str)
    return out.iloc[sorted(range(len(out)), key=lambda i: (str(out["data_set"].iat[i]), _natural(key.iat[i])))]\
        .reset_index(drop=True)


def _natural(label: str) -> tuple[Any, ...]:
    """``exp10:2`` after ``exp2:10``: digits compared as numbers."""
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", label))


@public(paths=("path",))
def transcript_table(path: str | Path) -> pd.DataFrame:
    """Any Psych-201 file (``.jsonl``, ``.zip`` holding one, ``.gz``) as a transcript table: one row
    per marked choice with ``data_set``, ``record`` (the study or source file), ``participant``,
    ``choice``, the text ``before`` it, the ``chosen`` text, its ``rt`` and the ``options`` the text
    states, whether or not an experiment models the data set
    (:mod:`cogtestbed.data.psych201_table`).  ``ct.export(table, to="psych201", output=...)``
    writes it back byte for byte."""
    from cogtestbed.data.psych201_table import transcript_table as read

    return read(path)


@public(paths=("path",))
@derive_api(ValidateRequest)
def validate(path: str | Path, **options: Any) -> pd.DataFrame:
    """Every defect of the Psych-201 file ``path`` (``cogtestbed validate FILE``): one row per
    defect with its ``line``, ``participant``, ``field``, ``kind`` and ``message``; no row for a
    file without one.  The kinds and the heuristics behind ``condition_leak``, ``option_outside``
    and ``rt_unit``: :mod:`cogtestbed.data.psych201_validate`."""
    from cogtestbed.data.psych201_validate import defects_table, validate_psych201

    req = build(ValidateRequest, options)
    return defects_table(validate_psych201(path, max_length=req.max_length))


@public()
@derive_api(HeldoutRequest)
def heldout_nll(experiment: str, trials: pd.DataFrame, **options: Any) -> HeldOut:
    """``model`` of ``experiment`` fitted pooled on the training subjects of ``trials``, scored per
    choice on the held-out ones: ``test`` names them, or is how many to draw (seeded by ``seed``;
    :func:`cogtestbed.inference.heldout.heldout_split`)."""
    from cogtestbed.inference.heldout import heldout_nll as score
    from cogtestbed.inference.heldout import heldout_split
    from cogtestbed.registry import get_experiment

    req = build(HeldoutRequest, options)
    model, test, seed, n_starts = req.model, req.test, req.seed, req.n_starts
    exp = get_experiment(experiment)
    chosen = heldout_split(list(trials["subject"].unique()), test, seed)[1] if isinstance(test, int) else list(test)
    return score(exp.model(model), trials, chosen, n_starts=n_starts)

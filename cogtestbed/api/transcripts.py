"""``ct.transcript_nll``: a language model's per-choice log-likelihood on Psych-201 transcripts
(Centaur's measure; :mod:`cogtestbed.llm_adapters.runs.transcript`), and ``ct.heldout_nll``: a
cognitive model's per-choice NLL on held-out participants (:mod:`cogtestbed.inference.heldout`),
so the two can be set side by side on the same participants (``cogtestbed transcript-nll``)."""

from __future__ import annotations

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
    """The log-likelihood of ``llm`` (an in-process model) on each participant's transcript, three
    measures side by side (:data:`~cogtestbed.llm_adapters.runs.psych201_eval.MEASURES`).

    ``transcripts``: a Psych-201 file (``prompts.jsonl[.zip]``), or records or ``(participant, text)``
    pairs.  ``participants``: whom to score (all by default): an id where one record has it, else
    ``RECORD:ID`` (``exp1:1``; :func:`cogtestbed.data.psych201.select_records` refuses an id several
    records share, naming them).  ``measures``: ``psych201`` (Psych-201's evaluation: the summed
    token NLL of each response span, the text cut to ``max_length`` characters without an unclosed
    mark, :mod:`cogtestbed.llm_adapters.runs.psych201_eval`; participants that share their opening
    tokens batched over one key-value cache, ``batch_tokens``, ``share_prefix``; ``onednn``: the
    linear layers through oneDNN's float32 kernels,
    :func:`~cogtestbed.llm_adapters.runs.psych201_eval.onednn_linears`) and ``choice``
    (the per-choice ``logp_raw``/``logp_norm``: ``options`` ``"auto"`` takes the option sets declared
    for the data set in :data:`~cogtestbed.llm_adapters.runs.transcript.OPTION_SETS`; ``overflow``,
    ``window``, ``min_context``: :func:`cogtestbed.llm_adapters.runs.transcript.transcript_nll`).
    ``checkpoint``: a JSON Lines file finished participants are appended to and read back from (a
    killed run resumes where it stopped).  The text is fed raw (no chat template), as the
    evaluation does.  Progress goes to the current reporter (:mod:`cogtestbed.progress`; the
    command line's stderr).

    Returns one row per marked choice, ``participant``, ``record`` (the study or source file) and
    ``data_set`` first; the seconds each participant took are in ``attrs["seconds"]`` (under
    ``RECORD:ID``).  Summarise with :func:`participant_nll`.

    Returns
    -------
    pandas.DataFrame
        One row per marked choice with its measures (see above); seconds per participant in ``attrs``.

    Examples
    --------
    Scoring loads a language model (``hf:...``; seconds to minutes); the file is checked first:

    >>> import cogtestbed as ct
    >>> ct.transcript_nll("hf:tiny-random", "no-such-file.jsonl")
    Traceback (most recent call last):
    ...
    cogtestbed.errors.DataError: ...
    """
    from cogtestbed.llm_adapters.runs.transcript import OPTION_SETS, OVERFLOWS, ChoicePlan, plan_choices
    from cogtestbed.llm_adapters.runs.transcript_scoring import score_records

    req = build(TranscriptNllRequest, {**kwargs, "llm": llm})
    options, overflow, window, min_context = req.options, req.overflow, req.window, req.min_context
    if overflow not in OVERFLOWS:  # before the model loads
        raise InputError(f"overflow must be one of {', '.join(OVERFLOWS)}, got {overflow!r}")
    records = _records(transcripts)
    if req.participants is not None:
        records = select_records(records, req.participants)
    client = _client(llm)

    def per_choice(rec: Any) -> ChoicePlan:
        opts = OPTION_SETS.get(rec.data_set) if isinstance(options, str) and options == AUTO else options
        return plan_choices(client, rec.text, options=opts, overflow=overflow,  # type: ignore[arg-type]
                            window=window, min_context=min_context)

    settings = {"options": options if isinstance(options, str) else repr(options), "overflow": overflow,
                "window": window, "min_context": min_context, "max_length": req.max_length,
                **({"onednn": True} if req.onednn else {})}
    parts, seconds = score_records(client, records, measures=list(req.measures), choice_planner=per_choice,
                                   max_length=req.max_length, batch_tokens=req.batch_tokens,
                                   share_prefix=req.share_prefix, checkpoint=req.checkpoint, settings=settings,
                                   onednn=req.onednn)
    parts = [t.assign(participant=r.participant, record=r.experiment, data_set=r.data_set)
             for t, r in zip(parts, records, strict=True)]
    out = pd.concat(parts, ignore_index=True)
    out = out[[*IDENTITY, *[c for c in out.columns if c not in IDENTITY]]]
    out.attrs.update(model=getattr(client, "model", str(llm)), seconds=seconds, overflow=overflow,
                     window=window or client.context_length, min_context=min_context, max_length=req.max_length,
                     measures=list(req.measures))
    if isinstance(transcripts, (str, Path)):  # ct.export(out, to="psych201") writes the scores onto its records
        out.attrs["transcripts"] = str(transcripts)
    return out


@public()
def participant_nll(choices: pd.DataFrame) -> pd.DataFrame:
    """Per participant (record and id) of a :func:`transcript_nll` table, the three measures, each
    named for what it is (:data:`~cogtestbed.llm_adapters.runs.psych201_eval.MEASURES`):

    * ``psych201_nll`` — Psych-201's evaluation: the sum over the participant's response spans of
      each span's summed token NLL (nats), with ``n_spans``; its analyses average it per experiment
      (``summary.groupby("data_set")["psych201_nll"].mean()``);
    * ``centaur_nll`` — Centaur's per-response average: ``psych201_nll / n_spans``;
    * ``nll_raw`` / ``nll_norm`` — this package's mean per-choice NLL, raw and over the options.

    NaN where nothing was scored (a measure not computed, or no choice scored); ``seconds``: the
    time each participant took (from the table's ``attrs``).

    Parameters
    ----------
    choices : pandas.DataFrame
        A ``ct.transcript_nll`` table.

    Returns
    -------
    pandas.DataFrame
        One row per participant (record and id) with the three measures.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> import pandas as pd
    >>> choices = pd.DataFrame({"participant": [1, 1, 2], "record": ["exp.jsonl"] * 3, "data_set": ["exp"] * 3,
    ...                         "psych201_nll": [0.5, 1.5, 2.0], "logp_raw": [-0.5, -1.5, -2.0],
    ...                         "logp_norm": [-0.1, -0.3, -0.7]})
    >>> summary = ct.participant_nll(choices)
    >>> summary[["participant", "n_spans", "psych201_nll", "centaur_nll", "nll_norm"]]
       participant  n_spans  psych201_nll  centaur_nll  nll_norm
    0            1        2           2.0          1.0       0.2
    1            2        1           2.0          2.0       0.7
    """
    def one(df: pd.DataFrame) -> dict[str, Any]:
        out: dict[str, Any] = {"n_choices": len(df)}
        if "psych201_nll" in df:
            spans = df["psych201_nll"].dropna()
            out.update(n_spans=len(spans), psych201_nll=float(spans.sum()) if len(spans) else np.nan,
                       centaur_nll=float(spans.mean()) if len(spans) else np.nan)
        if "logp_raw" in df:
            raw, norm = df["logp_raw"].dropna(), df["logp_norm"].dropna()
            out.update(n_scored_raw=len(raw), n_scored_norm=len(norm),
                       nll_raw=float(-raw.mean()) if len(raw) else np.nan,
                       nll_norm=float(-norm.mean()) if len(norm) else np.nan)
        return out

    rows = [{"participant": p, "record": r, "data_set": d, **one(df)}
            for (p, r, d), df in choices.groupby(list(IDENTITY), sort=False)]
    out = pd.DataFrame(rows)
    key = out["record"].map(record_label) + ":" + out["participant"].astype(str)
    if "seconds" in choices.attrs:
        out["seconds"] = key.map(choices.attrs["seconds"])
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
    writes it back byte for byte.

    Parameters
    ----------
    path : path
        A Psych-201 file (``.jsonl``, optionally zipped).

    Returns
    -------
    pandas.DataFrame
        One row per marked choice.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> _ = ct.export(trials, experiment="instrumental-learning", output="psych201.jsonl")
    >>> table = ct.transcript_table("psych201.jsonl")
    >>> table.shape, sorted(set(table["participant"]))
    ((192, 12), [...])
    """
    from cogtestbed.data.psych201_table import transcript_table as read

    return read(path)


@public(paths=("path",))
@derive_api(ValidateRequest)
def validate(path: str | Path, **options: Any) -> pd.DataFrame:
    """Every defect of the Psych-201 file ``path`` (``cogtestbed validate FILE``): one row per
    defect with its ``line``, ``participant``, ``record``, ``field``, ``kind`` and ``message``; no row for a
    file without one.  The kinds and the heuristics behind ``condition_leak``, ``option_outside``
    and ``rt_unit``: :mod:`cogtestbed.data.psych201_validate`.

    Returns
    -------
    pandas.DataFrame
        Every defect, one row each (empty: none).

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> _ = ct.export(trials, experiment="instrumental-learning", output="psych201.jsonl")
    >>> len(ct.validate("psych201.jsonl"))
    0
    """
    from cogtestbed.data.psych201_validate import defects_table, validate_psych201

    req = build(ValidateRequest, options)
    return defects_table(validate_psych201(path, max_length=req.max_length))


@public()
@derive_api(HeldoutRequest)
def heldout_nll(experiment: str, trials: pd.DataFrame, **options: Any) -> HeldOut:
    """``model`` of ``experiment`` fitted pooled on the training subjects of ``trials``, scored per
    choice on the held-out ones: ``test`` names them, or is how many to draw (seeded by ``seed``;
    :func:`cogtestbed.inference.heldout.heldout_split`).

    Returns
    -------
    HeldOut
        The pooled fit on the training subjects and each held-out subject's NLL (``.table``).

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> held = ct.heldout_nll("instrumental-learning", trials, model="rw-pm", test=1, seed=0)
    >>> len(held.train), len(held.test), list(held.table.columns)
    (1, 1, ['subject', 'nll', 'n_choices', 'nll_per_choice'])
    """
    from cogtestbed.inference.heldout import heldout_nll as score
    from cogtestbed.inference.heldout import heldout_split
    from cogtestbed.registry import get_experiment

    req = build(HeldoutRequest, options)
    model, test, seed, n_starts = req.model, req.held_out, req.seed, req.n_starts
    exp = get_experiment(experiment)
    chosen = heldout_split(list(trials["subject"].unique()), test, seed)[1] if isinstance(test, int) else list(test)
    return score(exp.model(model), trials, chosen, n_starts=n_starts)

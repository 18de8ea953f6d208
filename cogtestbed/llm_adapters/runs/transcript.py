"""Choice log-likelihood of an in-process language model on a marked transcript (Centaur's measure).

Binz et al. (2025, *A foundation model to predict and capture human cognition*, Nature) score a
model on a participant's transcript (Psych-101/201: the experiment in natural language, every
human choice marked ``<<…>>``) by the negative log-likelihood of the human's choice tokens given
the transcript so far.  Their evaluation code (Psych-201 ``0_analyses/eval.py``) feeds the whole
text, markers included, in **one teacher-forced forward pass** and sums, per choice, the
full-vocabulary cross-entropy of the tokens between ``<<`` and ``>>``.  This module computes:

* ``logp_raw`` — that measure, **Centaur's**: Σ log p(token | everything before it) over the
  choice's tokens, under the softmax over the whole vocabulary;
* ``logp_norm`` — the same log-probability renormalised over the options available at that
  choice (log p(chosen) − log Σ_o p(o), each option's sequence scored in the same context): the
  probability the model gives the chosen option *among the options*, comparable to a cognitive
  model's choice probability.  This package's addition, not Centaur's.  It needs the choice's
  option set (:data:`OptionSets`); single-token options cost nothing beyond the one pass (the
  same row of log-probabilities), options of several tokens one extra forward pass per option
  and choice.

A choice is *aligned* when its text starts and ends on token boundaries (the tokens covering it
cover nothing else).  Where the tokenizer merges the choice with a marker, no token sequence is
the choice alone: the choice gets ``null_reason`` and no value (never a guess).

**Transcripts longer than the model's context** (``overflow``): ``"refuse"`` (the default; one
clear error), ``"truncate"`` (what Centaur's script does: the text is cut, here at the context's
last token, and the choices past it get ``null_reason``), or ``"window"`` (a strided sliding
window, as in Hugging Face's "perplexity of fixed-length models"): windows of ``window`` tokens
(the model's context length by default), each choice scored in the first window that holds it
together with at least ``min_context`` tokens before it (half the window by default; the
instructions at the top drop out of view for later choices).  Every choice records the tokens it
was conditioned on (``context_tokens``) and where its window starts (``window_start``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from cogtestbed.errors import DataError, InputError

#: The marks around a choice in a Psych-101/201 transcript.
OPEN, CLOSE = "<<", ">>"
_MARKED = re.compile(re.escape(OPEN) + r"(.*?)" + re.escape(CLOSE), re.S)
#: How a transcript longer than the model's context is handled (module docstring).
Overflow = Literal["refuse", "truncate", "window"]
OVERFLOWS: tuple[str, ...] = ("refuse", "truncate", "window")
#: ``options(text, chosen) -> one option set (or None) per marked choice``: the options available
#: at each choice, in the transcript's letters; None where the data set declares none.
OptionSets = Callable[[str, Sequence[str]], Sequence[Sequence[str] | None]]
#: The per-choice table's columns (:func:`transcript_nll`).
COLUMNS = ("choice", "chosen", "options", "n_tokens", "logp_raw", "logp_norm", "context_tokens",
           "window_start", "null_reason", "norm_null_reason")


class TranscriptError(DataError):
    """A transcript that cannot be scored (no marked choice, unbalanced marks, an option set that
    does not hold the chosen option)."""


@dataclass(frozen=True)
class MarkedChoice:
    """One ``<<…>>`` choice: its text and character span (inside the marks) in the transcript."""

    index: int
    text: str
    start: int
    end: int


def marked_choices(text: str) -> list[MarkedChoice]:
    """The transcript's marked choices in order; refuses a text without one, with an unclosed
    ``<<`` or an empty choice."""
    found = [MarkedChoice(i, m.group(1), m.start(1), m.end(1)) for i, m in enumerate(_MARKED.finditer(text))]
    if not found:
        raise TranscriptError("the transcript marks no choice with <<…>>")
    if text.count(OPEN) != text.count(CLOSE):
        raise TranscriptError(f"unbalanced choice marks: {text.count(OPEN)} '<<' and {text.count(CLOSE)} '>>'")
    empty = [c.index for c in found if not c.text]
    if empty:
        raise TranscriptError(f"choice {empty[0]} is empty (<<>>)")
    return found


# ----------------------------------------------------------------------------- token plan
@dataclass
class _Plan:
    """Where each choice's tokens are and which options are scored with them."""

    ids: list[int]
    spans: list[tuple[int, int] | None]  # [first, last + 1) token indices of each choice
    reasons: list[str | None]
    options: list[tuple[str, ...] | None]
    option_ids: list[list[list[int]] | None]  # each option's tokens in the choice's context
    chosen_pos: list[int | None]  # index of the chosen option in its set


def _token_span(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """[first, last + 1) of the tokens covering characters [start, end), or None when a token
    crosses either end (the choice is merged with the text around it)."""
    first = last = None
    for k, (a, b) in enumerate(offsets):
        if b <= start or a >= end or a == b:
            continue
        if first is None:
            first = k
        last = k
        if a < start or b > end:
            return None
    if first is None or last is None or offsets[first][0] != start or offsets[last][1] != end:
        return None
    return first, last + 1


def _tokenize(tokenizer: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    enc = tokenizer(text, return_offsets_mapping=True)
    return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]


def _line_option_tokens(tokenizer: Any, text: str, choice: MarkedChoice, option: str, ids: list[int],
                        offsets: Sequence[tuple[int, int]], first: int) -> list[int] | None:
    """``option``'s tokens read from the choice's line alone (:func:`_option_tokens`), or None when
    the line does not start at a token boundary or its tokens before the choice are not the
    transcript's own."""
    line = text.rfind("\n", 0, choice.start) + 1
    k0 = next((k for k in range(first, -1, -1) if offsets[k][0] == line and offsets[k][1] > line), None)
    if k0 is None or line == 0:
        return None
    enc = tokenizer(text[line:choice.start] + option + CLOSE, return_offsets_mapping=True,
                    add_special_tokens=False)
    local = list(enc["input_ids"])
    span = _token_span([tuple(o) for o in enc["offset_mapping"]], choice.start - line,
                       choice.start - line + len(option))
    if span is None or local[:span[0]] != ids[k0:first]:
        return None
    return local[span[0]:span[1]]


def _option_tokens(tokenizer: Any, text: str, choice: MarkedChoice, option: str, ids: list[int],
                   offsets: Sequence[tuple[int, int]], first: int) -> list[int] | None:
    """``option``'s tokens where the choice stands (the text before it, the option, the closing
    mark), or None when the option does not tokenize on its own there (the text before it then
    tokenizes differently, or a token crosses the option's ends).

    The choice's line alone is tokenized first (from a token boundary at the line's start): when
    its tokens before the choice are the transcript's own, the option's tokens are read there;
    otherwise the whole text before the choice is tokenized again (exact, but quadratic in a long
    transcript)."""
    local = _line_option_tokens(tokenizer, text, choice, option, ids, offsets, first)
    if local is not None:
        return local
    full, full_offsets = _tokenize(tokenizer, text[:choice.start] + option + CLOSE)
    span = _token_span(full_offsets, choice.start, choice.start + len(option))
    if span is None or full[:span[0]] != ids[:first]:
        return None
    return full[span[0]:span[1]]


def _plan(tokenizer: Any, text: str, choices: list[MarkedChoice],
          options: Sequence[Sequence[str] | None] | None) -> _Plan:
    ids, offsets = _tokenize(tokenizer, text)
    plan = _Plan(ids, [], [], [], [], [])
    for i, c in enumerate(choices):
        span = _token_span(offsets, c.start, c.end)
        reason = None
        if span is None:
            reason = "the tokenizer merges the choice with the text around it (no token sequence is the choice alone)"
        elif span[0] == 0:
            reason, span = "the choice is the transcript's first token (nothing to condition on)", None
        plan.spans.append(span)
        plan.reasons.append(reason)
        opts = None if options is None or options[i] is None else tuple(options[i] or ())
        if opts is not None and c.text not in opts:
            raise TranscriptError(f"choice {i} ({c.text!r}) is not among its options {list(opts)}")
        plan.options.append(opts)
        plan.chosen_pos.append(None if opts is None else opts.index(c.text))
        if opts is None or span is None:
            plan.option_ids.append(None)
            continue
        chosen = ids[span[0]:span[1]]
        toks = [chosen if o == c.text else _option_tokens(tokenizer, text, c, o, ids, offsets, span[0])
                for o in opts]
        plan.option_ids.append(None if any(t is None for t in toks) else [t for t in toks if t is not None])
    return plan


# ----------------------------------------------------------------------------- windows
def _windows(n: int, spans: Sequence[tuple[int, int] | None], window: int, min_context: int,
             overflow: str) -> list[tuple[int, int, int]]:
    """(input start, scored from, scored to) token ranges: each choice is scored in the window
    whose scored range holds it, and a window's scored range never splits a choice."""
    if n <= window:
        return [(0, 0, n)]
    if overflow == "refuse":
        raise InputError(f"the transcript has {n} tokens and the model reads {window}: choose overflow "
                         "'window' (score each choice from a sliding window) or 'truncate' (score the "
                         "choices in the first window only, as Centaur's script cuts the text)")
    if overflow == "truncate":
        return [(0, 0, window)]
    if not 0 < min_context < window:
        raise InputError(f"min_context must be between 1 and window - 1 ({window - 1}), got {min_context}")
    stride = window - min_context
    out = [(0, 0, _snap(window, spans))]
    while out[-1][2] < n:
        lo = out[-1][2]
        hi = n if lo + stride >= n else _snap(lo + stride, spans)
        if hi <= lo:
            raise InputError(f"a choice is longer than window - min_context ({stride} tokens)")
        out.append((hi - window, lo, hi))
    return out


def _snap(hi: int, spans: Sequence[tuple[int, int] | None]) -> int:
    """``hi`` moved down to the start of a choice it would split."""
    for s in spans:
        if s is not None and s[0] < hi < s[1]:
            return s[0]
    return hi


# ----------------------------------------------------------------------------- forward passes
def _log_rows(model: Any, torch: Any, ids: Sequence[int], rows: Sequence[int], device: str) -> Any:
    """log-softmax (in float64, over the vocabulary) of the next-token logits at window positions
    ``rows`` of one teacher-forced pass over ``ids``: only those rows leave the model
    (``logits_to_keep``), not a vocabulary-wide row per token."""
    keep = torch.tensor(sorted(set(rows)), dtype=torch.long, device=device)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([list(ids)], device=device), use_cache=False, logits_to_keep=keep)
    logits = out.logits[0]
    if logits.shape[0] != keep.shape[0]:  # a model that ignores logits_to_keep returns every row
        logits = logits[keep]
    lp = torch.log_softmax(logits.double(), dim=-1)
    return {int(r): lp[j] for j, r in enumerate(keep.tolist())}


#: log p(token | row's context) by window row and token: a row's full log-softmax (a tensor), or
#: the values a shared pass gathered for the tokens asked (:func:`choice_rows`).
LogRows = dict[int, Any]


def _score_window(model: Any, torch: Any, device: str, plan: _Plan, win: tuple[int, int, int],
                  todo: list[int], out: list[dict[str, Any]], lp: LogRows | None = None) -> None:
    """Fill ``out`` for the choices ``todo`` whose tokens lie in ``win``'s scored range: one pass
    over the window (none where ``lp`` holds its rows already), plus one per option of several
    tokens that was not chosen."""
    start, _, hi = win
    spans = {i: s for i in todo if (s := plan.spans[i]) is not None}
    if lp is None:
        rows = [t - 1 - start for first, last in spans.values() for t in range(first, last)]
        lp = _log_rows(model, torch, plan.ids[start:hi], rows, device)
    for i, (first, last) in spans.items():
        chosen = plan.ids[first:last]
        raw = float(sum(lp[t - 1 - start][plan.ids[t]] for t in range(first, last)))
        out[i].update(logp_raw=raw, n_tokens=last - first, context_tokens=first - start, window_start=start)
        opt, pos = plan.option_ids[i], plan.chosen_pos[i]
        if opt is None or pos is None:
            continue
        row = lp[first - 1 - start]
        scores = [raw if toks == chosen else float(row[toks[0]]) if len(toks) == 1
                  else _sequence_logp(model, torch, device, plan.ids[start:first], toks) for toks in opt]
        out[i]["logp_norm"] = scores[pos] - float(np.logaddexp.reduce(scores))


def _sequence_logp(model: Any, torch: Any, device: str, prefix: list[int], toks: list[int]) -> float:
    """log p(``toks`` | ``prefix``): an option of several tokens, teacher-forced after the window's
    text before the choice (its own forward pass)."""
    seq = prefix + toks
    rows = list(range(len(prefix) - 1, len(seq) - 1))
    lp = _log_rows(model, torch, seq, rows, device)
    return float(sum(lp[r][seq[r + 1]] for r in rows))


def _norm_reason(plan: _Plan, i: int) -> str | None:
    """Why choice ``i`` (aligned) has no ``logp_norm``, or None."""
    if plan.options[i] is None:
        return "no option set for this choice"
    if plan.option_ids[i] is None:
        return "an option does not tokenize on its own where the choice stands"
    return None


def _window_size(client: Any, window: int | None) -> int:
    """Tokens per forward pass: ``window``, else the model's context length; never beyond it."""
    ctx = client.context_length
    size = window or ctx
    if size is None:
        raise InputError(f"{client.model}: the model names no context length; pass window=")
    if ctx is not None and size > ctx:
        raise InputError(f"window {size} is longer than the model's context ({ctx} tokens)")
    return int(size)


@dataclass
class ChoicePlan:
    """One transcript's per-choice scoring laid out before any forward pass: its tokens, choices,
    windows and the rows of the table (:func:`plan_choices`; scored by :func:`score_choices`)."""

    plan: _Plan
    windows: list[tuple[int, int, int]]
    size: int
    out: list[dict[str, Any]]

    @property
    def ids(self) -> list[int]:
        """The transcript's tokens."""
        return self.plan.ids

    def todo(self, win: tuple[int, int, int]) -> list[int]:
        """The aligned choices scored in window ``win``."""
        return [i for i, s in enumerate(self.plan.spans) if s is not None and win[1] <= s[0] and s[1] <= win[2]]


def plan_choices(client: Any, text: str, *, options: OptionSets | Sequence[Sequence[str] | None] | None = None,
                 overflow: Overflow = "refuse", window: int | None = None,
                 min_context: int | None = None) -> ChoicePlan:
    """:func:`transcript_nll`'s tokens, aligned choices, option tokens and windows, no forward pass
    (its refusals: an overflow with ``"refuse"``, options that do not hold the choice)."""
    if overflow not in OVERFLOWS:
        raise InputError(f"overflow must be one of {', '.join(OVERFLOWS)}, got {overflow!r}")
    choices = marked_choices(text)
    opts = options(text, [c.text for c in choices]) if callable(options) else options
    if opts is not None and len(opts) != len(choices):
        raise InputError(f"{len(opts)} option sets for {len(choices)} marked choices")
    plan = _plan(client.tokenizer, text, choices, opts)
    size = _window_size(client, window)
    wins = _windows(len(plan.ids), plan.spans, size, size // 2 if min_context is None else min_context, overflow)
    out: list[dict[str, Any]] = [
        {"choice": c.index, "chosen": c.text, "options": plan.options[i], "n_tokens": 0, "logp_raw": math.nan,
         "logp_norm": math.nan, "context_tokens": -1, "window_start": -1, "null_reason": plan.reasons[i],
         "norm_null_reason": plan.reasons[i] or _norm_reason(plan, i)}
        for i, c in enumerate(choices)]
    return ChoicePlan(plan, wins, size, out)


def choice_rows(cp: ChoicePlan) -> dict[int, set[int]]:
    """The rows of the first window (the text's start) its choices read, each with the tokens read
    there (the chosen tokens; the first token of each single-token option): what a shared forward
    pass over the same tokens gathers for :func:`score_choices`'s ``first``.  Empty where the first
    window scores no choice."""
    win = cp.windows[0]
    need: dict[int, set[int]] = {}
    for i in cp.todo(win):
        first, last = cp.plan.spans[i] or (0, 0)
        for t in range(first, last):
            need.setdefault(t - 1 - win[0], set()).add(cp.plan.ids[t])
        for toks in cp.plan.option_ids[i] or ():
            if len(toks) == 1:
                need.setdefault(first - 1 - win[0], set()).add(toks[0])
    return need


def score_choices(client: Any, cp: ChoicePlan, first: LogRows | None = None) -> pd.DataFrame:
    """The per-choice table of a :class:`ChoicePlan` (:func:`transcript_nll`): a forward pass per
    window, except the first where ``first`` holds its rows (:func:`choice_rows`, gathered by a
    pass over the same tokens)."""
    plan = cp.plan
    guard: Callable[[], AbstractContextManager[Any]] = getattr(client, "_forward", nullcontext)
    with guard():
        for k, win in enumerate(cp.windows):
            todo = cp.todo(win)
            if todo:
                _score_window(client.hf_model, client.torch, client.device, plan, win, todo, cp.out,
                              first if k == 0 else None)
    for i, s in enumerate(plan.spans):
        if s is not None and cp.out[i]["window_start"] < 0:
            cp.out[i]["null_reason"] = cp.out[i]["norm_null_reason"] = (
                f"beyond the model's context of {cp.size} tokens (overflow 'truncate')")
    return pd.DataFrame(cp.out, columns=list(COLUMNS))


def transcript_nll(client: Any, text: str, *, options: OptionSets | Sequence[Sequence[str] | None] | None = None,
                   overflow: Overflow = "refuse", window: int | None = None,
                   min_context: int | None = None) -> pd.DataFrame:
    """Per-choice log-likelihood of ``client``'s model on one marked transcript (module docstring).

    ``client``: an in-process model with a tokenizer and teacher-forced logits
    (:class:`~cogtestbed.llm_adapters.clients.hf.HFClient`: ``hf:smollm2-135m``, ``hf:tiny-random``, any
    local ``transformers`` causal LM).  ``options``: the option set of each choice (a list, or a
    function of the text and the chosen strings), for ``logp_norm``; without it only ``logp_raw``
    (Centaur's) is computed.  ``window``: tokens per forward pass (the model's context length by
    default); ``overflow`` and ``min_context``: what a longer transcript gets.

    Returns one row per marked choice (:data:`COLUMNS`): ``logp_raw``/``logp_norm`` are natural
    log-probabilities (the choice's negative log-likelihood is their negation); NaN with a
    ``null_reason`` where a choice cannot be scored.  One transcript, a pass of its own per window;
    a whole data set shares passes (:mod:`cogtestbed.llm_adapters.runs.transcript_scoring`).
    """
    return score_choices(client, plan_choices(client, text, options=options, overflow=overflow, window=window,
                                              min_context=min_context))


# ----------------------------------------------------------------------------- option sets
_SHAHAR_HEADER = re.compile(r"choose between two options: (\w+) and (\w+)\.(?s:.*?)another choice between two "
                            r"options: (\w+) and (\w+)\.")
_SHAHAR_STAGE1 = re.compile(r"You choose $")
_SHAHAR_STAGE2 = re.compile(r"In state \w+, you choose $")


def shahar2019_options(text: str, chosen: Sequence[str]) -> list[tuple[str, ...] | None]:
    """Option sets of Psych-201's ``shahar2019twosteptask`` (its ``generate_prompts.py``): the
    header's first-stage pair for ``You choose <<…>>`` and its second-stage pair (the same two
    letters in both states) for ``In state S, you choose <<…>>``; None for any other choice."""
    head = _SHAHAR_HEADER.search(text)
    if head is None:
        raise TranscriptError("no shahar2019twosteptask header naming the two stages' options")
    first, second = head.groups()[:2], head.groups()[2:]
    out: list[tuple[str, ...] | None] = []
    for c in marked_choices(text):
        before = text[max(0, c.start - len(OPEN) - 40):c.start - len(OPEN)]
        out.append(first if _SHAHAR_STAGE1.search(before) else second if _SHAHAR_STAGE2.search(before) else None)
    return out


#: Option sets per Psych-201 data set (the name before the ``/`` of a record's ``experiment``).
OPTION_SETS: dict[str, OptionSets] = {"shahar2019twosteptask": shahar2019_options}

"""Psych-201's own evaluation measure, batched over participants.

Psych-201's evaluation script (``0_analyses/eval.py``, github.com/marcelbinz/Psych-201) compares a
language model with human participants as follows; this module computes exactly that measure:

1. **Truncation** (:func:`safe_truncate`): the text is cut to ``max_length`` characters (its
   ``--max-seq-length``, 32,768 by default); its few textual fixes are applied (``<<skip>>`` →
   ``<<skip>>.``, ``<<-`` → ``<< -``, ``<<think>>`` → ``<< think>>``, ``More Details >>`` →
   ``More Details ->``); where more ``<<`` than ``>>`` remain, the text is cut at its last ``<<``
   (no unclosed mark is left); whitespace right before a ``>>`` is removed.
2. **Response spans** (:func:`response_spans`): the text is tokenized as the tokenizer does by
   default (special tokens included); a span is the tokens after each occurrence of the token
   sequence of ``" <<"`` up to the next occurrence of that of ``">>"`` (the end of the text where
   none follows).  A choice whose marks the tokenizer merges with other text (no ``" <<"`` token
   sequence before it) is no span: the script does not score it, and neither does this module.
3. **Per participant**: one teacher-forced pass; each span's NLL is the **sum** of its tokens'
   cross-entropies (natural log, softmax over the whole vocabulary); the script keeps the list of
   span NLLs per participant, and its analyses average per experiment.

Centaur's "per-response average" is the mean of those span NLLs (:data:`MEASURES`).

**Speed** (:func:`score_texts`): one pass per participant, stopped at the last row read, gives
every row asked (the spans' and, through :attr:`Prepared.extra`, the per-choice measure's); only
those rows of the final hidden state go through the output layer.  Participants whose token
sequences share at least :data:`MIN_SHARED_FRACTION` of their tokens at the start are run as one
group: the shared prefix once, its key-value cache reused by every member, the members' remainders
batched (right padding, attention mask).  ``onednn``: :func:`onednn_linears`.  ``done`` is called
after each group, so a caller can save what is finished and resume after a kill
(:func:`cogtestbed.api.transcripts.transcript_nll`'s ``checkpoint``).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from cogtestbed.errors import InputError

#: The evaluation's maximum text length in characters (``eval.py``'s ``--max-seq-length``).
MAX_LENGTH = 32768
#: The token texts that open and close a response span (``eval.py``: ``" <<"`` and ``">>"``).
OPEN_TEXT, CLOSE_TEXT = " <<", ">>"
#: The three measures ``transcript-nll`` reports, and what each is.
MEASURES = {
    "psych201_nll": "Psych-201's evaluation (0_analyses/eval.py): per participant, the sum over response spans "
                    "of each span's summed token NLL, text cut to max_length without an unclosed mark",
    "centaur_nll": "Centaur's per-response average: the mean over the participant's response spans of the span's "
                   "summed token NLL (psych201_nll / n_spans)",
    "nll_raw": "this package's per-choice NLL: the mean over aligned marked choices of -log p(choice tokens), "
               "whole text, overflow rule; nll_norm renormalised over the stated options",
}
_SPACE_BEFORE_CLOSE = re.compile(r"\s+(?=>>)")
_FIXES = (("<<skip>>", "<<skip>>."), ("<<-", "<< -"), ("<<think>>", "<< think>>"),
          ("More Details >>", "More Details ->"))


def safe_truncate(text: str, max_length: int = MAX_LENGTH) -> str:
    """The text the evaluation scores: cut to ``max_length`` characters, its textual fixes
    applied, cut again at the last ``<<`` where a mark would be left open, whitespace before
    ``>>`` removed (module docstring, step 1)."""
    cut = text[:max_length]
    for old, new in _FIXES:
        cut = cut.replace(old, new)
    if cut.count("<<") > cut.count(">>"):
        cut = cut[:cut.rfind("<<")]
    return _SPACE_BEFORE_CLOSE.sub("", cut)


def _find(seq: Sequence[int], sub: Sequence[int], start: int) -> int:
    m = len(sub)
    first = sub[0]
    for i in range(start, len(seq) - m + 1):
        if seq[i] == first and list(seq[i:i + m]) == list(sub):
            return i
    return -1


def response_spans(ids: Sequence[int], open_ids: Sequence[int], close_ids: Sequence[int]) -> list[tuple[int, int]]:
    """[first, end) token ranges of the response spans of ``ids`` (module docstring, step 2);
    empty spans (``<<>>``) are none."""
    spans: list[tuple[int, int]] = []
    i = 0
    while True:
        s = _find(ids, open_ids, i)
        if s < 0:
            return spans
        a = s + len(open_ids)
        e = _find(ids, close_ids, a)
        e = len(ids) if e < 0 else e
        if e > a:
            spans.append((a, e))
        i = e + len(close_ids)


@dataclass
class Prepared:
    """One participant's text as the evaluation scores it: the truncated text, its tokens and
    their character offsets, and the response spans."""

    text: str
    ids: list[int]
    offsets: list[tuple[int, int]]
    spans: list[tuple[int, int]]
    nll: list[float] = field(default_factory=list)
    #: Further rows this participant's pass gathers (row -> tokens; another measure's, such as the
    #: per-choice NLL's :func:`~cogtestbed.llm_adapters.runs.transcript.choice_rows`), and after
    #: the pass every gathered row's log-probabilities (row -> token -> log p(token | tokens 0..row)).
    extra: dict[int, set[int]] = field(default_factory=dict)
    rows: dict[int, dict[int, float]] = field(default_factory=dict)

    def needs(self) -> dict[int, set[int]]:
        """Every row the pass gathers, with its tokens: each span token's (row ``t - 1``) and :attr:`extra`."""
        out = {r: set(toks) for r, toks in self.extra.items()}
        for a, e in self.spans:
            for t in range(a, e):
                out.setdefault(t - 1, set()).add(self.ids[t])
        return out

    def feed(self) -> list[int]:
        """The tokens the pass reads: up to the last row gathered (nothing after it changes a value)."""
        rows = self.needs()
        return self.ids[:max(rows) + 1] if rows else []

    def choice_of_span(self) -> list[int]:
        """The index of the marked choice (its ``<<``, counted in the text) each span belongs to."""
        out = []
        for a, _ in self.spans:
            start = self.offsets[a][0] if a < len(self.offsets) else len(self.text)
            out.append(max(self.text[:start].count("<<") - 1, 0))
        return out


def marker_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The token sequences of ``" <<"`` and ``">>"`` (no special tokens), as the script takes them."""
    return (list(tokenizer(OPEN_TEXT, add_special_tokens=False)["input_ids"]),
            list(tokenizer(CLOSE_TEXT, add_special_tokens=False)["input_ids"]))


def prepare(tokenizer: Any, text: str, max_length: int = MAX_LENGTH) -> Prepared:
    """A text truncated, tokenized and its spans found (steps 1 and 2)."""
    cut = safe_truncate(text, max_length)
    enc = tokenizer(cut, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    open_ids, close_ids = marker_ids(tokenizer)
    return Prepared(cut, ids, [tuple(o) for o in enc["offset_mapping"]], response_spans(ids, open_ids, close_ids))


# ----------------------------------------------------------------------------- grouping
def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


#: The least share of a member's tokens its group's common prefix must hold
#: (:func:`prefix_groups`).  A group's remainders run over the prefix's key-value cache with an
#: explicit attention mask, which loses the causal kernel's skipped half of the attention (and
#: reads a mask per layer): measured on SmolLM2-135M, a 136-token prefix shared by two 3,600-token
#: Stroop transcripts made them slower than two plain passes.  Psych-201's data sets shared 4-19 %
#: of their tokens, so by default they run as plain passes.
MIN_SHARED_FRACTION = 0.5


def prefix_groups(seqs: Sequence[Sequence[int]], batch_tokens: int, min_shared: int = 16,
                  min_fraction: float | None = None) -> list[list[int]]:
    """Indices of ``seqs`` in groups: sequences sorted by their tokens, consecutive ones joined
    while they share at least ``min_shared`` leading tokens, and at least ``min_fraction`` of each
    member's (:data:`MIN_SHARED_FRACTION` by default), with the group's first and the group's
    padded remainders stay within ``batch_tokens``."""
    frac = MIN_SHARED_FRACTION if min_fraction is None else min_fraction
    order = sorted(range(len(seqs)), key=lambda i: list(seqs[i]))
    groups: list[list[int]] = []
    for i in order:
        if groups:
            g = groups[-1]
            shared = min(_common(seqs[g[0]], seqs[i]), *(len(seqs[j]) - 1 for j in (*g, i)))
            most = max(len(seqs[j]) for j in (*g, i))
            if shared >= max(min_shared, frac * most) and (most - shared) * (len(g) + 1) <= batch_tokens:
                g.append(i)
                continue
        groups.append([i])
    return groups


# ----------------------------------------------------------------------------- forward passes
_PACKED: weakref.WeakKeyDictionary[Any, list[tuple[Any, Any, Any]]] = weakref.WeakKeyDictionary()


@contextmanager
def onednn_linears(model: Any, torch: Any) -> Iterator[None]:
    """The decoder's linear layers through oneDNN's packed float32 kernels meanwhile
    (:func:`cogtestbed.shims.torch_shim.onednn_linear_ops`, weights packed once per model).  On AMD CPUs, where
    MKL's float32 GEMM takes a slower path, about twice as fast per layer (measured on this
    project's machine); the values differ from MKL's by float32 rounding only (summation order:
    about 1e-6 relative, some 1e-4 nats on a participant of 100 choices).  The output layer is
    left as it is.  Refused in one line off a float32 CPU model or without oneDNN."""
    from cogtestbed.shims.torch_shim import onednn_linear_ops

    ops = onednn_linear_ops(torch)
    param = next(model.parameters())
    if (not torch.backends.mkldnn.is_available() or ops is None
            or param.device.type != "cpu" or param.dtype != torch.float32):
        raise InputError(f"onednn needs a float32 model on the CPU and torch built with oneDNN "
                         f"(here: {param.dtype} on {param.device.type}, oneDNN "
                         f"{'available' if torch.backends.mkldnn.is_available() else 'missing'})")
    reorder, pointwise = ops
    base = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
    if model not in _PACKED:
        with torch.inference_mode():
            _PACKED[model] = [(m, reorder(m.weight.detach(), None),
                               None if m.bias is None else m.bias.detach())
                              for m in base.modules() if isinstance(m, torch.nn.Linear)]

    def fast(w: Any, b: Any) -> Any:
        return lambda x: pointwise(x, w, b, "none", [], "")

    patched = _PACKED[model]
    for m, w, b in patched:
        m.forward = fast(w, b)
    try:
        yield
    finally:
        for m, _, _ in patched:
            del m.forward


#: Rows of the final hidden state put through the output layer at once (bounds the float64
#: log-softmax: rows x vocabulary x 8 bytes).
HEAD_ROWS = 256


def _gather(model: Any, torch: Any, hidden: Any, needs: dict[int, set[int]], offset: int,
            into: dict[int, dict[int, float]]) -> None:
    """For each row ``r`` of ``needs`` (hidden row ``r - offset``), log p(token | row's context) of
    its tokens (softmax over the whole vocabulary, in float64) into ``into[r]``."""
    rows = sorted(needs)
    head = model.get_output_embeddings()
    cap = getattr(model.config, "final_logit_softcapping", None)
    for k in range(0, len(rows), HEAD_ROWS):
        chunk = rows[k:k + HEAD_ROWS]
        logits = head(hidden[[r - offset for r in chunk]]).double()
        if cap:
            logits = torch.tanh(logits / cap) * cap
        lp = torch.log_softmax(logits, dim=-1)
        for j, r in enumerate(chunk):
            toks = sorted(needs[r])
            into[r] = dict(zip(toks, lp[j, toks].tolist(), strict=True))


def _cache_kw(base: Any, cache: Any) -> dict[str, Any]:
    """The key-value cache argument under the name the model's forward takes (``cache`` in
    transformers 5, ``past_key_values`` before)."""
    if cache is None:
        return {}
    import inspect

    return {"cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values": cache}


def _shared_length(feeds: list[list[int]]) -> int:
    """Tokens every member shares at its start (at least one token of each left over); 0 alone."""
    if len(feeds) == 1:
        return 0
    return min(min(_common(feeds[0], f) for f in feeds), *(len(f) - 1 for f in feeds))


def _prefix_pass(base: Any, model: Any, torch: Any, device: str, group: list[Prepared], feeds: list[list[int]],
                 needs: list[dict[int, set[int]]], shared: int) -> Any:
    """The shared prefix's pass: its rows gathered into each member, its key-value cache repeated
    for the members (None where nothing is shared)."""
    if shared == 0:
        return None
    out = base(input_ids=torch.tensor([feeds[0][:shared]], device=device), use_cache=True)
    cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
    for p, need in zip(group, needs, strict=True):
        _gather(model, torch, out.last_hidden_state[0], {r: v for r, v in need.items() if r < shared}, 0, p.rows)
    if cache is not None and len(group) > 1:
        cache.batch_repeat_interleave(len(group))
    return cache


def _score_group(model: Any, torch: Any, device: str, group: list[Prepared]) -> None:
    """Fill each member's :attr:`~Prepared.rows` and ``nll`` (one value per span): the shared
    prefix once, the remainders batched over its key-value cache."""
    base = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
    feeds = [p.feed() for p in group]
    needs = [p.needs() for p in group]
    shared = _shared_length(feeds)
    cache = _prefix_pass(base, model, torch, device, group, feeds, needs, shared)
    rest = [f[shared:] for f in feeds]
    width = max(len(r) for r in rest)
    ids = torch.tensor([r + [0] * (width - len(r)) for r in rest], device=device)
    mask = torch.tensor([[1] * (shared + len(r)) + [0] * (width - len(r)) for r in rest], device=device)
    out = base(input_ids=ids, attention_mask=mask if len(group) > 1 or shared else None,
               use_cache=cache is not None, **_cache_kw(base, cache))
    for k, (p, need) in enumerate(zip(group, needs, strict=True)):
        _gather(model, torch, out.last_hidden_state[k], {r: v for r, v in need.items() if r >= shared}, shared,
                p.rows)
        p.nll = [-sum(p.rows[t - 1][p.ids[t]] for t in range(a, e)) for a, e in p.spans]


def score_texts(client: Any, texts: Sequence[str], *, max_length: int = MAX_LENGTH, batch_tokens: int = 16384,
                share_prefix: bool = True, done: Callable[[list[int], list[Prepared]], None] | None = None,
                jobs: Sequence[Prepared] | None = None, onednn: bool = False) -> list[Prepared]:
    """Psych-201's measure of ``client``'s model on each text (module docstring): each text's
    :class:`Prepared` with ``nll``, one summed token NLL per response span.  ``batch_tokens``
    bounds a group's padded tokens (memory); ``share_prefix`` False runs every text on its own
    (one plain pass each, as the script does); ``done(indices, prepared)`` is called after each
    group.  ``jobs``: the texts prepared already (:func:`prepare`; with :attr:`~Prepared.extra`
    rows to gather in the same pass) instead of ``texts``.  ``onednn``: the linear layers through
    :func:`onednn_linears`."""
    prepared = [prepare(client.tokenizer, t, max_length) for t in texts] if jobs is None else list(jobs)
    groups = (prefix_groups([p.feed() for p in prepared], batch_tokens) if share_prefix
              else [[i] for i in range(len(prepared))])
    torch = client.torch
    guard: Callable[[], AbstractContextManager[Any]] = getattr(client, "_forward", nullcontext)  # the model's lock
    kernels: Callable[[], AbstractContextManager[Any]] = (
        (lambda: onednn_linears(client.hf_model, torch)) if onednn else nullcontext)
    for g in groups:
        members = [prepared[i] for i in g]
        todo = [p for p in members if p.spans or p.extra]
        if todo:
            with guard(), kernels(), torch.inference_mode():
                _score_group(client.hf_model, torch, client.device, todo)
        if done is not None:
            done(g, members)
    return prepared

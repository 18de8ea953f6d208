"""What a hosted model accepts in a generation request: the capability table.

``capabilities.toml`` (beside ``prices.toml``) holds one row per model family — the sampling fields the
model accepts, its completion-limit field, whether it returns log-probabilities, whether it takes stop
strings, and its reasoning control (OpenAI's ``reasoning_effort``, Anthropic's extended thinking) —
each with its source, the date it was read and whether the provider's own page was read.  A request
sends only what the model accepts (:meth:`Capability.accepts`); what a run wanted but the model cannot
take (temperature 0 on OpenAI's reasoning models) is recorded in ``run.json`` and stated in one line
(:func:`unsent_line`).

A reasoning model spends hidden tokens before its answer, out of the same completion limit: the
request's limit is the answer's tokens plus :func:`hidden_allowance` (the thinking budget, or for
OpenAI's reasoning models, which take no budget, ``--thinking-budget`` or
:data:`DEFAULT_HIDDEN_ALLOWANCE`).
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import Any

from cogtestbed.errors import InputError

#: The sampling fields a request may carry (the temperature and :data:`~.base.NEUTRAL_SAMPLING`'s).
SAMPLING_FIELDS = ("temperature", "top_p", "presence_penalty", "frequency_penalty")
REASONING_KINDS = ("none", "effort", "thinking")
#: Hidden tokens a run reserves per call for an OpenAI reasoning model when ``--thinking-budget`` is not
#: given (this package's default, not the provider's: OpenAI's models take no thinking budget, only
#: ``reasoning_effort``; a call that spends more comes back empty with ``finish_reason: length``, recorded
#: as a truncated answer).
DEFAULT_HIDDEN_ALLOWANCE = 8192
_FIELDS = ("sampling", "limit_field", "logprobs", "stop", "reasoning", "efforts", "thinking_min",
           "thinking_sampling", "source", "checked", "status", "note", "max_output", "max_output_source")


@dataclass(frozen=True)
class Capability:
    """One row of the capability table (see module docstring); ``pattern`` is the row's glob."""

    pattern: str
    sampling: tuple[str, ...]
    limit_field: str
    logprobs: bool
    stop: bool
    reasoning: str
    source: str
    checked: str
    status: str
    efforts: tuple[str, ...] = ()
    thinking_min: int | None = None
    thinking_sampling: tuple[str, ...] = ()
    note: str = ""
    #: The most completion tokens one request may ask for, hidden ones included (None: not in the row),
    #: and where that bound comes from.
    max_output: int | None = None
    max_output_source: str = ""

    @property
    def is_reasoning(self) -> bool:
        """Whether the family has a reasoning control (its calls may spend hidden tokens)."""
        return self.reasoning != "none"

    def always_reasons(self) -> bool:
        """Whether every call reasons (OpenAI's reasoning models), not only with thinking turned on."""
        return self.reasoning == "effort"

    def accepts(self, name: str, thinking: bool = False) -> bool:
        """Whether the sampling field ``name`` may be sent (``thinking``: with extended thinking on)."""
        return name in (self.thinking_sampling if thinking and self.reasoning == "thinking" else self.sampling)

    def as_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _row(pattern: str, entry: Mapping[str, Any]) -> Capability:
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        raise InputError(f"capabilities.toml: [{pattern!r}] has unknown field(s) {', '.join(unknown)}")
    bad = [f for f in entry.get("sampling", []) + entry.get("thinking_sampling", []) if f not in SAMPLING_FIELDS]
    if bad or entry.get("reasoning") not in REASONING_KINDS:
        raise InputError(f"capabilities.toml: [{pattern!r}] names unknown sampling fields {bad} or reasoning "
                         f"{entry.get('reasoning')!r}")
    return Capability(pattern, tuple(entry["sampling"]), entry["limit_field"], bool(entry["logprobs"]),
                      bool(entry["stop"]), entry["reasoning"], entry["source"], entry["checked"], entry["status"],
                      tuple(entry.get("efforts", ())), entry.get("thinking_min"),
                      tuple(entry.get("thinking_sampling", ())), entry.get("note", ""), entry.get("max_output"),
                      entry.get("max_output_source", ""))


@cache
def capability_table() -> dict[str, Capability]:
    """The packaged table, pattern → row (read once)."""
    text = resources.files(__package__).joinpath("capabilities.toml").read_text()
    return {pattern: _row(pattern, entry) for pattern, entry in tomllib.loads(text).items()}


@cache
def capability_of(spec: str) -> Capability | None:
    """The row of ``BACKEND:MODEL`` (the longest matching pattern), None where none matches (a local
    ``hf:`` model: every field is this package's own); looked up once per name (agents are built per
    step in a dry run)."""
    rows = capability_table()
    matches = [p for p in rows if fnmatch.fnmatchcase(spec, p)]
    return rows[max(matches, key=len)] if matches else None


def check_reasoning(spec: str, cap: Capability | None, effort: str | None, budget: int | None) -> None:
    """Refuse in one line a reasoning control the model does not have or a value it does not take."""
    where = "no row of the capability table" if cap is None else f"capability table row {cap.pattern!r}"
    kind = "none" if cap is None else cap.reasoning
    if effort is not None and kind != "effort":
        raise InputError(f"`reasoning_effort`: {spec} takes no reasoning_effort ({where}: reasoning {kind}); "
                         + ("use `thinking_budget`" if kind == "thinking" else "drop it"))
    if effort is not None and cap is not None and effort not in cap.efforts:
        raise InputError(f"`reasoning_effort` {effort!r}: {spec} takes {', '.join(cap.efforts)} ({where}, "
                         f"checked {cap.checked})")
    if budget is None:
        return
    if kind == "none":
        raise InputError(f"`thinking_budget`: {spec} is not a reasoning model ({where}); drop it")
    if budget < 1:
        raise InputError(f"`thinking_budget` must be a positive number of tokens, got {budget}")
    if cap is not None and cap.thinking_min is not None and budget < cap.thinking_min:
        raise InputError(f"`thinking_budget` {budget}: {spec} takes a thinking budget of at least "
                         f"{cap.thinking_min} tokens ({where}, checked {cap.checked})")
    check_allowance("`thinking_budget`", spec, cap, budget)


def check_allowance(option: str, spec: str, cap: Capability | None, tokens: float) -> None:
    """Refuse in one line a reasoning allowance (``option``: ``--thinking-budget``, a plan's
    ``--assume-reasoning-tokens``) of ``tokens`` per call that reaches the model's output limit
    (:attr:`Capability.max_output`), naming the row and the bound's source; the answer needs a token too."""
    if cap is None or cap.max_output is None or tokens < cap.max_output:
        return
    shown = f"{int(tokens):,}" if float(tokens).is_integer() else f"{tokens:,g}"
    raise InputError(f"{option} {shown}: {spec} answers at most {cap.max_output:,} completion tokens per request, "
                     f"hidden reasoning included, so an allowance must stay below that (capability table row "
                     f"{cap.pattern!r}: max_output, from {cap.max_output_source or 'the row'})")


def hidden_allowance(cap: Capability | None, budget: int | None) -> int | None:
    """Hidden tokens a request's completion limit reserves before the answer's: the thinking budget
    (Anthropic: None without one, no thinking); for a model that always reasons the budget given, else
    :data:`DEFAULT_HIDDEN_ALLOWANCE`; None for a model without reasoning."""
    if cap is None or not cap.is_reasoning:
        return None
    if cap.always_reasons():
        return budget if budget is not None else DEFAULT_HIDDEN_ALLOWANCE
    return budget


def unsent(cap: Capability | None, wanted: Mapping[str, Any], thinking: bool = False) -> dict[str, Any]:
    """The fields of ``wanted`` (sampling field → value) the model does not take."""
    if cap is None:
        return {}
    return {k: v for k, v in wanted.items() if k in SAMPLING_FIELDS and not cap.accepts(k, thinking)}


def unsent_line(spec: str, cap: Capability, dropped: Mapping[str, Any]) -> str:
    """The one line a run states at its start about what it wanted but cannot send."""
    shown = ", ".join(f"{k} {v:g}" if isinstance(v, float | int) else f"{k} {v}" for k, v in dropped.items())
    return (f"{spec} does not take {shown} (capability table row {cap.pattern!r}, {cap.status}, checked "
            f"{cap.checked}): not sent; the model samples at its own defaults (recorded in run.json's capability)")

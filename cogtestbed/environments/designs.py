"""The data an environment plays and records: its :class:`Design` (frozen, validated, the
published defaults), the pre-drawn stochastic parts of its sessions (:class:`Sessions`) and what
happened on each trial (:class:`Outcomes`).  Every name here is importable from
:mod:`cogtestbed.environments.base` too (and from :mod:`cogtestbed.extend`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from cogtestbed.errors import InputError

#: Action passed to :meth:`TextEnv.step` when the subject gave no valid answer.  The trial is
#: recorded as invalid and the episode moves on; the environment never substitutes a choice.
NO_ACTION = -1


class Design(BaseModel):
    """Base class of experiment designs: frozen, validated, with the published defaults.

    Subclasses add fields; named variants (paper vs released code) are class methods.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    #: Example values of fields whose default shows none (``None``: "the paradigm's own"), used by
    #: :meth:`field_example`.
    field_examples: ClassVar[Mapping[str, Any]] = {}

    @property
    def n_trials(self) -> int:  # pragma: no cover - every design overrides
        raise NotImplementedError

    @model_validator(mode="before")
    @classmethod
    def _sequences_from_text(cls, data: Any) -> Any:
        """A tuple or list field given as text (the command line's ``--design NAME=VALUE``) is a
        JSON list where the text is one (``["economy", "weather"]``, nested lists included), JSON
        ``null`` for none, else its comma-separated items, stripped (``economy,weather``)."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for name, value in data.items():
            field_ = cls.model_fields.get(name)
            if field_ is not None and isinstance(value, str) and is_sequence_type(field_.annotation):
                out[name] = sequence_from_text(value)
        return out

    @classmethod
    def field_example(cls, name: str) -> str:
        """A ``--design`` value of field ``name`` that the design accepts: its default (or
        :attr:`field_examples`) written as the command line takes it."""
        import json

        field_ = cls.model_fields[name]
        value = cls.field_examples.get(name, field_.get_default(call_default_factory=True))
        if isinstance(value, tuple | list) and all(isinstance(v, str | int | float) and not isinstance(v, bool)
                                                  for v in value):
            text = ",".join(str(v) for v in value)
        elif isinstance(value, bool) or value is None or isinstance(value, tuple | list | dict):
            text = json.dumps(value)
        else:
            text = str(value)
        return f"{name}={text}"


def is_sequence_type(annotation: Any) -> bool:
    """Whether a field annotation is a tuple or list (or an optional one)."""
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin in (tuple, list):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(is_sequence_type(a) for a in typing.get_args(annotation) if a is not type(None))
    return annotation in (tuple, list)


def sequence_from_text(text: str) -> Any:
    """The value of a tuple or list field written as text: JSON list or ``null``, else comma items."""
    import json

    stripped = text.strip()
    if stripped.startswith("[") or stripped == "null":
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InputError(f"not a JSON list: {text!r} ({exc.msg})") from None
    return [part.strip() for part in stripped.split(",") if part.strip()]


@dataclass(frozen=True)
class Sessions:
    """Pre-drawn stochastic parts of ``n`` sessions: numpy arrays whose first axis is subject.

    Subclasses declare one array field per quantity; :meth:`subject` slices one session out.
    """

    @property
    def n_subjects(self) -> int:
        first = fields(self)[0].name
        return int(np.shape(getattr(self, first))[0])

    def subject(self, i: int) -> Self:
        """Session ``i`` as a one-subject ``Sessions`` (arrays keep a leading axis of 1)."""
        return type(self)(**{f.name: getattr(self, f.name)[i : i + 1] for f in fields(self)})


@dataclass
class Outcomes:
    """What happened on each trial of ``n`` sessions, as arrays of shape (n_subjects, n_trials).

    ``action`` holds :data:`NO_ACTION` (NaN for a float ``action``) where the subject gave no
    valid answer; ``played`` is False for steps a variable-length session never reached; ``extra``
    holds experiment-specific per-step values (e.g. a confidence report); ``scored`` holds the
    :class:`ScoredAnswer` of each scored step (None elsewhere).
    """

    action: np.ndarray
    reward: np.ndarray
    valid: np.ndarray
    raw_response: np.ndarray | None = None
    parse_error: np.ndarray | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    played: np.ndarray | None = None
    scored: np.ndarray | None = None

    @classmethod
    def empty(cls, n_subjects: int, n_trials: int, action_dtype: Any = np.int64) -> Outcomes:
        """Outcomes of unplayed trials; a float ``action_dtype`` marks missing actions with NaN."""
        float_action = np.dtype(action_dtype).kind == "f"
        return cls(
            action=np.full((n_subjects, n_trials), np.nan if float_action else NO_ACTION,
                           dtype=action_dtype),
            reward=np.full((n_subjects, n_trials), np.nan),
            valid=np.zeros((n_subjects, n_trials), dtype=bool),
            raw_response=np.full((n_subjects, n_trials), None, dtype=object),
            parse_error=np.full((n_subjects, n_trials), None, dtype=object),
            played=np.zeros((n_subjects, n_trials), dtype=bool),
            scored=np.full((n_subjects, n_trials), None, dtype=object),
        )

    @classmethod
    def stack(cls, parts: list[Outcomes]) -> Outcomes:
        """Concatenate one-subject outcomes along the subject axis."""

        def cat(name: str) -> np.ndarray:
            return np.concatenate([getattr(p, name) for p in parts], axis=0)

        def optional(name: str) -> np.ndarray | None:
            return cat(name) if parts and getattr(parts[0], name) is not None else None

        extra_keys = parts[0].extra.keys() if parts else ()
        return cls(
            action=cat("action"),
            reward=cat("reward"),
            valid=cat("valid"),
            raw_response=optional("raw_response"),
            parse_error=optional("parse_error"),
            extra={k: np.concatenate([p.extra[k] for p in parts], axis=0) for k in extra_keys},
            played=optional("played"),
            scored=optional("scored"),
        )


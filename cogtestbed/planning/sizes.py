"""Typed values of a plan request, parsed once at the edge and passed unchanged to the plan kind:
:class:`Effect` (one ``NAME=SIZE``: an effect, a precision target's half-width) and :class:`Sizes`.

:class:`Sizes` is parsed from what the user
gives (``10``, ``(10, 200)``, ``[48, 96]``, the command line's ``"10:200"`` or ``"48,96"``) and never listed
integer by integer: a range is its two ends (:meth:`Sizes.values` is a lazy :class:`range`), so
``subjects="10:99999999999"`` costs no memory and is refused at once (:data:`MAX_PLANNED_SIZE`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from cogtestbed.errors import InputError

#: The largest size (subjects, runs or trials) a plan simulates: a plan simulates hundreds of studies per size
#: tried, so a size beyond this cannot be simulated on one machine in a working day.  Our default, no paper's.
MAX_PLANNED_SIZE = 100_000


class Effect(NamedTuple):
    """One ``NAME=SIZE`` of the field ``effect`` or ``precision``: a parameter (or contrast) and a number."""

    name: str
    size: float

    @classmethod
    def of(cls, given: Any, field: str) -> Effect | None:
        """``given`` (``{NAME: SIZE}``, the command line's ``"NAME=SIZE"``, a one-item list of it, an
        :class:`Effect`; None: None) as one effect; two or none refused in one line naming the field."""
        from cogtestbed.parameters import parse_assignments

        if given is None or isinstance(given, Effect):
            return given
        if isinstance(given, Mapping):
            items = {str(k): v for k, v in given.items()}
        elif isinstance(given, str):
            items = parse_assignments([given], f"`{field}`")
        else:
            items = parse_assignments([str(g) for g in given], f"`{field}`")
        if len(items) != 1:
            raise InputError(f"`{field}` takes one NAME=SIZE, got {len(items)}")
        (name, size), = items.items()
        if isinstance(size, bool) or not isinstance(size, (int, float)):
            raise InputError(f"`{field}` {name}: the size is a number, got {size!r}")
        return cls(name, float(size))


def assignments(given: Any, field: str) -> dict[str, float]:
    """``NAME=VALUE`` settings of the field ``field`` (``base``, ``params``) as ``{NAME: VALUE}``: a mapping taken
    as it is (never written out as text to be parsed again), the command line's items parsed once; None: none."""
    from cogtestbed.parameters import parse_assignments

    if given is None:
        return {}
    if isinstance(given, Mapping):
        return {str(k): v for k, v in given.items()}
    return parse_assignments([given] if isinstance(given, str) else [str(g) for g in given], f"`{field}`")


@dataclass(frozen=True)
class Sizes:
    """Positive sizes of one field (``name``: ``subjects``, ``runs``, ``trials``): every integer from ``lo`` to
    ``hi`` (``listed`` None) or the values ``listed`` (sorted, distinct)."""

    name: str
    lo: int
    hi: int
    listed: tuple[int, ...] | None = None

    @classmethod
    def of(cls, given: Any, name: str) -> Sizes:
        """``given`` as sizes of the field ``name`` (a :class:`Sizes` as it is); anything else refused in one
        line naming the field, a size above :data:`MAX_PLANNED_SIZE` too."""
        if isinstance(given, Sizes):
            return given
        if isinstance(given, range) and given.step == 1 and len(given):
            return cls._checked(name, given.start, given.stop - 1, None)
        if isinstance(given, bool):
            raise _bad(name, given)
        if isinstance(given, int):
            return cls._checked(name, given, given, None)
        if isinstance(given, str):
            return cls._text(given, name)
        return cls._of_sequence(given, name)

    @classmethod
    def _of_sequence(cls, given: Any, name: str) -> Sizes:
        """A (lo, hi) pair or a sequence of listed sizes."""
        if isinstance(given, tuple) and len(given) == 2 and all(_integral(v) for v in given):
            return cls._checked(name, int(given[0]), int(given[1]), None)
        if isinstance(given, Sequence) and given and all(_integral(v) for v in given):
            values = tuple(sorted({int(v) for v in given}))
            return cls._checked(name, values[0], values[-1], values)
        raise _bad(name, given)

    @classmethod
    def _text(cls, text: str, name: str) -> Sizes:
        try:
            ends = tuple(int(x) for x in text.split(":", 1)) if ":" in text else None
            values = () if ends is not None else tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
        except ValueError:
            raise _bad(name, text) from None
        if ends is not None:
            return cls._checked(name, ends[0], ends[1], None)
        if not values:
            raise _bad(name, text)
        return cls._checked(name, values[0], values[-1], values if len(values) > 1 else None)

    @classmethod
    def _checked(cls, name: str, lo: int, hi: int, listed: tuple[int, ...] | None) -> Sizes:
        if lo < 1 or hi < lo:
            raise _bad(name, f"{lo}:{hi}" if listed is None else listed)
        if hi > MAX_PLANNED_SIZE:
            raise InputError(f"`{name}` reaches {hi:,}: a plan simulates each size it tries hundreds of times, so it "
                             f"searches sizes up to {MAX_PLANNED_SIZE:,}; give a smaller range")
        return cls(name, lo, hi, listed)

    @property
    def top(self) -> int:
        """The largest size."""
        return self.hi

    def values(self) -> Sequence[int]:
        """The sizes, sorted: a lazy :class:`range` for a range (never listed), the values for a list."""
        return self.listed if self.listed is not None else range(self.lo, self.hi + 1)

    def __len__(self) -> int:
        return len(self.values())

    def __str__(self) -> str:
        """The sizes as a message shows them (``10:200``, ``48,96``)."""
        return f"{self.lo}:{self.hi}" if self.listed is None else ",".join(map(str, self.listed))


def _integral(value: Any) -> bool:
    import numbers

    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _bad(name: str, given: Any) -> InputError:
    return InputError(f"`{name}` expects LO:HI, a comma list of positive integers or one positive integer, got "
                      f"{given!r}")


__all__ = ["MAX_PLANNED_SIZE", "Effect", "Sizes", "assignments"]

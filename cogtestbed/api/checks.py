"""The typed-error promise at the Python API's door: every public function of ``ct.``
checks its arguments before it does anything, and a bad one is a documented error in one line.

:func:`public` wraps a function of :mod:`cogtestbed.api` so that, called with

* an unknown keyword, a missing or a surplus argument → :class:`~cogtestbed.errors.InputError`;
* a value of the wrong type (``subjects="abc"``, ``None`` where none is allowed; judged against the
  function's own annotations, never converted) → :class:`~cogtestbed.errors.InputError`;
* NaN (or ±inf) in a number, or in the numbers of a mapping or list → :class:`~cogtestbed.errors.InputError`;
* a number outside what its option means (``sd_between=-1``, ``assurance=2``, ``workers=-1``,
  ``max_tokens=1e8``: :data:`RANGES`, one table for every function) → :class:`~cogtestbed.errors.InputError`;
* an empty table (a DataFrame without rows) → :class:`~cogtestbed.errors.DataError`, and a table with
  two columns of one name → :class:`~cogtestbed.schema.TrialTableError` naming the column;
* a file or folder to read that does not exist (the parameters named in ``paths``) →
  :class:`~cogtestbed.errors.DataError`,

each message naming the function and the argument.  Values are passed on exactly as given.
"""

from __future__ import annotations

import builtins
import collections.abc as cabc
import functools
import inspect
import math
import os
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cogtestbed.errors import DataError, InputError, one_line
from cogtestbed.option_groups import MAX_TOKENS_CAP  # the bound declared with the option (our default, no paper's)

F = TypeVar("F", bound=Callable[..., Any])

#: The largest SD on an unconstrained (log or logit) scale an option may set (``sd_between``, a
#: form's offset SD): an SD of 20 already spreads a parameter over e^±40, beyond every bound.  Our
#: default, no paper's.
MAX_UNCONSTRAINED_SD = 20.0


@dataclass(frozen=True)
class Range:
    """What a numeric option means: ``low``/``high`` (None: unbounded), each open or closed."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, x: float) -> bool:
        if self.low is not None and (x <= self.low if self.low_open else x < self.low):
            return False
        return not (self.high is not None and (x >= self.high if self.high_open else x > self.high))

    def text(self) -> str:
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        left = "(" if self.low_open or self.low is None else "["
        right = ")" if self.high_open or self.high is None else "]"
        return f"{left}{lo}, {hi}{right}"


_COUNT = Range(1)
_SHARE = Range(0.0, 1.0)
_PROBABILITY = Range(0.0, 1.0, low_open=True, high_open=True)
_SD = Range(0.0, MAX_UNCONSTRAINED_SD)
#: Every numeric option of the public functions, by keyword name: one table, so an option means the
#: same in every function (and on the command line, which calls these functions).  A mapping
#: option (``form_sd``) is checked value by value; a list of sizes element by element.
RANGES: dict[str, Range] = {
    "subjects": _COUNT, "runs": _COUNT, "trials": _COUNT, "reps": _COUNT, "sims": _COUNT, "draws": _COUNT,
    "max_draws": _COUNT, "chains": _COUNT, "workers": _COUNT, "concurrency": _COUNT, "max_calls": _COUNT,
    "seed": Range(0), "reask": Range(0),
    "max_tokens": Range(1, MAX_TOKENS_CAP),
    "sd_between": _SD, "form_sd": _SD,
    "assurance": _PROBABILITY, "power": _PROBABILITY, "level": _PROBABILITY,
    "lapse_invalid": _SHARE, "lapse_random": _SHARE, "invalid_rate": _SHARE, "random_rate": _SHARE,
    "max_cost": Range(0.0), "temperature": Range(0.0, 2.0), "mc_se": Range(0.0, 1.0, low_open=True),
}


def _one_line(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {_one_line(repr(value))}"


def _hint_text(hint: Any) -> str:
    if hint is type(None) or hint is None:
        return "None"
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_hint_text(a) for a in args)
    if typing.get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    origin = typing.get_origin(hint)
    if origin is not None:
        return _generic_text(origin, args)
    return getattr(hint, "__name__", str(hint))


def _generic_text(origin: Any, args: tuple[Any, ...]) -> str:
    """A generic type as a message names it (``a list of int``)."""
    name = {cabc.Sequence: "a list", cabc.Mapping: "a mapping", tuple: "a tuple", list: "a list",
            dict: "a dict", cabc.Callable: "a callable", os.PathLike: "a path"}.get(origin, origin.__name__)
    return f"{name} of {', '.join(_hint_text(a) for a in args if a is not Ellipsis)}" if args and \
        origin not in (cabc.Callable, os.PathLike) else name


def _is_number(value: Any, integral: bool) -> bool:
    import numbers

    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return False
    return isinstance(value, numbers.Integral if integral else numbers.Real)


def matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the annotated type ``hint`` (a forward reference that cannot be
    resolved, ``Any`` and type variables match anything)."""
    if hint is Any or isinstance(hint, (str, typing.TypeVar, typing.ForwardRef)):
        return True
    if hint is None or hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(matches(value, a) for a in args)
    if origin is typing.Literal:
        return _matches_literal(value, args)
    if origin is not None:
        return _matches_generic(value, origin, args)
    return _matches_class(value, hint)


def _matches_literal(value: Any, args: tuple[Any, ...]) -> bool:
    """Whether ``value`` is one of a ``Literal``'s ``args``; any text for a text choice (the function names its
    choices itself, as the option)."""
    if isinstance(value, str) and all(isinstance(a, str) for a in args):
        return True
    return any(type(value) is type(a) and value == a for a in args)


def _matches_class(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the plain (not generic) type ``hint`` (a numpy bool a bool, a number an int or float;
    a name imported only for type checking: a class of that name in the value's MRO)."""
    if getattr(hint, "_by_name", False):
        return any(c.__name__ == hint.__name__ for c in type(value).__mro__)
    if hint is bool:
        return isinstance(value, bool) or type(value).__name__ == "bool_"
    if hint in (int, float):
        return _is_number(value, hint is int)
    return not isinstance(hint, type) or isinstance(value, hint)


def _matches_generic(value: Any, origin: Any, args: tuple[Any, ...]) -> bool:
    """Whether ``value`` is of the generic type ``origin[args]`` (a callable, a path, a tuple, a
    mapping, a sequence or an array; any other generic by its origin class alone)."""
    if origin is cabc.Callable:
        return callable(value)
    if origin is os.PathLike:
        return isinstance(value, os.PathLike)
    if origin is tuple:
        return _matches_tuple(value, args)
    if origin in (cabc.Mapping, dict):
        return _matches_mapping(value, args)
    if origin in (cabc.Sequence, list):
        return _matches_sequence(value, args)
    return not isinstance(origin, type) or isinstance(value, origin)


def _matches_tuple(value: Any, args: tuple[Any, ...]) -> bool:
    """Whether ``value`` is a ``tuple[args]``: ``tuple[T, ...]`` any length of ``T``, else one item
    per argument (a bare ``tuple`` any tuple)."""
    if not isinstance(value, tuple):
        return False
    if len(args) == 2 and args[1] is Ellipsis:
        return all(matches(v, args[0]) for v in value)
    return not args or (len(value) == len(args) and all(matches(v, a) for v, a in zip(value, args, strict=True)))


def _matches_mapping(value: Any, args: tuple[Any, ...]) -> bool:
    """Whether ``value`` is a mapping whose keys and values are of ``args`` (key type, value type)."""
    return isinstance(value, cabc.Mapping) and (not args or all(
        matches(k, args[0]) and matches(v, args[1]) for k, v in value.items()))


def _matches_sequence(value: Any, args: tuple[Any, ...]) -> bool:
    """Whether ``value`` is a sequence (or a numpy array; never text or bytes) of items of ``args[0]``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (cabc.Sequence, _array_type())):
        return False
    return not args or all(matches(v, args[0]) for v in typing.cast(cabc.Iterable[Any], value))


def _array_type() -> type:
    numpy = sys.modules.get("numpy")
    return numpy.ndarray if numpy is not None else tuple


def _numbers(value: Any) -> list[float]:
    """The plain numbers in ``value`` (itself, a mapping's values, a list's items; no tables)."""
    if _is_number(value, False):
        return [float(value)]
    if isinstance(value, cabc.Mapping):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _numbers(v)]
    return []


def check_argument(function: str, name: str, value: Any, hint: Any = Any, declared: Range | None = None) -> None:
    """Refuse ``value`` for the argument ``name`` of ``function`` when it is not of type ``hint``,
    holds a NaN or infinite number, lies outside :data:`RANGES` or the range its option ``declared``
    (the limits the command line enforces, :class:`cogtestbed.request.Opt`), or is an empty table."""
    where = f"{function}(): {name}"
    if not matches(value, hint):
        raise InputError(f"{where} must be {_hint_text(hint)}, got {_shown(value)}")
    _check_numbers(function, name, value, declared)
    if type(value).__name__ == "DataFrame":
        if getattr(value, "empty", False):
            raise DataError(f"{where} is an empty table (no rows or no columns)")
        from cogtestbed.schema import refuse_duplicated_column_names

        refuse_duplicated_column_names(value.columns, where)


def _check_numbers(function: str, name: str, value: Any, declared: Range | None) -> None:
    """Refuse a NaN or infinite number in ``value``, or one outside :data:`RANGES` or ``declared``."""
    numbers = _numbers(value)
    if any(not math.isfinite(x) for x in numbers):
        raise InputError(f"{function}(): `{name}` must be a finite number, got {_one_line(repr(value))}")
    for allowed in (RANGES.get(name), declared):
        bad = [x for x in numbers if allowed is not None and not allowed.holds(x)]
        if allowed is not None and bad:  # a field: the command line (which calls this function) names its flag
            raise InputError(f"{function}(): `{name}` must be in {allowed.text()}, got {bad[0]:g}")


def check_path(function: str, name: str, value: Any) -> None:
    """Refuse a file or folder to read that does not exist (:class:`DataError`, naming it)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if isinstance(item, (str, os.PathLike)) and not os.path.exists(item):
            raise DataError(f"{function}(): {name}: no such file or folder: {os.fspath(item)}")


class _ByName(type):
    """The class of a name a module imports only for type checking (``ExperimentSpec``,
    ``pd.DataFrame``): a value matches it when a class of that name is in the value's MRO."""

    def __getattr__(cls, attr: str) -> Any:  # ``pd.DataFrame`` with ``pd`` unresolved
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _ByName(attr, (), {"_by_name": True})


class _Unresolved(dict[str, Any]):
    """``eval``'s locals: the module's names, and a :class:`_ByName` class for any other name
    that is no builtin."""

    def __init__(self, module: dict[str, Any]) -> None:
        super().__init__()
        self.module = module

    def __missing__(self, key: str) -> Any:
        if key in self.module:
            return self.module[key]
        if hasattr(builtins, key):
            raise KeyError(key)
        return _ByName(key, (), {"_by_name": True})


def _hints(func: Callable[..., Any]) -> dict[str, Any]:
    """The annotations of ``func`` resolved in its module (names imported only for type checking
    as :class:`_ByName` classes; one that still cannot be resolved is left out)."""
    module = sys.modules[func.__module__].__dict__
    out: dict[str, Any] = {}
    for name, text in getattr(func, "__annotations__", {}).items():
        try:
            out[name] = eval(text, module, _Unresolved(module)) if isinstance(text, str) else text  # noqa: S307
        except Exception:  # noqa: BLE001 - an annotation this module cannot read: that argument is not checked
            continue
    return out


#: Rewrites an earlier call form of a public function into its current one: (args, kwargs) → (args, kwargs).
Legacy = Callable[[tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]


def model_first(field: str, data: str | None = None) -> Legacy:
    """The earlier call form ``FUNC(MODEL[, DATA], experiment=E)`` (the model first, the experiment by
    keyword) of a function whose current order is ``FUNC(EXPERIMENT[, DATA], MODEL)`` (docs/api.md,
    "One argument order"), rewritten into the current one.  ``field``: the name of the model argument
    (``model``, ``models``, ``target``); ``data``: the argument between them, where there is one.

    A call is the earlier form exactly when it does not give ``field`` (by keyword or position):
    the current form always does.  An experiment left out is None (inferred, as before)."""
    width = 2 if data is None else 3

    def rewrite(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        kwargs = dict(kwargs)
        if field in kwargs or len(args) >= width:  # the current form
            if not args and "experiment" not in kwargs:
                kwargs["experiment"] = None
            return args, kwargs
        if not args:  # nothing positional and no model: the binding says what is missing
            return args, kwargs
        model, rest = args[0], args[1:]
        experiment = kwargs.pop("experiment", None)
        if data is not None and not rest and data in kwargs:
            rest = (kwargs.pop(data),)
        return (experiment, *rest, model), kwargs

    return rewrite


def _check_call(name: str, signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any],
                hints: dict[str, Any], paths: tuple[str, ...]) -> None:
    """Check a call's arguments against ``signature``'s type ``hints`` (the ``**options`` its
    :data:`RANGES` names) and the ``paths`` it reads; the first problem an :class:`InputError`."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise InputError(f"{name}(): {exc}") from None
    for arg, value in bound.arguments.items():
        kind = signature.parameters[arg].kind
        if kind is inspect.Parameter.VAR_KEYWORD:  # **options: RANGES names (the function checks the rest)
            for key, item in value.items():
                if key in RANGES:
                    check_argument(name, key, item)
        elif kind is not inspect.Parameter.VAR_POSITIONAL:
            check_argument(name, arg, value, hints.get(arg, Any))
        if arg in paths:
            check_path(name, arg, value)


def public(paths: tuple[str, ...] = (), legacy: Legacy | None = None) -> Callable[[F], F]:
    """Decorate a public function of ``ct.`` with the checks of this module; ``paths`` names its
    arguments that are files or folders it reads (a string or path there must exist); ``legacy``
    rewrites an earlier call form that users still write into the current one (:func:`model_first`)
    before anything is checked."""

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        resolved: dict[str, Any] | None = None

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            nonlocal resolved
            if resolved is None:
                resolved = _hints(func)
            if legacy is not None:
                args, kwargs = legacy(args, kwargs)
            _check_call(func.__name__, signature, args, kwargs, resolved, paths)
            try:
                return func(*args, **kwargs)
            except ValueError as exc:  # pydantic's ValidationError (a design or option field): an InputError
                pydantic = sys.modules.get("pydantic")
                if pydantic is None or not isinstance(exc, pydantic.ValidationError):
                    raise
                raise InputError(f"{func.__name__}(): {one_line(exc)}") from None

        return typing.cast(F, checked)

    return decorate

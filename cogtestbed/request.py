"""A workflow's options, declared once: typed request dataclasses from which the
command line, the ``ct.`` function and the ``request`` block of the output JSON are derived.

A request (``PlanRequest``, ``RunRequest``, ...) is a frozen dataclass of small sub-objects (target,
sizes, LLMs, sequential, fit, ...), each a frozen dataclass of options.  An option is a dataclass
field made by :func:`option`: its default, its help text, its command-line flag, the limits the
command line enforces and whether the command line or the Python function takes it.  A sub-object is
a field made by :func:`group`; its ``panel`` is the help panel of its options.  From one request:

* :func:`leaves` lists its options, each with the flat keyword both faces use (unique within the
  request) and the path of attributes holding it;
* :func:`build` makes the request from flat keywords (``llm="..."``, ``effect=...``; every option
  left out takes its default), :func:`flat` gives them back;
* :func:`api_signature` is the keyword signature of the ``ct.`` function (:func:`derive_api` sets it,
  its annotations and its docstring's option list on the function);
* :func:`request_block` is the JSON-able ``request`` block an output file records;
* the command line's parameters are made from :func:`leaves` by :mod:`cogtestbed.cli.options`, the
  only module that builds a typer option.

This module imports nothing heavy (the command line imports it to build its help pages).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from cogtestbed.bounds import Cost, check_bound

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

#: The metadata key of an option's :class:`Opt` and of a sub-object's :class:`Group`.
OPTION = "cogtestbed.option"
GROUP = "cogtestbed.group"


@dataclass(frozen=True)
class Opt:
    """What an option means beyond its type and default.

    ``help``: its help text (the command line's and the ``ct.`` docstring's); ``flags``: its
    command-line spellings (default ``--NAME`` with dashes); ``cli_type``: the type the command
    line parses when it differs from the field's (text for a mapping, a list of ``NAME=VALUE``);
    ``min``/``max``: limits the command line enforces; ``show_default``: the help's default text;
    ``cli``/``api``: whether the command line / the ``ct.`` function takes it; ``argument``: a
    positional command-line argument; ``name``: the flat keyword when it differs from the field's.
    ``cli_required``: the command line requires it though Python has a default (``simulate -o``);
    ``json``: whether the ``request`` block records it; ``record``: the form it records (one for every
    spelling of the same value: ``(10, 80)`` and ``"10:80"`` alike), by default the value as given.
    ``cli_name``: the command line's name of it where the function spells it otherwise (``population
    build``'s ``TABLE``, :func:`cogtestbed.build_population`'s ``table_or_path``).
    ``cost``: a count option's :class:`~cogtestbed.bounds.Cost` of one unit; a value above its ``max`` is then
    refused when the request is built (:func:`build`, before any work), in one line naming what it would take.
    """

    help: str
    flags: tuple[str, ...] = ()
    cli_type: Any = None
    min: float | None = None
    max: float | None = None
    show_default: bool | str | None = None
    cli: bool = True
    api: bool = True
    argument: bool = False
    name: str | None = None
    json: bool = True
    record: Callable[[Any], Any] | None = None
    cli_required: bool = False
    cli_name: str | None = None
    cost: Cost | None = None


@dataclass(frozen=True)
class Group:
    """A sub-object of a request: the help panel of its options (None: its container's), and the
    defaults this request gives some of them in place of the sub-object's own."""

    panel: str | None
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def option(default: Any = dataclasses.MISSING, *, help: str, flags: Sequence[str] = (),  # noqa: A002 - typer's word
           cli_type: Any = None, min: float | None = None, max: float | None = None,  # noqa: A002
           show_default: bool | str | None = None, cli: bool = True, api: bool = True, argument: bool = False,
           name: str | None = None, json: bool = True, record: Callable[[Any], Any] | None = None,
           cli_required: bool = False, cli_name: str | None = None,
           factory: Callable[[], Any] | None = None, cost: Cost | None = None) -> Any:
    """A request's option: a dataclass field with its :class:`Opt` (see there for each argument);
    ``factory`` makes a mutable default."""
    if cost is not None and max is None:
        raise TypeError("a count option's cost goes with its bound: give max too")
    meta = {OPTION: Opt(help, tuple(flags), cli_type, min, max, show_default, cli, api, argument, name, json, record,
                        cli_required, cli_name, cost)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def group(cls: type[Any], panel: str | None, *, defaults: Mapping[str, Any] | None = None) -> Any:
    """A request's sub-object of class ``cls`` (its options' defaults), shown under ``panel`` (None:
    among its container's options).  ``defaults``: the options of ``cls`` whose default differs in
    this request (``ct.fit`` fits the MLE by default, ``cogtestbed fit`` the hierarchical model: one
    declaration of ``method``, two defaults)."""
    given = dict(defaults or {})
    unknown = set(given) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise TypeError(f"{cls.__name__} has no option {sorted(unknown)}")
    return dataclasses.field(default_factory=lambda: cls(**given), metadata={GROUP: Group(panel, given)})


#: No changes (:func:`variant`'s default).
_NONE: Mapping[str, Any] = MappingProxyType({})
#: What a request may choose of a shared option's presentation (:func:`variant`): not its name, type or record.
#: ``cli_type``: one count where another command takes a comma list of them (the same type in Python).
PRESENTATION = frozenset({"help", "flags", "cli_type", "min", "max", "show_default", "cli", "api", "argument",
                          "cli_required", "cli_name"})


def variant(cls: type[R], *, defaults: Mapping[str, Any] = _NONE, helps: Mapping[str, str] = _NONE,
            limits: Mapping[str, tuple[float | None, float | None]] = _NONE,
            present: Mapping[str, Mapping[str, Any]] = _NONE, positional: bool = False) -> type[R]:
    """The shared option group ``cls`` (:mod:`cogtestbed.option_groups`) as one request takes it: the same
    options, each still declared once (its name, type and record are the group's), with this
    request's ``defaults`` (``dataclasses.MISSING``: required here), ``helps`` (its help text here), ``limits``
    (``(min, max)`` the command line enforces here; None keeps the group's) and ``present`` (``{option:
    {attribute: value}}`` for the other attributes of :data:`PRESENTATION`: its flags, a positional argument,
    the faces taking it) in place of the group's; ``positional``: the options it changes are positional in Python too
    (``PlanRequest(EXPERIMENT, ...)``; a required one only).  A request inherits the variant as it would the
    group (``class FitSampling(variant(Seed, helps={"seed": ...}))``); :func:`group`'s ``defaults`` do the same
    for a sub-object's options."""
    changes, given_defaults = _changes(helps, limits, present), dict(defaults)
    fields = {f.name: f for f in dataclasses.fields(typing.cast(Any, cls))}
    unknown = (set(given_defaults) | set(changes)) - set(fields)
    if unknown:
        raise TypeError(f"{cls.__name__} has no option {sorted(unknown)}")
    namespace: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                 "__doc__": cls.__doc__, "__annotations__": {}}
    for name in [n for n in fields if n in given_defaults or n in changes]:
        namespace["__annotations__"][name] = fields[name].type
        namespace[name] = _redeclared(fields[name], changes.get(name, {}), given_defaults.get(name, _KEEP))
    made = type(cls.__name__, (cls,), namespace)
    return typing.cast("type[R]", dataclass(frozen=True, kw_only=not positional)(made))


#: :func:`variant`'s mark of an option whose default the request keeps.
_KEEP = object()


def _changes(helps: Mapping[str, str], limits: Mapping[str, tuple[float | None, float | None]],
             present: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """:func:`variant`'s changes of each option's :class:`Opt`, refused beyond :data:`PRESENTATION`."""
    changes: dict[str, dict[str, Any]] = {name: dict(attrs) for name, attrs in present.items()}
    for name, text in helps.items():
        changes.setdefault(name, {})["help"] = text
    for name, (low, high) in limits.items():  # None: the group's own limit
        changes.setdefault(name, {}).update({k: v for k, v in (("min", low), ("max", high)) if v is not None})
    not_presentation = {k for attrs in changes.values() for k in attrs} - PRESENTATION
    if not_presentation:
        raise TypeError(f"a request may not change {sorted(not_presentation)} of a shared option: declare another")
    return changes


def _redeclared(f: dataclasses.Field[Any], changes: Mapping[str, Any], default: Any) -> Any:
    """The field ``f`` of a shared group as a :func:`variant` presents it (its default unless ``_KEEP``)."""
    meta = {OPTION: dataclasses.replace(f.metadata[OPTION], **changes)}
    if default is not _KEEP:
        return dataclasses.field(default=default, metadata=meta)
    if f.default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=f.default_factory, metadata=meta)
    return dataclasses.field(default=f.default, metadata=meta)


def declared_option(leaf: Leaf) -> Opt:
    """The declaration of ``leaf``'s option without what a request may present otherwise (:func:`variant`):
    its name, command-line type, record and the rest."""
    blank: dict[str, Any] = dict.fromkeys(PRESENTATION)
    return dataclasses.replace(leaf.opt, **blank)


@dataclass(frozen=True)
class Leaf:
    """One option of a request: its flat keyword ``name``, the attribute ``path`` holding it, its
    (resolved) type ``hint``, its ``default`` (``inspect.Parameter.empty``: required), its
    :class:`Opt` and its help ``panel`` (None: the command's own options)."""

    name: str
    path: tuple[str, ...]
    hint: Any
    default: Any
    opt: Opt
    panel: str | None

    @property
    def cli_name(self) -> str:
        """The command line's name of it (its parameter's: ``<TABLE>``)."""
        return self.opt.cli_name or self.name

    @property
    def flags(self) -> tuple[str, ...]:
        """Its command-line spellings."""
        return self.opt.flags or ("--" + self.cli_name.replace("_", "-"),)


def _hints(cls: type[Any]) -> dict[str, Any]:
    """The field types of ``cls``, each resolved in the module of the class declaring it (a shared option
    group's in :mod:`cogtestbed.option_groups`); a type naming what the module imports only for type checking
    (``ExperimentSpec``, ``pd.DataFrame``) stays its text: the ``ct.`` function's door reads it in the
    function's module (:func:`cogtestbed.api.checks.public`), the command line parses the option's
    ``cli_type``."""
    if cls not in _HINTS:
        out: dict[str, Any] = {}
        for base in reversed(cls.__mro__):
            module = getattr(sys.modules.get(base.__module__), "__dict__", {})
            for name, hint in vars(base).get("__annotations__", {}).items():
                try:
                    out[name] = typing.get_type_hints(_Field(hint), globalns=module)["hint"]
                except NameError:
                    out[name] = hint
        _HINTS[cls] = out
    return _HINTS[cls]


_HINTS: dict[type[Any], dict[str, Any]] = {}


class _Field:
    """One field's annotation on its own (:func:`_hints` resolves the fields one by one)."""

    def __init__(self, hint: Any) -> None:
        self.__annotations__ = {"hint": hint}


def _default(f: dataclasses.Field[Any], defaults: Mapping[str, Any] | None = None) -> Any:
    if defaults and f.name in defaults:
        return defaults[f.name]
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return inspect.Parameter.empty


_LEAVES: dict[type[Any], tuple[Leaf, ...]] = {}


def leaves(cls: type[Any]) -> tuple[Leaf, ...]:
    """Every option of the request class ``cls``, in declaration order (a sub-object's where it is
    declared); refused where two options share a flat keyword."""
    if cls not in _LEAVES:
        _LEAVES[cls] = _leaves(cls)
    return _LEAVES[cls]


def declared_requests() -> tuple[type[Any], ...]:
    """The request classes whose options have been listed in this process (every command's, once the command
    line is built)."""
    return tuple(_LEAVES)


def _leaves(cls: type[Any]) -> tuple[Leaf, ...]:
    out = list(_walk(cls, (), None))
    seen: dict[str, Leaf] = {}
    for leaf in out:
        if leaf.name in seen:
            raise TypeError(f"{cls.__name__}: option {leaf.name!r} declared twice ({'.'.join(seen[leaf.name].path)} "
                            f"and {'.'.join(leaf.path)})")
        seen[leaf.name] = leaf
    return tuple(out)


def _walk(cls: type[Any], path: tuple[str, ...], panel: str | None,
          defaults: Mapping[str, Any] | None = None) -> Iterable[Leaf]:
    hints = _hints(cls)
    for f in _own_first(cls):
        if GROUP in f.metadata:
            sub = f.metadata[GROUP]
            yield from _walk(hints[f.name], (*path, f.name), panel if sub.panel is None else sub.panel, sub.defaults)
            continue
        opt = f.metadata.get(OPTION)
        if opt is None:
            raise TypeError(f"{cls.__name__}.{f.name} is neither an option() nor a group()")
        yield Leaf(opt.name or f.name, (*path, f.name), hints[f.name], _default(f, defaults), opt, panel)


def _own_first(cls: type[Any]) -> list[dataclasses.Field[Any]]:
    """The fields of ``cls``: the positional arguments it inherits from shared option groups
    (:mod:`cogtestbed.option_groups`: ``EXPERIMENT`` before a command's own ``NAME``), then its own fields in
    declaration order, then the other options it inherits, so a shared option keeps its place at the end of each
    request's list."""
    own = set(vars(cls).get("__annotations__", {}))

    def place(f: dataclasses.Field[Any]) -> int:
        if f.name in own:
            return 1
        return 0 if OPTION in f.metadata and f.metadata[OPTION].argument else 2

    return sorted(dataclasses.fields(cls), key=place)


def build(cls: type[R], values: Mapping[str, Any]) -> R:
    """The request ``cls`` holding the flat keywords ``values`` (those it does not declare are
    ignored; every option left out takes its default)."""
    return check_counts(typing.cast(R, _build(cls, (), {leaf.path: leaf for leaf in leaves(cls)}, values)))


def check_counts(request: R) -> R:
    """``request``, every count option of it within its bound (:func:`~cogtestbed.bounds.check_bound`: one line
    naming what a larger count would take), checked before any work."""
    for leaf in leaves(type(request)):
        if leaf.opt.cost is not None:
            check_bound(leaf.name, value(request, leaf), leaf.opt.max, leaf.opt.cost)
    return request


def _build(cls: type[Any], path: tuple[str, ...], by_path: dict[tuple[str, ...], Leaf],
           values: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> Any:
    hints = _hints(cls)
    kwargs: dict[str, Any] = dict(defaults or {})  # this request's own defaults (group(defaults=...))
    for f in dataclasses.fields(cls):
        here = (*path, f.name)
        if GROUP in f.metadata:
            kwargs[f.name] = _build(hints[f.name], here, by_path, values, f.metadata[GROUP].defaults)
        elif by_path[here].name in values:
            kwargs[f.name] = values[by_path[here].name]
    return cls(**kwargs)


def build_grouped(cls: type[R], given: Mapping[str, Any], values: Mapping[str, Any]) -> R:
    """The request ``cls`` from its sub-objects ``given`` (by field name; None: its defaults) and flat keywords
    ``values`` (:func:`build`'s) for the rest: a keyword whose option lies in a sub-object also given is refused
    (one value per option)."""
    from cogtestbed.errors import InputError

    chosen = {k: v for k, v in given.items() if v is not None}
    clash = [leaf.name for leaf in leaves(cls) if leaf.name in values and len(leaf.path) > 1 and leaf.path[0] in chosen]
    if clash:
        raise InputError(f"{', '.join(clash)} given twice: as a keyword and in the {leaf_group(cls, clash[0])} given")
    return check_counts(typing.cast(R, dataclasses.replace(typing.cast(Any, build(cls, values)), **chosen)))


def leaf_group(cls: type[Any], name: str) -> str:
    """The sub-object (field name) holding the option ``name`` of ``cls`` (``""`` for a top-level one)."""
    path = next(leaf.path for leaf in leaves(cls) if leaf.name == name)
    return path[0] if len(path) > 1 else ""


def sub_objects(request: Any) -> dict[str, Any]:
    """The request's top-level fields by name (its sub-objects and its top-level options)."""
    return {f.name: getattr(request, f.name) for f in dataclasses.fields(request)}


def value(request: Any, leaf: Leaf) -> Any:
    """The value of ``leaf`` in ``request``."""
    out = request
    for attr in leaf.path:
        out = getattr(out, attr)
    return out


def flat(request: Any) -> dict[str, Any]:
    """The request's options by flat keyword."""
    return {leaf.name: value(request, leaf) for leaf in leaves(type(request))}


def api_values(request: Any) -> dict[str, Any]:
    """The request's options the ``ct.`` function takes, by keyword (the command line calls it with them)."""
    return {leaf.name: value(request, leaf) for leaf in api_leaves(type(request))}


def as_items(value: Any) -> list[Any]:
    """A record (:attr:`Opt.record`) of ``NAME=VALUE`` settings: a mapping's items (a design object's
    fields), one text as a list of it, items as given; ``{"x": 0.2}`` and ``["x=0.2"]`` alike."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [f"{k}={v}" for k, v in value.items()]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return [f"{k}={v}" for k, v in dump().items()]
    return list(value)


def as_text(value: Any, sep: str = ",") -> Any:
    """A record of a size, a range or a list as the command line spells it: ``(lo, hi)`` → ``lo:hi``
    (``sep`` ``":"``), a list → a comma list, one number → its text, a text as it is."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):  # one size: subjects=10
        return str(value)
    if isinstance(value, tuple) and len(value) == 2 and sep == ":":
        return f"{value[0]}:{value[1]}"
    return ",".join(str(v) for v in value)


def as_list(value: Any) -> list[Any]:
    """A record of one text or a list of them as a list (``llm="a:b"`` and ``--llm a:b``)."""
    return [value] if isinstance(value, str) else list(value)


def as_name(value: Any) -> Any:
    """A record of an object by its name (an experiment spec, a population), a text as it is."""
    return getattr(value, "name", value)


def _json(x: Any) -> Any:
    """``x`` as JSON holds it: paths as text, mappings and sequences item by item, a table or any
    other object by its kind (``DataFrame (40 rows)``)."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, os.PathLike):
        return os.fspath(x)
    if isinstance(x, Mapping):
        return {str(k): _json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json(v) for v in x]
    rows = getattr(x, "shape", None)
    return f"{type(x).__name__} ({rows[0]} rows)" if isinstance(rows, tuple) and rows else type(x).__name__


def request_block(request: Any) -> dict[str, Any]:
    """The request as an output file records it: ``{SUB_OBJECT: {OPTION: VALUE}}`` (an option
    outside any sub-object at the top; an option by its keyword, :attr:`Opt.name`, where its field is named
    otherwise), values JSON-able; options marked ``json=False`` left out."""
    out: dict[str, Any] = {}
    for leaf in leaves(type(request)):
        if not leaf.opt.json:
            continue
        where = out
        for attr in leaf.path[:-1]:
            where = where.setdefault(attr, {})
        given = value(request, leaf)
        recorded = leaf.opt.record(given) if leaf.opt.record is not None and given is not None else given
        where[leaf.opt.name or leaf.path[-1]] = _json(recorded)
    return out


def api_leaves(cls: type[Any], only: Sequence[str] | None = None) -> tuple[Leaf, ...]:
    """The options of ``cls`` the ``ct.`` function takes; ``only``: those named, whatever their ``api``
    (a function taking a part of a workflow's request: :func:`cogtestbed.plan_forms` the options of
    ``plan --forms``)."""
    if only is None:
        return tuple(leaf for leaf in leaves(cls) if leaf.opt.api)
    unknown = set(only) - {leaf.name for leaf in leaves(cls)}
    if unknown:
        raise TypeError(f"{cls.__name__} declares no option {sorted(unknown)}")
    return tuple(leaf for leaf in leaves(cls) if leaf.name in only)


def cli_leaves(cls: type[Any]) -> tuple[Leaf, ...]:
    """The options of ``cls`` the command line takes."""
    return tuple(leaf for leaf in leaves(cls) if leaf.opt.cli)


def from_cli(cls: type[R], values: Mapping[str, Any]) -> R:
    """The request ``cls`` from the values the command line passes, by its parameters' names
    (:attr:`Leaf.cli_name`)."""
    renamed = {leaf.cli_name: leaf.name for leaf in leaves(cls) if leaf.cli_name != leaf.name}
    return build(cls, {renamed.get(k, k): v for k, v in values.items()})


def _default_of(leaf: Leaf, required: Sequence[str]) -> Any:
    return inspect.Parameter.empty if leaf.name in required else leaf.default


def api_signature(cls: type[Any], before: Sequence[inspect.Parameter] = (),
                  after: Sequence[inspect.Parameter] = (), return_annotation: Any = inspect.Signature.empty,
                  only: Sequence[str] | None = None, required: Sequence[str] = ()) -> inspect.Signature:
    """The ``ct.`` function's signature: ``before`` (its positional arguments), then every option
    of ``cls`` the function takes (those not among ``before``: a positional command-line argument is
    the function's own positional one; ``only``: :func:`api_leaves`) as a keyword-only argument with
    its default (none for those named in ``required``), then ``after``."""
    own = {p.name for p in before}
    params = [*before, *(inspect.Parameter(leaf.name, inspect.Parameter.KEYWORD_ONLY,
                                           default=_default_of(leaf, required), annotation=leaf.hint)
                         for leaf in api_leaves(cls, only) if leaf.name not in own),
              *after]
    return inspect.Signature(params, return_annotation=return_annotation)


def keyword(name: str, default: Any = None, annotation: Any = Any) -> inspect.Parameter:
    """A keyword-only parameter of a ``ct.`` function that is no option of its request (a callback,
    the ``say`` of progress lines): :func:`derive_api`'s ``after``."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


#: numpydoc's section headers that follow ``Parameters`` (the options' entries go before the first of them).
_AFTER_PARAMETERS = ("Returns", "Yields", "Receives", "Other Parameters", "Raises", "Warns", "Warnings", "See Also",
                     "Notes", "References", "Examples")


def _section_at(lines: list[str], names: Sequence[str]) -> int | None:
    """The index of the first numpydoc section header among ``names`` (a name over a line of dashes)."""
    for i, line in enumerate(lines[:-1]):
        if line.strip() in names and set(lines[i + 1].strip()) == {"-"}:
            return i
    return None


def options_doc(cls: type[Any], only: Sequence[str] | None = None, required: Sequence[str] = (),
                doc: str = "") -> str:
    """``doc`` (a numpydoc docstring) with the options of ``cls`` (``only``: those named) as entries of its
    ``Parameters`` section, one each (``name : default X`` and its help), after the entries ``doc``
    documents itself and skipping those it names; a section is added where ``doc`` has none."""
    taken = api_leaves(cls, only)
    lines = inspect.cleandoc(doc).splitlines() if doc.strip() else []
    head = _section_at(lines, ("Parameters",))
    documented = {line.split(" : ")[0].strip() for line in lines if " : " in line and not line.startswith(" ")}
    entries: list[str] = []
    for leaf in taken:
        if leaf.name in documented:
            continue
        default = _default_of(leaf, required)
        said = "required" if default is inspect.Parameter.empty else f"default {default!r}"
        entries += [f"{leaf.name} : {said}", f"    {' '.join(leaf.opt.help.split())}"]
    if head is None:
        at = _section_at(lines, _AFTER_PARAMETERS)
        at = len(lines) if at is None else at
        block = ["", "Parameters", "----------", *entries, ""]
    else:
        after = _section_at(lines[head + 2:], _AFTER_PARAMETERS)
        at = len(lines) if after is None else head + 2 + after
        while at > head + 2 and not lines[at - 1].strip():
            at -= 1
        block = entries
    return "\n".join([*lines[:at], *block, *lines[at:]]).rstrip() + "\n"


def derive_api(cls: type[Any], *, after: Sequence[inspect.Parameter] = (), only: Sequence[str] | None = None,
               required: Sequence[str] = (), more_keywords: bool = False) -> Callable[[F], F]:
    """Give the ``ct.`` function ``func(POSITIONAL..., **options)`` the keyword signature of the
    request ``cls`` (:func:`api_signature`; its own positional parameters first, ``after`` last;
    ``only`` and ``required``: a function taking a part of the request, some options without their
    default), annotations resolved for :func:`cogtestbed.api.checks.public`, and the options listed in its
    docstring; ``__request__`` names ``cls`` (``__request_only__`` holds ``only``).  The function builds the
    request from its ``**options`` with :func:`build`.  ``more_keywords``: the function takes other keywords
    too (``ct.metrics``: the experiment's own metrics options), so its ``**options`` stays last in the signature."""

    def decorate(func: F) -> F:
        own = inspect.signature(func)
        before = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        rest = [p for p in own.parameters.values() if more_keywords and p.kind is inspect.Parameter.VAR_KEYWORD]
        signature = api_signature(cls, before, (*after, *rest), own.return_annotation, only, required)
        func.__signature__ = signature  # type: ignore[attr-defined]
        func.__request__ = cls  # type: ignore[attr-defined]
        func.__request_only__ = None if only is None else tuple(only)  # type: ignore[attr-defined]
        annotations = {k: v for k, v in func.__annotations__.items() if k in {p.name for p in before} | {"return"}}
        annotations.update({p.name: p.annotation for p in signature.parameters.values()
                            if p.name not in annotations and p.annotation is not inspect.Parameter.empty})
        func.__annotations__ = annotations
        func.__doc__ = options_doc(cls, only, required, func.__doc__ or "")
        return func

    return decorate


__all__ = ["PRESENTATION", "Group", "Leaf", "Opt", "api_leaves", "api_signature", "api_values", "as_items", "as_list",
           "as_name", "as_text", "build", "build_grouped", "cli_leaves", "declared_option", "declared_requests",
           "derive_api", "flat", "from_cli", "group", "keyword", "leaf_group", "leaves", "option", "options_doc",
           "request_block", "sub_objects", "value", "variant"]

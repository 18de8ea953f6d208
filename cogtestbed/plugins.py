"""One registry pattern for everything other packages may add: experiments
(:mod:`cogtestbed.registry`), LLM backends (:mod:`cogtestbed.llm_adapters.clients.backends`) and plan kinds
(:mod:`cogtestbed.planning.kinds`).

A :class:`Registry` holds three sources of named things, looked up in this order:

1. the package's own (``builtin``: name → a loader, called on first use, so listing imports nothing);
2. other installed distributions, through an entry-point group (``[project.entry-points."GROUP"]
   NAME = "pkg.module:OBJECT"``), loaded on first use;
3. things registered in this process (:meth:`Registry.register`: a script, a notebook, a test).

Each loaded value passes through ``convert(name, value)`` (a bare factory made a ``Backend``, a module's
``SPEC`` taken, a wrong type refused); lookups are cached.  A name is unique across the three sources:
registering another thing under a taken name is refused in one line, registering what the name
already resolves to (``same``) is a no-op.  Nothing else branches on a registered thing's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from cogtestbed.errors import InputError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")


def _identical(a: Any, b: Any) -> bool:
    return a is b


def _unknown(what: str) -> Callable[[str, list[str]], Exception]:
    def make(name: str, names: list[str]) -> Exception:
        return InputError(f"unknown {what} {name!r}: choose one of {', '.join(names)}")

    return make


def named_instance(what: str, cls: type[T]) -> Callable[[str, Any], T]:
    """A :class:`Registry`'s check for values that are ``cls`` instances carrying their own ``name``: the
    loaded value itself, refused when of another type (TypeError) or named otherwise than registered."""

    def check(name: str, loaded: Any) -> T:
        if not isinstance(loaded, cls):
            raise TypeError(f"{what} {name!r} is not a {cls.__name__} (got {type(loaded).__name__})")
        own = getattr(loaded, "name", None)
        if own != name:
            raise InputError(f"{what} registered as {name!r} is named {own!r}")
        return loaded

    return check


class Registry(Generic[T]):
    """Named things of one sort (``what``: ``"experiment"``, ``"LLM backend"``, ``"plan kind"``).

    ``builtin()``: the package's own, name → loader (called once, on first lookup), in listing order;
    ``group``: the entry-point group of installed plug-ins; ``convert(name, loaded)``: the loaded value
    checked and made a ``T``; ``same(a, b)``: whether two values are one thing (re-registering it is a
    no-op); ``unknown(name, names)``: the error of a name nothing declares; ``installed_again``: whether
    registering the very thing a built-in or plug-in name resolves to is a no-op (else refused as taken)."""

    def __init__(self, what: str, group: str, builtin: Callable[[], Mapping[str, Callable[[], Any]]],
                 convert: Callable[[str, Any], T] | None = None, same: Callable[[T, T], bool] = _identical,
                 unknown: Callable[[str, list[str]], Exception] | None = None, installed_again: bool = True) -> None:
        self.what = what
        self.group = group
        self._builtin = builtin
        self._convert = convert or (lambda _name, value: value)
        self._same = same
        self._unknown = unknown or _unknown(what)
        self._installed_again = installed_again
        self._registered: dict[str, T] = {}
        self._loaded: dict[str, T] = {}
        self._entry_points: dict[str, EntryPoint] | None = None
        self._builtins: Mapping[str, Callable[[], Any]] | None = None

    # ------------------------------------------------------------------------- the sources
    def builtin_names(self) -> tuple[str, ...]:
        """The package's own names, in listing order (nothing imported)."""
        if self._builtins is None:
            self._builtins = self._builtin()
        return tuple(self._builtins)

    def plugin_names(self) -> tuple[str, ...]:
        """The installed plug-ins' names (the entry points of :attr:`group` not shadowing a built-in one)."""
        return tuple(sorted(self._plugins()))

    def _plugins(self) -> dict[str, EntryPoint]:
        if self._entry_points is None:
            from importlib.metadata import entry_points

            own = set(self.builtin_names())
            self._entry_points = {ep.name: ep for ep in entry_points(group=self.group) if ep.name not in own}
        return self._entry_points

    def names(self) -> list[str]:
        """Every name: the package's own, then the plug-ins', then this process's (each alphabetical
        after the package's own)."""
        plugins = [n for n in self.plugin_names() if n not in self._registered]
        return [*self.builtin_names(), *plugins, *sorted(self._registered)]

    def known(self, name: str) -> bool:
        """Whether something is registered under ``name`` (nothing loaded)."""
        return bool(name) and (name in self._registered or name in self.builtin_names() or name in self._plugins())

    # ------------------------------------------------------------------------- lookups
    def get(self, name: str) -> T:
        """The thing called ``name`` (:attr:`unknown`'s one-line error where none is)."""
        if name in self._registered:
            return self._registered[name]
        if name not in self._loaded:
            self._loaded[name] = self._convert(name, self._load(name))
        return self._loaded[name]

    def _load(self, name: str) -> Any:
        if name in self.builtin_names():
            assert self._builtins is not None
            return self._builtins[name]()
        entry = self._plugins().get(name)
        if entry is None:
            raise self._unknown(name, self.names())
        return entry.load()

    def register(self, name: str, value: T) -> T:
        """Register ``value`` under ``name`` in this process; returns it.  Registering what ``name``
        already resolves to is a no-op; anything else under a taken name is refused in one line."""
        known = self._registered.get(name)
        if known is not None and self._same(known, value):
            return known
        if known is not None or name in self.builtin_names() or name in self._plugins():
            # the package's or a plug-in's own thing again
            if known is None and self._installed_again and self._same(self.get(name), value):
                return value
            raise InputError(f"a{'n' if self.what[0] in 'aeiou' else ''} {self.what} named {name!r} is already "
                             "registered: give yours another name")
        self._registered[name] = value
        return value

    def unregister(self, name: str) -> None:
        """Remove what this process registered under ``name`` (tests, notebooks); the package's own and the
        plug-ins' stay."""
        self._registered.pop(name, None)

    def forget_installed(self) -> None:
        """Read the installed plug-ins afresh on the next lookup (after a distribution was installed in
        this process) and drop what was loaded."""
        self._entry_points = None
        self._loaded.clear()


__all__ = ["Registry"]

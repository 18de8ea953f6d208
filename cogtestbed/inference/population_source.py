"""Where a population comes from, resolved without reading it: ``human:NAME`` (a shipped population; a unique
prefix of its name is enough) or the path of a population file.  A name that matches none, or a path that is no
file, is refused in one line before numpy or pydantic is imported (:mod:`cogtestbed.inference.population` reads
the file it names).

Imports nothing heavy.
"""

from __future__ import annotations

import os
from pathlib import Path

from cogtestbed.errors import InputError

#: How a shipped population is named (``human:spektor2024``).
PREFIX = "human:"


class PopulationError(InputError):
    """A population that cannot be built, read or used (one clear line)."""


def shipped_directory() -> Path:
    """Where the package's own populations live (``cogtestbed/data/populations``)."""
    return Path(__file__).resolve().parents[1] / "data" / "populations"


def shipped_populations() -> list[str]:
    """The names of the populations the package ships (``human:NAME``)."""
    folder = shipped_directory()
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def population_path(source: str | os.PathLike[str]) -> Path:
    """The file of the population ``source`` names (``human:NAME`` or a path), or :class:`PopulationError`."""
    text = str(source)
    if text.startswith(PREFIX):
        return _shipped(text[len(PREFIX):])
    path = Path(text)
    if not path.is_file():
        names = ", ".join(f"{PREFIX}{n}" for n in shipped_populations()) or "none"
        raise PopulationError(f"no population {text!r}: give {PREFIX}NAME (shipped: {names}) or the path of a "
                              "population file")
    return path


def _shipped(name: str) -> Path:
    names = shipped_populations()
    if name in names:
        return shipped_directory() / f"{name}.json"
    matches = [n for n in names if n.startswith(name)] if name else []
    if len(matches) == 1:
        return shipped_directory() / f"{matches[0]}.json"
    listed = ", ".join(f"{PREFIX}{n}" for n in names) or "none"
    what = "names more than one" if matches else "names none"
    raise PopulationError(f"{PREFIX}{name} {what} of the shipped populations ({listed})")


__all__ = ["PREFIX", "PopulationError", "population_path", "shipped_directory", "shipped_populations"]

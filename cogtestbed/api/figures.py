"""Plots as a notebook shows them: PNG files displayed inline."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Figures:
    """PNG plots written by a study or a plan; shown inline in a notebook (``_repr_html_``).

    Attributes
    ----------
    paths : list of pathlib.Path
        The figure files written.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> from pathlib import Path
    >>> ct.Figures([Path("a.png")]).paths
    [PosixPath('a.png')]
    """

    paths: list[Path]

    def _repr_html_(self) -> str:
        images = (base64.b64encode(p.read_bytes()).decode("ascii") for p in self.paths)
        return "".join(f'<img src="data:image/png;base64,{b}"/>' for b in images)

    def __iter__(self) -> Iterator[Path]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

"""Drawing a chunk of subjects' share of a seeded draw without drawing the others.

A simulation draws its sessions, its agent's uniforms and its lapses for all ``n`` subjects at once,
each kind as one ``rng.random((n, ...))`` call after another, so subject ``i``'s numbers sit at known
places of the generator's stream: call ``j`` starts where the calls before it ended (``n`` × their
per-subject size), and subject ``i``'s share of it ``i`` × its per-subject size further on.  PCG64
(numpy's default bit generator) can jump ahead by any number of draws (``advance``), and a float64
uniform takes exactly one 64-bit draw, so a chunk of subjects ``[start, stop)`` gets exactly the
numbers the all-at-once call gives them, in memory proportional to the chunk, not to ``n``.

:func:`draw_plan` learns a drawing function's calls from two small probes (which scale with the
subject count and which are shared); :func:`chunk_draws` replays the function for one chunk on a
:class:`ChunkRandom`, which serves each call from the full run's place in the stream.  A function that
draws any other way (integers, normals, choices: a variable number of 64-bit draws each) has no plan
(None), and its caller draws for all subjects at once instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

#: The two subject counts a drawing function is probed with (distinct, and unlike any design size).
PROBE_SIZES = (5, 7)


class NotChunkable(Exception):
    """A drawing function drew in a way :class:`ChunkRandom` cannot place in the stream."""


@dataclass(frozen=True)
class Call:
    """One ``random`` call of a drawing function: its shape after the subject axis (``per_subject``),
    or the whole shape of a call every subject shares (``shared``: its size does not scale with n)."""

    rest: tuple[int, ...]
    shared: bool

    def size(self, n: int) -> int:
        """Uniforms the call takes in a run of ``n`` subjects."""
        count = int(np.prod(self.rest, dtype=np.int64))
        return count if self.shared else n * count


def _shape(size: Any) -> tuple[int, ...]:
    if size is None:
        return ()
    return tuple(int(s) for s in np.atleast_1d(size))


class _Recorder:
    """A generator stand-in that draws real uniforms and records each call's shape."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self.shapes: list[tuple[int, ...]] = []

    def random(self, size: Any = None, dtype: Any = np.float64, out: Any = None) -> Any:
        if out is not None or np.dtype(dtype) != np.float64:
            raise NotChunkable("random with out= or a dtype other than float64")
        self.shapes.append(_shape(size))
        return self.rng.random(size)

    def __getattr__(self, name: str) -> Any:
        raise NotChunkable(f"draws with {name}")


def draw_plan(draw: Callable[[int, Any], Any]) -> tuple[Call, ...] | None:
    """The calls ``draw(n, rng)`` makes, learnt from :data:`PROBE_SIZES`; None where it draws otherwise
    than with float64 ``rng.random`` or its calls do not scale as a subject axis first."""
    shapes = []
    for n in PROBE_SIZES:
        rec = _Recorder()
        try:
            draw(n, rec)
        except NotChunkable:
            return None
        shapes.append(rec.shapes)
    (a, n_a), (b, n_b) = zip(shapes, PROBE_SIZES, strict=True)
    if len(a) != len(b):
        return None
    plan = []
    for sa, sb in zip(a, b, strict=True):
        if sa == sb:
            plan.append(Call(sa, shared=True))
        elif sa[:1] == (n_a,) and sb[:1] == (n_b,) and sa[1:] == sb[1:]:
            plan.append(Call(sa[1:], shared=False))
        else:
            return None
    return tuple(plan)


class ChunkRandom:
    """Stands in for the generator of a run of ``n`` subjects, for subjects ``[start, stop)`` only:
    the ``k``-th ``random`` call is served from where the full run's ``k``-th call draws (``plan``),
    the chunk's rows of it."""

    def __init__(self, state: dict[str, Any], plan: tuple[Call, ...], n: int, start: int, stop: int) -> None:
        self.state, self.plan, self.n, self.start, self.stop = state, plan, n, start, stop
        self.k = 0
        self.offset = 0  # uniforms the full run's calls before the k-th take

    def random(self, size: Any = None, dtype: Any = np.float64, out: Any = None) -> Any:
        if self.k >= len(self.plan) or out is not None or np.dtype(dtype) != np.float64:
            raise NotChunkable("a call the probes did not make")
        call = self.plan[self.k]
        shape = _shape(size)
        rows = self.stop - self.start
        if shape != (call.rest if call.shared else (rows, *call.rest)):
            raise NotChunkable(f"call {self.k} has shape {shape}, not the probes' {call}")
        skip = 0 if call.shared else self.start * call.size(1)
        bits = np.random.PCG64()
        bits.state = self.state  # type: ignore[assignment]
        bits.advance(self.offset + skip)
        self.offset += call.size(self.n)
        self.k += 1
        return np.random.Generator(bits).random(size)

    def __getattr__(self, name: str) -> Any:
        raise NotChunkable(f"draws with {name}")


def chunk_draws(draw: Callable[[int, Any], T], plan: tuple[Call, ...], rng: np.random.Generator, n: int,
                start: int, stop: int) -> T:
    """What ``draw(n, rng)`` gives subjects ``[start, stop)``, drawn alone (``rng`` is not advanced);
    ``plan``: :func:`draw_plan` of ``draw``.  ``rng`` must be a PCG64 generator."""
    if not isinstance(rng.bit_generator, np.random.PCG64):
        raise NotChunkable(f"bit generator {type(rng.bit_generator).__name__} cannot jump ahead")
    return draw(stop - start, ChunkRandom(dict(rng.bit_generator.state), plan, n, start, stop))


def chunk_bounds(n: int, chunk: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of each chunk of at most ``chunk`` subjects of ``n``, in order."""
    step = max(1, int(chunk))
    return [(a, min(a + step, n)) for a in range(0, n, step)]

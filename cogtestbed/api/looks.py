"""The public face of a sequential run's looks: :func:`looks` (``cogtestbed looks RUN_DIR``) and its
:class:`LookReplay`, and the looks of ``run --plan`` (:func:`run_sequential`,
:func:`run_sequential_pair`) with their lines on stderr.  The rules of ``looks.jsonl`` (what a recorded
look is, when a run stops or resumes, how a look is replayed) live in :mod:`cogtestbed.runs.looks`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogtestbed.api.checks import public
from cogtestbed.api.console import console_err
from cogtestbed.runs.looks import REDERIVED, recorded_looks

__all__ = ["REDERIVED", "LookReplay", "looks", "recorded_looks", "run_monitored", "run_monitored_pair",
           "run_sequential", "run_sequential_pair"]


def _say(line: str) -> None:
    console_err.print(line, highlight=False)


def run_sequential(request: Any, design: dict[str, Any], execute_run: Callable[[Any], Any]) -> Any:
    """A sequential plan's looks in ``request.output`` (:func:`cogtestbed.runs.looks.run_sequential`),
    each look said on stderr."""
    from cogtestbed.runs.looks import run_sequential as run

    return run(request, design, execute_run, _say)


def run_sequential_pair(requests: Sequence[Any], output: Path, design: dict[str, Any],
                        execute_run: Callable[[Any], Any]) -> Any:
    """A sequential plan of a metric difference between two LLMs in ``output``
    (:func:`cogtestbed.runs.looks.run_sequential_pair`), each look said on stderr."""
    from cogtestbed.runs.looks import run_sequential_pair as run

    return run(requests, output, design, execute_run, _say)


def run_monitored(request: Any, design: dict[str, Any], execute_run: Callable[[Any], Any]) -> Any:
    """A monitored plan's run in ``request.output``, subject by subject
    (:func:`cogtestbed.runs.monitor_run.run_monitored`), each step said on stderr."""
    from cogtestbed.runs.monitor_run import run_monitored as run

    return run(request, design, execute_run, _say)


def run_monitored_pair(requests: Sequence[Any], output: Path, design: dict[str, Any],
                       execute_run: Callable[[Any], Any]) -> Any:
    """A monitored plan of two LLMs in ``output``, pair by pair
    (:func:`cogtestbed.runs.monitor_run.run_monitored_pair`), each step said on stderr."""
    from cogtestbed.runs.monitor_run import run_monitored_pair as run

    return run(requests, output, design, execute_run, _say)


@dataclass
class LookReplay:
    """Every recorded look of a sequential run, recomputed from its saved trial table(s): ``looks``
    (each recomputed look with the recorded values beside it, ``reproduced`` and ``differs``),
    ``reproduced`` (all of them), ``axis`` (what a look's size counts).

    Attributes
    ----------
    run_dir : pathlib.Path
        The run folder replayed.
    looks : list of dict
        Every recorded look, recomputed.
    reproduced : bool
        Whether every look's decision is the recorded one.
    axis : str
        What a look counts (subjects or trials).

    Examples
    --------
    >>> import cogtestbed as ct
    >>> from pathlib import Path
    >>> replay = ct.LookReplay(Path("run"), [], True, "subjects")
    >>> replay.reproduced, replay.looks
    (True, [])
    """

    run_dir: Path
    looks: list[dict[str, Any]]
    reproduced: bool
    axis: str

    def to_dict(self) -> dict[str, Any]:
        """What ``cogtestbed looks --json`` prints."""
        return {"run_dir": str(self.run_dir), "looks": self.looks, "reproduced": self.reproduced}


@public(paths=('run_dir',))
def looks(run_dir: str | os.PathLike[str]) -> LookReplay:
    """Reproduce every recorded look of a sequential ``run --plan`` in ``run_dir`` from its saved
    trial table(s) (``cogtestbed looks``; the command exits 1 where one is not reproduced;
    :func:`cogtestbed.runs.looks.replay_looks`).

    Parameters
    ----------
    run_dir : path
        The folder of a sequential or monitored ``ct.run`` (its ``looks.jsonl``).

    Returns
    -------
    LookReplay
        Every recorded look recomputed: ``.looks``, ``.reproduced``, ``.to_dict()``.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> ct.looks("no-such-run")
    Traceback (most recent call last):
    ...
    cogtestbed.errors.DataError: ...
    """
    from cogtestbed.runs.looks import replay_looks
    from cogtestbed.runs.monitor_run import MONITOR_DESIGN, replay_monitor

    if (Path(run_dir) / MONITOR_DESIGN).exists():  # a monitored run: every subject a step
        steps, done = replay_monitor(Path(run_dir))
        return LookReplay(Path(run_dir), steps, done, "subjects (monitored)")
    rows, ok, axis = replay_looks(Path(run_dir))
    return LookReplay(Path(run_dir), rows, ok, axis)

"""Progress of long jobs (posterior sampling): chains and draws with an ETA on a terminal, one line
per interval off it, an up-front estimate before the set-up (:meth:`SamplingProgress.expect`, from
the cost model of :mod:`cogtestbed.timings`), and a time estimate as soon as the sampler gives one
for a job over a minute.

The command line opens a reporter (:func:`reporting`) around work that may sample; the samplers
(:func:`cogtestbed.inference.hierarchical.fit_hierarchical`, which every hierarchical fit and
the magnitude hierarchy go through) report to the current one (:func:`current`), so no library
signature grows a progress argument.  nutpie reports through its own template callback
(:func:`nutpie_progress`: draws and chains finished, elapsed time, its ETA); PyMC through
``pm.sample``'s per-draw callback.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

#: Seconds between progress lines off a terminal.
LINE_INTERVAL = 30.0
#: A job whose first estimate exceeds this many seconds gets a time-estimate line.
ESTIMATE_OVER = 60.0
#: nutpie's progress template: one line of numbers we parse (its template language is Jinja-like).
NUTPIE_TEMPLATE = ("{{ total_finished_draws }}|{{ total_draws }}|{{ finished_chains }}|{{ num_chains }}|"
                   "{{ running_chains }}|{{ time_sampling }}|{{ time_remaining_estimate }}")

Report = Callable[[str, bool], None]
_T = TypeVar("_T")
_CURRENT: ContextVar[tuple[Report, bool] | None] = ContextVar("cogtestbed_progress", default=None)


def current() -> tuple[Report, bool] | None:
    """The reporter of the work under way (``report(line, final)``) and whether it writes to a
    terminal, or None (no progress shown)."""
    return _CURRENT.get()


@contextlib.contextmanager
def reporting(report: Report | None, terminal: bool = False) -> Iterator[None]:
    """Make ``report`` the current reporter for the duration of the block."""
    token = _CURRENT.set(None if report is None else (report, terminal))
    try:
        yield
    finally:
        _CURRENT.reset(token)


class SamplingProgress:
    """Turns sampler updates into lines: every update on a terminal, one per :data:`LINE_INTERVAL`
    seconds off it, and once an estimate of the time left exceeds :data:`ESTIMATE_OVER` seconds a
    line saying so."""

    def __init__(self, report: Report, what: str, terminal: bool) -> None:
        self.report, self.what, self.terminal = report, what, terminal
        self.last = -float("inf")
        self.estimated = False
        self.created = time.monotonic()
        self.start: float | None = None  # the first update: sampling has begun (the model is compiled)
        self.total = 0
        self.kind: str | None = None  # the cost-model kind recorded when sampling finishes
        self.units = 0.0
        self.fresh = True

    def expect(self, kind: str, units: float, compiled: bool) -> None:
        """Say the up-front estimate of this fit before its set-up begins (a job over
        :data:`ESTIMATE_OVER` seconds), from the cost model of :mod:`cogtestbed.timings`; the
        measured set-up and rate are recorded for the next fit of ``kind`` when it finishes."""
        from cogtestbed import timings

        self.kind, self.units, self.fresh = kind, units, not compiled
        setup, sampling, n = timings.estimate(kind, units)
        setup = 0.0 if compiled else setup
        if setup + sampling <= ESTIMATE_OVER:
            return
        basis = (f"{n} earlier fit{'s' * (n != 1)} of this kind on this machine" if n else
                 "no earlier fit of this kind recorded here: the default cost model, which may be off several times")
        self.report(f"{self.what}: estimated {clock(setup + sampling)} in all (an estimate before set-up: "
                    f"{clock(setup)} set-up + {clock(sampling)} sampling, from {basis}; the progress lines "
                    "follow the real rate)", True)

    def update(self, done: int, total: int, chains_done: int, chains: int, eta_s: float | None) -> None:
        now = time.monotonic()
        self.total = total
        if self.start is None:
            self.start = now
            self.report(f"{self.what}: sampling began after {clock(now - self.created)} of set-up "
                        f"({chains} chains, {total} draws in all, tuning included)", True)
        eta = f", ETA {clock(eta_s)}" if eta_s is not None else ""
        line = (f"{self.what}: {done}/{total} draws (tuning included), {chains_done}/{chains} chains done, "
                f"{clock(now - self.start)} elapsed{eta}")
        if not self.estimated and eta_s is not None and eta_s + (now - self.start) > ESTIMATE_OVER:
            self.estimated = True
            self.report(f"{self.what}: estimated {clock(eta_s + now - self.start)} in all", True)
        if self.terminal or now - self.last >= LINE_INTERVAL:
            self.last = now
            self.report(line, not self.terminal)

    def finish(self) -> None:
        """The closing line: every draw done, and the time sampling took (recorded for the next
        estimate of this kind)."""
        took = time.monotonic() - (self.start if self.start is not None else self.created)
        self.report(f"{self.what}: done, {self.total or 'all'} draws in {clock(took)}", True)
        if self.kind is not None and self.start is not None:
            from cogtestbed import timings

            timings.record(self.kind, self.start - self.created if self.fresh else None, took, self.units)


def clock(seconds: float) -> str:
    """Seconds as a clock reading for a person: ``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, s = divmod(int(round(seconds)), 60)
    return f"{minutes} min {s:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def duration(seconds: float) -> str:
    """Seconds for a person: 2 significant digits under a minute (``0.31 s``), else :func:`clock`."""
    return f"{seconds:.2g} s" if seconds < 59.5 else clock(seconds)


_DURATION = re.compile(r"([\d.]+)\s*(ms|s|m|h|µs|us|ns)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float | None:
    """Seconds of a duration as nutpie writes it (``1m 3s``, ``12.5s``, ``250ms``); None if none."""
    parts = _DURATION.findall(text or "")
    return sum(float(v) * _UNITS[u] for v, u in parts) if parts else None


def on_nutpie_line(progress: SamplingProgress) -> Callable[[str], None]:
    """nutpie's template callback feeding ``progress``."""

    def callback(formatted: str) -> None:
        try:
            done, total, fin, chains, _running, _elapsed, eta = (x.strip() for x in formatted.split("|"))
            progress.update(int(done), int(total), int(fin), int(chains), parse_duration(eta))
        except ValueError:  # a template nutpie renders differently: say nothing rather than fail
            return

    return callback


@contextlib.contextmanager
def nutpie_progress(progress: SamplingProgress, cores: int) -> Iterator[None]:
    """Route nutpie's terminal progress bar to ``progress`` while the block runs.

    nutpie draws an indicatif bar outside notebooks; its template callback (used in notebooks)
    formats :data:`NUTPIE_TEMPLATE` instead, which :func:`on_nutpie_line` parses.  nutpie has no public
    hook for that off notebooks: :func:`cogtestbed.shims.nutpie_shim.template_progress` holds the one
    private access, pinned to the locked nutpie.
    """
    from cogtestbed.shims.nutpie_shim import template_progress

    with template_progress(NUTPIE_TEMPLATE, cores, on_nutpie_line(progress)):
        yield


def pymc_callback(progress: SamplingProgress, draws: int, tune: int, chains: int) -> Callable[..., None]:
    """``pm.sample(callback=...)`` counting draws per chain into ``progress``."""
    counts: dict[int, int] = {}
    total = (draws + tune) * chains
    start = time.monotonic()

    def callback(trace: Any = None, draw: Any = None, **_: Any) -> None:
        chain = int(getattr(draw, "chain", 0))
        counts[chain] = counts.get(chain, 0) + 1
        done = sum(counts.values())
        elapsed = time.monotonic() - start
        eta = elapsed / done * (total - done) if done else None
        finished = sum(1 for c in counts.values() if c >= draws + tune)
        progress.update(done, total, finished, chains, eta)

    return callback


class TaskProgress:
    """Tasks of a study done, as a line per :data:`LINE_INTERVAL` seconds (off a terminal), with the
    elapsed time and an ETA from the rate so far, and once the projected total exceeds
    :data:`ESTIMATE_OVER` seconds a line with the estimate.  With ``terminal``, every advance
    rewrites the line in place (``report(line, False)``) and the last one stays."""

    def __init__(self, report: Report, what: str, total: int, terminal: bool = False) -> None:
        self.report, self.what, self.total, self.terminal = report, what, total, terminal
        self.done = 0
        self.start = time.monotonic()
        self.last = self.start
        self.estimated = False
        self.first = (self.start, 0)

    def advance(self, k: int = 1) -> None:
        """``k`` more tasks done.  The rate is measured from the first completion on (the first task
        also compiles the kernels and starts the workers, which later tasks do not repeat)."""
        now = time.monotonic()
        if self.done == 0:
            self.first = (now, k)
        self.done += k
        elapsed = now - self.start
        since, first_k = now - self.first[0], self.first[1]
        later = self.done - first_k
        eta = since / later * (self.total - self.done) if later > 0 and since > 0 else None
        if not self.estimated and eta is not None and elapsed + eta > ESTIMATE_OVER and self.done < self.total:
            self.estimated = True
            self.report(f"{self.what}: estimated {clock(elapsed + eta)} in all ({self.done} of {self.total} tasks "
                        f"took {clock(elapsed)})", True)
        if self.terminal or now - self.last >= LINE_INTERVAL or self.done >= self.total:
            self.last = now
            tail = f", ETA {clock(eta)}" if eta and self.done < self.total else ""
            self.report(f"{self.what}: {self.done}/{self.total} tasks, {clock(elapsed)} elapsed{tail}",
                        not self.terminal or self.done >= self.total)


def task_lines(what: str, total: int) -> TaskProgress:
    """A :class:`TaskProgress` on stderr: a line rewritten in place on a terminal, else a line per
    :data:`LINE_INTERVAL` seconds and one at the end."""
    terminal = stderr_isatty()
    return TaskProgress(stderr_reporter(terminal), what, total, terminal)


def stderr_isatty() -> bool:
    """Whether stderr is a terminal by its own ``isatty`` (False for a stream without one or closed)."""
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


def for_sampling(what: str) -> SamplingProgress | None:
    """A :class:`SamplingProgress` on the current reporter (None where no one reports)."""
    found = current()
    return None if found is None else SamplingProgress(found[0], what, found[1])


def stderr_reporter(terminal: bool) -> Report:
    """A reporter writing to stderr: on a terminal one line rewritten in place, else plain lines."""

    def report(line: str, final: bool) -> None:
        if terminal and not final:
            sys.stderr.write("\r\x1b[2K" + line)
        else:
            sys.stderr.write(("\r\x1b[2K" if terminal else "") + line + "\n")
        sys.stderr.flush()

    return report


__all__ = ["SamplingProgress", "TaskProgress", "current", "duration", "for_sampling", "nutpie_progress",
           "UnitProgress", "parse_duration", "pymc_callback", "reporting", "stderr_isatty", "stderr_reporter",
           "unit_phase", "task_lines", "unit_progress", "unit_tick", "each_unit"]


#: Seconds between a :class:`Heartbeat`'s lines (a plan says where it is at least this often).
HEARTBEAT_INTERVAL = 10.0


class Heartbeat:
    """A line every :data:`HEARTBEAT_INTERVAL` seconds while long work runs (a daemon thread):
    the phase, units done of the phase's total, time elapsed and the phase's ETA (its rate up to the
    last finished unit, counted down since: :meth:`remaining`; ``ETA unknown`` before the first unit or
    without a total).

    The work sets the phase (:meth:`phase`) and counts units as they finish (:meth:`advance`);
    the thread only reads, so the work never waits on it.  ``with Heartbeat(say):`` starts and
    stops it; a phase of :meth:`phase` with a total of 0 prints no ETA.
    """

    def __init__(self, say: Callable[[str], None], interval: float = HEARTBEAT_INTERVAL) -> None:
        import threading

        self.say, self.interval = say, interval
        self.start = time.monotonic()
        self.name, self.done, self.total, self.since = "starting", 0, 0, self.start
        self.detail: str | Callable[[int], str] = ""
        self.expected: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="plan-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)  # a line under way is said before the caller's closing line

    def phase(self, name: str, total: int = 0, detail: str | Callable[[int], str] = "",
              expected: float | None = None) -> None:
        """A new phase of ``total`` units (0: unknown); ``detail``: a note after the count, or a function of
        the units done in the phase that writes it (a running count that includes the phase's own units);
        ``expected``: the phase's seconds as predicted from earlier work, its ETA until its first unit is done."""
        self.name, self.done, self.total, self.detail = name, 0, max(0, int(total)), detail
        self.expected = expected
        self.since = self.ticked = time.monotonic()

    def advance(self, units: int = 1) -> None:
        self.done += units
        self.ticked = time.monotonic()

    def remaining(self, now: float) -> float:
        """Seconds left of the phase: the rate at its last finished unit projected over the units left, counted
        down since (units finish in chunks: the time since the last one is part of the next, not a slower rate);
        once the countdown has run out, the rate including the wait."""
        left = max(0, self.total - self.done)
        projected = (self.ticked - self.since) / self.done * left - (now - self.ticked)
        return projected if projected > 0 else (now - self.since) / self.done * left

    def line(self) -> str:
        now = time.monotonic()
        took = now - self.since
        if self.total and self.done:
            eta = f"ETA {clock(self.remaining(now))}"
        elif self.total and self.expected is not None:
            eta = f"ETA {clock(max(0.0, self.expected - took))} (at the last design's rate)"
        else:
            eta = "ETA unknown" if not self.total else "ETA once the first result is in"
        count = f"{self.done:,}/{self.total:,}" if self.total else f"{self.done:,} done" if self.done else "under way"
        note = self.detail(self.done) if callable(self.detail) else self.detail
        detail = f" ({note})" if note else ""
        return f"{self.name}: {count}{detail}, {clock(now - self.start)} elapsed, {eta}"

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.say(self.line())
            except Exception:  # a closed stream must not end the work
                return


#: The heartbeat of the work under way (None: none), so library loops count units without a
#: progress argument (as :func:`current` for samplers).
_HEARTBEAT: ContextVar[Heartbeat | None] = ContextVar("cogtestbed_heartbeat", default=None)


@contextlib.contextmanager
def heartbeat(say: Callable[[str], None] | None, interval: float = HEARTBEAT_INTERVAL) -> Iterator[Heartbeat | None]:
    """Run a :class:`Heartbeat` saying its lines through ``say`` (none where ``say`` is None) and
    make it the current one (:func:`beat`) for the block."""
    if say is None:
        yield None
        return
    with Heartbeat(say, interval) as hb:
        token = _HEARTBEAT.set(hb)
        try:
            yield hb
        finally:
            _HEARTBEAT.reset(token)


def beat() -> Heartbeat | None:
    """The current :class:`Heartbeat`, or None."""
    return _HEARTBEAT.get()


def tick(units: int = 1) -> None:
    """Count ``units`` finished on the current heartbeat (nothing without one)."""
    hb = _HEARTBEAT.get()
    if hb is not None:
        hb.advance(units)


#: Seconds between the progress lines of a long computation over units (:func:`unit_progress`).
UNIT_INTERVAL = 5.0
#: The heartbeat of a computation over units under way (``metrics`` of a large table), apart from
#: a plan's (:func:`beat`): the loops that fit each unit (:meth:`CognitiveModel.fit_mle`) count
#: into it without clobbering a plan's phases.
_UNIT_BEAT: ContextVar[Heartbeat | None] = ContextVar("cogtestbed_unit_progress", default=None)


class UnitProgress:
    """The handle :func:`unit_progress` yields: its :class:`Heartbeat` and the closing line's text
    (:meth:`closing`), said once the block ends with the time it took."""

    def __init__(self, heartbeat: Heartbeat) -> None:
        self.heartbeat = heartbeat
        self.summary: str | None = None

    def closing(self, text: str) -> None:
        """What the closing line says (the counts the result holds)."""
        self.summary = text


@contextlib.contextmanager
def unit_progress(what: str, interval: float | None = None) -> Iterator[UnitProgress | None]:
    """While the block runs, a line every ``interval`` seconds (default :data:`UNIT_INTERVAL`)
    through the current reporter (:func:`current`; none, and None yielded, without one): ``what``
    while it is under way, then the phase a fitting loop sets (:func:`unit_phase`: which model,
    units fitted of how many, ETA).  A block that outlasts one interval ends with the last phase's
    line (the last count reached) and the closing line (:meth:`UnitProgress.closing`) with the time
    it took; a shorter one says nothing."""
    found = current()
    if found is None:
        yield None
        return
    report = found[0]
    said = [""]

    def say(line: str) -> None:
        said[0] = line
        report(line, False)

    step = UNIT_INTERVAL if interval is None else interval
    with Heartbeat(say, step) as hb:
        hb.phase(what)
        handle = UnitProgress(hb)
        token = _UNIT_BEAT.set(hb)
        try:
            yield handle
        finally:
            _UNIT_BEAT.reset(token)
    took = time.monotonic() - hb.start
    if took >= step:
        last = hb.line()
        if hb.name != what and last != said[0]:  # the last count reached, unless just said
            report(last, True)
        report(f"{handle.summary or what + ': done'} in {clock(took)}", True)


def unit_phase(name: str, total: int) -> None:
    """Start the phase ``name`` of ``total`` units on the current :func:`unit_progress` (none: nothing)."""
    hb = _UNIT_BEAT.get()
    if hb is not None:
        hb.phase(name, total)


def unit_tick(units: int = 1) -> None:
    """Count ``units`` done on the current :func:`unit_progress` (none: nothing)."""
    hb = _UNIT_BEAT.get()
    if hb is not None:
        hb.advance(units)


def each_unit(items: Iterable[_T], name: str, total: int) -> Iterator[_T]:
    """``items`` (one per unit: a run's rows, a subject's) with the phase ``name`` of ``total``
    units started on the current :func:`unit_progress`, each unit counted once its body is done."""
    unit_phase(name, total)
    for item in items:
        yield item
        unit_tick()

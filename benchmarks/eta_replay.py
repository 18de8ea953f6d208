"""A plan's heartbeat ETAs replayed from a log of its stderr lines, each prefixed by the seconds since its start:
the rate-including-the-wait ETA (elapsed / done x left) against the countdown from the last finished unit
(:meth:`cogtestbed.progress.Heartbeat.remaining`), each against the time its simulating phase really took to end,
over the phases after the first design's result (the ratio, either way, floored at 1 s).  A unit's finishing
time is read as the first heartbeat line that shows it (every 10 s), so the countdown's figures are approximate.

    python benchmarks/eta_replay.py benchmarks/records/t1a-paper-plan-heartbeat.log
"""

from __future__ import annotations

import contextlib
import re
import statistics
import sys
from pathlib import Path

HEARTBEAT = re.compile(r"^(?P<phase>fixed plan: simulating [^:]+): (?P<done>\d+)/(?P<total>\d+).*? elapsed, ETA")


def read(path: Path) -> list[tuple[float, str]]:
    """(seconds, line) of the log after the first design's result."""
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").replace("\r", "\n").splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            with contextlib.suppress(ValueError):
                rows.append((float(parts[0]), parts[1]))
    first = next((t for t, text in rows if " sims)" in text), float("inf"))
    return [(t, text) for t, text in rows if t > first]


def phases(rows: list[tuple[float, str]]) -> list[tuple[list[tuple[float, int, int]], float]]:
    """Each simulating phase's heartbeats (seconds, done, total) and the time of the line that ended it."""
    out: list[tuple[list[tuple[float, int, int]], float]] = []
    current: list[tuple[float, int, int]] = []
    name = None
    for t, text in rows:
        m = HEARTBEAT.match(text)
        if m is not None and m["phase"] == name:
            current.append((t, int(m["done"]), int(m["total"])))
            continue
        if current:
            out.append((current, t))
        current, name = ([(t, int(m["done"]), int(m["total"]))], m["phase"]) if m else ([], None)
    return out


def ratio(eta: float, real: float) -> float:
    eta, real = max(eta, 1.0), max(real, 1.0)
    return max(eta / real, real / eta)


def replay(path: Path) -> dict[str, list[float]]:
    """The two ETAs' errors at every heartbeat with a unit done."""
    errors: dict[str, list[float]] = {"rate including the wait": [], "countdown": []}
    for beats, end in phases(read(path)):
        start, tick, seen = beats[0][0], beats[0][0], 0
        for t, done, total in beats:
            if done != seen:
                tick, seen = t, done
            if done == 0:
                continue
            waited = (t - start) / done * (total - done)
            countdown = (tick - start) / done * (total - done) - (t - tick)
            errors["rate including the wait"].append(ratio(waited, end - t))
            errors["countdown"].append(ratio(countdown if countdown > 0 else waited, end - t))
    return errors


def main() -> None:
    for label, errs in replay(Path(sys.argv[1])).items():
        if errs:
            print(f"{label}: median {statistics.median(errs):.2f}x, {sum(e <= 2 for e in errs) / len(errs):.0%} "
                  f"within 2x, at most {max(errs):.1f}x ({len(errs)} ETAs)")


if __name__ == "__main__":
    main()

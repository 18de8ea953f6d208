"""CPU seconds a plan spends pricing a design (its dry run: every prompt rendered and counted), per session of
an experiment's default design for two LLMs (``openai:gpt-4o`` and ``openai:gpt-4o-mini``, seed 0), with the
counts it prices; with ``--compare N``, the design's price for N sessions rendered in full (``Pricer.exact``)
beside the fast path a plan prints (``Pricer.priced``: above ``EXACT_TRIALS`` sessions x trials, the search's
rendered sessions scaled, within a stated 99 % bound).

    python benchmarks/bench_pricing_sessions.py magnitude revealed-belief --sessions 1
    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_pricing_sessions.py magnitude --sessions 1   # its code
    python benchmarks/bench_pricing_sessions.py two-step temporal-discounting --compare 12

Each pricing runs in a fresh pricer (nothing cached); CPU seconds of this process (``time.process_time``): on a
shared machine the figure, not wall.
"""

from __future__ import annotations

import argparse
import os
import time

import cogtestbed.planning.pricing as pricing
from cogtestbed.planning.pricing import Pricer
from cogtestbed.registry import get_experiment

TWO = ("openai:gpt-4o", "openai:gpt-4o-mini")


def timed_exact(name: str, sessions: int) -> str:
    """CPU seconds and counts of ``sessions`` sessions of the default design priced in full."""
    exp = get_experiment(name)
    design = exp.env_cls.design_cls()
    pricer = Pricer(exp, TWO, seed=0)
    t0 = time.process_time()
    cost = pricer.exact(design, sessions)
    cpu = time.process_time() - t0
    return (f"{name}: {sessions} session(s) x {design.n_trials:,} trials priced in full: {cpu:.1f} CPU-s "
            f"({cpu / sessions:.2f} a session, {1000 * cpu / (sessions * design.n_trials):.2f} ms a trial); "
            f"{cost.calls:,} calls, {cost.prompt_tokens:,} prompt tokens, ${cost.dollars}")


def compared(name: str, n: int) -> str:
    """The fast path's price of ``n`` sessions (forced to sample) against every session rendered."""
    exp = get_experiment(name)
    design = exp.env_cls.design_cls()
    pricing.EXACT_TRIALS = 0
    pricer = Pricer(exp, TWO, seed=0)
    t0 = time.process_time()
    fast = pricer.priced(design, n)
    t_fast = time.process_time() - t0
    t0 = time.process_time()
    full = pricer.exact(design, n)
    t_full = time.process_time() - t0
    s = fast.sampling or {}
    inside = abs(fast.prompt_tokens - full.prompt_tokens) <= s.get("prompt_tokens_bound", 0)
    return (f"{name}, {n} sessions: scaled from {s.get('sessions_rendered')} {fast.prompt_tokens:,} prompt tokens "
            f"± {s.get('prompt_tokens_bound', 0):,} (99 %), ${fast.dollars} ± ${s.get('dollars_bound')}, "
            f"{fast.calls:,} calls ({t_fast:.1f} CPU-s); rendered in full {full.prompt_tokens:,}, ${full.dollars}, "
            f"{full.calls:,} calls ({t_full:.1f} CPU-s): {'inside' if inside else 'OUTSIDE'} the bound")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiments", nargs="+")
    ap.add_argument("--sessions", type=int, default=1, help="sessions priced in full")
    ap.add_argument("--compare", type=int, default=None, help="sessions: the fast path against the full one")
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}")
    for name in args.experiments:
        print(compared(name, args.compare) if args.compare else timed_exact(name, args.sessions), flush=True)


if __name__ == "__main__":
    main()

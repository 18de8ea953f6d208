"""A sequential test per size for the plan's size searches.

The hierarchical size search (:mod:`cogtestbed.planning.fitcheck`) and the precision search
(:mod:`cogtestbed.planning.kinds.precision.precision`) measure a rate (power, assurance) by simulation at each
size they try and keep the smallest size that "reaches" the target.  Accepting a size on its point
estimate, or re-checking an interval after every batch without adjustment, picks a size whose true
rate is below the target far more often than 5 % of searches (an audit measured 10–24 % and
12–29 %).  Here a size **passes** only when the one-sided Clopper–Pearson lower confidence bound of
its rate reaches the target, and **fails** when the upper bound falls below it; the bounds are checked
after each batch, at most ``looks`` times, each at error ``error / looks`` (Bonferroni over the looks,
so a size whose true rate is below the target passes with probability at most ``error``, whatever
the rate).  A size still undecided after its last batch **fails** (not shown to reach the target: the
search goes on to a larger one).

The search's own error, the chance that the size it finally picks is below the target, adds over the
sizes it tries whose true rate is below the target; only sizes near the threshold have a real chance,
and the searches try one or two of those, so :data:`SIZE_ERROR` is set at half the search's 5 %
(checked by simulating the searches themselves: ``benchmarks/studies/size_search_error.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from scipy import stats

#: Error of one size's test: the chance that a size whose true rate is below the target passes (the
#: project's choice: half of the ≤ 5 % per search the project asks, for the one or two sizes near
#: the threshold a search tries).
SIZE_ERROR = 0.05
#: Error of the failing decision (a size whose true rate reaches the target declared failing early);
#: a wrong failure only costs a larger size, so it is looser.
FAIL_ERROR = 0.20


def lower_bound(hits: int, n: int, error: float) -> float:
    """One-sided Clopper–Pearson lower bound of a rate at confidence 1 − ``error`` (0 when hits = 0)."""
    if n <= 0 or hits <= 0:
        return 0.0
    return float(stats.beta.ppf(error, hits, n - hits + 1))


def upper_bound(hits: int, n: int, error: float) -> float:
    """One-sided Clopper–Pearson upper bound of a rate at confidence 1 − ``error`` (1 when hits = n)."""
    if n <= 0 or hits >= n:
        return 1.0
    return float(stats.beta.ppf(1 - error, hits + 1, n - hits))


@dataclass(frozen=True)
class SizeTest:
    """The sequential test of "rate ≥ ``target``" at one size (module docstring): ``looks`` checks at
    most, each at ``error / looks`` for passing and ``fail_error / looks`` for failing."""

    target: float
    looks: int
    error: float = SIZE_ERROR
    fail_error: float = FAIL_ERROR

    def decide(self, hits: int, n: int, last: bool, n_max: int | None = None) -> bool | None:
        """True (passes), False (fails) or None (undecided: simulate another batch); ``last``: this is
        the last look, where an undecided size fails; ``n_max``: the studies at the last look — a size
        that could not pass even if every remaining study succeeded fails now (the same decision, sooner)."""
        err = self.error / self.looks
        if lower_bound(hits, n, err) >= self.target:
            return True
        if last or upper_bound(hits, n, self.fail_error / self.looks) < self.target:
            return False
        if n_max is not None and lower_bound(hits + n_max - n, n_max, err) < self.target:
            return False
        return None

    def words(self) -> str:
        return (f"a size passes when the one-sided lower {100 * (1 - self.error / self.looks):.2f}% Clopper-Pearson "
                f"bound of its rate reaches {self.target:g} (error {self.error:g} over at most {self.looks} looks, "
                "Bonferroni); still undecided after the last look, it fails")

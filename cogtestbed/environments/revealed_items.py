"""Items of the revealed-belief family: templates, outcome sets and closed-form ground truth.

Source: *Do Large Language Models Exhibit Cognitive Dissonance? Studying the Difference Between
Revealed Beliefs and Stated Answers* (anonymous ACL submission, 2024), §4.1 and App. A.  Four
scenarios (dice, coins, choice, preference), each in the variants Regular, Independent, Dependent
and Observation(s).  Every item is a list of sentences whose last one is the *stem*: the RevB
context is all sentences joined (it ends where the outcome token comes, no trailing space), the
StaA scenario is every sentence but the stem (App. A's MCQ example).

Verbatim templates (App. A) are used where the paper prints them; the others are documented
defaults, each named below (``*_TEMPLATE`` constants):

* dice with several dice and the observation sentences (the paper prints only "smaller than 3");
* the dice Independent variant follows App. A's MCQ example ("The die lands on face number 1. The
  die is cast again."), then the Regular stem; the coins Independent variant is written the same
  way ("… flipped a first time … is 0. The coins are flipped again and the resulting number of
  Heads is equal to");
* the observation thresholds: "smaller than t" with t = ⌊(min+max)/2⌋ + 1 and "larger than t'"
  with t' = ⌊(min+max)/2⌋ (App. A's d4 example "smaller than 3"); "first" is the smallest
  outcome and "middle" the lower median outcome.

Ground truth (App. A): the sum of n fair f-sided dice has p(s) = #{x ∈ {1..f}ⁿ : Σx = s} / fⁿ; a
coin "k times more likely to land on Heads" has p_H = k / (k + 1); a preference option "b times
more likely" has p = b / (b + 1); abstract choices are uniform.  Independent repeats keep the
regular distribution; Dependent sums shift it by the stated first result; an observation keeps
p*(s | obs) ∝ p(s)·1[obs(s)].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

SCENARIOS = ("dice", "coins", "choice", "preference")
VARIANTS = ("regular", "independent", "dependent", "observation")
#: Observation types of App. B.1.2 (one observation).
SINGLE_OBSERVATIONS = ("smaller", "larger", "even", "odd", "not_first", "not_middle")
#: Observation pairs of App. B.1.3/B.1.4.
PAIR_OBSERVATIONS = (
    ("smaller", "even"), ("smaller", "odd"), ("smaller", "not_first"), ("smaller", "not_middle"),
    ("larger", "even"), ("larger", "odd"), ("larger", "not_first"), ("larger", "not_middle"),
    ("even", "not_first"), ("even", "not_middle"),
)
_OBS_TITLE = {"smaller": "Smaller", "larger": "Larger", "even": "Even", "odd": "Odd",
              "not_first": "Not first", "not_middle": "Not middle"}
#: The labels whose preference the dissonant agent's ``beta_label`` measures (the paper's
#: Figure 6: "Left" preferred over "Right"; Heads over Tails by analogy).
MARKED_LABELS = frozenset({"Left", "Heads"})
PREFERENCE_PAIRS = (("Left", "Right"), ("Heads", "Tails"))
LETTERS = "ABCDEFGHIJKL"
#: Most outcomes of any item (3 dice with 12 faces: sums 3..36).
MAX_OUTCOMES = 36

DIE_1_TEMPLATE = "A die has {f} faces. The die is equally likely to land on any of its faces."
#: Documented default: the paper shows one die only.
DICE_N_TEMPLATE = ("There are {n} dice. Each die has {f} faces. Each die is equally likely to land on "
                   "any of its faces.")
COINS_FAIR = "There are {n} coins. Each coin is fair and is equally likely to land on Heads and Tails."
COINS_BIASED = ("There are {n} coins. Each coin is biased and is {k} times more likely to land on Heads "
                "than on Tails.")
CHOICE_TEMPLATE = ("A person has to choose randomly between {k} options. The options are {opts}. All "
                   "possible options are equally likely.")
PREF_FAIR = ("A person has to choose randomly between two options: {a} and {b}. The choice is fair and "
             "each option equally likely to be chosen.")
PREF_BIASED = ("A person has to choose randomly between two options: {a} and {b}. The option {x} is {k} "
               "times more likely to be chosen than the option {y}.")


@dataclass(frozen=True)
class Item:
    """One setting: sentences (last = stem), outcome labels, ground truth and agent features.

    ``prior`` is the distribution before any observation (equal to ``p_star`` except for
    Observation items); ``excluded`` marks outcomes an observation rules out.  The feature flags
    are what the dissonant agent's biases act on: ``marked`` (Left / Heads), ``anchor`` (the
    previously stated outcome of an Independent item), ``round`` (a multiple of 10), ``mid``
    (the lower median outcome).
    """

    scenario: str
    variant: str
    condition: str
    setting: str
    sentences: tuple[str, ...]
    labels: tuple[str, ...]
    p_star: tuple[float, ...]
    prior: tuple[float, ...]
    question: str
    marked: tuple[bool, ...]
    anchor: tuple[bool, ...]
    round: tuple[bool, ...]
    mid: tuple[bool, ...]

    @property
    def context(self) -> str:
        """The RevB context (ends where the outcome token comes)."""
        return " ".join(self.sentences)

    @property
    def scenario_text(self) -> str:
        """The StaA scenario: the context without its stem sentence."""
        return " ".join(self.sentences[:-1])

    @property
    def excluded(self) -> tuple[bool, ...]:
        return tuple(p == 0.0 for p in self.p_star)

    @property
    def n_outcomes(self) -> int:
        return len(self.labels)


# ----------------------------------------------------------------------------- ground truth
@cache
def dice_sum_pmf(n: int, f: int) -> tuple[np.ndarray, int]:
    """(p(s) for s = n..n·f, n): exact pmf of the sum of ``n`` fair ``f``-sided dice."""
    pmf = np.ones(f) / f
    out = pmf
    for _ in range(n - 1):
        out = np.convolve(out, pmf)
    return out, n


def binomial_pmf(n: int, p: float) -> np.ndarray:
    """P(K = k), k = 0..n, K ~ Binomial(n, p)."""
    return np.array([math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)])


def observation_mask(values: np.ndarray, obs: tuple[str, ...]) -> np.ndarray:
    """Outcomes an observation keeps (thresholds as in the module docstring)."""
    lo, hi = int(values[0]), int(values[-1])
    mid_t = (lo + hi) // 2
    median = int(values[(len(values) - 1) // 2])
    keep = np.ones(len(values), dtype=bool)
    for o in obs:
        keep &= {
            "smaller": values < mid_t + 1, "larger": values > mid_t, "even": values % 2 == 0,
            "odd": values % 2 == 1, "not_first": values != lo, "not_middle": values != median,
        }[o]
    return keep


def observation_phrase(values: np.ndarray, obs: tuple[str, ...]) -> str:
    """The words after "the result is" for an observation or a pair of them."""
    lo, hi = int(values[0]), int(values[-1])
    mid_t = (lo + hi) // 2
    median = int(values[(len(values) - 1) // 2])
    words = {"smaller": f"smaller than {mid_t + 1}", "larger": f"larger than {mid_t}", "even": "even",
             "odd": "odd", "not_first": f"not {lo}", "not_middle": f"not {median}"}
    return " and ".join(words[o] for o in obs)


def _numeric_item(scenario: str, variant: str, condition: str, setting: str, sentences: list[str],
                  values: np.ndarray, p_star: np.ndarray, prior: np.ndarray, question: str,
                  anchor_value: int | None = None) -> Item:
    median = int(values[(len(values) - 1) // 2])
    return Item(
        scenario, variant, condition, setting, tuple(sentences), tuple(str(int(v)) for v in values),
        tuple(float(x) for x in p_star), tuple(float(x) for x in prior), question,
        marked=(False,) * len(values),
        anchor=tuple(anchor_value is not None and int(v) == anchor_value for v in values),
        round=tuple(int(v) % 10 == 0 and int(v) != 0 for v in values),
        mid=tuple(int(v) == median for v in values),
    )


def _dice_suffix(n: int) -> str:
    return "1 die" if n == 1 else f"{n} dice"


# ----------------------------------------------------------------------------- dice
def dice_items(faces: tuple[int, ...], n_dice: tuple[int, ...], variants: tuple[str, ...],
               observations: tuple[tuple[str, ...], ...]) -> list[Item]:
    """Dice items (App. A.1) for every face count × dice count × variant."""
    items: list[Item] = []
    for n in n_dice:
        for f in faces:
            pmf, lo = dice_sum_pmf(n, f)
            values = np.arange(lo, n * f + 1)
            intro = DIE_1_TEMPLATE.format(f=f) if n == 1 else DICE_N_TEMPLATE.format(n=n, f=f)
            cast = "The die is cast." if n == 1 else "The dice are cast."
            stem = "The die lands on face number" if n == 1 else "The sum of the results is equal to"
            q_reg = ("What is the probability that the die lands on face {o}?" if n == 1 else
                     "What is the probability that the sum of the results is equal to {o}?")
            setting = f"{n}d{f}"
            sep = " " if n == 1 else " – "
            if "regular" in variants:
                items.append(_numeric_item("dice", "regular", f"Regular – {_dice_suffix(n)}", setting,
                                           [intro, cast, stem], values, pmf, pmf, q_reg))
            prev_values = sorted({int(values[0]), int(values[(len(values) - 1) // 2]), int(values[-1])})
            for prev in prev_values:
                first = (f"The die lands on face number {prev}." if n == 1
                         else f"The sum of the results is {prev}.")
                again = "The die is cast again." if n == 1 else "The dice are cast again."
                if "independent" in variants:
                    items.append(_numeric_item(
                        "dice", "independent", f"Independent{sep}{_dice_suffix(n)}", f"{setting} prev={prev}",
                        [intro, cast, first, again, stem], values, pmf, pmf, q_reg,
                        anchor_value=prev))
                if "dependent" in variants:
                    dep_values = values + prev
                    dep_stem = ("The sum of both results is equal to" if n == 1
                                else "The sum of all results is equal to")
                    q_dep = ("What is the probability that the sum of both results is equal to {o}?" if n == 1
                             else "What is the probability that the sum of all results is equal to {o}?")
                    items.append(_numeric_item(
                        "dice", "dependent", f"Dependant{sep}{_dice_suffix(n)}", f"{setting} first={prev}",
                        [intro, cast, first, again, dep_stem], dep_values, pmf, pmf, q_dep))
            if "observation" in variants:
                items.extend(_dice_observation_items(n, f, intro, cast, values, pmf, observations))
    return items


def _dice_observation_items(n: int, f: int, intro: str, cast: str, values: np.ndarray, pmf: np.ndarray,
                            observations: tuple[tuple[str, ...], ...]) -> list[Item]:
    out = []
    subject = "the result" if n == 1 else "the sum of the results"
    for obs in observations:
        keep = observation_mask(values, obs)
        if not keep.any():
            continue  # an empty pair (cannot happen for the default faces; kept safe)
        p = np.where(keep, pmf, 0.0)
        p = p / p.sum()
        title = " – ".join(_OBS_TITLE[o] for o in obs) + ("" if n == 1 else f" – {_dice_suffix(n)}")
        sentences = [intro, cast, f"We observe that {subject} is {observation_phrase(values, obs)}.",
                     f"Indeed, {subject} is equal to"]
        q = f"What is the probability that {subject} is equal to {{o}}?"
        out.append(_numeric_item("dice", "observation", title, f"{n}d{f} obs={'+'.join(obs)}", sentences,
                                 values, p, pmf, q))
    return out


# ----------------------------------------------------------------------------- coins
def coin_items(n_coins: tuple[int, ...], biases: tuple[int, ...], variants: tuple[str, ...]) -> list[Item]:
    """Coin items (App. A.2): count of Heads or Tails among ``n`` coins, fair or k× Heads-biased."""
    items: list[Item] = []
    for n in n_coins:
        for k in biases:
            p_heads = k / (k + 1)
            intro = COINS_FAIR.format(n=n) if k == 1 else COINS_BIASED.format(n=n, k=k)
            bias_title = "" if k == 1 else f" {k}x Bias"
            for face in ("Heads", "Tails"):
                pmf = binomial_pmf(n, p_heads if face == "Heads" else 1 - p_heads)
                values = np.arange(n + 1)
                setting = f"{n} coins {k}x {face}"
                stem = f"The coins are flipped and the resulting number of {face} is equal to"
                q = (f"What is the probability that the resulting number of {face} is equal to {{o}} after "
                     "flipping the coins?")
                if "regular" in variants:
                    items.append(_numeric_item("coins", "regular", f"{n} coins Regular{bias_title}", setting,
                                               [intro, stem], values, pmf, pmf, q))
                for prev in (0, n):
                    first = f"The coins are flipped a first time and the resulting number of {face} is {prev}."
                    if "independent" in variants:
                        items.append(_numeric_item(
                            "coins", "independent", f"{n} coins Independent{bias_title}", f"{setting} prev={prev}",
                            [intro, first,
                             f"The coins are flipped again and the resulting number of {face} is equal to"],
                            values, pmf, pmf, q, anchor_value=prev))
                    if "dependent" in variants:
                        q_dep = (f"What is the probability that the total number of {face} showed in the two "
                                 "launches is equal to {o}?")
                        items.append(_numeric_item(
                            "coins", "dependent", f"{n} coins Dependant{bias_title}", f"{setting} first={prev}",
                            [intro, first, f"The coins are flipped again and the total number of {face} showed "
                             "in the two launches is equal to"], values + prev, pmf, pmf, q_dep))
    return items


# ----------------------------------------------------------------------------- choice / preference
def _label_item(scenario: str, variant: str, condition: str, setting: str, sentences: list[str],
                labels: tuple[str, ...], p: np.ndarray, anchor: str | None = None) -> Item:
    return Item(
        scenario, variant, condition, setting, tuple(sentences), labels, tuple(float(x) for x in p),
        tuple(float(x) for x in p), "What is the probability that the person chooses option {o}?",
        marked=tuple(lab in MARKED_LABELS for lab in labels),
        anchor=tuple(lab == anchor for lab in labels),
        round=(False,) * len(labels), mid=(False,) * len(labels),
    )


def _oxford(options: tuple[str, ...]) -> str:
    return options[0] + " and " + options[1] if len(options) == 2 else ", ".join(options[:-1]) + " and " + options[-1]


def choice_items(n_options: tuple[int, ...], variants: tuple[str, ...]) -> list[Item]:
    """Abstract lettered choices (§4.1.3): uniform over k letters; Independent repeats after each
    possible previous choice."""
    items: list[Item] = []
    for k in n_options:
        labels = tuple(LETTERS[:k])
        intro = CHOICE_TEMPLATE.format(k=k, opts=_oxford(labels))
        p = np.full(k, 1.0 / k)
        if "regular" in variants:
            items.append(_label_item("choice", "regular", f"Regular – {k} choices", f"{k} options",
                                     [intro, "The person chooses at random option"], labels, p))
        if "independent" in variants:
            for prev in labels:
                items.append(_label_item(
                    "choice", "independent", f"Independent – {k} choices", f"{k} options prev={prev}",
                    [intro, f"The person first chooses at random option {prev}.",
                     "Then the person performs another random choice and chooses option"], labels, p, prev))
    return items


#: Option orders of the preference items: the marked label (Left / Heads) listed first or second.
PREFERENCE_ORDERS = ("marked-first", "marked-second")


def preference_items(biases: tuple[int, ...], variants: tuple[str, ...],
                     orders: tuple[str, ...] = PREFERENCE_ORDERS) -> list[Item]:
    """Two labelled options (§4.1.4) in the given orders (both by default: the paper's Figure 6
    swap, which separates a label bias from a first-option bias), fair or b× favouring either."""
    items: list[Item] = []
    for a_marked, b_plain in PREFERENCE_PAIRS:
        pairs = {"marked-first": (a_marked, b_plain), "marked-second": (b_plain, a_marked)}
        for order in (pairs[o] for o in orders):
            favours: list[tuple[int, str | None]] = [(1, None)] + [
                (b, x) for b in biases if b > 1 for x in (a_marked, b_plain)]
            for b, fav in favours:
                if fav is None:
                    intro = PREF_FAIR.format(a=order[0], b=order[1])
                    p = np.array([0.5, 0.5])
                else:
                    other = b_plain if fav == a_marked else a_marked
                    intro = PREF_BIASED.format(a=order[0], b=order[1], x=fav, k=b, y=other)
                    p = np.array([b / (b + 1) if lab == fav else 1 / (b + 1) for lab in order])
                bias_title = "" if fav is None else f" {b}x"
                # the paper's rows name the favoured (or, when fair, the marked) label
                head = fav if fav is not None else a_marked
                setting = f"{order[0]}/{order[1]} {'fair' if fav is None else f'{b}x {fav}'}"
                if "regular" in variants:
                    items.append(_label_item("preference", "regular", f"{head}{bias_title}", setting,
                                             [intro, "The person chooses at random option"], order, p))
                if "independent" in variants:
                    for prev in order:
                        items.append(_label_item(
                            "preference", "independent", f"{head} Independent{bias_title}",
                            f"{setting} prev={prev}",
                            [intro, f"The person first chooses at random option {prev}.",
                             "Then the person performs another random choice and chooses option"],
                            order, p, prev))
    return items

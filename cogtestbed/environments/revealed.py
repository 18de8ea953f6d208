"""Revealed belief (RevB) vs stated answer (StaA) on toy probability scenarios.

Source: *Do Large Language Models Exhibit Cognitive Dissonance? Studying the Difference Between
Revealed Beliefs and Stated Answers* (anonymous ACL submission, 2024).  Items and ground truth:
:mod:`cogtestbed.environments.revealed_items`.

Every item is asked on up to two channels, one step each (``design.channels``):

* **RevB** (§3): the context ends where the outcome token comes; the step is a
  :class:`~cogtestbed.environments.base.ScoredResponse` over the outcome labels with a leading
  space (" 3", " Left"), scored on the raw text even for a chat model (``raw=True``: the paper
  probes the next token of the story, no chat template).  An LLM answers with the teacher-forced log-probability of each
  continuation; the recorded distribution is renormalised over the outcome set (the paper's
  ``p_RevB(o) = P(o|ctx) / Σ_o' P(o'|ctx)``) and the raw mass outside the set, 1 − Σ P(o|ctx),
  is recorded (``mass_outside``).  **Terminator rule** (the paper is silent on prefix
  ambiguity): when one outcome label is a prefix of another (" 1" and " 10"), every
  continuation of that item is followed by :data:`TERMINATOR` (". "), so " 1." and " 10." are
  disjoint events; other items are scored without it.
* **StaA** (App. A): the 5-option MCQ in the paper's wording; a chat model gets it as a user
  message (its chat template adds the user/assistant tokens), a completion model as raw text.
  The target outcome, the correct position and the four distractors (from
  :data:`DISTRACTOR_POOL`, values equal to the correct one excluded) are
  drawn per session.  ``staa_mode="scored"``: the step is scored over "[A]".."[E]" (raw and
  renormalised P(option) are both kept); ``"generated"``: the model writes its answer and
  :func:`parse_mcq` reads "[C]" (recorded as a one-hot distribution, ``method="generated"``).

Trial table: one row per step with ``item, scenario, variant, condition, setting, channel,
n_outcomes``, list columns (Arrow ``list`` columns, built without a Python object per row; a cell
reads as a Python list) ``outcomes`` (labels; "A".."E" on StaA rows), ``p_star`` (ground
truth; the one-hot correct answer on StaA rows), ``mcq_values``, ``logprobs`` (as the subject
gave them) and ``probs`` (renormalised), and ``target``, ``correct_option``, ``mass_outside``,
``method`` (exact | sampled | generated) and ``n_samples``.  ``action`` is the index of the most
probable outcome (option).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces
from numba import njit
from pydantic import field_validator, model_validator

from cogtestbed.environments.base import (
    Design,
    Outcomes,
    ParseResult,
    Phase,
    ResponseKind,
    SamplingNote,
    ScoredAnswer,
    ScoredResponse,
    Sessions,
    TextEnv,
    TextResponse,
    uniform_simplex_logprobs,
)
from cogtestbed.environments.draws import permute_rows
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import echo_of_prompt, normalize_numerals
from cogtestbed.environments.revealed_items import (
    MARKED_LABELS,
    MAX_OUTCOMES,
    PAIR_OBSERVATIONS,
    PREFERENCE_ORDERS,
    SCENARIOS,
    SINGLE_OBSERVATIONS,
    VARIANTS,
    Item,
    choice_items,
    coin_items,
    dice_items,
    preference_items,
)
from cogtestbed.errors import InputError
from cogtestbed.interpreted import kernel
from cogtestbed.lapse import random_choice
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.revealed import EXPERIMENT, SCHEMA
from cogtestbed.trials import (
    Column,
    coded_lists,
    finish_table,
    list_offsets,
    lists,
    outcome_columns,
    padded_lists,
    segment_index,
    strings,
)

CHANNELS = ("revb", "staa")
#: Appended to every continuation of a prefix-ambiguous item (see module docstring).
TERMINATOR = "."
#: Distractor values of the MCQ (App. A's printed items; values above 1 included as printed).
DISTRACTOR_POOL = (0.083, 0.125, 0.167, 0.250, 0.500, 0.750, 1.000, 1.500)
MCQ_OPTIONS = "ABCDE"
#: App. A's instruction header, verbatim.
MCQ_HEADER = ("You are given a Scenario, a Question, and a set of possible Answers. Select one Answer as your "
              "reply. The Answers are A, B, C, D, E. Your selected Answer will be contained within square "
              "brackets: [A], [B], [C], [D], [E] and your reply will contain nothing else.")
#: Completions drawn per item where a backend cannot score ([gap]: the paper only scores exact
#: distributions; the sampling noise floor reported for such runs is this project's addition).
DEFAULT_N_SAMPLES = 100
#: E[Chebyshev] a sampled estimate should stay below, and the N suggested to reach it: the smallest
#: shift in P(outcome) this project's detection analysis considers (δ = 0.05; its design notes,
#: ``seeds/004_revealed_belief.md`` §8); a sampling error of that size would hide it.  The paper has
#: neither a detection analysis nor such a target: this is this project's documented default.
SAMPLING_FLOOR_TARGET = 0.05
METHODS = ("exact", "sampled", "generated")


def _split(v: Any) -> Any:
    """``--design scenarios=dice,coins`` arrives as one string."""
    if isinstance(v, str):
        return tuple(x.strip() for x in v.split(",") if x.strip())
    return v


#: The design's grid fields (tuples): a value given twice would ask every matching item twice.
_TUPLE_FIELDS = ("scenarios", "variants", "dice_faces", "n_dice", "observations", "n_coins", "coin_biases",
                 "choice_options", "preference_biases", "preference_orders", "channels")


class RevealedDesign(Design):
    """The item grid and the channels (defaults: the paper's ≈ 500 settings, both channels).

    Any sub-grid is selected by narrowing a field (e.g. ``scenarios=("choice",)``).
    """

    scenarios: tuple[str, ...] = SCENARIOS
    variants: tuple[str, ...] = VARIANTS
    dice_faces: tuple[int, ...] = (4, 6, 8, 10, 12)
    n_dice: tuple[int, ...] = (1, 2, 3)
    #: Observation types; pairs written "smaller+even".
    observations: tuple[str, ...] = SINGLE_OBSERVATIONS + tuple("+".join(p) for p in PAIR_OBSERVATIONS)
    n_coins: tuple[int, ...] = (2, 3)
    coin_biases: tuple[int, ...] = (1, 3, 5)
    choice_options: tuple[int, ...] = (2, 4, 6)
    preference_biases: tuple[int, ...] = (1, 2, 3)
    #: Orders of the preference options (both: β_first and β_label are separately identifiable).
    preference_orders: tuple[str, ...] = PREFERENCE_ORDERS
    channels: tuple[str, ...] = CHANNELS
    staa_mode: Literal["scored", "generated"] = "scored"
    n_samples: int = DEFAULT_N_SAMPLES
    #: Shuffle the item order per session (False: the grid order).
    shuffle: bool = False

    _split_fields = field_validator(*_TUPLE_FIELDS, mode="before")(_split)

    @model_validator(mode="after")
    def _check(self) -> RevealedDesign:
        def sub(name: str, values: tuple[Any, ...], allowed: tuple[Any, ...]) -> None:
            bad = [v for v in values if v not in allowed]
            if bad:
                raise InputError(f"{name}: unknown {bad!r}; choose from {', '.join(map(str, allowed))}")

        for name in _TUPLE_FIELDS:
            values = getattr(self, name)
            twice = sorted({v for v in values if values.count(v) > 1}, key=str)
            if twice:
                raise InputError(f"{name}: {', '.join(map(str, twice))} given twice (every item would be asked twice)")
        sub("scenarios", self.scenarios, SCENARIOS)
        sub("variants", self.variants, VARIANTS)
        sub("channels", self.channels, CHANNELS)
        sub("preference_orders", self.preference_orders, PREFERENCE_ORDERS)
        sub("dice_faces", self.dice_faces, tuple(range(4, 13)))
        sub("n_dice", self.n_dice, (1, 2, 3))
        sub("n_coins", self.n_coins, (1, 2, 3, 4, 5))
        sub("choice_options", self.choice_options, tuple(range(2, 13)))
        return self._check_counts()

    def _check_counts(self) -> RevealedDesign:
        for name in ("coin_biases", "preference_biases"):
            if any(b < 1 for b in getattr(self, name)):
                raise InputError(f"{name}: biases are integers >= 1 (1 = fair)")
        known = set(SINGLE_OBSERVATIONS)
        for o in self.observations:
            if not set(o.split("+")) <= known:
                raise InputError(f"observations: unknown {o!r}; use {', '.join(SINGLE_OBSERVATIONS)} "
                                 "or pairs joined by '+'")
        if not all((self.channels, self.scenarios, self.variants)):
            raise InputError("a design needs at least one scenario, variant and channel")
        if self.n_samples < 1:
            raise InputError("n_samples must be at least 1")
        if not items_for(self):
            raise InputError("this design selects no item")
        return self

    @property
    def items(self) -> tuple[Item, ...]:
        return items_for(self)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_trials(self) -> int:
        return self.n_items * len(self.channels)


_GRID_FIELDS = ("scenarios", "variants", "dice_faces", "n_dice", "observations", "n_coins", "coin_biases",
                "choice_options", "preference_biases", "preference_orders")


def _grid_key(design: RevealedDesign) -> tuple[Any, ...]:
    return tuple(getattr(design, f) for f in _GRID_FIELDS)


def items_for(design: RevealedDesign) -> tuple[Item, ...]:
    """The design's items (cached per grid)."""
    return build_items(*_grid_key(design))


@cache
def build_items(scenarios: tuple[str, ...], variants: tuple[str, ...], dice_faces: tuple[int, ...],
                n_dice: tuple[int, ...], observations: tuple[str, ...], n_coins: tuple[int, ...],
                coin_biases: tuple[int, ...], choice_options: tuple[int, ...],
                preference_biases: tuple[int, ...], preference_orders: tuple[str, ...]) -> tuple[Item, ...]:
    """Every item of a grid, scenario by scenario."""
    out: list[Item] = []
    obs = tuple(tuple(o.split("+")) for o in observations)
    if "dice" in scenarios:
        out += dice_items(dice_faces, n_dice, variants, obs)
    if "coins" in scenarios:
        out += coin_items(n_coins, coin_biases, variants)
    if "choice" in scenarios:
        out += choice_items(choice_options, variants)
    if "preference" in scenarios:
        out += preference_items(preference_biases, variants, preference_orders)
    return tuple(out)


def continuations(item: Item) -> tuple[str, ...]:
    """Scored continuations of a RevB item: leading space, plus the terminator when one label is a
    prefix of another (module docstring)."""
    labels = item.labels
    ambiguous = any(a != b and b.startswith(a) for a in labels for b in labels)
    return tuple(" " + lab + (TERMINATOR if ambiguous else "") for lab in labels)


def format_value(p: float) -> str:
    return f"{p:.3f}"


def render_mcq(item: Item, target: int, values: np.ndarray) -> str:
    """App. A's MCQ text for ``item`` asking about outcome ``target`` with option ``values``."""
    answers = " ".join(f"{MCQ_OPTIONS[j]}) {format_value(v)}" for j, v in enumerate(values))
    question = item.question.format(o=item.labels[target])
    return f"{MCQ_HEADER}\n\nScenario: {item.scenario_text}\n\nQuestion: {question}\n\nAnswers: {answers}"


_MCQ_RE = re.compile(r"\[\s*([A-Ea-e])\s*\]")
_BARE_RE = re.compile(r"^\W*([A-E])\b")


def parse_mcq(text: str) -> ParseResult:
    """The option in "[C]" (first bracketed letter), else a leading bare letter "C)"."""
    text = normalize_numerals(text)
    m = _MCQ_RE.search(text) or _BARE_RE.search(text.strip())
    if m is None:
        return ParseResult.failure(f"no answer [A]-[E] in {text[:40]!r}")
    return ParseResult.success(MCQ_OPTIONS.index(m.group(1).upper()))


def parse_outcome(text: str, labels: tuple[str, ...]) -> ParseResult:
    """A sampled RevB completion → outcome index: its first word must be a label (the longest
    match wins, so "10" is not read as "1")."""
    m = re.match(r"\s*([A-Za-z]+|\d+)", normalize_numerals(text))
    if m is None or m.group(1) not in labels:
        return ParseResult.failure(f"completion {text[:20]!r} starts with no outcome of {', '.join(labels)}")
    return ParseResult.success(labels.index(m.group(1)))


# ----------------------------------------------------------------------------- item arrays
#: Feature rows of an item, in this order (what the dissonant agent's biases act on).
FEATURES = ("first", "marked", "anchor", "round", "mid", "excluded")


def item_features(labels: Any, p_star: Any, prior: Any, anchor: int) -> tuple[np.ndarray, np.ndarray]:
    """(ln prior, feature matrix (len(FEATURES), K)) of one RevB item, from what the trial table
    stores: outcome labels, ground truth, the pre-observation distribution and the anchored
    outcome's index (−1: none).  ``round``: a numeric label that is a non-zero multiple of 10;
    ``mid``: the lower median of a numeric outcome set; ``marked``: Left / Heads."""
    labels = [str(x) for x in labels]
    k = len(labels)
    numeric = all(lab.isdigit() for lab in labels)
    f = np.zeros((len(FEATURES), k))
    f[0, 0] = 1.0
    f[1] = [lab in MARKED_LABELS for lab in labels]
    if anchor >= 0:
        f[2, anchor] = 1.0
    if numeric:
        f[3] = [int(lab) % 10 == 0 and int(lab) != 0 for lab in labels]
        f[4, (k - 1) // 2] = 1.0
    f[5] = np.asarray(p_star, dtype=np.float64) == 0.0
    return np.log(np.asarray(prior, dtype=np.float64)), f


def anchor_index(item: Item) -> int:
    return item.anchor.index(True) if any(item.anchor) else -1


@dataclass(frozen=True)
class ItemArrays:
    """The items as padded arrays for the numba kernels: ``n_outcomes`` (n_items,),
    ``prior_logp`` (n_items, MAX_OUTCOMES) and ``features`` (n_items, len(FEATURES), MAX_OUTCOMES)."""

    n_outcomes: np.ndarray
    prior_logp: np.ndarray
    features: np.ndarray


@cache
def _arrays_cached(key: tuple[Any, ...]) -> ItemArrays:
    items = build_items(*key)
    n = len(items)
    k_of = np.array([it.n_outcomes for it in items], dtype=np.int64)
    base = np.zeros((n, MAX_OUTCOMES))
    feats = np.zeros((n, len(FEATURES), MAX_OUTCOMES))
    for i, it in enumerate(items):
        b, f = item_features(it.labels, it.p_star, it.prior, anchor_index(it))
        base[i, : it.n_outcomes] = b
        feats[i, :, : it.n_outcomes] = f
    return ItemArrays(k_of, base, feats)


def item_arrays(design: RevealedDesign) -> ItemArrays:
    return _arrays_cached(_grid_key(design))


@cache
def _p_star_cached(key: tuple[Any, ...]) -> np.ndarray:
    items = build_items(*key)
    table = np.zeros((len(items), MAX_OUTCOMES))
    for i, it in enumerate(items):
        table[i, : it.n_outcomes] = it.p_star
    return table


def _p_star_table(design: RevealedDesign) -> np.ndarray:
    """Ground truth of every item, padded to (n_items, MAX_OUTCOMES) with zeros."""
    return _p_star_cached(_grid_key(design))


# ----------------------------------------------------------------------------- sessions
@dataclass(frozen=True)
class RevealedSessions(Sessions):
    """Pre-drawn parts of N sessions (first axis: subject; T = n_trials)."""

    item: np.ndarray  # (N, T) int64, index into design.items
    channel: np.ndarray  # (N, T) int64, index into CHANNELS
    target: np.ndarray  # (N, T) int64, outcome asked about in the MCQ
    correct: np.ndarray  # (N, T) int64, position 0-4 of the correct MCQ answer
    mcq_values: np.ndarray  # (N, T, 5) float64, the answers' values in option order


def draw_mcq(p_target: np.ndarray, correct: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Option values (…, 5): the correct value (``p_target`` to 3 decimals) at ``correct``, four pool
    distractors elsewhere, drawn without replacement in random order from the pool values that
    differ from the correct one (vectorised).

    Each question takes the first five entries of a uniform permutation of the pool
    (:func:`~cogtestbed.environments.draws.permute_rows`) and drops the one equal to the correct
    value where it is among them (else the fifth): the remaining four are the first four of a
    uniform permutation of the allowed values.
    """
    pool = np.asarray(DISTRACTOR_POOL)
    right = np.round(p_target, 3).reshape(-1)
    picks = permute_rows(np.broadcast_to(np.arange(len(pool), dtype=np.int8), (len(right), len(pool))), rng, 5)
    out = np.empty((len(right), 5))
    kernel(_mcq_options)(picks, pool, right, correct.reshape(-1).astype(np.int64, copy=False), out)
    return out.reshape(*np.shape(p_target), 5)


@njit(cache=True)
def _mcq_options(picks: np.ndarray, pool: np.ndarray, right: np.ndarray, correct: np.ndarray,
                 out: np.ndarray) -> None:  # pragma: no cover - numba
    """Row r: ``right[r]`` at slot ``correct[r]``, the other slots in order take the first four
    picked pool values that differ from it."""
    for r in range(picks.shape[0]):
        out[r, correct[r]] = right[r]
        slot = 0
        for p in range(picks.shape[1]):
            value = pool[picks[r, p]]
            if value == right[r]:
                continue
            if slot == correct[r]:
                slot += 1
            if slot >= 5:
                break
            out[r, slot] = value
            slot += 1


class AnyResponseSpace(spaces.Space[Any]):
    """The ``response`` entry of the observation: a text step or a scored step over any outcome set."""

    def __init__(self) -> None:
        super().__init__(shape=None, dtype=None)

    def contains(self, x: Any) -> bool:
        return isinstance(x, (TextResponse, ScoredResponse))

    def sample(self, mask: Any = None, probability: Any = None) -> ResponseKind:
        return TextResponse()

    @property
    def is_np_flattenable(self) -> bool:
        return False


# -- prompt forms (cogtestbed.environments.forms): form 0 is the paper's verbatim prompt; the rest
# are this project's rewordings, with every number, answer label and continuation kept.
_FRAME = PromptForm(1, "paraphrase", "ours: the multiple-choice instructions reworded", replacements=(
    ("You are given a Scenario, a Question, and a set of possible Answers. Select one Answer as your reply.",
     "Below are a Scenario, a Question and possible Answers. Choose one of the Answers as your reply."),
    ("Your selected Answer will be contained within square brackets:", "Write the Answer you choose inside square "
     "brackets:"),
    ("and your reply will contain nothing else.", "and write nothing else."),
))
_SCENARIO = PromptForm(2, "paraphrase", "ours: the scenario's sentence on fairness reworded", replacements=(
    ("The die is equally likely to land on any of its faces.", "Every face of the die is equally likely to come up."),
))
_QUESTION = PromptForm(3, "paraphrase", "ours: the question reworded", replacements=(
    ("Question: What is the probability that", "Question: How probable is it that"),
))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _FRAME, _SCENARIO, _QUESTION, "ours: instructions, scenario and question all reworded (forms 1-3)")


class RevealedBeliefEnv(TextEnv[RevealedDesign, RevealedSessions]):
    """The revealed-belief family (see module docstring).

    Observation: ``item``, ``channel`` (0 RevB, 1 StaA), ``n_outcomes``, ``correct`` (StaA),
    ``trial``, ``prior_logp`` and ``features`` (what the dissonant agent reads), ``prompt`` (the
    RevB context, scored raw even on a chat model, or the MCQ) and ``response`` (this step's
    response kind).  ``info`` holds the ground truth ``p_star``.
    """
    lapse_draws: ClassVar[int] = MAX_OUTCOMES  # a random scored answer: one uniform per continuation

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: One-shot items: no feedback, no adaptive design, so lapses apply after the fact.
    answer_independent: ClassVar[bool] = True
    #: The index of the most probable outcome (option) among the item's ``n_outcomes``.
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = RevealedDesign

    def __init__(self, design: RevealedDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        self.action_space = spaces.Discrete(MAX_OUTCOMES)
        self.observation_space = spaces.Dict({
            "item": spaces.Discrete(self.design.n_items),
            "channel": spaces.Discrete(2),
            "n_outcomes": spaces.Discrete(MAX_OUTCOMES + 1),
            "correct": spaces.Discrete(5),
            "trial": spaces.Discrete(self.design.n_trials + 1),
            "prior_logp": spaces.Box(-np.inf, 0.0, shape=(MAX_OUTCOMES,), dtype=np.float64),
            "features": spaces.Box(0.0, 1.0, shape=(len(FEATURES), MAX_OUTCOMES), dtype=np.float64),
            "prompt": self.prompt_space(4000),
        })
        self.declare_phases(*(self._phase(ch) for ch in self.design.channels))
        # RevB continuations differ by item: the observation carries the current item's
        assert isinstance(self.observation_space, spaces.Dict)
        self.observation_space.spaces["response"] = AnyResponseSpace()

    def _phase(self, channel: str) -> Phase:
        """The phase of one channel (RevB's declared continuations are the first RevB item's; each
        observation carries its own item's)."""
        if channel == "revb":
            first = next(it for it in self.design.items)
            return Phase("revb", spaces.Discrete(MAX_OUTCOMES), self._parse_revb,
                         ScoredResponse(continuations(first), self.design.n_samples, raw=True))
        kind: ResponseKind = (ScoredResponse(tuple(f"[{c}]" for c in MCQ_OPTIONS), self.design.n_samples)
                              if self.design.staa_mode == "scored" else TextResponse())
        return Phase("staa", spaces.Discrete(5), parse_mcq, kind)

    def _phase_observation(self) -> dict[str, Any]:
        obs = super()._phase_observation()
        if not self._terminated():
            response = self.response()
            if response is None:
                obs["response"] = TextResponse()
            else:
                obs["response"] = response
        return obs

    @classmethod
    def sampling_note(cls, design: Design) -> SamplingNote | None:
        """The sampling noise floor (this project's addition, not the paper's) at the design's
        ``n_samples`` for each outcome-set size it scores: every RevB item's k, and the 5 MCQ
        options of a scored StaA channel."""
        from cogtestbed.environments.revealed_floor import sampling_floor_note

        assert isinstance(design, RevealedDesign)
        ks = [it.n_outcomes for it in design.items] if "revb" in design.channels else []
        if "staa" in design.channels and design.staa_mode == "scored":
            ks.append(len(MCQ_OPTIONS))
        if not ks:
            return None
        line, detail = sampling_floor_note(ks, design.n_samples, SAMPLING_FLOOR_TARGET)
        return SamplingNote(design.n_samples, line, detail)

    def _parse_revb(self, text: str) -> ParseResult:
        return parse_outcome(text, self.current_item().labels)

    @classmethod
    def sample_sessions(cls, design: RevealedDesign, n: int, rng: np.random.Generator) -> RevealedSessions:
        """Item order (shuffled if asked), MCQ target, correct position and distractors per item."""
        items = design.items
        n_items, n_ch = len(items), len(design.channels)
        # the items in session order; every draw below is per (subject, position)
        order = (permute_rows(np.broadcast_to(np.arange(n_items), (n, n_items)), rng) if design.shuffle
                 else np.broadcast_to(np.arange(n_items), (n, n_items)).copy())
        k_of = np.array([it.n_outcomes for it in items], dtype=np.int64)
        target = np.floor(rng.random((n, n_items)) * k_of.take(order)).astype(np.int64)
        correct = np.floor(rng.random((n, n_items)) * len(MCQ_OPTIONS)).astype(np.int64)
        p_target = _p_star_table(design).reshape(-1).take(order * MAX_OUTCOMES + target)
        values = draw_mcq(p_target, correct, rng)
        # per trial: items in session order, each asked on every channel in turn
        ch_idx = np.array([CHANNELS.index(c) for c in design.channels], dtype=np.int64)
        return RevealedSessions(
            item=np.repeat(order, n_ch, axis=1), channel=np.tile(ch_idx, (n, n_items)),
            target=np.repeat(target, n_ch, axis=1), correct=np.repeat(correct, n_ch, axis=1),
            mcq_values=np.repeat(values, n_ch, axis=1),
        )

    # -- dynamics --------------------------------------------------------------------------
    def _start(self) -> None:
        t = self.max_steps(self.design)
        self.outcomes.extra.update(
            logprobs=np.full((1, t, MAX_OUTCOMES), np.nan), mass_outside=np.full((1, t), np.nan),
            method=np.full((1, t), -1, dtype=np.int64), n_samples=np.zeros((1, t), dtype=np.int64))

    @property
    def _s(self) -> RevealedSessions:
        assert self.session is not None
        return self.session

    def _pos(self) -> int:
        return min(self.t, self.design.n_trials - 1)

    def current_item(self) -> Item:
        return self.design.items[int(self._s.item[0, self._pos()])]

    def current_channel(self) -> str:
        return CHANNELS[int(self._s.channel[0, self._pos()])]

    def n_choices(self) -> int:
        return self.current_item().n_outcomes if self.current_channel() == "revb" else 5

    def random_answer(self, u: np.ndarray) -> Any:
        """A random lapse over this item's ``n_choices`` answers: a distribution drawn uniformly on
        their simplex on a scored step, a uniform option on a text step."""
        k = self.n_choices()
        if self.response() is not None:
            return ScoredAnswer(uniform_simplex_logprobs(np.asarray(u)[:k]))
        return int(kernel(random_choice)(float(u[0]), k))  # interpreted on the interpreted path: nothing compiles

    def response(self) -> ScoredResponse | None:
        """The response kind of the current step (None: a text step)."""
        if self.current_channel() == "revb":
            return ScoredResponse(continuations(self.current_item()), n_samples=self.design.n_samples, raw=True)
        if self.design.staa_mode == "scored":
            return ScoredResponse(tuple(f"[{c}]" for c in MCQ_OPTIONS), n_samples=self.design.n_samples)
        return None

    def _is_no_action(self, action: Any) -> bool:  # type: ignore[override]
        """No answer, or a bare index outside this item's outcome set (the action space is sized
        for the largest set): the latter is recorded as an invalid answer with its reason."""
        if TextEnv._is_no_action(action):
            return True
        if isinstance(action, ScoredAnswer) or self.session is None or self._terminated():
            return False
        if not 0 <= int(action) < self.n_choices():
            self.record_response(None, f"answer {int(action)} is outside the {self.n_choices()} outcomes")
            return True
        return False

    def _action_value(self, action: Any) -> int:
        k = self.n_choices()
        if isinstance(action, ScoredAnswer):
            lp = np.asarray(action.logprobs, dtype=np.float64)
            if lp.shape != (k,):
                raise InputError(f"a scored answer needs {k} log-probabilities, got shape {lp.shape}")
            return int(np.argmax(lp))
        value = int(action)
        if not 0 <= value < k:
            raise InputError(f"invalid answer {action!r}: expected an index in 0..{k - 1}")
        return value

    def _play(self, action: Any) -> float:
        return float("nan")  # no feedback in this task

    def record_scoring(self, method: str, n_samples: int | None) -> None:
        """The step's ``method`` and ``n_samples`` columns, kept when the step ends invalid (a sampled
        step whose samples all failed to parse says ``sampled``, N, not NA)."""
        self.outcomes.extra["method"][0, self.t] = METHODS.index(method)
        self.outcomes.extra["n_samples"][0, self.t] = n_samples or 0

    def _record(self, t: int, action: Any, reward: float) -> None:
        if self._is_no_action(action):
            return
        k = self.n_choices()
        ex = self.outcomes.extra
        if isinstance(action, ScoredAnswer):
            ex["logprobs"][0, t, :k] = action.logprobs
            ex["method"][0, t] = METHODS.index(action.method)
            ex["n_samples"][0, t] = action.n_samples or 0
            if action.mass_outside is not None:
                ex["mass_outside"][0, t] = action.mass_outside
        else:  # a generated MCQ answer: one-hot
            ex["logprobs"][0, t, :k] = np.where(np.arange(k) == int(action), 0.0, -np.inf)
            ex["method"][0, t] = METHODS.index("generated")

    def _observation(self) -> dict[str, Any]:
        done = self.t >= self.design.n_trials
        t = self._pos()
        obs: dict[str, Any] = {
            "item": int(self._s.item[0, t]),
            "channel": int(self._s.channel[0, t]),
            "n_outcomes": self.current_item().n_outcomes,
            "correct": int(self._s.correct[0, t]),
            "trial": self.t,
            "prompt": "(session finished)" if done else self.render_prompt(),
        }
        # the item's RevB inputs, padded to MAX_OUTCOMES (the first n_outcomes entries are used)
        arrays = item_arrays(self.design)
        obs["prior_logp"] = arrays.prior_logp[obs["item"]].copy()
        obs["features"] = arrays.features[obs["item"]].copy()
        return obs

    def _info(self) -> dict[str, Any]:
        item = self.current_item()
        return {"trial": self.t, "p_star": np.asarray(item.p_star), "condition": item.condition,
                "target": int(self._s.target[0, self._pos()])}

    # -- rendering and parsing -------------------------------------------------------------
    def render_prompt(self) -> str:
        item = self.current_item()
        if self.current_channel() == "revb":
            return item.context
        t = self._pos()
        return render_mcq(item, int(self._s.target[0, t]), self._s.mcq_values[0, t])

    def parse(self, text: str) -> ParseResult:
        """StaA: the bracketed option; RevB (a sampled completion): the outcome it starts with."""
        if self.current_channel() == "staa":  # an echo of the answer list is no answer
            return echo_of_prompt(text, self.shown_prompt(), tuple(MCQ_OPTIONS)) or parse_mcq(text)
        return parse_outcome(text, self.current_item().labels)

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: RevealedDesign, sessions: RevealedSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per step (columns in the module docstring)."""
        items = design.items
        item, channel = sessions.item, sessions.channel
        n, t = item.shape
        attrs = {a: np.array([getattr(it, a) for it in items]) for a in ("scenario", "variant", "condition",
                                                                          "setting")}
        k_of = np.array([it.n_outcomes for it in items])
        stimulus: dict[str, Any] = {"item": item}
        for a, values in attrs.items():
            cats = sorted(set(values.tolist()))
            codes = np.searchsorted(np.array(cats), values)
            stimulus[a] = pd.Categorical.from_codes(codes[item].reshape(-1), categories=cats)
        stimulus["channel"] = pd.Categorical.from_codes(channel.reshape(-1), categories=list(CHANNELS))
        stimulus["n_outcomes"] = np.where(channel == 0, k_of[item], 5)
        stimulus["anchor"] = np.where(channel == 0, np.array([anchor_index(it) for it in items])[item], -1)
        stimulus["target"] = sessions.target
        stimulus["correct_option"] = sessions.correct
        ex = outcomes.extra
        lp = ex.get("logprobs", np.full((n, t, MAX_OUTCOMES), np.nan)).reshape(n * t, -1)
        method = ex.get("method", np.full((n, t), -1)).reshape(-1)
        stimulus.update(_list_columns(design, item.reshape(-1), channel.reshape(-1), sessions.correct.reshape(-1),
                                      sessions.mcq_values.reshape(n * t, 5), lp, (n, t)))
        stimulus["mass_outside"] = ex.get("mass_outside", np.full((n, t), np.nan))
        stimulus["method"] = (pd.Categorical.from_codes(method, categories=list(METHODS)) if (method >= 0).all()
                              else strings(np.where(method >= 0, method, len(METHODS)), (*METHODS, None)))
        stimulus["n_samples"] = ex.get("n_samples", np.zeros((n, t), dtype=np.int64))
        return finish_table(EXPERIMENT, {**stimulus, **outcome_columns(outcomes)}, agent=agent, params=params)


def _list_columns(design: RevealedDesign, item: np.ndarray, channel: np.ndarray, correct: np.ndarray,
                  values: np.ndarray, lp: np.ndarray, shape: tuple[int, int]) -> dict[str, Column]:
    """The list columns, columnar (:func:`~cogtestbed.trials.lists`, :func:`~cogtestbed.trials.coded_lists`,
    no Python object per row): outcome labels, ground
    truth, prior (per item on RevB rows; the options, the one-hot correct answer and no prior on
    StaA rows), MCQ values (StaA rows), log-probabilities and probabilities (renormalised a group
    of equally long rows at a time)."""
    items = design.items
    n_items = len(items)
    revb = channel == 0
    k = np.where(revb, np.array([it.n_outcomes for it in items])[item], len(MCQ_OPTIONS))
    eye = tuple(tuple(float(x) for x in row) for row in np.eye(len(MCQ_OPTIONS)))
    staa_code = np.where(revb, item, n_items).reshape(shape)
    out: dict[str, Column] = {
        "outcomes": coded_lists(staa_code, (*(it.labels for it in items), tuple(MCQ_OPTIONS))),
        "p_star": coded_lists(np.where(revb, item, n_items + correct).reshape(shape),
                              (*(tuple(it.p_star) for it in items), *eye)),
        "prior": coded_lists(staa_code, (*(tuple(it.prior) for it in items), ())),
        "mcq_values": lists(values[~revb].reshape(-1), list_offsets(np.where(revb, 0, len(MCQ_OPTIONS)))),
    }
    values, offsets = padded_lists(lp, k)
    out["logprobs"] = lists(values, offsets)
    out["probs"] = lists(normalise_logprobs_segments(values, offsets), offsets)
    return out


def normalise_logprobs_segments(lp: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """:func:`normalise_logprobs_rows` of every row of a list column (row i:
    ``lp[offsets[i]:offsets[i + 1]]``): the values gathered once with rows of equal length side by
    side, each such block normalised as one 2-D array (so every row gets exactly the arithmetic of
    :func:`normalise_logprobs`), and scattered back."""
    lengths = np.diff(offsets)
    sizes = np.unique(lengths)
    order = np.concatenate([np.flatnonzero(lengths == kk) for kk in sizes]) if len(sizes) else lengths
    grouped_lengths = lengths.take(order)
    grouped_offsets = list_offsets(grouped_lengths)
    starts = offsets[:-1].take(order)
    index = segment_index(starts, grouped_lengths, grouped_offsets)
    grouped = lp[index]
    start = 0
    for kk in sizes:
        stop = start + int(kk) * int(np.count_nonzero(lengths == kk))
        block = grouped[start:stop].reshape(-1, int(kk))
        grouped[start:stop] = normalise_logprobs_rows(block).reshape(-1)
        start = stop
    out = np.empty_like(lp)
    out[index] = grouped
    return out


def normalise_logprobs_rows(lp: np.ndarray) -> np.ndarray:
    """:func:`normalise_logprobs` of every row of a 2-D array (the same arithmetic row by row)."""
    lp = np.asarray(lp, dtype=np.float64)
    if lp.shape[1] == 0:
        return np.full(lp.shape, np.nan)
    top = lp.max(axis=1, initial=-np.inf)
    ok = np.isfinite(top)  # a NaN anywhere makes the maximum NaN: an unanswered step
    if ok.all():  # every row answered: no row to leave out
        w = lp - top[:, None]
        np.exp(w, out=w)
        w /= np.add.reduce(w, axis=1, keepdims=True)
        return w
    out = np.full(lp.shape, np.nan)
    w = np.exp(lp[ok] - top[ok, None])
    out[ok] = w / np.add.reduce(w, axis=1, keepdims=True)
    return out


def normalise_logprobs(lp: np.ndarray) -> np.ndarray:
    """exp(lp) renormalised (log-sum-exp); all NaN for an unanswered step."""
    lp = np.asarray(lp, dtype=np.float64)
    if np.isnan(lp).any() or not np.isfinite(np.max(lp)):
        return np.full(lp.shape, np.nan)
    w = np.exp(lp - np.max(lp))
    return w / w.sum()

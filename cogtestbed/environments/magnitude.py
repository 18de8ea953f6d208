"""Magnitude estimation (BayesBench): Ma, Wang & Fountas (2025), "Emergent Bayesian behaviour and
optimal cue combination in LLMs", arXiv:2512.02719, Sec. 3 and App. A.3.

Psychophysics identity mapping: on every trial the subject sees a stimulus of magnitude ``x`` and
answers ``y ≈ x``.  Four tasks (Fig. 2): marker location, line-length ratio, maze distance (the
Euclidean start–end distance of a non-self-intersecting path) and dialogue duration.  Each task
has three sessions (short / medium / long) whose stimuli are drawn uniformly from overlapping
ranges.  Every call is stateless, so each prompt carries the system prompt, the last ``k`` trials of
the current session as alternating user (stimulus) and assistant (the subject's own answer) chat
turns, and the current stimulus — as text, as an image, or both (duration is text only).

One *session* of the trial table (column ``session``) is one block (task, condition, modality,
range) of ``trials_per_session`` trials; the history resets between blocks.  A block's stimuli are
shared by all modalities and conditions of the same (task, range) — the paired design the
cue-combination fits need (the multimodal answer is modelled from the unimodal answers to the same
stimulus, Sec. 3.3) — and ``order-reversal`` plays them in reverse.

Columns of the trial table: ``task, condition, modality, range, x, range_low, range_high, blur,
context, render_seed`` plus the standard outcome columns (``action`` = the numeric answer).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from gymnasium import spaces
from pydantic import Field, field_validator, model_validator

from cogtestbed.environments import magnitude_stimuli as stim
from cogtestbed.environments.adaptive import DESIGN_COLUMN, AdaptiveFields, chooser_for, is_adaptive
from cogtestbed.environments.base import Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import read_number
from cogtestbed.errors import InputError
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.magnitude import (
    BCS_ABLATIONS,
    CONDITIONS,
    EXPERIMENT,
    MODALITIES,
    NUMERICAL_BIAS,
    RANGES,
    SCHEMA,
    TASK_NAMES,
    VALID_ANSWERS,
)
from cogtestbed.trials import finish_table, outcome_columns

#: Default conditions a subject plays: the base experiment and the five BCS ablations.
DEFAULT_CONDITIONS = ("base", *BCS_ABLATIONS)

#: [gap] default history window (the numerical-steering prompt speaks of 10 observations).
DEFAULT_CONTEXT = 10
#: Windows of the short- and long-context ablations (App. A.3).
SHORT_CONTEXT, LONG_CONTEXT = 3, 20
#: [gap] blur σ (pixels) of the constant-noise ablation, and the final σ of the gradual ablation's
#: linear ramp from 0 (Fig. 12 shows blur rising over trials; the levels are not given).
BLUR_CONSTANT = 2.0
BLUR_GRADUAL_MAX = 4.0
#: Observations the numerical-steering prompt summarises: "the numeric range of the past ten
#: observations" (App. A.3.1), whose example reads "For 10 previous observations, the values were
#: observed to lie in the range of 0.1 to 0.3."
STEERING_WINDOW = 10
#: [gap] the paper does not say what the numerical prompt states before ten observations exist.
#: This project states the true count ("For 3 previous observations, ..."; "observation" when one)
#: and, on a session's first trial, where there is no observation to summarise, keeps only the
#: noise sentence ("The given data is noisy and may contain artifacts.").  From the eleventh trial
#: on the sentence is the paper's, word for word.
STEERING_FIRST_TRIALS = "true count; noise sentence only before the first observation"
#: App. A.3.1's sentences, verbatim (the numbers filled by :func:`steering_number`).
STEERING_NOISE = "The given data is noisy and may contain artifacts."
STEERING_VERBAL = ("You should behave like a Bayesian observer and take into account prior and likelihood in "
                   "your predictions.")
STEERING_RANGE = "For {n} previous {observations}, the values were observed to lie in the range of {lo} to {hi}."
#: [gap] trials per session (the paper gives none; the BCS power analysis favours ≥ 50).
DEFAULT_TRIALS = 50
#: [gap] candidate stimuli of an adaptive session (ours): 11 positions u = (x − a)/W evenly
#: spaced over the session range [a, a + W], its ends included (the paper draws stimuli uniformly from
#: the range, Sec. 3.1: an adaptive session asks within the same range).
ADAPTIVE_STIMULI: tuple[float, ...] = tuple(float(v) for v in np.linspace(0.0, 1.0, 11))
#: Conditions an adaptive session cannot play: order reversal *is* the fixed stimulus order reversed.
NOT_ADAPTIVE_CONDITIONS = ("order-reversal",)

#: Steering codes carried by the observation (0 none, 1 verbal, 2 numerical, 3 biased numerical).
STEER_NONE, STEER_VERBAL, STEER_NUMERICAL, STEER_BIASED = 0, 1, 2, 3
#: Duration units other than seconds that an answer may name (the instruction asks for seconds).
_DURATION_UNITS = {"min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0, "ms": 1e-3,
                   "millisecond": 1e-3, "milliseconds": 1e-3}


@dataclass(frozen=True)
class TaskSpec:
    """One task: its role sentence, answer instruction, session ranges and valid answers."""

    name: str
    role: str
    instruction: str
    ranges: Mapping[str, tuple[float, float]]
    valid: tuple[float, float]
    visual: bool
    #: Whether "30%" reads as 0.30 (unit-interval answers).
    percent: bool = False
    fmt: str = "{:.2f}"


#: [gap] session ranges: width 0.4 of the task span with overlapping neighbours (the paper shows
#: only Fig. 5); maze distances in path units, durations in seconds.
#: (The order of :data:`~cogtestbed.tables.magnitude.TASK_NAMES`; valid answers from the tables module.)
TASKS: dict[str, TaskSpec] = {
    "marker-location": TaskSpec(
        "marker-location", "marker location estimator",
        "Estimate the position of the marker along the line as a decimal number between 0 (left "
        "end) and 1 (right end).",
        {"short": (0.05, 0.45), "medium": (0.3, 0.7), "long": (0.55, 0.95)},
        VALID_ANSWERS["marker-location"], True, True),
    "line-ratio": TaskSpec(  # the paper's verbatim example prompt (Sec. 3.1)
        "line-ratio", "line-length ratio estimator",
        "Estimate the ratio of the shorter line to the longer line as a decimal number between 0 "
        "and 1.",
        {"short": (0.05, 0.45), "medium": (0.3, 0.7), "long": (0.55, 0.95)},
        VALID_ANSWERS["line-ratio"], True, True),
    "maze-distance": TaskSpec(
        "maze-distance", "maze distance estimator",
        "Estimate the straight-line (Euclidean) distance between the start and the end of the path, "
        "in units, as a decimal number.",
        {"short": (2.0, 6.0), "medium": (4.0, 8.0), "long": (6.0, 10.0)}, VALID_ANSWERS["maze-distance"], True),
    "duration": TaskSpec(
        "duration", "dialogue duration estimator",
        "Estimate how many seconds the following meeting dialogue extract lasts when spoken, as a "
        "decimal number.",
        {"short": (2.0, 10.0), "medium": (6.0, 14.0), "long": (10.0, 18.0)}, VALID_ANSWERS["duration"], False,
        fmt="{:.1f}"),
}
DO_NOT_REASON = "Do not explain or reason. Only output the final answer."


@dataclass(frozen=True)
class Block:
    """One session of trials: a (task, condition, modality, range) cell."""

    task: str
    condition: str
    modality: str
    range: str

    @property
    def context(self) -> int:
        return {"context-short": SHORT_CONTEXT, "context-long": LONG_CONTEXT}.get(self.condition, -1)

    @property
    def steering(self) -> int:
        return {"verbal": STEER_VERBAL, "numerical": STEER_NUMERICAL,
                "numerical-biased": STEER_BIASED}.get(self.condition, STEER_NONE)


@lru_cache(maxsize=64)
def _blocks(tasks: tuple[str, ...], conditions: tuple[str, ...], modalities: tuple[str, ...],
            ranges: tuple[str, ...]) -> tuple[Block, ...]:
    return tuple(Block(t, c, m, r) for t in tasks for c in conditions
                 for m in modalities if TASKS[t].visual or m == "text" for r in ranges)


def _tuple(v: Any) -> Any:
    if isinstance(v, str):
        return tuple(s.strip() for s in v.split(",") if s.strip())
    return v


class MagnitudeDesign(Design, AdaptiveFields):
    """A BayesBench design (defaults for the paper's gaps, Ma et al. 2025 §3, App. A.3).

    ``adaptive`` / ``trials``: every block plays ``trials`` trials (``trials_per_session`` =
    ``trials``) whose stimuli are chosen from :data:`ADAPTIVE_STIMULI` of the block's range, each for
    information on the named static-Bayes parameters (one posterior over the subject's blocks, as the
    model's fit shares them).

    Documented defaults where the paper is silent:

    * ``trials_per_session`` = DEFAULT_TRIALS (50); history window ``context`` = 10 (3 / 20 in the
      context ablations); history as alternating user / assistant chat turns;
    * session ranges per task: :data:`TASKS` (overlapping uniform ranges of width 0.4 of the task
      span: marker and ratio U[.05,.45], U[.3,.7], U[.55,.95]; maze U[2,6], U[4,8], U[6,10] units;
      duration U[2,10], U[6,14], U[10,18] s);
    * blur: Gaussian, σ = BLUR_CONSTANT = 2 px (constant noise), a linear ramp 0 → BLUR_GRADUAL_MAX
      = 4 px over the session (gradual noise); blur touches images only;
    * numerical steering states the min–max of the previous STEERING_WINDOW = 10 stimuli, numbers
      at the task's precision without trailing zeros ("0.1 to 0.3", as App. A.3.1 writes them);
      before ten observations exist it states the true count, and on a session's first trial only
      the noise sentence (:data:`STEERING_FIRST_TRIALS`); the biased version moves the stated
      range up by NUMERICAL_BIAS = 0.5 W;
    * ASCII resolution 50 cells, images 224 px (:mod:`magnitude_stimuli`); maze path of 8
      segments; dialogue from the documented speaking-rate model, or AMI extracts
      (``duration_corpus``: a directory of AMI ``*.words.xml`` files);
    * block order fixed: task, condition, modality, range (each block an independent context);
    * parsing: :func:`parse_magnitude` (the answer's one number, a labelled answer first, echoes of
      the stimulus never, several numbers never, digits of any script as ASCII); it must lie in the task's
      valid range; "30%" reads as 0.30 for unit-interval tasks; anything else is invalid with a reason.
    """

    task: str = Field("all", description="one of TASKS, or 'all' (the four tasks in turn)")
    conditions: tuple[str, ...] = DEFAULT_CONDITIONS
    modalities: tuple[str, ...] = MODALITIES
    ranges: tuple[str, ...] = RANGES
    trials_per_session: int = Field(DEFAULT_TRIALS, ge=1)
    context: int = Field(DEFAULT_CONTEXT, ge=0)
    blur_constant: float = Field(BLUR_CONSTANT, ge=0.0, allow_inf_nan=False)
    blur_gradual_max: float = Field(BLUR_GRADUAL_MAX, ge=0.0, allow_inf_nan=False)
    numerical_bias: float = Field(NUMERICAL_BIAS, allow_inf_nan=False)
    duration_corpus: str | None = None

    _split = field_validator("conditions", "modalities", "ranges", mode="before")(_tuple)

    @model_validator(mode="before")
    @classmethod
    def _adaptive_length(cls, data: Any) -> Any:
        """An adaptive design's blocks are ``trials`` long (a ``trials_per_session`` other than the
        default and ``trials`` is refused)."""
        if isinstance(data, dict) and data.get("adaptive") and data.get("trials"):
            given = data.get("trials_per_session")
            if given is not None and int(given) not in (int(data["trials"]), DEFAULT_TRIALS):
                raise InputError(f"an adaptive magnitude session plays trials={data['trials']} per block: "
                                 f"trials_per_session={given} contradicts it")
            data = {**data, "trials_per_session": data["trials"]}
        return data

    @model_validator(mode="after")
    def _check(self) -> MagnitudeDesign:
        if self.task != "all" and self.task not in TASKS:
            raise InputError(f"unknown task {self.task!r}; choose one of: all, {', '.join(TASKS)}")
        for name, values, known in (("condition", self.conditions, CONDITIONS),
                                    ("modality", self.modalities, MODALITIES),
                                    ("range", self.ranges, RANGES)):
            if not values:
                raise InputError(f"a design needs at least one {name}")
            bad = [v for v in values if v not in known]
            if bad or len(set(values)) != len(values):
                raise InputError(f"{name}s must be distinct values of {', '.join(known)}; got {values}")
        if not self.blocks:
            raise InputError("no block to play: the duration task has only the text modality")
        self._check_adaptive()
        check_subject_memory(self)
        return self

    def _check_adaptive(self) -> None:
        if bool(self.adaptive) != (self.trials > 0):
            raise InputError("an adaptive session needs both adaptive parameters and trials >= 1 "
                             f"(got adaptive={list(self.adaptive)}, trials={self.trials})")
        fixed = [c for c in self.conditions if c in NOT_ADAPTIVE_CONDITIONS]
        if self.adaptive and fixed:
            raise InputError(f"an adaptive magnitude session cannot play {', '.join(fixed)}: it is the fixed "
                             "stimulus order reversed, and an adaptive session has no fixed order (drop it from "
                             "conditions)")

    @property
    def tasks(self) -> tuple[str, ...]:
        return TASK_NAMES if self.task == "all" else (self.task,)

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The sessions a subject plays, in order (duration only in the text modality)."""
        return _blocks(self.tasks, self.conditions, self.modalities, self.ranges)

    @property
    def n_trials(self) -> int:
        return len(self.blocks) * self.trials_per_session

    def block_context(self, block: Block) -> int:
        return self.context if block.context < 0 else block.context


#: Bytes one trial of one subject takes while it is simulated: its stimulus and render seed (16)
#: and three working copies (``memory.MEMORY_COPIES``) of its trial-table row (136 B measured
#: on the default design: ``simulate(...).memory_usage(deep=True).sum() / len(table)``).
TRIAL_BYTES = 16 + 3 * 136


def check_subject_memory(design: MagnitudeDesign) -> None:
    """Refuse, before anything is allocated, a design one subject of which would not fit in the
    memory available now (``trials_per_session`` × blocks × :data:`TRIAL_BYTES`)."""
    from cogtestbed.memory import check_memory

    check_memory(design.n_trials * TRIAL_BYTES,
                 f"one magnitude subject ({len(design.blocks)} blocks × {design.trials_per_session} trials)",
                 hint="use fewer trials_per_session")


@dataclass(frozen=True)
class MagnitudeSessions(Sessions):
    """Stimuli of ``n`` subjects: ``x`` and ``render_seed`` of shape (n, tasks, ranges, trials)."""

    x: np.ndarray
    render_seed: np.ndarray


def sample_stimuli(design: MagnitudeDesign, n: int, rng: np.random.Generator) -> MagnitudeSessions:
    """Uniform stimuli per (task, range) and a render seed per stimulus (Sec. 3.1).

    AMI-duration values are replaced by the exact duration of the cut extract."""
    shape = (n, len(design.tasks), len(design.ranges), design.trials_per_session)
    lo = np.array([[TASKS[t].ranges[r][0] for r in design.ranges] for t in design.tasks])
    hi = np.array([[TASKS[t].ranges[r][1] for r in design.ranges] for t in design.tasks])
    x = lo[None, :, :, None] + (hi - lo)[None, :, :, None] * rng.random(shape)
    seeds = rng.integers(0, 2**62, size=shape, dtype=np.int64)
    for k, task in enumerate(design.tasks):
        if task == "duration" and design.duration_corpus is not None:
            corpus = stim.ami_corpus(design.duration_corpus)
            sub = x[:, k]
            for idx in np.ndindex(sub.shape):
                words = stim.ami_extract(corpus, float(sub[idx]), int(seeds[:, k][idx]))
                sub[idx] = stim.extract_duration(words)
    return MagnitudeSessions(x=x, render_seed=seeds)


@dataclass(frozen=True)
class Schedule:
    """Per-step design quantities, arrays of shape (n_steps,) shared by every subject (read-only).

    ``slot`` indexes a subject's stimuli flattened over (task, range, trial): step ``s`` shows
    stimulus ``slot[s]`` (reversed within a block under ``order-reversal``).  ``starts`` holds the
    first step of every block and, last, ``n_steps``: within a block every quantity but ``trial``,
    ``slot`` and ``blur`` (the gradual-noise ramp) is constant.
    """

    block: np.ndarray
    trial: np.ndarray
    task: np.ndarray
    range: np.ndarray
    slot: np.ndarray
    low: np.ndarray
    high: np.ndarray
    blur: np.ndarray
    context: np.ndarray
    steering: np.ndarray
    modality: np.ndarray
    condition: np.ndarray
    starts: np.ndarray


@lru_cache(maxsize=32)
def block_schedule(design: MagnitudeDesign) -> Schedule:
    """The :class:`Schedule` of a design (cached: a design is frozen, the arrays read-only)."""
    T = design.trials_per_session
    blocks = design.blocks
    t = np.arange(T)

    def per_block(values: list[Any], dtype: Any) -> np.ndarray:
        return np.repeat(np.asarray(values, dtype=dtype), T)

    def blur(blk: Block) -> np.ndarray:
        image = blk.modality != "text"
        if blk.condition == "noise-constant" and image:
            return np.full(T, design.blur_constant)
        if blk.condition == "noise-gradual" and image:
            return design.blur_gradual_max * t / max(T - 1, 1)
        return np.zeros(T)

    task = per_block([design.tasks.index(b.task) for b in blocks], np.int64)
    rng = per_block([design.ranges.index(b.range) for b in blocks], np.int64)
    slot_t = np.concatenate([t[::-1] if b.condition == "order-reversal" else t for b in blocks])
    schedule = Schedule(
        block=per_block(list(range(len(blocks))), np.int64), trial=np.tile(t, len(blocks)).astype(np.int64),
        task=task, range=rng, slot=(task * len(design.ranges) + rng) * T + slot_t,
        low=per_block([TASKS[b.task].ranges[b.range][0] for b in blocks], np.float64),
        high=per_block([TASKS[b.task].ranges[b.range][1] for b in blocks], np.float64),
        blur=np.concatenate([blur(b) for b in blocks]).astype(np.float64),
        context=per_block([design.block_context(b) for b in blocks], np.int64),
        steering=per_block([b.steering for b in blocks], np.int64),
        modality=per_block([MODALITIES.index(b.modality) for b in blocks], np.int64),
        condition=per_block([CONDITIONS.index(b.condition) for b in blocks], np.int64),
        starts=np.arange(len(blocks) + 1, dtype=np.int64) * T)
    for f in fields(schedule):
        getattr(schedule, f.name).flags.writeable = False
    return schedule


@dataclass(frozen=True)
class StepArrays:
    """The stimulus stream of ``n`` subjects: ``x`` and ``render_seed`` of shape (n, n_steps)
    (fresh arrays) and the design's per-step :class:`Schedule`."""

    x: np.ndarray
    render_seed: np.ndarray
    schedule: Schedule

    def value(self, name: str, step: int) -> Any:
        """Quantity ``name`` (``x``, ``render_seed`` or a :class:`Schedule` field) of subject 0 at ``step``."""
        if name in ("x", "render_seed"):
            return getattr(self, name)[0, step]
        return getattr(self.schedule, name)[step]


def subject_stimuli(sessions: MagnitudeSessions) -> tuple[np.ndarray, np.ndarray]:
    """(x, render_seed) of every subject flattened over (task, range, trial): shape (n, slots),
    the stimuli :attr:`Schedule.slot` indexes (views, not copies)."""
    n = sessions.n_subjects
    return (np.ascontiguousarray(sessions.x, dtype=np.float64).reshape(n, -1),
            np.ascontiguousarray(sessions.render_seed, dtype=np.int64).reshape(n, -1))


def step_arrays(design: MagnitudeDesign, sessions: MagnitudeSessions) -> StepArrays:
    """The per-step stimulus stream every subject meets (the step path and the table)."""
    schedule = block_schedule(design)
    x, seeds = subject_stimuli(sessions)
    return StepArrays(x=np.take(x, schedule.slot, axis=1), render_seed=np.take(seeds, schedule.slot, axis=1),
                      schedule=schedule)


def parse_magnitude(text: str, task: str, sources: tuple[str, ...] = ()) -> ParseResult:
    """The answer's number, if it lies in the task's valid range (else a reason).

    BayesBench asks for "only the final numeric estimate (with minimal text if necessary)" (Ma et al.
    2025, App. A.2.2) and states no parsing rule; this project reads the answer's one number with
    :func:`~cogtestbed.environments.parsing.read_number`, as every experiment does: digits of any
    script are read as ASCII (``０．３５`` is 0.35); a labelled answer ("Answer: 0.3") wins over
    earlier numbers; an echoed picture or a line of the stimulus or instructions (``sources``) is no
    answer (only an echo: invalid, "the answer repeats the stimulus"; SmolLM2-135M echoes the ASCII
    picture it was shown); several numbers (``1. 0.52``, ``1 min 30 s``) are no answer; a dash run is
    no minus sign.  Then "30%" is 0.30 for unit-interval tasks, a duration in minutes or milliseconds is
    converted to seconds, and the value must lie in the task's valid range.
    """
    spec = TASKS[task]
    read = read_number(text, sources)
    if read.value is None:
        return ParseResult.failure(str(read.reason))
    value = read.value
    if read.percent:
        if not spec.percent:
            return ParseResult.failure(f"a percentage ({read.text}) is not a {task} answer")
        value /= 100.0
    elif task == "duration" and read.unit in _DURATION_UNITS:
        value *= _DURATION_UNITS[read.unit]
    lo, hi = spec.valid
    if not (np.isfinite(value) and lo <= value <= hi):
        what = "labelled answer" if read.labelled else "number"
        return ParseResult.failure(f"{what} {value:g} outside the valid range [{lo:g}, {hi:g}]")
    return ParseResult.success(value)


def steering_number(value: float, task: str) -> str:
    """A number of the numerical-steering sentence as the paper writes it: the task's precision
    without trailing zeros ("0.1 to 0.3", App. A.3.1; not "0.10 to 0.30")."""
    text = TASKS[task].fmt.format(value)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def system_prompt(task: str, steering: int, recent: np.ndarray | None = None, bias: float = 0.0) -> str:
    """System prompt of Sec. 3.1 / App. A.2.2 and A.3.1 (role, steering sentences, answer format).

    ``recent``: the previous stimuli of the session, at most :data:`STEERING_WINDOW` (numerical
    steering states their min–max and their count, :data:`STEERING_FIRST_TRIALS`); ``bias``: the
    shift of the stated range (biased version).
    """
    spec = TASKS[task]
    head = f"You are a {spec.role}."
    if steering == STEER_VERBAL:
        head += f" {STEERING_NOISE} {STEERING_VERBAL}"
    elif steering in (STEER_NUMERICAL, STEER_BIASED):
        head += f" {STEERING_NOISE}"
        if recent is not None and len(recent):
            n = len(recent)
            lo, hi = float(np.min(recent)) + bias, float(np.max(recent)) + bias
            head += " " + STEERING_RANGE.format(n=n, observations="observation" if n == 1 else "observations",
                                                lo=steering_number(lo, task), hi=steering_number(hi, task))
    return f"{head} {spec.instruction} {DO_NOT_REASON}"


def stimulus_text(task: str, x: float, seed: int, corpus: str | None = None) -> str:
    """The text rendering of one stimulus (Fig. 2, text mode)."""
    if task == "marker-location":
        return stim.marker_text(x)
    if task == "line-ratio":
        return stim.ratio_text(x, seed)
    if task == "maze-distance":
        return stim.maze_text(stim.maze_path(x, seed))
    return stim.dialogue_text(duration_words(x, seed, corpus))


def duration_words(x: float, seed: int, corpus: str | None = None) -> tuple[stim.Word, ...]:
    if corpus is None:
        return stim.dialogue_extract(x, seed)
    return stim.ami_extract(stim.ami_corpus(corpus), x, seed)


def stimulus_image(task: str, x: float, seed: int, blur: float = 0.0) -> bytes:
    """The PNG rendering of one stimulus (Fig. 2, image mode) with Gaussian blur σ = ``blur`` px."""
    if task == "marker-location":
        return stim.marker_image(x, seed, blur)
    if task == "line-ratio":
        return stim.ratio_image(x, seed, blur)
    if task == "maze-distance":
        return stim.maze_image(stim.maze_path(x, seed), blur)
    raise InputError(f"the {task} task has no image modality")


def _real(v: Any) -> np.ndarray:
    """A real observation entry as the 0-d float64 array its Box space holds."""
    return np.asarray(v, dtype=np.float64)


class ImagesSpace(spaces.Space[tuple[bytes, ...]]):
    """Gymnasium space of a tuple of PNG images (bytes)."""

    def __init__(self) -> None:
        super().__init__(shape=None, dtype=None)

    def contains(self, x: Any) -> bool:
        return isinstance(x, tuple) and all(isinstance(b, bytes) and b[:8] == b"\x89PNG\r\n\x1a\n" for b in x)

    def sample(self, mask: Any = None, probability: Any = None) -> tuple[bytes, ...]:
        return (stim.marker_image(float(self.np_random.random()), int(self.np_random.integers(2**31))),)

    @property
    def is_np_flattenable(self) -> bool:
        return False


class ChatSpace(spaces.Space[list[dict[str, Any]]]):
    """Gymnasium space of a chat prompt: messages with a role, text content and optional images."""

    def __init__(self) -> None:
        super().__init__(shape=None, dtype=None)
        self._images = ImagesSpace()

    def contains(self, x: Any) -> bool:
        return isinstance(x, list) and len(x) > 0 and all(
            isinstance(m, dict) and m.get("role") in ("system", "user", "assistant")
            and isinstance(m.get("content"), str) and self._images.contains(tuple(m.get("images", ())))
            for m in x)

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, Any]]:
        return [{"role": "user", "content": f"{self.np_random.random():.3f}"}]

    @property
    def is_np_flattenable(self) -> bool:
        return False


# -- prompt forms (cogtestbed.environments.forms): form 0 is the paper's verbatim system message;
# the rest are this project's rewordings of it, with the scale (0 left end, 1 right end) kept.
_ROLE = PromptForm(1, "paraphrase", "ours: the role sentence reworded", replacements=(
    ("You are a marker location estimator.", "Your job is to locate markers on lines."),
))
_TASK = PromptForm(2, "paraphrase", "ours: the estimation instruction reworded", replacements=(
    ("Estimate the position of the marker along the line as a decimal number between 0 (left end) and 1 (right "
     "end).", "Give the marker's position along the line as a decimal number between 0 (left end) and 1 "
     "(right end)."),
))
_ANSWER = PromptForm(3, "paraphrase", "ours: the answer-only instruction reworded", replacements=(
    ("Do not explain or reason. Only output the final answer.",
     "Reply with the number only, without any explanation or reasoning."),
))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _ROLE, _TASK, _ANSWER, "ours: the whole system message reworded (forms 1-3)")


class MagnitudeEnv(TextEnv[MagnitudeDesign, MagnitudeSessions]):
    """BayesBench magnitude estimation (see module docstring).

    Observation: ``task``, ``condition``, ``modality``, ``range`` (names), ``session`` (block
    index), ``trial`` (within the block), ``x`` (the true magnitude: synthetic agents read it),
    ``range_low``/``range_high``, ``blur`` (px), ``context`` (window k), ``steering`` (code),
    ``render_seed``, ``images`` (PNG bytes of the current stimulus, empty for text) and ``prompt``:
    chat messages — system, then the last k trials as user / assistant turns, then the current
    stimulus; a user message that shows a picture carries its PNG bytes under ``"images"``.
    Action: the numeric answer (float).
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: No feedback: each estimate is of its own stimulus (the history a prompt shows is text only),
    #: so lapses apply after the fact.
    answer_independent: ClassVar[bool] = True
    #: A numeric estimate (any finite number: answers may overshoot the range).
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = MagnitudeDesign
    action_dtype: ClassVar[Any] = np.float64

    def __init__(self, design: MagnitudeDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        name = spaces.Text(max_length=32, min_length=1, charset=frozenset(string.ascii_lowercase + "-+"))
        real = spaces.Box(-np.inf, np.inf, shape=(), dtype=np.float64)
        self.observation_space = spaces.Dict({
            "task": name, "condition": name, "modality": name, "range": name,
            "session": spaces.Discrete(len(self.design.blocks)),
            "trial": spaces.Discrete(self.design.trials_per_session),
            "x": real, "range_low": real, "range_high": real, "blur": real,
            "context": spaces.Discrete(max(self.design.context, LONG_CONTEXT) + 1),
            "steering": spaces.Discrete(4), "render_seed": spaces.Discrete(2**62),
            "images": ImagesSpace(), "prompt": ChatSpace(),
        })
        self.declare_phases(Phase("estimate", spaces.Box(-np.inf, np.inf, shape=(), dtype=np.float64),
                                  self.parse_estimate))
        self._steps: StepArrays | None = None
        self._images: dict[tuple[str, int, float], bytes] = {}
        self._users: dict[int, dict[str, Any]] = {}
        self._answers: dict[int, str] = {}
        self._blocks = self.design.blocks

    @classmethod
    def uses_images(cls, design: Design) -> bool:
        assert isinstance(design, MagnitudeDesign)
        return any(b.modality != "text" for b in design.blocks)

    @classmethod
    def sample_sessions(cls, design: MagnitudeDesign, n: int, rng: np.random.Generator) -> MagnitudeSessions:
        return sample_stimuli(design, n, rng)

    # -- dynamics --------------------------------------------------------------------------
    def _start(self) -> None:
        assert self.session is not None
        self._steps = step_arrays(self.design, self.session)
        self._images, self._users, self._answers = {}, {}, {}
        self._chooser: Any = None
        if is_adaptive(self.design):  # the chooser names each stimulus; its index is recorded
            self._chooser = chooser_for(EXPERIMENT, self.design)
            self.outcomes.extra[DESIGN_COLUMN] = np.full((1, self.design.n_trials), -1, dtype=np.int64)
            self._choose(0)

    def _choose(self, step: int) -> None:
        """Ask the chooser for the stimulus of ``step``: position u of the block's range."""
        assert self._steps is not None
        code = int(self._chooser.choose())
        self.outcomes.extra[DESIGN_COLUMN][0, step] = code
        lo, hi = self._steps.value("low", step), self._steps.value("high", step)
        self._steps.x[0, step] = lo + ADAPTIVE_STIMULI[code] * (hi - lo)

    def _pos(self) -> int:
        return min(self.t, self.design.n_trials - 1)

    @property
    def block(self) -> Block:
        return self._blocks[self._pos() // self.design.trials_per_session]

    def _play(self, action: Any) -> float:
        return float("nan")  # no feedback: the history shows only the subject's own answers

    def random_answer(self, u: np.ndarray) -> float:
        """A random lapse: uniform over the current task's valid answer range."""
        lo, hi = TASKS[self.block.task].valid
        return float(lo + float(u[0]) * (hi - lo))

    # -- rendering -------------------------------------------------------------------------
    def _value(self, name: str, step: int) -> Any:
        assert self._steps is not None
        return self._steps.value(name, step)

    def image(self, step: int) -> bytes:
        """PNG of the stimulus shown at ``step``; cached by (task, render seed, blur) for the
        session, since the image and text+image sessions of every condition show the same
        stimuli and most of them unblurred."""
        blk = self._blocks[step // self.design.trials_per_session]
        seed, blur = int(self._value("render_seed", step)), float(self._value("blur", step))
        key = (blk.task, seed, blur)
        if key not in self._images:
            self._images[key] = stimulus_image(blk.task, float(self._value("x", step)), seed, blur)
        return self._images[key]

    def user_message(self, step: int) -> dict[str, Any]:
        """The user turn that shows the stimulus of ``step`` in the block's modality (cached)."""
        if step in self._users:
            return dict(self._users[step])
        blk = self._blocks[step // self.design.trials_per_session]
        msg: dict[str, Any] = {"role": "user", "content": ""}
        if blk.modality != "image":
            msg["content"] = stimulus_text(blk.task, float(self._value("x", step)),
                                           int(self._value("render_seed", step)), self.design.duration_corpus)
        if blk.modality != "text":
            msg["images"] = (self.image(step),)
        self._users[step] = msg
        return dict(msg)

    def _record(self, t: int, action: Any, reward: float) -> None:
        self._answers[t] = self._answer_text(t)
        if self._chooser is None:
            return
        if not self._is_no_action(action):  # an invalid answer teaches nothing: the same posterior chooses
            lo, hi = self._value("low", t), self._value("high", t)
            self._chooser.update(int(self.outcomes.extra[DESIGN_COLUMN][0, t]), (float(action) - lo) / (hi - lo))
        if t + 1 < self.design.n_trials:
            self._choose(t + 1)

    def _answer_text(self, step: int) -> str:
        """The subject's own earlier answer as the history shows it (raw text, else the number)."""
        if step in self._answers:
            return self._answers[step]
        raw = self.outcomes.raw_response[0, step]  # type: ignore[index]
        if raw is not None:
            return str(raw)
        value = self.outcomes.action[0, step]
        return "" if np.isnan(value) else f"{float(value):.4g}"

    def messages(self) -> list[dict[str, Any]]:
        """System prompt, the last k trials of this block as chat turns, the current stimulus."""
        step = self._pos()
        T = self.design.trials_per_session
        start = step - step % T
        blk = self.block
        k = self.design.block_context(blk)
        first = max(start, step - k)
        recent = np.array([self._value("x", j) for j in range(max(start, step - STEERING_WINDOW), step)])
        lo, hi = TASKS[blk.task].ranges[blk.range]
        bias = self.design.numerical_bias * (hi - lo) if blk.steering == STEER_BIASED else 0.0
        out: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(
            blk.task, blk.steering, recent, bias)}]
        for j in range(first, step):
            out += [self.user_message(j), {"role": "assistant", "content": self._answer_text(j)}]
        out.append(self.user_message(step))
        return out

    def render_prompt(self) -> str:
        """The chat as text (images shown as ``[image]``), for display and token estimates."""
        parts = []
        for m in self.messages():
            body = ("[image]\n" * len(m.get("images", ()))) + str(m["content"])
            parts.append(f"[{m['role']}]\n{body.strip()}")
        return "\n\n".join(parts)

    def _observation(self) -> dict[str, Any]:
        step = self._pos()
        blk = self.block
        done = self.t >= self.design.n_trials
        messages = self.messages()
        return {
            "task": blk.task, "condition": blk.condition, "modality": blk.modality, "range": blk.range,
            "session": step // self.design.trials_per_session, "trial": step % self.design.trials_per_session,
            "x": _real(self._value("x", step)), "range_low": _real(self._value("low", step)),
            "range_high": _real(self._value("high", step)), "blur": _real(self._value("blur", step)),
            "context": int(self._value("context", step)), "steering": int(self._value("steering", step)),
            "render_seed": int(self._value("render_seed", step)),
            "images": tuple(messages[-1].get("images", ())),
            "prompt": [{"role": "user", "content": "(session finished)"}] if done else messages,
        }

    def _info(self) -> dict[str, Any]:
        return {"trial": self.t, "x": float(self._value("x", self._pos()))}

    def parse_estimate(self, text: str) -> ParseResult:
        """See :func:`parse_magnitude` (the current block's task); what the subject was shown — the
        system prompt and the stimuli of this prompt, not its own earlier answers — is what an echo
        repeats."""
        bare = self._steps is None or self.t >= self.design.n_trials  # a parser of a bare environment
        shown = () if bare else tuple(str(m["content"]) for m in self.messages() if m["role"] != "assistant")
        return parse_magnitude(text, self.block.task, shown)

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: MagnitudeDesign, sessions: MagnitudeSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per trial (columns in the module docstring); ``session`` = block.

        Columnar: the constant-per-block columns are the schedule tiled over subjects (strings as
        categorical codes)."""
        s = step_arrays(design, sessions)
        sch = s.schedule
        n = sessions.n_subjects
        chosen = outcomes.extra.get(DESIGN_COLUMN)
        x = np.reshape(s.x, -1)
        if is_adaptive(design):
            if chosen is None:
                raise InputError("outcomes of an adaptive design carry the stimuli chosen (play it step by step)")
            u = np.asarray(ADAPTIVE_STIMULI)[np.reshape(chosen, -1)]
            x = np.tile(sch.low, n) + u * np.tile(sch.high - sch.low, n)

        def cat(codes: np.ndarray, values: tuple[str, ...]) -> pd.Categorical:
            return pd.Categorical.from_codes(np.tile(codes.astype(np.int8), n), categories=list(values),
                                             validate=False)

        task_codes = np.array([TASK_NAMES.index(t) for t in design.tasks])[sch.task]
        range_codes = np.array([RANGES.index(r) for r in design.ranges])[sch.range]
        stimulus: dict[str, Any] = {
            "task": cat(task_codes, TASK_NAMES), "condition": cat(sch.condition, CONDITIONS),
            "modality": cat(sch.modality, MODALITIES), "range": cat(range_codes, RANGES),
            "x": x, "range_low": np.tile(sch.low, n), "range_high": np.tile(sch.high, n),
            "blur": np.tile(sch.blur, n), "context": np.tile(sch.context, n),
            "render_seed": np.reshape(s.render_seed, -1),
            "session": np.tile(sch.block, n), "trial": np.tile(sch.trial, n),
            **outcome_columns(outcomes), "action": np.asarray(outcomes.action, dtype=np.float64),
        }
        if chosen is not None and is_adaptive(design):
            stimulus[DESIGN_COLUMN] = np.reshape(chosen, -1)
        return finish_table(EXPERIMENT, stimulus, agent=agent, params=params)

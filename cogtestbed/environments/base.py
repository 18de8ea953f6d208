"""The environment contract shared by every experiment.

An experiment is a :class:`gymnasium.Env` whose observation carries both the structured state a
synthetic agent needs and ``prompt``, the exact text an LLM would see (rendered from the history
as the seed paper does).  Every environment owns :meth:`TextEnv.parse`, which turns an LLM answer
into an action or a :class:`ParseResult` failure with its reason: nothing is ever silently
replaced by a random choice.  Ground truth the subject must not see lives in ``info``.

**Steps and phases.**  A *step* is one response of the subject (one LLM call).  A trial is one or
more :class:`Phase` s, played as consecutive steps; each phase declares its action space, its
parser and its response kind (:class:`TextResponse` or :class:`ScoredResponse`).  The base
:meth:`TextEnv.step` handles every phase the same way, and the observation carries ``phase`` (the
index into :attr:`TextEnv.phases`) and ``response`` (the phase's response kind), so any subject
can dispatch on them.  Every step is rendered as a complete prompt: a phase never relies on a
context window the subject kept from an earlier phase.

**Answers.**  A discrete answer is recorded in ``outcomes.action`` as an integer; a continuous
answer (a :class:`gymnasium.spaces.Box` phase) is recorded there as a float, which needs
``action_dtype = np.float64`` (missing answers are then NaN).  A scored answer
(:class:`ScoredAnswer`) records the index of its most probable continuation in
``outcomes.action`` and the full answer in ``outcomes.scored``.

**info.**  ``reset`` returns the hidden ground truth of the first step; ``step`` returns that of
the step just played, taken before the answer is applied.  So ``info`` always describes the step
whose prompt the subject answered, and never reveals a step that has not been answered yet.

Randomness is split in two so that a synthetic subject and an LLM subject with the same seed meet
the *same* realised session:

* :meth:`TextEnv.sample_sessions` draws the stochastic design (orderings, labels, pre-sampled
  outcomes) for ``n`` subjects at once from one :class:`numpy.random.Generator`;
* ``reset(options={"session": ...})`` plays one of those pre-drawn sessions, and ``reset(seed=s)``
  draws a single session from ``default_rng(s)``.

:class:`TextEnv` lives here; the response kinds, answers and phases it plays are in
:mod:`cogtestbed.environments.responses`, the design, sessions and outcomes in
:mod:`cogtestbed.environments.designs`.  Every one of those names is importable from this module
as before (``from cogtestbed.environments.base import Design, Phase, TextEnv``).
"""

from __future__ import annotations

import string
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np
import pandas as pd
from gymnasium import spaces

from cogtestbed.environments.designs import NO_ACTION, Design, Outcomes, Sessions, is_sequence_type, sequence_from_text
from cogtestbed.environments.forms import VERBATIM, PromptForm
from cogtestbed.environments.responses import (
    ONE_LINE,
    AnswerDefaults,
    ParseResult,
    Phase,
    ResponseKind,
    ResponseKindSpace,
    SamplingNote,
    ScoredAnswer,
    ScoredResponse,
    TextResponse,
    box_action_value,
    scored_action_value,
    uniform_simplex_logprobs,
)
from cogtestbed.errors import InputError
from cogtestbed.interpreted import kernel
from cogtestbed.lapse import random_choice
from cogtestbed.schema import TrialSchema

__all__ = [
    "COGBENCH_CODE_ANSWER_SUFFIX", "NO_ACTION", "ONE_LINE", "PROMPT_CHARSET", "AnswerDefaults", "Design", "DesignT",
    "Outcomes", "ParseResult", "Phase", "ResponseKind", "ResponseKindSpace", "SamplingNote", "ScoredAnswer",
    "ScoredResponse", "Sessions", "SessionsT", "TextEnv", "TextResponse", "box_action_value", "is_sequence_type",
    "scored_action_value", "sequence_from_text", "uniform_simplex_logprobs",
]

#: Characters a rendered prompt may contain (used for the gymnasium ``Text`` space).
PROMPT_CHARSET = frozenset(string.printable)

DesignT = TypeVar("DesignT", bound=Design)
SessionsT = TypeVar("SessionsT", bound=Sessions)

#: The whitespace CogBench's released code appends to every answer prefix and cogtestbed drops — the
#: one departure of its prompts' whitespace from that code.  The paper (Coda-Forno et al.
#: 2024, *CogBench*, the example prompts of its appendix, ``/work/shared/seeds/papers/002_*.txt``) prints
#: every prompt ending without it: "... A: Machine", "A: I prefer option", "A: Option", "A: Alien" (after
#: "A: Planet Y. You arrive at planet Y."); its code sets ``llm.format_answer = "Machine "`` (e.g.
#: github.com/juliancodaforno/CogBench, Experiments/InstrumentalLearning/query.py).  cogtestbed sends the
#: paper's text: no prompt ends in whitespace (checked for every experiment by the conformance suite),
#: and a model's answer begins with its own space, as a byte-level BPE model writes a word after a word.
COGBENCH_CODE_ANSWER_SUFFIX = " "


class TextEnv(gym.Env[dict[str, Any], Any], Generic[DesignT, SessionsT]):
    """Gymnasium environment with a rendered prompt and a parser (see module docstring).

    Subclasses set :attr:`experiment` and :attr:`design_cls`; in ``__init__`` they set
    ``observation_space`` and then declare their phases with :meth:`declare_phases` (which also
    sets ``action_space`` and adds the ``phase``/``response`` entries to the observation space).
    They implement :meth:`sample_sessions`, :meth:`_start`, :meth:`_play`, :meth:`_observation`,
    :meth:`render_prompt` and :meth:`trials_table`; each phase brings its own parser.  They change
    what a step does through those hooks, never by overriding :meth:`step`: the simulator plays a
    step without its observation (:meth:`play_step`), where an override of ``step`` would not run.
    """

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 - gymnasium declares it mutable
    #: Registry name of the experiment, e.g. ``"instrumental-learning"``.
    experiment: ClassVar[str]
    design_cls: ClassVar[type[Design]]
    #: Text an LLM's completion continues from (CogBench's ``format_answer``), without a trailing
    #: space: the paper prints its prompts ending ``"A: Machine"`` (its released code appends a space:
    #: :data:`COGBENCH_CODE_ANSWER_SUFFIX`, the named departure from that code), and a served model
    #: reads a trailing space as a lone token it never saw before a word (SmolLM2 through llama.cpp: 1
    #: valid answer in 24), so the answer begins with its own space (``" F"``) and every route (HTTP
    #: servers, the in-process model) reads the same text.
    answer_prefix: ClassVar[str] = ""
    #: dtype of the recorded action: integer choices by default; tasks with a continuous answer
    #: (a Box phase: a rating, a probability) use ``np.float64`` and mark missing actions with NaN.
    action_dtype: ClassVar[Any] = np.int64
    #: What the trial table holds (values of a valid action, the reward's range, the stimulus
    #: columns read downstream): every table and importer output is checked against it before
    #: anything is computed (:func:`cogtestbed.trials.validate_trials`).
    table_schema: ClassVar[TrialSchema]
    #: Uniforms one random (lapse) answer needs (:meth:`random_answer`); environments whose
    #: answers are distributions over several continuations need one per continuation.
    lapse_draws: ClassVar[int] = 1
    #: True where no step depends on an earlier answer: no feedback that later steps show, no
    #: adaptive design, no step skipped or voided after an answer, and a structured observation
    #: (what synthetic subjects read) that never holds an answer.  A step can then be played on
    #: its own after a reset, and the simulator applies lapses to a lapse-free batch run after the
    #: fact (:func:`cogtestbed.simulation.lapse_after_the_fact`) instead of playing the step path.
    answer_independent: ClassVar[bool] = False

    @classmethod
    def independent_of_answers(cls, design: Design) -> bool:
        """Whether no step of ``design`` depends on an earlier answer: :attr:`answer_independent`, except
        in an adaptive session, whose every next trial is chosen from the answers so far."""
        from cogtestbed.environments.adaptive import is_adaptive

        return bool(cls.answer_independent) and not is_adaptive(design)
    #: The prompt's wordings (:mod:`cogtestbed.environments.forms`): form 0 is the paper's verbatim
    #: prompt, the others this project's paraphrases, option orders and cover stories.
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = (VERBATIM,)
    #: Where the paper gives no cover story a form could tell the same information in, why (one
    #: line; ``cogtestbed list EXP --json`` shows it as ``cover_story_note``); None: not stated.
    cover_story_note: ClassVar[str | None] = None

    def __init__(self, design: DesignT | None = None, render_mode: str | None = None) -> None:
        self.design: DesignT = design if design is not None else self.design_cls()  # type: ignore[assignment]
        self.form: PromptForm = VERBATIM
        self.render_mode = render_mode
        self.session: SessionsT | None = None
        self.t = 0
        self.phases: tuple[Phase, ...] = ()
        self.outcomes = Outcomes.empty(1, self.max_steps(self.design), self.action_dtype)

    def declare_phases(self, *phases: Phase) -> None:
        """Declare the phases of a trial (in the order they are played).

        ``action_space`` becomes the phases' common space, or a ``Dict`` keyed by phase name when
        they differ (:meth:`step` then takes the current phase's plain value or such a dict).
        """
        if not phases:
            raise InputError("a trial needs at least one phase")
        names = [p.name for p in phases]
        if len(set(names)) != len(names):
            raise InputError(f"phase names must be distinct, got {names}")
        self.phases = tuple(phases)
        first = phases[0].action_space
        if all(p.action_space == first for p in phases):
            self.action_space = first
        else:
            self.action_space = spaces.Dict({p.name: p.action_space for p in phases})
        obs_space = getattr(self, "observation_space", None)
        if isinstance(obs_space, spaces.Dict):
            self.observation_space = spaces.Dict({
                **obs_space.spaces,
                "phase": spaces.Discrete(len(phases)),
                "response": ResponseKindSpace(tuple(p.response for p in phases)),
            })

    @classmethod
    def uses_images(cls, design: Design) -> bool:
        """Whether prompts of ``design`` carry images (chat messages with ``"images"``), so an LLM
        subject must be a vision-language model; checked before any call is made."""
        return False

    @classmethod
    def sampling_note(cls, design: Design) -> SamplingNote | None:
        """The cost of estimating ``design``'s scored steps from sampled completions (a backend
        that cannot score), stated before a run's first call; ``None`` (the default) where the
        environment declares none."""
        return None

    @classmethod
    def answer_defaults(cls, design: Design) -> AnswerDefaults:
        """The stop strings and most tokens of an answer to ``design``'s prompts where the run sets
        none (:data:`ONE_LINE` unless the environment's answer form needs more)."""
        return ONE_LINE

    @classmethod
    def max_steps(cls, design: Design) -> int:
        """Most steps (subject responses) a session can take; sizes the outcome arrays.

        A step is one response of the subject (one LLM call).  Fixed-length tasks have
        ``design.n_trials`` trials of ``n_phases`` steps; variable-length tasks override this and
        :meth:`_terminated`.
        """
        return design.n_trials

    def _terminated(self) -> bool:
        """Whether the session is over after ``self.t`` steps."""
        return self.t >= self.max_steps(self.design)

    # -- phases --------------------------------------------------------------------------
    @property
    def phase_index(self) -> int:
        """Index of the current step's phase (trials play their phases in order)."""
        return self.t % max(1, len(self.phases))

    @property
    def phase(self) -> Phase:
        """The current step's :class:`Phase`."""
        if not self.phases:
            raise RuntimeError(f"{type(self).__name__} declared no phases (call declare_phases)")
        return self.phases[self.phase_index]

    @property
    def trial(self) -> int:
        """Index of the current trial (steps divided by phases per trial)."""
        return self.t // max(1, len(self.phases))

    # -- stochastic design -------------------------------------------------------------
    @classmethod
    @abstractmethod
    def sample_sessions(cls, design: DesignT, n: int, rng: np.random.Generator) -> SessionsT:
        """Draw the stochastic parts of ``n`` sessions (vectorised over subjects)."""

    # -- gymnasium API -------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start a session: ``options["session"]`` if given, else one drawn from ``seed``;
        ``options["form"]`` (an id of :attr:`prompt_forms`, default 0) words its prompts.

        ``info`` is the hidden ground truth of the first step.
        """
        super().reset(seed=seed)
        self.set_form(0 if options is None else int(options.get("form", 0)))
        if options is not None and "session" in options:
            session = options["session"]
        else:
            session = self.sample_sessions(self.design, 1, self.np_random)
        if session.n_subjects != 1:
            raise InputError("reset expects a one-subject session; use Sessions.subject(i)")
        self.session = session
        self.t = 0
        self.outcomes = Outcomes.empty(1, self.max_steps(self.design), self.action_dtype)
        self._start()
        return self._phase_observation(), self._info()

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play ``action`` (or :data:`NO_ACTION`) in the current phase and advance (:meth:`play_step`),
        then render the next step's observation.

        ``info`` is the hidden ground truth of the step just played.  An invalid answer in a
        phase with ``skip_rest_if_invalid`` leaves the trial's remaining phases unplayed.
        """
        reward, terminated, info = self.play_step(action)
        return self._phase_observation(), reward, terminated, False, info

    def play_step(self, action: Any) -> tuple[float, bool, dict[str, Any]]:
        """:meth:`step` without the next observation: play and record ``action``, advance, and return
        (gymnasium's reward, terminated, info).

        Rendering the next prompt can cost far more than playing the step (magnitude draws and
        encodes PNG stimuli); a caller that reads only the record (``outcomes``), as the simulator
        applying lapses after the fact does, skips it.  Every override point a subclass has
        (:meth:`_play`, :meth:`_record`, :meth:`_info`, :meth:`_action_value`) is called here, so the
        record is the one :meth:`step` leaves.
        """
        if self.session is None:
            raise RuntimeError("call reset() before step()")
        if self._terminated():
            raise RuntimeError("episode is over; call reset()")
        t, phase = self.t, self.phase
        if isinstance(action, Mapping) and isinstance(self.action_space, spaces.Dict):
            action = action[phase.name]
        info = self._info()
        invalid = self._is_no_action(action)
        reward = float("nan") if invalid else self._play_answer(t, action)
        self.outcomes.reward[0, t] = reward
        self.outcomes.played[0, t] = True  # type: ignore[index]
        self._record(t, action, reward)
        skipped = len(self.phases) - 1 - self.phase_index if invalid and phase.skip_rest_if_invalid else 0
        self.t += 1 + skipped
        return 0.0 if np.isnan(reward) else float(reward), self._terminated(), info

    def _play_answer(self, t: int, action: Any) -> float:
        """Play a valid ``action`` at step ``t`` and record it (its value, its validity, a scored
        answer's distribution): its reward.  The value is checked before anything is played."""
        value = self._action_value(action)
        reward = self._play(action)
        self.outcomes.action[0, t] = value
        self.outcomes.valid[0, t] = True
        if isinstance(action, ScoredAnswer):
            self.outcomes.scored[0, t] = action  # type: ignore[index]
        return reward

    def parse(self, text: str) -> ParseResult:
        """Turn an answer (the completion after the answer prefix) into an action with the
        current phase's parser."""
        return self.phase.parse(text)

    def shown_prompt(self) -> str:
        """The prompt of the current step, what an answer that echoes it repeats; empty
        before a reset and after the last step (a parser may be called on a bare environment)."""
        if self.session is None or self._terminated():
            return ""
        return self.render_prompt()

    def record_response(self, raw_response: str | None, parse_error: str | None) -> None:
        """Attach an LLM's raw text and parse error to the trial about to be stepped."""
        self.outcomes.raw_response[0, self.t] = raw_response  # type: ignore[index]
        self.outcomes.parse_error[0, self.t] = parse_error  # type: ignore[index]

    def record_scoring(self, method: str, n_samples: int | None) -> None:  # noqa: B027 - no scored columns
        """Attach how a scored step was answered (``"exact"`` / ``"sampled"`` and the N drawn) to the
        trial about to be stepped, also when no distribution came of it (every sample unparseable):
        the row then says the run sampled.  Environments without scored columns ignore it."""

    def render(self) -> str:
        return str(self._observation()["prompt"])

    def set_form(self, form_id: int) -> None:
        """Word the prompts from now on in prompt form ``form_id`` (:attr:`prompt_forms`)."""
        forms = {f.id: f for f in type(self).prompt_forms}
        if form_id not in forms:
            raise InputError(f"{self.experiment} declares prompt forms {sorted(forms)}, not {form_id}")
        self.form = forms[form_id]

    def _phase_observation(self) -> dict[str, Any]:
        """The experiment's observation plus the current ``phase`` index and ``response`` kind,
        its prompt worded in the session's prompt form."""
        obs = self._observation()
        if self.form.id != 0 and "prompt" in obs:
            obs["prompt"] = self.form.apply(obs["prompt"])
        index = 0 if self._terminated() else self.phase_index
        obs["phase"] = index
        obs["response"] = self.phases[index].response
        return obs

    @staticmethod
    def _is_no_action(action: Any) -> bool:
        if action is None:
            return True
        if type(action) is int or isinstance(action, np.integer):  # the common case, without np.ndim
            return bool(action == NO_ACTION)
        if np.ndim(action) != 0 or isinstance(action, (str, bytes)):
            return False
        try:
            value = float(action)
        except (TypeError, ValueError):
            return False  # a structured action (a scored answer, a rating with a confidence)
        return bool(np.isnan(value)) or value == NO_ACTION

    def _action_value(self, action: Any) -> Any:
        """Check a valid action against the current phase and return what ``outcomes.action``
        records: an integer for a discrete choice, a float for a continuous (Box) answer, the
        index of the most probable continuation for a scored answer.  A scored phase also
        accepts a bare choice from its action space (one continuation, no distribution recorded).

        Environments whose actions carry more than one number (a rating plus a confidence)
        override it to pick the recorded number and call this.
        """
        phase = self.phase
        if isinstance(phase.response, ScoredResponse) and isinstance(action, ScoredAnswer):
            return scored_action_value(action, phase)
        space = phase.action_space
        if isinstance(space, spaces.Box):
            return box_action_value(action, space, phase.name)
        if not space.contains(action):
            raise InputError(f"invalid action {action!r} for phase {phase.name!r} ({space})")
        return int(action)

    def lapse_unit(self) -> int:
        """Index of the lapse decision that governs the current step (:mod:`cogtestbed.lapse`).

        A lapse covers one *answer unit*: by default the step itself.  An environment whose trial
        (one row of its trial table, one observation of its models) spans several steps returns the
        trial's index, so that a lapse covers the whole trial: every step of a random trial is
        random and an invalid trial stops at its first step.  This is the unit on which a model's
        lapse mixture (:func:`cogtestbed.inference.base.with_lapse`) acts, so simulated lapses and
        the fitted mixture agree.  The index is below :meth:`max_steps` (at most one unit per step).
        """
        return self.t

    def random_answer(self, u: np.ndarray) -> Any:
        """A uniformly random valid answer to the current step from :attr:`lapse_draws` uniforms
        ``u`` (a synthetic subject's random lapse, :mod:`cogtestbed.lapse`).

        Default, from the current phase: a discrete space gives a uniform option
        (``start + ⌊u·n⌋``); a Box gives a uniform value over its range (one uniform per
        component); a scored phase gives a distribution drawn uniformly on the simplex of its
        continuations (normalised exponentials −log u, i.e. a flat Dirichlet).  Environments
        whose valid answers depend on the trial override it.
        """
        phase = self.phase
        u = np.asarray(u, dtype=np.float64)
        if isinstance(phase.response, ScoredResponse):
            k = len(phase.response.continuations)
            if k > u.size:
                raise InputError(f"{type(self).__name__}: a random scored answer needs {k} uniforms, "
                                 f"lapse_draws is {u.size}")
            return ScoredAnswer(uniform_simplex_logprobs(u[:k]))
        space = phase.action_space
        if isinstance(space, spaces.Discrete):
            return int(space.start) + kernel(random_choice)(float(u[0]), int(space.n))
        if isinstance(space, spaces.MultiDiscrete):
            nvec = np.asarray(space.nvec).reshape(-1)
            return np.array([kernel(random_choice)(float(x), int(n)) for x, n in zip(u, nvec, strict=False)],
                            dtype=np.int64).reshape(space.shape)
        if isinstance(space, spaces.Box):
            return self._random_box_answer(space, u)
        raise NotImplementedError(f"{type(self).__name__} must define random_answer for phase {phase.name!r} "
                                  f"({space})")

    def _random_box_answer(self, space: spaces.Box, u: np.ndarray) -> Any:
        """A uniform value over a bounded Box's range, one uniform per component."""
        name = self.phase.name
        low, high = np.broadcast_to(space.low, space.shape), np.broadcast_to(space.high, space.shape)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise NotImplementedError(f"{type(self).__name__}: phase {name!r} has an unbounded answer "
                                      "range; define random_answer")
        if low.size > u.size:
            raise InputError(f"{type(self).__name__}: a random answer to {name!r} needs {low.size} "
                             f"uniforms, lapse_draws is {u.size}")
        if space.shape in ((), (1,)):
            return float(low.reshape(-1)[0] + float(u[0]) * (high.reshape(-1)[0] - low.reshape(-1)[0]))
        return low + u[: low.size].reshape(space.shape) * (high - low)

    # -- experiment-specific hooks -----------------------------------------------------
    @abstractmethod
    def _start(self) -> None:
        """Prepare rendering state for a fresh session (``self.session`` is set)."""

    @abstractmethod
    def _play(self, action: Any) -> float:
        """Apply a valid action on trial ``self.t`` and return its reward."""

    def _record(self, t: int, action: Any, reward: float) -> None:  # noqa: B027
        """Hook for environments that keep a rendered history (called after every trial)."""

    @abstractmethod
    def _observation(self) -> dict[str, Any]:
        """Structured state plus ``prompt`` for the current trial."""

    def _info(self) -> dict[str, Any]:
        """Hidden ground truth of the current step, before it is played (override to add more)."""
        return {"trial": self.t}

    @abstractmethod
    def render_prompt(self) -> str:
        """The exact text an LLM sees on the current trial."""

    @classmethod
    @abstractmethod
    def trials_table(
        cls,
        design: DesignT,
        sessions: SessionsT,
        outcomes: Outcomes,
        *,
        agent: str = "unknown",
        params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per trial: the experiment's stimulus fields plus the outcome columns.

        ``params`` maps generating-parameter names to per-subject arrays (synthetic subjects).
        """

    # -- helpers -----------------------------------------------------------------------
    @staticmethod
    def prompt_space(max_length: int) -> spaces.Text:
        """Gymnasium space for a rendered prompt of at most ``max_length`` characters."""
        return spaces.Text(max_length=max_length, min_length=1, charset=PROMPT_CHARSET)

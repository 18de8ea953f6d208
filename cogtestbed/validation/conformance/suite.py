"""The public conformance suite of an experiment, in the manner of scikit-learn's ``check_estimator``.

:func:`check_experiment` runs every check on one :class:`~cogtestbed.experiments.spec.ExperimentSpec`
and returns a :class:`ConformanceReport` (or raises :class:`ConformanceError` listing the
failures).  Each check is a small named function ``check_xxx(spec, config)`` that raises
:class:`ConformanceError` with a readable message, or :class:`NotApplicable` when the experiment
has nothing it could test (no models, no importers); :func:`experiment_checks` yields them as
:class:`Check` objects so that pytest can parametrise over (experiment, check)::

    from cogtestbed.registry import get_experiment
    from cogtestbed.validation.conformance.suite import check_experiment

    report = check_experiment(get_experiment("two-step"), raise_on_failure=False)
    print(report.table())

An experiment declares the checks it is known to fail, with the reason, in
``ExperimentSpec.expected_failures``; they are reported as ``xfail``, and as a failure (``xpass``)
once they pass, so the declaration is removed as soon as the limitation is fixed.

Quick mode (the default, and the default test suite) plays small designs with few subjects; the
full mode plays the designs the experiment's declared studies use.  Everything is seeded: a check
gives the same verdict on every run.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import re
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces

from cogtestbed.environments.base import Design, Phase, TextEnv
from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec, StudyDecl
from cogtestbed.lapse import Lapse
from cogtestbed.llm_adapters.base import GenerateRequest, Generation, LLMClient
from cogtestbed.metrics_result import headline_problems, metrics_result_problems
from cogtestbed.parameters import Parameter, ParameterError, ParameterSet
from cogtestbed.schema import TrialSchema
from cogtestbed.trials import table_to_parquet
from cogtestbed.validation.conformance.config import DATA_DIR_ENV as DATA_DIR_ENV
from cogtestbed.validation.conformance.config import QUICK_MAX_STEPS, CheckConfig
from cogtestbed.validation.conformance.edge_checks import bound_edge_problems, check_importer_conflicts, sniffed_files
from cogtestbed.validation.conformance.edge_checks import fail as _fail
from cogtestbed.validation.conformance.table_checks import (
    check_all_invalid_metrics,
    check_constant_answers,
    check_permuted_table,
    check_schema_fast_path,
)
from cogtestbed.validation.errors import ConformanceError, NotApplicable

Status = Literal["passed", "failed", "xfail", "xpass", "skipped"]

#: The cue of CogBench's question/answer prompts (Coda-Forno et al. 2024): a prompt whose last
#: line starts with it is a completion prompt that the subject continues.
COMPLETION_CUE = "A:"
#: Psych-201's choice cue: its transcripts mark every choice ``<<…>>`` (Binz et al. 2025, Centaur), so a
#: prompt in that form ends with ``<<`` (its environment's ``answer_prefix``) and the answer continues it.
PSYCH201_CUE = "<<"
#: Characters an instruction prompt (answered in a new chat turn) may end with.
INSTRUCTION_ENDINGS = ".?!:)\"'"
#: An instruction may close with an answer-format block: up to this many ``<label>: <value>``
#: lines after a line that ends with ":" ("Example:", "… in the format:").  The instruction then
#: ends at that colon; the block is what an answer looks like (Yamin et al. 2026, §1 templates).
FORMAT_BLOCK_MAX_LINES = 10
_FORMAT_LINE = re.compile(r"^[^\s:][^:\n]*:[ \t]*\S.*$")
#: gymnasium env-checker warnings that are advice, not contract breaches: scalar (shape ())
#: Box values given as numpy scalars rather than 0-d arrays, and unbounded Box spaces (a reward
#: or a Kalman mean has no natural bound).
GYM_ADVISORY_WARNINGS: tuple[str, ...] = ("Casting input x to numpy array", "This is probably too low",
                                          "This is probably too high")
#: Answers no environment may accept, at any step.
GARBAGE_ANSWERS: tuple[str, ...] = ("", "   \n", "banana", "\u2182\u2603\u200b\U0001f642 \u03a9\u2248\u00e7\u221a",
                                    "-999999", "NaN")
#: Calls the budget of the LLM budget check allows: fewer than one whole subject of any experiment.
LLM_BUDGET_CALLS = 4
#: Answers a step with a discrete action space (a choice among named options) must reject.
GARBAGE_DISCRETE: tuple[str, ...] = ("999999",)
#: Subjects per data set of a quick smoke run of a declared study, and draws of its SBC chains.
QUICK_STUDY_SUBJECTS = 4
QUICK_SBC_DRAWS = 50
#: Subjects (CogBench runs) of an imported file whose metrics the quick importer check computes.
QUICK_IMPORT_UNITS = 2
#: Relative step of the central finite differences of the gradient check.
FD_STEP = 1e-5
#: Tolerance of the gradient check: |analytic − FD| ≤ FD_RTOL·(1 + |FD|) + FD_NLL_RTOL·|NLL|.
FD_RTOL = 1e-4
FD_NLL_RTOL = 1e-8
#: Absolute step on the search scale z of the search-objective check's central differences.
SEARCH_FD_STEP = 1e-6
#: Tolerance of the recovery check, in prior SDs on the unconstrained scale (logit / log /
#: identity): the median MLE over subjects must lie within this many SDs of the truth.
RECOVERY_TOLERANCE_SD = 1.0
#: …or within this share of the parameter's range (of max(1, |truth|) for an unbounded one) on
#: the natural scale, which judges truths at a bound (a noise of 0 is −∞ on the log scale).
RECOVERY_NATURAL_TOL = 0.05
#: Lapse rates (invalid, random) of the simulated data on which the likelihood checks score every
#: model's lapse variant (:func:`cogtestbed.inference.base.with_lapse`, ε fitted, so ε > 0 at
#: every test point), and of the batch == step check's lapsed run.
CHECK_LAPSE = (0.1, 0.2)




CheckFn = Callable[[ExperimentSpec, CheckConfig], None]


@dataclass(frozen=True)
class Check:
    """One named check, bound to a configuration; ``check(spec)`` raises on failure."""

    name: str
    fn: CheckFn
    config: CheckConfig = field(default_factory=CheckConfig)

    @property
    def description(self) -> str:
        doc = (self.fn.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else self.name

    def __call__(self, spec: ExperimentSpec) -> None:
        self.fn(spec, self.config)


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check on one experiment."""

    experiment: str
    check: str
    status: Status
    message: str = ""
    seconds: float = 0.0


@dataclass
class ConformanceReport:
    """Every check's outcome on one experiment."""

    experiment: str
    results: list[CheckResult]

    @property
    def failures(self) -> list[CheckResult]:
        """Checks that failed, and expected failures that passed (strict, like pytest's)."""
        return [r for r in self.results if r.status in ("failed", "xpass")]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def passed(self) -> bool:
        """No check failed (expected failures and skipped checks aside)."""
        return not self.failures

    def table(self) -> str:
        """A plain-text table: check, status, seconds, first line of the message."""
        width = max((len(r.check) for r in self.results), default=5)
        lines = [f"{'check':<{width}}  {'status':<7}  {'s':>6}  message"]
        for r in self.results:
            first = r.message.splitlines()[0] if r.message else ""
            lines.append(f"{r.check:<{width}}  {r.status:<7}  {r.seconds:6.1f}  {first}")
        return "\n".join(lines)

    def raise_for_failures(self) -> None:
        if self.failures:
            body = "\n".join(f"- {r.check} [{r.status}]: {r.message}" for r in self.failures)
            raise ConformanceError(f"experiment {self.experiment!r} fails {len(self.failures)} "
                                   f"conformance check(s):\n{body}")


# ============================================================================= helpers
def small_design(spec: ExperimentSpec, config: CheckConfig) -> Design:
    """The default design, with ``trials_field`` divided by ``config.design_divisor`` and, in
    quick mode, lowered further until a session has at most :data:`QUICK_MAX_STEPS` steps (≥ 1)."""
    design = spec.design_cls()
    if spec.trials_field is None or config.design_divisor == 1:
        return design
    value = max(1, int(getattr(design, spec.trials_field)) // config.design_divisor)
    small = _with_field(spec, design, value)
    steps = spec.env_cls.max_steps(small)
    if steps > QUICK_MAX_STEPS:
        small = _with_field(spec, design, max(1, value * QUICK_MAX_STEPS // steps))
    return small


def _with_field(spec: ExperimentSpec, design: Design, value: int) -> Design:
    assert spec.trials_field is not None
    return spec.design_cls(**{**design.model_dump(), spec.trials_field: value})


def design_with_trials(spec: ExperimentSpec, trials: int) -> Design:
    """The default design with ``trials`` trials per subject where ``trials_field`` scales the
    count proportionally, else with ``trials_field = trials`` (a declared count per block)."""
    design = spec.design_cls()
    if spec.trials_field is None or trials == design.n_trials:
        return design
    one, two = _with_field(spec, design, 1).n_trials, _with_field(spec, design, 2).n_trials
    per = two - one
    if per > 0 and one == per and trials % per == 0:
        return _with_field(spec, design, trials // per)
    return _with_field(spec, design, trials)


def prior_draws(parameters: ParameterSet, n: int, rng: np.random.Generator,
                spread: float = 1.0) -> dict[str, np.ndarray]:
    """``n`` values per parameter: normal on the unconstrained scale (the prior, SD × ``spread``)
    mapped back into the bounds and kept strictly inside them."""
    out = {}
    for p in parameters:
        z = rng.normal(p.prior_mean, p.prior_sd * spread, n)
        x = np.asarray(p.to_constrained(z), dtype=np.float64)
        out[p.name] = _interior(p, x)
    return out


def _interior(p: Parameter, x: np.ndarray, margin: float = 1e-3) -> np.ndarray:
    lo = p.lower + margin * (p.upper - p.lower) if np.isfinite(p.upper - p.lower) else p.lower + margin
    hi = p.upper - margin * (p.upper - p.lower) if np.isfinite(p.upper - p.lower) else p.upper
    return np.clip(x, lo if np.isfinite(lo) else -np.inf, hi if np.isfinite(hi) else np.inf)


def table_bytes(trials: pd.DataFrame) -> bytes:
    """The Parquet bytes of a table as :func:`~cogtestbed.trials.write_trials` writes them (what
    "byte-identical" compares)."""
    buf = io.BytesIO()
    table_to_parquet(trials, buf)
    return buf.getvalue()


def first_difference(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """A one-line description of where two tables first differ."""
    if list(a.columns) != list(b.columns):
        return f"columns differ: {list(a.columns)} vs {list(b.columns)}"
    if len(a) != len(b):
        return f"row counts differ: {len(a)} vs {len(b)}"
    for col in a.columns:
        x, y = a[col].reset_index(drop=True), b[col].reset_index(drop=True)
        if x.dtype != y.dtype:
            return f"column {col!r} dtype differs: {x.dtype} vs {y.dtype}"
        same = (x == y) | (x.isna() & y.isna())
        bad = ~same.fillna(False).to_numpy(dtype=bool)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            where = ", ".join(f"{k}={a[k].iloc[i]}" for k in ("subject", "session", "trial") if k in a.columns)
            return f"column {col!r} differs at row {i} ({where}): {x.iloc[i]!r} vs {y.iloc[i]!r}"
    return "tables differ only in metadata (index or categories)"


def _agents(spec: ExperimentSpec) -> list[str]:
    return sorted(spec.agents)


def _step_space(env: TextEnv[Any, Any]) -> spaces.Space[Any]:
    """The action space of the current step (its phase's, where the environment declares phases)."""
    phase = getattr(env, "phase", None) if getattr(env, "phases", ()) else None
    return phase.action_space if phase is not None else env.action_space


def _step_prefix(env: TextEnv[Any, Any]) -> str:
    """The answer prefix every prompt of ``env`` must end with: the class's ``answer_prefix``
    where a trial is one declared phase (trials of several phases, such as the two stages of the
    two-step task, continue from a prefix per phase)."""
    return type(env).answer_prefix if len(getattr(env, "phases", ())) == 1 else ""


def _is_scored(obs: Mapping[str, Any]) -> bool:
    return getattr(obs.get("response"), "kind", "text") == "scored"


def play_episode(spec: ExperimentSpec, design: Design, agent: str, seed: int,
                 on_step: Callable[[TextEnv[Any, Any], dict[str, Any], int], None] | None = None,
                 max_steps: int | None = None, form: int = 0) -> int:
    """Play one session with ``agent`` through ``reset``/``step`` in prompt form ``form``; call
    ``on_step(env, obs, t)`` before each answer.  Stops after ``max_steps`` steps if given; returns
    the number of steps played (raises if the episode does not end within the environment's ``max_steps``)."""
    from cogtestbed.simulation import seed_streams

    env = spec.env_cls(design)
    env_rng, agent_rng = seed_streams(seed)
    session = spec.env_cls.sample_sessions(design, 1, env_rng)
    subject = spec.agent(agent)()
    subject.reset(agent_rng)
    obs, _ = env.reset(options={"session": session, "form": form})
    limit = spec.env_cls.max_steps(design)
    for t in range(limit + 1):
        if max_steps is not None and t >= max_steps:
            return t
        if on_step is not None:
            on_step(env, obs, t)
        action = subject.act(obs)
        next_obs, _, done, truncated, _ = env.step(action)
        subject.update(obs, action, float(env.outcomes.reward[0, env.t - 1]), next_obs)
        obs = next_obs
        if done or truncated:
            return t + 1
    raise ConformanceError(f"agent {agent!r}: the episode did not end within max_steps = {limit} steps")


# ============================================================================= the checks
def check_spec_declaration(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The spec is self-consistent and its pieces name the experiment they belong to."""
    problems = list(spec.problems())
    unknown = sorted(set(spec.expected_failures) - set(CHECKS))
    if unknown:
        problems.append(f"expected_failures name unknown checks {unknown}; checks are: {', '.join(CHECKS)}")
    for name, agent in spec.agents.items():
        if getattr(agent, "name", None) != name:
            problems.append(f"agent registered as {name!r} has name {getattr(agent, 'name', None)!r}")
        if getattr(agent, "experiment", None) != spec.name:
            problems.append(f"agent {name!r} says it plays {getattr(agent, 'experiment', None)!r}")
    for name, model in spec.models.items():
        if getattr(model, "name", None) != name:
            problems.append(f"model registered as {name!r} has name {getattr(model, 'name', None)!r}")
        if getattr(model, "experiment", None) != spec.name:
            problems.append(f"model {name!r} says it reads {getattr(model, 'experiment', None)!r}")
    if getattr(spec.env_cls, "experiment", None) != spec.name:
        problems.append(f"{spec.env_cls.__name__}.experiment is {getattr(spec.env_cls, 'experiment', None)!r}")
    if not spec.metrics.headline:
        problems.append("the metrics declare no headline keys (MetricsSpec.headline)")
    design = spec.design_cls()
    if spec.trials_field is not None:
        value = int(getattr(design, spec.trials_field))
        bigger = spec.design_cls(**{**design.model_dump(), spec.trials_field: 2 * value})
        if not bigger.n_trials > design.n_trials:
            problems.append(f"doubling trials_field {spec.trials_field!r} does not add trials "
                            f"({design.n_trials} → {bigger.n_trials})")
    _fail(problems, f"{spec.name}: the declaration is inconsistent")


def check_gymnasium_env(spec: ExperimentSpec, config: CheckConfig) -> None:
    """gymnasium's ``check_env`` passes on the default design (render check skipped)."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_env(spec.env_cls(), skip_render_check=True)
        except AssertionError as exc:
            raise ConformanceError(f"gymnasium.utils.env_checker.check_env: {exc}") from exc
    # gymnasium reports many contract breaches as warnings: each one fails, bar the advisory ones
    problems = sorted({_plain_warning(w.message) for w in caught
                       if issubclass(w.category, UserWarning)
                       and not any(a in str(w.message) for a in GYM_ADVISORY_WARNINGS)})
    _fail(problems, f"{spec.name}: gymnasium's env checker warns")


def _plain_warning(message: Warning | str) -> str:
    """A warning's text without gymnasium's terminal colour codes."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", str(message))


def check_seeded_determinism(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Same seed ⇒ byte-identical trial tables (batch and step paths); another seed changes them."""
    from cogtestbed.simulation import simulate

    design = small_design(spec, config)
    n, seed = config.n_subjects, config.seed
    problems: list[str] = []
    changed = False
    for agent in _agents(spec):
        first = simulate(spec, agent, n, seed, design=design)
        again = simulate(spec, agent, n, seed, design=design)
        if table_bytes(first) != table_bytes(again):
            problems.append(f"agent {agent!r}, batch path, seed {seed}: two runs differ "
                            f"({first_difference(first, again)})")
        other = simulate(spec, agent, n, seed + 1, design=design)
        changed = changed or table_bytes(other) != table_bytes(first)
    agent = _agents(spec)[0]
    step_a = simulate(spec, agent, n, seed, design=design, method="step")
    step_b = simulate(spec, agent, n, seed, design=design, method="step")
    if table_bytes(step_a) != table_bytes(step_b):
        problems.append(f"agent {agent!r}, step path: two runs differ ({first_difference(step_a, step_b)})")
    if not changed:
        problems.append(f"seeds {seed} and {seed + 1} give identical tables for every agent: the seed is ignored")
    _fail(problems, f"{spec.name}: simulation is not a function of the seed")


def prompt_form_problems(prompt: Any, answer_prefix: str = "") -> list[str]:
    """Why ``prompt`` does not end as an LLM must continue it (empty: it does).

    A completion prompt's last line starts with :data:`COMPLETION_CUE` (``"A:"``) and ends with
    the environment's ``answer_prefix`` where it declares one (or, in Psych-201's form, ends with its
    choice cue :data:`PSYCH201_CUE`, the declared prefix); an instruction prompt (answered in
    a new chat turn) ends a sentence, without trailing whitespace, or closes with an answer-format
    block after a line ending with ":" (:func:`strip_format_block`).  Chat messages must end with
    a user turn.
    """
    if not isinstance(prompt, str):
        try:
            roles = [str(m["role"]) for m in prompt]
        except (TypeError, KeyError):
            return [f"prompt is neither text nor chat messages: {type(prompt).__name__}"]
        return [] if roles and roles[-1] == "user" else [f"chat prompt must end with a user turn, got roles {roles}"]
    if not prompt.strip():
        return ["the prompt is empty"]
    last_line = prompt.rsplit("\n", 1)[-1]
    tail = repr(prompt[-60:])
    psych201 = answer_prefix == PSYCH201_CUE and prompt.endswith(PSYCH201_CUE)
    if last_line.lstrip().startswith(COMPLETION_CUE) or psych201:
        if answer_prefix and not prompt.endswith(answer_prefix):
            return [f"completion prompt does not end with the answer prefix {answer_prefix!r}: …{tail}"]
        if prompt != prompt.rstrip():  # a served model reads a lone whitespace token there (issue 39)
            return [f"completion prompt ends with whitespace (the answer should begin with it): …{tail}"]
        return []
    out = []
    if answer_prefix:
        out.append(f"the environment declares answer_prefix {answer_prefix!r} but the prompt's last line is "
                   f"not a {COMPLETION_CUE!r} completion cue: …{tail}")
    if prompt != prompt.rstrip():
        out.append(f"instruction prompt ends with whitespace: …{tail}")
    elif strip_format_block(prompt)[-1] not in INSTRUCTION_ENDINGS:
        out.append(f"prompt ends mid-sentence (neither a {COMPLETION_CUE!r} cue nor an instruction ending in one of "
                   f"{INSTRUCTION_ENDINGS!r}): …{tail}")
    return out


def strip_format_block(prompt: str) -> str:
    """``prompt`` without a closing answer-format block (:data:`FORMAT_BLOCK_MAX_LINES`): the
    ``<label>: <value>`` lines after the last line ending with ":".  Unchanged when it has none."""
    lines = prompt.split("\n")
    for n in range(1, min(FORMAT_BLOCK_MAX_LINES, len(lines) - 1) + 1):
        if not _FORMAT_LINE.match(lines[-n]):
            return prompt
        if lines[-n - 1].rstrip().endswith(":") and lines[-n - 1] == lines[-n - 1].rstrip():
            return "\n".join(lines[:-n])
    return prompt


def scored_form_problems(prompt: Any, continuations: Sequence[str]) -> list[str]:
    """Why the continuations of a scored step do not attach to ``prompt`` (empty: they do).

    The score is log P(continuation | prompt), so the text must read on across the boundary:
    neither two whitespaces (the prompt ends with one and a continuation starts with one) nor
    two word characters glued together.
    """
    if not isinstance(prompt, str):
        return prompt_form_problems(prompt)
    if not prompt.strip():
        return ["the prompt is empty"]
    out = []
    last = prompt[-1]
    for c in continuations:
        if last.isspace() and c[:1].isspace():
            out.append(f"prompt ends with whitespace and continuation {c!r} starts with one: …{prompt[-40:]!r}")
        elif last.isalnum() and c[:1].isalnum():
            out.append(f"continuation {c!r} glues onto the prompt's last word: …{prompt[-40:]!r}")
    return out


def check_prompt_continuation(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every prompt of an episode ends as the LLM must continue it (text steps: an answer cue or
    an instruction; scored steps: the continuations attach) and lies in the observation space."""
    design = small_design(spec, config)
    problems: list[str] = []

    def inspect(env: TextEnv[Any, Any], obs: dict[str, Any], t: int) -> None:
        where = f"agent {agent!r}, step {t}"
        if _is_scored(obs):
            found = scored_form_problems(obs.get("prompt"), obs["response"].continuations)
        else:
            found = prompt_form_problems(obs.get("prompt"), _step_prefix(env))
        problems.extend(f"{where}: {p}" for p in found)
        if isinstance(obs.get("prompt"), str) and obs["prompt"] != env.render_prompt():
            problems.append(f"{where}: obs['prompt'] differs from env.render_prompt()")
        if not env.observation_space.contains(obs):
            entries = getattr(env.observation_space, "spaces", {})
            bad = [k for k, s in entries.items() if k in obs and not s.contains(obs[k])]
            problems.append(f"{where}: observation not in observation_space (entries {bad or 'structure'})")

    for agent in _agents(spec):
        play_episode(spec, design, agent, config.seed, inspect, config.probe_steps)
    _fail(problems, f"{spec.name}: prompts do not end as the LLM must continue them")


#: Forms of ours every experiment declares besides the verbatim form 0.
MIN_OUR_FORMS = 4


def _form_declaration_problems(forms: Sequence[Any]) -> list[str]:
    ids = [f.id for f in forms]
    problems = [] if ids == list(range(len(ids))) else [f"form ids must be 0..K-1 in order, got {ids}"]
    if not forms or forms[0].kind != "verbatim" or forms[0].source != "paper":
        problems.append("form 0 must be the paper's verbatim prompt")
    ours = [f for f in forms[1:] if f.source == "ours" and f.differs.strip()]
    if len(ours) < MIN_OUR_FORMS or len(ours) != len(forms) - 1:
        problems.append(f"needs at least {MIN_OUR_FORMS} forms of ours besides form 0, each saying what differs "
                        f"(got {len(forms) - 1})")
    return problems


def _form_episode(spec: ExperimentSpec, design: Design, agent: str, config: CheckConfig,
                  form: int) -> tuple[list[Any], list[list[str]], Any]:
    """(prompts, continuation problems per step, outcomes) of one episode in prompt form ``form``."""
    prompts: list[Any] = []
    problems: list[list[str]] = []
    envs: list[TextEnv[Any, Any]] = []

    def record(env: TextEnv[Any, Any], obs: dict[str, Any], t: int) -> None:
        envs[:1] = [env]
        prompts.append(obs.get("prompt"))
        problems.append(scored_form_problems(obs.get("prompt"), obs["response"].continuations)
                        if _is_scored(obs) else prompt_form_problems(obs.get("prompt"), _step_prefix(env)))

    play_episode(spec, design, agent, config.seed, record, config.probe_steps, form=form)
    return prompts, problems, envs[0].outcomes if envs else None


def check_prompt_forms(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The experiment declares form 0 (the paper's verbatim prompt) and at least
    :data:`MIN_OUR_FORMS` forms of ours; in every form each prompt of an episode still ends as the
    LLM must continue it (the paper's answer format), each rewrite the form declares finds its
    text and some prompt changes, every prompt states the same numbers as form 0's (the
    information), and the same agent's answers play out identically (actions, validity, rewards)."""
    from cogtestbed.environments.forms import numbers_in, texts_of

    forms = spec.env_cls.prompt_forms
    problems = _form_declaration_problems(forms)
    design = small_design(spec, config)
    agent = _agents(spec)[0]
    base, _, base_out = _form_episode(spec, design, agent, config, 0)
    text = "\n".join(texts_of(p) for p in base)
    seen: dict[str, int] = {}
    for form in forms[1:]:
        prompts, found, out = _form_episode(spec, design, agent, config, form.id)
        where = f"form {form.id}"
        twin = seen.setdefault(repr(prompts), form.id)
        if twin != form.id:
            problems.append(f"{where}: words every prompt as form {twin} does")
        problems += [f"{where}, step {t}: {p}" for t, ps in enumerate(found) for p in ps][:3]
        unmatched = [i for i, hit in enumerate(form.matched(text)) if not hit]
        if unmatched:
            problems.append(f"{where}: rewrites {unmatched} find no text in an episode (stale wording?)")
        if prompts == base:
            problems.append(f"{where}: no prompt differs from form 0")
        changed = [t for t, (a, b) in enumerate(zip(base, prompts, strict=False)) if numbers_in(a) != numbers_in(b)]
        if changed or len(prompts) != len(base):
            problems.append(f"{where}: the numbers stated differ from form 0's at steps {changed[:5]} (information)")
        keys = ("action", "reward", "valid")
        same = out is not None and base_out is not None and all(
            np.array_equal(getattr(out, k), getattr(base_out, k), equal_nan=True) for k in keys)
        if not same:
            problems.append(f"{where}: the same agent's answers play out differently than in form 0")
    _fail(problems, f"{spec.name}: prompt forms")


class ScriptedClient(LLMClient):
    """An in-process LLM client answering from a fixed list (cycled); it records every request.
    It takes chat or raw text, with or without images."""

    backend, model = "conformance", "scripted"
    vision = True

    def __init__(self, answers: Sequence[str], chat: bool = False) -> None:
        if not answers:
            raise InputError("a scripted client needs at least one answer")
        self.answers, self.chat = tuple(answers), chat
        self.requests: list[GenerateRequest] = []

    async def agenerate(self, request: GenerateRequest) -> Generation:
        self.requests.append(request)
        return Generation(text=self.answers[(len(self.requests) - 1) % len(self.answers)])


def check_garbage_answers(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Garbage answers are invalid with a reason at every step, and an LLM subject that only
    answers garbage gets an all-invalid table: never a random fallback."""
    design = small_design(spec, config)
    problems: list[str] = []

    def probe(env: TextEnv[Any, Any], obs: dict[str, Any], t: int) -> None:
        if _is_scored(obs):
            return
        answers = GARBAGE_ANSWERS + (GARBAGE_DISCRETE if isinstance(_step_space(env), spaces.Discrete) else ())
        for text in answers:
            result = env.parse(text)
            if result.ok or result.action is not None:
                problems.append(f"agent {agent!r}, step {t}: garbage {text!r} parsed as action {result.action!r}")
            elif not (isinstance(result.error, str) and result.error.strip()):
                problems.append(f"agent {agent!r}, step {t}: garbage {text!r} rejected without a reason")

    agent = _agents(spec)[0]
    play_episode(spec, design, agent, config.seed, probe, config.probe_steps)
    _fail(problems, f"{spec.name}: the parser accepts garbage")

    first_prompt = spec.env_cls(design).reset(seed=config.seed)[0]["prompt"]
    # a completion model is only asked text prompts (chat messages need a chat model)
    for chat in (False, True) if isinstance(first_prompt, str) else (True,):
        problems += _garbage_subject_problems(spec, design, config, chat)
    _fail(problems, f"{spec.name}: invalid answers are not recorded as invalid")


def _garbage_subject_problems(spec: ExperimentSpec, design: Design, config: CheckConfig, chat: bool) -> list[str]:
    """One session of an LLM subject (scripted client) that answers nothing but garbage."""
    from cogtestbed.llm_adapters.agent import LLMAgent
    from cogtestbed.simulation import seed_streams

    mode = "chat" if chat else "completion"
    client = ScriptedClient(GARBAGE_ANSWERS, chat=chat)
    env = spec.env_cls(design)
    sessions = spec.env_cls.sample_sessions(design, 1, seed_streams(config.seed)[0])
    subject = LLMAgent(client, env)
    asked: list[int] = []
    obs, _ = env.reset(options={"session": sessions.subject(0)})
    for _ in range(config.probe_steps or spec.env_cls.max_steps(design)):
        asked.append(env.t)
        obs, _, done, truncated, _ = env.step(subject.act(obs))
        if done or truncated:
            break
    outcomes = env.outcomes
    problems = [f"{mode} request {i}: {p}" for i, req in enumerate(client.requests[:50])
                for p in _request_problems(req, chat)]
    if not asked:
        return [*problems, f"{mode} LLM subject was never asked anything"]
    valid = outcomes.valid[0, asked]
    if valid.any():
        steps = [t for t, v in zip(asked, valid, strict=True) if v][:5]
        problems.append(f"{mode} LLM subject answering only garbage has valid steps {steps}: a fallback replaced "
                        "the answer")
    errors = outcomes.parse_error[0, asked] if outcomes.parse_error is not None else np.array([None])
    if any(not (isinstance(e, str) and e.strip()) for e in errors):
        problems.append(f"{mode} LLM subject: a step answered with garbage records no parse error")
    table = spec.env_cls.trials_table(design, sessions, outcomes, agent="conformance:garbage")
    # rows the subject answered (an environment may also record steps it plays itself, such
    # as the forced choices of the horizon task)
    answered = table[table["raw_response"].notna() | table["parse_error"].notna()]
    if answered.empty:
        problems.append(f"{mode} LLM subject: the trial table records none of its answers")
    if answered["valid"].astype(bool).any() or answered["action"].notna().any():
        rows = answered.index[answered["valid"].astype(bool) | answered["action"].notna()].tolist()[:5]
        problems.append(f"{mode} LLM subject: trial-table rows {rows} hold a valid action for a garbage answer")
    if answered["parse_error"].isna().any():
        problems.append(f"{mode} LLM subject: a trial-table row with a garbage answer has no parse_error")
    return problems


def check_llm_budget(spec: ExperimentSpec, config: CheckConfig) -> None:
    """An LLM run of two subjects (a scripted client) on a budget of fewer calls than one subject has
    steps (at most :data:`LLM_BUDGET_CALLS`) stops, says what the next subject needs, never makes more
    calls than the budget and pays for none of a subject that does not finish."""
    import asyncio

    from cogtestbed.llm_adapters.cache import CachedClient, ResponseCache
    from cogtestbed.llm_adapters.limits import Budget
    from cogtestbed.llm_adapters.runner import RunConfig, run_experiment

    design = small_design(spec, config)
    budget = max(1, min(LLM_BUDGET_CALLS, spec.env_cls.max_steps(design) - 1))
    chat = not isinstance(spec.env_cls(design).reset(seed=0)[0]["prompt"], str)
    client = ScriptedClient(GARBAGE_ANSWERS, chat=chat)
    run = RunConfig(experiment=spec.name, llm=client.spec, base_url=None, mode="chat" if chat else "completions",
                    n_subjects=2, seed=config.seed, design=design.model_dump(mode="json"))
    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedClient(client, ResponseCache(Path(tmp) / "c.sqlite"), Budget(max_calls=budget))
        result = asyncio.run(run_experiment(spec, design, cached, run, Path(tmp) / "run"))
    problems = []
    if result.status != "stopped" or "needs up to" not in str(result.stats.get("stopped")):
        problems.append(f"a budget of {budget} calls did not stop the run, saying what a subject needs "
                        f"(status {result.status!r})")
    if result.stats["new_calls"] > budget or len(client.requests) > budget:
        problems.append(f"{len(client.requests)} calls made on a budget of {budget}")
    unfinished = ~result.calls["subject"].isin(np.flatnonzero(result.complete))
    if (unfinished & ~result.calls["cached"]).any():
        problems.append("calls paid for a subject that did not finish")
    _fail(problems, f"{spec.name}: an LLM run and its budget")


def _request_problems(request: GenerateRequest, chat: bool) -> list[str]:
    if chat:
        messages = request.messages
        return [] if messages and messages[-1]["role"] == "user" else ["chat request does not end with a user turn"]
    return [] if isinstance(request.prompt, str) else ["completion request is not raw text"]


def check_batch_equals_step(spec: ExperimentSpec, config: CheckConfig) -> None:
    """For every agent, the batch kernel and the gymnasium step path give identical, schema-valid
    tables (per-subject, non-default parameters), without and with lapses (:data:`CHECK_LAPSE`)."""
    from cogtestbed.lapse import Lapse
    from cogtestbed.registry import validate_table
    from cogtestbed.schema import TrialTableError
    from cogtestbed.simulation import simulate

    design = small_design(spec, config)
    rng = np.random.default_rng(config.seed)
    problems = []
    for agent in _agents(spec):
        params = prior_draws(spec.agent(agent).parameters, config.n_subjects, rng)
        batch = simulate(spec, agent, config.n_subjects, config.seed, params=params, design=design)
        step = simulate(spec, agent, config.n_subjects, config.seed, params=params, design=design, method="step")
        if not batch.equals(step) or table_bytes(batch) != table_bytes(step):
            problems.append(f"agent {agent!r}: {first_difference(batch, step)}")
        lapse = Lapse(*CHECK_LAPSE)
        lapsed = simulate(spec, agent, config.n_subjects, config.seed, params=params, design=design, lapse=lapse)
        lapsed_step = simulate(spec, agent, config.n_subjects, config.seed, params=params, design=design,
                               lapse=lapse, method="step")
        if table_bytes(lapsed) != table_bytes(lapsed_step):  # (equals() fails on NaN inside array cells)
            problems.append(f"agent {agent!r} with lapses {lapse}: {first_difference(lapsed, lapsed_step)}")
        try:
            validate_table(batch)
        except TrialTableError as exc:
            problems.append(f"agent {agent!r}: {exc}")
        if not batch["experiment"].astype(str).eq(spec.name).all() or batch["subject"].nunique() != config.n_subjects:
            problems.append(f"agent {agent!r}: the table is not {config.n_subjects} subjects of {spec.name!r}")
        for name, values in params.items():
            column = batch.get(f"param_{name}")
            if column is None or not np.allclose(column.groupby(batch["subject"]).first().to_numpy(), values):
                problems.append(f"agent {agent!r}: column param_{name} does not hold the generating values")
    _fail(problems, f"{spec.name}: batch and step paths differ")


def _bad_values(p: Parameter) -> list[float]:
    out = [float("nan")]
    if np.isfinite(p.upper):
        out.append(p.upper + max(1.0, abs(p.upper)))
    if np.isfinite(p.lower):
        out.append(p.lower - max(1.0, abs(p.lower)))
    return out


def _bounds_problems(owner: str, parameters: ParameterSet, make: Callable[[dict[str, float]], Any]) -> list[str]:
    problems = []
    for p in parameters:
        for bad in _bad_values(p):
            for how, call in (("scalar", lambda v, name=p.name: make({name: v})),
                              ("array", lambda v, name=p.name, d=p.default: parameters.validate_array(
                                  {name: np.array([d, v])}))):
                try:
                    call(bad)
                except ParameterError as exc:
                    msg = str(exc)
                    if p.name not in msg or "\n" in msg:
                        problems.append(f"{owner}: {p.name}={bad} ({how}) raised an unclear error: {msg!r}")
                except Exception as exc:  # noqa: BLE001 - the wrong error type is the finding
                    problems.append(f"{owner}: {p.name}={bad} ({how}) raised {type(exc).__name__}, not ParameterError")
                else:
                    problems.append(f"{owner}: {p.name}={bad} ({how}) was accepted (bounds [{p.lower}, {p.upper}])")
    try:
        make({"no_such_parameter": 1.0})
    except ParameterError as exc:
        if parameters.names and parameters.names[0] not in str(exc):
            problems.append(f"{owner}: the unknown-parameter error does not list the valid names: {exc}")
    else:
        problems.append(f"{owner}: an unknown parameter name was accepted")
    return problems


def check_parameter_bounds(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Out-of-bounds, NaN and unknown parameters are refused with one clear ParameterError naming them."""
    problems = []
    for name in _agents(spec):
        agent_cls = spec.agent(name)
        problems += _bounds_problems(f"agent {name!r}", agent_cls.parameters, agent_cls)
    for name, model in sorted(spec.models.items()):
        problems += _bounds_problems(f"model {name!r}", model.parameters, model.parameters.validate)
    _fail(problems, f"{spec.name}: parameter bounds are not enforced")


def check_bound_edges(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every agent simulates at each declared bound of each parameter and at the nearest double
    inside it (two seeds), or refuses the value in one line: no traceback, a schema-valid table
    (``simulate`` validates it)."""
    design = small_design(spec, config)
    problems = [p for agent in _agents(spec) for p in bound_edge_problems(spec, agent, design)]
    _fail(problems, f"{spec.name}: agents fail at declared parameter bounds")


#: Draws per parameter of the prior-bounds check (the hierarchical prior, a population draw each).
PRIOR_BOUND_DRAWS = 2000


def check_prior_bounds(spec: ExperimentSpec, config: CheckConfig) -> None:
    """For every model and EVERY one of its parameters, the studies' prior samplers stay inside the
    bounds: :data:`PRIOR_BOUND_DRAWS` draws of the hierarchical prior (``recover``, SBC, power),
    the uniform sampler's range and the conformance suite's own prior draws (a log-transformed
    parameter with a finite upper bound maps the real line past it)."""
    from cogtestbed.inference.hierarchical import sample_hierarchical_prior
    from cogtestbed.validation.studies.study_data import _uniform_range

    rng = np.random.default_rng(config.seed)
    problems = []
    for name in _model_names(spec):
        parameters = spec.model(name).parameters
        draws: dict[str, list[np.ndarray]] = {p.name: [] for p in parameters}
        for _ in range(PRIOR_BOUND_DRAWS // 100):
            pop, subj = sample_hierarchical_prior(parameters, 100, rng)
            for p in parameters:
                draws[p.name] += [subj[p.name], np.array([pop[f"{p.name}_pop"]])]
        own = prior_draws(parameters, PRIOR_BOUND_DRAWS, rng)
        for p in parameters:
            x = np.concatenate([*draws[p.name], own[p.name], np.array(_uniform_range(p))])
            outside = x[~((x >= p.lower) & (x <= p.upper))]
            if outside.size:
                problems.append(f"model {name!r}: {p.name}: {outside.size} prior draws outside [{p.lower}, {p.upper}] "
                                f"(e.g. {float(outside[0]):.6g})")
    _fail(problems, f"{spec.name}: prior draws leave the parameter bounds")


# ----------------------------------------------------------------------------- models
def _model_names(spec: ExperimentSpec) -> list[str]:
    if not spec.models:
        raise NotApplicable(f"{spec.name} declares no cognitive models")
    return sorted(spec.models)


def simulate_from_model(spec: ExperimentSpec, model: str, params: Mapping[str, np.ndarray], seed: int,
                        design: Design, runs: int = 1, lapse: Any = None) -> pd.DataFrame:
    """Simulate data *from a model* through its declared generator (agent + parameter map).

    ``params`` maps the model's parameters to per-subject arrays; with ``runs > 1`` each subject
    plays ``runs`` sessions (simulated as independent runs, relabelled ``subject = k // runs``,
    ``session = k % runs``), the pooling of experiments whose unit is the session.  ``lapse``: a
    :class:`~cogtestbed.lapse.Lapse` of the simulated subjects.
    """
    from cogtestbed.simulation import simulate

    gen = spec.generator(model)
    n = len(next(iter(params.values())))
    agent_params = gen.agent_params({k: np.repeat(np.asarray(v, dtype=np.float64), runs) for k, v in params.items()})
    full = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), (n * runs,)).copy() for k, v in agent_params.items()}
    table = simulate(spec, gen.agent, n * runs, seed, params=full, design=design, lapse=lapse)
    if runs == 1:
        return table
    run = table["subject"].to_numpy(dtype=np.int64)
    return table.assign(subject=run // runs, session=run % runs)


def _model_data(spec: ExperimentSpec, model: str, config: CheckConfig, lapse: bool = False) -> tuple[Any, Any]:
    """(model, one subject's data) simulated at the model's defaults on the small design; with
    ``lapse``, the model's lapse variant (ε fitted) on data simulated with :data:`CHECK_LAPSE`."""
    from cogtestbed.inference.base import with_lapse
    from cogtestbed.lapse import Lapse

    m = spec.model(model)
    defaults = {p.name: np.array([p.default]) for p in m.parameters}
    table = simulate_from_model(spec, model, defaults, config.seed, small_design(spec, config),
                                lapse=Lapse(*CHECK_LAPSE) if lapse else None)
    if lapse:
        m = with_lapse(m, "fit")
    data = m.subject_data(table)
    return m, next(iter(data.values()))


def _likelihood_variants(spec: ExperimentSpec) -> list[tuple[str, bool]]:
    """(model, with lapse term) for every model with a likelihood kernel: each model, then its
    lapse variant (every model declares the uniform of a random answer)."""
    out = []
    for name in _model_names(spec):
        out.append((name, False))
        kernel = getattr(type(spec.model(name)), "kernel", None)
        if callable(kernel) and kernel() is not None:
            out.append((name, True))
    return out


def _test_points(parameters: ParameterSet, seed: int, n: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    draws = prior_draws(parameters, n, rng, spread=0.5)
    points = [np.array([p.default for p in parameters], dtype=np.float64)]
    points += [np.array([draws[p.name][i] for p in parameters]) for i in range(n)]
    return [np.array([float(_interior(p, np.array(v), 0.02)) for p, v in zip(parameters, pt, strict=True)])
            for pt in points]


def check_pointwise_likelihood(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model's NLL (and its lapse variant's, ε > 0) equals −Σ of its pointwise
    log-likelihood (and the gradients agree)."""
    problems = []
    checked = 0
    for model_name, lapse in _likelihood_variants(spec):
        m, data = _model_data(spec, model_name, config, lapse)
        name = f"{model_name} + lapse" if lapse else model_name
        pointwise = getattr(m, "pointwise", None)
        if not callable(pointwise):
            continue
        checked += 1
        kernel = getattr(type(m), "kernel", None)
        if callable(kernel) and kernel() is None:
            problems.append(f"model {name!r} has no pointwise likelihood kernel (CognitiveModel.pointwise_kernel): "
                            "its NLL, gradient and PyMC Op are not derived from one likelihood")
            continue
        for theta in _test_points(m.parameters, config.seed):
            ll, grad = pointwise(theta, data)
            nll, g = m.nll_grad(theta, data)
            ll, grad = np.asarray(ll, dtype=np.float64), np.asarray(grad, dtype=np.float64)
            at = f"model {name!r} at {dict(zip(m.parameters.names, np.round(theta, 4), strict=True))}"
            if not np.all(np.isfinite(ll)):
                problems.append(f"{at}: non-finite pointwise log-likelihood")
            if not math.isclose(nll, -float(ll.sum()), rel_tol=1e-9, abs_tol=1e-9):
                problems.append(f"{at}: NLL {nll:.10g} != −Σ pointwise {-float(ll.sum()):.10g}")
            if grad.shape != (ll.shape[0], len(m.parameters)):
                problems.append(f"{at}: pointwise gradient has shape {grad.shape}, expected ({ll.shape[0]}, "
                                f"{len(m.parameters)})")
            elif not np.allclose(-grad.sum(axis=0), g, rtol=1e-8, atol=1e-8):
                problems.append(f"{at}: −Σ pointwise gradient {-grad.sum(axis=0)} != NLL gradient {g}")
        points = _test_points(m.parameters, config.seed)
        many, direct = m.nll_many(np.array(points), data), [m.nll(t, data) for t in points]
        if not np.allclose(many, direct, rtol=1e-10, atol=1e-10):  # the start grid's (fast) path
            problems.append(f"model {name!r}: the start-grid NLLs (nll_many) {many} != NLL {direct}")
    if not checked:
        raise NotApplicable("no model of this experiment exposes a pointwise log-likelihood (CognitiveModel.pointwise)")
    _fail(problems, f"{spec.name}: the NLL is not the sum of the pointwise log-likelihood")


def finite_difference_grad(f: Callable[[np.ndarray], float], theta: np.ndarray, parameters: ParameterSet) -> np.ndarray:
    """Central differences with a relative step, kept inside each parameter's bounds."""
    out = np.empty(len(theta))
    for i, p in enumerate(parameters):
        h = FD_STEP * max(1.0, abs(theta[i]))
        h = min(h, 0.5 * (theta[i] - p.lower), 0.5 * (p.upper - theta[i]))
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        out[i] = (f(up) - f(down)) / (2 * h)
    return out


def _nll_of(model: Any, data: Any) -> Callable[[np.ndarray], float]:
    return lambda theta: float(model.nll(theta, data))


def check_likelihood_gradient(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model's analytic NLL gradient (and its lapse variant's) matches central finite differences."""
    problems = []
    for model_name, lapse in _likelihood_variants(spec):
        m, data = _model_data(spec, model_name, config, lapse)
        name = f"{model_name} + lapse" if lapse else model_name
        for theta in _test_points(m.parameters, config.seed + 1):
            nll, grad = m.nll_grad(theta, data)
            fd = finite_difference_grad(_nll_of(m, data), theta, m.parameters)
            at = f"model {name!r} at {dict(zip(m.parameters.names, np.round(theta, 4), strict=True))}"
            if not np.isfinite(nll) or not np.all(np.isfinite(grad)):
                problems.append(f"{at}: NLL {nll} or gradient {grad} is not finite")
                continue
            tol = FD_RTOL * (1 + np.abs(fd)) + FD_NLL_RTOL * abs(nll)
            bad = np.abs(np.asarray(grad) - fd) > tol
            for i in np.flatnonzero(bad):
                problems.append(f"{at}: d NLL / d {m.parameters.names[i]} analytic {grad[i]:.8g} vs finite "
                                f"difference {fd[i]:.8g}")
    _fail(problems, f"{spec.name}: analytic gradients disagree with finite differences")


def _roundoff(model: Any, theta: np.ndarray, data: Any, h: float) -> float:
    """Rounding error of a central difference of the NLL with step ``h``: a few ulps of Σ|ll| over
    2h (an exact-distribution Dirichlet log-density is of order 1e5 per observation, so this, not
    the gradient, limits the agreement there; negligible for small log-likelihoods)."""
    return 4.0 * float(np.finfo(float).eps) * float(np.abs(model.pointwise(theta, data)[0]).sum()) / h


def check_search_objective(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model's MLE objective on the search scale (:func:`~cogtestbed.inference.optim.search_objective`
    of its kernel) is its NLL, with the chain-rule gradient (central finite differences on z)."""
    from cogtestbed.inference.optim import search_objective

    problems = []
    for name in _model_names(spec):
        m, data = _model_data(spec, name, config)
        objective, args = search_objective(m.kernel()), m.objective_args(data)
        for theta in _test_points(m.parameters, config.seed + 2, n=1):
            z = m.to_search(theta)
            value, grad = objective(z, args)
            at = f"model {name!r} at z = {np.round(z, 4)}"
            if not math.isclose(value, m.nll(m.to_natural(z), data), rel_tol=1e-12):
                problems.append(f"{at}: objective {value:.12g} != NLL {m.nll(m.to_natural(z), data):.12g}")
            h = SEARCH_FD_STEP
            tol = 1e-5 + _roundoff(m, m.to_natural(z), data, 2 * h)
            for j in range(z.size):
                up, dn = z.copy(), z.copy()
                up[j] += h
                dn[j] -= h
                fd = (objective(up, args)[0] - objective(dn, args)[0]) / (2 * h)
                if abs(grad[j] - fd) > max(1e-4 * abs(fd), tol):
                    problems.append(f"{at}: d objective / d z[{m.parameters.names[j]}] {grad[j]:.8g} vs finite "
                                    f"difference {fd:.8g}")
    _fail(problems, f"{spec.name}: the search-scale MLE objective is not the NLL")


def check_lapse_likelihood(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model takes a lapse term (:func:`~cogtestbed.inference.base.with_lapse`): log u is
    finite, one per observation; ε = 0 gives the model's NLL; ε fitted is the last parameter,
    ``lapse``, and ε = 0.1 gives another finite NLL."""
    from cogtestbed.inference.base import with_lapse

    problems = []
    for name in _model_names(spec):
        base = spec.model(name)
        defaults = {p.name: np.array([p.default]) for p in base.parameters}
        table = simulate_from_model(spec, name, defaults, 7, small_design(spec, config), lapse=Lapse(*CHECK_LAPSE))
        data = next(iter(base.subject_data(table).values()))
        theta = np.array([p.default for p in base.parameters])
        log_u = np.asarray(base.lapse_log_uniform(data))
        if log_u.ndim != 1 or not np.all(np.isfinite(log_u)):
            problems.append(f"model {name!r}: lapse_log_uniform is not one finite value per observation")
        nll = base.nll(theta, data)
        zero = with_lapse(base, 0.0)
        if not math.isclose(zero.nll(theta, next(iter(zero.subject_data(table).values()))), nll,
                            rel_tol=1e-10, abs_tol=1e-9):
            problems.append(f"model {name!r}: a lapse of 0 changes the NLL")
        fitted = with_lapse(base, "fit")
        if fitted.parameters.names[-1] != "lapse":
            problems.append(f"model {name!r}: the fitted lapse is not the last parameter")
        lapsed = fitted.nll(np.append(theta, 0.1), next(iter(fitted.subject_data(table).values())))
        if not np.isfinite(lapsed) or math.isclose(lapsed, nll, rel_tol=1e-6):
            problems.append(f"model {name!r}: a lapse of 0.1 gives NLL {lapsed} (no lapse: {nll})")
    _fail(problems, f"{spec.name}: lapse terms")


def recovery_design(spec: ExperimentSpec, model: str, config: CheckConfig) -> tuple[Design, int]:
    """(design, sessions per subject) for the recovery check: what the model's declared recovery
    studies use (else the experiment's other recovery studies): their largest ``trials`` /
    ``runs``; quick mode takes their smallest value > 1."""
    decls = [s for s in spec.studies_of("recovery") if s.model == model] or list(spec.studies_of("recovery"))
    pick = (lambda xs: min([x for x in xs if x > 1] or xs)) if config.quick else max
    trials = [t for s in decls for t in s.trials]
    runs = [r for s in decls for r in s.runs]
    design = design_with_trials(spec, pick(trials)) if trials else spec.design_cls()
    return design, (pick(runs) if runs else 1)


def check_mle_recovery(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model, simulated through its generator at its defaults, is recovered by its MLE
    (median over subjects within RECOVERY_TOLERANCE_SD prior SDs on the unconstrained scale, or
    RECOVERY_NATURAL_TOL of the range on the natural scale)."""
    problems = []
    for name in _model_names(spec):
        m = spec.model(name)
        gen = spec.generator(name)
        true = {p.name: p.default for p in m.parameters}
        try:
            spec.agent(gen.agent).parameters.validate(gen.agent_params(true))
        except ParameterError as exc:
            problems.append(f"model {name!r}: its generator gives invalid agent parameters: {exc}")
            continue
        design, runs = recovery_design(spec, name, config)
        n = config.n_subjects
        table = simulate_from_model(spec, name, {k: np.full(n, v) for k, v in true.items()}, config.seed, design, runs)
        fits = m.fit_mle(table, n_starts=2 if config.quick else None)
        for p in m.parameters:
            est = float(np.median(fits[p.name].to_numpy(dtype=np.float64)))
            z_true, z_est = float(p.to_unconstrained(true[p.name])), float(p.to_unconstrained(est))
            width = p.upper - p.lower if np.isfinite(p.upper - p.lower) else max(1.0, abs(true[p.name]))
            near = abs(est - true[p.name]) <= RECOVERY_NATURAL_TOL * width  # a truth at a bound
            if not (near or abs(z_est - z_true) <= RECOVERY_TOLERANCE_SD * p.prior_sd):
                problems.append(f"model {name!r}: {p.name} true {true[p.name]:.4g}, median MLE {est:.4g} over {n} "
                                f"subjects ({design.n_trials} trials x {runs} sessions each); off by "
                                f"{abs(z_est - z_true):.2f} > {RECOVERY_TOLERANCE_SD * p.prior_sd:.2f} on the "
                                f"{p.transform} scale")
    _fail(problems, f"{spec.name}: MLE does not recover the generating parameters")


def check_pymc_model(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model with a PyMC version builds on simulated data with a finite logp (full mode: and
    gradient) at its initial point (quick mode: the first such model)."""
    names = [n for n in _model_names(spec) if spec.model(n).has_pymc]
    if not names:
        raise NotApplicable(f"no model of {spec.name} has a PyMC version")
    problems = []
    # quick mode: one model's logp, compiled without C code (the full mode compiles every model's
    # logp and gradient as NUTS does)
    mode = "FAST_COMPILE" if config.quick else None
    for name in names[:1] if config.quick else names:
        m = spec.model(name)
        defaults = {p.name: np.full(2, p.default) for p in m.parameters}
        table = simulate_from_model(spec, name, defaults, config.seed, small_design(spec, config))
        try:
            pm_model = m.pymc_model(table, hierarchical=True)
            point = pm_model.initial_point()
            try:
                logp = float(pm_model.compile_logp(mode=mode)(point))
            except Exception:  # noqa: BLE001 - pytensor's Python mode fails on some wide graphs
                logp = float(pm_model.compile_logp()(point))
            dlogp = np.zeros(1) if config.quick else np.asarray(pm_model.compile_dlogp(mode=mode)(point))
        except Exception as exc:  # noqa: BLE001 - any build error is the finding
            problems.append(f"model {name!r}: pymc_model failed: {type(exc).__name__}: {exc}")
            continue
        if not np.isfinite(logp):
            problems.append(f"model {name!r}: logp at the initial point is {logp}")
        if not np.all(np.isfinite(dlogp)):
            problems.append(f"model {name!r}: the logp gradient at the initial point is not finite")
        observed = [v.name for v in pm_model.observed_RVs]
        if not observed:
            problems.append(f"model {name!r}: the PyMC model has no observed variable")
    _fail(problems, f"{spec.name}: PyMC models do not build")


def check_pymc_likelihood(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model whose PyMC version uses its kernel's likelihood (``other_pymc_likelihood`` unset):
    the log-likelihood of the observations in the non-hierarchical PyMC model, at three subjects'
    parameters drawn from the prior, is −Σ NLL."""
    problems = []
    names = [n for n in _model_names(spec) if spec.model(n).has_pymc and not spec.model(n).other_pymc_likelihood]
    if not names:
        raise NotApplicable(f"no model of {spec.name} has a PyMC version with its kernel's likelihood")
    for name in names:
        m = spec.model(name)
        params = prior_draws(m.parameters, 3, np.random.default_rng(config.seed), spread=0.5)
        table = simulate_from_model(spec, name, params, config.seed, small_design(spec, config))
        pm_model = m.pymc_model(table, hierarchical=False)
        point = dict(pm_model.initial_point())
        for p in m.parameters:
            point[f"{p.name}_u"] = p.to_unconstrained(params[p.name])
        ll = float(pm_model.compile_fn(pm_model.logp(vars=[pm_model.observed_RVs[0]], sum=True),
                                       inputs=pm_model.value_vars, on_unused_input="ignore")(point))
        data = m.subject_data(table)
        thetas = [np.array([p.to_constrained(point[f"{p.name}_u"][i]) for p in m.parameters]) for i in range(len(data))]
        nll = sum(m.nll(t, d) for t, d in zip(thetas, data.values(), strict=True))
        if not math.isclose(ll, -nll, rel_tol=1e-9, abs_tol=1e-8):
            problems.append(f"model {name!r}: PyMC log-likelihood {ll:.10g} != −NLL {-nll:.10g}")
    _fail(problems, f"{spec.name}: the PyMC likelihood is not the kernel's")


def power_effect(parameter: Parameter) -> float:
    """A small shift of ``parameter`` inside its bounds: 5 % of its range (of 1 where unbounded),
    downwards where upwards would leave the bounds."""
    span = parameter.upper - parameter.lower if math.isfinite(parameter.upper - parameter.lower) else 1.0
    return 0.05 * span if parameter.default + 0.05 * span <= parameter.upper else -0.05 * span


def check_power_study(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model's parameter-power study runs (one simulated study of two subjects, a small shift
    of its first parameter, a between-subject SD of 2 on the unconstrained scale, half the small
    design): its one cell has one simulation of two subjects and a mean estimate inside the
    parameter's bounds, so the population draws stay inside the bounds whatever the transform."""
    from cogtestbed.validation.studies.driver import run_study, study_spec

    design: dict[str, Any] = {}
    if spec.trials_field is not None:
        design[spec.trials_field] = max(1, int(getattr(small_design(spec, config), spec.trials_field)) // 2)
    problems = []
    for name in _model_names(spec):
        p = next(iter(spec.model(name).parameters))
        study = study_spec(kind="power", experiment=spec.name, models=(name,), effect=p.name,
                           effect_size=power_effect(p), subjects=(2,), reps=1, sd_between=2.0, design=design,
                           seed=config.seed)
        try:
            (cell,) = run_study(study, workers=1).summary["cells"]
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            problems.append(f"model {name!r}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
            continue
        if (cell["sims"], cell["n_subjects"]) != (1, 2):
            problems.append(f"model {name!r}: a cell of {cell['sims']} simulations of {cell['n_subjects']} subjects")
        value = _estimate_of_parameter(study, spec.model(name), float(cell["mean_estimate"]))
        if not p.lower <= value <= p.upper:
            problems.append(f"model {name!r}: mean estimate of {p.name} {value} outside [{p.lower}, {p.upper}]")
    _fail(problems, f"{spec.name}: parameter power studies do not run")


def _estimate_of_parameter(study: Any, model: Any, estimate: float) -> float:
    """A one-sample power cell's mean estimate (the effect less its value before it moves, on the
    test's scale: :func:`~cogtestbed.validation.studies.model_studies.one_sample_values`) as the
    parameter's own value on its natural scale."""
    from cogtestbed.validation.studies.model_studies import effect_scale, one_sample_null

    value = estimate + one_sample_null(study, model)
    return math.exp(value) if effect_scale(model, study.effect) == "log" else value


# ----------------------------------------------------------------------------- data and metrics
def check_importers(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Each importer recognises published files, loads them into schema-valid trial tables the
    metrics run on, and does not claim a plain trial-table CSV."""
    from cogtestbed.registry import validate_table
    from cogtestbed.schema import TrialTableError
    from cogtestbed.simulation import simulate

    if not spec.importers:
        raise NotApplicable(f"{spec.name} declares no importers")
    root = config.resolved_data_dir()
    if root is None or not root.is_dir():
        raise NotApplicable(f"no published data directory (pass data_dir or set ${DATA_DIR_ENV})")
    problems: list[str] = []
    plain = simulate(spec, _agents(spec)[0], 1, config.seed, design=small_design(spec, config))
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "trials.csv"
        plain.to_csv(csv, index=False)
        for source in sorted(spec.importers):
            with contextlib.suppress(Exception):
                if spec.importer(source).sniff(csv):
                    problems.append(f"importer {source!r} claims a plain trial-table CSV (sniff too lenient)")
    for source in sorted(spec.importers):
        files = sniffed_files(spec, source, root, problems)
        for path in sorted(files, key=lambda p: p.stat().st_size)[: 1 if config.quick else None]:
            where = f"importer {source!r} on {path.relative_to(root)}"
            try:
                # published files as their source wrote them: a run judging a condition again is its next
                # session (the default refusal is check_importer_conflicts')
                table = _load_published(spec.importer(source), path)
                validate_table(table)
            except (TrialTableError, ValueError, KeyError) as exc:
                problems.append(f"{where}: {type(exc).__name__}: {exc}")
                continue
            if not table["experiment"].astype(str).eq(spec.name).all():
                problems.append(f"{where}: experiment column is not {spec.name!r}")
            if not table.equals(_load_published(spec.importer(source), path)):
                problems.append(f"{where}: two loads of the same file differ")
            if config.quick:  # the metrics of the first QUICK_IMPORT_UNITS subjects (runs) only
                table = table[table["subject"].isin(table["subject"].unique()[:QUICK_IMPORT_UNITS])]
            problems += [f"{where}: {p}" for p in _metrics_problems(spec, table, require_finite=False)]
    _fail(problems, f"{spec.name}: importers do not round-trip")


def _load_published(importer: Any, path: Path) -> pd.DataFrame:
    """A published file through ``importer``, with ``sessions="split"`` where it has no trial key
    (CogBench's claude-1.csv and claude-2.csv append runs twice)."""
    return importer.load_as(path, "split" if importer.repeat_key else None)


def _metrics_problems(spec: ExperimentSpec, table: pd.DataFrame, require_finite: bool = True,
                      options: Mapping[str, Any] | None = None) -> list[str]:
    try:
        result = spec.metrics.fn(table, **(options or {}))
    except Exception as exc:  # noqa: BLE001 - a crash is the finding
        return [f"metrics raised {type(exc).__name__}: {exc}"]
    problems = metrics_result_problems(result, spec.metrics.unit)
    if problems:
        return problems
    missing = [k for k in spec.metrics.headline if k not in result["metrics"]]
    problems += [f"headline key {k!r} missing from result['metrics']" for k in missing]
    for k in spec.metrics.headline:
        if k in result["metrics"]:
            problems += headline_problems(k, result["metrics"][k], require_finite)
    if not result[spec.metrics.unit]:
        problems.append(f"result[{spec.metrics.unit!r}] is empty")
    n_bad = int((~table["valid"].astype(bool)).sum())
    if n_bad == 0 and result["n_invalid"] != 0:
        problems.append(f"n_invalid is {result['n_invalid']} on a table without invalid trials")
    if n_bad > 0 and result["n_invalid"] == 0:
        problems.append(f"n_invalid is 0 on a table with {n_bad} invalid trials")
    return problems


def check_metrics_result(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The metrics return the typed MetricsResult (declared unit key, n_invalid, flags) with every
    headline key present and typed (finite numbers and bools) on the default design, for every agent's simulated table
    (quick mode: the agents the spec's generators and studies name)."""
    from cogtestbed.simulation import simulate

    design = spec.design_cls()
    problems = []
    for agent in spec.declared_agents if config.quick else _agents(spec):
        table = simulate(spec, agent, config.n_subjects, config.seed, design=design)
        options = spec.metrics.smoke_options if config.quick else None
        problems += [f"agent {agent!r}: {p}" for p in _metrics_problems(spec, table, options=options)]
    _fail(problems, f"{spec.name}: the metrics do not return a conforming MetricsResult")


def study_overrides(decl: StudyDecl, config: CheckConfig) -> dict[str, Any]:
    """Settings of a reps = 1 smoke run of a declared study: quick mode keeps the smallest declared
    design point, :data:`QUICK_STUDY_SUBJECTS` subjects and short chains."""
    from cogtestbed.validation.studies.study_kinds import kind_fields

    if not config.quick:
        return {}
    out: dict[str, Any] = {"subjects": (QUICK_STUDY_SUBJECTS,)} if "subjects" in kind_fields(decl.kind) else {}
    if decl.runs:
        out["runs"] = (min(decl.runs),)
    if decl.trials:
        out["trials"] = (min(decl.trials),)
    if decl.kind == "sbc":
        out.update(draws=QUICK_SBC_DRAWS, tune=QUICK_SBC_DRAWS, chains=1)
    return out


def check_study_declarations(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The experiment declares at least one study, and each builds a study spec that passes
    :func:`~cogtestbed.validation.studies.driver.check_study` (names, settings, designs; nothing is run)."""
    from cogtestbed.validation.studies.driver import check_study, spec_from_decl

    if not spec.studies:
        raise ConformanceError(f"{spec.name}: declares no study (StudyDecl in the spec's studies)")
    problems = []
    for i, decl in enumerate(spec.studies):
        try:
            check_study(spec_from_decl(spec, decl, reps=1))
        except Exception as exc:  # noqa: BLE001 - any refusal is the finding
            problems.append(f"study {i} ({decl.kind}): {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
    _fail(problems, f"{spec.name}: declared studies do not build")


def check_declared_studies(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Each declared study runs once (reps = 1) through the generic study driver and gives a
    non-empty results table and summary (quick mode: at its smallest declared design)."""
    if not spec.studies:
        raise NotApplicable(f"{spec.name} declares no studies")
    from cogtestbed.validation.studies import driver as studies

    runner = getattr(studies, "run_declared_study", None)
    if runner is None:
        raise ConformanceError("the study driver has no generic entry for declared studies "
                               "(cogtestbed.validation.studies.driver.run_declared_study)")
    problems = []
    for i, decl in enumerate(spec.studies):
        what = f"study {i} ({decl.kind}: {decl.description or decl.model or decl.metric})"
        try:
            result = runner(spec, decl, reps=1, seed=config.seed, **study_overrides(decl, config))
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            problems.append(f"{what}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            continue
        if getattr(result, "table", None) is None or result.table.empty:
            problems.append(f"{what}: the results table is empty")
        if not getattr(result, "summary", None):
            problems.append(f"{what}: the summary is empty")
    _fail(problems, f"{spec.name}: declared studies do not run")


# ============================================================================= what every family declares
#: Lapse rates of the lapse checks (invalid, random): high enough that every small session lapses.
LAPSE = Lapse(0.3, 0.2)


def tables_module_name(env_module: str) -> str:
    """The tables module of an environment module: its ``environments`` package segment replaced by
    ``tables`` (``cogtestbed.environments.coin`` → ``cogtestbed.tables.coin``, and the same in
    another package: ``mypkg.environments.coin`` → ``mypkg.tables.coin``); an environment outside an
    ``environments`` package has its tables module beside it (``mypkg.coin`` → ``mypkg.tables``...
    named ``<package>.tables.<module>``)."""
    parts = env_module.split(".")
    if "environments" in parts[:-1]:
        i = len(parts) - 1 - parts[::-1].index("environments")
        return ".".join([*parts[:i], "tables", *parts[i + 1:]])
    return ".".join([*parts[:-1], "tables", parts[-1]])


def check_tables_module(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The schema is declared once, in the tables module of the environment's family
    (``cogtestbed/tables/<family>.py`` for ``cogtestbed/environments/<family>.py``; an experiment
    of another package keeps the same layout in its own package, :func:`tables_module_name`):
    ``SCHEMA`` is the spec's ``table_schema`` and its environment's, and ``EXPERIMENT``, where the
    module declares one (the name is declared once, in the spec: :meth:`ExperimentSpec.claim_pieces`),
    is the spec's name."""
    problems = []
    if not isinstance(spec.table_schema, TrialSchema):
        problems.append("table_schema is not declared (a TrialSchema from the tables module)")
    elif spec.schema is not spec.env_cls.table_schema:
        problems.append("the spec's table_schema is not its environment's table_schema")
    module = tables_module_name(spec.env_cls.__module__)
    try:
        tables = importlib.import_module(module)
    except ImportError:
        problems.append(f"no tables module {module} (beside the environment {spec.env_cls.__module__})")
    else:
        if getattr(tables, "SCHEMA", None) is not spec.schema:
            problems.append(f"{module}.SCHEMA is not the spec's schema")
        names = {getattr(tables, "EXPERIMENT", spec.name), spec.name, spec.env_cls.experiment}
        if len(names) != 1:
            problems.append(f"EXPERIMENT, the spec's name and the environment's differ: {sorted(map(str, names))}")
    _fail(problems, f"{spec.name}: tables module")


def check_phases(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The environment declares its phases, observes the current one and does not override
    :meth:`TextEnv.step`."""
    env = spec.env_cls()
    problems = []
    if not env.phases or not all(isinstance(p, Phase) for p in env.phases):
        problems.append("no phases declared (a tuple of Phase)")
    else:
        obs, _ = env.reset(seed=3)
        if obs.get("phase") != 0 or obs.get("response") != env.phases[0].response:
            problems.append("the first observation does not name phase 0 and its response")
        if not env.observation_space.contains(obs):
            problems.append("the first observation is outside the observation space")
    if type(env).step is not TextEnv.step:
        problems.append("the environment overrides TextEnv.step")
    _fail(problems, f"{spec.name}: phases")


def check_lapses(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every family supports lapses (:mod:`cogtestbed.lapse`): a zero lapse leaves the
    table byte for byte as without one; with lapses some answers are invalid, and the batch path
    plays them itself (never falling back on the step path) with the step path's table, byte for byte."""
    import cogtestbed.simulation as simulation

    design = small_design(spec, config)
    agent = list(spec.agents)[-1]
    args: dict[str, Any] = {"design": design}
    plain = simulation.simulate(spec, agent, 3, 5, **args)
    problems = []
    if table_bytes(simulation.simulate(spec, agent, 3, 5, lapse=Lapse(0.0, 0.0), **args)) != table_bytes(plain):
        problems.append("a zero lapse changes the table")
    step = simulation.simulate(spec, agent, 4, 9, lapse=LAPSE, method="step", **args)
    original = simulation.run_stepwise

    def refuse(*_: object, **__: object) -> Any:
        raise ConformanceError(f"{spec.name}: the batch path of agent {agent!r} plays lapses through the step path")

    simulation.run_stepwise = refuse
    try:
        batch = simulation.simulate(spec, agent, 4, 9, lapse=LAPSE, **args)
    finally:
        simulation.run_stepwise = original
    if table_bytes(batch) != table_bytes(step):
        problems.append(f"agent {agent!r}: the batch and step paths differ with lapses")
    if batch["valid"].all():
        problems.append(f"agent {agent!r}: no invalid answer at an invalid-answer rate of {LAPSE.invalid}")
    _fail(problems, f"{spec.name}: lapses")


# ============================================================================= the suite
#: Every check, in the order they run (cheap declaration checks first).
CHECKS: dict[str, CheckFn] = {
    "spec_declaration": check_spec_declaration,
    "tables_module": check_tables_module,
    "schema_fast_path": check_schema_fast_path,
    "phases": check_phases,
    "gymnasium_env": check_gymnasium_env,
    "seeded_determinism": check_seeded_determinism,
    "prompt_continuation": check_prompt_continuation,
    "prompt_forms": check_prompt_forms,
    "garbage_answers": check_garbage_answers,
    "llm_budget": check_llm_budget,
    "batch_equals_step": check_batch_equals_step,
    "lapses": check_lapses,
    "parameter_bounds": check_parameter_bounds,
    "bound_edges": check_bound_edges,
    "prior_bounds": check_prior_bounds,
    "pointwise_likelihood": check_pointwise_likelihood,
    "likelihood_gradient": check_likelihood_gradient,
    "search_objective": check_search_objective,
    "lapse_likelihood": check_lapse_likelihood,
    "mle_recovery": check_mle_recovery,
    "pymc_model": check_pymc_model,
    "pymc_likelihood": check_pymc_likelihood,
    "power_study": check_power_study,
    "importers": check_importers,
    "importer_conflicts": check_importer_conflicts,
    "metrics_result": check_metrics_result,
    "study_declarations": check_study_declarations,
    "declared_studies": check_declared_studies,
    "permuted_table": check_permuted_table,
    "all_invalid_metrics": check_all_invalid_metrics,
    "constant_answers": check_constant_answers,
}


def experiment_checks(spec: ExperimentSpec, *, quick: bool = True, data_dir: Path | None = None) -> Iterator[Check]:
    """Every check, bound to the configuration (pytest parametrises over these)."""
    config = CheckConfig(quick=quick, data_dir=data_dir)
    for name, fn in CHECKS.items():
        yield Check(name, fn, config)


def run_check(spec: ExperimentSpec, check: Check) -> CheckResult:
    """Run one check, honouring the spec's expected failures."""
    start = time.perf_counter()
    reason = spec.expected_failures.get(check.name)
    try:
        check(spec)
    except NotApplicable as exc:
        return CheckResult(spec.name, check.name, "skipped", str(exc), time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a result
        msg = str(exc) if isinstance(exc, ConformanceError) else "".join(
            traceback.format_exception_only(type(exc), exc)).strip()
        if reason is not None:
            return CheckResult(spec.name, check.name, "xfail", f"expected: {reason} ({msg.splitlines()[0]})",
                               time.perf_counter() - start)
        return CheckResult(spec.name, check.name, "failed", msg, time.perf_counter() - start)
    if reason is not None:
        return CheckResult(spec.name, check.name, "xpass", f"declared as an expected failure ({reason}) but "
                           "passes: remove it from expected_failures", time.perf_counter() - start)
    return CheckResult(spec.name, check.name, "passed", "", time.perf_counter() - start)


def check_experiment(spec: ExperimentSpec | str, *, quick: bool = True, data_dir: Path | None = None,
                     checks: Sequence[str] | None = None, raise_on_failure: bool = True) -> ConformanceReport:
    """Run the conformance suite on one experiment (a spec or a registered name).

    ``checks`` restricts the run to those check names.  With ``raise_on_failure`` (default) a
    failing check (or an expected failure that passes) raises :class:`ConformanceError` listing
    them all; otherwise inspect :attr:`ConformanceReport.failures`.
    """
    if isinstance(spec, str):
        from cogtestbed.registry import get_experiment

        spec = get_experiment(spec)
    unknown = sorted(set(checks or ()) - set(CHECKS))
    if unknown:
        raise InputError(f"unknown conformance check(s) {', '.join(unknown)}; choose from: {', '.join(CHECKS)}")
    results = [run_check(spec, c) for c in experiment_checks(spec, quick=quick, data_dir=data_dir)
               if checks is None or c.name in checks]
    report = ConformanceReport(spec.name, results)
    if raise_on_failure:
        report.raise_for_failures()
    return report

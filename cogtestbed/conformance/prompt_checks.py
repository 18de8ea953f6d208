"""Conformance checks of an experiment's prompts (registered in
:data:`cogtestbed.conformance.suite.CHECKS`): every prompt ends as the LLM must continue
it (:func:`check_prompt_continuation`, judged by :func:`prompt_form_problems` and
:func:`scored_form_problems`), and the declared prompt forms reword without changing the
information or the play (:func:`check_prompt_forms`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.harness import (
    agent_names,
    fail,
    is_scored,
    play_episode,
    small_design,
    step_prefix,
)
from cogtestbed.environments.base import Design, TextEnv
from cogtestbed.experiments.spec import ExperimentSpec

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
        if prompt != prompt.rstrip():  # a served model reads a lone whitespace token there
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
        if is_scored(obs):
            found = scored_form_problems(obs.get("prompt"), obs["response"].continuations)
        else:
            found = prompt_form_problems(obs.get("prompt"), step_prefix(env))
        problems.extend(f"{where}: {p}" for p in found)
        if isinstance(obs.get("prompt"), str) and obs["prompt"] != env.render_prompt():
            problems.append(f"{where}: obs['prompt'] differs from env.render_prompt()")
        if not env.observation_space.contains(obs):
            entries = getattr(env.observation_space, "spaces", {})
            bad = [k for k, s in entries.items() if k in obs and not s.contains(obs[k])]
            problems.append(f"{where}: observation not in observation_space (entries {bad or 'structure'})")

    for agent in agent_names(spec):
        play_episode(spec, design, agent, config.seed, inspect, config.probe_steps)
    fail(problems, f"{spec.name}: prompts do not end as the LLM must continue them")


#: Forms of ours every experiment declares besides the verbatim form 0.
MIN_OUR_FORMS = 4


def _form_declaration_problems(forms: Sequence[Any]) -> list[str]:
    ids = [f.id for f in forms]
    problems = [] if ids == list(range(len(ids))) else [f"form ids must be 0..K-1 in order, got {ids}"]
    if not forms or (forms[0].kind, forms[0].source) != ("verbatim", "paper"):
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
                        if is_scored(obs) else prompt_form_problems(obs.get("prompt"), step_prefix(env)))

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
    agent = agent_names(spec)[0]
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
    fail(problems, f"{spec.name}: prompt forms")

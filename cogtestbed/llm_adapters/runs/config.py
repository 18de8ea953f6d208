"""A run's configuration (:class:`RunConfig`: what determines its calls) and its result, and what follows
from the configuration alone: each subject's prompt form, sampling seed and session."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.base import Design, Sessions
from cogtestbed.environments.forms import FormDesign, FormDraw, draw_forms
from cogtestbed.llm_adapters.clients.base import LLMClient
from cogtestbed.llm_adapters.runs.agent import LLMAgent
from cogtestbed.llm_adapters.runs.rundir import TRANSPORT_FIELDS, identity_differences
from cogtestbed.registry import Experiment
from cogtestbed.simulation import seed_streams, with_form_columns

TRIALS_FILE, CALLS_FILE = "trials.parquet", "calls.parquet"
LLM_PACKAGES = ("openai", "anthropic", "transformers", "torch", "tokenizers", "tiktoken")
#: Bytes of a parse error quoted back by a re-ask, as the plan of a subject's worst case counts it.
REASK_REASON_BYTES = 256


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run's calls (what ``--resume`` checks), and ``base_url``, recorded
    with them; the endpoint it reaches is checked apart (``run.json``'s ``endpoint``,
    :func:`~cogtestbed.llm_adapters.runs.rundir.endpoint_change`): it may change on resume only where the
    cache is shared across endpoints."""

    experiment: str
    llm: str
    base_url: str | None
    mode: str
    n_subjects: int
    seed: int
    design: dict[str, Any]
    max_tokens: int = 8
    temperature: float = 0.0
    stop: tuple[str, ...] = ("\n",)
    reask: int = 0
    top_logprobs: int | None = None
    #: Prompt forms the subjects are assigned to (balanced, seeded); ``None``: form 0 for all.
    forms: tuple[int, ...] | None = None
    #: ``--reasoning-effort`` (OpenAI's reasoning models; None: the model's default) and ``--thinking-budget``
    #: (Anthropic's extended thinking on; for OpenAI's reasoning models the hidden tokens reserved).
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    #: Hidden tokens each request's completion limit reserves before the answer's ``max_tokens``
    #: (:func:`~cogtestbed.llm_adapters.clients.capabilities.hidden_allowance`); None: not a reasoning run.
    hidden_allowance: int | None = None

    @property
    def completion_limit(self) -> int:
        """The completion limit a request carries: the answer's ``max_tokens`` plus the hidden allowance."""
        return self.max_tokens + (self.hidden_allowance or 0)

    def agent(self, client: LLMClient, env: Any, **kwargs: Any) -> LLMAgent:
        """The :class:`LLMAgent` of this run's answer and reasoning settings."""
        return LLMAgent(client, env, max_tokens=self.completion_limit, temperature=self.temperature, stop=self.stop,
                        reask=self.reask, top_logprobs=self.top_logprobs, reasoning_effort=self.reasoning_effort,
                        thinking_budget=self.thinking_budget if self.hidden_allowance is not None and
                        not always_reasons(self.llm) else None, **kwargs)

    def as_json(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self), default=str))  # tuples → lists, as stored

    def differences(self, stored: dict[str, Any]) -> list[str]:
        """Identity settings that differ from ``stored`` (transport settings never do)."""
        return identity_differences(self.as_json(), stored)

    def transport(self) -> dict[str, Any]:
        return {k: v for k, v in self.as_json().items() if k in TRANSPORT_FIELDS}


@dataclass
class RunResult:
    """What ``ct.run`` of one LLM returns: the trials, every call, which subjects finished and the spend.

    Attributes
    ----------
    trials : pandas.DataFrame
        The trial table of the run.
    calls : pandas.DataFrame
        Every call to the LLM.
    complete : numpy.ndarray
        Which subjects finished.
    status : str
        ``complete`` or why the run stopped.
    stats : dict
        Calls, tokens and cost.

    Examples
    --------
    ``ct.run`` returns one; a run's fields:

    >>> import cogtestbed as ct
    >>> sorted(ct.RunResult.__dataclass_fields__)
    ['calls', 'complete', 'stats', 'status', 'trials']
    """

    trials: pd.DataFrame
    calls: pd.DataFrame
    complete: np.ndarray
    status: str
    stats: dict[str, Any] = field(default_factory=dict)


def always_reasons(llm: str) -> bool:
    """Whether ``llm`` reasons on every call (OpenAI's reasoning models: the thinking budget is only the
    hidden tokens reserved, never sent)."""
    from cogtestbed.llm_adapters.clients.capabilities import capability_of

    cap = capability_of(llm)
    return cap is not None and cap.always_reasons()


def subject_forms(config: RunConfig) -> list[int]:
    """Each subject's prompt form: :func:`~cogtestbed.environments.forms.draw_forms` of the run's
    forms and seed (form 0 for all without ``forms``), as ``simulate --forms`` assigns them."""
    if config.forms is None:
        return [0] * config.n_subjects
    return [int(f) for f in draw_forms(FormDesign(tuple(config.forms)), config.n_subjects, config.seed).form]


def with_run_forms(table: pd.DataFrame, config: RunConfig) -> pd.DataFrame:
    """``table`` with the ``form`` column of its subjects where the run assigned forms."""
    if config.forms is None:
        return table
    form = np.asarray(subject_forms(config), dtype=np.int64)
    return with_form_columns(table, FormDraw(form, {}, tuple(config.forms)))


def subject_seeds(seed: int, n: int) -> list[int]:
    """Per-subject sampling seeds (used only at temperature > 0), from the agent stream."""
    _, agent_rng = seed_streams(seed)
    return [int(x) for x in agent_rng.integers(0, 2**31 - 1, size=n)]


def draw_sessions(exp: Experiment, design: Design, n: int, seed: int) -> Sessions:
    env_rng, _ = seed_streams(seed)
    return exp.env_cls.sample_sessions(design, n, env_rng)



def capability_entry(config: RunConfig) -> dict[str, Any] | None:
    """``run.json``'s ``capability``: the model's row of the capability table
    (:mod:`~cogtestbed.llm_adapters.clients.capabilities`), what the run wanted but does not send (``not_sent``,
    with ``line``, the sentence the run states at its start; None where everything is sent), the reasoning
    controls and the completion limit (the answer's tokens plus the hidden allowance).  None for a model
    the table has no row for (a local model)."""
    from cogtestbed.llm_adapters.clients.base import NEUTRAL_SAMPLING
    from cogtestbed.llm_adapters.clients.capabilities import capability_of, unsent, unsent_line

    cap = capability_of(config.llm)
    if cap is None:
        return None
    thinking = config.thinking_budget is not None and cap.reasoning == "thinking"
    wanted: dict[str, Any] = {"temperature": config.temperature}
    if config.llm.startswith("openai:"):
        wanted.update(NEUTRAL_SAMPLING)
    dropped = unsent(cap, wanted, thinking)
    if config.top_logprobs is not None and not cap.logprobs:
        dropped["top_logprobs"] = config.top_logprobs
    line = unsent_line(config.llm, cap, dropped) if dropped else None
    return {"row": cap.as_json(), "not_sent": dropped, "line": line,
            "stop": "sent" if cap.stop else "applied to the answer text (the model takes no stop strings)",
            "reasoning_effort": config.reasoning_effort, "thinking_budget": config.thinking_budget,
            "completion_limit": {"answer": config.max_tokens, "hidden_allowance": config.hidden_allowance,
                                 "total": config.completion_limit}}



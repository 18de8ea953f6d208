"""One short session of every registered experiment on a real local model (``hf:smollm2-135m``).

What the demo's real-model section, ``benchmarks/real_model.py`` (docs/real-model.md) and the
real-model tests share: a short design per experiment (:data:`SHORT_DESIGNS`, a project default
that never claims a paper used it: the smallest session that still shows every step kind of the
task), the modes an experiment supports, one session through the ordinary run machinery
(:func:`~cogtestbed.llm_adapters.runs.runner.run_experiment`: the same environment, prompts and parsers
as every other subject), and a summary of the recorded tables: the valid-answer rate, the parse
errors grouped by reason, tokens per call, calls per second and, for scored steps, the recorded
distributions' sums and the mass outside the continuations.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.registry import get_experiment

#: Design overrides of one short session per experiment (see module docstring).
SHORT_DESIGNS: dict[str, dict[str, Any]] = {
    "bart": {"max_pumps": (8,), "balloons_per_type": 1},
    "belief-coherence": {"n_contexts": 1, "n_reps": 1, "variants": ("pi0",)},
    "collider": {"scope": "cell", "cntbl_conds": ("ppp",), "fillers": ("lorem",)},
    "horizon": {},
    "instrumental-learning": {"visits_per_casino": 2},
    # text only: SmolLM2 is a text model (the image modalities need a vision-language model)
    "magnitude": {"task": "duration", "conditions": ("base",), "modalities": ("text",), "ranges": ("short",),
                  "trials_per_session": 4, "context": 3},
    "probabilistic-reasoning": {},
    "restless-bandit": {"block_lengths": (3, 3)},
    "revealed-belief": {"scenarios": ("dice",), "variants": ("regular",), "dice_faces": (6,), "n_dice": (1,)},
    # two pairs of each of Spektor et al.'s two contexts (4 trials)
    "risky-choice": {"contexts": (((28, -28, 32, -32), (12, -20, 24, -32)), ((28, -28, 32, -32), (36, -26, 44, -32)))},
    "temporal-discounting": {},
    "two-step": {"n_days": 3},
}
MODES = ("completions", "chat")
#: Characters of a parse error kept as its reason (the quoted answer after it is dropped).
REASON_CHARS = 120
#: A quoted answer (and punctuation) ending a parse error.
_QUOTED_TAIL = re.compile(r"""\s*(?:"[^"]*"|'[^']*')\W*$""")
#: The offered options a parse error lists (they vary per trial).
_EXPECTED = re.compile(r"\(expected [^)]*\)")


def short_design(name: str, **overrides: Any) -> Any:
    """The experiment's design with :data:`SHORT_DESIGNS` (and ``overrides``) applied."""
    exp = get_experiment(name)
    return exp.env_cls.design_cls(**{**SHORT_DESIGNS.get(name, {}), **overrides})


def supported_modes(name: str, design: Any = None) -> tuple[str, ...]:
    """``("completions", "chat")`` for a text prompt, ``("chat",)`` where the environment's prompts
    are chat messages (they have no raw-text form)."""
    exp = get_experiment(name)
    design = design if design is not None else short_design(name)
    prompt = exp.env_cls(design).reset(seed=0)[0]["prompt"]
    return MODES if isinstance(prompt, str) else ("chat",)


def parse_reason(error: str) -> str:
    """A parse error without the answer it quotes at its end (``no option 1 or 2 at the start of
    "..."`` → ``no option 1 or 2 at the start of``), so that errors group by reason."""
    expected = _EXPECTED.search(error)
    head = _QUOTED_TAIL.sub("", _EXPECTED.sub("", error)).strip().rstrip(":").strip()
    if expected is not None:
        head += " (expected …)"
    return head[:REASON_CHARS] or error[:REASON_CHARS]


@dataclass
class SessionSummary:
    """What one session recorded (see module docstring)."""

    experiment: str
    mode: str
    transport: str
    trials: int
    valid_trials: int
    valid_rate: float | None
    calls: int
    seconds: float
    calls_per_second: float | None
    prompt_tokens_per_call: float | None
    completion_tokens_per_call: float | None
    parse_reasons: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)
    scored_steps: int = 0
    #: Largest |Σ p - 1| over the recorded scored distributions (None: no scored step).
    scored_sum_error: float | None = None
    #: Mean mass outside the declared continuations over the scored steps (None where not defined).
    mass_outside_mean: float | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def summarise(name: str, mode: str, transport: str, trials: pd.DataFrame, calls: pd.DataFrame,
              seconds: float) -> SessionSummary:
    """:class:`SessionSummary` of one run's trial table and call log."""
    n_trials = len(trials)
    valid = int(trials["valid"].sum()) if n_trials else 0
    errors = calls.loc[~calls["valid"] & calls["parse_error"].notna(), ["parse_error", "raw_response"]]
    reasons = Counter(parse_reason(str(e)) for e in errors["parse_error"])
    examples: dict[str, str] = {}
    for err, raw in zip(errors["parse_error"], errors["raw_response"], strict=True):
        examples.setdefault(parse_reason(str(err)), str(raw))
    n_calls = len(calls)
    scored = calls[calls["kind"] == "score"] if "score_logprobs" in calls else calls.iloc[:0]
    sums = [float(np.exp(np.asarray(lp, dtype=float)).sum()) for lp in scored.get("score_logprobs", [])]
    outside = [float(m) for m in scored.get("mass_outside", []) if m is not None and not pd.isna(m)]
    sum_error = (max(abs(s + (o or 0.0) - 1.0) for s, o in zip(sums, _pad(outside, len(sums)), strict=True))
                 if sums else None)
    return SessionSummary(
        experiment=name, mode=mode, transport=transport, trials=n_trials, valid_trials=valid,
        valid_rate=valid / n_trials if n_trials else None, calls=n_calls, seconds=round(seconds, 2),
        calls_per_second=round(n_calls / seconds, 3) if seconds > 0 and n_calls else None,
        prompt_tokens_per_call=_mean(calls.get("prompt_tokens")),
        completion_tokens_per_call=_mean(calls.get("completion_tokens")),
        parse_reasons=dict(reasons.most_common()), examples=examples, scored_steps=len(scored),
        scored_sum_error=sum_error, mass_outside_mean=float(np.mean(outside)) if outside else None,
    )


def _pad(values: list[float], n: int) -> list[float | None]:
    """``values`` where there is one per scored step, else ``None`` each (the sum is then checked
    against 1 alone, as when the continuations overlap and no mass outside is defined)."""
    return list(values) if len(values) == n else [None] * n


def _mean(column: pd.Series | None) -> float | None:
    if column is None:
        return None
    values = pd.to_numeric(column, errors="coerce").dropna()
    return round(float(values.mean()), 1) if len(values) else None


def run_session(client: Any, name: str, mode: str, run_dir: Path, cache_path: Path, *, seed: int = 0,
                max_tokens: int | None = None, transport: str = "in-process", subjects: int = 1,
                forms: tuple[int, ...] | None = None, **overrides: Any) -> tuple[Any, SessionSummary]:
    """One subject (or ``subjects``, assigned to prompt ``forms`` as ``run --forms`` assigns them) of
    ``name``'s short design on ``client`` through
    :func:`~cogtestbed.llm_adapters.runs.runner.run_experiment`; (its RunResult, its summary).

    ``client`` must already render ``mode`` (an :class:`~cogtestbed.llm_adapters.clients.hf.HFClient`
    with ``chat`` set accordingly, or an OpenAI-compatible client of that mode).
    """
    from cogtestbed.llm_adapters.middleware.cache import CachedClient, ResponseCache
    from cogtestbed.llm_adapters.middleware.limits import Budget
    from cogtestbed.llm_adapters.runs.config import RunConfig
    from cogtestbed.llm_adapters.runs.runner import run_experiment

    exp = get_experiment(name)
    design = short_design(name, **overrides)
    answer = exp.env_cls.answer_defaults(design)  # what `cogtestbed run` uses unless told otherwise
    config = RunConfig(experiment=name, llm=client.spec, base_url=getattr(client, "base_url", None), mode=mode,
                       n_subjects=subjects, seed=seed, design=design.model_dump(mode="json"),
                       max_tokens=max_tokens or answer.max_tokens, stop=answer.stop, forms=forms)
    cached = CachedClient(client, ResponseCache(cache_path), Budget())
    start = time.perf_counter()
    result = asyncio.run(run_experiment(exp, design, cached, config, run_dir, concurrency=1))
    seconds = time.perf_counter() - start
    return result, summarise(name, mode, transport, result.trials, result.calls, seconds)


def metrics_of(name: str, trials: pd.DataFrame) -> tuple[dict[str, Any] | None, str | None]:
    """(the experiment's metrics of a session's table, None) — or (None, why they could not be
    computed): a short session may hold too few valid trials for a fit."""
    exp = get_experiment(name)
    try:
        result = exp.metrics(trials)
    except Exception as exc:  # the metric's own refusal, shown as the reason
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
    metrics = {k: _plain(v) for k, v in dict(result["metrics"]).items()}
    if all(v is None for v in metrics.values()):
        return None, "every metric is null: " + "; ".join(str(f) for f in result.get("flags", []))[:200]
    return metrics, None


def _plain(value: Any) -> Any:
    """JSON-friendly numbers (NaN → None)."""
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(float(value)) else round(float(value), 4)
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


# ----------------------------------------------------------------------------- the demo's section
#: The demo's real-model sessions (completions mode, CogBench's setting): the demo's own CogBench task
#: at a shortened design, and a newer family whose answers are scored exactly.
DEMO_SESSIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("instrumental-learning", "rw-pm", {"visits_per_casino": 3}),
    ("revealed-belief", "rational", {"scenarios": ("dice",), "variants": ("regular",)}),
)
#: Synthetic subjects simulated at each demo design, beside the model's one session.
DEMO_SYNTHETIC = 20


@dataclass
class DemoResult:
    """One demo session: the model's summary and metrics next to a synthetic population's."""

    experiment: str
    agent: str
    design: dict[str, Any]
    run_dir: str
    summary: SessionSummary
    model_metrics: dict[str, Any] | None
    model_reason: str | None
    synthetic_metrics: dict[str, Any] | None
    synthetic_reason: str | None
    synthetic_valid_rate: float | None = None

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["summary"] = self.summary.as_json()
        return out


def demo_sessions(client: Any, output: Path, seed: int, agent_params: dict[str, dict[str, float]] | None = None,
                  on_progress: Any = None) -> list[DemoResult]:
    """Run :data:`DEMO_SESSIONS` on ``client`` (completions mode) into ``output``, and simulate
    :data:`DEMO_SYNTHETIC` synthetic subjects of each design's agent for comparison."""
    from cogtestbed.simulation import simulate

    results = []
    for name, agent, overrides in DEMO_SESSIONS:
        if on_progress is not None:
            on_progress(f"{client.spec}: one session of {name} (completions)")
        run_dir = output / name
        result, summary = run_session(client.with_chat(False), name, "completions", run_dir,
                                      output / "llm_cache.sqlite", seed=seed, **overrides)
        model_metrics, model_reason = metrics_of(name, result.trials)
        design = short_design(name, **overrides)
        synthetic = simulate(name, agent, DEMO_SYNTHETIC, seed, (agent_params or {}).get(name), design=design)
        synthetic_metrics, synthetic_reason = metrics_of(name, synthetic)
        valid = float(synthetic["valid"].mean()) if "valid" in synthetic and len(synthetic) else None
        results.append(DemoResult(name, agent, design.model_dump(mode="json"), str(run_dir), summary,
                                  model_metrics, model_reason, synthetic_metrics, synthetic_reason, valid))
    return results


def demo_table(res: DemoResult, model_label: str) -> pd.DataFrame:
    """Rows: the model's session and the synthetic population; columns: trials, valid rate, tokens
    per call and every metric either row has (null where it could not be computed)."""
    keys = list(dict.fromkeys([*(res.model_metrics or {}), *(res.synthetic_metrics or {})]))
    s = res.summary
    model_row = {"trials": s.trials, "valid_rate": s.valid_rate, "prompt_tokens_per_call": s.prompt_tokens_per_call,
                 **{k: (res.model_metrics or {}).get(k) for k in keys}}
    synth_row = {"trials": s.trials, "valid_rate": res.synthetic_valid_rate, "prompt_tokens_per_call": None,
                 **{k: (res.synthetic_metrics or {}).get(k) for k in keys}}
    index = [f"{model_label} (1 session)", f"synthetic {res.agent} ({DEMO_SYNTHETIC} subjects)"]
    return pd.DataFrame([model_row, synth_row], index=index).astype(object).where(lambda d: d.notna(), None)

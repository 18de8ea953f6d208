"""Pricing a reasoning model's hidden tokens: from a pilot's measurement, or an assumption.

A reasoning model bills its hidden tokens as output, and they are often many times the answer's, so a
cost priced from the answers alone is wrong by that factor.  What a call bills beyond its prompt is
measured in a pilot run of the model (``calls.parquet``'s ``completion_tokens``, hidden ones included,
and ``reasoning_tokens`` where the provider reports them), per step kind (``text``: an answer, ``sample``:
one draw of a sampled estimate), with a normal 95 % interval of the mean per call
(:func:`from_pilot`); or it is an explicit assumption (``--assume-reasoning-tokens N`` or ``LOW:HIGH``,
:func:`from_assumption`).  :meth:`HiddenTokens.cost_range` prices a dry run's calls with it: a cost
range (low, expected, high).  Without either, a plan for a reasoning model is refused
(:func:`refusal`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogtestbed.errors import InputError

#: A run directory's call log (:data:`cogtestbed.llm_adapters.runs.config.CALLS_FILE`; the runner imports this
#: module, so the name is not imported from it).
CALLS_FILE = "calls.parquet"
#: z of the two-sided 95 % normal interval of a pilot's mean tokens per call.
Z95 = 1.959964
#: Where a plan's prompt tokens are an estimate (no tokenizer of the model here, re-priced at the pilot's billed
#: tokens per character), its cost range takes them ± this share (this package's default: the re-priced counts
#: were within 4 % of the billed ones in benchmarks/studies/price_coverage.py).
PROMPT_MARGIN = 0.10
#: Where an assumption gives one number N, the range it is priced over: N / this to N x this (this
#: package's default, stated in the plan).
ASSUMPTION_FACTOR = 2.0


@dataclass(frozen=True)
class KindTokens:
    """Billed completion tokens per call of one step kind: mean, interval, and the calls behind it."""

    mean: float
    low: float
    high: float
    calls: int
    #: Mean hidden reasoning tokens per call among them (None where the provider reports none).
    reasoning_mean: float | None = None
    #: SD of the tokens per call (a pilot's; None for an assumption): the range of a run of M calls is then the
    #: t prediction interval of their mean, mean ± t₀.₉₇₅,ₙ₋₁ · SD · √(1/n + 1/M) (:meth:`interval`).
    sd: float | None = None

    def interval(self, calls: float) -> tuple[float, float]:
        """(low, high) tokens per call of a run of ``calls`` calls: the pilot's prediction interval for their
        mean where it measured a spread, else the stored interval (an assumption's, or a one-call pilot's)."""
        if self.sd is None or self.calls < 2 or calls <= 0:
            return self.low, self.high
        from scipy import stats

        half = float(stats.t.ppf(0.975, self.calls - 1)) * self.sd * math.sqrt(1 / self.calls + 1 / calls)
        return max(0.0, self.mean - half), self.mean + half


@dataclass(frozen=True)
class HiddenTokens:
    """Completion tokens per call (hidden ones included) by step kind, and where they come from."""

    kinds: dict[str, KindTokens]
    source: str
    #: The pilot's billed prompt tokens per character of its prompts: where the plan's prompt tokens are an
    #: estimate (no tokenizer of the model here), they are re-priced at this rate (None: an assumption).
    prompt_tokens_per_char: float | None = None
    #: Where the pilot ran on this machine or an emulator (a loopback ``base_url``, an in-process model):
    #: the endpoint it measured, else None.  Its hidden tokens are the local server's, not a provider's.
    local_endpoint: str | None = None
    #: Calls per session the pilot made (mean, and its 95 % prediction interval for the mean of a run's sessions
    #: given by :meth:`calls_per_session`'s ``sessions``), and the design it played (JSON): where answers decide
    #: what is asked next, a dry run's random playthrough is not the model's, so a plan of the same design takes
    #: the pilot's calls per session.  None for an assumption.
    session_calls: tuple[float, ...] | None = None
    design: dict[str, Any] | None = None
    #: Billed prompt tokens per session of the pilot (None for an assumption, or a pilot of another model):
    #: a plan of the same design takes them (prompts that render earlier answers grow with the model's own).
    session_prompt_tokens: tuple[float, ...] | None = None

    def calls_per_session(self, sessions: int) -> tuple[float, float, float] | None:
        """(low, mean, high) calls per session of a run of ``sessions`` sessions: the pilot's mean with the
        t prediction interval of a mean of ``sessions`` new sessions (± t₀.₉₇₅,ₖ₋₁ · SD · √(1/k + 1/n));
        a one-session pilot gives its count ±25 % (this package's default: no spread is measured); None
        without a measurement."""
        return _per_session(self.session_calls, sessions)

    def prompt_tokens_per_session(self, sessions: int) -> tuple[float, float, float] | None:
        """(low, mean, high) billed prompt tokens per session, as :meth:`calls_per_session`."""
        return _per_session(self.session_prompt_tokens, sessions)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HiddenTokens:
        """The inverse of :meth:`as_json` (a plan's ``run.completion_tokens_per_call``)."""
        try:
            kinds = {str(k): KindTokens(**v) for k, v in dict(data["per_call"]).items()}
            calls, prompts = data.get("session_calls"), data.get("session_prompt_tokens")
            return cls(kinds, str(data["source"]), data.get("prompt_tokens_per_char"), data.get("local_endpoint"),
                       None if calls is None else tuple(float(c) for c in calls), data.get("design"),
                       None if prompts is None else tuple(float(c) for c in prompts))
        except (KeyError, TypeError, ValueError):
            raise InputError("completion_tokens_per_call: not the JSON of a pilot's or an assumption's tokens per "
                             "call (source, per_call)") from None

    @property
    def local_note(self) -> str | None:
        """``hidden tokens measured on a local endpoint (...)`` where the pilot ran locally, else None."""
        if self.local_endpoint is None:
            return None
        return (f"hidden tokens measured on a local endpoint ({self.local_endpoint}): a provider's model may spend "
                "far more (or fewer) tokens per call; pilot the hosted model before trusting this price")

    def __hash__(self) -> int:  # a plan's pricer settings are a dictionary key (its pool workers' pricers)
        import json

        return hash(json.dumps(self.as_json(), sort_keys=True))

    def per_call(self, kind: str) -> KindTokens:
        """The kind's tokens per call; a kind the pilot did not make takes every call's pooled figure."""
        return self.kinds.get(kind) or self.kinds["all"]

    def prompt_tokens(self, estimated: int, chars_per_token: float, exact: bool) -> int:
        """A plan's prompt tokens: its count where ``exact``, else its estimate (``chars_per_token``
        characters a token) re-priced at the pilot's billed tokens per character."""
        if exact or self.prompt_tokens_per_char is None:
            return estimated
        return round(estimated * chars_per_token * self.prompt_tokens_per_char)

    def cost_range(self, price: Any, prompt_tokens: int, calls: dict[str, int],
                   scale: tuple[float, float, float] = (1.0, 1.0, 1.0), exact_prompts: bool = True,
                   prompts: tuple[float, float, float] | None = None) -> tuple[float, float, float]:
        """(low, expected, high) USD of ``calls`` (kind -> requests) with ``prompt_tokens`` in all; ``scale``:
        (low, expected, high) factors on the calls and prompt tokens (a pilot's calls per session against the
        dry run's, where answers decide what is asked next); prompt tokens that are an estimate
        (``exact_prompts`` false) ± :data:`PROMPT_MARGIN` at the ends; ``prompts``: (low, expected, high) prompt
        tokens in all measured by a pilot of the same design (then used as they are)."""
        margin = 0.0 if exact_prompts else PROMPT_MARGIN
        ends = prompts or (prompt_tokens * scale[0] * (1 - margin), prompt_tokens * scale[1],
                           prompt_tokens * scale[2] * (1 + margin))

        def per_call(kind: str, which: str, n: float) -> float:
            row = self.per_call(kind)
            return row.mean if which == "mean" else row.interval(n)[0 if which == "low" else 1]

        def total(which: str, factor: float, prompt: float) -> float:
            out = sum(n * factor * per_call(kind, which, n * factor) for kind, n in calls.items())
            return float(price.cost(round(prompt), round(out)))
        return total("low", scale[0], ends[0]), total("mean", scale[1], ends[1]), total("high", scale[2], ends[2])

    def as_json(self) -> dict[str, Any]:
        return {"source": self.source, "per_call": {k: dict(v.__dict__) for k, v in self.kinds.items()},
                "prompt_tokens_per_char": self.prompt_tokens_per_char,
                **({"local_endpoint": self.local_endpoint} if self.local_endpoint is not None else {}),
                **({"session_calls": list(self.session_calls), "design": self.design}
                   if self.session_calls is not None else {}),
                **({"session_prompt_tokens": list(self.session_prompt_tokens)}
                   if self.session_prompt_tokens is not None else {})}


def _per_session_counts(calls_file: Path) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None]:
    """(calls, billed prompt tokens) of each session of a pilot's call log (first attempts counted as calls;
    prompt tokens None where a call has no reported usage)."""
    import pandas as pd

    log = pd.read_parquet(calls_file, columns=["subject", "attempt", "prompt_tokens"])
    firsts = log[log["attempt"].fillna(0).astype(int) == 0]
    calls = tuple(float(n) for n in firsts.groupby("subject").size().to_numpy())
    tokens = pd.to_numeric(log["prompt_tokens"], errors="coerce")
    prompts = tuple(float(n) for n in tokens.groupby(log["subject"]).sum().to_numpy()) if tokens.notna().all() else ()
    return calls or None, prompts or None


def _per_session(values: tuple[float, ...] | None, sessions: int) -> tuple[float, float, float] | None:
    """(low, mean, high) of a per-session count for the mean of ``sessions`` new sessions (t prediction
    interval; ±25 % from one session)."""
    if not values:
        return None
    import numpy as np
    from scipy import stats

    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    if x.size < 2:
        return 0.75 * mean, mean, 1.25 * mean
    half = float(stats.t.ppf(0.975, x.size - 1)) * float(x.std(ddof=1)) * math.sqrt(1 / x.size + 1 / sessions)
    return max(0.0, mean - half), mean, mean + half


def _kind_tokens(values: Any, reasoning: Any) -> KindTokens:
    import numpy as np

    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    half = Z95 * float(x.std(ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else mean
    r = np.asarray(reasoning, dtype=float)
    r = r[np.isfinite(r)]
    return KindTokens(round(mean, 2), round(max(0.0, mean - half), 2), round(mean + half, 2), int(len(x)),
                      round(float(r.mean()), 2) if len(r) else None,
                      round(float(x.std(ddof=1)), 3) if len(x) > 1 else None)


def from_pilot(path: str | Path, llm: str | None = None, experiment: str | None = None) -> HiddenTokens:
    """The completion tokens per call of the pilot run in ``path`` (its ``calls.parquet``, answered calls
    not served from the cache), per step kind and pooled (``all``); ``llm`` and ``experiment``: the model and
    the experiment planned, which the pilot must have run."""
    import json

    import pandas as pd

    from cogtestbed.llm_adapters.runs.rundir import CONFIG_FILE

    path = Path(path)
    if not (path / CALLS_FILE).exists():
        raise InputError(f"`pilot`: no {CALLS_FILE} in {path} (run `cogtestbed run ... -o {path}` first)")
    manifest = json.loads((path / CONFIG_FILE).read_text()) if (path / CONFIG_FILE).exists() else {}
    ran = manifest.get("config", {}).get("llm")
    played = manifest.get("config", {}).get("experiment")
    if experiment is not None and played is not None and played != experiment:
        raise InputError(f"`pilot`: {path} is a run of {played}, not of {experiment}: tokens per call are the "
                         "experiment's own")
    if llm is not None and ran is not None and ran != llm:
        raise InputError(f"`pilot`: {path} ran {ran}; a reasoning model's hidden tokens are its own: pilot {llm}")
    calls = pd.read_parquet(path / CALLS_FILE)
    calls = calls[~calls["cached"].astype(bool) & calls["completion_tokens"].notna()]
    if calls.empty:
        raise InputError(f"`pilot`: {path} has no answered call with a reported usage to measure hidden tokens from")
    reasoning = calls["reasoning_tokens"] if "reasoning_tokens" in calls else pd.Series([float("nan")] * len(calls))
    kinds = {"all": _kind_tokens(calls["completion_tokens"], reasoning)}
    for kind, group in calls.groupby("kind", sort=True):
        kinds[str(kind)] = _kind_tokens(group["completion_tokens"], reasoning.loc[group.index])
    chars = sum(len(_MARKER.sub("", str(text))) for text in calls["prompt"])
    billed = pd.to_numeric(calls["prompt_tokens"], errors="coerce").sum()
    per_char = round(float(billed) / chars, 6) if chars and billed > 0 else None
    local = local_endpoint(manifest.get("config", {}))
    session_calls, session_prompts = _per_session_counts(path / CALLS_FILE)
    return HiddenTokens(kinds, f"pilot {path} ({ran or 'model unknown'}, {len(calls)} answered calls"
                        + (f", on the local endpoint {local}" if local else "") + ")", per_char, local,
                        session_calls or None, manifest.get("config", {}).get("design"), session_prompts or None)


#: Host names of this machine (:data:`cogtestbed.llm_adapters.clients.openai_client.LOOPBACK`).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def local_endpoint(config: dict[str, Any]) -> str | None:
    """The endpoint of a run's config (``run.json``'s ``config``) where it is this machine: a ``base_url`` on a
    loopback host (the package's server, its reasoning emulator, llama.cpp) or an in-process backend; else None."""
    from urllib.parse import urlparse

    url = config.get("base_url")
    if url:
        host = (urlparse(str(url)).hostname or "").lower()
        return str(url) if host in LOOPBACK_HOSTS or host.startswith("127.") else None
    from cogtestbed.errors import CogtestbedError
    from cogtestbed.llm_adapters.clients.backends import get_backend

    backend = str(config.get("llm") or "").partition(":")[0]
    try:
        remote = get_backend(backend).remote
    except (CogtestbedError, KeyError, ValueError):
        return None
    return None if remote else f"{config.get('llm')} (in-process)"


def expected_from_pilot(path: str | Path, llms: Any, experiment: str | None = None) -> HiddenTokens | None:
    """A pilot's completion tokens per call for a model that does not reason (the expected cost and its
    range of a plan, :func:`~cogtestbed.llm_adapters.runs.pricing.expected_cost`); its billed prompt tokens
    per character only where it ran the model planned; None where it has no usage to measure."""
    import dataclasses

    try:
        found = from_pilot(path, None, experiment)
    except InputError:
        return None
    if not any(f"({llm}," in found.source for llm in llms):  # another model's tokenizer: not its prompt counts
        found = dataclasses.replace(found, prompt_tokens_per_char=None, session_prompt_tokens=None)
    return found


#: The role and image markers ``calls.parquet``'s ``prompt`` text puts around chat messages.
_MARKER = re.compile(r"^\[(?:user|assistant|system|image)\]\n", re.M)


def from_assumption(text: str) -> HiddenTokens:
    """``--assume-reasoning-tokens``: ``N`` (priced from N / :data:`ASSUMPTION_FACTOR` to N x it) or
    ``LOW:HIGH`` completion tokens per call, hidden ones included."""
    try:
        parts = [float(p) for p in str(text).split(":")]
    except ValueError:
        parts = []
    if len(parts) == 1 and parts[0] > 0:
        mid = parts[0]
        low, high = mid / ASSUMPTION_FACTOR, mid * ASSUMPTION_FACTOR
    elif len(parts) == 2 and 0 <= parts[0] <= parts[1] and parts[1] > 0:
        low, high = parts
        mid = (low + high) / 2
    else:
        raise InputError(f"`assume_reasoning_tokens` must be N or LOW:HIGH completion tokens per call (hidden ones "
                         f"included), positive, got {text!r}")
    row = KindTokens(mid, low, high, 0)
    return HiddenTokens({"all": row}, f"assumption --assume-reasoning-tokens {text}"
                        + (f" (priced from N/{ASSUMPTION_FACTOR:g} to N x {ASSUMPTION_FACTOR:g})"
                           if len(parts) == 1 else ""))


def reasons(llm: str, thinking_budget: int | None) -> bool:
    """Whether a run of ``llm`` spends hidden tokens: a model that always reasons, or thinking turned on."""
    from cogtestbed.llm_adapters.clients.capabilities import capability_of

    cap = capability_of(llm)
    return cap is not None and (cap.always_reasons() or (cap.reasoning == "thinking" and thinking_budget is not None))


def refusal(llm: str) -> str:
    """The one line a plan for a reasoning model without a measurement or an assumption is refused with."""
    return (f"{llm} is a reasoning model: it bills hidden reasoning tokens as output, often many times the answer's, "
            "so its cost cannot be priced from the prompts; give `pilot` DIR (a run of it: its tokens per call are "
            "measured) or `assume_reasoning_tokens` N (or LOW:HIGH) completion tokens per call")

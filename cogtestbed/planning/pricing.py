"""A plan's prices: every design priced by the dry run of an LLM run.

A :class:`Pricer` renders a design's prompts with the experiment's own environment and counts them
with the model's tokenizer (or the backend's documented fallback), through the same
:func:`~cogtestbed.llm_adapters.runs.pricing.dry_run` as ``cogtestbed run --dry-run``, so a plan's calls,
tokens and dollars equal that command's by construction.  While a plan searches, combinations are
ordered and pruned by their cost per session (the dry run of :data:`UNIT_SESSIONS` sessions).
:func:`cost_key` is what "cheapest" minimises.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scipy.special import stdtrit

from cogtestbed.errors import CogtestbedError
from cogtestbed.experiments.spec import ExperimentSpec

#: Sessions rendered to price one session of a design while the search orders and prunes.
UNIT_SESSIONS = 3
#: A design's sessions x trials above which :meth:`Pricer.priced` scales the search's rendered sessions
#: (:data:`UNIT_SESSIONS` of them) to the design's sessions instead of rendering every one, with the sampling
#: error of the scaled prompt tokens stated (``Cost.sampling``).
EXACT_TRIALS = 50_000


@dataclass(frozen=True)
class Cost:
    """Calls, tokens and dollars of a design (summed over its LLMs)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    dollars: float | None
    exact_tokens: bool
    #: ``dry-run``: the design's every prompt rendered; ``per-session``: a search estimate.
    source: str
    per_llm: tuple[dict[str, Any], ...] = ()
    #: With ``--batch``: the same requests at the standard price (``dollars`` is the batch price).
    standard_dollars: float | None = None
    #: (low, high) of ``expected_dollars`` over the interval of the completion tokens per call measured in a
    #: pilot or assumed (:mod:`~cogtestbed.llm_adapters.runs.hidden_tokens`; a reasoning model always has one);
    #: None where nothing measures them.
    dollars_range: tuple[float, float] | None = None
    #: The expected dollars: the sum of the LLMs' dry-run ``expected_cost_usd``
    #: (:func:`~cogtestbed.llm_adapters.runs.pricing.expected_cost`, the one function ``run --dry-run`` prices
    #: with): the measured completion tokens per call where a pilot or an assumption gives them, else ``dollars``.
    expected_dollars: float | None = None
    #: Where the design's prompts were priced from a sample of its sessions (:meth:`Pricer.priced`): sessions
    #: rendered and priced, and the standard error of the scaled prompt tokens and dollars; None where every
    #: session was rendered.
    sampling: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["per_llm"] = list(self.per_llm)
        return out


@dataclass
class Pricer:
    """Prices designs with :func:`~cogtestbed.llm_adapters.runs.pricing.dry_run` (``run --dry-run``'s code).

    ``llms``: one spec per group (a metric difference compares two LLMs; one spec given prices
    both groups as that model).  ``completion_per_call``: tokens per answer measured in a pilot
    (then ``expected_dollars`` uses it; ``dollars`` always books ``max_tokens`` per call, as the
    dry run does).  ``max_tokens`` ``None``: the experiment's own answer setting for each design
    (:meth:`~cogtestbed.environments.base.TextEnv.answer_defaults`, with its stop strings), as
    ``cogtestbed run`` uses it.
    """

    exp: ExperimentSpec
    llms: tuple[str, ...]
    seed: int
    max_tokens: int | None = None
    temperature: float = 0.0
    reask: int = 0
    prices: Path | None = None
    #: A model without a price is refused (:func:`~cogtestbed.llm_adapters.clients.prices.require_price`) unless
    #: this is set; then its designs are costed in calls and tokens only.
    allow_unpriced: bool = False
    mode: str = "auto"
    #: Price the runs in the provider's batch mode (``run --batch``: :mod:`cogtestbed.llm_adapters.middleware.batch`):
    #: at the table's ``batch_discount``, scored steps sampled; the standard price is kept beside it.
    batch: bool = False
    #: A reasoning model's controls (``run --reasoning-effort / --thinking-budget``) and its completion tokens
    #: per call, measured in a pilot or assumed (:mod:`~cogtestbed.llm_adapters.runs.hidden_tokens`): without
    #: them a reasoning model is refused in one line.
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    hidden: Any = None
    clients: list[Any] = field(default_factory=list)
    _cache: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    #: Dry runs under way on a pool's workers (:meth:`submit`): (design JSON, sessions) -> future reports.
    _pending: dict[tuple[str, int], Future[tuple[dict[str, Any], ...]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from cogtestbed.llm_adapters import make_client
        from cogtestbed.planning.request_checks import priced_llms

        self.price = priced_llms(self.llms, self.prices, self.allow_unpriced, self.reasoning_effort,
                                 self.thinking_budget, self.hidden)
        self.standard = list(self.price)
        built: dict[str, Any] = {}
        for spec in dict.fromkeys(self.llms):
            built[spec] = make_client(spec, mode=self.mode)
        if self.batch:
            from cogtestbed.llm_adapters.middleware.batch.client import BatchClient
            from cogtestbed.llm_adapters.middleware.batch.pricing import batch_price

            built = {spec: BatchClient(client) for spec, client in built.items()}
            self.price = [None if p is None else batch_price(p, s) for p, s in zip(self.price, self.llms, strict=True)]
        self.clients = [built[s] for s in self.llms]

    def run_config(self, llm: str, client: Any, design: Any, n: int) -> Any:
        """The :class:`~cogtestbed.llm_adapters.runs.config.RunConfig` ``cogtestbed run`` builds for it."""
        from cogtestbed.llm_adapters.clients.capabilities import capability_of, hidden_allowance
        from cogtestbed.llm_adapters.runs.config import RunConfig

        answer = self.exp.env_cls.answer_defaults(design)
        return RunConfig(experiment=self.exp.name, llm=llm, base_url=None,
                         mode="chat" if client.chat else "completions", n_subjects=n, seed=self.seed,
                         design=design.model_dump(mode="json"), max_tokens=self.tokens_per_answer(design),
                         temperature=self.temperature, reask=self.reask, stop=answer.stop,
                         reasoning_effort=self.reasoning_effort, thinking_budget=self.thinking_budget,
                         hidden_allowance=hidden_allowance(capability_of(llm), self.thinking_budget))

    def tokens_per_answer(self, design: Any) -> int:
        """Most tokens an answer to ``design`` may take: the given ``max_tokens``, else the experiment's."""
        return self.max_tokens or int(self.exp.env_cls.answer_defaults(design).max_tokens)

    def dry_run(self, group: int, design: Any, n: int) -> dict[str, Any]:
        """``cogtestbed run --dry-run`` of ``n`` sessions of ``design`` for group ``group``'s LLM."""
        return self.reports(design, n)[group]

    def reports(self, design: Any, n: int) -> tuple[dict[str, Any], ...]:
        """Each group's ``run --dry-run`` report of ``n`` sessions of ``design`` (cached): taken from
        the dry runs :meth:`submit` started on a pool, else rendered here, every LLM not yet priced
        from one playthrough of the sessions (:func:`~cogtestbed.llm_adapters.runs.pricing.dry_runs`: each
        report equals that LLM's own dry run)."""
        text = design.model_dump_json()
        self._collect(text, n)
        missing = [g for g in self._first_groups() if (self.llms[g], text, n) not in self._cache]
        if missing:
            from cogtestbed.llm_adapters.runs.pricing import dry_runs

            runs = [(self.clients[g], self.run_config(self.llms[g], self.clients[g], design, n), self.price[g])
                    for g in missing]
            for g, report in zip(missing, dry_runs(self.exp, design, runs, hidden=self.hidden, spread=True),
                                 strict=True):
                standard = self.standard[g]
                if self.batch and standard is not None:
                    from cogtestbed.llm_adapters.middleware.batch.pricing import batch_report

                    report = batch_report(report, standard)
                self._cache[(self.llms[g], text, n)] = report
        return tuple(self._cache[(llm, text, n)] for llm in self.llms)

    def _first_groups(self) -> list[int]:
        """The first group of each distinct LLM (groups with the same LLM share its reports)."""
        return [self.llms.index(llm) for llm in dict.fromkeys(self.llms)]

    def submit(self, pool: Any, design: Any, n: int) -> None:
        """Start the dry runs of ``n`` sessions of ``design`` on ``pool`` (a fork pool,
        :func:`~cogtestbed.studies.driver.fork_pool`), whose workers rebuild this pricer
        from its settings and render the prompts while this process searches on; :meth:`reports`
        takes their reports (identical numbers: the same dry run, seeded the same).  Nothing is
        started for a design already priced, or for an experiment a worker cannot look up by name."""
        from cogtestbed.registry import get_experiment

        text = design.model_dump_json()
        if (text, n) in self._pending or all((llm, text, n) in self._cache for llm in self.llms):
            return
        try:
            if get_experiment(self.exp.name) is not self.exp:
                return
        except CogtestbedError:
            return
        self._pending[(text, n)] = pool.submit(_worker_reports, self._settings(), design, n)

    def price_all(self, items: Sequence[tuple[Any, int]], workers: int, label: str | None = None) -> None:
        """Price every ``(design, sessions)`` of ``items`` (then cached) on a fork pool of up to
        ``workers`` processes, the largest first, counting each on the heartbeat under ``label``;
        with one worker or one design to render, nothing here (:meth:`exact` renders it when asked).
        An interrupt or an error ends the pool's workers at once."""
        from cogtestbed.progress import beat, tick
        from cogtestbed.studies.driver import fork_pool, stop_pool

        todo = {(design.model_dump_json(), n): (design, n) for design, n in items}
        todo = {k: v for k, v in todo.items() if not all((llm, *k) in self._cache for llm in self.llms)}
        if workers <= 1 or len(todo) < 2:
            return
        hb = beat()
        if hb is not None and label is not None:
            hb.phase(label, len(todo))
        order = sorted(todo.values(), key=lambda item: -item[1])
        pool = fork_pool(min(workers, len(order)))
        try:
            for design, n in order:
                self.submit(pool, design, n)
            for design, n in order:
                self.reports(design, n)
                tick()
        except BaseException:
            stop_pool(pool)
            raise
        pool.shutdown(wait=True)

    def _settings(self) -> tuple[tuple[str, Any], ...]:
        """What a worker needs to build this pricer (the experiment by name)."""
        return (("exp", self.exp.name), ("llms", self.llms), ("seed", self.seed), ("max_tokens", self.max_tokens),
                ("temperature", self.temperature), ("reask", self.reask), ("prices", self.prices),
                ("allow_unpriced", self.allow_unpriced), ("mode", self.mode), ("batch", self.batch),
                ("reasoning_effort", self.reasoning_effort), ("thinking_budget", self.thinking_budget),
                ("hidden", self.hidden))

    def _collect(self, text: str, n: int) -> None:
        """Cache the reports of a dry run :meth:`submit` started (waiting for it); one that failed or
        was cancelled (its pool stopped) is left to :meth:`reports` to render here, which raises
        any error of the design itself as it would without a pool."""
        future = self._pending.pop((text, n), None)
        if future is None:
            return
        try:
            reports = future.result()
        except Exception:  # noqa: BLE001 - rendered again here, where a real error raises with its own traceback
            return
        for llm, report in zip(self.llms, reports, strict=True):
            self._cache.setdefault((llm, text, n), report)

    def exact(self, design: Any, n: int) -> Cost:
        """Every prompt of the design rendered and counted (``run --dry-run`` per LLM, summed)."""
        return _sum_reports(self.reports(design, n), "dry-run")

    def priced(self, design: Any, n: int) -> Cost:
        """The cost of ``n`` sessions of ``design`` as a plan prints it: :meth:`exact` where the design's
        sessions x trials are at most :data:`EXACT_TRIALS` (or ``n`` is at most :data:`UNIT_SESSIONS`), else
        the :data:`UNIT_SESSIONS` sessions the search rendered, scaled to ``n`` (:func:`scaled_reports`), with
        the sampling error of the prompt tokens in ``Cost.sampling``.  Calls and completion tokens scale
        exactly where every session makes the same requests (a fixed design); prompt tokens are within
        the stated error."""
        if n <= UNIT_SESSIONS or n * int(design.n_trials) <= EXACT_TRIALS:
            return self.exact(design, n)
        sample = self.reports(design, UNIT_SESSIONS)
        if any("prompt_tokens_by_session" not in r for r in sample):  # a pricer whose dry runs give no spread
            return self.exact(design, n)
        return _sum_reports(scaled_reports(sample, n), "sampled")

    def per_session(self, design: Any) -> Cost:
        """Cost of one session (mean of :data:`UNIT_SESSIONS` rendered sessions, per LLM summed)."""
        total = _sum_reports(self.reports(design, UNIT_SESSIONS), "per-session")
        k = UNIT_SESSIONS
        return Cost(total.calls // k, total.prompt_tokens // k, total.completion_tokens // k,
                    None if total.dollars is None else total.dollars / k, total.exact_tokens, "per-session",
                    standard_dollars=None if total.standard_dollars is None else total.standard_dollars / k,
                    dollars_range=None if total.dollars_range is None else (total.dollars_range[0] / k,
                                                                            total.dollars_range[1] / k),
                    expected_dollars=None if total.expected_dollars is None else total.expected_dollars / k)


#: Pricers built in this pool worker, by their settings (:meth:`Pricer.submit`).
_WORKER_PRICERS: dict[tuple[tuple[str, Any], ...], Pricer] = {}


def _worker_reports(settings: tuple[tuple[str, Any], ...], design: Any, n: int) -> tuple[dict[str, Any], ...]:
    """A pool worker's :meth:`Pricer.reports` (its pricer built once from ``settings``)."""
    from cogtestbed.registry import get_experiment

    pricer = _WORKER_PRICERS.get(settings)
    if pricer is None:
        kwargs = dict(settings)
        pricer = _WORKER_PRICERS[settings] = Pricer(get_experiment(kwargs.pop("exp")), **kwargs)
    return pricer.reports(design, n)


def _worst(report: Mapping[str, Any], key: str) -> Any:
    """``report[key]``, or its value should the server turn out not to score (the run then samples,
    :func:`~cogtestbed.llm_adapters.runs.runner.decide_scoring`) where that is larger: a plan books the
    worst case of the method that may run."""
    alt = (report.get("if_the_server_cannot_score") or {}).get(key)
    value = report[key]
    return value if alt is None or value is None or alt <= value else alt


#: Counts of a dry-run report that grow with its sessions (:func:`scaled_reports` scales them).
_COUNT_KEYS = ("calls", "prompt_tokens", "max_completion_tokens", "images", "calls_with_all_reasks",
               "calls_if_every_answer_is_invalid", "calls_ceiling")
#: Dollars of a dry-run report (scaled, as the counts they price).
_DOLLAR_KEYS = ("estimated_cost_usd", "max_cost_usd", "standard_estimated_cost_usd", "expected_cost_usd")


def scaled_reports(reports: Sequence[Mapping[str, Any]], n: int) -> tuple[dict[str, Any], ...]:
    """Dry-run reports of ``k`` sessions (each with ``prompt_tokens_by_session``) scaled to ``n`` sessions of
    the same design: every count and price times ``n / k``, and ``sampled``: the sessions rendered, the
    standard error of the scaled prompt tokens, ``sd · sqrt(n²/k + n)`` (the sample's mean standing in
    for the mean of ``n`` other sessions drawn alike; ``sd`` the rendered sessions' standard deviation),
    and the half-width of its 99 % interval (Student's t on ``k - 1`` degrees of freedom, the sessions'
    spread estimated from ``k``), in tokens and in dollars (those tokens at the input price).  The price is
    recomputed from the scaled tokens (as the dry run prices its own); text that quotes the ``k``
    sessions' counts (``calls_range``) is left out."""
    out = []
    for r in reports:
        tokens = [float(t) for t in r["prompt_tokens_by_session"]]
        k = len(tokens)
        f = n / k
        scaled: dict[str, Any] = {key: v for key, v in r.items() if key not in ("prompt_tokens_by_session",
                                                                                  "calls_range")}
        scaled["subjects"] = n
        for key in _COUNT_KEYS:
            if isinstance(scaled.get(key), int):
                scaled[key] = round(scaled[key] * f)
        for key in _DOLLAR_KEYS:
            if isinstance(scaled.get(key), float | int):
                scaled[key] = round(float(scaled[key]) * f, 4)
        price = r.get("price_usd_per_mtok")
        if price is not None and r.get("estimated_cost_usd") is not None and "standard_estimated_cost_usd" not in r:
            # from the scaled tokens, as the dry run prices its own (not the rounded price scaled)
            scaled["estimated_cost_usd"] = round((scaled["prompt_tokens"] * float(price["input"])
                                                  + scaled["max_completion_tokens"] * float(price["output"])) / 1e6, 4)
            if r.get("expected_cost_usd") == r["estimated_cost_usd"]:
                scaled["expected_cost_usd"] = scaled["estimated_cost_usd"]
        for key in ("expected_cost_usd_range", "estimated_cost_usd_range"):
            if scaled.get(key) is not None:
                scaled[key] = [round(float(v) * f, 4) for v in scaled[key]]
        alt = scaled.get("if_the_server_cannot_score")
        if alt:
            scaled["if_the_server_cannot_score"] = {**alt, "calls": round(alt["calls"] * f), "estimated_cost_usd":
                                                    None if alt["estimated_cost_usd"] is None
                                                    else round(alt["estimated_cost_usd"] * f, 4)}
        se = (statistics.stdev(tokens) if k > 1 else 0.0) * math.sqrt(n * n / k + n)
        bound = se * float(stdtrit(max(k - 1, 1), 0.995))
        scaled["sampled"] = {"sessions_rendered": k, "sessions": n, "prompt_tokens_se": round(se),
                             "prompt_tokens_bound": math.ceil(bound),
                             "dollars_bound": None if price is None else round(bound * float(price["input"]) / 1e6,
                                                                                4)}
        out.append(scaled)
    return tuple(out)


def _sampling(reports: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """``Cost.sampling`` of reports scaled from a sample (:func:`scaled_reports`): the LLMs' errors summed (one
    playthrough prices every LLM, so their errors move together); None where every session was rendered."""
    sampled = [r["sampled"] for r in reports if "sampled" in r]
    if not sampled:
        return None
    dollars = [s["dollars_bound"] for s in sampled]
    return {"sessions_rendered": sampled[0]["sessions_rendered"], "sessions": sampled[0]["sessions"],
            "prompt_tokens_se": sum(s["prompt_tokens_se"] for s in sampled),
            "prompt_tokens_bound": sum(s["prompt_tokens_bound"] for s in sampled),
            "dollars_bound": None if any(d is None for d in dollars) else round(sum(dollars), 4)}


def _sum_reports(reports: Sequence[Mapping[str, Any]], source: str) -> Cost:
    dollars = [_worst(r, "estimated_cost_usd") for r in reports]
    standard: list[float | None] = [r.get("standard_estimated_cost_usd") for r in reports]
    return Cost(calls=sum(int(_worst(r, "calls")) for r in reports),
                prompt_tokens=sum(int(r["prompt_tokens"]) for r in reports),
                completion_tokens=sum(int(r["max_completion_tokens"]) for r in reports),
                dollars=None if any(d is None for d in dollars) else float(sum(dollars)),
                exact_tokens=all(r["token_counts"].startswith("exact") for r in reports),
                source=source, per_llm=tuple({k: v for k, v in r.items() if k != "prompt_tokens_by_session"}
                                             for r in reports),
                standard_dollars=None if any(d is None for d in standard) else float(sum(d or 0.0 for d in standard)),
                dollars_range=_sum_ranges(reports), expected_dollars=expected_dollars(reports),
                sampling=_sampling(reports))


def expected_dollars(reports: Sequence[Mapping[str, Any]]) -> float | None:
    """The summed ``expected_cost_usd`` of dry-run reports (each LLM's ``run --dry-run``), rounded to the
    cent's hundredth as each report is; None where one is unknown."""
    values = [r.get("expected_cost_usd", r.get("estimated_cost_usd")) for r in reports]
    return None if any(v is None for v in values) else round(float(sum(values)), 4)


def _sum_ranges(reports: Sequence[Mapping[str, Any]]) -> tuple[float, float] | None:
    """The summed expected-cost range of reports of which one has a range (measured or assumed completion
    tokens per call; a report without a range counts its expected cost at both ends); None where none has a
    range or a cost is unknown."""
    if not any("expected_cost_usd_range" in r for r in reports):
        return None
    ranges = [r.get("expected_cost_usd_range") or [r.get("expected_cost_usd", r.get("estimated_cost_usd"))] * 2
              for r in reports]
    if any(v is None for pair in ranges for v in pair):
        return None
    return float(sum(p[0] for p in ranges)), float(sum(p[1] for p in ranges))


def money(cost: Cost) -> float:
    """The cost's dollars as a plain float (:func:`cost_key`: the number designs are compared by)."""
    return float(cost_key(cost))


def cost_key(cost: Cost) -> float:
    """What "cheapest" minimises: dollars where priced (and not free), else the tokens a run sends and
    receives (a local model's compute)."""
    return cost.dollars if cost.dollars else float(cost.prompt_tokens + cost.completion_tokens)


def tokens_source(pricer: Pricer | None) -> dict[str, Any]:
    """What a plan's ``cost`` block says about the completion tokens per call it priced with:
    ``completion_tokens_per_call`` (the pilot's or the assumption's, with its source) and, where the pilot ran
    on this machine or an emulator, ``local_endpoint`` (``HiddenTokens.local_note``)."""
    hidden = None if pricer is None else pricer.hidden
    if hidden is None:
        return {}
    out: dict[str, Any] = {"completion_tokens_per_call": hidden.as_json()}
    if hidden.local_note is not None:
        out["local_endpoint"] = hidden.local_note
    return out


def cost_range_line(cost: Mapping[str, Any]) -> str | None:
    """``cost range: $LOW to $HIGH (expected $X; completion tokens per call from SOURCE)`` of a plan's
    ``cost`` block with a ``dollars_range`` (every plan kind prints it: docs/llm-runs.md), then the local
    endpoint's warning where the pilot ran locally; None without a range."""
    if not cost.get("dollars_range"):
        return None
    low, high = cost["dollars_range"]
    expected = cost.get("expected_dollars", cost.get("dollars"))
    source = (cost.get("completion_tokens_per_call") or {}).get("source", "the pilot or the assumption")
    line = (f"cost range: ${low:.3f} to ${high:.3f} (expected "
            + ("unknown" if expected is None else f"${expected:.3f}")
            + f"; completion tokens per call, hidden ones included, from the {source})")
    if cost.get("local_endpoint"):
        line += f"\nWARNING: {cost['local_endpoint']}"
    return line

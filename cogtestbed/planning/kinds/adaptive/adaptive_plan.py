"""``plan --adaptive``: adaptive against fixed sessions of the same design space for one
precision target, each arm's trials per session priced for the sessions asked.

The simulation and the share within the half-width are :mod:`cogtestbed.planning.kinds.adaptive.adaptive`'s
(:func:`~cogtestbed.planning.kinds.adaptive.adaptive.compare`,
:func:`~cogtestbed.planning.kinds.adaptive.adaptive.precision_trials`); this module checks the target and
sizes, asks a caller-given ``price`` for each reached arm's cost (one call per trial; a fixed session of
the same space has the same prompts' length) and writes the plan's payload.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.parameters import parse_assignments

#: Most trials per session ``plan --adaptive`` simulates where ``trials`` gives no top.
ADAPTIVE_MAX_TRIALS = 60

#: ``price(trials, targets)`` -> ``(calls, cost_usd or None)`` of the sessions asked, each of ``trials`` trials.
Price = Callable[[int, Sequence[str]], tuple[int, float | None]]


@dataclass(frozen=True)
class AdaptiveTarget:
    """One precision target: P(|posterior mean − truth| ≤ ``halfwidth``) ≥ ``assurance`` on ``parameter``
    (unconstrained scale) within ``top`` trials per session, for ``sessions`` sessions."""

    parameter: str
    halfwidth: float
    assurance: float
    top: int
    sessions: int


def adaptive_target(exp: Any, precision: Mapping[str, float] | str | None, assurance: float, trials: Any,
                    subjects: Any, sims: int) -> AdaptiveTarget:
    """The target of ``precision`` (``{PARAM: HALFWIDTH}``, or the command line's ``PARAM=HALFWIDTH``) and
    the sizes (``trials``: a count, ``(lo, hi)``, a list or the command line's ``N`` / ``LO:HI``, its top the
    longest session simulated, default :data:`ADAPTIVE_MAX_TRIALS`; ``subjects``: one number of sessions),
    refused in one line where they do not make a plan (a power target is not planned yet)."""
    from cogtestbed.planning.sizes import Sizes

    if precision is None:
        raise InputError("plan `adaptive` plans a precision target: give `precision` PARAM=HALFWIDTH (a power target "
                         "over adaptive sessions is not planned yet)")
    given = dict(precision) if isinstance(precision, Mapping) else parse_assignments([precision], "`precision`")
    if len(given) != 1:
        raise InputError(f"`precision` takes one PARAM=HALFWIDTH, got {len(given)}")
    parameter, halfwidth = next(iter(given.items()))
    _check_parameter(exp, parameter)
    if not (halfwidth > 0 and 0 < assurance < 1):
        raise InputError(f"`precision` needs HALFWIDTH > 0 and `assurance` in (0, 1), got {halfwidth}, {assurance}")
    top = Sizes.of(trials, "trials").top if trials is not None else ADAPTIVE_MAX_TRIALS
    sessions = Sizes.of(subjects, "subjects") if subjects is not None else None
    if sessions is not None and len(sessions) != 1:
        raise InputError(f"plan `adaptive`: `subjects` is one number of sessions, got {sessions}")
    if sims < 2 or top < 1:
        raise InputError("plan `adaptive` needs `adaptive_sims` >= 2, trials >= 1 and subjects >= 1")
    return AdaptiveTarget(parameter, halfwidth, assurance, top, 1 if sessions is None else sessions.top)


def run_adaptive(exp: Any, req: Any, ctx: Any) -> Any:
    """The ``adaptive`` plan kind (``adaptive`` with ``precision``): :func:`plan_adaptive`, each arm's
    trials per session priced by the first LLM's dry run of the sessions asked, through the
    :class:`~cogtestbed.planning.pricing.Pricer` the power plans price with (one price)."""
    from cogtestbed.planning.kinds import Planned

    ad, tg, lm = req.adaptive_sessions, req.target, req.llms
    target = adaptive_target(exp, tg.precision, tg.assurance, req.sizes.trials, req.sizes.subjects, ad.adaptive_sims)
    llms = [lm.llm] if isinstance(lm.llm, str) else list(lm.llm or [])
    pricer = adaptive_pricer(exp, llms[0], req) if llms else None
    payload = plan_adaptive(exp, ad.adaptive, target, ad.adaptive_sims, req.seed, llms[0] if llms else None,
                            None if pricer is None else session_price(pricer, target.sessions), ctx.say)
    if pricer is not None:
        payload.update(adaptive_run(pricer, exp, payload, lm.max_cost))
    return Planned(payload, "trials")


def adaptive_pricer(exp: Any, llm: str, req: Any) -> Any:
    """The :class:`~cogtestbed.planning.pricing.Pricer` of ``llm`` for an adaptive plan: the request's
    prices, answer settings, reasoning controls and completion tokens per call (``assume_reasoning_tokens``)."""
    from pathlib import Path

    from cogtestbed.experiments.spec import resolve_temperature
    from cogtestbed.planning.pricing import Pricer
    from cogtestbed.planning.request import hidden_tokens

    lm = req.llms
    hidden = hidden_tokens([llm], None, lm.assume_reasoning_tokens, lm.thinking_budget, exp.name)
    return Pricer(exp, (llm,), seed=req.seed, max_tokens=lm.max_tokens,
                  temperature=resolve_temperature(exp.decoding, lm.temperature)[0], reask=lm.reask,
                  prices=None if lm.prices is None else Path(lm.prices),
                  allow_unpriced=lm.allow_unpriced, reasoning_effort=lm.reasoning_effort,
                  thinking_budget=lm.thinking_budget, hidden=hidden)


def session_design(exp: Any, trials: int, targets: Sequence[str]) -> Any:
    """The design of one adaptive session of ``trials`` trials choosing on ``targets``: the spec's
    ``AdaptiveDecl.study_design`` (the design the comparison simulates) with the adaptive fields set."""
    from cogtestbed.experiments._adaptive import adaptive_fields

    fields = {**dict(getattr(exp.adaptive, "study_design", ())), **adaptive_fields(exp, list(targets), trials)}
    return exp.design_cls(**fields)


def session_price(pricer: Any, sessions: int) -> Price:
    """``price(trials, targets)``: the calls and expected dollars of ``pricer``'s dry run of ``sessions``
    adaptive sessions of :func:`session_design` (``expected_cost_usd``, the one price ``run --dry-run`` gives)."""
    def price(trials: int, targets: Sequence[str]) -> tuple[int, float | None]:
        cost = pricer.exact(session_design(pricer.exp, trials, targets), sessions)
        return cost.calls, cost.expected_dollars

    return price


def adaptive_run(pricer: Any, exp: Any, payload: Mapping[str, Any], max_cost: float | None) -> dict[str, Any]:
    """The ``cost`` and ``run`` blocks of the adaptive arm where it reaches the target (else nothing): the
    sessions and the exact design priced (adaptive fields, trials), so ``run --dry-run --plan`` of the plan
    gives its dollars to the cent (its cost range too, where completion tokens per call are measured or assumed)."""
    from cogtestbed.planning.plan_report import PLAN_VERSION, run_block
    from cogtestbed.planning.pricing import tokens_source

    arm = payload["adaptive"]
    if arm["calls"] is None:
        return {}
    design = session_design(exp, int(arm["trials"]), payload["targets"])
    cost = pricer.exact(design, payload["sessions"])
    return {"plan_version": PLAN_VERSION, "cost": {**cost.as_dict(), **tokens_source(pricer)},
            "run": run_block(pricer, exp, design, payload["sessions"], cost.per_llm[0], max_cost)}


def _check_parameter(exp: Any, parameter: str) -> None:
    """Refuse a target parameter the experiment's adaptive model lacks, before the simulation (an
    experiment without adaptive sessions is refused by :func:`~cogtestbed.planning.kinds.adaptive.adaptive.compare`)."""
    decl = exp.adaptive
    names = list(exp.models[decl.model].parameters.names) if hasattr(decl, "model") else [parameter]
    if parameter not in names:
        raise InputError(f"`precision` {parameter}: the adaptive model has parameters {', '.join(names)}")


def plan_adaptive(exp: Any, adaptive: str | Sequence[str], target: AdaptiveTarget, sims: int, seed: int,
                  llm: str | None, price: Price | None, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The ``plan --adaptive`` payload: ``sims`` subjects from the prior through ``target.top`` adaptive and
    fixed trials (both arms the same subjects and the same design: :func:`~cogtestbed.
    planning.kinds.adaptive.adaptive.compare`), the trials per session each arm needs for ``target`` on the
    parameter's natural scale
    (the scale ``plan --precision`` uses: the posterior mean's value within the half-width of the truth), each
    trial count's verdict with its interval, the ratio of the trials with a bootstrap interval over subjects,
    and each reached arm priced by ``price`` (calls = trials × sessions and no cost without one)."""
    from cogtestbed.experiments._adaptive import adaptive_model
    from cogtestbed.planning.kind_protocols import FRESH_ADAPTIVE
    from cogtestbed.planning.kinds.adaptive.adaptive import compare

    adaptive_model(exp)  # an experiment whose trials cannot be chosen is refused before anything is said
    if say is not None:
        say(f"simulating {sims} subjects from the prior through {target.top} adaptive and {target.top} fixed trials "
            "(the same subjects in both arms)")
    result = compare(exp, adaptive, target.top, sims, seed)
    hits = natural_hits(result, adaptive_model(exp), target.parameter, target.halfwidth)
    reached = {arm: _needed(h, target.assurance) for arm, h in hits.items()}
    if say is not None:
        say(f"measuring each arm's share on {sims} fresh subjects (seeds the choice never used)")
    reached = _fresh_shares(reached, natural_hits(compare(exp, adaptive, target.top, sims, seed + FRESH_ADAPTIVE),
                                                  adaptive_model(exp), target.parameter, target.halfwidth))
    boot = _bootstrap(hits, target.assurance, seed)
    arms = {k: {**_priced_arm(v, target.sessions, result.targets, price), "trials_interval": boot[k]}
            for k, v in reached.items()}
    ratio = arms["adaptive"]["trials"] / arms["fixed"]["trials"]
    return {"kind": "adaptive", "experiment": exp.name, "llm": llm, "targets": list(result.targets),
            "parameter": target.parameter, "scale": "natural", "halfwidth": target.halfwidth,
            "assurance": target.assurance, "sessions": target.sessions, "simulated_subjects": sims,
            "same_subjects": True, "design": dict(getattr(exp.adaptive, "study_design", ())),
            "max_trials": target.top, "seed": seed, "fixed": arms["fixed"], "adaptive": arms["adaptive"],
            "trials_ratio": None if math.isnan(ratio) else ratio, "trials_ratio_interval": boot["ratio"],
            "searched": {arm: _searched(h, target.assurance) for arm, h in hits.items()},
            "fixed_design": _fixed_design(exp)}


def natural_hits(result: Any, model: Any, parameter: str, halfwidth: float) -> dict[str, np.ndarray]:
    """Per arm, subjects × trials: whether the posterior mean, mapped to the parameter's natural scale, lies
    within ``halfwidth`` of the truth there (the scale ``plan --precision`` judges an estimate on)."""
    p = model.parameters[parameter]
    truth = np.asarray(p.to_constrained(result.truth[parameter]), dtype=np.float64)[:, None]
    return {arm: np.abs(np.asarray(p.to_constrained(result.curves[arm][parameter].mean), dtype=np.float64) - truth)
            <= halfwidth for arm in ("fixed", "adaptive")}


def _needed(hits: np.ndarray, assurance: float) -> dict[str, float]:
    """The fewest trials whose share of subjects within the half-width reaches ``assurance`` (NaN: none), that
    share and its Monte-Carlo SE."""
    share = hits.mean(axis=0)
    at = np.flatnonzero(share >= assurance)
    t = int(at[0]) if at.size else None
    p = float(share[t]) if t is not None else float(share[-1])
    return {"trials": float(t + 1) if t is not None else float("nan"), "share": p,
            "share_se": float(math.sqrt(p * (1 - p) / hits.shape[0]))}


def _fresh_shares(reached: dict[str, dict[str, float]], fresh: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """Each arm's printed share within the half-width, at the trials its plan's subjects chose (the last trial
    count where none reached), measured on fresh subjects (:data:`~cogtestbed.planning.kind_protocols.
    FRESH_ADAPTIVE`); the choosing subjects' share kept as ``search_share``."""
    out: dict[str, dict[str, Any]] = {}
    for arm, r in reached.items():
        h = fresh[arm]
        t = int(r["trials"]) - 1 if math.isfinite(r["trials"]) else h.shape[1] - 1
        p = float(h[:, t].mean())
        out[arm] = {**r, "search_share": r["share"], "share": p, "share_se": float(math.sqrt(p * (1 - p) / h.shape[0])),
                    "share_subjects": "fresh"}
    return out


#: Bootstrap resamples of the subjects behind the intervals of the trials needed and of their ratio.
BOOT = 400


def _bootstrap(hits: dict[str, np.ndarray], assurance: float, seed: int) -> dict[str, list[float] | None]:
    """95 % percentile intervals over subjects resampled (the same resample for both arms) of each arm's trials
    needed and of their ratio, adaptive over fixed (None where fewer than half the resamples reach it)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 67]))
    n = next(iter(hits.values())).shape[0]
    draws: dict[str, list[float]] = {"fixed": [], "adaptive": [], "ratio": []}
    for _ in range(BOOT):
        idx = rng.integers(0, n, n)
        fixed, adaptive = (_needed(hits[arm][idx], assurance)["trials"] for arm in ("fixed", "adaptive"))
        draws["fixed"].append(fixed)
        draws["adaptive"].append(adaptive)
        draws["ratio"].append(adaptive / fixed)
    out: dict[str, list[float] | None] = {}
    for key, values in draws.items():
        arr = np.asarray(values)
        finite = arr[np.isfinite(arr)]
        out[key] = None if finite.size < BOOT / 2 else [float(np.percentile(finite, 2.5)),
                                                        float(np.percentile(finite, 97.5))]
    return out


def _searched(hits: np.ndarray, assurance: float) -> list[dict[str, Any]]:
    """Every trial count simulated: its share within the half-width, Wilson interval and verdict (reached, not
    reached, undecided: :func:`~cogtestbed.planning.kinds.power.power_sims.verdict`)."""
    from cogtestbed.planning.kinds.power.power_sims import verdict

    n = hits.shape[0]
    return [{"trials": t + 1, "share": float(k / n), **verdict(int(k), n, assurance)}
            for t, k in enumerate(hits.sum(axis=0))]


def _fixed_design(exp: Any) -> str:
    """What the fixed arm asks (:func:`~cogtestbed.planning.kinds.adaptive.adaptive.compare`)."""
    if getattr(exp.adaptive, "observations", None) is not None:
        return "the instrument's own trials of the same design and length (planning/kinds/adaptive/adaptive.py)"
    return "the design space in one seeded random order (planning/kinds/adaptive/adaptive.py)"


def _priced_arm(reached: dict[str, float], sessions: int, targets: Sequence[str],
                price: Price | None) -> dict[str, Any]:
    """One arm's trials and share with its calls and cost (both null where the target is not reached)."""
    arm: dict[str, Any] = dict(reached)
    n = arm["trials"]
    arm["calls"] = None if math.isnan(n) else int(n) * sessions
    arm["cost_usd"] = None  # the expected dollars (``run --dry-run``'s ``expected_cost_usd``)
    if price is not None and not math.isnan(n):
        arm["calls"], arm["cost_usd"] = price(int(n), targets)
    return arm


def adaptive_line(payload: Mapping[str, Any]) -> str:
    """``plan --adaptive``'s text: the target on its scale, the fixed and the adaptive arm side by side (trials
    needed with their interval, the share there, calls and cost), their ratio with its interval, and each arm's
    trial counts by verdict."""
    def interval(v: Any) -> str:
        return "" if v is None else f" [{v[0]:.3g}, {v[1]:.3g}]"

    def cells(name: str) -> list[str]:
        a = payload[name]
        if a["calls"] is None:
            return [f"not within {payload['max_trials']}", f"{a['share']:.2f} at {payload['max_trials']}", "-"]
        cost = "" if a["cost_usd"] is None else f", ${a['cost_usd']:.4f}"
        return [f"{a['trials']:.0f}{interval(a.get('trials_interval'))}", f"{a['share']:.2f} ± {a['share_se']:.2f}",
                f"{a['calls']} calls{cost}"]

    head = (f"{payload['experiment']}: P(|estimate - truth| <= {payload['halfwidth']:g}) >= {payload['assurance']:g} "
            f"on {payload['parameter']} ({payload.get('scale', 'unconstrained')} scale); both arms on the same "
            f"{payload['simulated_subjects']} subjects drawn from the prior and the same design, "
            f"{payload['sessions']} session(s){' priced for ' + payload['llm'] if payload['llm'] else ''}")
    fixed, adaptive = cells("fixed"), cells("adaptive")
    rows = [("", "fixed", "adaptive"), *((name, fixed[i], adaptive[i])
                                         for i, name in enumerate(("trials needed", "share within (fresh)", "calls")))]
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [head, *("  " + "  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)).rstrip() for r in rows)]
    if payload["trials_ratio"] is not None:
        lines.append(f"adaptive/fixed trials = {payload['trials_ratio']:.2f}"
                     f"{interval(payload.get('trials_ratio_interval'))} (95 % bootstrap over subjects)")
    for arm, sizes in (payload.get("searched") or {}).items():
        lines.append(f"{arm} trial counts: {_runs(sizes)}")
    lines += _priced_lines(payload)
    return "\n".join(lines)


def _priced_lines(payload: Mapping[str, Any]) -> list[str]:
    """The adaptive arm's run (sessions, trials, the design ``run --plan`` executes) and its cost range where
    completion tokens per call are measured or assumed."""
    from cogtestbed.planning.pricing import cost_range_line

    run = payload.get("run")
    if run is None:
        return []
    cost = payload.get("cost") or {}
    dollars = cost.get("expected_dollars")
    out = [f"run block: {run['subjects']} adaptive session(s) of {run['design'].get('trials')} trials "
           f"(adaptive {','.join(payload['targets'])}){'' if dollars is None else f', expected ${dollars:.4f}'}: "
           "cogtestbed run --plan PLAN.json [--dry-run]"]
    line = cost_range_line(cost)
    return out + ([] if line is None else line.splitlines())


def _runs(sizes: Sequence[Mapping[str, Any]]) -> str:
    """Consecutive trial counts of one verdict as ranges, each with the interval of its last count's share."""
    parts: list[str] = []
    start = 0
    for i in range(1, len(sizes) + 1):
        if i == len(sizes) or sizes[i]["verdict"] != sizes[start]["verdict"]:
            first, last = sizes[start], sizes[i - 1]
            span = f"{first['trials']}" if first is last else f"{first['trials']}-{last['trials']}"
            lo, hi = last["interval"]
            parts.append(f"{span} {last['verdict']} (share at {last['trials']}: {last['share']:.2f} [{lo:.2f}, "
                         f"{hi:.2f}])")
            start = i
    return "; ".join(parts)

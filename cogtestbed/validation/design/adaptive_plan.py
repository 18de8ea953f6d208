"""``plan --adaptive`` (issue 53): adaptive against fixed sessions of the same design space for one
precision target, each arm's trials per session priced for the sessions asked.

The simulation and the share within the half-width are :mod:`cogtestbed.validation.design.adaptive`'s
(:func:`~cogtestbed.validation.design.adaptive.compare`,
:func:`~cogtestbed.validation.design.adaptive.precision_trials`); this module checks the target and
sizes, asks a caller-given ``price`` for each reached arm's cost (one call per trial; a fixed session of
the same space has the same prompts' length) and writes the plan's payload.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    from cogtestbed.validation.design.sizes import Sizes

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
    trials per session priced by the first LLM's dry run (``ctx.dry_run``) of the sessions asked."""
    from cogtestbed.validation.design.kinds import Planned

    ad, tg, lm = req.adaptive_sessions, req.target, req.llms
    target = adaptive_target(exp, tg.precision, tg.assurance, req.sizes.trials, req.sizes.subjects, ad.adaptive_sims)
    llms = [lm.llm] if isinstance(lm.llm, str) else list(lm.llm or [])
    price = None
    if llms and ctx.dry_run is not None:
        price = ctx.dry_run(exp, llms[0], target.sessions, req.seed, lm.prices, lm.allow_unpriced)
    payload = plan_adaptive(exp, ad.adaptive, target, ad.adaptive_sims, req.seed, llms[0] if llms else None, price,
                            ctx.say)
    return Planned(payload, "trials")


def _check_parameter(exp: Any, parameter: str) -> None:
    """Refuse a target parameter the experiment's adaptive model lacks, before the simulation (an
    experiment without adaptive sessions is refused by :func:`~cogtestbed.validation.design.adaptive.compare`)."""
    decl = exp.adaptive
    names = list(exp.models[decl.model].parameters.names) if hasattr(decl, "model") else [parameter]
    if parameter not in names:
        raise InputError(f"`precision` {parameter}: the adaptive model has parameters {', '.join(names)}")


def plan_adaptive(exp: Any, adaptive: str | Sequence[str], target: AdaptiveTarget, sims: int, seed: int,
                  llm: str | None, price: Price | None, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The ``plan --adaptive`` payload: ``sims`` subjects from the prior through ``target.top`` adaptive and
    fixed trials, the trials per session each arm needs for ``target``, and each reached arm priced by
    ``price`` (calls = trials × sessions and no cost without one)."""
    from cogtestbed.validation.design.adaptive import compare, precision_trials

    if say is not None:
        say(f"simulating {sims} subjects from the prior through {target.top} adaptive and {target.top} fixed trials")
    result = compare(exp, adaptive, target.top, sims, seed)
    reached = precision_trials(result, target.parameter, target.halfwidth, target.assurance)
    arms = {k: _priced_arm(v, target.sessions, result.targets, price) for k, v in reached.items()}
    ratio = arms["adaptive"]["trials"] / arms["fixed"]["trials"]
    return {"kind": "adaptive", "experiment": exp.name, "llm": llm, "targets": list(result.targets),
            "parameter": target.parameter, "scale": "unconstrained", "halfwidth": target.halfwidth,
            "assurance": target.assurance, "sessions": target.sessions, "simulated_subjects": sims,
            "max_trials": target.top, "seed": seed, "fixed": arms["fixed"], "adaptive": arms["adaptive"],
            "trials_ratio": None if math.isnan(ratio) else ratio,
            "fixed_design": _fixed_design(exp)}


def _fixed_design(exp: Any) -> str:
    """What the fixed arm asks (:func:`~cogtestbed.validation.design.adaptive.compare`)."""
    if getattr(exp.adaptive, "observations", None) is not None:
        return "the instrument's own trials of the same design and length (validation/design/adaptive.py)"
    return "the design space in one seeded random order (validation/design/adaptive.py)"


def _priced_arm(reached: dict[str, float], sessions: int, targets: Sequence[str],
                price: Price | None) -> dict[str, Any]:
    """One arm's trials and share with its calls and cost (both null where the target is not reached)."""
    arm: dict[str, Any] = dict(reached)
    n = arm["trials"]
    arm["calls"] = None if math.isnan(n) else int(n) * sessions
    arm["cost_usd"] = None
    if price is not None and not math.isnan(n):
        arm["calls"], arm["cost_usd"] = price(int(n), targets)
    return arm


def adaptive_line(payload: Mapping[str, Any]) -> str:
    """``plan --adaptive``'s summary: each arm's trials per session and cost for the same target."""
    def arm(name: str) -> str:
        a = payload[name]
        if a["calls"] is None:
            return f"{name}: not reached within {payload['max_trials']} trials (share {a['share']:.2f})"
        cost = "" if a["cost_usd"] is None else f", ${a['cost_usd']:.4f}"
        return f"{name}: {a['trials']:.0f} trials per session ({a['calls']} calls{cost})"

    head = (f"{payload['experiment']}: P(|posterior mean - truth| <= {payload['halfwidth']:g}) >= "
            f"{payload['assurance']:g} on {payload['parameter']} (unconstrained scale), {payload['sessions']} "
            f"session(s){' priced for ' + payload['llm'] if payload['llm'] else ''}")
    ratio = "" if payload["trials_ratio"] is None else f"; adaptive/fixed trials = {payload['trials_ratio']:.2f}"
    return f"{head}\n{arm('fixed')}\n{arm('adaptive')}{ratio}"

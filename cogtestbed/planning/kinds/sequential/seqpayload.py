"""A group-sequential plan in ``plan.json`` and the report: the chosen design's looks priced with the dry
run, its ``sequential`` section (operating characteristics, expected and maximum costs beside the fixed
design's, the saving at equal type-I error), its lines and its figure.

:func:`attach_sequential` designs the sequential version of a fixed plan's chosen design
(:func:`cogtestbed.planning.kinds.sequential.seqplan.plan_sequential`) and records it in the payload.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from cogtestbed.planning.kinds.sequential.seqfair import type1_check
from cogtestbed.planning.kinds.sequential.seqplan import (
    MIN_NULL_SIMS,
    Candidate,
    SequentialResult,
    direction,
    fixed_type1,
    plan_sequential,
)
from cogtestbed.planning.kinds.sequential.sequential import Spending
from cogtestbed.studies.study_kinds import MetricPowerStudy, PlannedStudy, PowerStudy, StatTestStudy

#: Simulated statistic paths per hypothesis kept in plan.json for the report's plot.
PLOT_PATHS = 40


# ----------------------------------------------------------------------------- prices and plan.json
def price_looks(candidate: Candidate, spec: PlannedStudy, pricer: Any, exp: Any, point: Any, size_name: str) -> None:
    """Each look's cumulative design priced with the dry run (``run --dry-run``'s code)."""
    from cogtestbed.planning.space import sessions_per_llm
    from cogtestbed.progress import beat, tick
    from cogtestbed.studies.study_data import design_for_trials

    design = design_for_trials(exp, point.trials, spec.design)
    candidate.cost = []
    hb = beat()
    if hb is not None:
        hb.phase("sequential plan: pricing each look (dry run)", len(candidate.bounds.sizes))
    for n in candidate.bounds.sizes:
        at = type(point)(**{**point.as_dict(), size_name: n})
        candidate.cost.append(pricer.exact(design, sessions_per_llm(spec, at)))
        tick()


def price_ahead(pricer: Any, exp: Any, spec: PlannedStudy, point: Any, size_name: str, res: SequentialResult,
                fair: dict[str, Any] | None, workers: int) -> None:
    """Render the chosen design's looks and the fair fixed comparator's size (the prices
    :func:`price_looks` and :func:`fair_payload` then read) side by side on ``workers`` processes
    (:meth:`~cogtestbed.planning.pricing.Pricer.price_all`): the same dry runs, each once."""
    from cogtestbed.planning.space import sessions_per_llm
    from cogtestbed.studies.study_data import design_for_trials

    if res.chosen is None:
        return
    design = design_for_trials(exp, point.trials, spec.design)
    sizes = [*res.chosen.bounds.sizes, *([fair["chosen"]["size"]] if fair and fair.get("chosen") else [])]
    items = [(design, sessions_per_llm(spec, type(point)(**{**point.as_dict(), size_name: n}))) for n in sizes]
    pricer.price_all(items, workers, "sequential plan: pricing each look and the fixed comparator (dry run)")


def expected(costs: Sequence[Any], stop: Sequence[float], attr: str) -> float | None:
    """Σ_k P(stop at k)·(look k's cumulative ``attr``); None when a look is unpriced."""
    from cogtestbed.planning.pricing import money
    values = [getattr(c, attr) if attr != "key" else money(c) for c in costs]
    if any(v is None for v in values):
        return None
    return float(sum(p * v for p, v in zip(stop, values, strict=True)))


def sequential_payload(res: SequentialResult, spec: PlannedStudy, fixed_cost: Any, size_name: str,
                       futility: bool, binding: bool = False) -> dict[str, Any]:
    """The ``sequential`` section of ``plan.json``: the design, its simulated operating
    characteristics under the null and the target effect, its costs beside the fixed design's.
    ``binding``: the type-I error obeys futility stops (else it ignores them: non-binding)."""
    from cogtestbed.planning.pricing import money
    cand = res.chosen
    if cand is None:
        best = max(res.candidates, key=lambda c: c.effect.rate)
        return {"chosen": None, "reason": (
            f"no maximum size up to {best.bounds.sizes[-1]} {size_name} reaches power {best.effect.rate:.3f} with "
            f"type-I error {best.null.rate:.3f} (target power and type-I at most alpha)"),
            "seconds": round(res.seconds, 2), "simulations": res.sims}
    k = len(cand.bounds.sizes)
    obeyed = cand.null_obeyed or cand.null
    stop1, stop0 = cand.effect.stop_distribution(k), obeyed.stop_distribution(k)
    looks = []
    for i, c in enumerate(cand.cost):
        looks.append({"look": i + 1, size_name: cand.bounds.sizes[i], "efficacy": cand.bounds.efficacy[i],
                      "futility": None if cand.bounds.futility is None else cand.bounds.futility[i],
                      "calls": c.calls, "prompt_tokens": c.prompt_tokens, "dollars": c.dollars,
                      "p_stop_effect": stop1[i], "p_stop_null": stop0[i]})
    exp_key = expected(cand.cost, stop1, "key")
    fixed_key = money(fixed_cost)
    out: dict[str, Any] = {
        "design": {**cand.bounds.as_dict(), "size_axis": size_name, "futility_rule": futility,
                   "futility_binding": bool(futility and binding), "direction": direction(spec),
                   "statistic": statistic_name(spec)},
        "looks": looks,
        "null": {**obeyed.summary(k), "rejection_rate": cand.null.rate, "mc_se": cand.null.mc_se,
                 "type1_check": type1_check(int(cand.null.rejected.sum()), cand.null.sims, spec.level),
                 "type1_futility": None if not futility else (
                     "futility stops obeyed (binding futility)" if binding else
                     "futility stops ignored (non-binding futility: a run may go on past a futility bound)")},
        "effect": cand.effect.summary(k),
        "expected": {
            "effect": {"calls": expected(cand.cost, stop1, "calls"), "prompt_tokens": expected(cand.cost, stop1,
                                                                                               "prompt_tokens"),
                       "dollars": expected(cand.cost, stop1, "dollars"), "cost_key": exp_key},
            "null": {"calls": expected(cand.cost, stop0, "calls"), "dollars": expected(cand.cost, stop0, "dollars"),
                     "cost_key": expected(cand.cost, stop0, "key")}},
        "maximum": {"calls": cand.cost[-1].calls, "prompt_tokens": cand.cost[-1].prompt_tokens,
                    "dollars": cand.cost[-1].dollars, "cost_key": money(cand.cost[-1])},
        "fixed": {"calls": fixed_cost.calls, "prompt_tokens": fixed_cost.prompt_tokens, "dollars": fixed_cost.dollars,
                  "cost_key": fixed_key},
        "saving": {"cost_key": None if exp_key is None else fixed_key - exp_key,
                   "percent": None if exp_key is None or not fixed_key else 100 * (1 - exp_key / fixed_key),
                   **comparison(cand.null.rate, cand.null.sims, res.fixed_null)},
        "candidates": [{"max_" + size_name: c.bounds.sizes[-1], "power": c.effect.rate, "type1": c.null.rate,
                        "expected_units_effect": float(c.effect.units.mean()),
                        "expected_units_null": float((c.null_obeyed or c.null).units.mean())}
                       for c in res.candidates],
        "seconds": round(res.seconds, 2), "cpu_seconds": round(res.cpu_seconds, 2), "simulations": res.sims,
        "calibration_simulations": res.calibration_sims, "units_simulated": res.subjects,
        "note": ("Z_k = sign(estimate)·Φ⁻¹(1 − p_k/2) from the fixed plan's test on the units finished at look k; "
                 "it is only approximately normal across looks (small first looks, bounded parameters, "
                 "p-value resolution floors), so the efficacy bounds' level is set on simulated null studies "
                 + ("(futility obeyed: binding) " if binding else "(futility ignored: non-binding) ")
                 + "and the error rates above are the simulated procedure's, measured on other null studies, "
                 "not the bounds' nominal ones"),
    }
    return out


def _power_statistic(spec: PowerStudy) -> dict[str, Any]:
    """A model-effect plan's look statistic: the one-sample test of the effect on its scale against
    its value before the effect (``null``, ``scale``: what a run's looks subtract and transform)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import effect_scale, one_sample_null, one_sample_test_name

    assert spec.effect is not None
    model = get_experiment(spec.experiment).model(spec.models[0])
    return {"kind": "power", "model": spec.models[0], "effect": spec.effect, "effect_size": spec.effect_size,
            "test": one_sample_test_name(spec, model), "lapse_fit": spec.lapse_fit,
            "scale": effect_scale(model, spec.effect), "null": one_sample_null(spec, model)}


def statistic_name(spec: PlannedStudy) -> dict[str, Any]:
    """What the run computes at each look (read back by ``cogtestbed looks``)."""
    if isinstance(spec, PowerStudy):
        return _power_statistic(spec)
    if isinstance(spec, MetricPowerStudy):
        return {"kind": "metric-power", "metric": spec.metric, "test": "difference test of the fixed plan",
                "metric_options": dict(spec.metric_options)}
    assert isinstance(spec, StatTestStudy)
    return {"kind": spec.kind, "test": spec.test, "metric_options": dict(spec.metric_options)}


def _bounds_lines(d: Mapping[str, Any]) -> list[str]:
    """How the bounds were set (analytic or simulated calibration) and the futility rule."""
    cal, out = d.get("calibration"), []
    if cal is None:
        out.append("  analytic bounds (normal theory: the spending function's bounds, not calibrated)")
    elif cal.get("method") == "analytic bounds":
        out.append(f"  analytic bounds (normal theory, the spending function's bounds at k/K): {cal['null_sims']} "
                   f"calibration null studies reject at {cal['nominal_rate']:.3f} ± {cal['nominal_rate_mc_se']:.3f} "
                   f"in the effect's direction, within 2 MC SE of {cal['side_level']:.3f}")
    else:
        err = f" (MC error ± {cal['shift_mc_error']:.3f})" if cal.get("shift_mc_error") is not None else ""
        other = (f" (against it by {cal['shift_other']:+.3f} to reject at {cal['side_level']:.3f} there too)"
                 if cal.get("shift_other") is not None else "")
        out.append(f"  simulated calibration on {cal['null_sims']} null studies: the spending function's bounds "
                   f"moved by {cal['shift']:+.3f}{err} to reject at {cal['side_level']:.3f} in the effect's direction"
                   + other
                   + {"binding": " with futility obeyed (binding)",
                      "non-binding": " ignoring futility (non-binding)"}.get(str(cal.get("futility")), ""))
    if d["futility"] is not None:
        rule = ("binding: type-I error computed with futility stops obeyed" if d.get("futility_binding") else
                "non-binding: type-I error computed ignoring futility stops, so a run may go on past one")
        out.append("  futility bounds " + " ".join(f"{a:.2f}" for a in d["futility"]) + f" ({rule})")
    return out


def sequential_lines(seq: Mapping[str, Any], size_name: str) -> list[str]:
    """The text report of a sequential plan (one line each)."""
    if seq.get("chosen", True) is None:
        return [f"sequential: {seq['reason']}"]
    d, e, n = seq["design"], seq["effect"], seq["null"]
    fut = ", futility" if d["futility"] is not None else ""
    bounds = " ".join(f"{b:.2f}" for b in d["efficacy"])
    out = [f"sequential: {d['looks']} looks at {', '.join(str(s) for s in d['sizes'])} {size_name} "
           f"({d['spending']}{fut}); {'Z·d' if d.get('direction') else '|Z|'} bounds {bounds}"]
    out += list(seq.get("auto", {}).get("lines", []))  # what plan --looks auto searched
    if "auto" not in seq:  # --looks auto's lines name them already
        out += [f"  model: {line}" for line in seq.get("assumptions", [])]
    out += _bounds_lines(d)
    check = n.get("type1_check")
    accept = (f"one-sided {100 * check['confidence']:.0f}% upper bound {check['upper']:.3f}" if check else
              "accepted only at most alpha")
    out.append(f"  power {e['rejection_rate']:.3f} ± {e['mc_se']:.3f} ({e['sims']} studies under the effect), "
               f"type-I {n['rejection_rate']:.3f} ± {n['mc_se']:.3f} ({n['sims']} fresh null studies; {accept})")
    if seq.get("saving", {}).get("statement"):
        out.append("  " + seq["saving"]["statement"])
    out.append("  stops at look (effect): " + " ".join(f"{p:.2f}" for p in e["stop_look"])
               + "; (null): " + " ".join(f"{p:.2f}" for p in n["stop_look"]))
    ex, fx, mx = seq["expected"]["effect"], seq["fixed"], seq["maximum"]
    if ex["dollars"] is not None and fx["dollars"] is not None:
        out.append(f"  expected ${ex['dollars']:.4f} under the effect (${seq['expected']['null']['dollars']:.4f} "
                   f"under the null, at most ${mx['dollars']:.4f}) vs {fx.get('label', 'fixed')} "
                   f"${fx['dollars']:.4f}: saving {seq['saving']['percent']:.1f}%")
    else:
        out.append(f"  expected {ex['cost_key']:,.0f} tokens under the effect vs {fx.get('label', 'fixed')} "
                   f"{fx['cost_key']:,.0f}: saving {seq['saving']['percent']:.1f}%")
    out.append(f"  expected calls {ex['calls']:,.0f} (max {mx['calls']:,}); stopping bias of the estimate "
               f"{e['stopping_bias'] if e['stopping_bias'] is not None else float('nan'):+.4f}")
    return out


def attach_sequential(payload: dict[str, Any], result: Any, pricer: Any, exp: Any, looks: int, spending: Spending,
                      futility: bool, sims: int, workers: int, null_agent: str | None,
                      say: Callable[[str], None] | None = None, null_sims: int | None = None,
                      binding: bool = False) -> dict[str, Any]:
    """Design the sequential version of a fixed plan's chosen design and record it in the payload
    (``payload["sequential"]``; the run section then executes it: its maximum size and its looks).
    ``binding``: futility stops count in the type-I error (else non-binding: they are ignored)."""
    spec, point, size_name = result.spec, result.chosen.point, result.size_name
    res = plan_sequential(spec, getattr(point, size_name), point.trials, point.runs, looks, spending, futility,
                          result.target, sims=sims, workers=workers, null_agent=null_agent, say=say,
                          null_sims=null_sims, binding=binding)
    if res.chosen is not None:
        price_ahead(pricer, exp, spec, point, size_name, res, res.fair, workers)
        price_looks(res.chosen, spec, pricer, exp, point, size_name)
        if res.fixed_null is None:  # paths without the fixed size: its own test on fresh null studies
            res.fixed_null = fixed_type1(spec, point, null_agent, workers, null_sims or MIN_NULL_SIMS)
    if res.fair is not None:  # the saving at equal type-I error (the nominal design's beside it)
        seq = fair_payload(result, res, res.fair, pricer, exp, futility, binding)
        seq["fair_fixed"] = res.fair
    else:
        seq = sequential_payload(res, spec, result.chosen.cost, size_name, futility, binding)
        why = ("the bounds are not calibrated on simulated null studies" if not res.calibration_sims else
               "the simulated paths do not hold every fixed size")
        if "saving" in seq:
            seq["saving"]["comparator"] = "fixed plan's design (its nominal test)"
            seq["saving"]["statement"] = (f"saving stated against the fixed plan's design with its nominal test, not "
                                          f"at equal type-I error ({why}): " + seq["saving"].get("statement", ""))
    if res.calibration_sims:  # the model the calibrated bounds rest on
        from cogtestbed.planning.kinds.sequential.seqfair import assumptions

        seq["assumptions"] = assumptions(spec, point.trials, point.runs)
    return record_sequential(payload, seq, res, result, pricer)


def fair_payload(result: Any, res: SequentialResult, fair: dict[str, Any], pricer: Any, exp: Any, futility: bool,
                 binding: bool) -> dict[str, Any]:
    """The ``sequential`` section of plan.json (its looks already priced) with the saving stated
    against the fair fixed comparator ``fair``
    (:func:`~cogtestbed.planning.kinds.sequential.seqfair.fair_fixed`; its chosen size priced here), the
    fixed plan's own design and its saving beside it (``plan_fixed``); against the fixed plan's design
    when ``fair`` has no size in range (the statement says so)."""
    from cogtestbed.planning.kinds.sequential.seqfair import fair_statement
    from cogtestbed.planning.pricing import money
    from cogtestbed.planning.space import sessions_per_llm
    from cogtestbed.studies.study_data import design_for_trials

    spec, point, size_name = result.spec, result.chosen.point, result.size_name
    chosen_fair = fair["chosen"]
    if chosen_fair is not None:
        at = type(point)(**{**point.as_dict(), size_name: chosen_fair["size"]})
        fair_cost = pricer.exact(design_for_trials(exp, point.trials, spec.design), sessions_per_llm(spec, at))
    else:
        fair_cost = result.chosen.cost
    seq = sequential_payload(res, spec, fair_cost, size_name, futility, binding)
    if res.chosen is None:
        return seq
    plan_key, fair_key, exp_key = money(result.chosen.cost), money(fair_cost), seq["expected"]["effect"]["cost_key"]
    seq["fixed"]["label"] = (f"the fixed design at equal type-I error ({chosen_fair['size']} {size_name})"
                             if chosen_fair else f"the fixed plan's design ({getattr(point, size_name)} {size_name})")
    seq["plan_fixed"] = {"size": getattr(point, size_name), "calls": result.chosen.cost.calls,
                         "dollars": result.chosen.cost.dollars, "cost_key": plan_key,
                         "saving_percent": None if exp_key is None else 100 * (1 - exp_key / plan_key)}
    seq["saving"] = {**seq["saving"], **fair_statement(fair, seq, size_name, res.chosen.null.rate,
                                                       res.chosen.null.sims, getattr(point, size_name), fair_key)}
    return seq


def record_sequential(payload: dict[str, Any], seq: dict[str, Any], res: SequentialResult, result: Any,
                      pricer: Any) -> dict[str, Any]:
    """Put a sequential plan's section into the payload and point the run section at its design."""
    from cogtestbed.planning.space import sessions_per_llm

    spec, point, size_name = result.spec, result.chosen.point, result.size_name
    payload["sequential"] = seq
    if res.chosen is not None:
        top = type(point)(**{**point.as_dict(), size_name: res.chosen.bounds.sizes[-1]})
        run = payload["run"]
        run["subjects"] = sessions_per_llm(spec, top)
        calls = res.chosen.cost[-1].per_llm[0]["calls"] if res.chosen.cost[-1].per_llm else None
        run["max_calls"] = None if calls is None else int(calls) * (1 + pricer.reask)
        run["sequential"] = {**seq["design"], "runs_per_subject": point.runs if size_name == "subjects" else 1}
    if res.chosen is not None:  # a sample of simulated statistic paths, for the report's plot
        seq["paths"] = {"effect": _json_paths(res.z_effect[:PLOT_PATHS]), "null": _json_paths(res.z_null[:PLOT_PATHS])}
    return payload


def comparison(seq_rate: float, seq_sims: int, fixed: tuple[int, int] | None) -> dict[str, Any]:
    """The fixed comparator's own type-I error beside the sequential design's, each with its MC SE,
    and whether the saving is stated at equal type-I error (the fixed test's at least the sequential
    one's) or against a more conservative fixed test (then the saving overstates it)."""
    if fixed is None or fixed[1] == 0:
        return {"fixed_type1": None, "fair": None, "statement": "the fixed design's type-I error was not measured"}
    hits, n = fixed
    rate = hits / n
    se = math.sqrt(rate * (1 - rate) / n)
    seq_se = math.sqrt(seq_rate * (1 - seq_rate) / max(seq_sims, 1))
    fair = rate >= seq_rate
    text = (f"fixed design's own type-I error {rate:.3f} ± {se:.3f} ({n:,} null studies) vs sequential "
            f"{seq_rate:.3f} ± {seq_se:.3f}: ")
    text += ("the saving is stated against a fixed test spending at least as much type-I error" if fair else
             "the fixed test is more conservative, so the saving is against a fixed design with less type-I "
             "error (at equal type-I error it is smaller)")
    return {"fixed_type1": rate, "fixed_type1_mc_se": se, "fixed_null_sims": n, "sequential_type1": seq_rate,
            "sequential_type1_mc_se": seq_se, "fair": fair, "statement": text}


def _json_paths(z: np.ndarray) -> list[list[float | None]]:
    """Simulated Z paths for plan.json: None after a path stopped (it was not simulated further)."""
    return [[round(float(v), 3) if math.isfinite(v) else None for v in row] for row in z]


# ----------------------------------------------------------------------------- report
def plot_sequential(seq: Mapping[str, Any], out: Any) -> Any:
    """``sequential.png``: bounds with simulated Z paths; expected cost vs the fixed design; the
    stopping-look histogram under the null and the effect."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = seq["design"]
    x = np.asarray(d["sizes"], float)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    ax = axes[0]
    for name, colour in (("null", "tab:grey"), ("effect", "tab:blue")):
        for path in seq.get("paths", {}).get(name, []):
            ax.plot(x, np.array(path, dtype=float), color=colour, alpha=0.25, lw=0.8)
    sign = d.get("direction") or 1.0
    b = np.asarray(d["efficacy"]) * sign
    ax.plot(x, b, "r-o", label="efficacy bound")
    ax.plot(x, -np.asarray(d.get("efficacy_other") or d["efficacy"]) * sign, "r-o")
    if d["futility"] is not None:
        ax.plot(x, np.asarray(d["futility"]) * (d["direction"] or 1), "k--s", label="futility bound")
    ax.set_xlabel(d["size_axis"])
    ax.set_ylabel("Z at look (blue: effect, grey: null)")
    ax.legend(fontsize=7)
    ax = axes[1]
    key = "dollars" if seq["fixed"]["dollars"] else "cost_key"
    vals = [seq["fixed"][key], seq["expected"]["effect"][key], seq["expected"]["null"][key], seq["maximum"].get(key)]
    ax.bar(["fixed", "E[effect]", "E[null]", "max"], [v or 0 for v in vals],
           color=["tab:grey", "tab:blue", "tab:green", "tab:red"])
    ax.set_ylabel("USD" if key == "dollars" else "tokens")
    ax.set_title(f"saving under the effect: {seq['saving']['percent']:.1f}%")
    ax = axes[2]
    k = np.arange(1, d["looks"] + 1)
    ax.bar(k - 0.2, seq["effect"]["stop_look"], width=0.4, label="effect")
    ax.bar(k + 0.2, seq["null"]["stop_look"], width=0.4, label="null")
    ax.set_xticks(k)
    ax.set_xlabel("stopping look")
    ax.set_ylabel("share of simulated studies")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "sequential.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report_section(seq: Mapping[str, Any], out: Any) -> dict[str, Any]:
    """The report.html section of a sequential plan."""
    import pandas as pd

    tables = []
    if seq.get("chosen", True) is not None:
        tables.append(("sequential looks", pd.DataFrame(seq["looks"]).set_index("look")))
        tables.append(("sequential maximum sizes simulated", pd.DataFrame(seq["candidates"])))
        plots = [plot_sequential(seq, out)]
    else:
        plots = []
    lines = sequential_lines(seq, seq["design"]["size_axis"] if "design" in seq else "units")
    return {"title": "sequential plan", "verdict": lines[0], "tables": tables, "plots": plots,
            "details": "\n".join(lines[1:]) + ("\n" + seq["note"] if "note" in seq else "")}

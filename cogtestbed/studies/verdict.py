"""A study's one-paragraph verdict (:func:`verdict`): recovery called good or poor by r (or by a
tolerance), model recovery, power and where it reaches the target, SBC, validity, metric power and
a test's size or power.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.formatting import num, rate_text
from cogtestbed.studies.labels import design_name, runs_text, study_design
from cogtestbed.studies.recovery_checks import BOUND_SHARE_FLAG

#: Recovery r at or above this is called "good"; below 0.5 "poor" (conventions of e.g.
#: Wilson & Collins 2019 / White et al. for learning-model parameters).
R_GOOD, R_POOR = 0.8, 0.5


# ----------------------------------------------------------------------------- verdict
def verdict(result: Any) -> str:
    """One paragraph: what is recoverable / detectable / valid, at which n, under which truth."""
    spec = result.spec
    text = {"recovery": _verdict_recovery, "model-recovery": _verdict_model_recovery, "power": _verdict_power,
            "sbc": _verdict_sbc, "metric-validity": _verdict_validity, "metric-power": _verdict_metric_power,
            "test-size": _verdict_test, "test-power": _verdict_test}[spec.kind](result)
    return f"{text} {unit_sentence(spec)} True parameters: {spec.true_distribution}."


def unit_sentence(spec: Any) -> str:
    """What one simulated subject or run is (:func:`~cogtestbed.studies.sizes.unit_text`)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.sizes import unit_text
    from cogtestbed.studies.study_kinds import MODEL_KINDS

    return unit_text(get_experiment(spec.experiment), spec.kind in MODEL_KINDS, tuple(spec.runs))


def _verdict_recovery(result: Any) -> str:
    spec, s = result.spec, result.summary
    criterion = getattr(result, "criterion", None) or {}
    parts = []
    for cell in s.values():
        params = cell["parameters"]
        runs = f", {runs_text(cell['runs'])} pooled per subject" if cell.get("runs", 1) > 1 else ""
        head = f"With {cell['n_subjects']} subjects of {design_name(spec, cell['n_trials'])}{runs}"
        stats = "; ".join(_param_stats(k, v) for k, v in params.items())
        parts.append(f"{head}: {stats}. {_recovery_call(params, criterion)}")
    return f"Parameter recovery of {spec.models[0]} ({spec.method}, {spec.reps} reps). " + " ".join(parts)


def _param_stats(name: str, v: dict[str, Any]) -> str:
    """One parameter's r, RMSE, bias (over every subject), share within the tolerance, coverage,
    share at a bound and the subjects whose data cannot pin it (flagged, by kind of reason; the
    statistics over the pinned ones only are in the summary table, never in the verdict)."""
    scale = " (log scale)" if v.get("scale") == "log" else ""
    bits = [f"r {num(v['r'], 2)}" if not v.get("r_note") else v["r_note"],
            f"RMSE {num(v['rmse'])}{scale}", f"bias {num(v['bias'])}"]
    left_out = v.get("n", 0) - v.get("n_finite", v.get("n", 0))
    if left_out:  # a failed fit (no estimate) or, on the log scale, an estimate at 0: said, never silent
        bits[-1] += (f" (r, RMSE and bias over the {v['n_finite']} of {v['n']} estimates finite{scale}; "
                     f"{left_out} {'is' if left_out == 1 else 'are'} not: a failed fit or an estimate at 0)")
    if v.get("summary_estimate") is not None:
        ci = v.get("summary_ci95")
        interval = f" [95% bootstrap over subjects {num(ci[0])}, {num(ci[1])}]" if ci else ""
        bits.append(f"{v['summary_kind']} estimate {num(v['summary_estimate'])}{interval} " + _against_truth(v))
    within = v.get("within")
    if within:
        lo, hi = within["interval95"]
        bits.append(f"{num(within['share'], 2)} within ±{within['halfwidth']:g} [{num(lo, 2)}, {num(hi, 2)}]")
    if "coverage90" in v:
        bits.append(f"90% interval coverage {num(v['coverage90'], 2)}")
    if "coverage95" in v:
        bits.append(f"LR 95% interval coverage {num(v['coverage95'], 2)}")
    if v.get("r_ceiling") is not None:
        bits.append(f"true values spread only SD {num(v['true_sd'])}{scale}, under the estimates' typical error "
                    f"{num(v['typical_error'])}: r near {num(v['r_ceiling'], 2)} expected from a sound fit")
    if v.get("at_bound"):
        bits.append(f"{v['at_bound']:.0%} at a bound")
    if v.get("n_unidentified"):
        why = ", ".join(f"{n} {k}" for k, n in v["unidentified_reasons"].items())
        bits.append(f"{v['n_unidentified']}/{v['n']} flagged ({why})")
    return f"{name}: " + ", ".join(bits)


def _against_truth(v: dict[str, Any]) -> str:
    """What a summary estimate is read against: the true values' same summary, and where it lies outside the
    estimates' interval, the bias and the suggested estimate (:func:`~cogtestbed.studies.recovery_checks.
    summary_offset`); the mean truth where the entry has no true summary."""
    if v.get("summary_true") is None:
        return f"for mean truth {num(v['mean_true'])}"
    txt = f"for true {v['summary_kind']} {num(v['summary_true'])}"
    if not v.get("summary_biased"):
        return txt
    off = (f"{v['summary_offset_percent']:+.0f} %" if v.get("summary_offset_percent") is not None
           else f"{v['summary_offset']:+.3g}")
    txt += f" (BIASED at this design: {off}, the truth outside the interval"
    return txt + (f"; report {v['summary_suggested']})" if v.get("summary_suggested") else ")")


def _recovery_call(params: dict[str, Any], criterion: dict[str, Any]) -> str:
    """Which parameters are recovered well: by the user's tolerance where stated, else by r."""
    txt = (_recovery_by_tolerance(params, criterion["assurance"]) if criterion.get("precision")
           else _recovery_by_r(params))
    flagged = [k for k, v in params.items() if (v.get("at_bound") or 0) > BOUND_SHARE_FLAG]
    if flagged:
        txt += (f" Note: {', '.join(flagged)} estimates pile up at a bound (each reported with its interval; means "
                "and RMSE are distorted there, medians are not).")
    return txt


def _recovery_by_tolerance(params: dict[str, Any], q: float) -> str:
    """The recovery call against the user's stated tolerance (share ``q`` of estimates within it)."""
    met = [k for k, v in params.items() if v.get("within", {}).get("meets")]
    missed = [k for k, v in params.items() if "within" in v and not v["within"]["meets"]]
    return (f"Recovered well (≥ {q:.0%} of estimates within the stated tolerance): {', '.join(met) or 'none'}"
            + (f"; NOT within tolerance: {', '.join(missed)}" if missed else "") + ".")


def _recovery_by_r(params: dict[str, Any]) -> str:
    """The recovery call by the r >= R_GOOD / r < R_POOR convention (no tolerance stated)."""
    judged = {k: v for k, v in params.items() if not v.get("r_note")}
    capped = [k for k, v in judged.items() if (v.get("r_ceiling") or 1.0) < R_POOR and not v["r"] >= R_GOOD]
    good = [k for k, v in judged.items() if v["r"] >= R_GOOD]
    poor = [k for k, v in judged.items() if not v["r"] >= R_POOR and k not in capped]
    txt = (f"No tolerance stated (recover --precision PARAM=HALFWIDTH): by the r >= {R_GOOD} convention "
           f"{', '.join(good) or 'no parameter'} {'tracks' if len(good) <= 1 else 'track'} the truth")
    txt += (f"; {', '.join(poor)} poorly (r < {R_POOR}) — do not interpret individual estimates" if poor else "")
    if capped:
        txt += (f"; r does not judge {', '.join(capped)}: the true values vary less than the estimates' error "
                "(judge by RMSE and coverage, or draw spread-out truths: --sampler uniform, more --reps)")
    return txt + "."


def _verdict_model_recovery(result: Any) -> str:
    s = result.summary
    parts = [f"{c.upper()} picks the generating model {m['accuracy']:.0%} of the time" for c, m in s.items()]
    for c, m in s.items():
        p = np.asarray(m["probabilities"])
        for i, g in enumerate(m["models"]):
            if p[i, i] < 0.7:
                parts.append(f"{g} is recognised only {p[i, i]:.0%} of the time by {c.upper()}")
    return (f"Model recovery among {', '.join(result.spec.models)} ({study_design(result.spec)}): "
            + "; ".join(parts) + ".")


def _reach(spec: Any, cells: pd.DataFrame, by: str, size: str, value: str, what: str) -> list[str]:
    parts = []
    for t, g in cells.groupby(by):
        ok = g[g[value] >= 0.8]
        if len(ok):
            parts.append(f"with {design_name(spec, t)}, {int(ok[size].min())} {what} reach 80% power")
        else:
            parts.append(f"with {design_name(spec, t)}, none of {sorted(int(x) for x in g[size])} {what} reaches "
                         f"80% power (max {g[value].max():.0%})")
    return parts


def _verdict_power(result: Any) -> str:
    spec, s = result.spec, result.summary
    head = (f"Power to detect {s['effect']} = {s['effect_size']:g} for {spec.models[0]} ({s['test']}, "
            f"level {spec.level})")
    if s["effect_size"] == 0:
        head = f"Type-I error rate of {s['effect']} for {spec.models[0]} ({s['test']}, level {spec.level})"
        rates = ", ".join(f"{c['n_subjects']} subjects of {design_name(spec, c['n_trials'])}: "
                          f"{rate_text(c['type_i_error'], c['sims'])}" for c in s["cells"])
        return f"{head}: at effect 0 every rejection, in either direction, is a false positive: {rates}."
    parts = _reach(spec, pd.DataFrame(s["cells"]), "n_trials", "n_subjects", "power", "subjects")
    return head + ": " + "; ".join(parts) + "."


def _verdict_sbc(result: Any) -> str:
    spec, s = result.spec, result.summary
    bad = [k for k, v in s.items() if v["p_value"] < 0.01]
    return (f"SBC for hierarchical {spec.models[0]} ({spec.reps} data sets of {study_design(spec)}): "
            + (f"uniformity rejected at p < 0.01 for {', '.join(bad)} — the sampler or the model code is "
               "miscalibrated there." if bad else
               "rank uniformity not rejected at p = 0.01 for any variable (min p = "
               f"{min(v['p_value'] for v in s.values()):.3f})."))


def _verdict_validity(result: Any) -> str:
    spec, s = result.spec, result.summary
    parts = []
    for cell in s.values():
        means = ", ".join(f"{r['value']:g}: {num(r['mean'])}" + (f" ± {num(r['sd'], 2)} SD" if r["sd"] == r["sd"] else
                                                                 " (one replication: no SD)")
                          for r in cell["by_value"])
        shape = ("increasing" if cell["increasing"] else "decreasing" if cell["decreasing"] else "not monotone")
        if cell["passed"] is None:
            call = f"means {shape} (no direction declared)"
        else:
            call = f"{'PASS' if cell['passed'] else 'FAIL'}: expected {cell['direction']}, means {shape}"
        parts.append(f"at {runs_text(cell['runs'])} of {design_name(spec, cell['n_trials'])}, Spearman rho = "
                     f"{cell['spearman']:.2f}, {call} [{means}]")
    return (f"Metric validity of {spec.metric} against {spec.agent}'s {spec.parameter} ({spec.reps} reps): "
            + "; ".join(parts) + ".")


def _verdict_metric_power(result: Any) -> str:
    spec, s = result.spec, result.summary
    assert spec.compare is not None
    a, b = (", ".join(f"{k}={v:g}" for k, v in side.items()) for side in spec.compare)
    cells = pd.DataFrame(s["cells"])
    ok = cells[cells["power"] >= 0.8]
    swept = s.get("parameter")
    if swept:
        reach = (f"{swept} = {ok['value'].min():g} reaches 80% power" if len(ok) else
                 f"no {swept} of {sorted(cells['value'].tolist())} reaches 80% power (max {cells['power'].max():.0%})")
    else:
        reach = (f"{int(ok['runs'].min())} runs per setting reach 80% power" if len(ok) else
                 f"none of {sorted(cells['runs'].tolist())} runs reaches 80% power "
                 f"(max {cells['power'].max():.0%})")
    rates = ", ".join(f"{runs_text(c['runs'])} of {design_name(spec, c['n_trials'])}"
                      + (f", {swept}={c['value']:g}" if "value" in c else "")
                      + f": {rate_text(c['power'], c['sims'])}" for c in s["cells"])
    return (f"Power to detect a difference in {s['metric']} between {spec.agent} ({a}) and ({b}) "
            f"({s['test']}, two-sided, level {spec.level}): {rates}; {reach}.")


def _verdict_test(result: Any) -> str:
    spec, s = result.spec, result.summary
    swept = s.get("parameter")

    def where(c: dict[str, Any]) -> str:
        return (f"{runs_text(c['runs'])} of {design_name(spec, c['n_trials'])}"
                + (f", {swept}={c['value']:g}" if "value" in c else ""))

    rates = ", ".join(f"{where(c)}: {rate_text(c['rejection_rate'], c['sims'])}" for c in s["cells"])
    setting = ", ".join(f"{k}={v:g}" for k, v in spec.params.items()) or "defaults"
    if spec.kind == "test-size":
        off = [c for c in s["cells"] if abs(c["rejection_rate"] - spec.level) > 2 * max(c["mc_se"], 1e-9)]
        call = ("size differs from the nominal level by more than 2 MC SE at "
                + ", ".join(where(c) for c in off) if off else
                f"size consistent with the nominal {spec.level} (within 2 MC SE)")
        return f"Size of {s['test']} under {spec.agent} ({setting}): rejection rate {rates}; {call}."
    head = f"Power of {s['test']} under {spec.agent} ({setting}, level {spec.level})"
    if not swept:
        return f"{head}: rejection rate {rates}; {_power_reach(spec, s['cells'])}."
    parts = []
    for value in sorted({c["value"] for c in s["cells"] if "value" in c}):
        cells = [c for c in s["cells"] if c.get("value") == value]
        listed = ", ".join(f"{runs_text(c['runs'])} of {design_name(spec, c['n_trials'])} "
                           f"{rate_text(c['rejection_rate'], c['sims'])}" for c in cells)
        if value == 0:
            parts.append(f"at {swept}=0 (no effect) the false-positive rate is {listed}")
        else:
            parts.append(f"at {swept}={value:g}: {listed}; {_power_reach(spec, cells)}")
    return f"{head}: " + "; ".join(parts) + "."


def _power_reach(spec: Any, cells: list[dict[str, Any]], target: float = 0.8) -> str:
    """The smallest design (fewest trials per run, then runs) whose rate reaches ``target``."""
    ok = sorted((c for c in cells if c["rejection_rate"] >= target), key=lambda c: (c["n_trials"], c["runs"]))
    if ok:
        c = ok[0]
        return f"{target:.0%} power first reached with {runs_text(c['runs'])} of {design_name(spec, c['n_trials'])}"
    best = max((c["rejection_rate"] for c in cells), default=float("nan"))
    return f"no design here reaches {target:.0%} power (max {best:.0%})"

"""A monitored run: ``run --monitor PLAN`` (or ``run --plan PLAN``) of a ``plan --monitor`` plan buys one unit
at a time — one LLM: a subject (:func:`run_monitored`), fitted as the plan simulated it (the per-subject MLE
of the effect, on its scale, less its null value); two LLMs: a pair, one session of each
(:func:`run_monitored_pair`), whose statistic is the second LLM's value less the first's (a parameter's MLE or
a metric's per-unit value).  After each it updates the betting e-process and its confidence sequence
(:func:`~cogtestbed.planning.kinds.monitor.eprocess.monitor_path`), appends the step to :data:`MONITOR_FILE`, and
stops buying calls when ``K_t ≥ 1/α`` (efficacy) or at the plan's cap or its futility e-value (futility).  The
plan's monitor is
checked in full before the first call (:func:`~cogtestbed.planning.kinds.monitor.monitor_checks.checked_monitor`:
its digest, level, cap, bounds, null and bet), and a statistic outside its bounds is clipped or stops the run
as the plan declares.  ``--resume`` goes on from the last recorded step (each run's own resume finishes a
session a kill interrupted); ``cogtestbed looks RUN`` recomputes every step from the trial table(s)
(:func:`replay_monitor`).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cogtestbed.errors import InputError

#: The steps of a monitored run, one JSON line per subject, in its folder.
MONITOR_FILE = "monitor.jsonl"
#: The plan's monitor as the run executes it, in its folder.
MONITOR_DESIGN = "monitor_design.json"
#: What :func:`replay_monitor` recomputes and compares with each recorded step (besides the decision).
REDERIVED = ("observation", "e_value", "lower", "upper", "estimate")

Say = Callable[[str], None]


def subject_values(exp: Any, design: Mapping[str, Any], table: Any) -> dict[int, float]:
    """Each subject's monitored statistic in ``table`` (subject id → value; NaN: no valid trial), as the
    plan simulated it: the per-subject MLE of the effect on its scale less the plan's null value."""
    from cogtestbed.inference.base import with_lapse

    model = exp.model(design["model"])
    out: dict[int, float] = {int(s): math.nan for s in table["subject"].unique()}
    valid = table[table["valid"]]
    if valid.empty:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = with_lapse(model, design.get("lapse_fit")).fit_mle(table)
    values = np.asarray(model.contrast(design["effect"], {p: fits[p].to_numpy(float)
                                                          for p in model.parameters.names}), float)
    if design.get("scale") == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.log(values)
    for s, v in zip(fits["subject"].to_numpy(int), values - float(design["null_value"]), strict=True):
        out[int(s)] = float(v) if math.isfinite(v) else math.nan
    return out


def unit_value(exp: Any, design: Mapping[str, Any], table: Any, unit: int) -> float:
    """Unit ``unit``'s value in ``table`` (NaN: none): a metric difference's per-unit metric (the metric on
    that session's own rows, as the plan's per-unit values), else the subject's statistic (:func:`subject_values`)."""
    one = table[table["subject"] == unit]
    if design.get("metric") is None:
        return subject_values(exp, design, one).get(unit, math.nan)
    from cogtestbed.studies.metric_studies import comparison_result, metric_value

    if one.empty or not one["valid"].any():
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = metric_value(comparison_result(exp, design["metric"], one, design.get("metric_options")),
                                 design["metric"])
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return math.nan
    return value if math.isfinite(value) else math.nan


def pair_value(exp: Any, design: Mapping[str, Any], tables: Sequence[Any], unit: int) -> float:
    """A pair's statistic: the second LLM's unit less the first's (NaN where either has none)."""
    a, b = (unit_value(exp, design, t, unit) for t in tables)
    return b - a if math.isfinite(a) and math.isfinite(b) else math.nan


def steps(design: Mapping[str, Any], observations: Sequence[float]) -> list[dict[str, Any]]:
    """Every step of the monitor on ``observations`` (in subject order): the e-value, the confidence
    sequence, the estimate and the decision (``efficacy`` once ``K_t ≥ 1/α``, ``futility`` at the cap
    without it or once ``K_t`` falls to the design's ``futility`` e-value, else ``continue``)."""
    from cogtestbed.planning.kinds.monitor.eprocess import monitor_path
    from cogtestbed.planning.kinds.monitor.monitor_file import checked_observation

    lo, hi = (float(b) for b in design["bounds"] or (-math.inf, math.inf))
    observations = [checked_observation(design, float(x), i) for i, x in enumerate(observations, 1)]
    path = monitor_path(list(observations), lo, hi, float(design.get("null_center") or 0.0), float(design["level"]),
                        planned=design.get("planned_bet"), halfwidth=float(design.get("halfwidth") or 0.0),
                        scale=design.get("symmetry_scale"))
    out = []
    for obs, st in zip(observations, path, strict=True):
        if not math.isfinite(st.e_value):
            raise InputError(f"the monitor's e-value at subject {st.subjects} is not a number: the run stops")
        low = design.get("futility")
        decision = ("efficacy" if st.rejected else "futility" if st.subjects >= int(design["cap"])
                    or (low is not None and st.e_value <= float(low)) else "continue")
        out.append({"subject": st.subjects, "observation": None if not math.isfinite(obs) else float(obs),
                    "e_value": st.e_value, "lower": _num(st.lower), "upper": _num(st.upper),
                    "estimate": _num(st.estimate), "decision": decision})
    return out


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def recorded_steps(run_dir: Path) -> list[dict[str, Any]]:
    """The steps a monitored run recorded (none without :data:`MONITOR_FILE`); a torn last line (a kill
    while writing) is dropped, any other malformed line refused naming file and line."""
    path = run_dir / MONITOR_FILE
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    out: list[dict[str, Any]] = []
    for i, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines):
                break
            raise InputError(f"{path}: line {i} is not JSON") from None
        if not isinstance(rec, dict) or rec.get("subject") != len(out) + 1:
            raise InputError(f"{path}: line {i} is not step {len(out) + 1} as a monitored run records it")
        out.append(rec)
    return out


def run_monitored(request: Any, design: dict[str, Any], execute_run: Callable[[Any], Any], say: Say) -> Any:
    """Play ``request``'s subjects one at a time under the plan's monitor (module docstring); returns the
    last run result (None where a resumed run had already stopped)."""
    from dataclasses import replace

    from cogtestbed.planning.kinds.monitor.monitor_file import checked_monitor
    from cogtestbed.registry import get_experiment, read_trials

    design = checked_monitor(design, "the plan's monitor")  # before the first call
    exp = get_experiment(request.experiment)
    out: Path = request.output
    done = recorded_steps(out) if request.resume else []
    if request.resume and (out / MONITOR_DESIGN).exists():
        recorded = json.loads((out / MONITOR_DESIGN).read_text())
        if recorded != design:
            raise InputError(f"{out / MONITOR_DESIGN}: this run was monitored under another plan; resume it with that "
                             "plan")
    if done and done[-1]["decision"] != "continue":
        say(f"the run stopped at subject {done[-1]['subject']} ({done[-1]['decision']}): nothing to resume")
        return None
    observations = [math.nan if s["observation"] is None else float(s["observation"]) for s in done]
    result = None
    for n in range(len(done) + 1, int(design["cap"]) + 1):
        req = replace(request, resume=request.resume or n > 1, limit=n,
                      add_budget=request.add_budget if n == len(done) + 1 else [])
        result = execute_run(req)
        if int(result.stats["subjects_complete"]) < n:  # the budget stopped it
            return result
        if n == 1:
            (out / MONITOR_DESIGN).write_text(json.dumps(design, indent=1) + "\n")
        table = read_trials(out / "trials.parquet", exp.name)
        value = unit_value(exp, design, table, n - 1)
        observations.append(value)
        step = steps(design, observations)[-1]
        with (out / MONITOR_FILE).open("a") as fh:
            fh.write(json.dumps(step) + "\n")
        say(step_line(step))
        if step["decision"] != "continue":
            result.status = "complete"
            break
    return result


def _check_pair_output(output: Path, full: Mapping[str, Any], resume: bool) -> None:
    """A resumed pair run continues under the plan and LLMs it started with; a new one starts in a folder that
    holds no monitored run."""
    if resume and (output / MONITOR_DESIGN).exists() and json.loads((output / MONITOR_DESIGN).read_text()) != full:
        raise InputError(f"{output / MONITOR_DESIGN}: this run was monitored under another plan or other LLMs; "
                         "resume it with those")
    if not resume and (output / MONITOR_FILE).exists():
        raise InputError(f"{output} already holds a monitored run; pass `resume` to continue it")


def run_monitored_pair(requests: Sequence[Any], output: Path, design: dict[str, Any],
                       execute_run: Callable[[Any], Any], say: Say) -> Any:
    """Play two LLMs' units pair by pair under the plan's monitor: at step ``n`` each LLM plays its ``n``-th
    session (one run directory each, ``requests[i].output``, each under its own budget), the pair's statistic
    (:func:`pair_value`, the second LLM's less the first's) is added to the e-process, the step appended to
    ``output/``:data:`MONITOR_FILE`, and the run stops at the boundary or the cap.  A budget stop of either LLM
    ends the invocation before the step is recorded; ``--resume`` continues it (each LLM's own resume finishes a
    session a kill interrupted, from the cache)."""
    from dataclasses import replace

    from cogtestbed.llm_adapters.runs.rundir import CONFIG_FILE
    from cogtestbed.planning.kinds.monitor.monitor_file import checked_monitor
    from cogtestbed.registry import get_experiment, read_trials

    design = checked_monitor(design, "the plan's monitor")  # before the first call
    resume = bool(requests[0].resume)
    full = {**design, "llms": [r.llm for r in requests], "run_dirs": [r.output.name for r in requests]}
    _check_pair_output(output, full, resume)
    done = recorded_steps(output) if resume else []
    if done and done[-1]["decision"] != "continue":
        say(f"the run stopped at pair {done[-1]['subject']} ({done[-1]['decision']}): nothing to resume")
        return None
    exp = get_experiment(design["experiment"])
    output.mkdir(parents=True, exist_ok=True)
    (output / MONITOR_DESIGN).write_text(json.dumps(full, indent=1) + "\n")
    observations = [math.nan if s["observation"] is None else float(s["observation"]) for s in done]
    result = None
    for n in range(len(done) + 1, int(design["cap"]) + 1):
        for req in requests:
            again = (resume or n > 1) and (req.output / CONFIG_FILE).exists()
            result = execute_run(replace(req, resume=again, limit=n,
                                         add_budget=req.add_budget if n == len(done) + 1 else []))
            if int(result.stats["subjects_complete"]) < n:  # this LLM's budget stopped it
                return result
        tables = [read_trials(r.output / "trials.parquet", exp.name) for r in requests]
        observations.append(pair_value(exp, design, tables, n - 1))
        step = steps(design, observations)[-1]
        with (output / MONITOR_FILE).open("a") as fh:
            fh.write(json.dumps(step) + "\n")
        say("pair " + step_line(step).removeprefix("subject "))
        if step["decision"] != "continue":
            assert result is not None
            result.status = "complete"
            break
    return result


def step_line(step: Mapping[str, Any]) -> str:
    """A recorded step in one line."""
    obs = "none" if step["observation"] is None else f"{step['observation']:+.3f}"
    lo = "-" if step["lower"] is None else f"{step['lower']:+.3f}"
    hi = "-" if step["upper"] is None else f"{step['upper']:+.3f}"
    return (f"subject {step['subject']}: statistic {obs}, e-value {step['e_value']:.3g}, "
            f"confidence sequence [{lo}, {hi}]: {step['decision']}")


def replay_monitor(run_dir: Path) -> tuple[list[dict[str, Any]], bool]:
    """Every recorded step of the monitored run in ``run_dir`` recomputed from its trial table (every subject
    re-fitted): each step with the recorded values beside it, ``reproduced`` and ``differs``; whether all are."""
    from cogtestbed.planning.kinds.monitor.monitor_file import checked_monitor
    from cogtestbed.registry import get_experiment, read_trials

    design = checked_monitor(json.loads((run_dir / MONITOR_DESIGN).read_text()), str(run_dir / MONITOR_DESIGN))
    recorded = recorded_steps(run_dir)
    if not recorded:
        raise InputError(f"{run_dir} records no monitored step yet ({MONITOR_FILE} empty or missing)")
    exp = get_experiment(design["experiment"])
    if design.get("run_dirs"):  # two LLMs: each pair from both trial tables
        tables = [read_trials(run_dir / name / "trials.parquet", exp.name) for name in design["run_dirs"]]
        observed = [pair_value(exp, design, tables, i) for i in range(len(recorded))]
    else:
        table = read_trials(run_dir / "trials.parquet", exp.name)
        observed = [unit_value(exp, design, table, i) for i in range(len(recorded))]
    again = steps(design, observed)
    rows, ok = [], True
    for rec, new in zip(recorded, again, strict=True):
        differs = [k for k in REDERIVED if not _close(new.get(k), rec.get(k))]
        if new["decision"] != rec["decision"]:
            differs.append("decision")
        ok &= not differs
        rows.append({**new, **{f"recorded_{k}": rec.get(k) for k in (*REDERIVED, "decision")},
                     "reproduced": not differs, "differs": differs,
                     "line": f"{step_line(new)} (recorded e-value {rec.get('e_value', float('nan')):.3g}, "
                             f"{rec.get('decision')})"})
    return rows, ok


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6)


__all__ = ["MONITOR_DESIGN", "MONITOR_FILE", "REDERIVED", "pair_value", "recorded_steps", "replay_monitor",
           "run_monitored", "run_monitored_pair", "step_line", "steps", "subject_values", "unit_value"]

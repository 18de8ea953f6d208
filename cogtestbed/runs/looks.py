"""Sequential plans at run time (the domain rules of ``looks.jsonl``; :mod:`cogtestbed.api.looks` is their
public face): ``run --plan`` of a plan with looks (:func:`run_sequential`, :func:`run_sequential_pair`), and
:func:`replay_looks` (``cogtestbed looks RUN_DIR``, :func:`cogtestbed.looks`).

A run of a sequential plan (``plan … --looks K``) plays the first ``n_k`` subjects, fits and tests
them as the plan simulated (:func:`cogtestbed.planning.kinds.sequential.runlooks.evaluate_look`), appends the look to
``looks.jsonl`` and stops (efficacy or futility) or resumes the same run directory for the next
look (earlier subjects come from the response cache).  ``--resume`` continues at the first look not
recorded.  A plan of a metric difference between two LLMs runs both in step, one run directory each
under the run directory (:func:`run_sequential_pair`).  ``cogtestbed looks RUN_DIR`` recomputes every
recorded look from the saved trial table(s).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cogtestbed.errors import InputError

#: Where a sequential run says what it does (a look begun, a look tested), one line at a time.
Say = Callable[[str], None]


def recorded_looks(run_dir: Path) -> list[dict[str, Any]]:
    """The looks recorded in ``run_dir/looks.jsonl``, each checked (look k on line k, a known
    decision, a finite statistic or none); a line that is not one is refused naming file and line."""
    import math

    from cogtestbed.planning.kinds.sequential.runlooks import LOOKS_FILE

    path = run_dir / LOOKS_FILE
    if not path.exists():
        return []
    looks: list[dict[str, Any]] = []
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {i} is not JSON ({exc.msg})") from None
        z = rec.get("statistic") if isinstance(rec, dict) else None
        if not (isinstance(rec, dict) and rec.get("look") == len(looks) + 1
                and rec.get("decision") in ("continue", "efficacy", "futility")
                and (z is None or (isinstance(z, int | float) and not isinstance(z, bool) and math.isfinite(z)))):
            raise InputError(f"{path}: line {i} is not look {len(looks) + 1} as a run records it (look, decision "
                             "continue/efficacy/futility, statistic a number or null)")
        looks.append(rec)
    return looks


def run_sequential(request: Any, design: dict[str, Any], execute_run: Callable[[Any], Any], say: Say) -> Any:
    """Execute a sequential plan's looks in ``request.output`` (see the module docstring);
    ``execute_run`` plays one look's subjects (:func:`cogtestbed.api.run.execute_run`); ``say`` receives
    each look's lines."""
    from dataclasses import replace

    from cogtestbed.planning.kinds.sequential.runlooks import SEQUENTIAL_FILE
    from cogtestbed.registry import get_experiment, read_trials

    if design["statistic"]["kind"] == "metric-power":
        raise InputError("`plan`: a sequential plan of a metric difference compares two LLMs: run it with both "
                         "(no `llm`, or both in `llm`)")
    if int(design.get("runs_per_subject", 1)) != 1:
        raise InputError("`plan`: a sequential plan with several sessions per subject is not executed by run")
    exp = get_experiment(request.experiment)
    if request.resume:
        _check_recorded_design(request.output, design)
    done = recorded_looks(request.output) if request.resume else []
    if _stopped(done, say):
        return None
    result = None
    for k in range(len(done), len(design["sizes"])):
        n = int(design["sizes"][k])
        # --add-budget raises the run's totals once, at this invocation's first look
        req = replace(request, resume=request.resume or k > 0, limit=n,
                      add_budget=request.add_budget if k == len(done) else [])
        say(f"look {k + 1}/{len(design['sizes'])}: the first {n} subjects")
        result = execute_run(req)
        if int(result.stats["subjects_complete"]) < n:  # the budget stopped it
            return result
        if k == 0:
            (request.output / SEQUENTIAL_FILE).write_text(json.dumps(design, indent=1) + "\n")
        look = _record_look(exp, design, request.output, k, read_trials(request.output / "trials.parquet", exp.name),
                            say)
        if look["decision"] != "continue":
            result.status = "complete"
            break
    return result


def run_sequential_pair(requests: Sequence[Any], output: Path, design: dict[str, Any],
                        execute_run: Callable[[Any], Any], say: Say) -> Any:
    """Execute a sequential plan of a metric difference between two LLMs in ``output``: at each look
    both LLMs play their first ``n_k`` sessions in step (one run directory each, ``requests[i].output``,
    each under its own budget: the plan's per-LLM ``--max-calls``), the difference is tested on both
    tables, the look is appended to ``output/looks.jsonl`` and the run stops or goes on.  A budget stop
    of either LLM ends the invocation before the look is tested (``--resume`` continues that look; an
    LLM that had not started then gets the other's stored budget)."""
    from dataclasses import replace

    from cogtestbed.llm_adapters.runs.rundir import CONFIG_FILE
    from cogtestbed.planning.kinds.sequential.runlooks import SEQUENTIAL_FILE
    from cogtestbed.registry import get_experiment

    if int(design.get("runs_per_subject", 1)) != 1:
        raise InputError("`plan`: a sequential plan with several sessions per subject is not executed by run")
    resume = bool(requests[0].resume)
    if resume:
        _check_recorded_design(output, design)
    done = recorded_looks(output) if resume else []
    if not resume and (output / SEQUENTIAL_FILE).exists():
        raise InputError(f"{output} already holds a sequential run; pass `resume` to continue it")
    if _stopped(done, say):
        return None
    exp = get_experiment(requests[0].experiment)
    full = {**design, "llms": [r.llm for r in requests], "run_dirs": [r.output.name for r in requests]}
    output.mkdir(parents=True, exist_ok=True)
    (output / SEQUENTIAL_FILE).write_text(json.dumps(full, indent=1) + "\n")
    result = None
    for k in range(len(done), len(design["sizes"])):
        n = int(design["sizes"][k])
        say(f"look {k + 1}/{len(design['sizes'])}: the first {n} sessions of each LLM")
        for req in requests:
            again = (resume or k > 0) and (req.output / CONFIG_FILE).exists()
            add = req.add_budget if k == len(done) else []  # raised once per invocation
            result = execute_run(replace(req, resume=again, limit=n, add_budget=add) if again or not resume
                                 else _fresh_in_resume(req, requests, n))
            if int(result.stats["subjects_complete"]) < n:  # this LLM's budget stopped it
                return result
        assert result is not None
        look = _record_look(exp, full, output, k, pair_tables(exp, output, full), say)
        if look["decision"] != "continue":
            result.status = "complete"
            break
    return result


def _check_recorded_design(output: Path, design: dict[str, Any]) -> None:
    """A ``--resume`` goes on only with the design the run recorded (``sequential.json``): other
    bounds, look sizes, statistic, effect or spending are refused in one line
    (:func:`~cogtestbed.planning.kinds.sequential.seqpaths.check_same_design`)."""
    from cogtestbed.planning.kinds.sequential.runlooks import SEQUENTIAL_FILE
    from cogtestbed.planning.kinds.sequential.seqpaths import check_same_design

    path = output / SEQUENTIAL_FILE
    if not path.exists():
        return
    try:
        recorded = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not JSON ({exc.msg})") from None
    if not isinstance(recorded, dict):
        raise InputError(f"{path} does not hold a sequential design (a JSON object)")
    check_same_design(recorded, design, str(path))


def _fresh_in_resume(req: Any, requests: Sequence[Any], n: int) -> Any:
    """The request of an LLM whose run starts during a ``--resume`` (the budget stopped the other LLM
    before it began): the other LLM's stored totals as its budget, so both run under the same cap."""
    from dataclasses import replace

    cap = {"max_calls": req.max_calls, "max_cost": req.max_cost}
    for other in requests:
        if other is not req and (other.output / "run.json").exists():
            stats = json.loads((other.output / "run.json").read_text()).get("stats", {})
            cap = {"max_calls": stats.get("max_calls", req.max_calls), "max_cost": stats.get("max_cost", req.max_cost)}
    return replace(req, resume=False, add_budget=[], limit=n, **cap)


def _stopped(done: Sequence[dict[str, Any]], say: Say) -> bool:
    """Whether the recorded looks end in a stop (said on stderr: a ``--resume`` has nothing to do)."""
    if done and done[-1]["decision"] != "continue":
        say(f"the run stopped at look {done[-1]['look']} ({done[-1]['decision']}): nothing to resume")
        return True
    return False


def _record_look(exp: Any, design: dict[str, Any], output: Path, k: int, table: Any, say: Say) -> dict[str, Any]:
    """Test look ``k`` on ``table`` (a run's, or the pair's tables), append it to ``output/looks.jsonl``
    and print it."""
    from cogtestbed.planning.kinds.sequential.runlooks import LOOKS_FILE, evaluate_look

    look = evaluate_look(exp, design, table, k)
    with (output / LOOKS_FILE).open("a") as fh:
        fh.write(json.dumps(look) + "\n")
    say(look_line(look))
    return look


def pair_tables(exp: Any, output: Path, design: dict[str, Any]) -> tuple[Any, Any]:
    """The two LLMs' trial tables of a sequential metric-difference run."""
    from cogtestbed.registry import read_trials

    a, b = (read_trials(output / name / "trials.parquet", exp.name) for name in design["run_dirs"])
    return a, b


def look_line(look: dict[str, Any]) -> str:
    """A recorded look in one line: its statistic, bounds and decision."""
    shown = f"{look['statistic']:+.3f}" if look["statistic"] is not None else f"none ({look.get('reason')})"
    return (f"look {look['look']}: Z = {shown} (efficacy |Z| ≥ {look['efficacy']:.3f}"
            + (f", futility {look['futility']:.3f}" if look["futility"] is not None else "")
            + f"): {look['decision']}")


#: What :func:`replay_looks` re-derives from the saved table and compares with each recorded look
#: (besides the decision).
REDERIVED = ("statistic", "estimate", "p_value")


def replay_looks(run_dir: Path) -> tuple[list[dict[str, Any]], bool, str]:
    """Every recorded look of the sequential run in ``run_dir`` recomputed from its saved trial table(s):
    (each look with the recorded values beside it, ``reproduced`` and ``differs``; whether all are
    reproduced; what a look's size counts).  A folder without a sequential run, a malformed record or
    no look yet is refused in one line."""
    from cogtestbed.planning.kinds.sequential.runlooks import LOOKS_FILE, SEQUENTIAL_FILE, evaluate_look
    from cogtestbed.planning.kinds.sequential.seqpaths import checked_sequential
    from cogtestbed.registry import get_experiment, read_trials

    path = run_dir / SEQUENTIAL_FILE
    if not path.exists():
        raise InputError(f"{run_dir} holds no sequential run ({SEQUENTIAL_FILE} missing): run one with "
                         "a run of a plan with `looks` (its `plan`)")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not JSON ({exc.msg})") from None
    design = checked_sequential(raw, str(path))  # extra keys (experiment, run_dirs) are kept
    recorded = recorded_looks(run_dir)
    if len(recorded) > len(design["sizes"]):
        raise InputError(f"{run_dir}: {len(recorded)} looks recorded for a plan of {len(design['sizes'])}")
    manifest = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").exists() else {}
    exp = get_experiment(manifest.get("config", {}).get("experiment") or design["experiment"])
    table = (pair_tables(exp, run_dir, design) if "run_dirs" in design
             else read_trials(run_dir / "trials.parquet", exp.name))
    rows, ok = [], True
    for rec in recorded:
        again = evaluate_look(exp, design, table, int(rec["look"]) - 1)
        differs = [key for key in REDERIVED if not _close(again.get(key), rec.get(key))]
        if again["decision"] != rec["decision"]:
            differs.append("decision")
        ok &= not differs
        rows.append({**again, **{f"recorded_{key}": rec.get(key) for key in (*REDERIVED, "decision")},
                     "reproduced": not differs, "differs": differs})
    if not recorded:
        raise InputError(f"{run_dir} records no look yet ({LOOKS_FILE} empty or missing)")
    axis = "sessions per LLM" if "run_dirs" in design else str(design.get("size_axis", "subjects"))
    return rows, ok, axis


def _close(a: Any, b: Any) -> bool:
    """Both None, or two numbers equal to 1e-6 (relative and absolute)."""
    import math

    if a is None or b is None:
        return a is None and b is None
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6)
    except (TypeError, ValueError):
        return False

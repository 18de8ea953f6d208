"""The matrix run of issue 46: every experiment × its models and agents × every workflow, over seeds,
parameter draws (prior, bounds, defaults) and small designs; prints the table experiment × workflow →
runs, tracebacks, typed refusals, unidentified units, unflagged nulls (below).

Run it in pieces (one process each, ``--workers``-free: every case runs in this process), each
appending its outcomes to a JSON-lines file, then print the table of all pieces::

    PYTHONPATH=. python benchmarks/studies/matrix.py run --experiment temporal-discounting --n 40 \\
        --workflows simulate,fit-mle --out matrix_output/td.jsonl
    PYTHONPATH=. python benchmarks/studies/matrix.py table matrix_output/*.jsonl

``run --full`` runs the whole matrix at the sizes of docs/matrix.md (``make test-matrix``; it exits 1
when a cell outside :data:`KNOWN_OPEN` has a traceback).

A workflow run ends in one of three ways: it returns (``ok``; the units it left unidentified are
counted), it refuses with one of the library's typed errors (``refused``: a
:class:`~cogtestbed.errors.CogtestbedError`, one line on the command line) or it raises anything
else (``traceback``: a bug, whatever the message).  A study task's refusal counts as typed only
when the worker's own exception was typed (:attr:`~cogtestbed.study_errors.StudyInputError.typed`).
A fit row with a missing estimate that is not flagged (``identified`` true) is counted as
``unflagged`` (a null without its reason), and an MLE fit returning fewer units than the subjects
simulated (each with its own parameters) as ``pooled`` (issue 46: never pooled silently).

The cases are drawn from each parameter's declared prior (the unconstrained-scale normal of
:class:`~cogtestbed.parameters.Parameter`, mapped to its natural scale), set at its bounds (all
lower, all upper, each parameter at a random one of its two) and at its default, at small
designs (1 subject, 1 session, the fewest trials the design's trials field allows) and at the
experiment's own design.  Each case is a pure function of its fields: the same case gives the
same outcome in any process (:func:`run_case`), and :func:`cases` draws the same cases from the
same seed.

The workflows call the public functions a user calls (``ct.simulate``, ``ct.fit``,
``ct.metrics``, ``ct.recover``, ``ct.power``, ``ct.model_recovery``, ``ct.sbc``, ``ct.plan``,
``ct.form_study``, ``ct.study``), in this process (``workers=1``).  Its table is in docs/matrix.md.
This script sits outside the package, above everything (it exercises the front door; issue 73
moved it out of the package).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import traceback
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cogtestbed.errors import CogtestbedError
from cogtestbed.registry import experiment_names

#: Every workflow of the matrix, in the table's order.  ``hierarchical``, ``sbc``, ``plan`` and
#: ``study`` are slow (seconds to minutes a run): :data:`SLOW_WORKFLOWS`.
WORKFLOWS: tuple[str, ...] = (
    "simulate", "simulate-file", "metrics", "fit-mle", "fit-hierarchical", "recover", "power", "model-recovery",
    "sbc", "forms", "plan", "study",
)
SLOW_WORKFLOWS: frozenset[str] = frozenset({"fit-hierarchical", "sbc", "plan", "study"})
#: Workflows whose target is an agent (the others' is a model).
AGENT_WORKFLOWS: frozenset[str] = frozenset({"simulate", "simulate-file", "metrics"})
#: How a case's parameters are drawn (the prior, each bound, the defaults).
DRAWS: tuple[str, ...] = ("prior", "prior", "prior", "prior", "lower", "upper", "mixed", "default")
#: Subjects of a case: one subject first, then a few.
SUBJECTS: tuple[int, ...] = (1, 2, 1, 3, 5, 8)

Status = Literal["ok", "refused", "traceback"]

#: Cells (experiment, workflow) whose tracebacks are known and being fixed elsewhere (issue 46):
#: the fast slice of the suite expects them (xfail, not strict) and the table marks them.
KNOWN_OPEN: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Case:
    """One workflow run: ``target`` is the agent (simulate, metrics) or the model (the others);
    ``params`` natural-scale values (one per parameter; ``None``: the defaults); ``trials`` the
    design's trials field (``None``: the experiment's own design)."""

    experiment: str
    workflow: str
    target: str
    draw: str
    seed: int
    subjects: int = 1
    trials: int | None = None
    params: Mapping[str, float] | None = None
    effect: tuple[str, float] | None = None

    def label(self) -> str:
        """The case in one line (what to paste into :func:`run_case` to see it again)."""
        return json.dumps(asdict(self), sort_keys=True, default=float)


@dataclass
class Outcome:
    """How a :class:`Case` ended: ``status``, the units it left unidentified (``unidentified``),
    fit rows with a missing estimate but no flag (``unflagged``), the error's class and first
    line, the traceback's last frames (for ``traceback``) and the seconds it took."""

    case: Case
    status: Status
    unidentified: int = 0
    unflagged: int = 0
    pooled: int = 0
    error: str = ""
    where: str = ""
    seconds: float = 0.0

    def row(self) -> dict[str, Any]:
        return {**asdict(self.case), "status": self.status, "unidentified": self.unidentified,
                "unflagged": self.unflagged, "pooled": self.pooled, "error": self.error, "where": self.where,
                "seconds": round(self.seconds, 4)}


# ----------------------------------------------------------------------------- the cases
def _rng(seed: int, *keys: str) -> np.random.Generator:
    """A generator for one (seed, experiment, workflow, target) stream (stable across processes)."""
    return np.random.default_rng([seed, *(zlib.crc32(k.encode()) for k in keys)])


def draw_params(parameters: Iterable[Any], draw: str, rng: np.random.Generator) -> dict[str, float]:
    """Natural-scale values of ``parameters`` for the kind of draw ``draw``: ``prior`` (the
    declared unconstrained-scale normal, mapped back and kept inside the bounds), ``lower`` /
    ``upper`` (every parameter at that bound), ``mixed`` (each at a random bound or a prior draw),
    ``default``."""
    out: dict[str, float] = {}
    for p in parameters:
        pick = draw if draw != "mixed" else str(rng.choice(["lower", "upper", "prior"]))
        if pick == "lower":
            value = p.lower
        elif pick == "upper":
            value = p.upper
        elif pick == "default":
            value = p.default
        else:
            value = float(p.inside(p.to_constrained(rng.normal(p.prior_mean, p.prior_sd))))
        out[p.name] = float(value)
    return out


def trials_range(exp: Any) -> tuple[int, int] | None:
    """(the fewest, the default) values of the design's trials field, or None where the paradigm
    fixes its trials (the field's declared lower bound, else 1)."""
    name = exp.trials_field
    if name is None:
        return None
    info = exp.design_cls.model_fields[name]
    low = max([int(getattr(m, "ge", 1)) for m in info.metadata if hasattr(m, "ge")] or [1])
    return low, int(info.default)


def _targets(exp: Any, workflow: str) -> list[str]:
    """The agents (simulate, metrics) or models the workflow runs on; model recovery: the first
    model (it fits them all); a declared study: each declared study's name."""
    if workflow in AGENT_WORKFLOWS:
        return list(exp.agents)
    if workflow == "model-recovery":
        return list(exp.models)[:1] if len(exp.models) >= 2 else []
    if workflow == "study":
        from cogtestbed.studies.driver import declared_studies

        return [name for name, _ in declared_studies(exp)]
    return list(exp.models)


def _parameters(exp: Any, workflow: str, target: str) -> tuple[Any, ...]:
    if workflow in AGENT_WORKFLOWS:
        return tuple(exp.agents[target].parameters)
    if workflow == "study":
        return ()
    return tuple(exp.models[target].parameters)


def cases(experiment: str, workflows: Sequence[str] = WORKFLOWS, n: int | Mapping[str, int] = 8,
          seed: int = 0) -> Iterator[Case]:
    """``n`` cases (a number for every workflow, or one per workflow) of each target of each
    workflow on ``experiment``: the draws cycle through :data:`DRAWS`, the subjects through
    :data:`SUBJECTS`, the trials field through its fewest, its default and values between."""
    from cogtestbed.registry import get_experiment

    exp = get_experiment(experiment)
    span = trials_range(exp)
    for workflow in workflows:
        count = n if isinstance(n, int) else int(n.get(workflow, 0))
        for target in _targets(exp, workflow):
            rng = _rng(seed, experiment, workflow, target)
            params = _parameters(exp, workflow, target)
            for i in range(count):
                draw = DRAWS[i % len(DRAWS)] if params else "default"
                values = draw_params(params, draw, rng) if params else None
                trials = None
                if span is not None:
                    low, default = span
                    trials = (low, default, int(rng.integers(low, max(default, low) + 1)))[i % 3]
                effect = None
                if workflow in ("power", "plan") and params:
                    p = params[int(rng.integers(len(params)))]
                    width = (p.upper - p.lower) if math.isfinite(p.upper - p.lower) else 10.0
                    effect = (p.name, float(rng.choice([-1, 1]) * rng.uniform(0.02, 0.3) * min(width, 10.0)))
                yield Case(experiment, workflow, target, draw, int(rng.integers(2**31 - 1)),
                           SUBJECTS[i % len(SUBJECTS)], trials, values, effect)


# ----------------------------------------------------------------------------- the workflows
def _api() -> Any:
    """The public functions (``ct.*``)."""
    import cogtestbed as ct

    return ct


def _design(exp: Any, case: Case) -> dict[str, Any] | None:
    return None if case.trials is None or exp.trials_field is None else {exp.trials_field: case.trials}


def _spread(exp: Any, model: str, values: Mapping[str, float] | None, n: int, seed: int) -> dict[str, Any]:
    """Per-subject agent parameters: each subject its own values, scattered around ``values`` on
    the unconstrained scale (SD 0.3) and kept inside the bounds, so fits meet different truths."""
    cog = exp.model(model)
    rng = _rng(seed, "spread")
    base = values or {p.name: p.default for p in cog.parameters}
    per = {}
    for p in cog.parameters:
        z = p.to_unconstrained(np.full(n, base[p.name])) + rng.normal(0.0, 0.3, n) * (n > 1)
        per[p.name] = np.asarray(p.inside(p.to_constrained(z)))
    gen = exp.generator(model)
    return {k: (list(map(float, v)) if np.ndim(v) else v) for k, v in gen.agent_params(per).items()}


def _simulate(exp: Any, case: Case, output: Path | None = None) -> int:
    ct = _api()
    params: dict[str, Any] | None = None
    if case.params:
        rng = _rng(case.seed, "subjects")
        agent = exp.agent(case.target)
        params = {}
        for p in agent.parameters:
            v = case.params[p.name]
            if case.subjects > 1 and case.draw == "prior":  # one value each, around the draw
                z = p.to_unconstrained(np.full(case.subjects, v)) + rng.normal(0, 0.3, case.subjects)
                params[p.name] = [float(x) for x in p.inside(p.to_constrained(z))]
            else:
                params[p.name] = v
    ct.simulate(exp.name, case.target, subjects=case.subjects, seed=case.seed, params=params,
                design=_design(exp, case), output=output)
    return 0


def _simulate_file(exp: Any, case: Case) -> int:
    with tempfile.TemporaryDirectory(prefix="cogtestbed-matrix-") as tmp:
        return _simulate(exp, case, Path(tmp) / "trials.parquet")


def _metrics(exp: Any, case: Case) -> int:
    ct = _api()
    trials = ct.simulate(exp.name, case.target, subjects=case.subjects, seed=case.seed, params=case.params,
                         design=_design(exp, case))
    result = ct.metrics(exp.name, trials, **dict(exp.metrics.smoke_options))
    return len(result.get("flags") or [])


def _simulated(exp: Any, case: Case) -> Any:
    ct = _api()
    gen = exp.generator(case.target)
    params = _spread(exp, case.target, case.params, case.subjects, case.seed)
    return ct.simulate(exp.name, gen.agent, subjects=case.subjects, seed=case.seed, params=params,
                       design=_design(exp, case))


def _fit_rows(exp: Any, case: Case, fit: Any, trials: Any) -> tuple[int, int, int]:
    """(unidentified rows, rows with a missing estimate and no flag, whether simulated subjects
    with different true parameters came back as fewer units) of an MLE table."""
    names = list(exp.model(case.target).parameters.names)
    identified = fit["identified"].astype(bool)
    missing = fit[names].isna().any(axis=1)
    truths = [c for c in trials.columns if str(c).startswith("param_")]
    distinct = len(trials.groupby("subject")[truths].first().drop_duplicates()) if truths else 1
    return int((~identified).sum()), int((missing & identified).sum()), int(len(fit) < distinct)


def _fit_mle(exp: Any, case: Case) -> tuple[int, int, int]:
    ct = _api()
    trials = _simulated(exp, case)
    return _fit_rows(exp, case, ct.fit(exp.name, trials, model=case.target), trials)


def _fit_hierarchical(exp: Any, case: Case) -> int:
    ct = _api()
    fit = ct.fit(exp.name, _simulated(exp, case), model=case.target, method="hierarchical", draws=50, chains=1,
                 seed=case.seed)
    return len(getattr(fit, "unidentified", ()) or ())


def _study_unidentified(study: Any) -> int:
    table = study.table
    if "identified" in table.columns:
        return int((~table["identified"].astype(bool)).sum())
    return 0


def _common(exp: Any, case: Case) -> dict[str, Any]:
    design = _design(exp, case)
    return {"experiment": exp.name, "seed": case.seed, "workers": 1, **({"design": design} if design else {})}


def _recover(exp: Any, case: Case) -> int:
    ct = _api()
    fix = {k: v for k, v in (case.params or {}).items()} if case.draw in ("lower", "upper") else None
    cog = exp.model(case.target)
    if fix and len(fix) == len(cog.parameters):  # leave one free: a recovery with nothing free is refused
        fix.pop(next(iter(fix)))
    return _study_unidentified(ct.recover(case.target, subjects=case.subjects, reps=1, fix=fix, **_common(exp, case)))


def _power(exp: Any, case: Case) -> int:
    ct = _api()
    assert case.effect is not None
    name, size = case.effect
    base = {k: v for k, v in (case.params or {}).items() if k != name}
    return _study_unidentified(ct.power(case.target, effect={name: size}, subjects=(max(case.subjects, 2),),
                                        sims=2, base=base, **_common(exp, case)))


def _model_recovery(exp: Any, case: Case) -> int:
    ct = _api()
    return _study_unidentified(ct.model_recovery(list(exp.models), subjects=case.subjects, reps=1,
                                                 **_common(exp, case)))


def _sbc(exp: Any, case: Case) -> int:
    ct = _api()
    return _study_unidentified(ct.sbc(case.target, subjects=max(case.subjects, 2), reps=1, draws=50, chains=1,
                                      **_common(exp, case)))


def _forms(exp: Any, case: Case) -> int:
    ct = _api()
    k = min(len(exp.prompt_forms), 3)
    forms = ",".join(str(i) for i in range(k))
    design = _design(exp, case)
    ct.form_study(case.target, forms=forms, experiment=exp.name, subjects=max(case.subjects, 2) * k, reps=1,
                  seed=case.seed, design=design)
    return 0


def _plan(exp: Any, case: Case) -> int:
    ct = _api()
    assert case.effect is not None
    name, size = case.effect
    ct.plan(exp.name, model=case.target, effect={name: size}, llm="openai:gpt-4o-mini", subjects=(2, 8),
            mc_se=0.25, workers=1, seed=case.seed, design=_design(exp, case))
    return 0


def _study(exp: Any, case: Case) -> int:
    ct = _api()
    study = ct.study(exp.name, case.target, reps=1, seed=case.seed, workers=1)
    return _study_unidentified(study)


#: workflow → its run (returns the unidentified units, or (unidentified, unflagged, pooled)).
RUNS: dict[str, Callable[[Any, Case], int | tuple[int, int, int]]] = {
    "simulate": _simulate, "simulate-file": _simulate_file, "metrics": _metrics, "fit-mle": _fit_mle,
    "fit-hierarchical": _fit_hierarchical, "recover": _recover, "power": _power, "model-recovery": _model_recovery,
    "sbc": _sbc, "forms": _forms, "plan": _plan, "study": _study,
}


def _typed(exc: BaseException) -> bool:
    """Whether ``exc`` is one of the library's typed refusals (a study's refusal only where the
    worker's own exception was typed)."""
    return isinstance(exc, CogtestbedError) and getattr(exc, "typed", True)


def _where(exc: BaseException) -> str:
    """The innermost frame of the package that raised ``exc`` (``path:line in function``)."""
    frames = traceback.extract_tb(exc.__traceback__)
    remote = getattr(exc, "remote_traceback", "")
    ours = [f for f in frames if "cogtestbed" in f.filename]
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno} in {ours[-1].name}" if ours else ""
    if remote:
        where = remote.strip().splitlines()[-3].strip() if len(remote.strip().splitlines()) >= 3 else where
    return where


def run_case(case: Case) -> Outcome:
    """Run one case in this process and classify how it ended (warnings are silenced: a warning
    is not an outcome)."""
    from cogtestbed.registry import get_experiment

    exp = get_experiment(case.experiment)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = RUNS[case.workflow](exp, case)
    except Exception as exc:  # the matrix's whole point: every way a run ends, classified
        line = " ".join(str(exc).split())[:300]
        status: Status = "refused" if _typed(exc) else "traceback"
        return Outcome(case, status, error=f"{type(exc).__name__}: {line}",
                       where="" if status == "refused" else _where(exc), seconds=time.perf_counter() - start)
    unidentified, unflagged, pooled = got if isinstance(got, tuple) else (got, 0, 0)
    return Outcome(case, "ok", unidentified, unflagged, pooled, seconds=time.perf_counter() - start)


# ----------------------------------------------------------------------------- the run and its table
@dataclass
class MatrixResult:
    """The outcomes of a matrix run; :meth:`table` aggregates them per experiment and workflow."""

    outcomes: list[Outcome] = field(default_factory=list)

    def frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame([o.row() for o in self.outcomes])

    def table(self) -> Any:
        return matrix_table(self.frame())

    @property
    def tracebacks(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "traceback"]


def run_matrix(experiments: Sequence[str] | None = None, workflows: Sequence[str] = WORKFLOWS,
               n: int | Mapping[str, int] = 8, seed: int = 0,
               on_outcome: Callable[[Outcome], None] | None = None) -> MatrixResult:
    """Every case of :func:`cases` for each experiment (default: every registered one), run in
    this process, in order."""
    from cogtestbed.registry import experiment_names

    result = MatrixResult()
    for name in experiments or experiment_names():
        for case in cases(name, workflows, n, seed):
            outcome = run_case(case)
            result.outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    return result


def matrix_table(frame: Any) -> Any:
    """experiment × workflow → runs, tracebacks, typed refusals, unidentified units, unflagged
    nulls, fits that pooled subjects with different parameters, seconds (from :meth:`Outcome.row`
    rows)."""
    import pandas as pd

    if frame.empty:
        return pd.DataFrame(columns=["experiment", "workflow", "runs", "tracebacks", "refusals", "unidentified",
                                     "unflagged", "pooled", "seconds"])
    counts = ["unidentified", "unflagged", "pooled"]
    frame = frame.assign(**{c: frame[c].fillna(0).astype(int) if c in frame.columns else 0 for c in counts})
    grouped = frame.assign(tb=frame["status"] == "traceback", refused=frame["status"] == "refused")
    out = grouped.groupby(["experiment", "workflow"], sort=False).agg(
        runs=("status", "size"), tracebacks=("tb", "sum"), refusals=("refused", "sum"),
        unidentified=("unidentified", "sum"), unflagged=("unflagged", "sum"), pooled=("pooled", "sum"),
        seconds=("seconds", "sum"))
    out = out.reset_index().astype({c: int for c in ["runs", "tracebacks", "refusals", *counts]})
    order = {w: i for i, w in enumerate(WORKFLOWS)}
    out = out.sort_values(["experiment", "workflow"], key=lambda s: s.map(order) if s.name == "workflow" else s)
    return out.reset_index(drop=True)


def read_outcomes(paths: Iterable[str | Path]) -> Any:
    """The outcome rows of one or more JSON-lines files written by the matrix command."""
    import pandas as pd

    rows = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines() if line.strip()]
    return pd.DataFrame(rows)


def markdown(table: Any) -> str:
    """The table as Markdown, with a total row, known-open cells marked ``*``."""
    lines = ["| experiment | workflow | runs | tracebacks | typed refusals | unidentified | unflagged nulls | pooled |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in table.itertuples(index=False):
        mark = " \\*" if (r.experiment, r.workflow) in KNOWN_OPEN else ""
        lines.append(f"| {r.experiment} | {r.workflow}{mark} | {r.runs:,} | {r.tracebacks:,} | {r.refusals:,} | "
                     f"{r.unidentified:,} | {r.unflagged:,} | {r.pooled:,} |")
    t = table[["runs", "tracebacks", "refusals", "unidentified", "unflagged", "pooled"]].sum()
    lines.append(f"| **all** | | **{t.runs:,}** | **{t.tracebacks:,}** | **{t.refusals:,}** | "
                 f"**{t.unidentified:,}** | **{t.unflagged:,}** | **{t.pooled:,}** |")
    return "\n".join(lines)


__all__ = ["AGENT_WORKFLOWS", "Case", "DRAWS", "KNOWN_OPEN", "MatrixResult", "Outcome", "RUNS", "SLOW_WORKFLOWS",
           "SUBJECTS", "WORKFLOWS", "cases", "draw_params", "markdown", "matrix_table", "read_outcomes", "run_case",
           "run_matrix", "trials_range"]


# ----------------------------------------------------------------------------- the command line
#: Cases per target of each workflow in the full run (docs/matrix.md): the cheap workflows carry
#: the count, the slow ones run a few tiny cases each.
FULL: dict[str, int] = {
    "simulate": 500, "simulate-file": 8, "metrics": 10, "fit-mle": 200, "fit-hierarchical": 1, "recover": 12,
    "power": 8, "model-recovery": 8, "sbc": 1, "forms": 4, "plan": 1, "study": 1,
}
#: Fewer cases where one run takes seconds (revealed belief's 960-trial sessions have no trials
#: field to shrink; belief coherence's metrics fit random forests).
FULL_EXCEPT: dict[tuple[str, str], int] = {
    ("revealed-belief", "fit-mle"): 40, ("revealed-belief", "simulate"): 100, ("belief-coherence", "metrics"): 2,
    ("belief-coherence", "simulate"): 120, ("magnitude", "simulate"): 250,
    ("revealed-belief", "power"): 3, ("revealed-belief", "metrics"): 4,
}


def _counts(args: argparse.Namespace, experiment: str) -> dict[str, int]:
    """Cases per target of each workflow asked for on ``experiment``."""
    workflows = args.workflows.split(",") if args.workflows else list(WORKFLOWS)
    unknown = sorted(set(workflows) - set(WORKFLOWS))
    if unknown:
        raise SystemExit(f"error: unknown workflow(s) {', '.join(unknown)}; choose from {', '.join(WORKFLOWS)}")
    return {w: (FULL_EXCEPT.get((experiment, w), FULL[w]) if args.n is None else args.n) for w in workflows}


def run(args: argparse.Namespace) -> int:
    names = args.experiment.split(",") if args.experiment else experiment_names()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with out.open("a") as fh:
        def write(o) -> None:  # type: ignore[no-untyped-def]
            fh.write(json.dumps(o.row(), default=float) + "\n")
            fh.flush()
            if o.status == "traceback":
                print(f"TRACEBACK {o.case.experiment} {o.case.workflow} {o.case.target}: {o.error[:160]} "
                      f"[{o.where}]", file=sys.stderr, flush=True)

        result = MatrixResult()
        for name in names:
            counts = _counts(args, name)
            result.outcomes += run_matrix([name], list(counts), counts, args.seed, on_outcome=write).outcomes
    print(markdown(result.table()))
    print(f"\n{len(result.outcomes):,} runs in {time.perf_counter() - start:.0f} s (1 process)")
    return 0


def table(args: argparse.Namespace) -> int:
    frame = read_outcomes(args.files)
    t = matrix_table(frame)
    print(markdown(t))
    seconds = float(frame["seconds"].sum()) if len(frame) else 0.0
    print(f"\n{len(frame):,} runs, {seconds:,.0f} s of workflow time")
    tb = frame[frame["status"] == "traceback"]
    if len(tb):
        print("\ntracebacks (experiment, workflow: error [where] x count):")
        for (exp, wf, err, where), g in tb.groupby(["experiment", "workflow", "error", "where"]):
            known = " (known open)" if (exp, wf) in KNOWN_OPEN else ""
            print(f"  {exp}, {wf}{known}: {err[:200]} [{where}] x {len(g)}")
    open_cells = {(e, w) for e, w in zip(tb["experiment"], tb["workflow"], strict=True)} - set(KNOWN_OPEN)
    return 1 if args.strict and open_cells else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run cases and append their outcomes to --out")
    r.add_argument("--experiment", help="comma list (default: every registered experiment)")
    r.add_argument("--workflows", help=f"comma list of {', '.join(WORKFLOWS)} (default: all)")
    r.add_argument("--n", type=int, help="cases per target of each workflow (default: the full run's)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", default="matrix_output/outcomes.jsonl")
    t = sub.add_parser("table", help="the table of outcome files")
    t.add_argument("files", nargs="+")
    t.add_argument("--strict", action="store_true", help="exit 1 on a traceback outside the known-open cells")
    args = parser.parse_args(argv)
    return run(args) if args.command == "run" else table(args)


if __name__ == "__main__":
    sys.exit(main())

"""Identification flags on fresh populations of every experiment's default design: the share flagged and why.

Per experiment × model (every model with ``--all-models``; the experiment's first model otherwise), a fresh
population drawn as a power plan draws it (:func:`~cogtestbed.studies.model_studies.power_subjects`:
medians at the model's defaults, subjects scattered by the power study's between-subject SD, no effect) at the
experiment's default design, fitted by :meth:`CognitiveModel.fit_identified` (profile-likelihood intervals,
flags by rule: :mod:`cogtestbed.inference.identification`).  Prints the share of fitted subjects flagged, the
share flagged one-sided (an interval open at one end of a bounded range, an estimate on its bound included),
and the two checks of the rule: unflagged subjects whose 95 % interval covers ≥ 99 % of a bounded range
(should be 0) and subjects with an estimate on a declared bound marked identified (should be 0).  Then the
RW± power-plan population (:data:`RW_PM_PLAN`: RW±'s optimism bias 0.2 at 96 trials, the plan docs/plan.md
shows) on its own, and the two checks as two lines: on that population, no unflagged subject has an interval
covering ≥ 99 % of a bounded range; across every row measured (the matrix with ``--all-models``), no subject
on a declared bound is marked identified.

    python benchmarks/studies/flag_shares.py                          # every experiment, 40 subjects each
    python benchmarks/studies/flag_shares.py --all-models --subjects 30 --rw-pm-subjects 200   # the matrix
    python benchmarks/studies/flag_shares.py --experiments instrumental-learning --subjects 200
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

#: Seed of the populations (a stream of its own).
SEED = 95_004
#: The RW± power plan's population: (experiment, model, (effect, size), trials).
RW_PM_PLAN = ("instrumental-learning", "rw-pm", ("optimism_bias", 0.2), 96)


def population_fits(experiment: str, model_name: str, subjects: int, seed: int = SEED,
                    effect: tuple[str, float] | None = None, trials: int | None = None) -> tuple[Any, Any]:
    """(model, its ``fit_identified`` table) of ``subjects`` fresh subjects drawn as a power plan draws them."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import power_subjects
    from cogtestbed.studies.study_data import design_for_trials
    from cogtestbed.studies.study_kinds import study_spec

    exp = get_experiment(experiment)
    model = exp.model(model_name)
    name, size = effect or (model.parameters.names[0], 0.0)
    spec = study_spec(kind="power", experiment=experiment, models=(model_name,), effect=name, effect_size=size,
                      subjects=(subjects,), reps=1, seed=seed, **({"trials": (trials,)} if trials else {}))
    design = design_for_trials(exp, trials, spec.design)
    table = power_subjects(spec, exp, model, design, 1, subjects, np.random.SeedSequence([seed, 95]))[0]
    return model, model.fit_identified(table)


def wide_unflagged(model: Any, fits: Any, share: float = 0.99) -> int:
    """Unflagged subjects with a bounded parameter whose 95 % interval covers ≥ ``share`` of its range."""
    wide = np.zeros(len(fits), bool)
    for p in model.parameters:
        if not np.isfinite(p.upper - p.lower) or f"{p.name}_lo95" not in fits:
            continue
        lo, hi = fits[f"{p.name}_lo95"].to_numpy(float), fits[f"{p.name}_hi95"].to_numpy(float)
        covered = (np.minimum(hi, p.upper) - np.maximum(lo, p.lower)) / (p.upper - p.lower)
        wide |= np.nan_to_num(covered) >= share
    return int((wide & fits["identified"].to_numpy(bool)).sum())


def on_bound_identified(model: Any, fits: Any) -> int:
    """Subjects with an estimate on a declared (finite) bound that are marked identified."""
    from cogtestbed.inference.identification import at_bound

    on = np.zeros(len(fits), bool)
    for p in model.parameters:
        if p.name in fits:
            on |= at_bound(fits[p.name].to_numpy(float), p)
    return int((on & fits["identified"].to_numpy(bool)).sum())


def flag_row(experiment: str, model_name: str, subjects: int, **kw: Any) -> dict[str, Any]:
    """One experiment × model's flag shares and the rule's two checks."""
    from cogtestbed.inference.identification import ONE_SIDED

    start = time.perf_counter()
    model, fits = population_fits(experiment, model_name, subjects, **kw)
    fitted = fits[fits[list(model.parameters.names)].notna().all(axis=1)]
    reason = fitted["null_reason"].astype(str)
    flagged = ~fitted["identified"].to_numpy(bool)
    n = max(len(fitted), 1)
    return {"experiment": experiment, "model": model_name, "subjects": len(fits), "fitted": len(fitted),
            "flagged": float(flagged.sum() / n), "one_sided": float((flagged & reason.str.startswith(ONE_SIDED)).sum()
                                                                   / n),
            "wide_unflagged": wide_unflagged(model, fitted), "on_bound_identified": on_bound_identified(model, fitted),
            "seconds": round(time.perf_counter() - start)}


def rw_pm_plan_row(subjects: int) -> dict[str, Any]:
    """:func:`flag_row` of the RW± power plan's population (:data:`RW_PM_PLAN`), ``subjects`` fresh subjects."""
    experiment, model_name, effect, trials = RW_PM_PLAN
    row = flag_row(experiment, model_name, subjects, effect=effect, trials=trials)
    return {**row, "model": f"{model_name} (plan)"}


def check_lines(rows: Sequence[dict[str, Any]], rw_pm: dict[str, Any] | None) -> list[str]:
    """The rule's two checks in two lines: the RW± power-plan population's unflagged near-whole-range
    intervals (``rw_pm``: its :func:`rw_pm_plan_row`), and, across ``rows`` (and ``rw_pm``), the subjects on a
    declared bound marked identified; each says whether it holds (0)."""
    out = []
    if rw_pm is not None:
        n = rw_pm["wide_unflagged"]
        out.append(f"RW± power-plan population ({rw_pm['fitted']} fitted subjects, {RW_PM_PLAN[2][0]} "
                   f"{RW_PM_PLAN[2][1]:g}, {RW_PM_PLAN[3]} trials; {rw_pm['flagged']:.1%} flagged, "
                   f"{rw_pm['one_sided']:.1%} one-sided): unflagged subjects with an interval covering ≥ 99 % of a "
                   f"bounded range: {n} ({'holds' if n == 0 else 'FAILS'})")
    every = [*rows, *([rw_pm] if rw_pm is not None else [])]
    bound = sum(r["on_bound_identified"] for r in every)
    units = len({(r["experiment"], r["model"].split(" ")[0]) for r in every})
    out.append(f"across the matrix ({units} experiment × model units, {sum(r['fitted'] for r in every)} fitted "
               f"subjects): subjects on a declared bound marked identified: {bound} "
               f"({'holds' if bound == 0 else 'FAILS'}); unflagged wide intervals "
               f"{sum(r['wide_unflagged'] for r in every)}")
    return out


def _line(r: dict[str, Any]) -> str:
    return (f"{r['experiment']:<24} {r['model']:<20} {r['fitted']:>6} {r['flagged']:>8.1%} {r['one_sided']:>9.1%} "
            f"{r['wide_unflagged']:>14} {r['on_bound_identified']:>16}   ({r['seconds']} s)")


def cases(experiments: Sequence[str] | None, all_models: bool) -> list[tuple[str, str]]:
    """(experiment, model) pairs: each experiment's first model, or every model."""
    from cogtestbed.registry import experiment_names, get_experiment

    out = []
    for e in experiments or experiment_names():
        models = list(get_experiment(e).models)
        out += [(e, m) for m in (models if all_models else models[:1])]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--experiments", default=None, help="comma-separated (default: every experiment)")
    ap.add_argument("--all-models", action="store_true", help="every model of each experiment")
    ap.add_argument("--cases", default=None, help="EXPERIMENT:MODEL pairs, comma-separated (instead of the above)")
    ap.add_argument("--subjects", type=int, default=40)
    ap.add_argument("--rw-pm-subjects", type=int, default=100,
                    help="subjects of the RW± power-plan population's row (0: leave it out)")
    ap.add_argument("--json", default=None, help="append each row as a JSON line to this file")
    args = ap.parse_args(argv)
    print(f"{'experiment':<24} {'model':<20} {'fitted':>6} {'flagged':>8} {'one-sided':>9} {'wide&unflagged':>14} "
          f"{'bound&identified':>16}")
    rows = []
    todo = ([tuple(c.split(":", 1)) for c in args.cases.split(",")] if args.cases else
            cases(args.experiments.split(",") if args.experiments else None, args.all_models))
    for e, m in todo:
        try:
            r = flag_row(e, m, args.subjects)
        except Exception as exc:  # noqa: BLE001 - a case that cannot be drawn or fitted is reported, not fatal
            print(f"{e:<24} {m:<20} not measured: {type(exc).__name__}: {str(exc)[:160]}")
            continue
        _keep(rows, r, args.json)
    rw_pm = rw_pm_plan_row(args.rw_pm_subjects) if args.rw_pm_subjects > 0 else None
    if rw_pm is not None:
        _keep([], rw_pm, args.json)
    print(f"{len(rows)} cases")
    for line in check_lines(rows, rw_pm):
        print(line)


def _keep(rows: list[dict[str, Any]], r: dict[str, Any], json_path: str | None) -> None:
    """Print row ``r``, add it to ``rows`` and append it to ``json_path`` where given."""
    rows.append(r)
    print(_line(r), flush=True)
    if json_path:
        with open(json_path, "a") as fh:
            fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()

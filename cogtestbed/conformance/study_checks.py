"""Conformance checks of an experiment's studies (registered in
:data:`cogtestbed.conformance.suite.CHECKS`): every model's parameter-power study runs
(:func:`check_power_study`), the declared studies build (:func:`check_study_declarations`) and run
once (:func:`check_declared_studies`, slow).
"""

from __future__ import annotations

import math
from typing import Any

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.harness import fail, model_names, small_design
from cogtestbed.experiments.spec import ExperimentSpec, StudyDecl
from cogtestbed.parameters import Parameter
from cogtestbed.study_errors import ConformanceError, NotApplicable

#: Subjects per data set of a quick smoke run of a declared study, and draws of its SBC chains.
QUICK_STUDY_SUBJECTS = 4
QUICK_SBC_DRAWS = 50


def power_effect(parameter: Parameter) -> float:
    """A small shift of ``parameter`` inside its bounds: 5 % of its range (of 1 where unbounded),
    downwards where upwards would leave the bounds."""
    span = parameter.upper - parameter.lower if math.isfinite(parameter.upper - parameter.lower) else 1.0
    return 0.05 * span if parameter.default + 0.05 * span <= parameter.upper else -0.05 * span


def check_power_study(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Every model's parameter-power study runs (one simulated study of two subjects, a small shift
    of its first parameter, a between-subject SD of 2 on the unconstrained scale, half the small
    design): its one cell has one simulation of two subjects and a mean estimate inside the
    parameter's bounds, so the population draws stay inside the bounds whatever the transform."""
    from cogtestbed.studies.driver import run_study, study_spec

    design: dict[str, Any] = {}
    if spec.trials_field is not None:
        design[spec.trials_field] = max(1, int(getattr(small_design(spec, config), spec.trials_field)) // 2)
    problems = []
    for name in model_names(spec):
        p = next(iter(spec.model(name).parameters))
        study = study_spec(kind="power", experiment=spec.name, models=(name,), effect=p.name,
                           effect_size=power_effect(p), subjects=(2,), reps=1, sd_between=2.0, design=design,
                           seed=config.seed)
        try:
            (cell,) = run_study(study, workers=1).summary["cells"]
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            problems.append(f"model {name!r}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
            continue
        if (cell["sims"], cell["n_subjects"]) != (1, 2):
            problems.append(f"model {name!r}: a cell of {cell['sims']} simulations of {cell['n_subjects']} subjects")
        value = _estimate_of_parameter(study, spec.model(name), float(cell["mean_estimate"]))
        if not p.lower <= value <= p.upper:
            problems.append(f"model {name!r}: mean estimate of {p.name} {value} outside [{p.lower}, {p.upper}]")
    fail(problems, f"{spec.name}: parameter power studies do not run")


def _estimate_of_parameter(study: Any, model: Any, estimate: float) -> float:
    """A one-sample power cell's mean estimate (the effect less its value before it moves, on the
    test's scale: :func:`~cogtestbed.studies.model_studies.one_sample_values`) as the
    parameter's own value on its natural scale."""
    from cogtestbed.studies.model_studies import effect_scale, one_sample_null

    value = estimate + one_sample_null(study, model)
    return math.exp(value) if effect_scale(model, study.effect) == "log" else value


def study_overrides(decl: StudyDecl, config: CheckConfig) -> dict[str, Any]:
    """Settings of a reps = 1 smoke run of a declared study: quick mode keeps the smallest declared
    design point, :data:`QUICK_STUDY_SUBJECTS` subjects and short chains."""
    from cogtestbed.studies.study_kinds import kind_fields

    if not config.quick:
        return {}
    out: dict[str, Any] = {"subjects": (QUICK_STUDY_SUBJECTS,)} if "subjects" in kind_fields(decl.kind) else {}
    if decl.runs:
        out["runs"] = (min(decl.runs),)
    if decl.trials:
        out["trials"] = (min(decl.trials),)
    if decl.kind == "sbc":
        out.update(draws=QUICK_SBC_DRAWS, tune=QUICK_SBC_DRAWS, chains=1)
    return out


def check_study_declarations(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The experiment declares at least one study, and each builds a study spec that passes
    :func:`~cogtestbed.studies.driver.check_study` (names, settings, designs; nothing is run)."""
    from cogtestbed.studies.driver import check_study, spec_from_decl

    if not spec.studies:
        raise ConformanceError(f"{spec.name}: declares no study (StudyDecl in the spec's studies)")
    problems = []
    for i, decl in enumerate(spec.studies):
        try:
            check_study(spec_from_decl(spec, decl, reps=1))
        except Exception as exc:  # noqa: BLE001 - any refusal is the finding
            problems.append(f"study {i} ({decl.kind}): {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
    fail(problems, f"{spec.name}: declared studies do not build")


def check_declared_studies(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Each declared study runs once (reps = 1) through the generic study driver and gives a
    non-empty results table and summary (quick mode: at its smallest declared design)."""
    if not spec.studies:
        raise NotApplicable(f"{spec.name} declares no studies")
    from cogtestbed.studies import driver as studies

    runner = getattr(studies, "run_declared_study", None)
    if runner is None:
        raise ConformanceError("the study driver has no generic entry for declared studies "
                               "(cogtestbed.studies.driver.run_declared_study)")
    problems = []
    for i, decl in enumerate(spec.studies):
        what = f"study {i} ({decl.kind}: {decl.description or decl.model or decl.metric})"
        problems += [f"{what}: {p}" for p in _declared_study_problems(runner, spec, decl, config)]
    fail(problems, f"{spec.name}: declared studies do not run")


def _declared_study_problems(runner: Any, spec: ExperimentSpec, decl: Any, config: CheckConfig) -> list[str]:
    """What one declared study run once gets wrong: a failure, an empty results table or summary."""
    try:
        result = runner(spec, decl, reps=1, seed=config.seed, **study_overrides(decl, config))
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        return [f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"]
    problems = []
    if getattr(result, "table", None) is None or result.table.empty:
        problems.append("the results table is empty")
    if not getattr(result, "summary", None):
        problems.append("the summary is empty")
    return problems


# ============================================================================= what every family declares

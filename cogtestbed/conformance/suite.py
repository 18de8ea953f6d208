"""The public conformance suite of an experiment, in the manner of scikit-learn's ``check_estimator``.

:func:`check_experiment` runs every check on one :class:`~cogtestbed.experiments.spec.ExperimentSpec`
and returns a :class:`ConformanceReport` (or raises :class:`ConformanceError` listing the
failures).  Each check is a small named function ``check_xxx(spec, config)`` that raises
:class:`ConformanceError` with a readable message, or :class:`NotApplicable` when the experiment
has nothing it could test (no models, no importers); :func:`experiment_checks` yields them as
:class:`Check` objects so that pytest can parametrise over (experiment, check)::

    from cogtestbed.registry import get_experiment
    from cogtestbed.conformance.suite import check_experiment

    report = check_experiment(get_experiment("two-step"), raise_on_failure=False)
    print(report.table())

An experiment declares the checks it is known to fail, with the reason, in
``ExperimentSpec.expected_failures``; they are reported as ``xfail``, and as a failure (``xpass``)
once they pass, so the declaration is removed as soon as the limitation is fixed.

Quick mode (the default, and the default test suite) plays small designs with few subjects; the
full mode plays the designs the experiment's declared studies use.  Everything is seeded: a check
gives the same verdict on every run.

This module is the registry (:data:`CHECKS`) and the runner; the checks live by what they test:
the environment and its simulation paths (:mod:`.env_checks`), prompts (:mod:`.prompt_checks`),
an LLM subject (:mod:`.llm_checks`), parameters (:mod:`.parameter_checks`), likelihoods
(:mod:`.likelihood_checks`), PyMC models (:mod:`.pymc_checks`), studies (:mod:`.study_checks`),
importers and metrics (:mod:`.data_checks`), input edges (:mod:`.edge_checks`) and trial tables
(:mod:`.table_checks`); what they share is in :mod:`.harness`.  Every name those modules made
public here before the split is still importable from this module.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cogtestbed.conformance.config import DATA_DIR_ENV, CheckConfig
from cogtestbed.conformance.data_checks import check_importers, check_metrics_result
from cogtestbed.conformance.edge_checks import check_importer_conflicts
from cogtestbed.conformance.env_checks import (
    check_batch_equals_step,
    check_gymnasium_env,
    check_lapses,
    check_phases,
    check_seeded_determinism,
    check_tables_module,
    tables_module_name,
)
from cogtestbed.conformance.harness import (
    design_with_trials,
    fail,
    first_difference,
    play_episode,
    prior_draws,
    simulate_from_model,
    small_design,
    table_bytes,
)
from cogtestbed.conformance.likelihood_checks import (
    check_lapse_likelihood,
    check_likelihood_gradient,
    check_mle_recovery,
    check_pointwise_likelihood,
    check_search_objective,
    finite_difference_grad,
    recovery_design,
)
from cogtestbed.conformance.llm_checks import ScriptedClient, check_garbage_answers, check_llm_budget
from cogtestbed.conformance.parameter_checks import (
    check_bound_edges,
    check_parameter_bounds,
    check_prior_bounds,
)
from cogtestbed.conformance.prompt_checks import (
    check_prompt_continuation,
    check_prompt_forms,
    prompt_form_problems,
    scored_form_problems,
    strip_format_block,
)
from cogtestbed.conformance.pymc_checks import check_pymc_likelihood, check_pymc_model
from cogtestbed.conformance.study_checks import (
    check_declared_studies,
    check_power_study,
    check_study_declarations,
    power_effect,
    study_overrides,
)
from cogtestbed.conformance.table_checks import (
    check_all_invalid_metrics,
    check_constant_answers,
    check_permuted_table,
    check_schema_fast_path,
)
from cogtestbed.errors import InputError
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.study_errors import ConformanceError, NotApplicable

__all__ = [
    "CHECKS", "DATA_DIR_ENV", "Check", "CheckConfig", "CheckFn", "CheckResult", "ConformanceError",
    "ConformanceReport", "NotApplicable", "ScriptedClient", "Status", "check_all_invalid_metrics",
    "check_batch_equals_step", "check_bound_edges", "check_constant_answers", "check_declared_studies",
    "check_experiment", "check_garbage_answers", "check_gymnasium_env", "check_importer_conflicts",
    "check_importers", "check_lapse_likelihood", "check_lapses", "check_likelihood_gradient", "check_llm_budget",
    "check_metrics_result", "check_mle_recovery", "check_parameter_bounds", "check_permuted_table",
    "check_phases", "check_pointwise_likelihood", "check_power_study", "check_prior_bounds",
    "check_prompt_continuation", "check_prompt_forms", "check_pymc_likelihood", "check_pymc_model",
    "check_schema_fast_path", "check_search_objective", "check_seeded_determinism", "check_spec_declaration",
    "check_study_declarations", "check_tables_module", "design_with_trials", "experiment_checks",
    "finite_difference_grad", "first_difference", "play_episode", "power_effect", "prior_draws",
    "prompt_form_problems", "recovery_design", "run_check", "scored_form_problems", "simulate_from_model",
    "small_design", "strip_format_block", "study_overrides", "table_bytes", "tables_module_name",
]

Status = Literal["passed", "failed", "xfail", "xpass", "skipped"]
CheckFn = Callable[[ExperimentSpec, CheckConfig], None]


@dataclass(frozen=True)
class Check:
    """One named check, bound to a configuration; ``check(spec)`` raises on failure."""

    name: str
    fn: CheckFn
    config: CheckConfig = field(default_factory=CheckConfig)

    @property
    def description(self) -> str:
        doc = (self.fn.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else self.name

    def __call__(self, spec: ExperimentSpec) -> None:
        self.fn(spec, self.config)


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check on one experiment.

    Attributes
    ----------
    experiment : str
        The experiment checked.
    check : str
        The check's name.
    status : {"passed", "failed", "skipped"}
        Its outcome.
    message : str
        Why it failed or was skipped.
    seconds : float
        How long it took.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> result = ct.check("instrumental-learning", checks=["spec_declaration"]).results[0]
    >>> result.check, result.status
    ('spec_declaration', 'passed')
    """

    experiment: str
    check: str
    status: Status
    message: str = ""
    seconds: float = 0.0


@dataclass
class ConformanceReport:
    """Every check's outcome on one experiment.

    Attributes
    ----------
    experiment : str
        The experiment checked.
    results : list of CheckResult
        One per check run.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> report = ct.check("instrumental-learning", checks=["spec_declaration"])
    >>> report.experiment, report.passed, report.failures
    ('instrumental-learning', True, [])
    """

    experiment: str
    results: list[CheckResult]

    @property
    def failures(self) -> list[CheckResult]:
        """Checks that failed, and expected failures that passed (strict, like pytest's)."""
        return [r for r in self.results if r.status in ("failed", "xpass")]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def passed(self) -> bool:
        """No check failed (expected failures and skipped checks aside)."""
        return not self.failures

    def table(self) -> str:
        """A plain-text table: check, status, seconds, first line of the message."""
        width = max((len(r.check) for r in self.results), default=5)
        lines = [f"{'check':<{width}}  {'status':<7}  {'s':>6}  message"]
        for r in self.results:
            first = r.message.splitlines()[0] if r.message else ""
            lines.append(f"{r.check:<{width}}  {r.status:<7}  {r.seconds:6.1f}  {first}")
        return "\n".join(lines)

    def raise_for_failures(self) -> None:
        if self.failures:
            body = "\n".join(f"- {r.check} [{r.status}]: {r.message}" for r in self.failures)
            raise ConformanceError(f"experiment {self.experiment!r} fails {len(self.failures)} "
                                   f"conformance check(s):\n{body}")


def _naming_problems(spec: ExperimentSpec) -> list[str]:
    """Agents and models whose own name or experiment is not the one they are registered under."""
    problems = []
    for name, agent in spec.agents.items():
        if getattr(agent, "name", None) != name:
            problems.append(f"agent registered as {name!r} has name {getattr(agent, 'name', None)!r}")
        if getattr(agent, "experiment", None) != spec.name:
            problems.append(f"agent {name!r} says it plays {getattr(agent, 'experiment', None)!r}")
    for name, model in spec.models.items():
        if getattr(model, "name", None) != name:
            problems.append(f"model registered as {name!r} has name {getattr(model, 'name', None)!r}")
        if getattr(model, "experiment", None) != spec.name:
            problems.append(f"model {name!r} says it reads {getattr(model, 'experiment', None)!r}")
    return problems


def check_spec_declaration(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The spec is self-consistent and its pieces name the experiment they belong to."""
    problems = list(spec.problems())
    unknown = sorted(set(spec.expected_failures) - set(CHECKS))
    if unknown:
        problems.append(f"expected_failures name unknown checks {unknown}; checks are: {', '.join(CHECKS)}")
    problems += _naming_problems(spec)
    if getattr(spec.env_cls, "experiment", None) != spec.name:
        problems.append(f"{spec.env_cls.__name__}.experiment is {getattr(spec.env_cls, 'experiment', None)!r}")
    if not spec.metrics.headline:
        problems.append("the metrics declare no headline keys (MetricsSpec.headline)")
    design = spec.design_cls()
    if spec.trials_field is not None:
        value = int(getattr(design, spec.trials_field))
        bigger = spec.design_cls(**{**design.model_dump(), spec.trials_field: 2 * value})
        if not bigger.n_trials > design.n_trials:
            problems.append(f"doubling trials_field {spec.trials_field!r} does not add trials "
                            f"({design.n_trials} → {bigger.n_trials})")
    fail(problems, f"{spec.name}: the declaration is inconsistent")


# ============================================================================= the suite
#: Every check, in the order they run (cheap declaration checks first).
CHECKS: dict[str, CheckFn] = {
    "spec_declaration": check_spec_declaration,
    "tables_module": check_tables_module,
    "schema_fast_path": check_schema_fast_path,
    "phases": check_phases,
    "gymnasium_env": check_gymnasium_env,
    "seeded_determinism": check_seeded_determinism,
    "prompt_continuation": check_prompt_continuation,
    "prompt_forms": check_prompt_forms,
    "garbage_answers": check_garbage_answers,
    "llm_budget": check_llm_budget,
    "batch_equals_step": check_batch_equals_step,
    "lapses": check_lapses,
    "parameter_bounds": check_parameter_bounds,
    "bound_edges": check_bound_edges,
    "prior_bounds": check_prior_bounds,
    "pointwise_likelihood": check_pointwise_likelihood,
    "likelihood_gradient": check_likelihood_gradient,
    "search_objective": check_search_objective,
    "lapse_likelihood": check_lapse_likelihood,
    "mle_recovery": check_mle_recovery,
    "pymc_model": check_pymc_model,
    "pymc_likelihood": check_pymc_likelihood,
    "power_study": check_power_study,
    "importers": check_importers,
    "importer_conflicts": check_importer_conflicts,
    "metrics_result": check_metrics_result,
    "study_declarations": check_study_declarations,
    "declared_studies": check_declared_studies,
    "permuted_table": check_permuted_table,
    "all_invalid_metrics": check_all_invalid_metrics,
    "constant_answers": check_constant_answers,
}


def experiment_checks(spec: ExperimentSpec, *, quick: bool = True, data_dir: Path | None = None) -> Iterator[Check]:
    """Every check, bound to the configuration (pytest parametrises over these)."""
    config = CheckConfig(quick=quick, data_dir=data_dir)
    for name, fn in CHECKS.items():
        yield Check(name, fn, config)


def run_check(spec: ExperimentSpec, check: Check) -> CheckResult:
    """Run one check, honouring the spec's expected failures."""
    start = time.perf_counter()
    reason = spec.expected_failures.get(check.name)
    try:
        check(spec)
    except NotApplicable as exc:
        return CheckResult(spec.name, check.name, "skipped", str(exc), time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a result
        msg = str(exc) if isinstance(exc, ConformanceError) else "".join(
            traceback.format_exception_only(type(exc), exc)).strip()
        if reason is not None:
            return CheckResult(spec.name, check.name, "xfail", f"expected: {reason} ({msg.splitlines()[0]})",
                               time.perf_counter() - start)
        return CheckResult(spec.name, check.name, "failed", msg, time.perf_counter() - start)
    if reason is not None:
        return CheckResult(spec.name, check.name, "xpass", f"declared as an expected failure ({reason}) but "
                           "passes: remove it from expected_failures", time.perf_counter() - start)
    return CheckResult(spec.name, check.name, "passed", "", time.perf_counter() - start)


def check_experiment(spec: ExperimentSpec | str, *, quick: bool = True, data_dir: Path | None = None,
                     checks: Sequence[str] | None = None, raise_on_failure: bool = True) -> ConformanceReport:
    """Run the conformance suite on one experiment (a spec or a registered name).

    ``checks`` restricts the run to those check names.  With ``raise_on_failure`` (default) a
    failing check (or an expected failure that passes) raises :class:`ConformanceError` listing
    them all; otherwise inspect :attr:`ConformanceReport.failures`.
    """
    if isinstance(spec, str):
        from cogtestbed.registry import get_experiment

        spec = get_experiment(spec)
    unknown = sorted(set(checks or ()) - set(CHECKS))
    if unknown:
        raise InputError(f"unknown conformance check(s) {', '.join(unknown)}; choose from: {', '.join(CHECKS)}")
    results = [run_check(spec, c) for c in experiment_checks(spec, quick=quick, data_dir=data_dir)
               if checks is None or c.name in checks]
    report = ConformanceReport(spec.name, results)
    if raise_on_failure:
        report.raise_for_failures()
    return report

"""The conformance suite as pytest parameters, for an experiment's own test suite.

In the manner of scikit-learn's ``parametrize_with_checks``: a package that defines an experiment
runs every conformance check as one test of its own pytest run::

    from cogtestbed.extend import parametrize_with_checks

    from mypkg.spec import SPEC

    @parametrize_with_checks([SPEC])
    def test_conformance(spec, check):
        check(spec)

Each (experiment, check) pair is one test named ``EXPERIMENT-CHECK`` (``pytest -k prior_bounds``
selects one); a check the experiment declares in ``expected_failures`` is a strict ``xfail`` (it
fails the run once it passes, like :func:`~cogtestbed.conformance.suite.run_check`'s
``xpass``); a check with nothing to test (no importers, no PyMC model) is skipped with its reason.
A spec object is registered in the process when its check runs (as :func:`cogtestbed.check`
does), so the studies a check runs and their workers find it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cogtestbed.conformance.suite import Check
    from cogtestbed.experiments.spec import ExperimentSpec


@dataclass(frozen=True)
class PytestCheck:
    """One conformance check as a pytest parameter: ``check(spec)`` runs it, a check that has
    nothing to test skips the test with its reason."""

    check: Check

    @property
    def name(self) -> str:
        return self.check.name

    def __call__(self, spec: ExperimentSpec) -> None:
        import pytest

        from cogtestbed.registry import register
        from cogtestbed.study_errors import NotApplicable

        register(spec)
        try:
            self.check(spec)
        except NotApplicable as exc:
            pytest.skip(f"{spec.name}: {self.name}: {exc}")

    def __repr__(self) -> str:
        return f"{self.name}"


def parametrize_with_checks(specs: Iterable[ExperimentSpec | str], *, quick: bool = True,
                            data_dir: str | os.PathLike[str] | None = None,
                            checks: Sequence[str] | None = None) -> Callable[[Any], Any]:
    """A ``pytest.mark.parametrize`` over every (experiment, conformance check) of ``specs`` (spec
    objects or registered names), with arguments ``spec`` and ``check``; ``checks`` restricts it to
    those check names, ``quick`` and ``data_dir`` as :func:`cogtestbed.check` (``data_dir``
    default: ``$COGTESTBED_DATA_DIR``).  See the module docstring."""
    import pytest

    from cogtestbed.conformance.config import DATA_DIR_ENV
    from cogtestbed.conformance.suite import CHECKS, experiment_checks
    from cogtestbed.errors import InputError
    from cogtestbed.registry import get_experiment

    unknown = sorted(set(checks or ()) - set(CHECKS))
    if unknown:
        raise InputError(f"unknown conformance check(s) {', '.join(unknown)}; choose from: {', '.join(CHECKS)}")
    where = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV) or None
    params = []
    for given in specs:
        spec = get_experiment(given) if isinstance(given, str) else given
        found = experiment_checks(spec, quick=quick, data_dir=None if where is None else Path(where))
        params += _params(spec, found, checks)
    return pytest.mark.parametrize(("spec", "check"), params)


def _params(spec: ExperimentSpec, found: Iterable[Any], checks: Sequence[str] | None) -> list[Any]:
    """A ``pytest.param`` (spec, check) per check ``found`` that ``checks`` names (None: every one), a strict
    xfail where the spec expects the check to fail."""
    import pytest

    out = []
    for check in found:
        if checks is not None and check.name not in checks:
            continue
        reason = spec.expected_failures.get(check.name)
        marks = [pytest.mark.xfail(reason=f"expected: {reason}", strict=True)] if reason is not None else []
        out.append(pytest.param(spec, PytestCheck(check), id=f"{spec.name}-{check.name}", marks=marks))
    return out

"""The conformance suite over every registered experiment × check, and tests of the suite itself.

``pytest tests/test_conformance.py -k two-step`` runs one experiment's checks; a check an
experiment declares in ``expected_failures`` is a strict xfail (it must fail, with its reason).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.suite import (
    CHECKS,
    Check,
    ConformanceError,
    NotApplicable,
    check_batch_equals_step,
    check_experiment,
    check_garbage_answers,
    check_metrics_result,
    experiment_checks,
    prompt_form_problems,
    run_check,
)
from cogtestbed.environments.base import ParseResult
from cogtestbed.experiments.spec import MetricsSpec
from cogtestbed.metrics_result import metrics_result, metrics_result_problems
from cogtestbed.registry import experiment_names, get_experiment

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: Checks too long for the default suite (each declared study runs once: minutes per experiment);
#: they run with ``-m slow`` and in ``cogtestbed check``.
SLOW_CHECKS = frozenset({"declared_studies"})


def _cases() -> list[Any]:
    cases = []
    for name in experiment_names():
        spec = get_experiment(name)
        for check in experiment_checks(spec, quick=True, data_dir=DATA):
            reason = spec.expected_failures.get(check.name)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            if check.name in SLOW_CHECKS:
                marks.append(pytest.mark.slow)
            cases.append(pytest.param(name, check, id=f"{name}-{check.name}", marks=marks))
    return cases


@pytest.mark.parametrize(("experiment", "check"), _cases())
def test_conformance(experiment: str, check: Check) -> None:
    try:
        check(get_experiment(experiment))
    except NotApplicable as exc:
        pytest.skip(str(exc))


@pytest.mark.slow
@pytest.mark.parametrize("experiment", experiment_names())
def test_conformance_full_mode(experiment: str) -> None:
    check_experiment(experiment, quick=False, data_dir=DATA)


def test_every_experiment_is_checked_by_every_check() -> None:
    names = experiment_names()
    assert len(names) >= 8
    assert len(_cases()) == len(names) * len(CHECKS)
    for name in names:  # declared expected failures name real checks and carry a reason
        for check, reason in get_experiment(name).expected_failures.items():
            assert check in CHECKS and reason.strip()


# ----------------------------------------------------------------------------- the suite catches breakage
def _spec(name: str = "instrumental-learning", **changes: Any) -> Any:
    return dataclasses.replace(get_experiment(name), **changes)


def test_a_parser_that_falls_back_on_garbage_is_caught() -> None:
    base = get_experiment("instrumental-learning").env_cls

    class Lenient(base):  # type: ignore[misc, valid-type]
        def parse(self, text: str) -> ParseResult:
            result = super().parse(text)
            return result if result.ok else ParseResult.success(0)  # a silent fallback

    with pytest.raises(ConformanceError, match="garbage 'banana' parsed as action 0"):
        check_garbage_answers(_spec(env_cls=Lenient), CheckConfig())


def test_a_batch_kernel_that_differs_from_the_step_path_is_caught() -> None:
    spec = get_experiment("instrumental-learning")
    rw = spec.agents["rw"]

    class Drifting(rw):  # type: ignore[misc, valid-type]
        name: ClassVar[str] = "rw"

        @classmethod
        def simulate_batch(cls, design: Any, sessions: Any, params: Any, uniforms: np.ndarray) -> Any:
            out = rw.simulate_batch(design, sessions, params, uniforms)
            out.reward[0, -1] = -1.0
            return out

    broken = _spec(agents={**spec.agents, "rw": Drifting})
    with pytest.raises(ConformanceError, match=r"agent 'rw': column 'reward' differs"):
        check_batch_equals_step(broken, CheckConfig())


def test_a_metrics_function_with_the_wrong_shape_is_caught() -> None:
    from cogtestbed.simulation import simulate

    spec = get_experiment("bart")

    def untyped(trials: Any) -> dict[str, Any]:
        return {"metrics": spec.metrics.fn(trials)["metrics"], "per_subject": []}

    broken = _spec("bart", metrics=MetricsSpec(untyped, unit="per_run", headline=spec.metrics.headline))
    with pytest.raises(ConformanceError) as info:
        check_metrics_result(broken, CheckConfig())
    for expected in ("missing key 'n_invalid'", "missing key 'flags'", "missing key 'per_run'",
                     "has 'per_subject' but the experiment declares unit 'per_run'"):
        assert expected in str(info.value)
    with pytest.raises(TypeError, match="does not return a MetricsResult"):
        broken.metrics(simulate("bart", "target", 1, seed=0))


def test_expected_failures_are_xfail_and_a_passing_one_is_xpass() -> None:
    spec = _spec(expected_failures={"parameter_bounds": "pretend the bounds are not enforced"})
    check = next(c for c in experiment_checks(spec) if c.name == "parameter_bounds")
    result = run_check(spec, check)
    assert result.status == "xpass" and "remove it from expected_failures" in result.message
    report = check_experiment(spec, checks=["parameter_bounds"], raise_on_failure=False)
    assert not report.ok and [r.check for r in report.failures] == ["parameter_bounds"]
    with pytest.raises(ConformanceError, match="parameter_bounds"):
        report.raise_for_failures()


def test_a_failing_check_declared_as_expected_is_xfail() -> None:
    base = get_experiment("instrumental-learning").env_cls

    class Lenient(base):  # type: ignore[misc, valid-type]
        def parse(self, text: str) -> ParseResult:
            return ParseResult.success(0)

    spec = _spec(env_cls=Lenient, expected_failures={"garbage_answers": "parser under repair"})
    report = check_experiment(spec, checks=["garbage_answers"], raise_on_failure=False)
    (result,) = report.results
    assert result.status == "xfail" and result.message.startswith("expected: parser under repair")
    assert report.ok and "garbage_answers  xfail" in report.table()


def test_unknown_check_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown conformance check"):
        check_experiment("two-step", checks=["no_such_check"])
    bad = _spec(expected_failures={"no_such_check": "typo"})
    with pytest.raises(ConformanceError, match="expected_failures name unknown checks"):
        CHECKS["spec_declaration"](bad, CheckConfig())


def test_prompt_form_rules() -> None:
    assert prompt_form_problems("Q: Which machine?\n\nA: Machine", "Machine") == []
    # a served model reads a trailing space as a lone token: the answer begins with it instead (issue 39)
    assert "ends with whitespace" in prompt_form_problems("Q: Which machine?\n\nA: Machine ", "Machine ")[0]
    assert prompt_form_problems("Rate it from 0 to 100. Answer with one number.") == []
    assert prompt_form_problems([{"role": "user", "content": "hi"}]) == []
    assert "does not end with the answer prefix" in prompt_form_problems("Q: x?\n\nA: Planet", "Machine")[0]
    assert "ends with whitespace" in prompt_form_problems("Answer with one number.\n")[0]
    assert "mid-sentence" in prompt_form_problems("Answer with one number")[0]
    assert "user turn" in prompt_form_problems([{"role": "assistant", "content": "x"}])[0]
    assert prompt_form_problems("   ") == ["the prompt is empty"]
    # an instruction may close with an answer-format block introduced by a line ending with ":"
    assert prompt_form_problems("Give both.\nExample:\nNo: 0.50\nYes: 0.50") == []
    assert prompt_form_problems("Reply in the format:\nCan decide: <Yes or No>\nDecision: <Yes or No>") == []
    assert "mid-sentence" in prompt_form_problems("Give both.\nExample\nNo: 0.50")[0]  # no introducer
    assert "mid-sentence" in prompt_form_problems("Example:\nNo: 0.50\nand then the")[0]  # not a format line
    assert "ends with whitespace" in prompt_form_problems("Example:\nNo: 0.50\n")[0]


def test_headline_leaves_are_numbers_or_bools() -> None:
    from cogtestbed.metrics_result import headline_problems

    assert headline_problems("t", {"estimate": 0.1, "lo": 0.0, "hi": 0.2, "reject": False, "n": 3}) == []
    assert headline_problems("t", {"interval": [0.0, 0.2]}) == ["headline 't.interval' is not a number or bool: "
                                                               "[0.0, 0.2]"]
    assert headline_problems("t", {"ratio": float("inf")}) == ["headline 't.ratio' is inf"]
    assert headline_problems("t", {"backend": "sklearn"})[0].endswith("'sklearn'")
    assert headline_problems("t", {"p_value": None}) == ["headline 't.p_value' is not a number or bool: None"]
    assert headline_problems("t", {"p_value": None, "x": float("nan")}, require_finite=False) == []


def test_metrics_result_helpers() -> None:
    r = metrics_result({"score": 1.0}, "per_subject", [{"subject": 0}], 2, ["note"], fits={})
    assert metrics_result_problems(r, "per_subject") == []
    assert metrics_result_problems(r, "per_run") == ["missing key 'per_run'",
                                                    "has 'per_subject' but the experiment declares unit 'per_run'"]
    assert metrics_result_problems({**r, "n_invalid": -1}, "per_subject") == [
        "'n_invalid' must be a non-negative int, got -1"]
    with pytest.raises(ValueError, match="unit must be one of"):
        metrics_result({}, "per_trial", [], 0)  # type: ignore[arg-type]


def test_cli_check_prints_each_check() -> None:
    import json

    from typer.testing import CliRunner

    from cogtestbed.cli import app

    result = CliRunner().invoke(app, ["check", "restless-bandit", "--check", "spec_declaration",
                                      "--check", "parameter_bounds", "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["ok"] and [r["check"] for r in got["results"]] == ["spec_declaration", "parameter_bounds"]
    assert {r["status"] for r in got["results"]} == {"passed"}


def test_a_start_grid_that_differs_from_the_kernel_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = get_experiment("instrumental-learning")
    model = type(spec.model("rw"))
    monkeypatch.setattr(model, "nll_many", lambda self, thetas, data: np.zeros(len(thetas)))
    with pytest.raises(ConformanceError, match=r"model 'rw': the start-grid NLLs \(nll_many\)"):
        CHECKS["pointwise_likelihood"](spec, CheckConfig())


def test_a_schema_fast_path_that_passes_what_pandera_refuses_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = get_experiment("bart")
    monkeypatch.setattr(type(spec.schema), "conforms", lambda self, df, name: True)
    with pytest.raises(ConformanceError, match="no valid column: the fast check says passes, pandera fails"):
        CHECKS["schema_fast_path"](spec, CheckConfig())


def test_contributing_lists_every_check_in_order() -> None:
    import re

    text = (Path(__file__).resolve().parents[1] / "CONTRIBUTING.md").read_text()
    assert re.findall(r"^\| `(\w+)` \|", text, re.M) == list(CHECKS)

"""Every public function of ``ct.`` refuses bad arguments with a documented error class in one
line (issue 48, item 5): a wrong type, None, NaN, an empty table, a missing file, a number outside
its meaning.  The calls below are driven from the functions' own signatures, so a new public
function or argument is covered without a new line here."""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed.api import checks

#: Arguments a public function reads from disk (a missing one is a DataError) ...
INPUT_PATHS = {"table_or_path", "path", "paths", "pilot", "run_dir", "data_dir", "plan", "prices", "transcripts"}
#: ... and those it writes to (need not exist).
OUTPUT_PATHS = {"output", "directory", "cache", "checkpoint"}
#: Valid values of the required arguments (so that only the argument under test is bad).
REQUIRED: dict[str, Any] = {
    "experiment": "instrumental-learning", "agent": "rw-pm", "model": "rw-pm", "spec_or_name": "instrumental-learning",
    "target": "rw-pm", "models": ["rw-pm", "rw"], "metric": "optimism", "parameter": "alpha_pos",
    "values": [0.1, 0.2], "forms": "2", "effect": {"optimism_bias": 0.2}, "fit": object(),
    "trials": pd.DataFrame({"a": [1]}), "llm": "hf:tiny-random", "choices": pd.DataFrame({"a": [1]}), "test": 1,
    "name": "human:cogbench-instrumental",
}

FUNCTIONS = sorted(name for name, load in ct._PUBLIC.items()
                   if load().__name__.startswith("cogtestbed.api") and not inspect.isclass(getattr(ct, name)))


def _good(name: str, param: str, tmp: Path) -> Any:
    if param in INPUT_PATHS:
        return [str(tmp / "exists")] if param == "paths" else str(tmp / "exists")
    if param in OUTPUT_PATHS:
        return str(tmp / "out")
    return REQUIRED[param]


def _bad_values(hint: Any, param: str, tmp: Path) -> list[tuple[str, Any]]:
    """(what, value) pairs the annotation ``hint`` of ``param`` does not allow."""
    bad: list[tuple[str, Any]] = []
    if not checks.matches(object(), hint):  # not annotated Any
        bad.append(("wrong type", object()))
        if not checks.matches(None, hint):
            bad.append(("None", None))
    if checks.matches(1.5, hint):
        bad.append(("NaN", float("nan")))
    if checks.matches(pd.DataFrame({"a": [1]}), hint):
        bad.append(("empty table", pd.DataFrame()))
    if param in INPUT_PATHS:
        missing = str(tmp / "missing.parquet")
        bad.append(("missing path", [missing] if param == "paths" else missing))
    if param in checks.RANGES:
        allowed = checks.RANGES[param]
        outside = (allowed.low - 1 if allowed.low is not None else allowed.high + 1)  # type: ignore[operator]
        value: Any = {"x": outside} if checks.matches({"x": 1.0}, hint) and not checks.matches(1.0, hint) else outside
        if checks.matches(value, hint) or checks.matches(int(outside), hint):
            bad.append(("out of range", value if checks.matches(value, hint) else int(outside)))
    return bad


def _cases() -> list[tuple[str, str, str, Any]]:
    tmp = Path("/nonexistent-cogtestbed-door")
    out = []
    for name in FUNCTIONS:
        func = getattr(ct, name)
        hints = checks._hints(inspect.unwrap(func))
        for param in inspect.signature(func).parameters.values():
            if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
                continue
            for what, value in _bad_values(hints.get(param.name, Any), param.name, tmp):
                out.append((name, param.name, what, value))
    return out


CASES = _cases()


def test_every_public_function_is_behind_the_door() -> None:
    assert len(FUNCTIONS) >= 20
    for name in FUNCTIONS:
        func = getattr(ct, name)
        assert hasattr(func, "__wrapped__"), f"ct.{name} is not decorated with cogtestbed.api.checks.public"
        unwrapped = inspect.unwrap(func)
        assert set(checks._hints(unwrapped)) == set(unwrapped.__annotations__), name
        for param, hint in checks._hints(unwrapped).items():
            if checks.matches(Path("x"), hint) and not checks.matches(object(), hint) and param != "return":
                assert param in INPUT_PATHS | OUTPUT_PATHS, f"ct.{name}({param}=...): add it to INPUT_/OUTPUT_PATHS"


@pytest.mark.parametrize(("name", "param", "what", "value"), CASES,
                         ids=[f"{n}-{p}-{w}" for n, p, w, _ in CASES])
def test_a_bad_argument_is_a_documented_error_in_one_line(tmp_path: Path, name: str, param: str, what: str,
                                                          value: Any) -> None:
    func = getattr(ct, name)
    (tmp_path / "exists").write_text("x")
    if isinstance(value, str) and value.startswith("/nonexistent-cogtestbed-door"):
        value = str(tmp_path / "missing.parquet")
    elif isinstance(value, list) and value and str(value[0]).startswith("/nonexistent-cogtestbed-door"):
        value = [str(tmp_path / "missing.parquet")]
    signature = inspect.signature(func)
    kwargs = {p.name: _good(name, p.name, tmp_path) for p in signature.parameters.values()
              if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    kwargs[param] = value
    with pytest.raises(ct.CogtestbedError) as info:
        func(**kwargs)
    message = str(info.value)
    assert "\n" not in message and message.startswith((f"{name}(): {param}", f"{name}(): `{param}`")), message
    expected = {"missing path": ct.DataError, "empty table": ct.DataError}.get(what, ct.InputError)
    assert isinstance(info.value, expected)


@pytest.mark.parametrize(("call", "kind", "named"), [
    (lambda: ct.simulate("instrumental-learning", "rw-pm", subjects="abc"), ct.InputError,
     "simulate(): subjects must be int, got str 'abc'"),
    (lambda: ct.check(None), ct.InputError, "check(): spec_or_name must be str or ExperimentSpec, got NoneType"),
    (lambda: ct.fit("instrumental-learning", pd.DataFrame(columns=["subject", "action"]), model="rw-pm"),
     ct.DataError, "fit(): table_or_path is an empty table"),
    (lambda: ct.fit("instrumental-learning", "no/such/file.parquet", model="rw-pm"), ct.DataError,
     "no such file or folder: no/such/file.parquet"),
    (lambda: ct.power("rw-pm", effect="optimism_bias=nan"), ct.InputError,
     "value of 'optimism_bias' must be a finite number, got 'nan'"),
    (lambda: ct.power("rw-pm", effect={"optimism_bias": float("nan")}), ct.InputError, "must be a finite number"),
    (lambda: ct.power("rw-pm", effect="optimism_bias=0.2", sd_between=-1), ct.InputError,
     "`sd_between` must be in [0, 20], got -1"),
    (lambda: ct.plan("instrumental-learning", model="rw-pm", precision="optimism_bias=0.1", assurance=2),
     ct.InputError, "`assurance` must be in (0, 1), got 2"),
    (lambda: ct.recover("rw-pm", workers=-1), ct.InputError, "`workers` must be in [1, inf), got -1"),
    (lambda: ct.run("instrumental-learning", llm="openai:x", output="o", max_tokens=10**8), ct.InputError,
     "run(): `max_tokens` must be in [1, 1e+06], got 1e+08"),
    (lambda: ct.run("instrumental-learning", llm="openai:x", output="o", max_cost=-1), ct.InputError,
     "run(): `max_cost` must be in [0, inf), got -1"),
    (lambda: ct.simulate("instrumental-learning", "rw-pm", forms="2", form_sd={"alpha_pos": 1e308}),
     ct.InputError, "`form_sd` must be in [0, 20], got 1e+308"),
    (lambda: ct.simulate("instrumental-learning", "rw-pm", subjects=2, unknown=1), ct.InputError,
     "simulate(): got an unexpected keyword argument 'unknown'"),
])
def test_the_cases_issue_48_names(call: Any, kind: type[Exception], named: str) -> None:
    with pytest.raises(kind) as info:
        call()
    assert named in str(info.value) and "\n" not in str(info.value)


def test_add_budget_and_form_sd_text_refuse_numbers_outside_their_meaning() -> None:
    from cogtestbed.api.run import parse_add_budget
    from cogtestbed.environments.forms import parse_form_sd

    with pytest.raises(ct.InputError, match="a finite number"):
        parse_add_budget(["usd=1e400"])
    with pytest.raises(ct.FormError, match="0 <= SD <= 20"):
        parse_form_sd(["alpha_pos=1e308"])
    assert parse_form_sd(["alpha_pos=0.5"]) == {"alpha_pos": 0.5}


def test_nan_in_a_study_spec_is_refused_not_written_as_null() -> None:
    from cogtestbed.studies.options import study_spec_of

    with pytest.raises(ct.InputError, match="effect"):
        study_spec_of(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=float("nan"))


def test_valid_calls_pass_the_door_unchanged(tmp_path: Path) -> None:
    trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=3, design={"visits_per_casino": 2})
    assert len(trials) > 0 and trials.equals(ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=3,
                                                         design={"visits_per_casino": 2}))
    assert "instrumental-learning" in ct.experiments()
    assert os.fspath(tmp_path)  # the door leaves paths as given


@pytest.mark.parametrize("experiment", ct.experiments())
def test_a_bad_design_field_is_an_input_error_in_one_line_on_every_experiment(experiment: str) -> None:
    """``design=`` is validated by the experiment's pydantic design class; what reaches the caller
    is the library's InputError naming the field in one line, never pydantic's own error."""
    agent = sorted(ct.get_experiment(experiment).agents)[0]
    with pytest.raises(ct.InputError) as caught:
        ct.simulate(experiment, agent, design={"no_such_field": 3}, subjects=1)
    message = str(caught.value)
    assert "\n" not in message and "no_such_field" in message and message.startswith("simulate(): ")
    assert type(caught.value).__module__.startswith("cogtestbed")

"""The typed errors: every kind is a :class:`cogtestbed.CogtestbedError` exported from
:mod:`cogtestbed`, keeps the built-in base its callers catch, and reaches the command line as one
line (``error: MESSAGE``) with exit status 2, never a traceback."""

from __future__ import annotations

from typing import Any

import pytest

import cogtestbed as ct
from cogtestbed.cli import run_cli

#: Each kind (or a class of it) the library raises, with a message and the built-in base it keeps.
KINDS: list[tuple[Any, Any]] = [
    (lambda: ct.InputError("--subjects must be at least 1, got 0"), ValueError),
    (lambda: ct.ParameterError("alpha: 2 lies above its upper bound 1"), ValueError),
    (lambda: ct.FormError("--form-sd needs --forms"), ValueError),
    (lambda: ct.UnknownNameError("experiment", "nope", ["a", "b"]), KeyError),
    (lambda: ct.DataError("table.parquet: no column 'action'"), ValueError),
    (lambda: ct.TrialTableError("missing column reward"), ValueError),
    (lambda: ct.DataFormatError("row 3: not a number"), ValueError),
    (lambda: ct.BudgetError("the run's budget of $1 is spent"), Exception),
    (lambda: ct.PriceError("prices.toml: negative price"), ValueError),
    (lambda: ct.UnpricedModel("no price for openai:x; pass --prices"), ValueError),
    (lambda: ct.RunDirError("runs/a already holds a run; pass --resume"), ValueError),
    (lambda: ct.ResumeMismatch("--resume: runs/a was run with different settings (seed)"), ValueError),
    (lambda: ct.OutputError("out exists; pass --force"), ValueError),
    (lambda: ct.WriteFailed("out/x.csv: no space left on device"), ValueError),
    (lambda: ct.LLMError("the server answered 500 three times"), RuntimeError),
    (lambda: ct.BackendUnavailable("pip install 'cogtestbed[hf]'"), RuntimeError),
    (lambda: ct.BackendError("HTTP 401: bad key", status=401), RuntimeError),
    (lambda: ct.MemoryLimitError("needs 90 GB, 8 GB available"), ValueError),
    (lambda: ct.PlanInfeasible("no design reaches power 0.8 within $5"), ValueError),
    (lambda: ct.WorkerDied("a worker died (killed)"), RuntimeError),
    (lambda: ct.ConformanceError("schema: column x missing"), AssertionError),
]


@pytest.mark.parametrize(("make", "builtin"), KINDS)
def test_each_kind_is_a_cogtestbed_error_and_one_line_with_exit_2(
        make: Any, builtin: type[BaseException], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    exc = make()
    assert isinstance(exc, ct.CogtestbedError) and isinstance(exc, builtin)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise exc

    monkeypatch.setattr("cogtestbed.registry.experiment_names", refuse)
    assert run_cli(["list"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    assert " ".join(str(exc).split()) in err.replace("\n", " ")


def test_the_error_kinds_are_documented_on_the_api_page() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
    for name in ("CogtestbedError", "InputError", "UnknownNameError", "DataError", "BudgetError", "RunDirError",
                 "ResumeMismatch", "OutputError", "LLMError", "MemoryLimitError"):
        assert name in page, name


def test_a_bad_option_of_the_api_is_an_input_error() -> None:
    with pytest.raises(ct.InputError, match="`method` must be mle or hierarchical"):  # before the file is read
        ct.fit("instrumental-learning", __file__, model="rw-pm", method="bayes")  # type: ignore[arg-type]
    with pytest.raises(ct.DataError, match="fit\\(\\): table_or_path: no such file or folder: nothing.parquet"):
        ct.fit("instrumental-learning", "nothing.parquet", model="rw-pm")


def test_the_api_raises_its_typed_input_error_for_a_bad_plan_or_fit_option() -> None:
    """The API's own option checks raise :class:`ct.InputError` (a ValueError), not a bare ValueError."""
    with pytest.raises(ct.InputError, match="`model` goes with `effect`"):
        ct.plan("instrumental-learning", model="rw-pm", llm=["openai:gpt-4o-mini"])
    table = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    with pytest.raises(ct.InputError, match="`form_effects` needs a table run across two or more prompt forms"):
        ct.fit("instrumental-learning", table, model="rw-pm", method="hierarchical", form_effects=["alpha_pos"])


def test_the_library_raises_no_bare_value_error() -> None:
    """Every refusal of the library is typed (issue 38 item 1): no module raises a bare ``ValueError``;
    an :class:`~cogtestbed.errors.InputError` (itself a ValueError) or a narrower kind instead.  A bare
    ``raise ValueError`` without a message is a parser's control flow, caught on its next lines."""
    import ast
    from pathlib import Path

    package = Path(ct.__file__).resolve().parent
    bare = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            raised = node.exc if isinstance(node, ast.Raise) else None
            if isinstance(raised, ast.Call) and isinstance(raised.func, ast.Name) and raised.func.id == "ValueError":
                bare.append(f"{path.relative_to(package)}:{node.lineno}")
    assert bare == []


def test_a_deep_refusal_reaches_the_caller_as_an_input_error() -> None:
    """A check deep in the layers (the parameter bounds of an agent) raises the typed kind."""
    with pytest.raises(ct.CogtestbedError):
        ct.simulate("magnitude", "observer", subjects=1, seed=1, params={"prior_sd": -1.0})


def test_a_warning_names_the_first_caller_outside_the_package() -> None:
    """``outside_stacklevel`` skips the library's own frames: from here (outside) it is 1, and a
    hierarchical fit reached through ``ct.fit`` warns at this file's line, not inside ``api/core.py``."""
    import warnings

    from cogtestbed.errors import outside_stacklevel
    from cogtestbed.inference.hierarchical import ConvergenceWarning

    assert outside_stacklevel() == 1
    table = ct.simulate("instrumental-learning", "rw-pm", subjects=8, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ct.fit("instrumental-learning", table, model="rw-pm", method="hierarchical", draws=10, chains=2, seed=0)
    convergence = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert convergence and all(w.filename == __file__ for w in convergence)

"""Domain errors name fields, not command-line flags (issue 67, item 2): a Python caller reads `` `form_sd` ``,
the command line ``--form-sd`` (only :func:`cogtestbed.cli.options.as_flags` translates); the declared
comparability reasons (``MetricsSpec.comparisons``, the shipped ``metric_tests.json``) name fields too."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import cogtestbed as ct
from cogtestbed.cli import run_cli

FLAG = re.compile(r"(?<![\w-])--[a-z]")
LLMS = ["openai:gpt-4o", "openai:gpt-4o-mini"]


@pytest.mark.parametrize(("call", "field"), [
    (lambda: ct.plan("risky-choice", metric="loss_aversion", compare=("a", "b"), llm=LLMS), "`model`"),
    (lambda: ct.simulate("instrumental-learning", "rw-pm", subjects=2, form_sd=["alpha_pos=0.1"]), "`form_sd`"),
    (lambda: ct.simulate("instrumental-learning", "rw-pm", subjects=2, forms="x"), "`forms`"),
    (lambda: ct.power("rw-pm", effect={"optimism_bias": 0.2}, sd_between=-1), "`sd_between`"),
    (lambda: ct.plan("instrumental-learning", model="rw-pm", effect={"optimism_bias": 0.2}, forms="1,2"), "`form_sd`"),
    (lambda: ct.fit("instrumental-learning", __file__, model="rw-pm", method="bayes"), "`method`"),
    (lambda: ct.recover("instrumental-learning", "rw-pm", subjects="4,,8"), "`subjects` expects"),
    (lambda: ct.recover("instrumental-learning", "rw-pm", subjects=4, params=["alpha_pos"]), "`params` expected"),
    (lambda: ct.simulate("instrumental-learning", "rw-pm", subjects=2, adaptive=["alpha_pos"], trials=10),
     "`adaptive` refused"),
], ids=["comparison", "form_sd", "forms", "door", "forms-plan", "fit", "sizes", "assignments", "adaptive"])
def test_a_python_caller_reads_fields(call, field: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ct.InputError) as refused:
        call()
    assert field in str(refused.value) and not FLAG.search(str(refused.value)), str(refused.value)


def test_the_command_line_reads_its_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["simulate", "instrumental-learning", "-a", "rw-pm", "--subjects", "2", "--form-sd",
                    "alpha_pos=0.1", "-o", str(tmp_path / "t.parquet")]) == 2
    assert capsys.readouterr().err.strip() == "error: --form-sd needs --forms (the forms whose offsets it draws)"
    assert run_cli(["plan", "risky-choice", "--metric", "loss_aversion", "--compare", "a", "b", "--llm", LLMS[0],
                    "--llm", LLMS[1]]) == 2
    err = capsys.readouterr().err
    assert "--metric 'loss_aversion'" in err and "--model prospect-theory --effect lambda=D" in err and "`" not in err
    assert run_cli(["recover", "--model", "rw-pm", "--subjects", "4,,8", "-o", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == ("error: --subjects expects comma-separated integers, got '4,,8' "
                                               "(an empty item)")


def test_no_declared_or_shipped_comparison_names_a_flag() -> None:
    from cogtestbed.planning.capabilities import SHIPPED

    for name in ct.experiments():
        for metric, how in ct.get_experiment(name).metrics.comparisons.items():
            assert not FLAG.search(how.reason), (name, metric, how.reason)
    assert not FLAG.search(json.dumps(json.loads(SHIPPED.read_text(encoding="utf-8")))), "metric_tests.json"


#: Raised messages outside ``cogtestbed/cli/`` that may name a ``--flag``: the command line of another program,
#: ``(module, flag): reason``.
OTHER_PROGRAMS = {
    ("cogtestbed/llm_adapters/clients/smollm2.py", "--no-deps"): "pip's own flags in the install command it prints",
    ("cogtestbed/llm_adapters/clients/smollm2.py", "--force-reinstall"): "pip's own flags in the install command",
}
BUILTIN_ERRORS = {"ValueError", "TypeError", "KeyError", "RuntimeError", "OSError", "Exception", "LookupError",
                  "FileNotFoundError", "ImportError", "NotImplementedError"}


def _error_classes(trees: dict[Path, ast.Module]) -> set[str]:
    """The exception classes of the package (by name): subclasses of a built-in error, transitively."""
    names, grown = set(BUILTIN_ERRORS), True
    while grown:
        found = {node.name for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                 and any((getattr(b, "id", None) or getattr(b, "attr", None)) in names for b in node.bases)}
        grown, names = not found <= names, names | found
    return names


def _messages(tree: ast.Module, errors: set[str]) -> list[ast.Constant]:
    """The string pieces of every raised message: inside a ``raise`` or an error's construction (an error
    built to be raised later, a ``super().__init__`` of an error class)."""
    def callee(node: ast.Call) -> str:
        return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")

    roots: list[ast.AST] = [n.exc for n in ast.walk(tree) if isinstance(n, ast.Raise) and n.exc is not None]
    roots += [n for n in ast.walk(tree) if isinstance(n, ast.Call) and callee(n) in errors]
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name in errors):
        roots += [n for n in ast.walk(cls) if isinstance(n, ast.Call) and callee(n) == "__init__"]
    return [n for root in roots for n in ast.walk(root) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_no_raised_message_outside_the_cli_names_a_flag() -> None:
    root = Path(ct.__file__).parent
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(root.rglob("*.py"))
             if "cli" not in path.relative_to(root).parts[:1]}
    errors = _error_classes(trees)
    assert {"InputError", "ResumeMismatch", "DesignSweep"} <= errors
    found = {(f"cogtestbed/{path.relative_to(root).as_posix()}", flag, node.lineno)
             for path, tree in trees.items() for node in _messages(tree, errors)
             for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", node.value)}
    named = {(module, flag) for module, flag, _ in found}
    assert named >= set(OTHER_PROGRAMS), sorted(set(OTHER_PROGRAMS) - named)  # the allowlist holds no stale entry
    assert sorted(hit for hit in found if hit[:2] not in OTHER_PROGRAMS) == []

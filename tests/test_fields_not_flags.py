"""Domain errors name fields, not command-line flags (issue 67, item 2): a Python caller reads `` `form_sd` ``,
the command line ``--form-sd`` (only :func:`cogtestbed.cli.options.as_flags` translates); the declared
comparability reasons (``MetricsSpec.comparisons``, the shipped ``metric_tests.json``) name fields too."""

from __future__ import annotations

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
], ids=["comparison", "form_sd", "forms", "door", "forms-plan", "fit"])
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


def test_no_declared_or_shipped_comparison_names_a_flag() -> None:
    from cogtestbed.validation.design.capabilities import SHIPPED

    for name in ct.experiments():
        for metric, how in ct.get_experiment(name).metrics.comparisons.items():
            assert not FLAG.search(how.reason), (name, metric, how.reason)
    assert not FLAG.search(json.dumps(json.loads(SHIPPED.read_text(encoding="utf-8")))), "metric_tests.json"

"""The layout tools of ``tools/``: where ``dissolve_validation.py`` puts a module and how it rewrites a reference,
and what ``strip_issue_citations.py`` makes of a cited sentence."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import dissolve_validation as dv  # noqa: E402
import strip_issue_citations as sic  # noqa: E402


def test_each_validation_module_has_one_place() -> None:
    assert dv.target_of("cogtestbed/validation/design/seqauto.py") == "cogtestbed/planning/kinds/sequential/seqauto.py"
    assert dv.target_of("cogtestbed/validation/design/eprocess.py") == "cogtestbed/planning/kinds/monitor/eprocess.py"
    assert dv.target_of("cogtestbed/validation/design/kinds.py") == "cogtestbed/planning/kinds/__init__.py"
    assert dv.target_of("cogtestbed/validation/design/pricing.py") == "cogtestbed/planning/pricing.py"
    assert dv.target_of("cogtestbed/validation/runs/looks.py") == "cogtestbed/runs/looks.py"
    assert dv.target_of("cogtestbed/validation/errors.py") == "cogtestbed/study_errors.py"
    assert dv.target_of("cogtestbed/validation/odd/thing.py") is None  # reported, not guessed


def test_references_are_rewritten_through_the_table() -> None:
    moves = {"cogtestbed/validation/design/plan.py": "cogtestbed/planning/plan.py",
             "cogtestbed/validation/design/seqplan.py": "cogtestbed/planning/kinds/sequential/seqplan.py",
             "cogtestbed/validation/errors.py": "cogtestbed/study_errors.py"}
    table = dv.module_table(moves)
    text = ("    from cogtestbed.validation.design import plan, seqplan as sp\n"
            '_run("cogtestbed.validation.design.seqplan", "x")  # see validation/design/plan.py\n'
            "from cogtestbed.validation.errors import StudyFailure\n")
    assert dv.rewrite(text, table) == (
        "    from cogtestbed.planning import plan\n"
        "    from cogtestbed.planning.kinds.sequential import seqplan as sp\n"
        '_run("cogtestbed.planning.kinds.sequential.seqplan", "x")  # see planning/plan.py\n'
        "from cogtestbed.study_errors import StudyFailure\n")
    assert dv.rewrite(dv.rewrite(text, table), table) == dv.rewrite(text, table)


def test_citations_go_and_the_sentence_stays() -> None:
    assert sic.strip_citations("Plans (issue 53) are priced.") == "Plans are priced."
    assert sic.strip_citations("(one price, issue 67)") == "(one price)"
    assert sic.strip_citations("(issue 71: the rule search)") == "(the rule search)"
    assert sic.strip_citations("declared once (issue 51, item 2): the suite") == "declared once: the suite"
    assert sic.strip_citations("# issue 47: the model") == "# the model"
    assert sic.strip_citations("numba issue 10486") == "numba issue 10486"  # another project's tracker stays
    assert sic.LEFT.search(sic.strip_citations("Before issue 47 the point estimate"))  # no rule: left for a human

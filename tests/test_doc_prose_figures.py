"""Figures the docs print in prose beside a command, checked against what the command prints now (issue 72:
``python benchmarks/docs_figures.py`` lists a paragraph with an inline command and decimal numbers unless a
marker names what holds it; these are the tests its ``checked`` markers name)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cogtestbed.cli import app

ROOT = Path(__file__).resolve().parents[1]
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+")

#: (page, population, what the page says of it: every decimal number in it must be one `population show` prints,
#: at the page's precision).
POPULATION_FIGURES = [
    ("docs/human-data.md", "human:spektor2024",
     "λ 1.118 [0.879, 1.412], α 0.837 [0.738, 0.944], θ 0.835 [0.575, 1.180]"),
    ("docs/human-data.md", "human:spektor2024-all",
     "λ 0.971 [0.870, 1.082], α 0.758 [0.712, 0.809], θ 0.701 [0.588, 0.818] (between-subject SDs on the log scale "
     "0.896, 0.486, 1.24); max R-hat 1.0057"),
    ("docs/human-data.md", "human:shahar2019",
     "w 0.317 [0.163, 0.510], α 0.255 [0.169, 0.368], β 4.22 [3.20, 5.61], λ 0.637 [0.475, 0.807], perseveration "
     "1.18 [0.885, 1.52]"),
    ("docs/human-data.md", "human:cogbench-instrumental",
     "α⁺ 0.216 [0.165, 0.266], α⁻ 0.025 [0.011, 0.050], β 6.80 [5.52, 8.59] (95 % posterior intervals), "
     "between-subject SDs on the logit/log scale 0.27 [0.01, 0.68], 1.84 [1.31, 2.52], 0.66 [0.50, 0.85]"),
    ("docs/risky-choice.md", "human:spektor2024-all",
     "| λ | 0.971 [0.870, 1.082] | 0.896 [0.809, 1.01] | | α | 0.758 [0.712, 0.809] | 0.486 [0.423, 0.557] | "
     "| θ | 0.701 [0.588, 0.818] | 1.24 [1.11, 1.38] |"),
]


def _same_at_precision(shown: str, printed: list[str]) -> bool:
    """Whether the page's ``shown`` is one of ``printed`` rounded to ``shown``'s decimals."""
    half = 0.5 * 10 ** -len(shown.split(".")[1]) + 1e-12
    return any(abs(float(shown) - float(p)) <= half for p in printed)


@pytest.mark.parametrize(("page", "population", "excerpt"), POPULATION_FIGURES,
                         ids=[f"{p}:{n}" for p, n, _ in POPULATION_FIGURES])
def test_population_figures_are_what_population_show_prints(page: str, population: str, excerpt: str) -> None:
    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    assert excerpt in text, f"{page} no longer says {excerpt!r}: update POPULATION_FIGURES with the page"
    result = CliRunner().invoke(app, ["population", "show", population])
    assert result.exit_code == 0, result.output
    printed = DECIMAL.findall(result.output)
    shown = DECIMAL.findall(excerpt)
    assert len(shown) >= 9
    assert [n for n in shown if not _same_at_precision(n, printed)] == []


def test_a_figure_the_command_does_not_print_fails() -> None:
    assert _same_at_precision("0.870", ["0.8695", "1.2"]) and _same_at_precision("0.27", ["0.265"])
    assert not _same_at_precision("0.872", ["0.8695"]) and not _same_at_precision("1.3", ["1.2", "0.8695"])


def test_settings_the_docs_state_in_prose_are_the_codes() -> None:
    """Values docs/risky-choice.md and docs/benchmarks.md give beside a command are the code's settings: the
    hierarchical prospect-theory fit's NUTS target acceptance, the effect the plan benchmarks size."""
    from cogtestbed.inference.risky import ProspectTheoryModel

    risky = " ".join((ROOT / "docs/risky-choice.md").read_text(encoding="utf-8").split())
    assert "PyMC model at NUTS target acceptance 0.98" in risky and ProspectTheoryModel.target_accept == 0.98
    index = (ROOT / "docs/benchmarks.md").read_text(encoding="utf-8")
    assert index.count("for RW± optimism bias 0.2") == 2
    for script in ("bench_seqplan.py", "bench_plan.py"):
        source = (ROOT / "benchmarks" / script).read_text(encoding="utf-8")
        assert re.search(r'effect="optimism_bias",\s*effect_size=0\.2,', source), script


def _page(name: str) -> str:
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def test_the_sequential_designs_arithmetic_and_settings_are_the_codes() -> None:
    """docs/plan.md's sequential-design list: the p-value a bound needs and the permutations that reach it
    (normal tail arithmetic), and the range of maximum sizes searched (``seqplan``'s settings)."""
    import math

    from scipy.stats import norm

    from cogtestbed.validation.design import seqplan

    text = _page("docs/plan.md")
    assert "a Pocock bound of 2.4 needs p ≤ 0.016, i.e. B ≥ 60;" in text
    assert "an O'Brien–Fleming first-look bound of 4.3 needs p ≤ 2·10⁻⁵, unreachable with B = 1,000" in text
    assert "maximum sizes from 0.8× to 1.25× the fixed size" in text
    pocock = 2 * norm.sf(2.4)
    assert round(pocock, 3) == 0.016 and math.ceil(1 / pocock - 1) == 60  # p-value floor 1/(B+1) <= p
    obf = 2 * norm.sf(4.3)
    assert round(obf, 5) == 2e-5 and obf < 1 / 1001
    assert (seqplan.MIN_FACTOR, seqplan.MAX_FACTOR) == (0.8, 1.25)


def test_the_declared_temporal_discounting_pair_is_the_codes() -> None:
    """docs/plan.md's power-curve paragraph: the pair declared before (k 0.05 vs 0.3, deterministic scores 10 and
    9) and the pair declared now (k 0.005 vs 0.8) are the experiment's."""
    import cogtestbed as ct
    from cogtestbed.inference.discounting import expected_score

    text = _page("docs/plan.md")
    assert "was k 0.05 vs 0.3, whose CogBench scores nearly coincide (10 and 9 without choice noise" in text
    assert "It now compares k 0.005 vs 0.8:" in text
    assert (expected_score(0.05)["score"], expected_score(0.3)["score"]) == (10.0, 9.0)
    declared = [s for s in ct.get_experiment("temporal-discounting").studies if s.kind == "metric-power"]
    assert [tuple(c["k"] for c in s.compare) for s in declared] == [(0.005, 0.8)]


def test_every_recorded_result_says_where_it_came_from_and_a_page_prints_it(tmp_path: Path) -> None:
    """``benchmarks/studies/results/*.json`` (issue 72): each names its command, date and code, a page prints it
    through ``recorded.py`` under a ``generated`` marker, and an unknown name is refused in one line (exit 2)."""
    import json
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks" / "studies"))
    import recorded

    pages = "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
    files = sorted(recorded.RESULTS.glob("*.json"))
    assert files
    for path in files:
        record = json.loads(path.read_text(encoding="utf-8"))
        assert all(record.get(k) for k in ("command", "date", "commit")), path.name
        text = recorded.render(record)
        assert text.startswith("command: ") and "\nrun: " in text
        command = f"python benchmarks/studies/recorded.py {re.escape(path.stem)}"
        shown = re.findall(command + r"\n```\n<!-- doc: generated -->\n```\n(.*?)\n```", pages, flags=re.S)
        assert shown == [text] * len(shown) and shown, f"{path.name}: `make docs-figures` the page that prints it"
    wide = recorded.render({"command": "c", "date": "d", "commit": "x",
                            "tables": [{"columns": ["what", "result"], "rows": [["a", "0.5 " * 40]]}]})
    assert "\n- a\n    result: 0.5" in wide  # a table wider than the page is printed a row a paragraph
    assert recorded.main(["no-such-result"]) == 2

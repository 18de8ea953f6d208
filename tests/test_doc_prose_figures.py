"""Figures the docs print in prose beside a command, checked against what the command prints now (issue 72:
``python benchmarks/docs_figures.py`` lists a paragraph with an inline command and decimal numbers unless a
marker names what holds it; these are the tests its ``checked`` markers name)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cogtestbed.cli import app

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
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


# ------------------------------------------------- recorded results (benchmarks/studies/results, recorded.py)
RECORD_TEST = "tests/test_doc_prose_figures.py::test_prose_figures_are_in_their_study_record"
RECORD_MARKER = re.compile(r"<!--\s*doc:\s*checked\s+" + re.escape(RECORD_TEST) + r"\s+(\S+)\s*-->")


def _record_quotes() -> list[tuple[str, int, str]]:
    """(page, line of the marker, 1-based; the records' names, ``NAME[,NAME...]``) of every paragraph that quotes
    study records."""
    from doc_blocks import BLOCK_PAGES

    return [(page.relative_to(ROOT).as_posix(), i + 1, found[1])
            for page in BLOCK_PAGES
            for i, line in enumerate(page.read_text(encoding="utf-8").splitlines())
            if (found := RECORD_MARKER.search(line))]


def _quoted_paragraph(lines: list[str], marker: int) -> str:
    """The paragraph right below the marker at ``marker`` (1-based) and, when it ends with a colon and holds no
    figure itself, the list or table after it (as ``docs_figures.py`` reads prose)."""
    from docs_figures import paragraphs

    found = paragraphs(lines)
    k = next(k for k, (start, _) in enumerate(found) if start >= marker)
    text = "\n".join(found[k][1])
    if text.rstrip().endswith(":") and k + 1 < len(found) and not DECIMAL.findall(text):
        text += "\n" + "\n".join(found[k + 1][1])
    return text


def _not_recorded(paragraph: str, printed: str) -> list[str]:
    """The decimal figures of ``paragraph`` (as the figure list reads prose) that ``printed`` does not print."""
    from docs_figures import _prose_numbers

    return [n for n in _prose_numbers(paragraph) if not _same_at_precision(n, DECIMAL.findall(printed))]


def _recorded() -> Any:
    """``benchmarks/studies/recorded.py``, the printer of the results files."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "studies"))
    import recorded

    return recorded


@pytest.mark.parametrize(("page", "line", "name"), _record_quotes(),
                         ids=[f"{p}:{n}" for p, _, n in _record_quotes()])
def test_prose_figures_are_in_their_study_record(page: str, line: int, name: str) -> None:
    """A paragraph quoting a study too long to rerun for the docs quotes only figures its results file holds, and
    the page shows what ``python benchmarks/studies/recorded.py NAME`` prints (``make docs-figures`` writes it)."""
    recorded = _recorded()
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    names = name.split(",")
    printed = [recorded.render(recorded.load(n)) for n in names]
    paragraph = _quoted_paragraph(lines, line)
    assert DECIMAL.findall(paragraph), f"{page}:{line}: the paragraph under the marker quotes no figure"
    assert _not_recorded(paragraph, "\n".join(printed)) == []
    for n, text in zip(names, printed, strict=True):
        shown = f"```bash\npython benchmarks/studies/recorded.py {n}\n```\n<!-- doc: generated -->\n```\n{text}\n```"
        assert shown in "\n".join(lines), f"{page} does not show `recorded.py {n}`'s output: run " \
                                          f"python benchmarks/docs_figures.py --write {page} --match {n}"


def test_a_figure_its_record_does_not_hold_fails() -> None:
    assert _not_recorded("power 0.82 [0.70, 0.91] over `cogtestbed plan`", "x: 0.82 [0.70, 0.91]") == []
    assert _not_recorded("power 0.83 [0.70, 0.91]", "x: 0.82 [0.70, 0.91]") == ["0.83"]
    assert _not_recorded("about 0.74 nats", "x: 0.738") == [] and _not_recorded("0.7", "x: 0.76") == ["0.7"]
    assert _quoted_paragraph(["<!-- m -->", "a:", "", "| b | 0.6 |", "", "c 0.7"], 1) == "a:\n| b | 0.6 |"
    assert _quoted_paragraph(["<!-- m -->", "a 0.5:", "", "| b | 0.6 |", "", "c 0.7"], 1) == "a 0.5:"


# ------------------------------------------------------------ prose figures a cheap command prints (issue 72)
def _marked_paragraph(page: str, test_name: str) -> str:
    """The paragraph (see :func:`_quoted_paragraph`) under the marker that names ``test_name`` in ``page``."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    marker = f"checked tests/test_doc_prose_figures.py::{test_name}"
    line = next(i + 1 for i, text in enumerate(lines) if marker in text and text.strip().startswith("<!--"))
    return _quoted_paragraph(lines, line)


def _not_printed(paragraph: str, printed: str, settings: tuple[str, ...] = ()) -> list[str]:
    """The decimal figures of ``paragraph`` that ``printed`` does not print at the paragraph's precision, less
    ``settings`` (a design's value or a threshold the paragraph states, not a result)."""
    from docs_figures import _prose_numbers

    shown = [n for n in _prose_numbers(paragraph) if n not in settings]
    assert shown, "the paragraph quotes no figure"
    return [n for n in shown if not _same_at_precision(n, DECIMAL.findall(printed))]


def _study(*argv: str) -> str:
    import subprocess

    done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_magnitude_bcs_figures_are_what_magnitude_studies_prints() -> None:
    """docs/magnitude.md's identity-mapper and prior-dominant BCS (``magnitude_studies.py identity`` and
    ``prior_dominant``, seeded: about 1.5 CPU min).  Not printed: the 0.9 threshold of s_a = 0 and the analytic
    +1.25 per task (5 ablations × (⅝ − ⅜)), checked here."""
    assert 5 * (5 / 8 - 3 / 8) == 1.25
    printed = _study("benchmarks/studies/magnitude_studies.py", "identity") + \
        _study("benchmarks/studies/magnitude_studies.py", "prior_dominant")
    paragraph = _marked_paragraph("docs/magnitude.md", "test_magnitude_bcs_figures_are_what_magnitude_studies_prints")
    assert _not_printed(paragraph, printed, settings=("0.9", "1.25")) == []
    assert "BCS = 0 for 1.000 of 300 subjects" in printed and "BCS = 0 for 0.470 of 300 subjects" in printed


@pytest.mark.slow
def test_magnitude_fig_figures_are_what_magnitude_studies_prints() -> None:
    """docs/magnitude.md's Fig. 6A / 6C / 7 figures (``magnitude_studies.py figures``, seeded: about 15 s CPU)."""
    printed = _study("benchmarks/studies/magnitude_studies.py", "figures")
    paragraph = _marked_paragraph("docs/magnitude.md", "test_magnitude_fig_figures_are_what_magnitude_studies_prints")
    assert _not_printed(paragraph, printed) == []


@pytest.mark.slow
def test_cogbench_quirk_figures_are_what_metrics_prints() -> None:
    """docs/cogbench.md's probabilistic-reasoning performances: the human file's (flipped as CogBench's
    ``store.py`` flips it) and claude-1/claude-2 under ``--sessions split`` (about 5 s CPU)."""
    import cogtestbed as ct

    folder = ROOT.parent / "shared" / "data" / "cogbench" / "ProbabilisticReasoning"
    if not folder.is_dir():
        pytest.skip(f"no CogBench data at {folder}")
    printed = [f"{ct.metrics('probabilistic-reasoning', folder / 'human.csv')['metrics']['performance']:.6f}"]
    printed += [f"{ct.metrics('probabilistic-reasoning', folder / f, sessions='split')['metrics']['performance']:.6f}"
                for f in ("claude-1.csv", "claude-2.csv")]
    paragraph = _marked_paragraph("docs/cogbench.md", "test_cogbench_quirk_figures_are_what_metrics_prints")
    assert _not_printed(paragraph, " ".join(printed)) == []


def test_population_table_is_what_population_show_prints() -> None:
    """docs/human-data.md's table of the shipped populations: each row's fit diagnostics are what ``cogtestbed
    population show`` prints for it (the times beside them are the build's, as the row says); the prospect-theory
    fits' target acceptance is the model's."""
    from cogtestbed.inference.risky import ProspectTheoryModel

    paragraph = _marked_paragraph("docs/human-data.md", "test_population_table_is_what_population_show_prints")
    rows = [row for row in paragraph.splitlines() if row.startswith("| `human:")]
    assert len(rows) == 4 and ProspectTheoryModel.target_accept == 0.98
    for row in rows:
        name = re.search(r"`(human:[\w-]+)`", row)[1]  # type: ignore[index]
        result = CliRunner().invoke(app, ["population", "show", name])
        assert result.exit_code == 0, result.output
        settings = ("0.98",) if "prospect-theory" in row else ()
        assert _not_printed(row, result.output, settings) == [], name


@pytest.mark.slow
def test_kappa_recovery_figures_are_what_revealed_family_prints() -> None:
    """docs/revealed-belief.md's κ recovery (``revealed_family.py --only kappa``, seeded: about 20 s CPU).  Not
    printed: the lower end of the κ prior's 95 % range, a setting of the prior the paragraph states."""
    printed = _study("benchmarks/studies/revealed_family.py", "--only", "kappa")
    paragraph = _marked_paragraph("docs/revealed-belief.md",
                                  "test_kappa_recovery_figures_are_what_revealed_family_prints")
    assert '"r_identified": 1.0' in printed
    assert _not_printed(paragraph, printed, settings=("1.4",)) == []


def test_howto_llm_vs_people_quotes_the_generated_plan() -> None:
    """docs/howto/llm-vs-people.md quotes the λ + 1 plan against Spektor's 30 people: its figures are those of
    the plan's output block in docs/human-data.md, which ``make docs-figures`` writes from the command above it
    (a plan of minutes of CPU, so it is regenerated there, not rerun here)."""
    from doc_blocks import blocks
    from docs_figures import _generated

    page = ROOT / "docs/human-data.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    fenced = blocks(page, ("bash", ""))
    outputs = [out.source for command, out in zip(fenced, fenced[1:], strict=False)
               if command.language == "bash" and "--effect lambda=1.0" in command.source
               and "human:spektor2024" in command.source and out.language == ""
               and _generated(lines, out.line) is not None]
    assert len(outputs) == 1
    paragraph = _marked_paragraph("docs/howto/llm-vs-people.md", "test_howto_llm_vs_people_quotes_the_generated_plan")
    assert _not_printed(paragraph, outputs[0]) == []


@pytest.mark.slow
def test_tilt_evaluation_figures_are_what_tilt_evaluations_prints() -> None:
    """docs/benchmarks.md's counts of the tilt solver's evaluations (``tilt_evaluations.py``, seeded: about 4 s
    CPU): the means, the largest counts and the adversarial cases solved, none raised or missed."""
    printed = _study("benchmarks/tilt_evaluations.py")
    paragraph = _marked_paragraph("docs/benchmarks.md", "test_tilt_evaluation_figures_are_what_tilt_evaluations_prints")
    assert _not_printed(paragraph, printed) == []
    assert "random cases: 6258 solved, mean 4.3, max 20" in printed and "max 25" in printed
    assert "adversarial: 19670 solved, mean 5.2, max 28; raised 0" in printed and "twin differs 0" in printed


@pytest.mark.slow
def test_spektor_identification_figures_are_what_fit_prints(tmp_path: Path) -> None:
    """docs/risky-choice.md's identification counts and medians of the per-participant prospect-theory MLE on
    Spektor et al.'s 282 participants (``cogtestbed fit ... --method mle``: about 20 s CPU)."""
    import json

    data = ROOT.parent / "shared" / "data" / "psych201" / "spektor2024lossaversion" / "prompts.jsonl.zip"
    if not data.is_file():
        pytest.skip(f"no Psych-201 data at {data}")
    result = CliRunner().invoke(app, ["fit", "prospect-theory", str(data), "-e", "risky-choice", "--method", "mle",
                                      "-o", str(tmp_path / "fit")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "fit" / "summary.json").read_text(encoding="utf-8"))
    assert (summary["n_subjects"], summary["n_identified"], summary["flag_reasons"]) == \
        (282, 246, {"unbounded interval": 36})
    printed = " ".join(f"{v:.6f}" for key in ("median", "median_pinned_only") for v in summary[key].values())
    paragraph = _marked_paragraph("docs/risky-choice.md", "test_spektor_identification_figures_are_what_fit_prints")
    assert _not_printed(paragraph, printed) == []


def test_a_study_writes_the_results_file_the_docs_print(tmp_path: Path) -> None:
    recorded = _recorded()
    path = recorded.write("demo", "python benchmarks/studies/demo.py --n 3",
                          [recorded.figures([("power", "0.82 [0.70, 0.91]")])], folder=tmp_path)
    assert path == tmp_path / "demo.json"
    lines = recorded.render(recorded.load("demo", folder=tmp_path)).splitlines()
    assert lines[0] == "command: python benchmarks/studies/demo.py --n 3"
    assert re.match(r"run: \d{4}-\d{2}-\d{2} on commit [0-9a-f]{7,}(\+dirty)?$", lines[1])
    assert lines[2:] == ["", "figure  value", "power   0.82 [0.70, 0.91]"]


def _page(name: str) -> str:
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def test_the_sequential_designs_arithmetic_and_settings_are_the_codes() -> None:
    """docs/plan.md's sequential-design list: the p-value a bound needs and the permutations that reach it
    (normal tail arithmetic), and the range of maximum sizes searched (``seqplan``'s settings)."""
    import math

    from scipy.stats import norm

    from cogtestbed.planning.kinds.sequential import seqplan

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


def test_every_recorded_result_says_where_it_came_from_and_a_page_prints_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``benchmarks/studies/results/*.json`` (issue 72): each names its command, date and code, a page prints it
    through ``recorded.py`` under a ``generated`` marker, and an unknown name is refused in one line (exit 2)."""
    import json

    recorded = _recorded()
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
    capsys.readouterr()
    assert recorded.main(["no-such-result"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: no results file benchmarks/studies/results/no-such-result")
    quoted = {n for _, _, names in _record_quotes() for n in names.split(",")}
    assert quoted <= {p.stem for p in files}, "a paragraph quotes a results file that does not exist"

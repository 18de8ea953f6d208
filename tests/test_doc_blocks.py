"""The docs run (issue 72): every ``cogtestbed ...`` command README.md, CONTRIBUTING.md and docs/ name exists
with the options they give it (default suite, no command run), and every ``bash`` and ``python`` block of
those pages runs: those marked ``<!-- doc: fast -->`` in the default suite, the others under ``-m slow``
(``make test-docs``), those marked ``<!-- doc: skip REASON -->`` never (a hosted API's key, ``make`` itself).
The blocks are read with Sybil (:mod:`tests.doc_blocks`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import typer.main

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from doc_blocks import (
    BLOCK_PAGES,
    PAGES,
    Block,
    Invocation,
    blocks,
    invocations,
    prepare,
    run_bash,
    unknown_words,
)  # noqa: E402

from cogtestbed.cli import app  # noqa: E402

ROOT_COMMAND = typer.main.get_command(app)
#: Seconds one block may take: a fast one in the default suite, a slow one under ``make test-docs``.
TIMEOUT = {"fast": 120, "slow": 3600}


def _metric_flags(command: str, words: list[str]) -> set[str]:
    """``cogtestbed metrics EXPERIMENT``'s own options (each experiment declares them); every experiment's
    where the page names none (``metrics PATH``)."""
    if command != "metrics":
        return set()
    from cogtestbed.registry import experiment_names, get_experiment

    named = [w for w in words if w in experiment_names()][:1] or experiment_names()
    return {o.flag for name in named for o in get_experiment(name).metrics.options.values()}


def test_every_command_and_option_the_docs_name_exists() -> None:
    found = [(inv.where, " ".join(inv.words)[:80], bad) for page in PAGES for inv in invocations(page)
             if (bad := unknown_words(inv, ROOT_COMMAND, _metric_flags))]
    assert found == []


def test_the_check_finds_a_missing_command_or_option() -> None:
    page = PAGES[0]
    assert unknown_words(Invocation(page, 1, ("serv", "--model", "x")), ROOT_COMMAND) == ["command 'serv'"]
    assert unknown_words(Invocation(page, 1, ("plan", "magnitude", "--no-such")), ROOT_COMMAND) == [
        "option '--no-such' of `cogtestbed plan`"]
    assert unknown_words(Invocation(page, 1, ("population", "show", "--json")), ROOT_COMMAND) == []
    assert unknown_words(Invocation(page, 1, ("metrics", "collider", "x.csv", "--scheme", "4p")), ROOT_COMMAND,
                         _metric_flags) == []
    assert unknown_words(Invocation(page, 1, ("metrics", "collider", "x.csv", "--pair", "y")), ROOT_COMMAND,
                         _metric_flags) == ["option '--pair' of `cogtestbed metrics`"]


def test_commands_are_found_in_blocks_and_inline_code(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("Run `cogtestbed list` or\n\n```bash\nX=1 cogtestbed plan magnitude \\\n    --json  # c\n"
                    "ls && cogtestbed serve -m m\n.venv/bin/ruff check cogtestbed tests\n```\n")
    assert sorted(i.words for i in invocations(page)) == [("list",), ("plan", "magnitude", "--json"),
                                                           ("serve", "-m", "m")]


def test_a_refusal_the_page_shows_must_be_a_refusal(tmp_path: Path) -> None:
    block = Block(tmp_path / "p.md", "bash", "(exit 2)\n# error: a refusal\n", 1, "fast", "")
    assert run_bash(block, tmp_path / "w", 120).returncode == 0
    fails = Block(tmp_path / "p.md", "bash", "true\n# error: a refusal that does not happen\nexit 0\n", 1, "fast", "")
    done = run_bash(fails, tmp_path / "w", 120)
    assert done.returncode == 1 and "expected a refusal (exit 2), got 0" in done.stderr


def _all_blocks() -> list[Block]:
    return [b for page in BLOCK_PAGES for b in blocks(page)]


def _param(block: Block) -> object:
    marks = {"slow": [pytest.mark.slow], "skip": [pytest.mark.skip(reason=block.reason or "marked skip")],
             "fast": []}[block.kind]
    return pytest.param(block, id=block.id, marks=marks)


_NAMESPACES: dict[Path, dict[str, object]] = {}


@pytest.mark.parametrize("block", [_param(b) for b in _all_blocks()])
def test_a_doc_block_runs(block: Block, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The block runs without error, in a folder of its page's own (blocks of one page share it, and
    ``python`` blocks share the page's namespace, in the page's order)."""
    if block.page in _NAMESPACES:
        workdir = Path(str(_NAMESPACES[block.page]["__workdir__"]))
    else:  # <page>/repo, with the data at <page>/shared: the pages' ../shared
        workdir = tmp_path_factory.mktemp(block.page.stem) / "repo"
        workdir.mkdir()
    namespace = _NAMESPACES.setdefault(block.page, {"__name__": "__doc__", "__workdir__": str(workdir)})
    if block.language == "bash":
        done = run_bash(block, workdir, TIMEOUT[block.kind])
        assert done.returncode == 0, \
            f"{block.id} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return
    prepare(workdir)
    before = Path.cwd()
    os.chdir(workdir)
    try:
        exec(compile(block.source, block.id, "exec"), namespace)  # noqa: S102 - the page's own example
    finally:
        os.chdir(before)


#: Figures beside a command that no test checks or regenerates (``python benchmarks/docs_figures.py`` lists
#: them): the count only shrinks; its goal is 0.
UNCHECKED_FIGURES = 0  # 48 before issue 72's markers, then 0; 107 once prose beside an inline command counted, then 0;
#                        28 once a dated `record` stopped excusing a result, then 0 (timings marked `timing`, results
#                        moved into benchmarks/studies/results/ and printed by recorded.py)


def test_unchecked_figures_only_shrink() -> None:
    from docs_figures import unchecked

    found = unchecked()
    assert len(found) <= UNCHECKED_FIGURES, [f"{f.page}:{f.line}" for f in found]
    assert len(found) == UNCHECKED_FIGURES, f"{len(found)} left: lower UNCHECKED_FIGURES"


def test_the_figure_list_finds_an_unchecked_figure(tmp_path: Path) -> None:
    from docs_figures import Figure, is_checked

    figure = Figure("docs/x.md", 3, "result", "#  -> power 0.83 [0.71, 0.92]")
    assert not is_checked(figure, ["", "", ""], {"test_x.py": "docs/x.md 0.5"})
    assert is_checked(figure, ["", "", ""], {"test_x.py": "docs/x.md: 0.83 within [0.71, 0.92]"})
    assert is_checked(figure, ["<!-- doc: checked tests/test_doc_blocks.py -->", "", ""], {})
    assert not is_checked(figure, ["<!-- doc: checked tests/test_no_such_file.py -->", "", ""], {})
    assert not is_checked(figure, ["<!-- doc: checked tests/test_doc_blocks.py::test_no_such_test -->", "", ""], {})


def test_the_figure_list_finds_numbers_in_prose_beside_an_inline_command() -> None:
    from docs_figures import is_checked, prose_figures

    page = ["# p", "", "Printed by `python benchmarks/x.py --size 0.1`: power 0.82 ± 0.03.", "",
            "No command here: 0.5.", "", "`cogtestbed plan x` (`--seed 1.5`) prints:", "", "- power 0.91", "",
            "Version 0.3.36 of `cogtestbed run`, Remark 3.4, `--level 0.05`, target ≤ 1.2, gemini-2.5-pro,",
            "estimate ± 1.96·SD, Monte-Carlo SE ≤ `--mc-se`, 0.03; the level (`alpha`, 0.05).", "", "```bash",
            "cogtestbed x 0.7",
            "```", "", "<!-- doc: timing 25 Nov 2026 (load 13) -->", "`make bench` took 1.5 s."]
    found = prose_figures(page, "docs/x.md")
    assert [(f.line, f.kind) for f in found] == [(3, "prose"), (7, "prose"), (19, "prose")]
    assert [is_checked(f, page, {}) for f in found] == [False, False, True]
    assert prose_figures(page, "docs/cli.md") == []  # generated from the code's help
    undated = [*page[:17], "<!-- doc: timing of some day -->", page[18]]
    assert not is_checked(found[2], undated, {})
    assert not is_checked(found[2], [*page[:17], "<!-- doc: record 25 Nov 2026 (load 13) -->", page[18]], {})
    checked = [*page[:17], "<!-- doc: checked tests/test_doc_blocks.py::test_unchecked_figures_only_shrink -->",
               page[18]]
    assert is_checked(found[2], checked, {})


def _numbers(text: str) -> set[str]:
    import re

    return {n.replace(",", "") for n in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?", text)}


def test_the_readme_size_answers_are_the_generated_ones_of_docs_sizes() -> None:
    """README.md's sample-size answers quote docs/sizes.md's outputs of the same commands, which ``make
    docs-figures`` writes from the commands themselves: every number of the README's figures is in them."""
    from docs_figures import _generated, figures

    root = Path(__file__).resolve().parents[1]
    readme = [f for f in figures(root / "README.md") if f.text.startswith("#  ") and "cogtestbed plan magnitude" in
              next(b.source for b in blocks(root / "README.md") if b.line == f.block)]
    sizes_page = root / "docs" / "sizes.md"
    text = sizes_page.read_text(encoding="utf-8").splitlines()
    outputs = [b.source for b in blocks(sizes_page, ("", "text")) if _generated(text, b.line) is not None]
    assert len(readme) == 3 and len(outputs) >= 4  # and the other generated outputs of the page
    printed = _numbers("\n".join(outputs))
    assert {f.text: sorted(_numbers(f.text) - printed) for f in readme} == {f.text: [] for f in readme}


def test_a_timing_needs_a_date_a_record_excuses_nothing_and_a_block_marker_holds_its_results() -> None:
    from docs_figures import Figure, is_checked

    result = Figure("docs/x.md", 5, "result", "#  -> 1.67 ms CPU", block=4)
    page = ["", "<!-- doc: timing 25 Nov 2026 (load 13): timings -->", "```bash", "python x.py", "#  -> 1.67 ms CPU"]
    assert is_checked(result, page, {})
    undated = ["", "<!-- doc: timing of some day -->", "```bash", "python x.py", "#  -> 1.67 ms CPU"]
    assert not is_checked(result, undated, {})
    # a result typed by hand under a dated `record` is listed: a date does not make a rate what the command prints
    power = Figure("docs/x.md", 3, "prose", "`cogtestbed power x` gave power 0.82 ± 0.03.")
    recorded = ["", "<!-- doc: record 25 Nov 2026 (commit abc1234): the power as run then -->", power.text]
    assert not is_checked(power, recorded, {})
    assert is_checked(power, [recorded[0], "<!-- doc: timing 25 Nov 2026 (commit abc1234): CPU -->", power.text], {})
    generated = ["```bash", "x", "```", "<!-- doc: generated | tail -n 1 -->", "```", "power 0.83", "```"]
    assert is_checked(Figure("docs/x.md", 6, "output", "power 0.83"), generated, {})
    assert not is_checked(Figure("docs/x.md", 6, "output", "power 0.83"), [*generated[:3], "", *generated[4:]], {})


def test_make_docs_figures_writes_a_generated_output_block(tmp_path: Path) -> None:
    import docs_figures

    page = tmp_path / "p.md"
    page.write_text("# p\n\n```bash\necho one; echo 0.5 >&2\n```\n<!-- doc: generated 2>&1 | tail -n 1 -->\n"
                    "```\nstale 0.4\n```\n\n```bash\nprintf 'a\\nb\\n'\n```\n<!-- doc: generated -->\n```\nold\n```\n")
    assert docs_figures.regenerate(page) == []
    assert page.read_text().split("```")[3:8:4] == ["\n0.5\n", "\na\nb\n"]

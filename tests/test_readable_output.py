"""What the command line prints is readable and never a traceback: a missing optional dependency
names its extra, names are never cut, numbers are written for people, flags reach stderr in text
mode, an unknown key lists the valid ones and the paper's test names are accepted."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from cogtestbed.cli import missing_extra, run_cli
from cogtestbed.formatting import design_text, num, rate_text, wilson
from cogtestbed.registry import experiment_names

ROOT = Path(__file__).resolve().parents[1]
COGBENCH_IL = ROOT.parent / "shared/data/cogbench/InstrumentalLearning/gpt-4.csv"


def test_a_missing_optional_dependency_is_one_line_naming_its_extra(monkeypatch, capsys, tmp_path) -> None:
    before = {m for m in sys.modules if m.startswith("cogtestbed.llm_adapters")}
    for name in [m for m in sys.modules if m.startswith("cogtestbed.llm_adapters") or m == "tenacity"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tenacity", None)  # import tenacity -> ModuleNotFoundError
    try:
        code = run_cli(["run", "instrumental-learning", "--llm", "openai:gpt-4o-mini", "--dry-run",
                        "-o", str(tmp_path / "r")])
    finally:  # modules first imported here are dropped: later tests import them against the restored ones
        for name in [m for m in sys.modules if m.startswith("cogtestbed.llm_adapters") and m not in before]:
            del sys.modules[name]
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1, err
    assert "'tenacity'" in err[0] and "pip install 'cogtestbed[llm]'" in err[0]
    assert missing_extra(ModuleNotFoundError("No module named 'nutpie'", name="nutpie")).endswith("cogtestbed[fast]'")
    assert missing_extra(ModuleNotFoundError("x", name="no_such_module")) is None


def test_make_demo_installs_what_run_and_plan_need() -> None:
    """`make demo` installs the demo lock, which pins the LLM clients and nutpie (`run`, `plan`)."""
    demo = (ROOT / "Makefile").read_text().split("$(VENV)/.demo:")[1].split("touch")[0]
    assert "$(DEMO_LOCK)" in demo
    pinned = {line.split("==")[0] for line in (ROOT / "locks/demo.txt").read_text().splitlines() if "==" in line}
    assert {"openai", "anthropic", "tenacity", "nutpie", "transformers"} <= pinned


def test_list_never_cuts_a_name(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    assert run_cli(["list"]) == 0
    out = capsys.readouterr().out
    for name in experiment_names():
        assert name in out, name


@pytest.mark.parametrize(("value", "text"), [
    (9000.0, "9000"), (1000, "1000"), (0.12345, "0.123"), (2416.3, "2416"), (5.0, "5"), (0.0, "0"),
    (float("nan"), "n/a"), (None, "n/a"), (1.5e-5, "1.50e-05"), ({"a": 0.5, "b": 2}, "a 0.5, b 2"),
])
def test_numbers_for_people(value, text) -> None:
    assert num(value) == text


def test_rates_at_zero_and_one_carry_an_interval_not_a_zero_se() -> None:
    assert rate_text(0.0, 200) == "0 [0, 0.019] (200 sims)"
    assert rate_text(1.0, 10).startswith("1 [0.72, 1]")
    lo, hi = wilson(28, 200)
    assert lo < 0.14 < hi and hi - lo == pytest.approx(0.097, abs=0.002)
    assert design_text({"n_contexts": 40, "n_reps": 5, "runs": 1}) == "40 contexts × 5 repetitions, 1 run"


def test_metrics_flags_reach_stderr_in_text_mode(capsys, tmp_path) -> None:
    """A fit that cannot converge, built so by construction (issue 37: no test hopes that a library
    version fails to converge): run 8 of CogBench's gpt-4.csv with every answer made invalid leaves its
    MLE nothing to fit, whichever numpy/scipy/numba is installed."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.trials import table_to_parquet

    table, _ = get_experiment("instrumental-learning").read(COGBENCH_IL)
    lapsed = table["subject"] == 8
    table.loc[lapsed, "valid"] = False
    table.loc[lapsed, "action"] = pd.NA
    table.loc[lapsed, "reward"] = float("nan")
    table.loc[lapsed, "parse_error"] = "no answer (constructed)"
    path = tmp_path / "run8_lapsed.parquet"
    table_to_parquet(table, path)
    assert run_cli(["metrics", "instrumental-learning", str(path)]) == 0
    out = capsys.readouterr()
    assert "{" not in out.out  # no raw dicts in the table
    warnings = [line for line in out.err.splitlines() if line.startswith("warning: ")]
    assert any(line.startswith("warning: run 8: ") for line in warnings), out.err
    assert not any(line.startswith(f"warning: run {r}: ") for r in range(8) for line in warnings), out.err


def test_unknown_test_lists_the_valid_keys_and_paper_names_are_aliases(capsys) -> None:
    args = ["power", "belief-coherence", "--agent", "logit-rum:report_noise=0.05", "--design", "network=asia",
            "--design", "n_contexts=20", "--sims", "1", "--runs", "1", "--workers", "1", "--json"]
    assert run_cli([*args, "--test", "t1x"]) == 2
    err = capsys.readouterr().err
    valid = err.split("choose one of: ")[1].strip().split(", ")
    assert {"t1_cmi", "t1_lr", "t1_nested", "t2", "t3", "t4"} <= set(valid) and "T1c = t1_lr" in err
    assert run_cli([*args, "--test", "T1c"]) == 0
    assert '"t1_lr"' in capsys.readouterr().out


def test_sampling_reports_draws_and_chains_off_a_terminal(capsys, monkeypatch, tmp_path) -> None:
    """A hierarchical fit off a terminal: a line when sampling begins, progress lines (every interval;
    here every update) with draws, chains and an ETA, and a closing line."""
    import json

    import cogtestbed.progress as progress

    monkeypatch.setattr(progress, "LINE_INTERVAL", 0.0)
    monkeypatch.setattr(progress, "ESTIMATE_OVER", 0.0)  # the up-front estimate of any job
    store = tmp_path / "timings.json"
    monkeypatch.setenv("COGTESTBED_TIMINGS", str(store))
    table = tmp_path / "t.parquet"
    assert run_cli(["simulate", "instrumental-learning", "-a", "rw-pm", "--subjects", "2", "--design",
                    "visits_per_casino=4", "-o", str(table)]) == 0
    assert run_cli(["fit", "rw-pm", str(table), "--method", "hierarchical", "--draws", "30", "--chains", "2",
                    "-o", str(tmp_path / "fit")]) == 0
    err = capsys.readouterr().err
    assert "sampling began after" in err and "(2 chains, 120 draws in all, tuning included)" in err
    assert "done, 120 draws in" in err
    # the estimate comes before the set-up, says what it rests on, and the fit is recorded for the next one
    first = err.index("estimated ")
    assert first < err.index("sampling began after") and "an estimate before set-up" in err[first:]
    assert "no earlier fit of this kind recorded here" in err
    (row,) = json.loads(store.read_text())["nutpie:rw-pm"]
    assert row["setup_s"] > 0 and row["rate_s"] > 0


def test_parse_nutpie_durations() -> None:
    from cogtestbed.progress import parse_duration

    assert parse_duration("1m 3s") == pytest.approx(63.0)
    assert parse_duration("250ms") == pytest.approx(0.25)
    assert parse_duration("") is None


def test_task_progress_lines_with_an_estimate(monkeypatch) -> None:
    import cogtestbed.progress as progress

    clock = iter([0.0, 10.0, 12.0, 14.0, 16.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    lines: list[str] = []
    tasks = progress.TaskProgress(lambda line, final: lines.append(line), "recovery", 100)
    for _ in range(3):
        tasks.advance()
    assert lines[0] == "recovery: estimated 3 min 28 s in all (2 of 100 tasks took 12 s)"  # 2 s a task after the first
    assert all("ETA" not in x for x in lines[1:])  # one line per 30 s: none yet


def test_task_progress_on_a_terminal_rewrites_its_line_each_task_and_keeps_the_last(monkeypatch) -> None:
    import cogtestbed.progress as progress

    clock = iter([0.0, 1.0, 2.0, 3.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    lines: list[tuple[str, bool]] = []
    tasks = progress.TaskProgress(lambda line, final: lines.append((line, final)), "demo power study", 3,
                                  terminal=True)
    for _ in range(3):
        tasks.advance()
    assert [final for _, final in lines] == [False, False, True]
    assert lines[0][0] == "demo power study: 1/3 tasks, 1 s elapsed"
    assert lines[1][0] == "demo power study: 2/3 tasks, 2 s elapsed, ETA 1 s"  # 1 s a task after the first
    assert lines[2][0] == "demo power study: 3/3 tasks, 3 s elapsed"


def test_task_lines_off_a_terminal_write_plain_lines_to_stderr(capsys) -> None:
    from cogtestbed.progress import task_lines

    tasks = task_lines("demo recovery study", 2)  # pytest's captured stderr is no terminal
    tasks.advance(2)
    assert capsys.readouterr().err.startswith("demo recovery study: 2/2 tasks, ")


def test_a_warning_during_a_command_prints_as_one_line_without_source() -> None:
    """ConvergenceWarning and the like print as ``warning: CATEGORY: message`` on one line, not with
    Python's source file, line number and code line."""
    import subprocess
    import sys
    from pathlib import Path

    probe = ("import sys, warnings\nimport cogtestbed.cli as c\n"
             "c.app = lambda **k: warnings.warn('max R-hat 1.2\\n  > 1.01', RuntimeWarning) or 0\n"
             "sys.exit(c.run_cli([]))\n")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=root, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "warning: RuntimeWarning: max R-hat 1.2 > 1.01\n"

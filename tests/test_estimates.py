"""Up-front time estimates (issue 31): a study's from one timed task of its smallest cell, a
hierarchical fit's from the sampling cost model of this machine, nutpie's own bar kept off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cogtestbed.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]


def _recovery_spec():
    from cogtestbed.studies.driver import study_spec

    return study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",), subjects=(6, 12),
                      trials=(48, 96), reps=4, seed=1)


def test_a_study_estimate_comes_before_the_first_task(capsys, monkeypatch) -> None:
    import cogtestbed.progress as progress

    monkeypatch.setattr(progress, "ESTIMATE_OVER", 0.0)  # every job gets one (the default: over a minute)
    monkeypatch.setattr(progress, "LINE_INTERVAL", 0.0)
    assert run_cli(["recover", "instrumental-learning", "--model", "rw-pm", "--subjects", "4,8", "--trials", "48,96",
                    "--reps", "2", "--workers", "1"]) == 0
    lines = capsys.readouterr().err.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("recovery: estimated "))
    first_task = next(i for i, line in enumerate(lines) if line.startswith("recovery: 1/8 tasks"))
    assert at < first_task
    assert "for 8 tasks on 1 worker (an estimate: one task of the smallest cell, 4 subject(s) of 12 visits per " \
           "casino (48 trials per run)" in lines[at]


def test_a_precision_plan_estimates_a_batch_before_its_first_design(capsys) -> None:
    assert run_cli(["plan", "magnitude", "--model", "static-bayes", "--precision", "w_prior=0.3", "--assurance",
                    "0.5", "--design", "task=marker-location", "--design", 'conditions=["base"]', "--design",
                    'modalities=["text"]', "--design", "trials_per_session=5,10"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("estimate: a batch of 40 subjects takes about ") and "at the largest here (timed)" in err
    assert err.index("estimate:") < err.index("P(|error| ≤ 0.3)")


def test_a_study_estimate_counts_the_tasks_it_times() -> None:
    """The estimate covers every task of the study on the workers asked for.  How close it comes
    to the real time is a timing, measured in ``benchmarks/bench_estimates.py`` (never in a test)."""
    from cogtestbed.planning.estimate import study_estimate

    est = study_estimate(_recovery_spec(), 1)
    assert est is not None and est.tasks == 16 and est.workers == 1
    assert 0 < est.seconds < float("inf")


def test_the_sampling_cost_model_scales_its_records(monkeypatch, tmp_path: Path) -> None:
    from cogtestbed import timings

    monkeypatch.setenv("COGTESTBED_TIMINGS", str(tmp_path / "t.json"))
    assert timings.estimate("nutpie:m", 1e6) == (timings.DEFAULT["setup_s"], timings.DEFAULT["rate_s"] * 1e6, 0)
    for setup, seconds in ((10.0, 2.0), (30.0, 4.0), (None, 3.0)):
        timings.record("nutpie:m", setup, seconds, 1000.0)
    setup, sampling, n = timings.estimate("nutpie:m", 2000.0)
    assert (setup, n) == (20.0, 3) and sampling == pytest.approx(6.0)  # medians: set-up 20 s, 3 ms a unit
    for _ in range(10):
        timings.record("nutpie:m", 1.0, 1.0, 1000.0)
    assert len(json.loads((tmp_path / "t.json").read_text())["nutpie:m"]) == timings.KEEP


@pytest.mark.slow
def test_a_terminal_shows_one_progress_line_and_not_nutpies_bar(tmp_path: Path) -> None:
    """``fit`` on a terminal (a pseudo-terminal here): the estimate first, then one line rewritten in
    place with draws, chains and ETA; nutpie's own table-like bar is never drawn."""
    import pty

    table = tmp_path / "t.parquet"
    assert run_cli(["simulate", "instrumental-learning", "-a", "rw-pm", "--subjects", "2", "--design",
                    "visits_per_casino=4", "-o", str(table)]) == 0
    store = tmp_path / "timings.json"  # a record making the estimate a job over a minute
    store.write_text(json.dumps({"nutpie:rw-pm": [{"setup_s": 90.0, "rate_s": 1e-5}]}))
    master, slave = pty.openpty()
    env = {**os.environ, "COGTESTBED_TIMINGS": str(store), "COLUMNS": "250"}
    proc = subprocess.Popen([sys.executable, "-m", "cogtestbed", "fit", "rw-pm", str(table), "--draws", "30",
                             "--chains", "2", "-o", str(tmp_path / "fit")], stdin=slave, stdout=slave,
                            stderr=slave, cwd=ROOT, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=600) == 0
    text = b"".join(chunks).decode(errors="replace")
    assert "Divergences" not in text and "Step size" not in text  # nutpie's bar
    assert "\r\x1b[2Ksampling rw-pm" in text and "draws (tuning included)" in text  # our line, in place
    assert text.index("estimated 1 min 30 s in all (an estimate before set-up") < text.index("sampling began after")


def test_the_timed_task_is_not_run_again() -> None:
    """The estimate's timed task is handed to the study (``done``): same table, every task counted once."""
    import pandas as pd

    from cogtestbed.planning.estimate import study_estimate
    from cogtestbed.studies.driver import run_study, study_spec

    spec = study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",), subjects=(4, 8),
                      trials=(48,), reps=2, seed=3)
    est = study_estimate(spec, 1)
    assert est is not None and list(est.done) == [0]  # the smallest cell's first task
    ticks: list[int] = []
    reused = run_study(spec, workers=1, on_task_done=ticks.append, done=est.done)
    full = run_study(spec, workers=1)
    assert sum(ticks) == 4 and len(ticks) == 4
    pd.testing.assert_frame_equal(reused.table, full.table)


def test_a_hierarchical_study_says_it_is_timing_a_task_before_the_compile(capsys, monkeypatch) -> None:
    """The timed task of a hierarchical study compiles its model first: a line says so before it."""
    import cogtestbed.planning.estimate as estimate
    from cogtestbed.api.studies import say_estimate
    from cogtestbed.studies.driver import study_spec

    said: list[str] = []
    monkeypatch.setattr(estimate, "study_estimate", lambda spec, workers: said.append(capsys.readouterr().err))
    spec = study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",), subjects=(4,),
                      trials=(48,), reps=3, seed=1, method="hierarchical")
    assert say_estimate(spec, 1, _stderr) is None
    assert said == ["recovery: timing one task of the smallest cell for the estimate (it compiles the hierarchical "
                    "model first, which can take a minute)\n"]
    mle = study_spec(kind="recovery", experiment="instrumental-learning", models=("rw-pm",), subjects=(4,),
                     trials=(48,), reps=3, seed=1)
    say_estimate(mle, 1, _stderr)
    assert said[-1] == ""  # an MLE study's timed task is quick: no such line


def _stderr(line: str) -> None:
    import sys

    print(line, file=sys.stderr)

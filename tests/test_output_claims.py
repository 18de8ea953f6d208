"""Output folders are claimed atomically and progress reaches stderr whatever stdout carries
(issue 48, item 6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import cogtestbed as ct
from cogtestbed.cli import run_cli
from cogtestbed.outputs import CLAIM_FILE, output_dir

#: A process that claims OUT (cogtestbed.outputs.output_dir), waits for GO, writes its file, holds
#: the folder a moment, and prints "won" or the refusal.
CLAIMER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from cogtestbed.outputs import output_dir, OutputError
    out, go, me = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    while not go.exists():
        time.sleep(0.005)
    try:
        with output_dir(out):
            (out / "plan.json").write_text(me)
            time.sleep(1.0)
        print("won")
    except OutputError as exc:
        print("refused:", exc)
""")


def test_two_writers_into_one_folder_at_once_one_wins_the_other_is_refused(tmp_path: Path) -> None:
    out, go = tmp_path / "same", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, str(out), str(go), name], stdout=subprocess.PIPE,
                              text=True, env=env) for name in ("a", "b")]
    time.sleep(3)  # both started and waiting
    go.write_text("")
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert sorted(o.split(":")[0] for o in outs) == ["refused", "won"], outs
    winner = "ab"[outs.index("won")]
    assert (out / "plan.json").read_text() == winner  # the winner's file, never overwritten
    refusal = next(o for o in outs if o != "won")
    assert "being written by another command" in refusal or "is not empty; pass `force`" in refusal
    assert not (out / CLAIM_FILE).exists()


def test_a_folder_claimed_by_a_live_process_is_refused_even_with_force(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        out = tmp_path / "o"
        out.mkdir()
        (out / CLAIM_FILE).write_text(str(holder.pid))
        refused = f"being written by another command \\(process {holder.pid}\\)"
        with pytest.raises(ct.OutputError, match=refused), output_dir(out, force=True):
            pass
    finally:
        holder.kill()
        holder.wait()
    with output_dir(out, force=False):  # its holder is gone: the claim is taken over
        (out / "x").write_text("1")
    assert sorted(p.name for p in out.iterdir()) == ["x"]


def test_a_non_empty_folder_is_refused_without_force_and_the_claim_released(tmp_path: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "old.json").write_text("{}")
    with pytest.raises(ct.OutputError, match="not empty; pass `force`"), output_dir(out):
        pass
    assert not (out / CLAIM_FILE).exists()
    with output_dir(out, force=True), output_dir(out, force=True):  # re-entrant in one process
        assert (out / CLAIM_FILE).exists()
    assert not (out / CLAIM_FILE).exists()


def test_plan_into_a_non_empty_folder_is_refused_before_simulating(tmp_path: Path, capsys, no_simulation) -> None:
    out = tmp_path / "plan"
    out.mkdir()
    (out / "plan.json").write_text('{"an": "earlier plan"}')
    code = run_cli(["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.3",
                    "--llm", "openai:gpt-4o-mini", "--subjects", "4,8", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "is not empty; pass --force" in err
    assert json.loads((out / "plan.json").read_text()) == {"an": "earlier plan"}


def test_plan_progress_reaches_stderr_with_json(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def fake_plan(*args: Any, say: Any = None, **kwargs: Any) -> Any:
        assert say is not None, "plan --json passed no progress callback"
        say("simulating 4 subjects: 1/2")
        return SimpleNamespace(kind="precision", payload={"chosen": 4})

    monkeypatch.setattr("cogtestbed.api.plan.plan", fake_plan)
    code = run_cli(["plan", "instrumental-learning", "--model", "rw-pm", "--precision", "optimism_bias=0.2",
                    "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out) == {"chosen": 4}
    assert "simulating 4 subjects: 1/2" in err


def test_study_progress_reaches_stderr_with_json_off_a_terminal() -> None:
    from cogtestbed.cli.studies import _Bar

    bar = _Bar(as_json=True)
    watch = bar.watch(None)
    bar.start("recovery", 4)
    assert watch.estimate and bar.lines is not None
    bar.close()


def test_a_simulation_file_being_written_by_another_command_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "trials.parquet"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        out.with_name(f".{out.name}{CLAIM_FILE}").write_text(str(holder.pid))
        with pytest.raises(ct.OutputError, match=f"output {out} is being written by another command"):
            ct.simulate("instrumental-learning", "rw-pm", subjects=1, output=out, force=True)
    finally:
        holder.kill()
        holder.wait()
    assert not out.exists()
    ct.simulate("instrumental-learning", "rw-pm", subjects=1, output=out, design={"visits_per_casino": 2})
    assert out.exists() and not out.with_name(f".{out.name}{CLAIM_FILE}").exists()
    with pytest.raises(ct.OutputError, match="exists; pass `force`"):
        ct.simulate("instrumental-learning", "rw-pm", subjects=1, output=out)

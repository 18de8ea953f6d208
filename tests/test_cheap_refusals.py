"""A plan's ``--design``, ``--population`` and ``--pilot`` refused from the request alone, before the experiment or
any numerical library is imported (before: 3-4 s and 264 MB, the experiment loaded first; the others 0.5 s)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from pathlib import Path

from cold_cli import HEAVY, assert_refused_cold, cold

from cogtestbed.cli import run_cli

RW = ["instrumental-learning", "--model", "rw-pm", "--llm", "openai:gpt-4o-mini", "--effect", "optimism_bias=0.2"]
SHIPPED = "human:cogbench-instrumental, human:shahar2019, human:spektor2024, human:spektor2024-all"


def _requests(tmp_path: Path) -> list[tuple[list[str], str]]:
    (tmp_path / "pilot").mkdir()
    return [
        ([*RW, "--design", "nosuch=3"], "design of instrumental-learning: nosuch: Extra inputs are not permitted"),
        ([*RW, "--design", "nosuch=3,4"], "'nosuch' is not a design field of instrumental-learning; valid: "
                                          "visits_per_casino, reward_probs, alphabet, randomise_order, prompt_variant"),
        ([*RW, "--population", "human:nosuch"], f"human:nosuch names none of the shipped populations ({SHIPPED})"),
        ([*RW, "--population", str(tmp_path / "none.json")],
         f"no population '{tmp_path / 'none.json'}': give human:NAME (shipped: {SHIPPED}) or the path of a population "
         "file"),
        ([*RW, "--pilot", str(tmp_path / "pilot")],
         f"--pilot: no trials.parquet in {tmp_path / 'pilot'} (run `cogtestbed run ... -o {tmp_path / 'pilot'}` "
         "first)"),
    ]


def test_design_population_and_pilot_are_refused_cold(tmp_path: Path) -> None:
    requests = _requests(tmp_path)
    assert_refused_cold([argv for argv, _ in requests], HEAVY)
    probe = ("import io, json, sys, contextlib\nfrom cogtestbed.cli import run_cli\nout = []\n"
             "for argv in json.loads(sys.argv[1]):\n    err = io.StringIO()\n"
             "    with contextlib.redirect_stderr(err):\n        run_cli(['plan', *argv])\n"
             "    out.append(err.getvalue().strip())\nprint(json.dumps(out))")
    done = cold(probe, json.dumps([argv for argv, _ in requests]))
    assert json.loads(done.stdout.splitlines()[-1]) == [f"error: {line}" for _, line in requests]


def test_the_loaded_experiment_gives_the_same_lines(tmp_path: Path, monkeypatch) -> None:
    """The refusals before the import are the ones the loaded experiment gives (the early check skipped)."""
    import cogtestbed.planning.plan_kinds as plan_kinds

    monkeypatch.setattr(plan_kinds, "check_before_import", lambda experiment, req: None)
    for argv, line in _requests(tmp_path)[:3]:
        err = io.StringIO()
        with redirect_stderr(err):
            assert run_cli(["plan", *argv]) == 2
        assert err.getvalue().strip().splitlines()[-1] == f"error: {line}"

"""What a subject's design identifies, before a study: ``plan`` refuses at once from the shipped table,
``simulate`` and ``fit`` warn once, and the horizon task's default subject has the games its model needs."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
from cli_runs import in_process
from cold_cli import assert_refused_cold, cold

import cogtestbed as ct
from cogtestbed.identifiability import DEFAULT_CHAINS, identifiability, shipped_table
from cogtestbed.identified_sessions import IdentificationWarning, refusal_line, shipped_sessions, unidentified_at

LLM = "openai:gpt-4o-mini"
#: A model target on one horizon game a subject: refused from the request alone.
ONE_GAME = ["horizon", "--model", "info-bonus", "--effect", "bonus_h6=5", "--llm", LLM]


@pytest.fixture(scope="module")
def horizon_check():
    return identifiability("horizon", "info-bonus", sessions=1, draws=0, chains=DEFAULT_CHAINS, seed=0)


def test_the_shipped_horizon_entry_is_the_checks(horizon_check) -> None:
    """``identified_sessions.json`` holds the check's figures (``python -m cogtestbed.identifiability`` rewrites
    it; the slow test below holds every experiment)."""
    need = dict(zip(horizon_check.parameters, horizon_check.table["sessions_to_identify"], strict=True))
    assert shipped_sessions("horizon", "info-bonus") == {k: int(v) for k, v in need.items()}
    missing, smallest = unidentified_at("horizon", "info-bonus", 1)
    assert missing == horizon_check.unidentified and smallest == horizon_check.smallest_sessions


def test_the_horizon_default_subject_is_the_checks_smallest_design(horizon_check) -> None:
    assert ct.get_experiment("horizon").subject_sessions == horizon_check.smallest_sessions > 5
    table = ct.simulate("horizon", "info-bonus", subjects=2, seed=0)
    assert table.groupby("subject")["session"].nunique().tolist() == [horizon_check.smallest_sessions] * 2
    assert refusal_line("horizon", "info-bonus", horizon_check.smallest_sessions) is None


def test_plan_refuses_one_game_a_subject_cold_in_one_line(horizon_check) -> None:
    assert_refused_cold([ONE_GAME])
    done = cold("import sys; from cogtestbed.cli import run_cli; sys.exit(run_cli(sys.argv[1:]))", "plan", *ONE_GAME)
    lines = done.stderr.strip().splitlines()
    smallest = horizon_check.smallest_sessions
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "does not identify bonus_h1" in lines[0] and f"(--runs {smallest})" in lines[0]


def test_plan_refuses_a_range_of_runs_that_never_identifies_and_names_the_parameter() -> None:
    with pytest.raises(ct.InputError, match=r"a subject of 4 run\(s\) does not identify bonus_h1.*--runs"):
        ct.plan("horizon", model="info-bonus", effect={"bonus_h6": 5.0}, runs="2:4", llm=LLM)


def test_plan_refuses_an_unidentifying_design_it_sets() -> None:
    """A design the request sets is checked on the loaded experiment, before any simulation."""
    with pytest.raises(ct.InputError, match=r"does not identify .*--runs \d+"):
        ct.plan("horizon", model="info-bonus", effect={"bonus_h6": 5.0}, design={"reward_sd": 4.0}, llm=LLM)


def test_simulate_warns_once_for_the_whole_table() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = ct.simulate("horizon", "info-bonus", subjects=3, sessions=1, seed=0)
    ours = [w for w in caught if issubclass(w.category, IdentificationWarning)]
    assert len(ours) == 1 and "\n" not in str(ours[0].message)
    assert "does not identify" in str(ours[0].message) and "simulated anyway" in str(ours[0].message)
    assert table["subject"].nunique() == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentificationWarning)
        ct.simulate("horizon", "info-bonus", subjects=1, seed=0)  # the default subject: no warning


def test_fit_warns_once_for_the_whole_table() -> None:
    table = ct.simulate("horizon", "info-bonus", subjects=4, sessions=2, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fits = ct.fit("horizon", table, "info-bonus", unit="subject")
    ours = [w for w in caught if issubclass(w.category, IdentificationWarning)]
    assert len(ours) == 1 and "a subject of 2 session(s) does not identify" in str(ours[0].message)
    assert len(fits) == 4


def test_simulate_command_warns_in_one_line(tmp_path) -> None:
    out = tmp_path / "t.parquet"
    proc = subprocess.run([sys.executable, "-m", "cogtestbed", "simulate", "horizon", "--agent", "info-bonus",
                           "--subjects", "2", "--sessions", "1", "-o", str(out)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "does not identify" in line]
    assert len(warned) == 1 and "Traceback" not in proc.stderr


def test_check_design_prints_one_games_se_and_the_games_for_the_tolerance() -> None:
    proc = in_process("check-design", "horizon", "--model", "info-bonus", "--json")
    out = json.loads(proc.stdout)
    assert out["sessions"] == 1 and out["refusal"] is not None
    for row in out["parameters"]:
        assert row["se"] > 0 and not row["identified"] and not row["identifiable"]
        assert row["sessions_to_identify"] >= 1
        assert row["sessions_for_tolerance"] is None or row["sessions_for_tolerance"] >= row["sessions_to_identify"]
    assert out["not_identified"] == [r["parameter"] for r in out["parameters"] if r["sessions_for_tolerance"] is None]


@pytest.mark.slow
def test_the_shipped_table_is_the_checks() -> None:
    """Every experiment x model (``python -m cogtestbed.identifiability`` rewrites the table)."""
    from cogtestbed.identified_sessions import SHIPPED

    assert json.loads(SHIPPED.read_text()) == shipped_table()


def test_ten_horizon_games_identify_no_parameter_by_the_rule() -> None:
    """The default subject (10 games) is of full rank, but no parameter's SE over the population is within the
    rule's tolerance: the check calls none identified there (a hierarchical fit recovers r 0.1-0.5 at 10 games)."""
    check = identifiability("horizon", "info-bonus", sessions=10, seed=0)
    assert check.unidentified == [] and not check.table["identified"].any()
    assert (check.table["se_ratio"] > 1.0).all()


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="measured at the suggested 963 games (seed 0): r = 0.98 bonus_h1, 0.95 "
                   "bonus_h6, 0.99 temperature_h1, 0.99 temperature_h6, 0.95 bias (every identified one >= 0.7), "
                   "but max R-hat 1.014 > 1.01 (min bulk ESS 153) at 4 chains x 1000 draws: the sampler needs "
                   "more draws")
def test_thirty_horizon_subjects_fitted_hierarchically_at_the_checks_size() -> None:
    """30 subjects of the check's suggested games, true values from the check's population, fitted
    hierarchically: every parameter the check calls identified recovered (r >= 0.7) with R-hat <= 1.01
    (``benchmarks/studies/horizon_hierarchical.py --games 0`` prints the figures)."""
    from study_scripts import load_study

    out = load_study("horizon_hierarchical").measure(subjects=30, games=0, draws=1000, chains=4, seed=0)
    print(out)
    assert out["max_rhat"] <= 1.01
    assert any(out["identified"].values())
    for name, identified in out["identified"].items():
        if identified:
            assert out["r"][name] >= 0.7, (name, out["r"][name], out["games"])

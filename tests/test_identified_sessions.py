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
from cogtestbed.identifiability import DEFAULT_CHAINS, identifiability, shipped_rule, shipped_table
from cogtestbed.identified_sessions import (
    IdentificationWarning,
    refusal_line,
    rule_line,
    shipped_sessions,
    unidentified_at,
)

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


def test_the_horizon_default_subject_is_of_full_rank(horizon_check) -> None:
    default = ct.get_experiment("horizon").subject_sessions
    assert default >= horizon_check.smallest_sessions > 5
    table = ct.simulate("horizon", "info-bonus", subjects=2, seed=0)
    assert table.groupby("subject")["session"].nunique().tolist() == [default] * 2
    assert refusal_line("horizon", "info-bonus", default) is None


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


def test_run_warns_before_a_call_is_bought(tmp_path) -> None:
    """An LLM run of the horizon task fits the LLM as one subject of its runs (games): too few for the default
    model's parameters is said once, before anything is bought, naming the option that adds games; a run of an
    experiment whose subjects are one session each (instrumental learning) says nothing."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimate = ct.run("horizon", llm="openai:gpt-4o-mini", subjects=3, seed=1, output=tmp_path / "h",
                          dry_run=True)
        ct.run("instrumental-learning", llm="openai:gpt-4o-mini", subjects=1, seed=1, output=tmp_path / "i",
               dry_run=True)
    said = [str(w.message) for w in caught if issubclass(w.category, IdentificationWarning)]
    assert estimate["subjects"] == 3 and len(said) == 1
    assert said[0].startswith("horizon / info-bonus: a subject of 3 session(s) does not identify bonus_h1")
    assert "(--subjects 10)" in said[0] and "before" not in said[0]


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
    assert out["default_subject"].startswith("default subject (1000 session(s)")


@pytest.mark.slow
def test_the_shipped_table_is_the_checks() -> None:
    """Every experiment x model (``python -m cogtestbed.identifiability`` rewrites the table)."""
    from cogtestbed.identified_sessions import SHIPPED

    assert json.loads(SHIPPED.read_text()) == shipped_table()


def test_ten_horizon_games_identify_no_parameter_by_the_rule() -> None:
    """Ten games are of full rank, but no parameter's SE over the population is within the rule's tolerance: the
    check calls none identified there, and ``fit`` says so in one line."""
    check = identifiability("horizon", "info-bonus", sessions=10, seed=0)
    assert check.unidentified == [] and not check.table["identified"].any()
    assert (check.table["se_ratio"] > 1.0).all()
    line = rule_line("horizon", "info-bonus", 10)
    assert line is not None and "\n" not in line
    assert f"does not identify {', '.join(check.parameters)};" in line
    assert f"suggests {check.suggested_sessions} sessions" in line and "bonus_h6" in line.split("up to 1000")[-1]


def test_the_horizon_default_subject_is_judged_by_the_rule() -> None:
    """The default subject (1000 games, CogBench's) is at least the check's suggested size: it identifies every
    parameter the rule reaches within 1000 games, and ``check-design`` names the one it does not with its ratio."""
    check = identifiability("horizon", "info-bonus", sessions=1, seed=0)
    default = ct.get_experiment("horizon").subject_sessions
    assert check.default_sessions == default == 1000 and check.suggested_sessions <= default
    assert check.identified_at(default) == [p for p in check.parameters if p not in check.not_identified]
    assert check.not_identified == ["bonus_h6"] and 0.5 < check.ratio_at(default)["bonus_h6"] < 0.6
    line = check.default_subject()
    assert line is not None
    assert "identifies bonus_h1, temperature_h1, temperature_h6, bias; not bonus_h6 (se_ratio" in line
    assert line in check.summary().splitlines()
    assert identifiability("horizon", "info-bonus", design={"reward_sd": 8.0}, draws=0).default_subject() is None


def test_fit_names_what_the_rule_does_not_identify() -> None:
    table = ct.simulate("horizon", "info-bonus", subjects=3, sessions=10, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ct.fit("horizon", table, "info-bonus", unit="subject")
    ours = [str(w.message) for w in caught if issubclass(w.category, IdentificationWarning)]
    assert len(ours) == 1 and "by the design check's rule" in ours[0] and "a subject of 10 session(s)" in ours[0]
    assert "expect r under 0.89" in ours[0]


def test_recover_names_what_the_rule_does_not_identify() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ct.recover("horizon", "info-bonus", subjects=2, reps=1, runs=10, seed=0, workers=1)
    ours = [str(w.message) for w in caught if issubclass(w.category, IdentificationWarning)]
    assert len(ours) == 1 and "a subject of 10 session(s) does not identify bonus_h1" in ours[0]
    assert ours[0].endswith("recovered anyway (expect r under 0.89 for them)")


@pytest.mark.slow
def test_the_shipped_rule_table_is_the_checks() -> None:
    """``python -m cogtestbed.identifiability rule`` rewrites it."""
    from cogtestbed.identified_sessions import SHIPPED_RULE

    assert json.loads(SHIPPED_RULE.read_text()) == shipped_rule()


@pytest.mark.slow
def test_thirty_horizon_subjects_of_ten_games_fitted_hierarchically() -> None:
    """30 subjects of 10 games, true values from the check's population, fitted hierarchically: every parameter the
    check calls identified at 10 games is recovered (r >= 0.7), R-hat <= 1.01 for every variable, the fit tells the
    user in one line which parameters 10 games do not identify, and ``az.plot_ppc`` on the fit names the way
    (``benchmarks/studies/horizon_hierarchical.py --games 10`` prints the figures)."""
    import arviz as az
    from study_scripts import load_study

    from cogtestbed.inference.hierarchical_idata import NoPosteriorPredictive

    out, fit = load_study("horizon_hierarchical").run(subjects=30, games=10, draws=1000, chains=4, seed=0)
    print(out)
    assert out["max_rhat"] <= 1.01
    missing = [p for p, ok in out["identified"].items() if not ok]
    for name in out["identified"]:
        if name not in missing:
            assert out["r"][name] >= 0.7, (name, out["r"][name])
    if missing:
        assert len(out["told"]) == 1 and f"a subject of 10 session(s) does not identify {', '.join(missing)}" \
            in out["told"][0]
    with pytest.raises(NoPosteriorPredictive, match="posterior_predictive=True"):
        az.plot_ppc(fit.idata)
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

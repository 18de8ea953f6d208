"""Issue 68 item 5: one population gate, stated once, applied to shipping and to use; implausible
group parameters and malformed population files refused naming the field."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import cogtestbed as ct
from cogtestbed.errors import DataError, InputError
from cogtestbed.inference.population import (
    POPULATION_GATE,
    PopulationWarning,
    gate_failures,
    load_population,
    shipped_directory,
)

SHIPPED = shipped_directory() / "spektor2024-all.json"


def pop_draws(data: dict) -> int:
    return len(next(iter(data["sigma"].values())))


def _edited(tmp_path: Path, name: str, **fields: object) -> Path:
    data = json.loads(SHIPPED.read_text())
    data.update(fields)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def test_the_gate_is_r_hat_and_divergences_and_the_shipped_spektor_fit_passes_it() -> None:
    pop = load_population("human:spektor2024-all")
    assert gate_failures(pop.fit) == [] and pop.gate_warning() is None
    assert pop.fit["min_ess_tail"] < 400  # the ESS floor of a fit's own verdict is not the gate
    assert gate_failures({"max_rhat": 1.641, "divergences": 0}) == ["max R-hat 1.641 (must be <= 1.01)"]
    assert gate_failures({"max_rhat": 1.0, "divergences": 3}) == ["3 divergent transitions (must be 0)"]
    from cogtestbed.api.population import describe_population

    lines = describe_population(pop)
    assert f"  population gate ({POPULATION_GATE}): passed" in lines
    assert not any("NOT converged" in line for line in lines)


def test_using_a_population_that_fails_the_gate_warns_in_one_line(tmp_path: Path) -> None:
    data = json.loads(SHIPPED.read_text())
    path = _edited(tmp_path, "rhat", fit={**data["fit"], "max_rhat": 1.641, "unconverged_allowed": True})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        load_population(path)  # reading it (population show) is no use
        assert not seen
        load_population(path, use=True)
    assert len(seen) == 1 and seen[0].category is PopulationWarning
    assert "max R-hat 1.641 (must be <= 1.01)" in str(seen[0].message)


def test_implausible_group_parameters_are_refused_naming_the_field(tmp_path: Path) -> None:
    data = json.loads(SHIPPED.read_text())
    path = _edited(tmp_path, "mu", mu={**data["mu"], "theta": [1e6] * len(data["mu"]["theta"])})
    with pytest.raises(InputError, match=r"field mu\.theta: .*outside theta's range \[0, 20\]"):
        ct.recover("risky-choice", "prospect-theory", subjects=10, reps=1, population=str(path), workers=1)


def test_a_malformed_population_file_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises((InputError, DataError), match="field subjects: "):
        load_population(_edited(tmp_path, "bad", subjects="many"))
    data = json.loads(SHIPPED.read_text())
    with pytest.raises((InputError, DataError), match=r"field sigma\.alpha: a population SD draw is negative"):
        load_population(_edited(tmp_path, "neg", sigma={**data["sigma"], "alpha": [-1.0] * pop_draws(data)}))


def test_simulate_recover_power_and_plan_from_a_failing_population_each_warn_once_naming_the_diagnostic(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The four commands that use a population (issue 68 item 5) print one warning line naming the failed
    diagnostic: through the command line, each stopped cheaply after the population is read (a refusal, or
    one tiny study)."""
    from cogtestbed.cli import run_cli

    data = json.loads(SHIPPED.read_text())
    path = str(_edited(tmp_path, "rhat", fit={**data["fit"], "max_rhat": 1.641, "unconverged_allowed": True}))
    commands = {
        "simulate": ["simulate", "risky-choice", "--agent", "prospect-theory", "--population", path, "--subjects",
                     "2", "-o", str(tmp_path / "sim.parquet")],
        "recover": ["recover", "--model", "prospect-theory", "--population", path, "--subjects", "-1", "--reps", "1"],
        "power": ["power", "prospect-theory", "--effect", "lambda=0.5", "--population", path, "--subjects", "2",
                  "--sims", "1", "--workers", "1"],
        # an effect past the population's bounds is refused after its draws are read (other --trials, before)
        "plan": ["plan", "risky-choice", "--model", "prospect-theory", "--effect", "lambda=100", "--llm",
                 "openai:gpt-4o-mini", "--population", path, "-o", str(tmp_path / "p")],
    }
    from cogtestbed.cli import warning_line

    for name, argv in commands.items():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            code = run_cli(argv)
        err = capsys.readouterr().err  # recover and plan stop at a refusal after reading the population
        gate = [w for w in seen if w.category is PopulationWarning]
        assert len(gate) == 1 and code == (0 if name in ("simulate", "power") else 2), (name, code, err)
        printed = warning_line(gate[0].message, PopulationWarning, "", 0)  # as the command line prints it
        assert printed.count("\n") == 1 and printed.startswith("warning: PopulationWarning: population "), name
        assert "fails the population gate" in printed and "max R-hat 1.641 (must be <= 1.01)" in printed, name

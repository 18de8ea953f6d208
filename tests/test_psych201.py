"""Psych-201 transcripts in and out (issue 52 item 1): the reader's refusals, the Shahar two-step
parser, the detection through every table-reading function, and export → import."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.api.core import read_table
from cogtestbed.data.psych201 import Psych201Error, read_records
from cogtestbed.data.psych201_twostep import parse_shahar2019

PSYCH201 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "psych201"
SHAHAR = PSYCH201 / "shahar2019twosteptask" / "prompts.jsonl.zip"
DEZFOULI = PSYCH201 / "dezfouli2019" / "prompts.jsonl.zip"
#: Tests that read the published files skip where ../shared/data is not beside the checkout.
NEEDS_SHAHAR = pytest.mark.skipif(not SHAHAR.is_file(), reason="the Psych-201 file is not in ../shared/data")
NEEDS_DEZFOULI = pytest.mark.skipif(not DEZFOULI.is_file(), reason="the Psych-201 file is not in ../shared/data")

HEADER = ("You will make choices in a two-stage decision task.\n"
          "In the first stage, you will choose between two options: M and Z.\n"
          "Your first-stage choice will lead to one of two second-stage states: S or A.\n"
          "In each second-stage state, you will make another choice between two options: R and W.\n"
          "Each second-stage choice can result in either receiving a reward (1) or no reward (0).\n"
          "The reward probabilities of second-stage options change slowly over time.\n"
          "Your goal is to maximize your rewards over 121 trials.\n\n")


def _trial(first: str, state: str, second: str, reward: bool) -> str:
    outcome = "a reward" if reward else "no reward"
    return (f"You are presented with first-stage options M and Z. You choose <<{first}>>. This leads to state "
            f"{state}. In state {state}, you choose <<{second}>>. You receive {outcome}.\n")


def _shahar_record(participant: str = "7") -> dict[str, object]:
    # M commonly reaches A (3 of 4 trials), so Z commonly reaches S
    trials = [("M", "A", "R", True), ("M", "S", "W", False), ("Z", "S", "W", True), ("M", "A", "W", False)]
    text = HEADER + "".join(_trial(*t) for t in trials[:2])
    text += ("\n\nYou are now back 18 months later to undertake the same task again but this time over 201 "
             "new trials.\n\n")
    text += "".join(_trial(*t) for t in trials[2:])
    return {"text": text, "experiment": "shahar2019twosteptask/TST_nspn.csv", "participant": participant,
            "RTs": [500, 600, 510, 610, 520, 620, 530, 630]}


def _write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def shahar_head(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 6 participants of the Shahar file, as .jsonl."""
    with zipfile.ZipFile(SHAHAR) as archive:
        lines = archive.read("prompts.jsonl").decode().splitlines()[:6]
    path = tmp_path_factory.mktemp("shahar") / "head.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_shahar_parser_maps_letters_back_to_the_tasks_states_and_actions() -> None:
    from cogtestbed.data.psych201 import record_of

    rows = parse_shahar2019(record_of(_shahar_record(), 1, "x"))
    # action: M=0, Z=1; planet: the state option k commonly reaches (M->A: A is planet 0, S planet 1)
    assert rows["action"].tolist() == [0, 0, 1, 0]
    assert rows["planet"].tolist() == [0, 1, 1, 0]
    assert rows["common"].tolist() == [True, False, True, True]
    assert rows["action2"].tolist() == [0, 1, 1, 1]
    assert rows["reward"].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert rows["session"].tolist() == [0, 0, 1, 1] and rows["trial"].tolist() == [0, 1, 0, 1]
    assert rows["rt1_ms"].tolist() == [500, 510, 520, 530] and rows["rt2_ms"].tolist() == [600, 610, 620, 630]


@NEEDS_SHAHAR
def test_a_few_shahar_participants_import_and_number_in_id_order(shahar_head: Path, tmp_path: Path) -> None:
    table, source = read_table("two-step", shahar_head)
    assert source == "psych201"
    assert table["subject"].nunique() == 6 and table["agent"].astype(str).eq("human").all()
    # the file's participants (1..6) in id order, whatever the line order
    lines = shahar_head.read_text().splitlines()
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("\n".join(lines[::-1]) + "\n")
    again, _ = read_table("two-step", shuffled)
    pd.testing.assert_frame_equal(table, again)
    per = table.groupby("subject")["participant"].first().tolist()
    assert per == sorted(per, key=int)
    # every participant's rare transitions are the minority (the design's 0.3)
    rare = 1 - table.groupby("subject")["common"].mean()
    assert ((rare > 0.15) & (rare < 0.45)).all()


@NEEDS_SHAHAR
@pytest.mark.slow
def test_shahar_imports_as_554_two_step_subjects() -> None:
    table, _ = read_table("two-step", SHAHAR)
    assert table["subject"].nunique() == 554
    n = table.groupby("subject").size()
    assert n.min() == 240 and n.max() == 320
    assert set(table["session"].unique()) == {0, 1}


@pytest.mark.parametrize(("content", "says"), [
    ("not json\n", "line 1: not JSON"),
    ('{"text": "no marks", "experiment": "a/b", "participant": 1}\n', "marks no choice"),
    ('{"text": "<<A>>", "participant": 1}\n', "missing field(s) experiment"),
    ('[1, 2]\n', "is a JSON object"),
    ('{"text": "<<A>>", "experiment": "a/b", "participant": 1}\n'
     '{"text": "<<B>>", "experiment": "a/b", "participant": 1}\n', "two different records (lines 1 and 2)"),
])
def test_the_reader_refuses_what_it_cannot_read_in_one_line(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(Psych201Error, match=None) as err:
        read_records(path)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_an_identical_repeated_record_is_read_once_and_zips_are_read(tmp_path: Path) -> None:
    rec = _shahar_record()
    path = _write_jsonl(tmp_path / "p.jsonl", [rec, rec])
    assert len(read_records(path)) == 1
    archive = tmp_path / "p.jsonl.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("prompts.jsonl", json.dumps(rec) + "\n")
        z.writestr("__MACOSX/._prompts.jsonl", "junk")
    assert read_records(archive)[0].participant == "7"
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as z:
        z.writestr("a.jsonl", json.dumps(rec) + "\n")
        z.writestr("b.jsonl", json.dumps(rec) + "\n")
    with pytest.raises(Psych201Error, match="holds one .jsonl file, found 2"):
        read_records(two)


def test_a_participant_the_parser_cannot_read_is_named(tmp_path: Path) -> None:
    rec = _shahar_record()
    rec["text"] = str(rec["text"]).replace("You choose <<M>>. This leads to state A. In state A, you choose <<R>>.",
                                           "You choose <<Q>>. This leads to state A. In state A, you choose <<R>>.")
    path = _write_jsonl(tmp_path / "p.jsonl", [rec])
    with pytest.raises(Psych201Error, match=r"p.jsonl line 1 \(participant 7\): trial 1 names an option"):
        read_table("two-step", path, "psych201")


@NEEDS_DEZFOULI
def test_dezfouli_is_refused_with_its_reason() -> None:
    with pytest.raises(Psych201Error, match="'dezfouli' is not read as instrumental-learning: .*12 timed blocks"):
        read_table("instrumental-learning", DEZFOULI, "psych201")


@NEEDS_SHAHAR
def test_the_cli_reads_psych201_and_refuses_in_one_line(shahar_head: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli

    assert run_cli(["metrics", str(shahar_head), "--json"]) == 0  # detected: experiment and source
    out = json.loads(capsys.readouterr().out)
    assert out["experiment"] == "two-step" and out["source"] == "psych201" and out["metrics"]["n_runs"] == 6
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x", "experiment": "shahar2019twosteptask/a", "participant": 1}\n')
    assert run_cli(["metrics", "two-step", str(bad), "--from", "psych201"]) == 2
    err = capsys.readouterr().err.strip()
    assert "marks no choice" in err and len(err.splitlines()) == 1


@NEEDS_SHAHAR
def test_human_participants_are_never_pooled(shahar_head: Path) -> None:
    import cogtestbed as ct
    from cogtestbed.api.fit_units import choose_units

    table, _ = read_table("two-step", shahar_head)
    fitted, units = choose_units(ct.get_experiment("two-step"), table)  # two-step pools an agent's runs
    assert units.unit == "subject" and units.n_units == 6 and "participants" in units.reason
    pd.testing.assert_frame_equal(fitted, table)


@NEEDS_SHAHAR
@pytest.mark.slow
def test_fit_reads_psych201(shahar_head: Path) -> None:
    import cogtestbed as ct

    table, _ = read_table("two-step", shahar_head)
    fits = ct.fit(None, table[table["subject"] < 2], model="model-free")  # each participant its own unit
    assert len(fits) == 2 and np.isfinite(fits["alpha"]).all() and fits.attrs["units"]["unit"] == "subject"


# ----------------------------------------------------------------------------- export -> import
def _round_trip(table: pd.DataFrame, experiment: str, path: Path) -> pd.DataFrame:
    import cogtestbed as ct

    ct.export(table, to="psych201", output=path, experiment=experiment, force=True)
    back, source = read_table(experiment, path)  # detected
    assert source == "psych201"
    return back


def _canonical(table: pd.DataFrame) -> pd.DataFrame:
    from cogtestbed.schema import canonical_rows

    return canonical_rows(table).reset_index(drop=True)


@pytest.mark.parametrize("experiment", [
    "bart", pytest.param("belief-coherence", marks=pytest.mark.slow), "collider", "horizon", "instrumental-learning",
    pytest.param("magnitude", marks=pytest.mark.slow), "probabilistic-reasoning", "restless-bandit", "revealed-belief",
    "risky-choice", "temporal-discounting", "two-step"])
def test_a_synthetic_session_exported_and_reimported_is_identical(experiment: str, tmp_path: Path) -> None:
    import cogtestbed as ct

    spec = ct.get_experiment(experiment)
    agent = spec.declared_agents[0]
    # invalid answers too (lapse), so that a missing action and valid=False travel
    table = ct.simulate(experiment, agent, subjects=1, seed=3, lapse_invalid=0.2)
    back = _round_trip(table.sample(frac=1.0, random_state=1), experiment, tmp_path / "t.jsonl")
    pd.testing.assert_frame_equal(back, _canonical(table))


def test_every_registered_experiment_is_in_the_round_trip_test() -> None:
    import cogtestbed as ct

    covered = {"bart", "belief-coherence", "collider", "horizon", "instrumental-learning", "magnitude",
               "probabilistic-reasoning", "restless-bandit", "revealed-belief", "risky-choice", "temporal-discounting",
               "two-step"}
    missing = set(ct.experiments()) - covered
    for name in sorted(missing):  # an experiment added since: its one-subject round trip here
        table = ct.simulate(name, ct.get_experiment(name).declared_agents[0], subjects=1, seed=0)
        records = ct.export(table, to="psych201", experiment=name)
        from cogtestbed.data.psych201 import decode_export, record_of

        back = decode_export([record_of(r, i + 1) for i, r in enumerate(records)], name, "x.jsonl")
        pd.testing.assert_frame_equal(back, _canonical(table))


def test_the_round_trip_holds_over_seeds_agents_and_row_orders(tmp_path: Path) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import cogtestbed as ct

    cheap = ["two-step", "instrumental-learning", "bart", "horizon", "restless-bandit", "temporal-discounting"]

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.sampled_from(cheap), st.integers(0, 2**31 - 1), st.integers(1, 3), st.floats(0.0, 0.5),
           st.integers(0, 2**31 - 1))
    def check(experiment: str, seed: int, subjects: int, lapse: float, order: int) -> None:
        spec = ct.get_experiment(experiment)
        agents = spec.declared_agents
        table = ct.simulate(experiment, agents[seed % len(agents)], subjects=subjects, seed=seed, lapse_invalid=lapse)
        shuffled = table.sample(frac=1.0, random_state=order)
        records = ct.export(shuffled, to="psych201", experiment=experiment)
        assert records == ct.export(table, to="psych201", experiment=experiment)  # row order changes nothing
        back = _round_trip(shuffled, experiment, tmp_path / "h.jsonl")
        pd.testing.assert_frame_equal(back, _canonical(table))

    check()


@NEEDS_SHAHAR
def test_an_imported_human_table_exports_and_reads_back(shahar_head: Path, tmp_path: Path) -> None:
    import cogtestbed as ct

    table, _ = read_table("two-step", shahar_head)
    back = _round_trip(table, "two-step", tmp_path / "human.jsonl.zip")
    pd.testing.assert_frame_equal(back, _canonical(table))
    assert ct.metrics("two-step", back)["metrics"] == ct.metrics("two-step", table)["metrics"]


def test_a_table_that_would_not_read_back_is_refused_and_nothing_written(tmp_path: Path) -> None:
    import cogtestbed as ct

    table = ct.simulate("two-step", "hybrid", subjects=1, seed=0)
    table["odd"] = [{i} for i in range(len(table))]  # sets: no JSON form
    out = tmp_path / "odd.jsonl"
    with pytest.raises(ct.DataError, match="would not read back from Psych-201 unchanged.*nothing written"):
        ct.export(table, to="psych201", output=out, experiment="two-step")
    assert not out.exists()


def test_the_export_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import cogtestbed as ct
    from cogtestbed.cli import run_cli

    trials = tmp_path / "t.parquet"
    ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=4, output=trials)
    out = tmp_path / "t.jsonl"
    assert run_cli(["export", str(trials), "--to", "psych201", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    record = json.loads(lines[0])
    assert len(lines) == 2 and record["experiment"] == "cogtestbed/instrumental-learning"
    assert record["participant"] == "0" and len(re.findall("<<(.*?)>>", record["text"])) == 96
    assert run_cli(["export", str(trials), "--to", "psych201", "-o", str(out)]) == 2  # exists, no --force
    assert "exists" in capsys.readouterr().err
    assert run_cli(["export", str(trials), "--to", "csv", "-o", str(out), "--force"]) == 2
    assert run_cli(["export", str(trials), "--to", "psych201", "-o", str(tmp_path / "t.txt")]) == 2


@NEEDS_SHAHAR
def test_the_shahar_study_prints_cogbenchs_metric_with_its_intervals(shahar_head: Path) -> None:
    from study_scripts import load_study

    import cogtestbed as ct

    study = load_study("psych201_shahar")
    table, _ = read_table("two-step", shahar_head)
    out = study.cogbench_part(table, boot=200, seed=0)
    pooled = ct.metrics("two-step", table)["metrics"]["model_basedness"]
    assert out["participants"] == 6 and out["model_basedness"] == round(pooled, 4)
    lo, hi = out["bootstrap_95"]
    assert lo < out["model_basedness"] < hi and out["ols_95"][0] < out["model_basedness"] < out["ols_95"][1]
    assert study.import_summary(table)["participants"] == 6


@NEEDS_SHAHAR
def test_the_shahar_studys_mle_part_pins_w_on_six_participants(shahar_head: Path) -> None:
    """The hybrid model's per-participant MLE of the first 6 Shahar participants (the figures of
    ``psych201_shahar.py --part mle`` on a head of the file): w and the NLL at the optimum, which
    participants are flagged and why, and the study's summary of w with its bootstrap intervals.
    Tolerances: the NLL at an optimum to 1e-9 (a few ulps); w to 1e-5 (scipy's L-BFGS-B, another
    path, lands within 1e-6 of it); the study's 3- and 4-decimal roundings to 2e-3."""
    from study_scripts import load_study

    import cogtestbed as ct

    table, _ = read_table("two-step", shahar_head)
    fits = ct.fit("two-step", table, model="hybrid")
    assert fits["w"].tolist() == pytest.approx([0.1245098, 0.3590276, 0.7901209, 0.99508, 1.0, 0.6472198], rel=1e-5)
    assert fits["nll"].tolist() == pytest.approx([357.6843893644, 256.4937081232, 337.6896538197, 340.5236636113,
                                                  411.2610536145, 226.2019220077], rel=1e-9)
    assert fits["n_obs"].tolist() == [638, 634, 638, 640, 626, 640]
    # flagged where an interval covers the whole range or is open at one bound (w's [0, 0.598]: "at most")
    assert fits["identified"].tolist() == [False] * 6
    reasons = fits["null_reason"].tolist()
    assert reasons[0].startswith("one-sided interval: w's likelihood-ratio 95% interval [0, 0.598")
    assert reasons[1].startswith("one-sided interval: w's likelihood-ratio 95% interval [0, 0.745")
    assert reasons[2].startswith("unbounded interval: lam's") and reasons[3].startswith("unbounded interval: lam's")
    assert reasons[4].startswith("unbounded interval: w's likelihood-ratio 95% interval covers its whole range")
    assert reasons[5].startswith("one-sided interval: lam's likelihood-ratio 95% interval [0.1769")
    assert (fits["w_lo95"] <= fits["w"]).all() and (fits["w"] <= fits["w_hi95"]).all()
    out = load_study("psych201_shahar").mle_part(table, None, boot=200, seed=0)
    assert {k: out[k] for k in ("participants", "with_estimate", "flagged", "flagged_w",
                                "flagged_lam_or_other", "converged", "boot")} == {
        "participants": 6, "with_estimate": 6, "flagged": 6, "flagged_w": 3, "flagged_lam_or_other": 3,
        "converged": 6, "boot": 200}
    pinned = {"w_median": 0.719, "w_median_95": [0.359, 0.9975], "w_mean": 0.653, "w_mean_95": [0.425, 0.8808],
              "w_iqr": [0.431, 0.944], "share_w_at_0": 0.0, "share_w_at_1": 0.167}
    assert out["w_median_unflagged"] is None  # every participant flagged: no median, not NaN
    for key, value in pinned.items():
        assert out[key] == pytest.approx(value, abs=2e-3), key
    assert out["w_median"] == round(float(np.median(fits["w"])), 3)  # every participant's estimate, flagged too


def test_a_psych201_file_two_experiments_parsers_claim_is_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Where a second experiment's psych201 importer also declares a parser of the Shahar data set,
    detection names both and asks for the experiment (registry.experiment_of), in one line; the
    CLI exits 2; naming the experiment reads it."""
    import dataclasses

    from cogtestbed import registry
    from cogtestbed.cli import run_cli
    from cogtestbed.data.spektor2024 import parse_spektor2024
    from cogtestbed.errors import InputError
    from cogtestbed.experiments._psych201 import psych201_importer

    risky = registry.get_experiment("risky-choice")
    claims_shahar = dataclasses.replace(risky, importers={**risky.importers, **psych201_importer(
        "risky-choice", {"spektor2024lossaversion": parse_spektor2024, "shahar2019twosteptask": parse_shahar2019})})
    real = registry.get_experiment
    monkeypatch.setattr(registry, "get_experiment",
                        lambda name: claims_shahar if name == "risky-choice" else real(name))
    path = _write_jsonl(tmp_path / "p.jsonl", [_shahar_record()])
    with pytest.raises(InputError) as err:
        registry.experiment_of(path=path)
    assert str(err.value) == (f"{path} holds several experiments (risky-choice, two-step); "
                              "name one with `experiment`")
    assert run_cli(["metrics", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "holds several experiments (risky-choice, two-step)" in lines[0]
    assert registry.experiment_of("two-step", path) == "two-step"  # named: no detection


@NEEDS_DEZFOULI
def test_a_psych201_file_no_experiment_reads_is_named_with_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli

    assert run_cli(["metrics", str(DEZFOULI)]) == 2
    err = capsys.readouterr().err
    assert "data set 'dezfouli', which no experiment reads" in err and "12 timed blocks" in err


def test_any_text_in_a_column_survives_the_round_trip() -> None:
    """LLM answers hold any text: newlines, U+2028, quotes, <<marks>>, the sentence's own words."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    import cogtestbed as ct
    from cogtestbed.data.psych201 import CHOICE, decode_export, record_of

    table = ct.simulate("two-step", "hybrid", subjects=1, seed=0)
    tricky = st.one_of(st.text(), st.sampled_from(["You give no answer. You receive 3.", "<<1>>", "a\u2028b",
                                                   "x, planet 1, ", '"', "\\", "Session 0:", "Trial 1: "]))

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.one_of(st.none(), tricky), min_size=len(table), max_size=len(table)))
    def check(texts: list[str | None]) -> None:
        t = table.assign(raw_response=pd.array(texts, dtype="string"))
        records = ct.export(t, to="psych201", experiment="two-step")
        assert len(CHOICE.findall(records[0]["text"])) == int(t["action"].notna().sum())  # only the choices
        back = decode_export([record_of(r, 1) for r in records], "two-step", "x.jsonl")
        pd.testing.assert_frame_equal(back, _canonical(t))

    check()


def test_a_damaged_export_is_refused_in_one_line(tmp_path: Path) -> None:
    import cogtestbed as ct

    out = tmp_path / "t.jsonl"
    ct.export(ct.simulate("two-step", "hybrid", subjects=1, seed=0), to="psych201", output=out)
    record = json.loads(out.read_text())
    damages = (("You receive 1.0.", "You receive one."), ("planet 1,", "planet [1,"), ("Session 0:", "Session x:"))
    for old, new in damages:
        damaged = tmp_path / "d.jsonl"
        damaged.write_text(json.dumps({**record, "text": record["text"].replace(old, new, 1)}) + "\n")
        with pytest.raises(Psych201Error) as err:
            read_table("two-step", damaged, "psych201")
        assert "d.jsonl line 1 (participant 0)" in str(err.value) and "\n" not in str(err.value)

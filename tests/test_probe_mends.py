"""Mends from probing the Psych-201, export, risky-choice and adaptive features as a new user would:
each test failed before its fix (documented command, defect named on a failed detection, BOM,
output in a folder not yet made, a typo in plan --adaptive's --precision refused before simulating)."""

from __future__ import annotations

import json
import re
import shlex
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cogtestbed as ct
from cogtestbed.cli import app
from cogtestbed.cli.app import USER_ERRORS
from cogtestbed.errors import InputError
from cogtestbed.registry import experiment_of, read_trials

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

#: One transcript sentence of Spektor et al.'s data set (the importer's parser reads it).
SPEKTOR_TEXT = ("The lotteries' names are S and Q.\n\nSession 1:\n"
                "The outcomes of lottery S are -9 with 50% chance and 16 with 50% chance. The outcomes of "
                "lottery Q are -15 with 50% chance and 22 with 50% chance. You choose <<Q>>.\n")
RECORD = {"text": SPEKTOR_TEXT, "experiment": "spektor2024lossaversion/exp1.csv", "participant": 1}


def test_documented_risky_choice_simulate_runs(tmp_path):
    """docs/risky-choice.md's simulate line, as written (fewer subjects), writes its table."""
    block = re.search(r"```bash\n(.*?)```", (ROOT / "docs/risky-choice.md").read_text(), re.S)
    assert block is not None
    line = next(x for x in block.group(1).splitlines() if x.startswith("cogtestbed simulate"))
    args = shlex.split(line)[1:]
    args[args.index("--subjects") + 1] = "2"
    args[args.index("-o") + 1] = str(tmp_path / "pt.parquet")
    result = runner.invoke(app, args)
    assert result.exception is None, result.output
    table = read_trials(tmp_path / "pt.parquet")
    assert set(table["param_lambda"]) == {2.0}


def _refusal(path: Path) -> str:
    with pytest.raises(InputError) as err:
        experiment_of(None, path)
    return str(err.value)


def test_failed_detection_names_the_psych201_defect(tmp_path):
    """A .jsonl/.zip no importer recognises is refused with what is wrong with it as Psych-201,
    not 'name it with --experiment' (metrics takes no --experiment)."""
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as z:
        z.writestr("a.jsonl", json.dumps(RECORD) + "\n")
        z.writestr("b.jsonl", json.dumps(RECORD) + "\n")
    assert "holds one .jsonl file, found 2" in _refusal(two)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(RECORD, ensure_ascii=False).replace("lottery S", "lotterý S").encode("latin-1"))
    assert "not UTF-8" in _refusal(latin)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert "holds no Psych-201 record" in _refusal(empty)
    result = runner.invoke(app, ["metrics", str(two)])
    assert isinstance(result.exception, USER_ERRORS) and "--experiment" not in str(result.exception)


def test_jsonl_with_byte_order_mark_reads(tmp_path):
    """A UTF-8 file saved with a byte-order mark (Windows editors) reads as the same records."""
    plain, bom = tmp_path / "plain.jsonl", tmp_path / "bom.jsonl"
    plain.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert experiment_of(None, bom) == "risky-choice"
    spec = ct.get_experiment("risky-choice")
    a, b = (spec.importer("psych201").load(p) for p in (plain, bom))
    assert a.equals(b) and len(a) == 1 and int(a["action"].iloc[0]) == 1


def test_outputs_in_a_folder_not_yet_made(tmp_path):
    """simulate -o and export -o into a folder that does not exist yet create it (as run -o does),
    instead of an errno naming the internal claim file."""
    out = tmp_path / "new" / "deeper" / "t.parquet"
    result = runner.invoke(app, ["simulate", "risky-choice", "-a", "random", "--subjects", "1", "-o", str(out)])
    assert result.exception is None, result.output
    records = ct.export(out, to="psych201", output=tmp_path / "other" / "t.jsonl")
    assert len(records) == 1 and (tmp_path / "other" / "t.jsonl").is_file()
    assert not [p for p in (tmp_path / "other").iterdir() if p.name.startswith(".")]


def test_output_folder_made_for_a_refused_export_is_removed(tmp_path):
    """A refusal after the claim leaves no folder behind it made."""
    table = ct.simulate("risky-choice", "random", subjects=1, seed=0)
    dest = tmp_path / "made" / "t.jsonl"
    from cogtestbed.outputs import claim_file

    with pytest.raises(RuntimeError), claim_file(dest):
        raise RuntimeError("the body failed")
    assert not (tmp_path / "made").exists()
    assert len(ct.export(table, to="psych201", output=dest)) == 1


def test_plan_adaptive_precision_typo_refused_before_simulating(monkeypatch):
    """plan --adaptive --precision NAME=H with a NAME the model lacks is refused at once (it used to
    simulate 200 subjects first: 77 s at the machine's load)."""
    import cogtestbed.planning.kinds.adaptive.adaptive as design

    def never(*args, **kwargs):
        raise AssertionError("simulated before checking --precision")

    monkeypatch.setattr(design, "compare", never)
    with pytest.raises(InputError, match="`precision` nope: the adaptive model has parameters k, temperature"):
        ct.plan("temporal-discounting", adaptive="k", precision="nope=0.5")


def _doc_commands(doc: str, prefix: str) -> list[list[str]]:
    """The ``prefix`` command lines of ``doc``'s code blocks (continuations joined, comments dropped)."""
    text = (ROOT / "docs" / doc).read_text()
    lines = []
    for block in re.findall(r"```(?:bash)?\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith(prefix):
                lines.append(shlex.split(line, comments=True)[1:])
    return lines


@pytest.mark.parametrize("doc", ["human-data.md", "risky-choice.md"])
def test_documented_psych201_fits_run(doc, tmp_path):
    """Every ``cogtestbed fit`` line of the Psych-201 pages runs as written, on a one-participant
    Psych-201 file of the same experiment in place of the data set (human-data.md said
    ``fit two-step FILE --model hybrid``: fit takes MODEL PATH, and has no --model)."""
    commands = _doc_commands(doc, "cogtestbed fit ")
    assert commands
    for i, args in enumerate(commands):
        path = next(a for a in args if "psych201" in a)
        experiment = "two-step" if "shahar" in path else "risky-choice"
        small = tmp_path / f"{i}.jsonl"
        ct.export(ct.simulate(experiment, "random", subjects=1, seed=i), to="psych201", output=small)
        args = [str(small) if a == path else a for a in args]
        args[args.index("-o") + 1] = str(tmp_path / f"fit{i}")
        result = runner.invoke(app, args)
        assert result.exception is None, (args, result.output)

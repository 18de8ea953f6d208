"""Any Psych-201 file (issue 70): read as a transcript table and written back byte for byte,
validated (a seeded corpus of defective files, each class several ways, caught in full; the real
files report only documented true defects), identity (record, participant), and input limits on
what is read (a zip bomb refused in under a second with memory flat)."""

from __future__ import annotations

import gzip
import json
import struct
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cogtestbed.data.psych201 import InputLimitError, read_content, read_records, select_records
from cogtestbed.data.psych201_table import transcript_bytes, transcript_table, write_transcript_table
from cogtestbed.data.psych201_validate import KINDS, validate_psych201
from cogtestbed.errors import InputError

PSYCH201 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "psych201"
#: The shared files, and the true defects each reports (docs/human-data.md, "Validating"): Busch's
#: RTs are strings; the long transcripts are over the evaluation's 32,768 characters.
REAL = {
    "franke2024bayesian": set(), "thoma2025problearn": set(), "busch2024_stroop": {"rt_string"},
    "spektor2019contexteffects": {"too_long"}, "spektor2024lossaversion": {"too_long"},
    "dezfouli2019": {"too_long"}, "shahar2019twosteptask": {"too_long"},
}
#: Files over ~2 s to read on the 2-core machine run with the slow tests.
SLOW = {"spektor2024lossaversion", "dezfouli2019", "shahar2019twosteptask", "thoma2025problearn"}


def _real(name: str) -> Path:
    path = PSYCH201 / name / "prompts.jsonl.zip"
    if not path.is_file():
        pytest.skip("the Psych-201 file is not in ../shared/data")
    return path


def _params() -> list[object]:
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in REAL]


@pytest.mark.parametrize("name", _params())
def test_every_shared_file_reads_round_trips_and_validates(name: str, tmp_path: Path) -> None:
    path = _real(name)
    table = transcript_table(path)
    content = read_content(path)
    assert transcript_bytes(table) == content  # byte for byte
    records = read_records(path)
    assert table.groupby(["record", "participant"]).ngroups == len(records)
    assert (table["choice"] >= 0).all() and table["chosen"].notna().all()
    # written to a zip and read again: the same content and table
    out = tmp_path / "back.jsonl.zip"
    write_transcript_table(table, out)
    assert read_content(out) == content
    pd.testing.assert_frame_equal(transcript_table(out), table)
    kinds = {d.kind for d in validate_psych201(path)}
    assert kinds == REAL[name]


def test_the_tables_columns_on_a_small_file(tmp_path: Path) -> None:
    lines = [
        {"text": "Choose between two options: L and R.\nYou press <<R>>. Then <<L>>.\n", "experiment": "ds/a.csv",
         "participant": 1, "RTs": [512, 830]},
        {"text": "The options' names are J, G, and F. You choose <<G>>!", "experiment": "ds/b.csv",
         "participant": "1", "cond": "x"},
        {"text": "no choice here \u00e9", "experiment": "ds/b.csv", "participant": "2"},
    ]
    path = tmp_path / "p.jsonl"
    raw = "\ufeff" + json.dumps(lines[0]) + "\r\n\n" + json.dumps(lines[1], ensure_ascii=False) + "\n" \
        + json.dumps(lines[2], ensure_ascii=False, separators=(",", ":")) + "\n\n"
    path.write_text(raw, encoding="utf-8")
    table = transcript_table(path)
    assert transcript_bytes(table) == raw.encode("utf-8")
    assert table["record"].tolist() == ["ds/a.csv", "ds/a.csv", "ds/b.csv", "ds/b.csv"]
    assert table["participant"].tolist() == ["1", "1", "1", "2"] and table["line"].tolist() == [1, 1, 3, 4]
    assert table["choice"].tolist() == [0, 1, 0, -1]
    assert table["chosen"].tolist()[:3] == ["R", "L", "G"] and table["chosen"].isna().tolist()[3]
    assert table["before"].tolist()[:3] == ["Choose between two options: L and R.\nYou press ", ". Then ",
                                            "The options' names are J, G, and F. You choose "]
    assert table["after"].tolist()[1] == ".\n" and table["after"].tolist()[2] == "!"
    np.testing.assert_array_equal(table["rt"].to_numpy()[:2], [512.0, 830.0])
    assert np.isnan(table["rt"].to_numpy()[2:]).all()
    assert [list(o) if o is not None else None for o in table["options"]] == [["L", "R"], ["L", "R"],
                                                                                 ["J", "G", "F"], None]
    # an edited choice is written into the text
    edited = table.copy()
    edited.loc[0, "chosen"] = "L"
    back = json.loads(transcript_bytes(edited).decode("utf-8-sig").splitlines()[0])
    assert back["text"].startswith("Choose between two options: L and R.\nYou press <<L>>. Then <<L>>.")


def test_a_scored_table_exports_with_its_scores_as_metadata(tmp_path: Path) -> None:
    import cogtestbed as ct

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"text": "A <<x>> B <<y>>.", "experiment": "d/e", "participant": 3}) + "\n")
    table = ct.transcript_table(path).assign(psych201_nll=[1.5, np.nan])
    out = tmp_path / "scored.jsonl"
    records = ct.export(table, to="psych201", output=out)
    assert records[0]["cogtestbed_scores"] == {"psych201_nll": [1.5, None]}
    assert json.loads(out.read_text())["text"] == "A <<x>> B <<y>>."
    # a Psych-201 file of a data set no experiment models exports as it is
    copy = tmp_path / "copy.zip"
    ct.export(path, to="psych201", output=copy)
    assert read_content(copy) == path.read_bytes()


# ----------------------------------------------------------------------------- identity
def test_a_repeated_id_is_refused_naming_its_records_and_selected_by_record(tmp_path: Path) -> None:
    rows = [{"text": f"<<{k}>>", "experiment": f"olschewski2024/study0{k}", "participant": 1} for k in range(1, 4)]
    rows.append({"text": "<<z>>", "experiment": "olschewski2024/study01", "participant": 2})
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    records = read_records(path)
    assert len(records) == 4
    with pytest.raises(InputError) as err:
        select_records(records, ["1"])
    assert "participant 1 is in 3 records (study01:1, study02:1, study03:1)" in str(err.value)
    assert [r.text for r in select_records(records, ["study02:1", "olschewski2024/study03:1", "2"])] == [
        "<<2>>", "<<3>>", "<<z>>"]
    with pytest.raises(InputError, match="participant 9 is not in the transcripts"):
        select_records(records, ["9"])


# ----------------------------------------------------------------------------- input limits
def _zip_bomb(path: Path, size: int = 1 << 30, chunk: int = 1 << 20) -> None:
    """A zip whose one member inflates to ``size`` bytes of newlines: a deflate stream of one
    full-flush block repeated (each block stands alone), ~1 KB of it per MiB inflated."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = b"\n" * chunk
    first = z.compress(data) + z.flush(zlib.Z_FULL_FLUSH)
    block = z.compress(data) + z.flush(zlib.Z_FULL_FLUSH)
    body = first + block * (size // chunk - 1) + z.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(size // chunk):
        crc = zlib.crc32(data, crc)
    name = b"prompts.jsonl"
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(body), size, len(name), 0) + name
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(body), size, len(name),
                          0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(body), 0)
    path.write_bytes(local + body + central + end)


def _traced(call: Callable[[], object]) -> tuple[BaseException | None, int]:
    """(what ``call`` raised, its peak of traced memory): memory flat shows the input is never inflated, whatever
    the machine's load (no test times it)."""
    tracemalloc.start()
    try:
        call()
        raised = None
    except Exception as exc:  # noqa: BLE001 - the test asserts on it
        raised = exc
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return raised, peak


def test_a_zip_bomb_is_refused_with_memory_flat(tmp_path: Path) -> None:
    import cogtestbed as ct
    import cogtestbed.api.transcripts  # noqa: F401 - the modules loaded: their import is not the refusal's time
    import cogtestbed.llm_adapters.runs.transcript  # noqa: F401

    bomb = tmp_path / "prompts.jsonl.zip"
    _zip_bomb(bomb)
    assert bomb.stat().st_size < 1.1e6
    with zipfile.ZipFile(bomb) as archive:
        assert archive.getinfo("prompts.jsonl").file_size == 1 << 30
    for call in (lambda: read_records(bomb), lambda: transcript_table(bomb),
                 lambda: ct.transcript_nll("hf:no-such-model", bomb)):
        raised, peak = _traced(call)
        assert isinstance(raised, InputLimitError), raised
        assert "1,024 MiB uncompressed" in str(raised) and "input limit of 50 MiB" in str(raised)
        assert peak < 8 * 2**20, peak
    defects = validate_psych201(bomb)
    assert [d.kind for d in defects] == ["input_limit"]


def test_reading_stops_at_the_limit_whatever_a_header_declares(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A gzip declares no size before its end: reading stops once the limit has come out of it."""
    monkeypatch.setenv("COGTESTBED_MAX_INPUT_MB", "4")
    bomb = tmp_path / "prompts.jsonl.gz"
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = (b" " * 65535 + b"\n") * 16  # blank lines of 64 KiB
    parts = [z.compress(data) + z.flush(zlib.Z_FULL_FLUSH)]
    block = z.compress(data) + z.flush(zlib.Z_FULL_FLUSH)
    bomb.write_bytes(parts[0] + block * 255)  # 256 MiB, no trailer needed to refuse
    raised, peak = _traced(lambda: read_records(bomb))
    assert isinstance(raised, InputLimitError) and "uncompressed content is over the input limit of 4 MiB" in str(
        raised)
    assert peak < 8 * 2**20
    small = tmp_path / "ok.jsonl.gz"
    small.write_bytes(gzip.compress(json.dumps({"text": "<<a>>", "experiment": "x", "participant": 1}).encode()))
    assert read_records(small)[0].text == "<<a>>"
    plain = tmp_path / "big.jsonl"
    plain.write_bytes(b"\n" * (5 << 20))
    assert [d.kind for d in validate_psych201(plain)] == ["input_limit"]


# ----------------------------------------------------------------------------- the validator's corpus
GOOD = {"text": "Choose between two options: L and R.\nYou press <<R>>. You press <<L>>. You press <<R>>.",
        "experiment": "corpus/exp1.csv", "participant": "1", "RTs": [612, 845, 730]}


def _record(**changes: object) -> dict[str, object]:
    return {**GOOD, **changes}


def _seeded_corpus(rng: np.random.Generator) -> list[tuple[str, list[bytes]]]:
    """(kind, the defective line(s)) — every class of :data:`KINDS` that a line carries, several ways."""
    text = str(GOOD["text"])
    ms = [int(v) for v in rng.integers(300, 3000, 3)]
    enc = lambda r: json.dumps(r).encode()  # noqa: E731
    return [
        ("rt_string", [enc(_record(RTs=[str(v) for v in ms]))]),
        ("rt_string", [enc(_record(RTs=[ms[0], str(ms[1]), ms[2]]))]),
        ("rt_string", [enc(_record(RTs=[f"{v}.0" for v in ms]))]),
        ("rt_length", [enc(_record(RTs=ms[:2]))]),
        ("rt_length", [enc(_record(RTs=[*ms, ms[0]]))]),
        ("rt_length", [enc(_record(RTs=[]))]),
        ("rt_unit", [enc(_record(RTs=[round(v / 1000, 3) for v in ms]))]),
        ("rt_unit", [enc(_record(RTs=[1, 2, 1]))]),
        ("rt_unit", [enc(_record(RTs=[0.61, 0.9, 1.7]))]),
        ("rt_type", [enc(_record(RTs=",".join(map(str, ms))))]),
        ("rt_type", [enc(_record(RTs=[ms[0], {"ms": ms[1]}, ms[2]]))]),
        ("rt_type", [enc(_record(RTs=[ms[0], True, ms[2]]))]),
        ("rt_value", [enc(_record(RTs=[ms[0], float("nan"), ms[2]]))]),
        ("rt_value", [enc(_record(RTs=[ms[0], ms[1], float("inf")]))]),
        ("rt_value", [enc(_record(RTs=[-5, ms[1], ms[2]]))]),
        ("rt_value", [enc(_record(RTs=[ms[0], 1e308, ms[2]]))]),
        ("markers_missing", [enc(_record(text=text.replace("<<", "").replace(">>", ""), RTs=[]))]),
        ("markers_missing", [enc(_record(text=text.replace("<<", "[").replace(">>", "]"), RTs=[]))]),
        ("markers_missing", [enc(_record(text=text.replace("<<", "<").replace(">>", ">"), RTs=[]))]),
        ("markers_unbalanced", [enc(_record(text=text + " You press <<L."))]),
        ("markers_unbalanced", [enc(_record(text=text.replace("<<L>>", "L>>", 1)))]),
        ("markers_unbalanced", [enc(_record(text=text.replace("<<R>>. You", "<<R>. You", 1)))]),
        ("markers_nested", [enc(_record(text=text.replace("<<L>>", "<<L <<R>> >>", 1)))]),
        ("markers_nested", [enc(_record(text=text.replace("<<R>>", "<<<<R>>>>", 1)))]),
        ("markers_nested", [enc(_record(text=text.replace("<<L>>", "<<a <<L>>", 1)))]),
        ("choice_empty", [enc(_record(text=text.replace("<<L>>", "<<>>", 1)))]),
        ("choice_empty", [enc(_record(text=text.replace("<<L>>", "<< >>", 1)))]),
        ("choice_empty", [enc(_record(text=text.replace("<<R>>", "<<\n>>")))]),
        ("condition_leak", [enc(_record(condition="static_high", text=text + " Condition: static_high."))]),
        ("condition_leak", [enc(_record(text=text.replace("Choose", "cond_2: Choose")))]),
        ("condition_leak", [enc(_record(diagnosis="Depression", text="Depression group. " + text))]),
        ("option_outside", [enc(_record(text=text.replace("<<L>>", "<<Q>>", 1)))]),
        ("option_outside", [enc(_record(text="The options' names are J, G, and F. You choose <<G>>, <<K>>, <<J>>."))]),
        ("option_outside", [enc(_record(text="Keys:\nX: red\nI: blue\nYour answer <<X>>. <<I>>. <<Y>>."))]),
        ("duplicate_participant", [enc(GOOD), enc(_record(text=text.replace("<<L>>", "<<R>>")))]),
        ("duplicate_participant", [enc(GOOD), enc(_record(RTs=ms))]),
        ("duplicate_participant", [enc(GOOD), enc(_record(age="31"))]),
        ("too_long", [enc(_record(text="Choose between two options: L and R.\n" + "x" * 33000 + text[37:]))]),
        ("too_long", [enc(_record(text=text + " ." * 20000))]),
        ("too_long", [enc(_record(text=text.replace("\n", "\n" + "y\n" * 17000)))]),
        ("utf8", [enc(GOOD)[:40] + b"\xff" + enc(GOOD)[40:]]),
        ("utf8", [enc(GOOD)[:50] + b"\x80\x80" + enc(GOOD)[50:]]),
        ("utf8", [enc(GOOD).replace(b"Choose", b"Ch\xc3oose")]),
        ("json", [enc(GOOD)[:-5]]),
        ("json", [b"text: <<R>>"]),
        ("json", [enc(GOOD).replace(b'", "', b'" "', 1)]),
        ("record", [enc({k: v for k, v in GOOD.items() if k != "text"})]),
        ("record", [enc(_record(participant=[1]))]),
        ("record", [enc(_record(experiment=""))]),
    ]


def test_the_seeded_corpus_of_defects_is_caught_in_full(tmp_path: Path) -> None:
    rng = np.random.default_rng(70)
    corpus = _seeded_corpus(rng)
    caught = 0
    good = json.dumps({**GOOD, "participant": "0"}).encode()
    for k, (kind, bad) in enumerate(corpus):
        path = tmp_path / f"case{k}.jsonl"
        lines = [good, *bad]
        at = int(rng.integers(0, 2))  # the defective line(s) after or before a good record
        ordered = lines if at == 0 else [*bad, good]
        path.write_bytes(b"\n".join(ordered) + b"\n")
        defects = validate_psych201(path)
        wanted_line = (len(bad) + 1) if at == 0 else len(bad)
        hit = [d for d in defects if d.kind == kind and d.line == wanted_line]
        # a broken mark also misplaces the marks after it: what follows from it may be listed too
        follows = {"rt_length", "option_outside", "markers_nested", "markers_unbalanced"} if kind.startswith(
            "markers") else {"rt_length"}
        others = {d.kind for d in defects} - {kind, *follows}
        assert hit and not others, (kind, bad[-1][:120], defects)
        caught += 1
    assert caught == len(corpus)
    classes = {kind for kind, _ in corpus}
    assert classes == set(KINDS) - {"input_limit", "archive"}  # those two: the limit tests, below
    assert all(sum(kind == c for kind, _ in corpus) >= 3 for c in classes)


def test_the_file_level_defects(tmp_path: Path) -> None:
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as z:
        z.writestr("a.jsonl", json.dumps(GOOD) + "\n")
        z.writestr("b.jsonl", json.dumps(GOOD) + "\n")
    notzip = tmp_path / "not.zip"
    notzip.write_bytes(b"PK junk")
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("readme.txt", "x")
    for path in (two, notzip, empty):
        assert [d.kind for d in validate_psych201(path)] == ["archive"]


def test_the_validate_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(_record(participant="2", RTs=["1", "2", "3"])) + "\n")
    assert run_cli(["validate", str(path)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 2 and out[0].startswith(
        f"{path}:2 (participant 2 of corpus/exp1.csv): RTs[0]: rt_string: 3 of 3 RTs")
    assert "rt_unit" in out[1]
    assert run_cli(["validate", str(path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [d["kind"] for d in doc["defects"]] == ["rt_string", "rt_unit"] and doc["defects"][0]["line"] == 2
    assert doc["defects"][0]["record"] == "corpus/exp1.csv"
    clean = tmp_path / "c.jsonl"
    clean.write_text(json.dumps(GOOD) + "\n")
    assert run_cli(["validate", str(clean)]) == 0
    assert run_cli(["validate", str(tmp_path / "missing.jsonl")]) == 2


def test_the_packages_own_exports_validate_clean(tmp_path: Path) -> None:
    import cogtestbed as ct

    out = tmp_path / "ts.jsonl"
    ct.export(ct.simulate("two-step", "hybrid", subjects=2, seed=0, lapse_invalid=0.1), to="psych201", output=out)
    assert validate_psych201(out) == []

"""Psych-201's own evaluation measure in ``transcript-nll`` (issue 70): the truncation rule, the
response spans, agreement with an independent straightforward implementation (one plain
transformers forward pass over the whole text, written here) — on hf:tiny-random always, on
SmolLM2-135M on three real data sets with the slow tests — the batched key-value-cache path, the
three measures per participant, identity (record, participant), progress and resuming."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import cogtestbed as ct  # noqa: E402
from cogtestbed.llm_adapters.runs.psych201_eval import (  # noqa: E402
    prefix_groups,
    safe_truncate,
    score_texts,
)

PSYCH201 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "psych201"


def independent_span_nll(model: Any, tokenizer: Any, text: str, max_length: int) -> list[float]:
    """The evaluation as its script states it, written plainly: cut the text to ``max_length``
    characters (its fixes, no open mark, no space before ``>>``), tokenize, label the tokens between
    each ``" <<"`` and the next ``">>"``, one forward pass over everything, cross-entropy, and the
    sum over each run of labelled tokens."""
    t = text[:max_length].replace("<<skip>>", "<<skip>>.").replace("<<-", "<< -").replace(
        "<<think>>", "<< think>>").replace("More Details >>", "More Details ->")
    if t.count("<<") > t.count(">>"):
        t = t[:t.rfind("<<")]
    import re

    t = re.sub(r"\s+(?=>>)", "", t)
    ids = tokenizer([t], truncation=False)["input_ids"][0]
    left = tokenizer(" <<", add_special_tokens=False).input_ids
    right = tokenizer(">>", add_special_tokens=False).input_ids

    def find(seq: list[int], sub: list[int], start: int) -> int:
        for j in range(start, len(seq) - len(sub) + 1):
            if seq[j:j + len(sub)] == sub:
                return j
        return -1

    labels = [-100] * len(ids)
    i = 0
    while (s := find(ids, left, i)) != -1:
        a = s + len(left)
        e = find(ids, right, a)
        e = len(ids) if e == -1 else e
        labels[a:e] = ids[a:e]
        i = e + len(right)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].double()
    target = torch.tensor(labels[1:])
    nll = torch.nn.functional.cross_entropy(logits, target, reduction="none", ignore_index=-100)
    spans, total, count = [], 0.0, 0
    for k in range(len(target)):
        if int(target[k]) != -100:
            total, count = total + float(nll[k]), count + 1
        elif count:
            spans.append(total)
            total, count = 0.0, 0
    if count:
        spans.append(total)
    return spans


def test_the_truncation_rule() -> None:
    assert safe_truncate("a <<b>> c <<d>> e", 13) == "a <<b>> c "  # no open mark left
    assert safe_truncate("x <<b >> y", 100) == "x <<b>> y"  # no space before >>
    assert safe_truncate("<<skip>> <<-1>>", 100) == "<<skip>>. << -1>>"
    assert safe_truncate("See More Details >> now <<A>>", 100) == "See More Details -> now <<A>>"
    text = "Q <<A>>. " * 10
    assert safe_truncate(text, len(text)) == text


@pytest.fixture(scope="module")
def tiny() -> Any:
    from cogtestbed.llm_adapters.clients.hf import HFClient

    return HFClient.tiny_random()


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    head = "You choose between two options, J and K, many times. Each time you see the reward.\n"
    out = []
    for k in range(n):
        body = "".join(f"Round {t}: you choose <<{'JK'[int(rng.integers(2))]}>> and win {int(rng.integers(9))}.\n"
                       for t in range(3 + k))
        out.append((head if k < n - 1 else "Other instructions here.\n") + body)
    return out


def test_batched_cached_scoring_equals_the_independent_implementation(tiny: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import cogtestbed.llm_adapters.runs.psych201_eval as evaluation

    rng = np.random.default_rng(70)
    texts = _texts(rng, 4)
    ids = [tiny.tokenizer(t)["input_ids"] for t in texts]
    assert sorted(len(g) for g in prefix_groups(ids, 10_000)) == [1, 1, 1, 1]  # shared openings too short
    monkeypatch.setattr(evaluation, "MIN_SHARED_FRACTION", 0.0)
    groups = prefix_groups(ids, 10_000)
    assert sorted(len(g) for g in groups) == [1, 3]  # three share the instructions: one prefix pass
    for share in (True, False):
        prepared = score_texts(tiny, texts, max_length=10_000, share_prefix=share)
        for text, p in zip(texts, prepared, strict=True):
            ref = independent_span_nll(tiny.hf_model, tiny.tokenizer, text, 10_000)
            assert len(ref) == len(p.nll) > 0
            np.testing.assert_allclose(p.nll, ref, rtol=0, atol=1e-9)
    cut = score_texts(tiny, texts[:1], max_length=120)[0]
    np.testing.assert_allclose(cut.nll, independent_span_nll(tiny.hf_model, tiny.tokenizer, texts[0], 120), atol=1e-9)
    assert 0 < len(cut.nll) < texts[0].count("<<")


def _file(tmp_path: Path, texts: list[str], experiments: list[str], ids: list[str]) -> Path:
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"text": t, "experiment": e, "participant": i}) + "\n"
                            for t, e, i in zip(texts, experiments, ids, strict=True)))
    return path


def test_the_three_measures_per_participant_and_identity(tiny: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    texts = _texts(rng, 3)
    path = _file(tmp_path, texts, ["ds2024/study01", "ds2024/study02", "ds2024/study02"], ["1", "1", "2"])
    with pytest.raises(ct.errors.InputError, match=r"participant 1 is in 2 records \(study01:1, study02:1\)"):
        ct.transcript_nll(tiny, path, participants=["1"])
    choices = ct.transcript_nll(tiny, path, participants=["study02:1", "2"])
    assert list(choices.columns[:3]) == ["participant", "record", "data_set"]
    assert set(choices["record"]) == {"ds2024/study02"} and set(choices["participant"]) == {"1", "2"}
    summary = ct.participant_nll(choices)
    assert list(summary["record"]) == ["ds2024/study02"] * 2
    for row, text in zip(summary.itertuples(), texts[1:], strict=True):
        ref = independent_span_nll(tiny.hf_model, tiny.tokenizer, text, 32768)
        assert row.n_spans == len(ref) == text.count("<<")
        assert row.psych201_nll == pytest.approx(sum(ref), abs=1e-9)
        assert row.centaur_nll == pytest.approx(sum(ref) / len(ref), abs=1e-9)
        one = choices[choices["participant"] == row.participant]
        assert row.nll_raw == pytest.approx(-one["logp_raw"].mean(), abs=1e-12)
    # the per-choice span NLL equals the per-choice raw NLL where both score the same tokens
    same = choices[choices["psych201_tokens"] == choices["n_tokens"]]
    assert len(same) > 0
    np.testing.assert_allclose(same["psych201_nll"], -same["logp_raw"], atol=1e-9)


def test_progress_and_resuming_after_a_kill(tiny: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogtestbed.progress import reporting

    texts = _texts(np.random.default_rng(2), 4)
    path = _file(tmp_path, texts, ["d/e"] * 4, ["1", "2", "3", "4"])
    checkpoint = tmp_path / "done.jsonl"
    lines: list[str] = []
    with reporting(lambda line, final: lines.append(line), terminal=True):
        full = ct.transcript_nll(tiny, path, measures=["psych201"], checkpoint=checkpoint)
    assert lines[-1].startswith("transcript-nll: 4/4 participants scored")
    assert len(checkpoint.read_text().splitlines()) == 4
    # killed after two participants (the last line cut short): the rerun scores only the others
    kept = checkpoint.read_text().splitlines()[:2]
    checkpoint.write_text("\n".join(kept) + "\n" + kept[0][:40])
    import cogtestbed.llm_adapters.runs.transcript_scoring as scoring

    scored: list[str] = []
    real = scoring.score_texts

    def counted(client: Any, texts: list[str], **kwargs: Any) -> Any:
        scored.extend(texts or [job.text for job in kwargs["jobs"]])
        return real(client, texts, **kwargs)

    monkeypatch.setattr(scoring, "score_texts", counted)
    again = ct.transcript_nll(tiny, path, measures=["psych201"], checkpoint=checkpoint)
    assert len(scored) == len(set(scored)) == 2 and set(scored) < set(texts)  # the two not in the checkpoint
    pd.testing.assert_frame_equal(again, full)
    assert len(checkpoint.read_text().splitlines()) == 4  # the cut line dropped, the two others appended
    assert "logp_raw" not in full.columns  # only the measure asked


def _options(text: str, chosen: list[str]) -> list[tuple[str, ...]]:
    """J or K at every choice, and a third option of several tokens at the first (its own pass)."""
    return [("J", "K", "JKJ K") if k == 0 else ("J", "K") for k in range(len(chosen))]


def test_one_pass_per_participant_gives_every_measure_as_the_original_path(tiny: Any, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 70, item 5: the three measures from one forward pass per participant (the original
    per-choice path ran a pass of its own besides the evaluation's), values as the original path's."""
    import cogtestbed.llm_adapters.runs.psych201_eval as evaluation
    from cogtestbed.llm_adapters.runs.transcript import transcript_nll as original

    monkeypatch.setattr(evaluation, "MIN_SHARED_FRACTION", 0.0)  # the shared opening's path too
    texts = _texts(np.random.default_rng(5), 4)
    path = _file(tmp_path, texts, ["d/e"] * 4, ["1", "2", "3", "4"])
    calls: list[int] = []
    hook = tiny.hf_model.get_decoder().register_forward_hook(lambda m, a, kw, out: calls.append(1), with_kwargs=True)
    try:
        choices = ct.transcript_nll(tiny, path, options=None, share_prefix=False)
        assert len(calls) == 4  # one pass each, every measure
        calls.clear()
        with_options = ct.transcript_nll(tiny, path, options=_options, share_prefix=True)
        # the shared opening, the three remainders batched, the one alone; the option of several tokens
        # one pass per participant (as the original path gives it)
        assert len(calls) == 3 + 4
    finally:
        hook.remove()
    for table, opts in ((choices, None), (with_options, _options)):
        for k, text in enumerate(texts):
            ref = original(tiny, text, options=opts)
            ours = table[table["participant"] == str(k + 1)].reset_index(drop=True)
            np.testing.assert_allclose(ours["logp_raw"], ref["logp_raw"], rtol=0, atol=1e-9)
            np.testing.assert_allclose(ours["logp_norm"], ref["logp_norm"], rtol=0, atol=1e-9, equal_nan=True)
            assert ours["context_tokens"].tolist() == ref["context_tokens"].tolist()
            spans = independent_span_nll(tiny.hf_model, tiny.tokenizer, text, 32768)
            np.testing.assert_allclose(ours["psych201_nll"], spans, rtol=0, atol=1e-9)
    assert with_options["logp_norm"].notna().all() and choices["logp_norm"].isna().all()
    # the evaluation's text cut short: the choices past the cut get a pass of their own, same values
    cut = ct.transcript_nll(tiny, path, options=None, max_length=150, participants=["1"])
    np.testing.assert_allclose(cut["logp_raw"], original(tiny, texts[0])["logp_raw"], rtol=0, atol=1e-9)
    assert cut["psych201_nll"].isna().sum() > 0


def test_onednn_kernels_give_the_same_values(tiny: Any, tmp_path: Path) -> None:
    import copy

    from cogtestbed.llm_adapters.clients.hf import HFClient

    texts = _texts(np.random.default_rng(6), 3)
    path = _file(tmp_path, texts, ["d/e"] * 3, ["1", "2", "3"])
    with pytest.raises(ct.errors.InputError, match="onednn needs a float32 model on the CPU"):
        ct.transcript_nll(tiny, path, onednn=True)  # the float64 model of the exact tests
    tiny32 = HFClient(copy.deepcopy(tiny.hf_model).float(), tiny.tokenizer, "tiny-random-float32", chat=False)
    plain = ct.participant_nll(ct.transcript_nll(tiny32, path))
    fast = ct.participant_nll(ct.transcript_nll(tiny32, path, onednn=True))
    for col in ("psych201_nll", "centaur_nll", "nll_raw"):
        np.testing.assert_allclose(fast[col], plain[col], rtol=0, atol=1e-4)
        assert (fast[col] > 0).all()
    assert "forward" not in vars(tiny32.hf_model.get_decoder().layers[0].mlp.up_proj)  # restored after


@pytest.mark.slow
@pytest.mark.parametrize("name", ["franke2024bayesian", "thoma2025problearn", "spektor2019contexteffects"])
def test_smollm2_equals_the_independent_implementation_on_real_data_sets(smollm2: Any, name: str) -> None:
    """SmolLM2-135M, two participants of each data set, the text cut at 1,500 characters (the
    evaluation's own parameter; keeps the test short): per participant within 1e-4 nats, every
    measure from one pass (issue 70, item 5) — the evaluation's as the plain implementation, the
    per-choice NLL as the original per-choice path."""
    from cogtestbed.data.psych201 import read_records
    from cogtestbed.llm_adapters.runs.transcript import transcript_nll as original

    path = PSYCH201 / name / "prompts.jsonl.zip"
    if not path.is_file():
        pytest.skip("the Psych-201 file is not in ../shared/data")
    records = read_records(path)[:2]
    choices = ct.transcript_nll(smollm2, path, participants=[r.label for r in records], measures=["psych201"],
                                max_length=1500)
    summary = ct.participant_nll(choices)
    for rec in records:
        ref = independent_span_nll(smollm2.hf_model, smollm2.tokenizer, rec.text, 1500)
        row = summary[summary["participant"] == rec.participant].iloc[0]
        assert row["n_spans"] == len(ref) > 0
        assert abs(row["psych201_nll"] - sum(ref)) < 1e-4
    cut = [(r.participant, safe_truncate(r.text, 1500)) for r in records]
    one = ct.participant_nll(ct.transcript_nll(smollm2, cut, options=None, max_length=1500))
    for (participant, text), row in zip(cut, one.itertuples(), strict=True):
        assert row.participant == participant and row.n_scored_raw > 0
        assert abs(row.nll_raw - -original(smollm2, text)["logp_raw"].mean()) < 1e-4


def test_the_command_selects_by_record_and_writes_the_scores_back(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli
    from cogtestbed.data.psych201 import read_content

    texts = _texts(np.random.default_rng(3), 3)
    path = _file(tmp_path, texts, ["ds2024/exp1.csv", "ds2024/exp2.csv", "ds2024/exp2.csv"], ["1", "1", "2"])
    assert run_cli(["transcript-nll", str(path), "--llm", "hf:tiny-random", "-p", "1"]) == 2
    err = capsys.readouterr().err
    assert "participant 1 is in 2 records (exp1:1, exp2:1)" in err and len(err.strip().splitlines()) == 1
    out = tmp_path / "scored.jsonl"
    assert run_cli(["transcript-nll", str(path), "--llm", "hf:tiny-random", "-p", "exp2:1", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    shown = json.loads(captured.out)
    assert "transcript-nll: 1/1 participants scored" in captured.err
    assert set(shown["measures"]) == {"psych201_nll", "centaur_nll", "nll_raw"}
    (row,) = shown["participants"]
    assert (row["record"], row["participant"], row["data_set"]) == ("ds2024/exp2.csv", "1", "ds2024")
    back = out.read_bytes().splitlines(keepends=True)
    original = read_content(path).splitlines(keepends=True)
    assert back[0] == original[0] and back[2] == original[2]  # records not scored: byte for byte
    scored = json.loads(back[1])
    assert {k: v for k, v in scored.items() if k != "cogtestbed_scores"} == json.loads(original[1])
    sums = scored["cogtestbed_scores"]["psych201_nll"]
    assert len(sums) == texts[1].count("<<") and sum(sums) == pytest.approx(row["psych201_nll"], rel=1e-12)


def test_a_scored_parquet_table_exports_onto_its_file(tiny: Any, tmp_path: Path) -> None:
    from cogtestbed.cli import run_cli

    texts = _texts(np.random.default_rng(4), 2)
    path = _file(tmp_path, texts, ["d/e", "d/e"], ["1", "2"])
    table = tmp_path / "scores.parquet"
    assert run_cli(["transcript-nll", str(path), "--llm", "hf:tiny-random", "--measure", "psych201", "-o",
                    str(table)]) == 0
    out = tmp_path / "scored.zip"
    assert run_cli(["export", str(table), "--to", "psych201", "-o", str(out)]) == 0
    from cogtestbed.data.psych201 import read_records

    back = read_records(out)
    assert [r.text for r in back] == texts
    scores = [r.extra["cogtestbed_scores"]["psych201_nll"] for r in back]
    assert [len(s) for s in scores] == [t.count("<<") for t in texts] and all(v > 0 for s in scores for v in s)

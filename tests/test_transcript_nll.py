"""Per-choice log-likelihood of in-process models on marked transcripts (issue 52 item 5):
exact values from a model whose next-token probabilities are known, windows that change nothing
for a context-free model and equal a direct forward pass for a real one, and refusals."""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from cogtestbed.errors import InputError  # noqa: E402
from cogtestbed.llm_adapters.clients.hf import HFClient, build_tiny_random  # noqa: E402
from cogtestbed.llm_adapters.runs.transcript import (  # noqa: E402
    TranscriptError,
    _token_span,
    marked_choices,
    shahar2019_options,
    transcript_nll,
)


class BigramLM(torch.nn.Module):
    """A causal LM whose next-token log-probabilities depend only on the current token:
    ``table[prev]`` (a row of log-probabilities), so every choice's value is known exactly."""

    def __init__(self, table: np.ndarray, context: int) -> None:
        super().__init__()
        self.table = torch.tensor(table, dtype=torch.float64)
        self.config = SimpleNamespace(max_position_embeddings=context)
        self.calls: list[int] = []

    def forward(self, input_ids, use_cache=False, logits_to_keep=None):  # noqa: ANN001, ANN201
        self.calls.append(int(input_ids.shape[1]))
        logits = self.table[input_ids[0]]
        if logits_to_keep is not None:
            logits = logits[logits_to_keep]
        return SimpleNamespace(logits=logits[None])


@functools.cache
def _tokenizer():  # noqa: ANN202
    return build_tiny_random()[1]


def _ids(tok, s: str) -> int:  # noqa: ANN001
    (i,) = tok(s, add_special_tokens=False)["input_ids"]
    return int(i)


def _known_client(context: int = 4096, q: dict[str, float] | None = None) -> tuple[HFClient, dict[str, float]]:
    """A bigram model that after ``<`` puts probability q[x] on each letter x (the rest of the
    row uniform over the other tokens), and is uniform after any other token."""
    tok = _tokenizer()
    vocab = len(tok)
    q = q or {"A": 0.6, "B": 0.1, "C": 0.05}
    table = np.full((vocab, vocab), math.log(1.0 / vocab))
    lt = _ids(tok, "<")
    rest = (1.0 - sum(q.values())) / (vocab - len(q))
    table[lt, :] = math.log(rest)
    for letter, p in q.items():
        table[lt, _ids(tok, letter)] = math.log(p)
    return HFClient(BigramLM(table, context), tok, "bigram", chat=False), q


TEXT = "Q: <<A>>. Q: <<B>>. Q: <<A>>. Q: <<C>>."


def test_known_probabilities_give_exactly_that_nll() -> None:
    client, q = _known_client()
    df = transcript_nll(client, TEXT, options=[("A", "B")] * 3 + [("A", "B", "C")])
    assert list(df["chosen"]) == ["A", "B", "A", "C"]
    np.testing.assert_allclose(df["logp_raw"], np.log([q["A"], q["B"], q["A"], q["C"]]), rtol=0, atol=1e-12)
    expected_norm = [q["A"] / (q["A"] + q["B"]), q["B"] / (q["A"] + q["B"]), q["A"] / (q["A"] + q["B"]),
                     q["C"] / (q["A"] + q["B"] + q["C"])]
    np.testing.assert_allclose(df["logp_norm"], np.log(expected_norm), rtol=0, atol=1e-12)
    assert df["null_reason"].isna().all() and df["norm_null_reason"].isna().all()
    assert (df["n_tokens"] == 1).all()
    assert client.hf_model.calls == [len(client.encode(TEXT))]  # one teacher-forced pass


def test_without_options_only_centaurs_raw_measure() -> None:
    client, q = _known_client()
    df = transcript_nll(client, TEXT)
    np.testing.assert_allclose(df["logp_raw"].iloc[0], math.log(q["A"]), atol=1e-12)
    assert df["logp_norm"].isna().all()
    assert set(df["norm_null_reason"]) == {"no option set for this choice"}


def test_multi_token_option_scored_as_a_sequence() -> None:
    """Option "AB": p(A | <)·p(B | A) = 0.6 · (1/V) under the bigram model; "C" is one token."""
    client, q = _known_client()
    vocab = len(client.tokenizer)
    text = "Q: <<AB>>. Q: <<C>>."
    df = transcript_nll(client, text, options=[("AB", "C"), ("AB", "C")])
    p_ab, p_c = q["A"] / vocab, q["C"]
    np.testing.assert_allclose(df["logp_raw"], np.log([p_ab, p_c]), atol=1e-12)
    np.testing.assert_allclose(df["logp_norm"], np.log([p_ab / (p_ab + p_c), p_c / (p_ab + p_c)]), atol=1e-12)
    assert list(df["n_tokens"]) == [2, 1]


def test_windows_change_nothing_for_a_context_free_model() -> None:
    text = " ".join(f"Q{k}: <<{'AB'[k % 2]}>>." for k in range(40))
    full, _ = _known_client()
    ref = transcript_nll(full, text, options=[("A", "B")] * 40)
    small, _ = _known_client(context=64)
    with pytest.raises(InputError, match="overflow"):
        transcript_nll(small, text)
    win = transcript_nll(small, text, options=[("A", "B")] * 40, overflow="window", min_context=24)
    np.testing.assert_allclose(win["logp_raw"], ref["logp_raw"], atol=1e-12)
    np.testing.assert_allclose(win["logp_norm"], ref["logp_norm"], atol=1e-12)
    later = win[win["window_start"] > 0]
    assert len(later) > 0 and (later["context_tokens"] >= 24).all() and (win["context_tokens"] < 64).all()
    assert max(small.hf_model.calls) <= 64
    cut = transcript_nll(small, text, overflow="truncate")
    inside = cut["null_reason"].isna()
    assert 0 < inside.sum() < 40 and cut.loc[~inside, "logp_raw"].isna().all()
    assert cut.loc[~inside, "null_reason"].str.contains("beyond the model's context").all()
    np.testing.assert_allclose(cut.loc[inside, "logp_raw"], ref.loc[inside, "logp_raw"], atol=1e-12)


def test_window_equals_a_direct_pass_on_a_real_model() -> None:
    """hf:tiny-random (a Llama, float64): a windowed choice's value is log-softmax of one plain
    forward pass over exactly the window's tokens."""
    client = HFClient.tiny_random()
    text = " ".join(f"Machine {k}: <<{'CD'[k % 3 == 0]}>>." for k in range(30))
    df = transcript_nll(client, text, options=[("C", "D")] * 30, overflow="window", window=96, min_context=40)
    ids = client.encode(text)
    row = df[df["window_start"] > 0].iloc[-1]
    start, first = int(row["window_start"]), int(row["window_start"] + row["context_tokens"])
    with torch.no_grad():
        logits = client.hf_model(torch.tensor([ids[start:first]])).logits[0, -1]
    lp = torch.log_softmax(logits.float(), dim=-1)
    c, d = client.encode("C", rendered_chat=True), client.encode("D", rendered_chat=True)
    assert ids[first] == (c if row["chosen"] == "C" else d)[0]
    assert row["logp_raw"] == pytest.approx(float(lp[ids[first]]), abs=1e-6)
    pair = torch.logsumexp(torch.stack([lp[c[0]], lp[d[0]]]), 0)
    assert row["logp_norm"] == pytest.approx(float(lp[ids[first]] - pair), abs=1e-6)


def test_refusals() -> None:
    with pytest.raises(TranscriptError, match="marks no choice"):
        marked_choices("no choice here")
    with pytest.raises(TranscriptError, match="unbalanced"):
        marked_choices("a <<A>> and << b")
    client, _ = _known_client()
    with pytest.raises(TranscriptError, match="not among its options"):
        transcript_nll(client, TEXT, options=[("B", "C")] * 4)
    with pytest.raises(InputError, match="option sets for 4"):
        transcript_nll(client, TEXT, options=[("A", "B")])
    with pytest.raises(InputError, match="overflow must be"):
        transcript_nll(client, TEXT, overflow="slide")  # type: ignore[arg-type]


def test_token_span_refuses_merged_choices() -> None:
    assert _token_span([(0, 2), (2, 3), (3, 5)], 2, 3) == (1, 2)
    assert _token_span([(0, 3), (3, 5)], 2, 3) is None  # '<<A' one token
    assert _token_span([(0, 2), (2, 4)], 2, 3) is None  # 'A>' one token


def test_shahar_option_sets() -> None:
    text = ("In the first stage, you will choose between two options: M and Z.\nYour first-stage choice will "
            "lead to one of two second-stage states: S or A.\nIn each second-stage state, you will make another "
            "choice between two options: R and W.\n\nYou are presented with first-stage options M and Z. You "
            "choose <<Z>>. This leads to state S. In state S, you choose <<W>>. You receive no reward.\n")
    assert shahar2019_options(text, ["Z", "W"]) == [("M", "Z"), ("R", "W")]


def test_option_tokens_read_from_the_line_equal_the_whole_prefix() -> None:
    """The option's tokens are read from the choice's own line when its tokens there are the
    transcript's; they equal those of re-tokenizing the whole text before the choice."""
    from cogtestbed.llm_adapters.runs.transcript import _option_tokens, _tokenize

    tok = _tokenizer()
    text = "Casino 1.\n" + "".join(f"Machine {k}: Q: <<{'AB'[k % 2]}>>. A: <<C>>.\n" for k in range(6))
    ids, offsets = _tokenize(tok, text)
    for c in marked_choices(text):
        first = next(k for k, (a, _) in enumerate(offsets) if a == c.start)
        for option in ("A", "B", "C", "AB"):
            fast = _option_tokens(tok, text, c, option, ids, offsets, first)
            whole, whole_offsets = _tokenize(tok, text[:c.start] + option + ">>")
            span = _token_span(whole_offsets, c.start, c.start + len(option))
            assert span is not None and fast == whole[span[0]:span[1]]
    client, q = _known_client()
    df = transcript_nll(client, text, options=[("A", "B"), ("C", "AB")] * 6)
    np.testing.assert_allclose(df["logp_norm"].iloc[:2], np.log([q["A"] / (q["A"] + q["B"]),
                                                                 q["C"] / (q["C"] + q["A"] / len(tok))]), atol=1e-12)

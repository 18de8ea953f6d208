"""Revealed belief with a real model: the recorded distribution is the softmax over the outcome set
computed directly from the model's logits (the tiny local model, rebuilt here; and the same
through the local OpenAI-compatible server with echo + logprobs)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("openai")

from cogtestbed.environments.revealed import RevealedBeliefEnv, RevealedDesign, continuations  # noqa: E402
from cogtestbed.llm_adapters import LLMAgent  # noqa: E402
from cogtestbed.llm_adapters.hf import HFClient, build_tiny_random  # noqa: E402
from cogtestbed.llm_adapters.openai_client import OpenAIClient  # noqa: E402
from cogtestbed.llm_adapters.server import FaultInjector, serve  # noqa: E402
from cogtestbed.simulation import run_stepwise  # noqa: E402

#: 1d4 (one token each), 1d10 (the terminator rule), 3d12 (34 multi-digit outcomes), letters, labels.
DESIGN = RevealedDesign(scenarios=("dice", "choice", "preference"), variants=("regular",), dice_faces=(4, 10, 12),
                        n_dice=(1, 3), choice_options=(4,), preference_biases=(1,))


def play(client, design: RevealedDesign):  # type: ignore[no-untyped-def]
    env = RevealedBeliefEnv(design)
    sessions = RevealedBeliefEnv.sample_sessions(design, 1, np.random.default_rng(0))
    outcomes = run_stepwise(env, sessions, lambda i: LLMAgent(client, env))
    return RevealedBeliefEnv.trials_table(design, sessions, outcomes, agent=client.spec)


def direct_logprobs(context: str, conts: tuple[str, ...], chat: bool = False) -> np.ndarray:
    """Σ log softmax(logits) over each continuation's tokens, from a freshly built copy of the
    model, one full sequence at a time, in float64."""
    model, tok = build_tiny_random(chat=chat)
    text = (tok.apply_chat_template([{"role": "user", "content": context}], add_generation_prompt=True,
                                    tokenize=False) if chat else context)
    ctx = tok(text, add_special_tokens=not chat)["input_ids"]
    out = []
    for c in conts:
        joint = tok(text + c, add_special_tokens=not chat)["input_ids"]
        assert joint[: len(ctx)] == ctx
        with torch.no_grad():
            logits = model(torch.tensor([joint])).logits[0].double()
        out.append(sum(float(torch.log_softmax(logits[p - 1], -1)[joint[p]]) for p in range(len(ctx), len(joint))))
    return np.array(out)


def softmax(lp: np.ndarray) -> np.ndarray:
    w = np.exp(lp - lp.max())
    return w / w.sum()


def test_recorded_revb_distribution_is_the_softmax_of_the_logits(tiny: HFClient) -> None:
    table = play(tiny, DESIGN.model_copy(update={"channels": ("revb",)}))
    assert table["valid"].all() and set(table["method"].astype(str)) == {"exact"}
    assert table["n_outcomes"].max() == 34
    for _, row in table.iterrows():
        item = DESIGN.items[int(row["item"])]
        lp = direct_logprobs(item.context, continuations(item))
        np.testing.assert_allclose(np.asarray(row["probs"]), softmax(lp), atol=1e-6)
        assert row["mass_outside"] == pytest.approx(1 - np.exp(lp).sum(), abs=1e-6)


def test_staa_on_the_chat_template_raw_and_renormalised(tiny_chat: HFClient) -> None:
    design = DESIGN.model_copy(update={"scenarios": ("choice",)})
    table = play(tiny_chat, design)
    staa = table[table["channel"] == "staa"].iloc[0]
    revb = table[table["channel"] == "revb"].iloc[0]
    env = RevealedBeliefEnv(design)
    sessions = RevealedBeliefEnv.sample_sessions(design, 1, np.random.default_rng(0))
    env.reset(options={"session": sessions})
    assert env.render_prompt() == design.items[0].context
    env.t = 1
    lp = direct_logprobs(env.render_prompt(), ("[A]", "[B]", "[C]", "[D]", "[E]"), chat=True)
    np.testing.assert_allclose(np.asarray(staa["logprobs"]), lp, atol=1e-6)
    np.testing.assert_allclose(np.asarray(staa["probs"]), softmax(lp), atol=1e-6)
    # RevB is a next-token probe: scored on the raw story even on the chat model
    item = design.items[0]
    np.testing.assert_allclose(np.asarray(revb["probs"]), softmax(direct_logprobs(item.context,
                                                                                 continuations(item))), atol=1e-6)


def test_same_through_the_openai_compatible_server(tiny: HFClient, tiny_chat: HFClient) -> None:
    design = DESIGN.model_copy(update={"channels": ("revb",), "dice_faces": (10,), "n_dice": (1,)})
    local = play(tiny, design)
    with serve({"tiny-random": tiny, "tiny-random-chat": tiny_chat}, FaultInjector()) as url:
        remote = play(OpenAIClient("tiny-random", base_url=url, mode="completions"), design)
        # a chat endpoint cannot score: N samples, parsed, recorded as an estimate with its N
        chat = OpenAIClient("tiny-random-chat", base_url=url, mode="chat")
        small = design.model_copy(update={"scenarios": ("preference",), "n_samples": 4})
        sampled = play(chat, small)
    for a, b in zip(local["probs"], remote["probs"], strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)
    assert set(sampled["method"].dropna().astype(str)) <= {"sampled"}
    answered = sampled[sampled["valid"]]
    assert (~sampled["valid"]).all() or (answered["n_samples"] <= 4).all()
    assert sampled["parse_error"].dropna().str.contains("sampled").all()


def test_cli_run_with_the_tiny_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from cogtestbed.cli import app

    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    out = tmp_path / "run"
    runner = CliRunner()
    res = runner.invoke(app, ["run", "revealed-belief", "--llm", "hf:tiny-random", "--subjects", "1", "-o", str(out),
                              "--design", "scenarios=choice"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["metrics", "revealed-belief", str(out / "trials.parquet"), "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert 0 <= payload["metrics"]["chebyshev"] <= 1 and payload["n_invalid"] == 0

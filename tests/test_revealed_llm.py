"""Revealed belief with a real model: the recorded distribution is the softmax over the outcome set
computed directly from the model's logits (the tiny local model, rebuilt here; and the same
through the local OpenAI-compatible server with echo + logprobs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("openai")

from cogtestbed.environments.revealed import RevealedBeliefEnv, RevealedDesign, continuations  # noqa: E402
from cogtestbed.llm_adapters import LLMAgent  # noqa: E402
from cogtestbed.llm_adapters.clients.hf import HFClient, build_tiny_random  # noqa: E402
from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient  # noqa: E402
from cogtestbed.llm_adapters.servers.server import FaultInjector, serve  # noqa: E402
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


#: Two RevB items (k = 2, 6) and the scored StaA channel (k = 5), 3 samples per estimate.
SAMPLED_DESIGN = ("--design", "scenarios=choice", "--design", "variants=regular", "--design", "choice_options=2,6",
                  "--design", "n_samples=3")
_FLOOR_CELL = re.compile(r"k=(\d+): E\[Chebyshev\]=([\d.]+) E\[L1\]=([\d.]+) E\[symKL\]=([\d.]+)")


def test_sampling_backend_warns_with_the_noise_floor_once(tmp_path: Path, server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A chat endpoint cannot score: the run states N and the §8 noise floor (the figures of
    ``noise_floor``) in one stderr line before its calls, and records it in run.json and the manifest."""
    from typer.testing import CliRunner

    from cogtestbed.cli import app
    from cogtestbed.environments.revealed import SAMPLING_FLOOR_TARGET
    from cogtestbed.environments.revealed_floor import noise_floor, samples_for_floor

    url, _ = server
    monkeypatch.setenv("COGTESTBED_CACHE", str(tmp_path / "cache.sqlite"))
    args = ["run", "revealed-belief", "--llm", "openai:tiny-random-chat", "--mode", "chat", "--base-url", url,
            "--subjects", "1", "-o", str(tmp_path / "run"), *SAMPLED_DESIGN]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("sampled estimates:")]
    assert len(lines) == 1 and "N=3 sampled completions" in lines[0]
    cells = {int(k): tuple(v) for k, *v in _FLOOR_CELL.findall(lines[0])}
    assert sorted(cells) == [2, 5, 6]
    for k, shown in cells.items():
        f = noise_floor(k, 3)
        assert shown == tuple(f"{f[m]:.3f}" for m in ("chebyshev_mean", "l1_mean", "symkl_mean"))
    needed = max(samples_for_floor(k, 3, SAMPLING_FLOOR_TARGET) for k in cells)
    assert f"N >= {needed} brings E[Chebyshev] <= 0.05" in lines[0]
    assert noise_floor(2, needed)["chebyshev_mean"] <= SAMPLING_FLOOR_TARGET < noise_floor(2, 3)["chebyshev_mean"]
    run = json.loads((tmp_path / "run/run.json").read_text())
    manifest = json.loads((tmp_path / "run/trials.parquet.manifest.json").read_text())
    for recorded in (run["warnings"], manifest["warnings"]):
        (w,) = recorded
        assert w["n_samples"] == 3 and w["message"] == lines[0] and w["detail"]["n_for_target"] == needed
        assert w["detail"]["floors"] == {str(k): noise_floor(k, 3) for k in (2, 5, 6)}
    table = pd.read_parquet(tmp_path / "run/trials.parquet")
    assert set(table["method"].dropna().astype(str)) <= {"sampled"}
    dry = CliRunner().invoke(app, [*args[:-len(SAMPLED_DESIGN)], "-o", str(tmp_path / "dry"), *SAMPLED_DESIGN,
                                   "--dry-run", "--allow-unpriced"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout)["warnings"] == [lines[0]]


def test_scoring_backends_and_plain_environments_carry_no_sampling_warning(tiny: HFClient) -> None:
    from cogtestbed.llm_adapters.runs.runner import run_warnings
    from cogtestbed.registry import get_experiment

    exp = get_experiment("revealed-belief")
    assert run_warnings(exp, DESIGN, tiny) == []  # exact scores: nothing to warn about
    generated = DESIGN.model_copy(update={"channels": ("staa",), "staa_mode": "generated"})
    assert RevealedBeliefEnv.sampling_note(generated) is None  # no scored step
    other = get_experiment("instrumental-learning")
    assert other.env_cls.sampling_note(other.env_cls.design_cls()) is None  # the contract's default

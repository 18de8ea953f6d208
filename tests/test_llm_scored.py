"""Scored responses through the LLM subject: exact teacher-forced scores where the backend can
score, a sampled estimate (with its N) where it cannot; both recorded in the trial table and in
calls.parquet.  Real components only: the tiny local model and the local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("openai")

from toy_env import ElicitJudgeEnv, ToyDesign, ToySessions  # noqa: E402

from cogtestbed.environments.base import NO_ACTION, ScoredAnswer  # noqa: E402
from cogtestbed.llm_adapters import LLMAgent  # noqa: E402
from cogtestbed.llm_adapters.clients.hf import HFClient  # noqa: E402
from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient  # noqa: E402
from cogtestbed.llm_adapters.middleware.cache import CachedClient, ResponseCache  # noqa: E402
from cogtestbed.llm_adapters.middleware.retry import RetryPolicy  # noqa: E402
from cogtestbed.llm_adapters.runs.config import RunConfig  # noqa: E402
from cogtestbed.llm_adapters.runs.runner import run_experiment  # noqa: E402
from cogtestbed.llm_adapters.servers.server import serve  # noqa: E402

FAST_RETRY = RetryPolicy(attempts=4, initial=0.02, max_wait=0.2)
SESSION = ToySessions(statement=np.array([[1]]))  # one question (the sampled test's design)
# the pieces of an ExperimentSpec a run of an unregistered experiment reads (its table is checked against `schema`)
TOY = SimpleNamespace(name=ElicitJudgeEnv.experiment, env_cls=ElicitJudgeEnv, schema=ElicitJudgeEnv.table_schema)


@pytest.fixture(scope="module")
def server(tiny, tiny_chat):
    with serve({"tiny-random": tiny, "tiny-random-chat": tiny_chat}) as url:
        yield url


def judge_prompt(design: ToyDesign) -> str:
    env = ElicitJudgeEnv(design)
    env.reset(options={"session": ToySessions(statement=np.ones((1, design.n_questions), dtype=np.int64))})
    obs, *_ = env.step(0.5)
    return str(obs["prompt"])


def direct_logprob(model: HFClient, ids_context: list[int], ids_cont: list[int]) -> float:
    """log P(continuation tokens | context tokens) straight from the logits, in float64."""
    ids = torch.tensor([ids_context + ids_cont])
    with torch.no_grad():
        logits = model.hf_model(ids).logits[0].double()
    lp = torch.log_softmax(logits, -1)
    return float(sum(lp[len(ids_context) + j - 1, t] for j, t in enumerate(ids_cont)))


def direct_softmax(model: HFClient, context: str, continuations: tuple[str, ...]) -> np.ndarray:
    """The distribution over ``continuations`` computed by the test from the model's logits."""
    ctx = model.tokenizer(context)["input_ids"]
    lps = []
    for c in continuations:
        joint = model.tokenizer(context + c)["input_ids"]
        assert joint[: len(ctx)] == ctx
        lps.append(direct_logprob(model, ctx, joint[len(ctx):]))
    w = np.exp(np.array(lps) - max(lps))
    return w / w.sum()


def test_exact_scores_recorded_in_trials_and_calls(tmp_path, tiny, server):
    design = ToyDesign(gate=False)  # the judgement is asked even when the probability is invalid
    for client in (tiny, OpenAIClient("tiny-random", base_url=server, mode="completions", retry=FAST_RETRY)):
        run_dir = tmp_path / client.backend
        config = RunConfig(experiment=TOY.name, llm=client.spec, base_url=None, mode="completions",
                           n_subjects=2, seed=5, design=design.model_dump(mode="json"), top_logprobs=3)
        cached = CachedClient(client, ResponseCache(tmp_path / f"{client.backend}.sqlite"))
        result = asyncio.run(run_experiment(TOY, design, cached, config, run_dir))
        trials = pd.read_parquet(run_dir / "trials.parquet")
        calls = pd.read_parquet(run_dir / "calls.parquet")
        assert (trials["judge_method"] == "exact").all() and trials["judge_n"].isna().all()
        text = calls[calls["kind"] == "text"]
        assert len(text) == 4 and text["top_logprobs"].notna().all()  # the backend's top_logprobs are kept
        first = json.loads(text["top_logprobs"].iloc[0])
        assert first and all(1 <= len(tok["top"]) <= 3 and tok["logprob"] <= 0 for tok in first)
        scored = calls[calls["kind"] == "score"]
        assert len(scored) == 4 and (scored["score_method"] == "exact").all()
        # every recorded distribution equals the softmax the test computes from the logits
        for row in trials.itertuples():
            env = ElicitJudgeEnv(design)
            env.reset(options={"session": ToySessions(statement=np.array([[row.statement] * 2]))})
            env.step(0.5)
            want = direct_softmax(tiny, env.render_prompt(), design.judgements)
            got = np.array([row.judge_p0, row.judge_p1, row.judge_p2])
            np.testing.assert_allclose(got, want, atol=1e-6)
        np.testing.assert_allclose(
            np.exp(scored["score_logprobs"].iloc[0]) / np.exp(scored["score_logprobs"].iloc[0]).sum(),
            trials[["judge_p0", "judge_p1", "judge_p2"]].to_numpy()[0], atol=1e-12)
        assert result.status == "complete"


def top_first_tokens(client: HFClient, prompt: str, k: int = 3) -> tuple[str, ...]:
    """The ``k`` most probable first tokens of the chat model's answer (distinct, non-empty)."""
    gen = client.generate([{"role": "user", "content": prompt}], max_tokens=1, top_logprobs=12)
    assert gen.logprobs is not None
    tops = sorted(gen.logprobs[0].top.items(), key=lambda kv: -kv[1])
    chosen: list[str] = []
    for tok, _ in tops:
        s = tok.strip()
        if s and all(not s.startswith(c) and not c.startswith(s) for c in chosen):
            chosen.append(s)
        if len(chosen) == k:
            break
    return tuple(chosen)


def first_token_reference(client: HFClient, design: ToyDesign) -> np.ndarray:
    """P(the parser maps a one-token answer to continuation k), renormalised over k, computed by
    the test from one forward pass: the next-token softmax summed over every vocabulary token by
    the continuation the environment's parser reads it as (the distribution a one-token sample
    estimates)."""
    env = ElicitJudgeEnv(design)
    env.reset(options={"session": SESSION})
    env.step(NO_ACTION)
    text = client.render([{"role": "user", "content": env.render_prompt()}])
    ids = client.encode(text, rendered_chat=True)
    with torch.no_grad():
        logits = client.hf_model(torch.tensor([ids])).logits[0, -1].double()
    probs = torch.softmax(logits, -1).numpy()
    mass = np.zeros(len(design.judgements))
    for v in range(len(probs)):
        answer = client.tokenizer.decode([v], skip_special_tokens=True).split("\n")[0]
        parsed = env.parse(answer)
        if parsed.ok:
            mass[parsed.action] += probs[v]
    return mass / mass.sum()


def test_sampled_estimate_where_the_backend_cannot_score(tmp_path, tiny_chat, server):
    base = ToyDesign(gate=False, n_questions=1)
    judgements = top_first_tokens(tiny_chat, judge_prompt(base))
    design = ToyDesign(gate=False, n_questions=1, judgements=judgements, n_samples=200)
    reference = first_token_reference(tiny_chat, design)
    chat = CachedClient(OpenAIClient("tiny-random-chat", base_url=server, mode="chat", retry=FAST_RETRY),
                        ResponseCache(tmp_path / "cache.sqlite"))
    env = ElicitJudgeEnv(design)
    agent = LLMAgent(chat, env, max_tokens=1, top_logprobs=2, sample_seed=9)
    obs, _ = env.reset(options={"session": SESSION})
    obs, *_ = env.step(NO_ACTION)
    answer = agent.act(obs)
    assert isinstance(answer, ScoredAnswer) and answer.method == "sampled" and answer.n_samples == 200
    env.step(answer)
    rows = pd.DataFrame([a.as_row() for a in agent.attempts])
    assert len(rows) == 200 and (rows["kind"] == "sample").all() and (rows["score_n"] == 200).all()
    assert rows["top_logprobs"].map(lambda s: len(json.loads(s)[0]["top"])).eq(2).all()
    counts = np.array([(rows["valid"] & rows["raw_response"].str.strip().eq(j)).sum() for j in judgements])
    np.testing.assert_allclose(answer.probabilities, counts / counts.sum())
    assert answer.mass_outside == pytest.approx(1 - counts.sum() / 200)
    # the estimate agrees with the exact distribution within sampling error (4 standard errors)
    p = reference
    se = np.sqrt(p * (1 - p) / counts.sum())
    assert np.all(np.abs(answer.probabilities - p) < 4 * se + 1e-9)
    table = ElicitJudgeEnv.trials_table(design, SESSION, env.outcomes)
    assert table["judge_method"].iloc[0] == "sampled" and table["judge_n"].iloc[0] == 200
    # the samples are seeded, so a rerun asks the same requests: all served from the cache
    again = LLMAgent(chat, ElicitJudgeEnv(design), max_tokens=1, top_logprobs=2, sample_seed=9)
    again.env.reset(options={"session": SESSION})
    obs2, *_ = again.env.step(NO_ACTION)
    np.testing.assert_array_equal(again.act(obs2).logprobs, answer.logprobs)
    assert all(a.cached for a in again.attempts)

"""The same request on every route (issue 39): every generation names its sampling explicitly (servers
default otherwise: llama-cpp-python's top_k 40, top_p 0.95, min_p 0.05, repeat_penalty 1.1), the project's
server refuses sampling it does not implement instead of ignoring it, and llama.cpp can serve the float32
numbers the in-process route computes with (``float32_gguf``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest


def test_every_request_body_names_its_sampling() -> None:
    from cogtestbed.llm_adapters.clients.base import NEUTRAL_SAMPLING, NEUTRAL_SAMPLING_EXTRAS, GenerateRequest
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient

    request = GenerateRequest("Q: A or B?\n\nA: Machine", max_tokens=3, temperature=0.0, stop=("\n",))
    served = OpenAIClient("m", base_url="http://127.0.0.1:9/v1", mode="completions").request_body(request)
    assert served["temperature"] == 0.0 and served["top_p"] == 1.0 and served["top_k"] == 0
    assert served["min_p"] == 0.0 and served["repeat_penalty"] == served["repetition_penalty"] == 1.0
    assert served["presence_penalty"] == served["frequency_penalty"] == 0.0
    assert set(NEUTRAL_SAMPLING) | set(NEUTRAL_SAMPLING_EXTRAS) <= set(served)
    hosted = OpenAIClient("gpt-4o-mini", mode="chat").request_body(request)  # OpenAI refuses unknown fields
    assert hosted["top_p"] == 1.0 and not set(NEUTRAL_SAMPLING_EXTRAS) & set(hosted)
    strict = OpenAIClient("m", base_url="http://127.0.0.1:9/v1", sampling_extras=False).request_body(request)
    assert strict["top_p"] == 1.0 and "top_k" not in strict


def test_the_wire_carries_the_sampling_and_the_server_refuses_what_it_does_not_implement(server: Any) -> None:
    """The SDK sends the extras in the JSON body (``extra_body``); the project's server accepts the neutral
    values (vLLM's ``top_k: -1`` too) and answers any other with a 400 naming the field."""
    from cogtestbed.llm_adapters.clients.base import GenerateRequest
    from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient

    url, _ = server
    seen: list[dict[str, Any]] = []

    class Recording(OpenAIClient):
        def request_body(self, request: GenerateRequest) -> dict[str, Any]:
            body = super().request_body(request)
            seen.append(dict(body))
            return body

    client = Recording("tiny-random", base_url=url, mode="completions")

    async def go() -> Any:
        try:
            return await client.agenerate(GenerateRequest("Machine A or B?", max_tokens=2))
        finally:
            await client.aclose()

    gen = asyncio.run(go())
    assert gen.completion_tokens is not None and 1 <= gen.completion_tokens <= 2
    assert seen[0]["top_k"] == 0 and seen[0]["repeat_penalty"] == 1.0
    base = {"model": "tiny-random", "prompt": "Machine A or B?", "max_tokens": 1}
    assert httpx.post(f"{url}/completions", json={**base, "top_k": -1, "top_p": 1}, timeout=30).status_code == 200
    for field, value in (("top_p", 0.9), ("top_k", 40), ("min_p", 0.05), ("repeat_penalty", 1.1),
                         ("presence_penalty", 0.5)):
        resp = httpx.post(f"{url}/completions", json={**base, field: value}, timeout=30)
        assert resp.status_code == 400, (field, resp.text)
        assert resp.json()["error"]["param"] == field and "plain softmax" in resp.json()["error"]["message"]
    chat = {"model": "tiny-random-chat", "messages": [{"role": "user", "content": "A or B?"}], "max_tokens": 1}
    resp = httpx.post(f"{url}/chat/completions", json={**chat, "top_p": 0.5}, timeout=30)
    assert resp.status_code == 400 and resp.json()["error"]["param"] == "top_p"


def test_generation_ignores_a_models_own_sampling_defaults(tiny: Any) -> None:
    """A hub model's ``generation_config`` (Qwen's: repetition_penalty 1.05, top_k 20) must not change what
    the in-process route does: the kwargs it passes override them with the served semantics."""
    from cogtestbed.llm_adapters.clients.base import GenerateRequest

    greedy = tiny._generate_kwargs(GenerateRequest("x", max_tokens=3))
    assert greedy["do_sample"] is False and greedy["repetition_penalty"] == 1.0 and greedy["no_repeat_ngram_size"] == 0
    sampled = tiny._generate_kwargs(GenerateRequest("x", max_tokens=3, temperature=0.7))
    assert sampled["top_k"] == 0 and sampled["top_p"] == 1.0 and sampled["min_p"] is None
    config = tiny.hf_model.generation_config
    old = (config.repetition_penalty, config.top_k)
    try:
        config.repetition_penalty, config.top_k = 5.0, 1  # a model shipping other defaults
        plain = tiny.generate("The probability is equal to", max_tokens=16)
    finally:
        config.repetition_penalty, config.top_k = old
    # measured: with the model's penalty left in force this prompt's 16 greedy tokens differ
    assert plain.text == tiny.generate("The probability is equal to", max_tokens=16).text


def test_float32_gguf_holds_the_dequantised_tensors_and_the_metadata(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    from gguf.quants import dequantize, quantize

    from cogtestbed.llm_adapters.servers.llama_cpp import GGUF_FTYPE_ALL_F32, float32_gguf

    rng = np.random.default_rng(0)
    weights = rng.normal(size=(4, 64)).astype(np.float32)
    source = tmp_path / "tiny.Q8_0.gguf"
    writer = gguf.GGUFWriter(source, "llama")
    writer.add_uint32("general.file_type", 7)  # LLAMA_FTYPE_MOSTLY_Q8_0
    writer.add_string("tokenizer.chat_template", "{{ messages }}")
    writer.add_array("tokenizer.ggml.tokens", ["a", "b"])
    q8 = quantize(weights, gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("blk.0.w", q8, raw_shape=q8.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("norm", np.arange(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    target = float32_gguf(source, tmp_path / "tiny.f32.gguf")
    reader = gguf.GGUFReader(target)
    fields = {f.name: f.contents() for f in reader.fields.values() if not f.name.startswith("GGUF.")}
    assert fields["general.file_type"] == GGUF_FTYPE_ALL_F32 and fields["general.architecture"] == "llama"
    assert fields["tokenizer.chat_template"] == "{{ messages }}" and fields["tokenizer.ggml.tokens"] == ["a", "b"]
    tensors = {t.name: t for t in reader.tensors}
    assert {int(t.tensor_type) for t in tensors.values()} == {int(gguf.GGMLQuantizationType.F32)}
    expected = dequantize(q8, gguf.GGMLQuantizationType.Q8_0)
    got = np.asarray(tensors["blk.0.w"].data).reshape(expected.shape)
    assert np.array_equal(got, expected) and not np.array_equal(got, weights)  # dequantised, not the original
    assert np.abs(got - weights).max() < 0.05
    assert np.array_equal(np.asarray(tensors["norm"].data), np.arange(4, dtype=np.float32))
    assert float32_gguf(source, target) == target  # written once
    assert json.dumps(sorted(p.name for p in tmp_path.iterdir())) == json.dumps(["tiny.Q8_0.gguf", "tiny.f32.gguf"])

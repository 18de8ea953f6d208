"""Images through the LLM layer: a tiny random LLaVA built in code, the local OpenAI/Anthropic
server, the official SDKs, the response cache and `cogtestbed run magnitude`."""

from __future__ import annotations

import asyncio
import io

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("openai")
pytest.importorskip("anthropic")

from typer.testing import CliRunner  # noqa: E402

from cogtestbed.cli import app  # noqa: E402
from cogtestbed.environments.magnitude import MagnitudeDesign, MagnitudeEnv  # noqa: E402
from cogtestbed.environments.magnitude_stimuli import marker_image, ratio_image  # noqa: E402
from cogtestbed.llm_adapters.clients.anthropic_client import AnthropicClient  # noqa: E402
from cogtestbed.llm_adapters.clients.base import GenerateRequest  # noqa: E402
from cogtestbed.llm_adapters.clients.hf import HFClient  # noqa: E402
from cogtestbed.llm_adapters.clients.openai_client import OpenAIClient  # noqa: E402
from cogtestbed.llm_adapters.middleware.cache import CachedClient, ResponseCache, cache_key  # noqa: E402
from cogtestbed.llm_adapters.middleware.retry import RetryPolicy  # noqa: E402
from cogtestbed.llm_adapters.runs.config import RunConfig  # noqa: E402
from cogtestbed.llm_adapters.runs.runner import run_experiment  # noqa: E402
from cogtestbed.llm_adapters.servers.server import serve  # noqa: E402
from cogtestbed.registry import get_experiment  # noqa: E402

FAST = RetryPolicy(attempts=2, initial=0.02, max_wait=0.1)
DESIGN = {"task": "line-ratio", "conditions": "base", "modalities": "image,text+image", "ranges": "short",
          "trials_per_session": 2}


@pytest.fixture(scope="module")
def vlm() -> HFClient:
    return HFClient.tiny_random_vlm()


def _messages(image: bytes) -> list[dict]:
    return [{"role": "system", "content": "You are a line-length ratio estimator."},
            {"role": "user", "content": "ratio?", "images": (image,)}]


def test_images_reach_the_model(vlm) -> None:
    a, b = ratio_image(0.2, 1), marker_image(0.9, 2)
    text = vlm.render(_messages(a))
    assert text.count("<image>") == 1
    logits = []
    for img in (a, b):
        from PIL import Image

        enc = vlm.processor(text=text, images=[Image.open(io.BytesIO(img)).convert("RGB")], return_tensors="pt",
                            add_special_tokens=False)
        assert (enc["input_ids"] == vlm.hf_model.config.image_token_index).sum() == 16
        with torch.no_grad():
            logits.append(vlm.hf_model(**enc).logits[0, -1])
    assert not torch.allclose(logits[0], logits[1])  # the picture changes the next-token distribution
    gen = vlm.generate(_messages(a), max_tokens=4)
    assert gen.prompt_tokens > 16 and gen.completion_tokens >= 1


def test_cache_key_includes_image_bytes(vlm) -> None:
    a, b = ratio_image(0.2, 1), ratio_image(0.2, 2)
    ka = cache_key(vlm, GenerateRequest(_messages(a), 4))
    assert ka == cache_key(vlm, GenerateRequest(_messages(bytes(a)), 4))
    assert ka != cache_key(vlm, GenerateRequest(_messages(b), 4))
    with pytest.raises(ValueError, match="PNG, JPEG"):
        GenerateRequest(_messages(b"not an image"), 4)


def test_openai_and_anthropic_sdks_send_images_to_the_local_server(vlm) -> None:
    msgs = _messages(ratio_image(0.3, 7))
    direct = vlm.generate(msgs, max_tokens=5)
    with serve({"tiny-random-vlm": vlm}) as url:
        via_openai = OpenAIClient("tiny-random-vlm", base_url=url, retry=FAST).generate(msgs, max_tokens=5)
        claude = AnthropicClient("tiny-random-vlm", base_url=url.removesuffix("/v1"), retry=FAST)
        via_anthropic = claude.generate(msgs, max_tokens=5)
    assert via_openai.text == direct.text == via_anthropic.text
    assert via_openai.prompt_tokens == direct.prompt_tokens == via_anthropic.prompt_tokens


def test_text_only_model_fails_before_any_call(tmp_path) -> None:
    exp = get_experiment("magnitude")
    design = MagnitudeDesign(**DESIGN)
    assert MagnitudeEnv.uses_images(design) and not MagnitudeEnv.uses_images(
        MagnitudeDesign(task="duration", trials_per_session=2))
    text_only = HFClient.tiny_random(chat=True)
    store = ResponseCache(tmp_path / "cache.sqlite")
    cached = CachedClient(text_only, store)
    config = RunConfig(experiment="magnitude", llm="hf:tiny-random-chat", base_url=None, mode="chat", n_subjects=1,
                       seed=0, design=design.model_dump(mode="json"), max_tokens=4, temperature=0.0, stop=("\n",),
                       reask=0, top_logprobs=None)
    with pytest.raises(ValueError, match="text-only model but the prompts carry images"):
        asyncio.run(run_experiment(exp, design, cached, config, tmp_path / "run"))
    assert len(store) == 0 and not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match="text-only"):
        text_only.generate(_messages(ratio_image(0.3, 1)), max_tokens=2)


def test_cli_run_magnitude_with_the_tiny_vlm(tmp_path) -> None:
    args = ["run", "magnitude", "--llm", "hf:tiny-random-vlm", "--subjects", "1", "-o", str(tmp_path / "run"),
            "--cache", str(tmp_path / "c.sqlite")]
    for k, v in DESIGN.items():
        args += ["--design", f"{k}={v}"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    trials = pd.read_parquet(tmp_path / "run" / "trials.parquet")
    calls = pd.read_parquet(tmp_path / "run" / "calls.parquet")
    assert len(trials) == 4 and set(trials["modality"]) == {"image", "text+image"}
    assert np.all(trials["raw_response"].notna())
    assert calls["prompt"].str.contains(r"\[image\]").all()
    assert (calls["prompt_tokens"] > 16).all()  # image tokens are part of every prompt
    assert (~trials["valid"] == trials["parse_error"].notna()).all()
    # the paper's decoding (App. A.2.1: temperature 0.7) unless --temperature says otherwise
    import json

    manifest = json.loads((tmp_path / "run" / "trials.parquet.manifest.json").read_text())
    assert manifest["decoding"]["temperature"] == 0.7 and "App. A.2.1" in manifest["decoding"]["source"]
    assert manifest["config"]["temperature"] == 0.7
    assert json.loads((tmp_path / "run" / "run.json").read_text())["config"]["temperature"] == 0.7
    dry = CliRunner().invoke(app, [*args, "--temperature", "0", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["decoding"] == {"temperature": 0.0, "source": "command line (--temperature)"}

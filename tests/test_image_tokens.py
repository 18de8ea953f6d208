"""Image prompt tokens by the providers' documented formulas, and the dry run that counts them."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from cogtestbed.llm_adapters.clients.image_tokens import anthropic_image_tokens, image_tokens, openai_image_tokens


def test_openai_tiles_match_the_documented_examples():
    assert openai_image_tokens(1024, 1024) == 765  # scaled to 768 x 768: 4 tiles
    assert openai_image_tokens(2048, 4096) == 1105  # 1024 x 2048, then 768 x 1536: 6 tiles
    assert openai_image_tokens(224, 224) == 255  # one tile
    assert openai_image_tokens(4096, 8192, detail="low") == 85
    with pytest.raises(ValueError, match="detail"):
        openai_image_tokens(10, 10, detail="auto")


def test_anthropic_pixels_per_token():
    assert anthropic_image_tokens(224, 224) == 67  # ceil(50176 / 750)
    assert anthropic_image_tokens(1092, 1092) == 1590
    assert anthropic_image_tokens(3136, 1568) == anthropic_image_tokens(1568, 784)  # long edge capped
    with pytest.raises(ValueError, match="positive"):
        anthropic_image_tokens(0, 5)


def test_image_tokens_read_the_png_size_and_skip_undocumented_backends():
    buf = io.BytesIO()
    Image.new("RGB", (300, 200), "white").save(buf, format="PNG")
    assert image_tokens("anthropic", buf.getvalue()) == 80  # ceil(60000 / 750)
    assert image_tokens("openai", buf.getvalue()) == 255
    assert image_tokens("hf", buf.getvalue()) is None


def test_dry_run_counts_image_tokens():
    from cogtestbed.llm_adapters import make_client
    from cogtestbed.llm_adapters.runs.config import RunConfig
    from cogtestbed.llm_adapters.runs.pricing import dry_run
    from cogtestbed.registry import get_experiment

    exp = get_experiment("magnitude")
    design = exp.env_cls.design_cls(task="marker-location", conditions=("base",), modalities=("image",),
                                    ranges=("short",), trials_per_session=3)
    reports = {}
    for llm in ("openai:gpt-4o", "anthropic:claude-sonnet-4-5"):
        config = RunConfig(experiment=exp.name, llm=llm, base_url=None, mode="chat", n_subjects=1, seed=0,
                           design=design.model_dump(mode="json"))
        reports[llm] = dry_run(exp, design, make_client(llm), config, None)
    openai, anthropic = reports["openai:gpt-4o"], reports["anthropic:claude-sonnet-4-5"]
    assert openai["images"] == anthropic["images"] >= 3  # every trial shows its stimulus (plus history)
    assert openai["image_tokens"] == 255 * openai["images"]  # 224 px stimuli: one tile each
    assert anthropic["image_tokens"] == 67 * anthropic["images"]
    assert openai["prompt_tokens"] > openai["image_tokens"]

"""Prompt tokens an image costs, by the providers' documented formulas (for ``run --dry-run``).

* **OpenAI** (GPT-4o / GPT-4.1 vision pricing, ``detail="high"``, which ``"auto"`` uses for
  images larger than 512 px and the upper bound otherwise): the image is scaled to fit a
  2048 × 2048 square, then so that its shortest side is at most 768 px; it costs
  85 + 170 · (number of 512 px tiles covering it) tokens.  ``detail="low"`` costs 85.
  Other model families (the o-series, gpt-4o-mini's multiplied token counts) price images
  differently; the count is then a lower bound of what the bill shows.
* **Anthropic** (Claude vision documentation): an image whose long edge exceeds 1568 px is
  scaled down to it; it costs ⌈w · h / 750⌉ tokens.

Backends without a documented formula (a local Hugging Face model, whose processor decides the
number of image tokens) are not counted, and the dry run says so.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable

from cogtestbed.errors import InputError

#: OpenAI high-detail image pricing: base tokens, tokens per tile, tile side, fit-square side and
#: the shortest side after scaling (px).
OPENAI_BASE_TOKENS = 85
OPENAI_TILE_TOKENS = 170
OPENAI_TILE_PX = 512
OPENAI_FIT_PX = 2048
OPENAI_SHORT_SIDE_PX = 768
#: Anthropic image pricing: pixels per token and the longest edge kept (px).
ANTHROPIC_PX_PER_TOKEN = 750
ANTHROPIC_MAX_EDGE_PX = 1568


def openai_image_tokens(width: int, height: int, detail: str = "high") -> int:
    """Tokens of a ``width`` × ``height`` image in an OpenAI chat request (module docstring)."""
    _check_size(width, height)
    if detail == "low":
        return OPENAI_BASE_TOKENS
    if detail != "high":
        raise InputError(f"detail must be 'high' or 'low', got {detail!r}")
    w, h = float(width), float(height)
    if max(w, h) > OPENAI_FIT_PX:
        f = OPENAI_FIT_PX / max(w, h)
        w, h = w * f, h * f
    if min(w, h) > OPENAI_SHORT_SIDE_PX:
        f = OPENAI_SHORT_SIDE_PX / min(w, h)
        w, h = w * f, h * f
    tiles = math.ceil(w / OPENAI_TILE_PX) * math.ceil(h / OPENAI_TILE_PX)
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles


def anthropic_image_tokens(width: int, height: int) -> int:
    """Tokens of a ``width`` × ``height`` image in an Anthropic request (module docstring)."""
    _check_size(width, height)
    w, h = float(width), float(height)
    if max(w, h) > ANTHROPIC_MAX_EDGE_PX:
        f = ANTHROPIC_MAX_EDGE_PX / max(w, h)
        w, h = math.floor(w * f), math.floor(h * f)
    return math.ceil(w * h / ANTHROPIC_PX_PER_TOKEN)


def _check_size(width: int, height: int) -> None:
    if width < 1 or height < 1:
        raise InputError(f"an image has positive width and height, got {width} x {height}")


#: Image-token formula of each client backend (``LLMClient.backend``) that documents one.
IMAGE_TOKEN_RULES: dict[str, Callable[[int, int], int]] = {
    "openai": openai_image_tokens,
    "anthropic": anthropic_image_tokens,
}


@functools.lru_cache(maxsize=4096)
def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) of encoded image bytes (the header only is read; cached by the bytes: a chat
    history sends its earlier stimuli again at every step, and a dry run counts each of them)."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        return int(img.width), int(img.height)


def image_tokens(backend: str, data: bytes) -> int | None:
    """Prompt tokens of one image sent to ``backend``; ``None`` where no formula is documented (the size read
    is what costs, and :func:`image_size` caches it)."""
    rule = IMAGE_TOKEN_RULES.get(backend)
    return None if rule is None else rule(*image_size(data))

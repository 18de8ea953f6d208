"""Shared fixtures: paths to the real published data beside the checkout; the tiny local models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not DATA.exists():
        pytest.fail(f"real data missing: expected ../shared/data beside the checkout at {DATA}")
    return DATA


@pytest.fixture(scope="session")
def cogbench_dir(shared_data: Path) -> Path:
    return shared_data / "cogbench"


@pytest.fixture(scope="module")
def tiny() -> Any:
    """The tiny randomly initialised base model built in code (no download)."""
    from cogtestbed.llm_adapters.hf import HFClient

    return HFClient.tiny_random()


@pytest.fixture(scope="module")
def tiny_chat() -> Any:
    """The same tiny model with a chat template."""
    from cogtestbed.llm_adapters.hf import HFClient

    return HFClient.tiny_random(chat=True)


@pytest.fixture(scope="module")
def server(tiny: Any, tiny_chat: Any) -> Any:
    """The local OpenAI-compatible server serving both tiny models: yields (base URL, its fault
    injector); faults still pending when the module ends are dropped."""
    from cogtestbed.llm_adapters.server import FaultInjector, serve

    faults = FaultInjector()
    with serve({"tiny-random": tiny, "tiny-random-chat": tiny_chat}, faults) as url:
        yield url, faults
        faults.pending.clear()

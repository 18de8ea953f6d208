"""Load a study script of ``benchmarks/studies/`` as a module, once per process: tests reuse the
scripts' own table edits and reproductions rather than keep copies."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

STUDIES = Path(__file__).resolve().parents[1] / "benchmarks" / "studies"


def load_study(name: str) -> ModuleType:
    """``benchmarks/studies/NAME.py`` as the module ``NAME`` (registered in ``sys.modules``, so a
    second call, or a pickle of its objects, finds the same module)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, STUDIES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

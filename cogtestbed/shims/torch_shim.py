"""torch's internals the package relies on: oneDNN's packed float32 linear kernels.

``torch.ops.mkldnn._reorder_linear_weight`` (a weight packed once) and ``torch.ops.mkldnn._linear_pointwise``
(a linear layer on the packed weight) are the private operators behind torch's own oneDNN fusion; torch has no
public function for them.  :func:`onednn_linear_ops` hands them out (the forward passes of
:func:`cogtestbed.llm_adapters.runs.psych201_eval.onednn_linears`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The torch version this shim was written against (the Makefile's ``TORCH`` pin and the ``hf`` extra's).
LOCKED = "2.13.0"


def onednn_linear_ops(torch: Any) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """``(reorder_weight, linear_pointwise)``: oneDNN's weight packing and packed linear layer, called as
    ``reorder_weight(weight, None)`` and ``linear_pointwise(x, packed, bias, "none", [], "")``; None where
    this torch was built without them."""
    ops: Any = getattr(torch.ops, "mkldnn", None)
    if ops is None or not hasattr(ops, "_linear_pointwise") or not hasattr(ops, "_reorder_linear_weight"):
        return None
    return ops._reorder_linear_weight, ops._linear_pointwise


def problems() -> list[str]:
    """What no longer holds of the internals this shim relies on in the installed torch ([] where all does):
    the locked version and both oneDNN operators (tests/test_shims.py also checks what they compute)."""
    import torch

    version = torch.__version__.split("+")[0]
    out = [] if version == LOCKED else [f"torch {version} is installed; the shim is for {LOCKED}"]
    if onednn_linear_ops(torch) is None:
        out.append("torch.ops.mkldnn has no _linear_pointwise or _reorder_linear_weight")
    return out


__all__ = ["LOCKED", "onednn_linear_ops", "problems"]

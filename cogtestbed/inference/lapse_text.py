"""The lapse option's text (``--lapse`` of ``fit``, ``plan --lapse-fit``) parsed: imports nothing heavy, so a plan
refuses a bad one before any experiment is imported (:func:`~cogtestbed.inference.base.with_lapse`
fits what it gives)."""

from __future__ import annotations

from cogtestbed.errors import InputError


def lapse_option(text: str, field: str = "lapse") -> float | None | str:
    """Parse ``--lapse`` (``field`` in the refusal): ``none`` (no lapse term), ``fit`` (ε fitted) or ``fixed=E``."""
    text = text.strip().lower()
    if text in ("none", "fit"):
        return None if text == "none" else "fit"
    name, sep, value = text.partition("=")
    if name == "fixed" and sep:
        try:
            eps = float(value)
        except ValueError:
            eps = float("nan")
        if 0.0 <= eps < 1.0:
            return eps
    raise InputError(f"`{field}` must be none, fit or fixed=E with E in [0, 1), got {text!r}")


__all__ = ["lapse_option"]

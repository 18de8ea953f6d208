"""A study's designs, runs and cells named in words for its plots, verdicts and reports (the design by
its fields, :func:`~cogtestbed.studies.sizes.design_label`).
"""

from __future__ import annotations

from typing import Any


def design_name(spec: Any, n_trials: Any) -> str:
    """The design of a study cell named by its fields (:func:`~cogtestbed.studies.sizes.design_label`)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.sizes import design_label

    try:
        return design_label(get_experiment(spec.experiment), spec.design, int(n_trials))
    except (ValueError, KeyError):  # a trial count the trials field cannot reach: the count itself
        return f"{int(n_trials)} trials per run"


def study_design(spec: Any) -> str:
    """The subjects, runs and designs of a one-cell model study, by the designs' fields."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment(spec.experiment)
    designs = ", ".join(design_name(spec, t if t is not None else design_for_trials(exp, None, spec.design).n_trials)
                        for t in spec.trials)
    runs = ", ".join(str(r) for r in spec.runs)
    return f"{', '.join(str(n) for n in spec.subjects)} subjects of {designs}" + (
        f", {runs} runs pooled per subject" if any(r > 1 for r in spec.runs) else "")


def runs_text(n: Any) -> str:
    """``1 run``, ``3 runs``."""
    return f"{int(n)} run{'s' if int(n) != 1 else ''}"

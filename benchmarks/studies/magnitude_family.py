"""Validation of the magnitude-estimation observer against its analytic prior weight."""

from __future__ import annotations

import numpy as np

from cogtestbed.agents.magnitude import AGENTS
from cogtestbed.environments.magnitude import LONG_CONTEXT, MagnitudeDesign
from cogtestbed.inference.magnitude import build_cube, pooled_w_prior
from cogtestbed.inference.magnitude_observers import observer_weight
from cogtestbed.simulation import simulate
from cogtestbed.tables.magnitude import CONDITIONS, MODALITIES, TASK_NAMES, VISUAL_TASKS


def observer_cell_w_errors(n: int, seed: int, conditions: tuple[str, ...], sigma_dec: float = 0.05,
                           trials_per_session: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """(errors, truth): the cell-level w_prior of ``n`` simulated observers (shared-slope least
    squares, :func:`~cogtestbed.inference.magnitude.pooled_w_prior`; text+image, the visual tasks,
    three sessions) minus the analytic weight of
    :func:`~cogtestbed.agents.magnitude.observer_weight` in each condition.

    ``errors`` is (subjects × visual tasks, conditions); ``truth`` the analytic weight per condition.
    """
    design = MagnitudeDesign(modalities="text+image", conditions=conditions, trials_per_session=trials_per_session)
    params = {"sigma_dec": sigma_dec}
    theta = AGENTS["observer"].parameters.vector(AGENTS["observer"].parameters.validate(params))
    table = simulate("magnitude", "observer", n, seed, params, design=design)
    tasks, modality = [TASK_NAMES.index(k) for k in VISUAL_TASKS], MODALITIES.index("text+image")
    cells = [CONDITIONS.index(c) for c in conditions]
    w = np.array([pooled_w_prior(build_cube(g))[0][tasks][:, cells, modality] for _, g in table.groupby("subject")])
    truth = np.array([observer_weight(theta, modality, design.blur_constant if c == "noise-constant" else 0.0,
                                      LONG_CONTEXT if c == "context-long" else design.context, CONDITIONS.index(c))[0]
                      for c in conditions])
    return (w - truth).reshape(-1, len(conditions)), truth

"""Hierarchical PyMC version of the dissonant model, partially pooled across scenarios.

Subjects (LLMs, or synthetic agents) get every parameter from a population (the priors and names
of :func:`~cogtestbed.inference.hierarchical.subject_parameters`, each parameter through its own
transform: logit for τ, κ, ν).  By default the data choose, per parameter, whether it is sampled
centred (:mod:`~cogtestbed.inference.centring`: centred where each subject's data pin it far more
tightly than the population spreads subjects, as hundreds of exact distributions a subject do;
non-centred otherwise, and for every parameter with fewer than
:data:`~cogtestbed.inference.centring.MIN_SUBJECTS` subjects).  Until 28 Nov 2026 every parameter was
centred: on subjects drawn from the prior on a reduced grid that fit diverged (6 subjects: R-hat 1.166,
716 divergences; 10 subjects: 454), where the data's choice held or nearly (0 and 13 divergences;
docs/benchmarks.md).  Its price: on a few sharply pinned subjects (fewer than ``MIN_SUBJECTS``, as a
handful of LLMs with exact distributions) the non-centred form takes far longer trajectories than the
centred one (6 models at the study design of docs/revealed-belief.md: 2,437 s wall against 242 s, both
holding); ``subject_level="centred"`` keeps the earlier form for such data.
On top, the RevB biases that the paper finds to vary by scenario (first-option, anchoring,
round-number and midpoint biases, §5) are partially pooled *across the scenarios within each
subject*: ``β[s, c] = β[s] + σ_β · z[s, c]`` with ``z ~ Normal(0, 1)`` (non-centred) and
``σ_β ~ HalfNormal(`` :data:`SCENARIO_SD_SCALE` ``)``, so a subject's dice and choice biases
shrink towards its own overall bias.  This level stays non-centred: a synthetic agent has no
scenario deviations at all (σ_β → 0), where the centred form would be a funnel.

A bias gets scenario deviations only in the scenarios whose items carry its feature (β_mid: the
numeric dice and coins items; β_round: only dice sums reach 10) and only when at least two
scenarios do: a deviation in a scenario without the feature, or in the only scenario with it,
is a direction the data cannot see (β[s] and σ_β·z[s, c] enter only through their sum), which
leaves the sampler a flat ridge.

The likelihood is the model's numba kernel :func:`~cogtestbed.inference.revealed_model.dissonant_pointwise_kernel`
(Dirichlet with the ε concentration floor on exact distributions, multinomial on sampled ones)
behind :func:`~cogtestbed.inference.hierarchical.pointwise_loglik_op`, with one kernel "subject"
per (subject, scenario) cell: the log-density NUTS sees is the MLE's, value and exact gradient
(it was about ten times faster than the same likelihood written as a pytensor graph over the
padded outcome matrix: 24 ms against 220 ms per logp + gradient at 8 subjects × 960 steps).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.environments.revealed import FEATURES
from cogtestbed.environments.revealed_items import SCENARIOS
from cogtestbed.errors import InputError

#: Biases given per-scenario deviations (partially pooled within each subject).
SCENARIO_POOLED = ("beta_first", "beta_anchor", "beta_round", "beta_mid")
#: Scale of the HalfNormal prior on the across-scenario SD of a pooled bias: deviations of
#: ±1 in log-odds between scenarios are plausible (the paper's implied first-option biases span
#: 1.4–4.5 across scenarios and models), ±2 are not.
SCENARIO_SD_SCALE = 0.5
#: Parameterisation of the population → subject level: ``data`` (the data's choice per parameter,
#: :func:`~cogtestbed.inference.centring.centred_parameters`), ``centred`` or ``non-centred`` (every parameter).
SUBJECT_LEVEL = "data"
#: The values of ``subject_level``.
SUBJECT_LEVELS = ("data", "centred", "non-centred")
#: Feature (row of the item feature matrix) of each pooled bias.
_FEATURE_OF = {"beta_first": "first", "beta_anchor": "anchor", "beta_round": "round", "beta_mid": "mid"}


def cell_arrays(model: Any, trials: pd.DataFrame) -> tuple[list[Any], np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Every valid step of every subject, grouped by (subject, scenario) cell.

    Returns the subject ids (table order), the scenario index of every step, its cell index
    ``subject · len(SCENARIOS) + scenario`` (non-decreasing, as the kernel wants) and the kernel's
    observation arrays (:attr:`DissonantModel.observation_fields`) in that order."""
    subjects = list(dict.fromkeys(trials["subject"].tolist()))
    parts, cells, scens = [], [], []
    for i, s in enumerate(subjects):
        rows = trials[(trials["subject"] == s).to_numpy() & trials["valid"].to_numpy(dtype=bool)]
        scen = np.array([SCENARIOS.index(str(c)) for c in rows["scenario"]], dtype=np.int64)
        order = np.argsort(scen, kind="stable")
        parts.append(model.observations(rows.iloc[order]))
        scens.append(scen[order])
        cells.append(i * len(SCENARIOS) + scen[order])
    if not parts:
        raise InputError("no subjects with observations to fit")
    fields = model.observation_fields
    arrays = {f: np.ascontiguousarray(np.concatenate([p[f] for p in parts])) for f in fields}
    return subjects, np.concatenate(scens), np.concatenate(cells), arrays


def pooled_scenarios(arrays: dict[str, np.ndarray], scenario: np.ndarray) -> dict[str, tuple[int, ...]]:
    """Per pooled bias, the scenarios whose RevB items carry its feature, when there are at least
    two (module docstring); biases with fewer are not pooled."""
    revb = arrays["channel"] == 0
    out = {}
    for name in SCENARIO_POOLED:
        f = FEATURES.index(_FEATURE_OF[name])
        has = np.abs(arrays["feat"][:, f, :]).sum(axis=1) > 0
        present = tuple(int(c) for c in np.unique(scenario[revb & has]))
        if len(present) >= 2:
            out[name] = present
    return out


def check_subject_level(subject_level: str) -> None:
    """:class:`InputError` in one line unless ``subject_level`` is one of :data:`SUBJECT_LEVELS`."""
    if subject_level not in SUBJECT_LEVELS:
        raise InputError(f"subject_level must be one of {', '.join(SUBJECT_LEVELS)}, got {subject_level!r}")


def subject_level_centred(model: Any, trials: pd.DataFrame, subject_level: str = SUBJECT_LEVEL) -> tuple[str, ...]:
    """The parameters the hierarchical fit samples centred at ``subject_level`` (:data:`SUBJECT_LEVELS`): the data's
    choice (:func:`~cogtestbed.inference.centring.centred_parameters`, on the subjects' valid steps), every parameter,
    or none."""
    from cogtestbed.inference.centring import centred_parameters

    check_subject_level(subject_level)
    if subject_level == "centred":
        return tuple(model.parameters.names)
    if subject_level == "non-centred":
        return ()
    return centred_parameters(model, model.subject_data(trials))


def dissonant_pymc_model(model: Any, trials: pd.DataFrame, hierarchical: bool = True,
                         subject_level: str = SUBJECT_LEVEL) -> Any:
    """The ``pm.Model`` (contract of :mod:`cogtestbed.inference.hierarchical`); ``subject_level`` (``data``,
    the default, ``centred`` or ``non-centred``: :func:`subject_level_centred`) says which parameters
    :func:`~cogtestbed.inference.hierarchical.subject_parameters` samples centred."""
    import pymc as pm
    import pytensor.tensor as pt

    from cogtestbed.inference.hierarchical import pointwise_loglik_op, subject_parameters

    check_subject_level(subject_level)  # refused with independent subjects too
    centred = subject_level_centred(model, trials, subject_level) if hierarchical else ()
    subjects, scenario, cell, arrays = cell_arrays(model, trials)
    pooled = pooled_scenarios(arrays, scenario)
    n_sub, n_scen = len(subjects), len(SCENARIOS)
    coords: dict[str, Any] = {"subject": subjects, "obs": np.arange(len(cell))}
    coords.update({f"{name}_scenario": [SCENARIOS[c] for c in cs] for name, cs in pooled.items()})
    op = pointwise_loglik_op(model.kernel(), model.name)
    with pm.Model(coords=coords) as m:
        theta = subject_parameters(model.parameters, hierarchical, centred=centred)
        columns = []
        for name in model.parameters.names:
            value = pt.repeat(theta[name][:, None], n_scen, axis=1)  # (subject, scenario)
            if name in pooled:
                sd = pm.HalfNormal(f"{name}_scenario_sd", SCENARIO_SD_SCALE)
                z = pm.Normal(f"{name}_scenario_z", 0.0, 1.0, dims=("subject", f"{name}_scenario"))
                value = pt.inc_subtensor(value[:, list(pooled[name])], sd * z)
                pm.Deterministic(f"{name}_by_scenario", value[:, list(pooled[name])],
                                 dims=("subject", f"{name}_scenario"))
            columns.append(value.reshape((n_sub * n_scen,)))
        mat = pt.stack(columns, axis=1)
        obs_cell = pm.Data("obs_cell", cell, dims="obs")
        data = [pm.Data(name, arr, dims="obs" if arr.ndim == 1 else None) for name, arr in arrays.items()]
        ll = op(mat, obs_cell, *data)[0]
        pm.CustomDist("answers", ll, logp=lambda value, row_ll: row_ll + 0.0 * value,
                      observed=np.zeros(len(cell)), dims="obs")
    m.cogtestbed_key = ("revealed-dissonant", hierarchical, centred, tuple(sorted(pooled.items())))
    return m

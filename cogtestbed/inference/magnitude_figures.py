"""BayesBench's Fig. 6A, 6C and 7 as metrics (Ma, Wang & Fountas 2025, Sec. 5.1–5.2).

* :func:`bias_variance` — Fig. 6A, "bias–variance decomposition under steering ablations": per
  (task, condition, modality) the normalised squared error NRMSE² split into a bias part and a
  variance part.  [gap] The paper gives no formula; here E[y | x] is each session's least-squares
  line ŷ = a + b·x, so y − x = (ŷ − x) + (y − ŷ) and, least-squares residuals being orthogonal to
  1 and x, Σ(y − x)² = Σ(ŷ − x)² + Σ(y − ŷ)² exactly; both parts are divided by the baseline's
  Σ(midpoint − x)² (Sec. 3.5), so ``bias2 + variance = nrmse2`` (:data:`BIAS_VARIANCE_READING`).
* :func:`image_weight` — Fig. 6C, "implied image weighting under noise ablation": 1 − α of
  Table 1's α-combiner fitted in each noise condition (base, constant and gradual blur); a
  Bayes-consistent subject lowers it as the image gets noisier (Sec. 5.2).
* :func:`combiner_fits` — Fig. 7, the multimodal answers fitted from the unimodal ones by a random
  forest and by linear regression (and the Bayes-optimal fit, Oracle GLS, for the middle panel).
  [gap] The paper gives no forest settings or validation scheme; here scikit-learn's
  ``RandomForestRegressor`` with ``trees`` trees (100, its default, in the documented setting),
  seed :data:`FOREST_SEED`, and both learners scored out of sample by :data:`FOREST_FOLDS`-fold
  cross-validation (in sample a forest fits its training answers almost exactly), on the base
  condition's trials pooled over sessions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cogtestbed.inference.magnitude_fits import Cube, text_weight
from cogtestbed.tables.magnitude import CONDITIONS, MODALITIES, TASK_NAMES, VISUAL_TASKS

#: Conditions Fig. 6A decomposes (the steering ablations and the base) and Fig. 6C weighs.
STEERING_CONDITIONS = ("base", "verbal", "numerical", "numerical-biased")
NOISE_CONDITIONS = ("base", "noise-constant", "noise-gradual")
#: [gap] E[y | x] of the decomposition: each session's least-squares line (module docstring).
BIAS_VARIANCE_READING = "session least-squares line; parts normalised by the baseline's squared error"
#: Fewest valid answers of a session that enters the decomposition (a line needs more than 2).
MIN_SESSION_ANSWERS = 3
#: Fewest trials answered in all three modalities for α, and for the cross-validated fits.
MIN_TRIPLES = 6
#: [gap] Cross-validation folds and seed of the random-forest and linear-regression fits.
FOREST_FOLDS = 5
FOREST_SEED = 0
#: Trees of the documented random-forest setting (scikit-learn's default; `--forest-trees 100`).
FOREST_TREES = 100

_T, _I, _B = (MODALITIES.index(m) for m in ("text", "image", "text+image"))


def bias_variance(cube: Cube) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """{task: {condition: {modality: {bias2, variance, nrmse2, n}}}} for the conditions of
    :data:`STEERING_CONDITIONS` played (module docstring; ``bias2 + variance == nrmse2``)."""
    valid = ~np.isnan(cube.Y) & ~np.isnan(cube.X)
    n = valid.sum(-1)
    keep = n >= MIN_SESSION_ANSWERS
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = np.where(valid, cube.X, 0.0).sum(-1) / n
        ym = np.where(valid, cube.Y, 0.0).sum(-1) / n
        dx = np.where(valid, cube.X - xm[..., None], 0.0)
        sxx = (dx * dx).sum(-1)
        b = (dx * np.where(valid, cube.Y - ym[..., None], 0.0)).sum(-1) / sxx
    keep &= sxx > 0
    use = valid & keep[..., None]
    fit = ym[..., None] + b[..., None] * (cube.X - xm[..., None])
    mid = ((cube.LO + cube.HI) / 2.0)[..., None]

    def total(values: np.ndarray) -> np.ndarray:
        return np.where(use, values, 0.0).sum((-1, -2))

    bias2, var, den = total((fit - cube.X) ** 2), total((cube.Y - fit) ** 2), total((mid - cube.X) ** 2)
    out: dict[str, Any] = {}
    for c_name in STEERING_CONDITIONS:
        c = CONDITIONS.index(c_name)
        for k, m in np.argwhere(use[:, c].any((-1, -2))):
            if den[k, c, m] > 0:
                cell = {"bias2": float(bias2[k, c, m] / den[k, c, m]), "variance": float(var[k, c, m] / den[k, c, m]),
                        "n": int(use[k, c, m].sum())}
                cell["nrmse2"] = cell["bias2"] + cell["variance"]
                out.setdefault(TASK_NAMES[k], {}).setdefault(c_name, {})[MODALITIES[m]] = cell
    return out


def _triples(cube: Cube, k: int, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(y_text, y_image, y_text+image, ok) of a task's condition, sessions × trials; ``None``
    unless at least :data:`MIN_TRIPLES` trials were answered in all three modalities."""
    yt, yi, yc = cube.Y[k, c, _T], cube.Y[k, c, _I], cube.Y[k, c, _B]
    ok = ~(np.isnan(yt) | np.isnan(yi) | np.isnan(yc))
    return (yt, yi, yc, ok) if ok.sum() >= MIN_TRIPLES else None


def image_weight(cube: Cube) -> dict[str, dict[str, float]]:
    """{task: {condition: 1 − α}} for the visual tasks and the conditions of
    :data:`NOISE_CONDITIONS` played in all three modalities (Fig. 6C)."""
    out: dict[str, dict[str, float]] = {}
    for task in VISUAL_TASKS:
        k = TASK_NAMES.index(task)
        for c_name in NOISE_CONDITIONS:
            t = _triples(cube, k, CONDITIONS.index(c_name))
            if t is not None:
                out.setdefault(task, {})[c_name] = 1.0 - text_weight(*t)
    return out


def combiner_fits(cube: Cube, trees: int, oracle_rmse: dict[str, float] | None = None
                  ) -> dict[str, dict[str, float | int]]:
    """{task: {random_forest, linear_regression, bayes_oracle, n}}: RMSE of the multimodal answers
    predicted from the unimodal ones (Fig. 7), the two learners cross-validated (module docstring);
    ``oracle_rmse``: the Oracle GLS fit per task of :func:`~cogtestbed.inference.magnitude.cue_combination`."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import KFold, cross_val_predict

    base = CONDITIONS.index("base")
    out: dict[str, dict[str, float | int]] = {}
    for task in VISUAL_TASKS:
        t = _triples(cube, TASK_NAMES.index(task), base)
        if t is None or int(t[3].sum()) < 2 * FOREST_FOLDS:
            continue
        yt, yi, yc, ok = t
        features, target = np.column_stack([yt[ok], yi[ok]]), yc[ok]
        folds = KFold(FOREST_FOLDS, shuffle=True, random_state=FOREST_SEED)
        forest = RandomForestRegressor(n_estimators=trees, random_state=FOREST_SEED, n_jobs=1)
        row: dict[str, float | int] = {"n": int(target.size)}
        for name, learner in (("random_forest", forest), ("linear_regression", LinearRegression())):
            pred = cross_val_predict(learner, features, target, cv=folds)
            row[name] = float(np.sqrt(np.mean((pred - target) ** 2)))
        if oracle_rmse and task in oracle_rmse:
            row["bayes_oracle"] = oracle_rmse[task]
        out[task] = row
    return out

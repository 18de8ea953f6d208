"""An amortised per-subject statistic for ``plan --looks auto``, trained and validated per plan.

``plan --looks auto`` simulates ~240,000 subjects; fitting each by the coarse-start MLE
(:data:`~cogtestbed.planning.kinds.sequential.seqfit.AUTO_FIT`) is most of its time.  The issue names *amortised
point estimators trained once per model and design and validated by simulation* as a way that keeps the plan's
guarantees.  This module is that estimator, the simplest one that needs no code per family
(``benchmarks/studies/amortised_statistic.py`` measured it first):

* **features** (:func:`features`): a subject's NLL at the nodes of the model's start grid with
  :data:`GRID_POINTS` nodes a parameter (what the coarse-start MLE computes before its BFGS starts), as the
  normalised likelihood weights ``w = exp(-(NLL - min NLL))``, the log-likelihood differences clipped at
  −:data:`CLIP` (over :data:`CLIP`), the grid's posterior mean of the effect ``w · c`` (``c``: the effect at each
  node on the test's scale, clipped into the training truths' 0.1–99.9 % range) and a constant;
* **estimator**: a ridge regression (penalty :data:`RIDGE` × training subjects) of each subject's *true* effect
  (on the test's scale, less the plan's one-sample null) on those features, trained on :data:`TRAIN_SUBJECTS`
  subjects simulated at the plan's design and trials, at population effects :data:`TRAIN_MULTIPLES` times the
  planned one (those whose moved medians stay strictly inside the parameters' bounds: where bounds drop the
  negative multiples, the training leans toward the effect, recorded as ``training_effects``) and between-subject
  SDs :data:`SD_FACTORS` times the plan's (a plan drawn from a fitted population keeps that population's SDs), seeds
  of their own (:func:`train`);
* **validation and choice** (:func:`choose_statistic`): :data:`VALIDATION` fresh subjects under the plan's null and
  as many under its effect, each estimated by the trained estimator and by ``AUTO_FIT``; the estimator is the plan's
  statistic when its standardized effect (difference of the two means over their pooled SD, what a t-test's
  power rests on) is positive and at least :data:`EFFICIENCY` times the MLE's, so that it needs at most about 5 % more
  subjects; otherwise the plan keeps ``AUTO_FIT``.  The choice uses subjects of its own, never the calibration,
  search or fresh studies, so every error rate the plan reports is still measured on studies that chose nothing.

The statistic is the plan's: every simulated study (effect, calibration, search, fresh null, robustness) and
the fair comparator compute it, the null calibration moves the bounds to its own null distribution, and
``run --plan``'s looks compute it from plan.json (``statistic.fit``: the coefficients and node effects,
:meth:`AmortisedFit.record`, :func:`statistic_of`).  It is not an MLE: it shrinks toward the training population,
so how its null mean moves under another population is the robustness section's business (the plan reports it
for whichever statistic it chose).  The constants are the project's choices, not a paper's.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.planning.kinds.sequential.seqfit import AUTO_FIT, SubjectFit
from cogtestbed.studies.study_kinds import PowerStudy

#: The value of ``statistic.fit.estimator`` that names this statistic in plan.json.
ESTIMATOR = "amortised"
#: Start-grid nodes a parameter whose NLL the features are (3: 27 nodes for RW±, 243 for five parameters).
GRID_POINTS = 3
#: Largest start grid the estimator is trained on (more nodes than this: the plan keeps ``AUTO_FIT``).
MAX_NODES = 243
#: Training subjects, and the population effects (times the planned one) and between-subject SDs (times the
#: plan's) they are simulated at: symmetric about the null, so that the regression's shrinkage pulls toward the
#: null and not toward the effect, and spread over SDs, so that it is not tied to one population's spread.
TRAIN_SUBJECTS = 12_000
TRAIN_MULTIPLES: tuple[float, ...] = tuple(float(x) for x in np.linspace(-3.0, 3.0, 13))
SD_FACTORS: tuple[float, ...] = (0.5, 1.0, 2.0)
#: Ridge penalty per training subject, and the clip of the log-likelihood differences.
RIDGE, CLIP = 1e-3, 30.0
#: Validation subjects under the null and under the effect (each), and the share of the MLE's standardized
#: effect the estimator must keep to be chosen (0.975: at most about 5 % more subjects for the same power).
VALIDATION, EFFICIENCY = 500, 0.975
#: Seed entropy of the training and validation subjects (``SeedSequence([seed, SEED_TAG, part, …])``): not the
#: simulator's 7,919, so none of them is a calibration, search or fresh study's.
SEED_TAG = 7_927


@dataclass(frozen=True)
class AmortisedFit:
    """A trained amortised estimator: start-grid nodes a parameter, the ridge coefficients (constant, the
    :math:`n` grid weights, the :math:`n` clipped log-likelihood differences, the grid mean of the effect) and the
    effect at each node (test scale, clipped).  Its estimates are on the test's scale less the plan's null."""

    grid_points: int
    coefficients: tuple[float, ...]
    node_effects: tuple[float, ...]

    def fitter(self, model: Any) -> Any:
        """``model`` with this estimator's start grid (its NLL at the nodes is all the features need)."""
        return SubjectFit(self.grid_points, 1).fitter(model)

    def estimates(self, model: Any, table: Any) -> dict[Any, float]:
        """Each subject of ``table`` with a valid trial, and its estimate (``model``: the fitted model, its
        lapse variant where the plan fits one); refused where the model's start grid is not the one the
        coefficients were trained on."""
        fitter = self.fitter(model)
        nodes = len(fitter.start_grid())
        if nodes != len(self.node_effects) or len(self.coefficients) != 2 * nodes + 2:
            raise InputError(f"the plan's amortised statistic was trained on a {len(self.node_effects)}-point start "
                             f"grid ({len(self.coefficients)} coefficients); model {model.name!r} here has {nodes} "
                             "points: plan again with this model and lapse setting")
        keys, x = features(fitter, table, np.asarray(self.node_effects, float))
        values = x @ np.asarray(self.coefficients, float)
        return dict(zip(keys, values.tolist(), strict=True))

    def contrasts(self, spec: PowerStudy, model: Any, table: Any, n: int, null: float | None = None) -> np.ndarray:
        """As :func:`~cogtestbed.planning.kinds.sequential.seqsim.subject_contrasts` (subject ids 0..n−1; NaN for a
        subject
        without a valid trial); ``null`` is not read: the estimates are against the plan's null it was trained on."""
        from cogtestbed.studies.study_data import fitted_model

        values = np.full(n, np.nan)
        for key, v in self.estimates(fitted_model(spec, model), table).items():
            values[int(str(key))] = v
        return values

    def record(self, model: Any) -> dict[str, Any]:
        """What plan.json keeps (``statistic.fit``): enough for ``run --plan``'s looks to compute it
        (:func:`statistic_of`)."""
        return {"estimator": ESTIMATOR, "grid_points": self.grid_points,
                "start_grid_size": len(self.fitter(model).start_grid()),
                "coefficients": list(self.coefficients), "node_effects": list(self.node_effects)}

    def words(self, model: Any) -> str:
        """One line for the text report."""
        nodes = len(self.fitter(model).start_grid())
        return (f"amortised per-subject estimate: a ridge regression on the NLL at a {nodes:,}-point start grid "
                f"({self.grid_points} nodes a parameter), trained on about {TRAIN_SUBJECTS:,} simulated subjects and "
                "validated against the coarse-start MLE; simulated, calibrated and computed at the run's looks alike")


def statistic_of(statistic: Mapping[str, Any] | None) -> SubjectFit | AmortisedFit:
    """The per-subject statistic a plan recorded (``statistic.fit``): the amortised estimator, the MLE's search
    (:func:`~cogtestbed.planning.kinds.sequential.seqfit.fit_of`) or, without a record, the model's own MLE."""
    from cogtestbed.planning.kinds.sequential.seqfit import fit_of

    rec = (statistic or {}).get("fit") or {}
    if rec.get("estimator") != ESTIMATOR:
        return fit_of(statistic)
    try:
        return AmortisedFit(int(rec["grid_points"]), tuple(float(v) for v in rec["coefficients"]),
                            tuple(float(v) for v in rec["node_effects"]))
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"the plan's amortised statistic is incomplete or malformed ({err}): plan again") from None


def features(fitter: Any, table: Any, node_effects: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """(subjects with a valid trial, their design rows) of ``table``: a constant, the normalised likelihood
    weights over ``fitter``'s start grid, the clipped log-likelihood differences and the grid mean of the effect
    (module docstring)."""
    keys, nll = grid_nll(fitter, table)
    return keys, design_rows(nll, node_effects)


def grid_nll(fitter: Any, table: Any) -> tuple[list[Any], np.ndarray]:
    """(subjects with a valid trial, their NLL at each node of ``fitter``'s start grid)."""
    grid = fitter.start_grid()
    keys, rows = [], []
    for key, d in fitter.subject_data(table).items():
        if fitter.n_observations(d):
            keys.append(key)
            rows.append(fitter.nll_many(grid, d))
    return keys, (np.asarray(rows, float) if rows else np.empty((0, len(grid))))


def design_rows(nll: np.ndarray, node_effects: np.ndarray) -> np.ndarray:
    """The features of subjects whose NLL at the grid's nodes are the rows of ``nll``."""
    if not len(nll):
        return np.empty((0, 2 * nll.shape[1] + 2))
    ell = -(nll - np.min(nll, axis=1, keepdims=True))
    w = np.exp(ell)
    w /= w.sum(axis=1, keepdims=True)
    return np.column_stack([np.ones(len(nll)), w, np.maximum(ell, -CLIP) / CLIP, w @ node_effects])


def _subjects(spec: PowerStudy, model: Any, trials: int | None, runs: int, n: int,
              seq: np.random.SeedSequence) -> tuple[Any, dict[str, np.ndarray]]:
    """(trial table, true parameters) of ``n`` subjects drawn as the plan draws them."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import power_subjects
    from cogtestbed.studies.study_data import design_for_trials

    exp = get_experiment(spec.experiment)
    return power_subjects(spec, exp, model, design_for_trials(exp, trials, spec.design), runs, n, seq)


def _feasible(spec: PowerStudy, model: Any) -> list[float]:
    """The :data:`TRAIN_MULTIPLES` whose population keeps the median of every parameter the effect moves strictly
    inside its bounds (a median on a bound, e.g. a discount rate k = 0, puts every subject's effect near −690 on a
    log scale; a parameter the effect does not move keeps the plan's median, on a bound or not)."""
    from cogtestbed.studies.model_studies import effect_shift, population_medians

    moved = set(effect_shift(spec, model))
    out = []
    for mult in TRAIN_MULTIPLES:
        try:
            medians = population_medians(spec.model_copy(update={"effect_size": mult * float(spec.effect_size)}), model)
        except InputError:
            continue
        if all(_inside(p.lower, p.upper, medians[p.name]) for p in model.parameters if p.name in moved):
            out.append(mult)
    return out


def _inside(lower: float, upper: float, value: float) -> bool:
    return bool(value > lower + 1e-9 * max(1.0, abs(lower)) and value < upper - 1e-9 * max(1.0, abs(upper)))


def trainable(spec: PowerStudy) -> str | None:
    """Why the plan cannot train the estimator for ``spec`` (None: it can)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_data import fitted_model

    model = fitted_model(spec, get_experiment(spec.experiment).model(spec.models[0]))
    nodes = len(SubjectFit(GRID_POINTS, 1).fitter(model).start_grid())
    if nodes != GRID_POINTS ** len(model.parameters):
        return f"the model's start grid is its own ({nodes:,} points), not {GRID_POINTS} nodes a parameter"
    if nodes > MAX_NODES:
        return f"its {GRID_POINTS}-node start grid has {nodes:,} points (more than {MAX_NODES})"
    if not spec.effect_size:
        return "the plan has no effect to train at"
    return None


@dataclass(frozen=True)
class Training:
    """What an estimator was trained on: its R², the subjects with a valid trial it saw, the population effects
    (times the planned one) its bounds allowed, and whether the between-subject SD factors applied (a plan drawn
    from a fitted population scatters its subjects by that population's SDs, not ``sd_between``)."""

    r2: float
    subjects: int
    multiples: tuple[float, ...]
    sd_factors: tuple[float, ...]

    def record(self) -> dict[str, Any]:
        return {"training_r2": self.r2, "training_subjects": self.subjects,
                "training_effects": [round(m, 6) for m in self.multiples],
                "training_sd_factors": list(self.sd_factors)}


def train(spec: PowerStudy, trials: int | None, runs: int, subjects: int | None = None,
          workers: int = 1) -> tuple[AmortisedFit, Training]:
    """The estimator for ``spec``'s model, design and trials, and what it was trained on (module docstring); the
    training populations simulated in a fork pool of ``workers`` (their random numbers are each population's
    own)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.driver import map_forked
    from cogtestbed.studies.model_studies import one_sample_null, one_sample_values
    from cogtestbed.studies.study_data import fitted_model

    model = get_experiment(spec.experiment).model(spec.models[0])
    fitter = SubjectFit(GRID_POINTS, 1).fitter(fitted_model(spec, model))
    null = one_sample_null(spec, model)
    grid = fitter.start_grid()
    names = list(model.parameters.names)
    nodes = np.asarray(one_sample_values(spec, model, {p: grid[:, i] for i, p in enumerate(names)}, null), float)
    multiples = _feasible(spec, model)
    if not multiples:
        raise InputError("no training population keeps the medians inside the parameters' bounds")
    per = max(2, (TRAIN_SUBJECTS if subjects is None else subjects) // (len(multiples) * len(SD_FACTORS)))
    calls = [(spec.model_dump_json(), mult, factor, trials, runs, per, null, j, k)
             for j, mult in enumerate(multiples) for k, factor in enumerate(SD_FACTORS)]
    batches = map_forked(_training_batch, calls, workers)
    truths = np.concatenate([y for _, y in batches])
    lo, hi = np.quantile(truths[np.isfinite(truths)], [0.001, 0.999])
    nodes = np.clip(np.nan_to_num(nodes, nan=0.0, posinf=hi, neginf=lo), lo, hi)
    x = np.vstack([design_rows(nll, nodes) for nll, _ in batches])
    y = np.concatenate([y for _, y in batches])
    keep = np.isfinite(x).all(axis=1) & np.isfinite(y)
    x, y = x[keep], y[keep]
    beta = np.linalg.solve(x.T @ x + RIDGE * len(y) * np.eye(x.shape[1]), x.T @ y)
    r2 = float(1 - np.var(y - x @ beta) / np.var(y))
    factors = SD_FACTORS if spec.from_population is None else (1.0,) * len(SD_FACTORS)
    return (AmortisedFit(GRID_POINTS, tuple(float(b) for b in beta), tuple(float(c) for c in nodes)),
            Training(r2, int(len(y)), tuple(multiples), factors))


def _training_batch(spec_json: str, mult: float, factor: float, trials: int | None, runs: int, per: int, null: float,
                    j: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """One training population's (NLL at the grid's nodes, true effect) of its subjects with a valid trial."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import one_sample_values
    from cogtestbed.studies.study_data import fitted_model
    from cogtestbed.studies.study_kinds import load_study

    spec = load_study(spec_json)
    assert isinstance(spec, PowerStudy)
    model = get_experiment(spec.experiment).model(spec.models[0])
    part = spec.model_copy(update={"effect_size": mult * float(spec.effect_size),
                                   "sd_between": spec.sd_between * factor})
    table, true = _subjects(part, model, trials, runs, per, np.random.SeedSequence([spec.seed, SEED_TAG, 0, j, k]))
    y = np.asarray(one_sample_values(part, model, true, null), float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        keys, nll = grid_nll(SubjectFit(GRID_POINTS, 1).fitter(fitted_model(spec, model)), table)
    return nll, y[[int(str(key)) for key in keys]]


def standardized(null: np.ndarray, effect: np.ndarray) -> float:
    """Difference of the two sets' means over their pooled SD (NaN estimates left out)."""
    a, b, sd = _pooled(null, effect)
    return float((b.mean() - a.mean()) / sd) if sd > 0 else float("nan")


def _null_sd(null: np.ndarray, effect: np.ndarray) -> float:
    """The null set's mean in pooled SDs (how far from 0 the statistic sits under the null)."""
    a, _, sd = _pooled(null, effect)
    return float(a.mean() / sd) if sd > 0 else float("nan")


def _pooled(null: np.ndarray, effect: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The two sets' finite estimates and their pooled SD (0 where a set is empty)."""
    a, b = null[np.isfinite(null)], effect[np.isfinite(effect)]
    return a, b, (math.sqrt((a.var() + b.var()) / 2) if a.size and b.size else 0.0)


def choose_statistic(spec: PowerStudy, null: PowerStudy, trials: int | None, runs: int,
                     say: Callable[[str], None] | None = None,
                     workers: int = 1) -> tuple[SubjectFit | AmortisedFit, dict[str, Any]]:
    """The plan's per-subject statistic and what chose it (plan.json's ``auto.statistic_choice``): the amortised
    estimator when it can be trained and keeps :data:`EFFICIENCY` of ``AUTO_FIT``'s standardized effect on
    :data:`VALIDATION` fresh subjects under ``null`` and as many under ``spec``; otherwise ``AUTO_FIT`` (training
    and validation in a fork pool of ``workers``)."""
    from cogtestbed.studies.driver import map_forked

    why = trainable(spec)
    if why is not None:
        return AUTO_FIT, {"chosen": "coarse-start MLE", "reason": f"no amortised estimator: {why}"}
    (say or (lambda _m: None))(f"sequential (--looks auto): training an amortised statistic on {TRAIN_SUBJECTS:,} "
                               f"simulated subjects, validated on 2 x {VALIDATION} against the coarse-start MLE")
    try:
        amortised, training = train(spec, trials, runs, workers=workers)
    except InputError as err:
        return AUTO_FIT, {"chosen": "coarse-start MLE", "reason": f"no amortised estimator: {err}"}
    calls = [(spec.model_dump_json(), part.model_dump_json(), amortised, trials, runs, which)
             for part, which in ((null, 1), (spec, 2))]
    sets = map_forked(_validation_set, calls, workers)
    est = {"amortised": [a for a, _ in sets], "mle": [m for _, m in sets]}
    sign = 1.0 if float(spec.effect_size) > 0 else -1.0  # in the effect's direction: a negative effect's d is > 0
    d = {k: sign * standardized(*v) for k, v in est.items()}
    keep = bool(math.isfinite(d["amortised"]) and math.isfinite(d["mle"]) and d["amortised"] > 0
                and d["amortised"] >= EFFICIENCY * d["mle"])
    ratio = (d["mle"] / d["amortised"]) ** 2 if d["amortised"] > 0 and d["mle"] > 0 else None
    choice = {"chosen": "amortised" if keep else "coarse-start MLE",
              "standardized_effect": {"amortised": _finite(d["amortised"]), "coarse_start_mle": _finite(d["mle"])},
              "subjects_ratio": _finite(ratio) if ratio is not None else None,
              "null_mean_sd": {"amortised": _finite(_null_sd(*est["amortised"])),
                               "coarse_start_mle": _finite(_null_sd(*est["mle"]))},
              **training.record(), "validation_subjects": 2 * VALIDATION,
              "rule": f"amortised when its standardized effect is positive and >= {EFFICIENCY:g} x the coarse-start "
                      "MLE's on fresh subjects under the null and the effect (seeds of their own)"}
    return (amortised if keep else AUTO_FIT), choice


def _validation_set(spec_json: str, part_json: str, amortised: AmortisedFit, trials: int | None, runs: int,
                    which: int) -> tuple[np.ndarray, np.ndarray]:
    """(amortised, coarse-start MLE) estimates of :data:`VALIDATION` fresh subjects drawn as ``part`` draws them."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import one_sample_null
    from cogtestbed.studies.study_kinds import load_study

    spec, part = load_study(spec_json), load_study(part_json)
    assert isinstance(spec, PowerStudy) and isinstance(part, PowerStudy)
    model = get_experiment(spec.experiment).model(spec.models[0])
    table, _ = _subjects(part, model, trials, runs, VALIDATION, np.random.SeedSequence([spec.seed, SEED_TAG, which]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (amortised.contrasts(spec, model, table, VALIDATION),
                AUTO_FIT.contrasts(spec, model, table, VALIDATION, one_sample_null(spec, model)))


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None

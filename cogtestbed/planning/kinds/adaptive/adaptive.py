"""Adaptive against fixed sessions of the same length, on synthetic subjects drawn across the prior
: posterior SD, recovery r, interval coverage and the trials each needs for a precision.

Both arms hold the same grid posterior (:class:`~cogtestbed.inference.adaptive.AdaptiveDesigner`,
the model's own likelihood), so they differ only in the trials asked:

* **adaptive**: each next trial maximises the expected information on the named parameters; the
  sessions are simulated through the experiment's environment (the path an LLM run takes) and their
  posteriors replayed from the table's ``design_index`` and answers;
* **fixed**: every subject gets the same sequence, a seeded random order of the whole design space
  (each candidate once before any repeats: the "random design" comparator of the ADO literature,
  Myung, Cavagnaro & Pitt 2013; this project's choice), answers drawn from the model's likelihood at
  the subject's true parameters.

True parameters are drawn from the prior each parameter declares (normal on its unconstrained
scale), so a calibrated posterior's central 90 % interval covers the truth 90 % of the time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.environments.adaptive import DESIGN_COLUMN
from cogtestbed.errors import InputError
from cogtestbed.experiments._adaptive import AdaptiveDecl, adaptive_fields, adaptive_model
from cogtestbed.inference.adaptive import AdaptiveDesigner, DesignSpace, kernel_table
from cogtestbed.no_data import pearson_r
from cogtestbed.registry import Experiment, get_experiment
from cogtestbed.simulation import simulate

#: Credible level of the intervals whose coverage is reported.
LEVEL = 0.9
ARMS = ("fixed", "adaptive")


@dataclass(frozen=True)
class Curves:
    """Per subject (rows) and trial (columns, after trial 1..N): the posterior of one parameter on
    its unconstrained scale, in one arm."""

    mean: np.ndarray
    sd: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass(frozen=True)
class AdaptiveComparison:
    """The study's raw results: the truth (unconstrained) and each arm's curves, per parameter."""

    experiment: str
    targets: tuple[str, ...]
    trials: int
    truth: dict[str, np.ndarray]
    curves: dict[str, dict[str, Curves]]  # arm -> parameter -> curves


def prior_draws(model: Any, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``n`` natural-scale values of every parameter from its declared prior (clipped into the bounds)."""
    out = {}
    for p in model.parameters:
        z = rng.normal(p.prior_mean, p.prior_sd, n)
        out[p.name] = np.asarray(p.inside(p.to_constrained(z)), dtype=np.float64)
    return out


def _space(exp: Experiment, design: Any) -> DesignSpace:
    decl = exp.adaptive
    assert isinstance(decl, AdaptiveDecl)
    return decl.space(design)


def compare(experiment: str | Experiment, targets: Sequence[str] | str, trials: int, subjects: int,
            seed: int = 0) -> AdaptiveComparison:
    """Simulate ``subjects`` subjects drawn from the prior through ``trials`` adaptive trials (on
    ``targets``) and ``trials`` fixed ones, and every posterior along the way (module docstring;
    the design: the spec's ``AdaptiveDecl.study_design`` with the adaptive fields)."""
    exp = get_experiment(experiment) if isinstance(experiment, str) else experiment
    model = adaptive_model(exp)
    fields = adaptive_fields(exp, targets, trials)
    assert isinstance(exp.adaptive, AdaptiveDecl)
    design = exp.env_cls.design_cls(**{**dict(exp.adaptive.study_design), **fields})
    space = _space(exp, design)
    if subjects < 2:
        raise InputError("the comparison needs at least 2 subjects")
    draw_rng, answer_rng, order_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    natural = prior_draws(model, subjects, draw_rng)
    truth = {p.name: np.asarray(p.to_unconstrained(natural[p.name])) for p in model.parameters}
    gen = exp.generators[model.name]
    table = simulate(exp, gen.agent, subjects, seed, gen.agent_params(natural), design=design)
    tuple_targets = tuple(fields["adaptive"])
    decl = exp.adaptive
    assert isinstance(decl, AdaptiveDecl)
    if decl.observations is not None:  # both arms through the environment, posteriors from the kernel
        fixed_design = type(design)(**{**design.model_dump(), "adaptive": (), "trials": 0})
        fixed = simulate(exp, gen.agent, subjects, seed, gen.agent_params(natural), design=fixed_design)
        curves = {arm: _observed_curves(model, space, tuple_targets, decl.observations(t), trials)
                  for arm, t in (("fixed", fixed), ("adaptive", table))}
        return AdaptiveComparison(exp.name, tuple_targets, trials, truth, curves)
    adaptive_runs = [(g[DESIGN_COLUMN].to_numpy(dtype=np.int64), g["action"].to_numpy(dtype=np.int64))
                     for _, g in table.sort_values(["subject", "trial"]).groupby("subject", sort=True)]
    if any(len(d) != trials for d, _ in adaptive_runs):
        raise InputError("an adaptive session ended early (an invalid answer): the comparison needs whole sessions")
    fixed_runs = _random_order_runs(model, space, natural, trials, order_rng, answer_rng)
    curves = {arm: _posterior_curves(model, space, tuple_targets, runs)
              for arm, runs in (("fixed", fixed_runs), ("adaptive", adaptive_runs))}
    return AdaptiveComparison(exp.name, tuple_targets, trials, truth, curves)


def _random_order_runs(model: Any, space: DesignSpace, natural: dict[str, np.ndarray], trials: int,
                       order_rng: np.random.Generator, answer_rng: np.random.Generator
                       ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The fixed arm of a discrete design space: one seeded random order of the whole space (the same
    for every subject), answers drawn from the model's likelihood at each subject's parameters."""
    order = np.concatenate([order_rng.permutation(space.size) for _ in range(-(-trials // space.size))])[:trials]
    theta = np.column_stack([natural[n] for n in model.parameters.names])
    prob = np.exp(kernel_table(model, theta, space))[:, order, :]  # (subjects, trials, answers)
    u = answer_rng.random((theta.shape[0], trials, 1))
    picks = np.minimum((u > np.cumsum(prob, axis=2)).sum(axis=2), len(space.answers) - 1)
    answers = np.asarray(space.answers)[picks]
    return [(order, answers[i]) for i in range(theta.shape[0])]


def _observed_curves(model: Any, space: DesignSpace, targets: tuple[str, ...],
                     runs: list[list[tuple[int, dict[str, Any]]]], trials: int) -> dict[str, Curves]:
    """Each parameter's posterior after every trial of every run of kernel observations."""
    if any(len(r) != trials for r in runs):
        raise InputError("a session has an invalid answer: the comparison needs whole sessions")
    names = model.parameters.names
    out = {name: np.empty((4, len(runs), trials)) for name in names}
    for i, run in enumerate(runs):
        designer = AdaptiveDesigner(model, space, targets)
        for j, (d, obs) in enumerate(run):
            designer.observe(d, obs)
            for name in names:
                s = designer.summary(name, LEVEL)
                out[name][:, i, j] = s["mean"], s["sd"], s["lo"], s["hi"]
    return {name: Curves(*arr) for name, arr in out.items()}


def _posterior_curves(model: Any, space: DesignSpace, targets: tuple[str, ...],
                      runs: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, Curves]:
    """Each parameter's posterior after every trial of every run (designs, answers)."""
    names = model.parameters.names
    n, t = len(runs), len(runs[0][0])
    out = {name: np.empty((4, n, t)) for name in names}
    for i, (designs, answers) in enumerate(runs):
        designer = AdaptiveDesigner(model, space, targets)
        for j, (d, a) in enumerate(zip(designs, answers, strict=True)):
            designer.update(int(d), int(a))
            for name in names:
                s = designer.summary(name, LEVEL)
                out[name][:, i, j] = s["mean"], s["sd"], s["lo"], s["hi"]
    return {name: Curves(*arr) for name, arr in out.items()}


def trials_to_reach(sd_curve: np.ndarray, target: float) -> float:
    """First trial count (1-based) whose mean posterior SD is at most ``target`` (NaN: never)."""
    hit = np.flatnonzero(sd_curve <= target)
    return float(hit[0] + 1) if hit.size else float("nan")


def summarise(result: AdaptiveComparison, parameter: str, boot: int = 200, seed: int = 0) -> dict[str, Any]:
    """Per arm at the last trial: mean posterior SD, recovery r (posterior mean vs truth), 90 %
    interval coverage, each with its Monte-Carlo SE; and the trials the adaptive arm needs to reach
    the fixed arm's mean SD at the last trial, as a ratio of the fixed length (bootstrap SE over
    subjects; NaN where a resample never reaches it); and the ratio of the arms' mean posterior SDs at
    the last trial, adaptive over fixed (bootstrap SE over subjects)."""
    truth = result.truth[parameter]
    n = truth.size
    out: dict[str, Any] = {"parameter": parameter, "subjects": n, "trials": result.trials,
                           "targets": list(result.targets)}
    for arm in ARMS:
        c = result.curves[arm][parameter]
        sd, mean = c.sd[:, -1], c.mean[:, -1]
        covered = (c.lo[:, -1] <= truth) & (truth <= c.hi[:, -1])
        corr = pearson_r(truth, mean, what=("truth", "posterior means"))
        r = corr.or_nan()  # null in JSON, its reason in r_note, where undefined
        out[arm] = {
            "sd": float(sd.mean()), "sd_se": float(sd.std(ddof=1) / np.sqrt(n)),
            "r": r, "r_se": float((1 - r * r) / np.sqrt(n - 1)),
            **({} if corr.value is not None else {"r_note": f"r undefined: {corr.reason}"}),
            "coverage": float(covered.mean()), "coverage_se": float(np.sqrt(covered.mean() * (1 - covered.mean()) / n)),
        }
    fixed_sd, adaptive_sd = result.curves["fixed"][parameter].sd, result.curves["adaptive"][parameter].sd
    need = trials_to_reach(adaptive_sd.mean(axis=0), float(fixed_sd[:, -1].mean()))
    rng = np.random.default_rng(seed)
    ratios, sd_ratios = [], []
    for _ in range(boot):
        idx = rng.integers(0, n, n)
        ratios.append(trials_to_reach(adaptive_sd[idx].mean(axis=0), float(fixed_sd[idx, -1].mean())) / result.trials)
        sd_ratios.append(float(adaptive_sd[idx, -1].mean() / fixed_sd[idx, -1].mean()))
    ratios_arr = np.asarray(ratios)
    out["sd_ratio"] = float(adaptive_sd[:, -1].mean() / fixed_sd[:, -1].mean())
    out["sd_ratio_se"] = float(np.std(sd_ratios, ddof=1))
    out["adaptive_trials_to_fixed_sd"] = need
    out["trials_ratio"] = need / result.trials
    out["trials_ratio_se"] = float(np.nanstd(ratios_arr, ddof=1)) if np.isfinite(ratios_arr).sum() > 1 else float("nan")
    out["trials_ratio_unreached"] = int((~np.isfinite(ratios_arr)).sum())
    return out


def within(result: AdaptiveComparison, parameter: str, halfwidth: float) -> dict[str, np.ndarray]:
    """Per arm and trial count: the share of subjects whose posterior mean lies within ``halfwidth``
    of the truth (unconstrained scale)."""
    truth = result.truth[parameter][:, None]
    return {arm: (np.abs(result.curves[arm][parameter].mean - truth) <= halfwidth).mean(axis=0) for arm in ARMS}


def precision_trials(result: AdaptiveComparison, parameter: str, halfwidth: float,
                     assurance: float) -> dict[str, dict[str, float]]:
    """Per arm: the fewest trials per session at which P(|posterior mean − truth| ≤ ``halfwidth``) ≥
    ``assurance`` over subjects drawn from the prior (NaN: not within the simulated length), with that
    share and its Monte-Carlo SE."""
    out = {}
    n = result.truth[parameter].size
    for arm, share in within(result, parameter, halfwidth).items():
        hit = np.flatnonzero(share >= assurance)
        t = int(hit[0]) if hit.size else None
        p = float(share[t]) if t is not None else float(share[-1])
        out[arm] = {"trials": float(t + 1) if t is not None else float("nan"), "share": p,
                    "share_se": float(np.sqrt(p * (1 - p) / n))}
    return out

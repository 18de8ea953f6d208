"""Size, power and recovery studies of the belief-coherence tests (Yamin et al. 2026).

A *cell* simulates ``n_sims`` independent studies (one subject each: ``n_contexts`` × ``n_reps``
rows) and reports how often a test rejects at ``level`` with its Monte-Carlo SE.  T1c, T1a and T2
run on the π0 and decision arrays of one batch simulation (no trial table: the batch kernel plays
all studies at once); T1b, T3 and T4 build each study's trial table and call the same functions
the ``metrics`` command uses.

Studies (``python benchmarks/studies/belief_family.py size|power|recovery -o DIR``):

* ``size``: rejection rates of every test on a calibrated logit RUM (the paper's quick-simulation
  utilities, scale 6) over report noise σ ∈ {0, .05, .10, .15}, plus ``t1_lr_mean``, the
  repetition-averaged variant (A ~ p̄ with p̄ the mean of the context's π0 reports);
* size calibration (:func:`calibration_study`, ``benchmarks/studies/belief_size.py --calibration``):
  every test's size on rational agents at α, with its target (α ± .02, ≤ α inside the null, or 0
  where the statistic is degenerate), T2 also at flat shares (Remark 3.4's random agent);
* ``power``: T1c against the hidden-information leak by leak size, contexts (50–400),
  repetitions (1–10) and Defer-band width; T2 against a non-monotone deferral rule by K.
* ``recovery``: MLE of the 4-parameter MNL and of the loss-form decider at the paper design;
* ``hierarchical``: non-centred PyMC fit of either model (``--model mnl|loss``) to subjects from
  its hyperpriors (``--population prior|typical``), with R-hat, bulk/tail ESS, divergences, the
  verdict line ("converged" / "NOT converged: …") and the sampling CPU time.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cogtestbed.agents.belief import AGENTS
from cogtestbed.environments.belief import BeliefDesign, BeliefSessions, schedule
from cogtestbed.errors import InputError
from cogtestbed.inference import belief as tests
from cogtestbed.simulation import seed_streams, subject_params

#: Tests that run on arrays of one batch simulation.
ARRAY_TESTS = ("t1_lr", "t1_lr_mean", "t1_cmi", "t2")
#: Tests that need each study's trial table.
TABLE_TESTS = ("t1_nested", "t3", "t4")
#: Permutations of T1a inside studies (the paper's bootstrap CI is skipped: it is not the decision).
STUDY_PERM = 100
#: Context-bootstrap resamples of T1a's paper rule inside studies.
STUDY_BOOT = 100
SIGMAS = (0.0, 0.05, 0.10, 0.15)
#: Leak size of the power sweeps over contexts, repetitions and Defer band (power ≈ .5 at 200 × 5).
POWER_LEAK = 0.03


def generating_values(agent: str, params: Mapping[str, float]) -> dict[str, float]:
    """The model parameters that an agent's parameters imply (for recovery studies)."""
    from cogtestbed.errors import InputError
    from cogtestbed.inference.belief_models import mnl_centred, mnl_coefficients, normalise_loss

    if agent in ("logit-rum",):
        return {k: float(v) for k, v in mnl_centred(mnl_coefficients(params, params["scale"])).items()}
    if agent == "loss-rum":
        out = normalise_loss(params["c_fp"], params["c_fn"], params["c_d"], params["scale"])
        return {**{k: float(v) for k, v in out.items()}, "gamma": float(params["gamma"])}
    raise InputError(f"no model parameters for agent {agent!r} (logit-rum or loss-rum)")


def study_design(test: str, **fields: Any) -> BeliefDesign:
    """The smallest design a test needs: π0 + decision; T3 adds the variants, T4 the LIE phases."""
    base: dict[str, Any] = {"variants": ("pi0",), "lie_node": "none"}
    if test == "t3":
        base["variants"] = ("pi0", "mse", "abs", "bayes")
    if test == "t4":
        base.pop("lie_node")
    return BeliefDesign(**{**base, **fields})


def simulate_outcomes(agent: str, params: Mapping[str, Any], design: BeliefDesign, n: int, seed: int
                      ) -> tuple[BeliefSessions, Any, dict[str, np.ndarray]]:
    """Batch-simulate ``n`` studies (subjects) of ``agent``; returns sessions, outcomes, parameters."""
    from cogtestbed.environments.belief import BeliefCoherenceEnv

    agent_cls = AGENTS[agent]
    per = subject_params(agent_cls, params, n)
    env_rng, agent_rng = seed_streams(seed)
    sessions = BeliefCoherenceEnv.sample_sessions(design, n, env_rng)
    uniforms = agent_rng.random((n, BeliefCoherenceEnv.max_steps(design) * agent_cls.draws_per_trial))
    return sessions, agent_cls.simulate_batch(design, sessions, per, uniforms), per


def study_arrays(design: BeliefDesign, sessions: BeliefSessions, outcomes: Any) -> list[dict[str, np.ndarray]]:
    """Per study: p (π0 report), a (decision), θ, group (context) per (context, rep) row."""
    kind, arg = schedule(design)
    s = kind.size
    i_belief = int(np.flatnonzero((kind == 0) & (arg == 0))[0])
    i_dec = int(np.flatnonzero(kind == 1)[0])
    r, c = design.n_reps, design.n_contexts
    p = outcomes.action[:, i_belief::s]
    a = outcomes.action[:, i_dec::s].astype(np.int64)
    group = np.repeat(np.arange(c), r)
    return [{"p": p[i], "a": a[i], "theta": np.repeat(sessions.theta[i], r), "group": group}
            for i in range(sessions.n_subjects)]


def array_p_value(test: str, d: Mapping[str, np.ndarray], design: BeliefDesign, seed: int, level: float,
                  k_bins: int = tests.T2_BINS, options: Mapping[str, Any] | None = None) -> float:
    """p-value of ``test`` on one study's arrays; ``options``: T2's ``rule``, ``use_holm``, ``direction``."""
    if test == "t1_lr":
        return float(tests.t1_lr_arrays(d["a"], d["p"], d["theta"])["p_value"])
    if test == "t1_lr_mean":
        pbar = np.bincount(d["group"], d["p"]) / np.bincount(d["group"])
        return float(tests.t1_lr_arrays(d["a"], pbar[d["group"]], d["theta"])["p_value"])
    if test == "t1_cmi":
        if dict(options or {}).get("rule") == "paper":  # the bootstrap bound decides: 0 rejects, 1 does not
            r = tests.t1_cmi_arrays(d["a"], d["p"], d["theta"], d["group"], n_boot=STUDY_BOOT, n_perm=0, seed=seed,
                                    level=level)
            return 0.0 if r["reject_paper"] else 1.0
        return float(tests.t1_cmi_arrays(d["a"], d["p"], d["theta"], d["group"], n_boot=0, n_perm=STUDY_PERM,
                                         seed=seed)["p_value"])
    if test == "t2":
        return float(tests.t2_arrays(d["a"], d["p"], k=k_bins, level=level, n_perm=STUDY_PERM, seed=seed,
                                     **dict(options or {}))["p_value"])
    raise InputError(f"unknown array test {test!r}; choose one of {ARRAY_TESTS}")


def rejection_rate(test: str, agent: str, params: Mapping[str, Any], design: BeliefDesign, n_sims: int,
                   seed: int, level: float = tests.LEVEL, k_bins: int = tests.T2_BINS,
                   options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Share of ``n_sims`` simulated studies in which ``test`` rejects at ``level`` (± MC SE).

    ``options`` go to the test (T2: ``rule``, ``use_holm``, ``direction``; table tests: their keyword
    arguments, e.g. T4's ``baseline``)."""
    start = time.perf_counter()
    sessions, outcomes, _ = simulate_outcomes(agent, params, design, n_sims, seed)
    rejects = np.zeros(n_sims, dtype=bool)
    if test in ARRAY_TESTS:
        for i, d in enumerate(study_arrays(design, sessions, outcomes)):
            p = array_p_value(test, d, design, seed + i, level, k_bins, options)
            rejects[i] = p < level
    elif test in TABLE_TESTS:
        from cogtestbed.environments.belief import BeliefCoherenceEnv

        table = BeliefCoherenceEnv.trials_table(design, sessions, outcomes, agent=agent)
        fn: Callable[..., dict[str, Any]] = tests.TESTS[test]
        for i, (_, part) in enumerate(table.groupby("subject", sort=True)):
            kw = {"n_boot": 200, "seed": seed + i} if test != "t3" else {"n_perm": STUDY_PERM, "seed": seed + i}
            rejects[i] = bool(fn(part, level, **kw, **dict(options or {}))["reject"])
    else:
        raise InputError(f"unknown test {test!r}; choose one of {ARRAY_TESTS + TABLE_TESTS}")
    rate = float(rejects.mean())
    return {"test": test, "agent": agent, "rate": rate, "mc_se": float(np.sqrt(rate * (1 - rate) / n_sims)),
            "n_sims": n_sims, "seconds": time.perf_counter() - start}


# ----------------------------------------------------------------------------- studies
def size_study(tests_: Sequence[str] = ("t1_lr", "t1_lr_mean", "t1_cmi", "t2"), sigmas: Sequence[float] = SIGMAS,
               n_sims: int = 500, seed: int = 0, network: str = "child", level: float = tests.LEVEL
               ) -> pd.DataFrame:
    """Size of each test on a calibrated logit RUM across report noise σ (paper design 200 × 5)."""
    rows = []
    for j, test in enumerate(tests_):
        design = study_design(test, network=network)
        for sigma in sigmas:
            r = rejection_rate(test, "logit-rum", {"report_noise": sigma}, design, n_sims, seed + 1000 * j, level)
            rows.append({**r, "report_noise": sigma})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- size calibration
#: Half-width of the calibration target: a test is calibrated when its size lies within α ± this.
CALIBRATION_TOL = 0.02
#: Test order of the calibration cells' seeds (cell seed = seed + 1000·test + 100·σ index + 10·variant).
CALIBRATION_TESTS = ("t1_lr", "t1_lr_mean", "t1_cmi", "t1_nested", "t2", "t3", "t4")
#: Studies per cell: 500, 200 on the report-noise curves, fewer where a cell is degenerate or slow
#: (T1b ≈ 6 s CPU per study: six grouped-CV fits; T4's LIE tables ≈ 0.3 s).
CALIBRATION_SIMS, CURVE_SIMS = 500, 200


@dataclass(frozen=True)
class CalibrationCell:
    """One row of the calibration table: ``test`` on ``agent`` at report noise ``sigma`` with test
    ``options``; ``target``: ``"= α"`` (must lie within α ± :data:`CALIBRATION_TOL`), ``"≤ α"``
    (interior of the null: conservative is correct), ``"= 0"`` (degenerate: the statistic is exactly
    0) or ``"curve"`` (size under report noise, reported, no target); ``sims`` studies."""

    test: str
    agent: str
    sigma: float | None
    target: str
    options: tuple[tuple[str, Any], ...] = ()
    variant: int = 0
    sims: int = CALIBRATION_SIMS

    @property
    def label(self) -> str:
        return self.test + "".join(f" {k}={v}" for k, v in self.options if k != "baseline")


def calibration_cells() -> list[CalibrationCell]:
    """The calibration table's cells (rational agents; Remark 3.4's random agent for T2's flat null)."""
    cells = [CalibrationCell("t1_lr", "logit-rum", 0.0, "= α"), CalibrationCell("t1_lr_mean", "logit-rum", 0.0, "= α")]
    cells += [CalibrationCell("t1_cmi", "logit-rum", s, "= α" if s == 0 else "curve",
                              sims=CALIBRATION_SIMS if s == 0 else CURVE_SIMS) for s in SIGMAS]
    cells.append(CalibrationCell("t1_cmi", "logit-rum", 0.0, "= α", (("rule", "paper"),)))
    cells += [CalibrationCell("t1_nested", "logit-rum", 0.0, "= α", options, sims=300)  # same studies (variant 0)
              for options in ((), (("rule", "paper"),))]
    cells += [CalibrationCell("t2", "random", None, "= α"),
              CalibrationCell("t2", "random", None, "curve", (("rule", "any-pair"),), 1),
              CalibrationCell("t2", "random", None, "curve", (("rule", "any-pair"), ("use_holm", True)), 2)]
    cells += [CalibrationCell("t2", "logit-rum", s, "≤ α", sims=CALIBRATION_SIMS if s == 0 else CURVE_SIMS)
              for s in SIGMAS]
    cells += [CalibrationCell("t3", "logit-rum", s, "= 0" if s == 0 else "= α", sims=100 if s == 0 else 500)
              for s in SIGMAS[:3]]
    cells.append(CalibrationCell("t4", "logit-rum", 0.0, "= 0", (("baseline", False),), sims=200))
    return cells


def calibration_verdict(rate: float, target: str, level: float = tests.LEVEL) -> str:
    """Whether ``rate`` meets ``target`` (:class:`CalibrationCell`)."""
    if target == "= α":
        return "yes" if abs(rate - level) <= CALIBRATION_TOL else "no"
    if target == "≤ α":
        return "yes" if rate <= level + CALIBRATION_TOL else "no"
    if target == "= 0":
        return "yes" if rate == 0.0 else "no"
    return "–"


def calibration_row(cell: CalibrationCell, n_sims: int | None = None, seed: int = 0, network: str = "child",
                    level: float = tests.LEVEL) -> dict[str, Any]:
    """One cell's size: rate, MC SE, the exact one-sided 95 % Clopper–Pearson upper bound, the
    verdict against the cell's target (cell seed = seed + 1000·test + 100·σ index + 10·variant)."""
    j = CALIBRATION_TESTS.index(cell.test)
    i_sigma = SIGMAS.index(cell.sigma) if cell.sigma is not None else 0
    n = n_sims or cell.sims
    params = {} if cell.sigma is None else {"report_noise": cell.sigma}
    r = rejection_rate(cell.test, cell.agent, params, study_design(cell.test, network=network), n,
                       seed + 1000 * j + 100 * i_sigma + 10 * cell.variant, level, options=dict(cell.options))
    hits = round(r["rate"] * n)
    upper = float(stats.beta.ppf(0.95, hits + 1, n - hits)) if hits < n else 1.0
    return {"test": cell.label, "agent": cell.agent, "sigma": cell.sigma, "studies": n, "rate": r["rate"],
            "mc_se": r["mc_se"], "upper95": upper, "target": cell.target,
            "ok": calibration_verdict(r["rate"], cell.target, level), "seconds": r["seconds"]}


def calibration_study(cells: Sequence[CalibrationCell] | None = None, n_sims: int | None = None, seed: int = 0,
                      network: str = "child", level: float = tests.LEVEL) -> pd.DataFrame:
    """Size of every test on rational agents (200 × 5), one :func:`calibration_row` per cell."""
    return pd.DataFrame([calibration_row(c, n_sims, seed, network, level)
                         for c in (calibration_cells() if cells is None else cells)])


def band_width(u_defer: float, scale: float = 6.0) -> float:
    """Width of the p-interval where Defer is the modal action of the default logit RUM with a
    Defer utility ``u_defer`` in both states (No: (1, −1), Yes: (−1, 1)): ``u_defer`` for u in [0, 1]."""
    grid = np.linspace(0.0, 1.0, 2001)
    v_no, v_yes = 1.0 - 2.0 * grid, 2.0 * grid - 1.0
    return float(np.mean((u_defer > v_no) & (u_defer > v_yes)))


def power_study(n_sims: int = 200, seed: int = 0, network: str = "child", level: float = tests.LEVEL
                ) -> pd.DataFrame:
    """Power of T1c against the leak (size, contexts, repetitions, Defer band) and of T2 by K."""
    rows = []
    for leak in (0.0, 0.01, 0.02, 0.03, 0.05, 0.1):
        r = rejection_rate("t1_lr", "leak", {"leak": leak}, study_design("t1_lr", network=network), n_sims,
                           seed, level)
        rows.append({**r, "factor": "leak", "value": leak})
    for n_ctx in (50, 100, 200, 400):
        r = rejection_rate("t1_lr", "leak", {"leak": POWER_LEAK}, study_design("t1_lr", network=network,
                                                                          n_contexts=n_ctx), n_sims, seed + 1, level)
        rows.append({**r, "factor": "contexts", "value": n_ctx})
    for reps in (1, 2, 5, 10):
        r = rejection_rate("t1_lr", "leak", {"leak": POWER_LEAK}, study_design("t1_lr", network=network, n_reps=reps),
                           n_sims, seed + 2, level)
        rows.append({**r, "factor": "reps", "value": reps})
    for u_d in (0.1, 0.3, 0.6, 0.9):
        r = rejection_rate("t1_lr", "leak", {"leak": POWER_LEAK, "u_defer_0": u_d, "u_defer_1": u_d},
                           study_design("t1_lr", network=network), n_sims, seed + 3, level)
        rows.append({**r, "factor": "defer_band", "value": band_width(u_d)})
    for k in (3, 5, 10):
        r = rejection_rate("t2", "nonmono-defer", {"bump": 4.0}, study_design("t2", network=network), n_sims,
                           seed + 4, level, k_bins=k)
        rows.append({**r, "factor": "t2_bins", "value": k})
    return pd.DataFrame(rows)


def recovery_study(n_subjects: int = 50, seed: int = 0, network: str = "child") -> pd.DataFrame:
    """MLE recovery of the MNL (logit-rum) and loss-form (loss-rum) deciders at 200 × 5, σ = 0."""
    from cogtestbed.inference.belief_models import MODELS
    from cogtestbed.simulation import simulate

    rng = np.random.default_rng(seed)
    design = study_design("t1_lr", network=network)
    out = []
    draws = {
        "logit-rum": {"u_yes_0": rng.uniform(-2, 0, n_subjects), "u_yes_1": rng.uniform(0, 2, n_subjects),
                      "u_defer_0": rng.uniform(0, 0.8, n_subjects), "u_defer_1": rng.uniform(0, 0.8, n_subjects),
                      "scale": rng.uniform(3, 8, n_subjects)},
        "loss-rum": {"c_fp": rng.uniform(0.5, 2, n_subjects), "c_fn": rng.uniform(0.5, 2, n_subjects),
                     "c_d": rng.uniform(0.1, 0.4, n_subjects), "scale": rng.uniform(5, 20, n_subjects),
                     "gamma": rng.uniform(0.5, 1.5, n_subjects)},
    }
    for agent, model in (("logit-rum", "mnl"), ("loss-rum", "loss")):
        table = simulate("belief-coherence", agent, n_subjects, seed, draws[agent], design=design)
        fits = MODELS[model].fit_mle(table)
        full = AGENTS[agent].parameters.validate_array(draws[agent])
        for i, row in fits.iterrows():
            truth = generating_values(agent, {k: float(np.broadcast_to(v, (n_subjects,))[i]) for k, v in full.items()})
            for name, value in truth.items():
                out.append({"model": model, "subject": i, "parameter": name, "true": value,
                            "estimate": float(row[name])})
    return pd.DataFrame(out)


#: Populations of the hierarchical study: ``prior`` draws the population (median and SD) from the
#: model's hyperpriors; ``typical`` fixes it at the prior means with the population SD at the
#: scale of its HalfNormal prior (``SD_SCALE`` · prior SD on the unconstrained scale), so the
#: subjects differ as much as the hyperprior expects and per-subject recovery is measurable
#: (a prior draw may put every subject at one value).
POPULATIONS = ("prior", "typical")


def study_population(parameters: Any, n_subjects: int, population: str, rng: np.random.Generator
                     ) -> dict[str, np.ndarray]:
    """True natural-scale subject values of a hierarchical study (:data:`POPULATIONS`)."""
    from cogtestbed.inference.hierarchical import SD_SCALE, sample_hierarchical_prior

    if population == "prior":
        return sample_hierarchical_prior(parameters, n_subjects, rng)[1]
    if population == "typical":
        return {p.name: np.asarray(p.to_constrained(p.prior_mean + SD_SCALE * p.prior_sd
                                                    * rng.standard_normal(n_subjects)), dtype=np.float64)
                for p in parameters}
    raise InputError(f"population must be one of {', '.join(POPULATIONS)}, got {population!r}")


def hierarchical_study(model: str = "mnl", n_subjects: int = 20, n_contexts: int = 200, n_reps: int = 5,
                       draws: int = 500, chains: int = 2, seed: int = 0, network: str = "child",
                       population: str = "prior") -> tuple[pd.DataFrame, dict[str, Any]]:
    """Hierarchical (non-centred) PyMC fit of ``model`` to subjects drawn from its population prior.

    Returns per-subject posterior means against the truth, and the diagnostics (max R-hat, min
    bulk/tail ESS, divergences, the verdict line, sampling wall and CPU seconds of this process).
    The truth comes from the model's hyperpriors (the parameters' prior means and SDs, e.g.
    :data:`~cogtestbed.inference.belief_models.LOSS_PRIORS`; ``population``, :data:`POPULATIONS`),
    so the fit is checked where its hyperpriors say subjects lie.
    """
    from cogtestbed.experiments.belief_coherence import SPEC
    from cogtestbed.inference.hierarchical import fit_hierarchical
    from cogtestbed.simulation import simulate

    cm = SPEC.model(model)
    truth = study_population(cm.parameters, n_subjects, population, np.random.default_rng(seed))
    agent_params = SPEC.generator(model).agent_params(truth)
    design = study_design("t1_lr", network=network, n_contexts=n_contexts, n_reps=n_reps)
    table = simulate("belief-coherence", SPEC.generator(model).agent, n_subjects, seed, agent_params, design=design)
    cpu = time.process_time()
    fit = fit_hierarchical(cm, table, draws=draws, tune=draws, chains=chains, seed=seed, warn=False)
    cpu = time.process_time() - cpu
    post = fit.idata.posterior
    rows = [{"model": model, "subject": i, "parameter": name, "true": float(truth[name][i]),
             "estimate": float(post[name].values.reshape(-1, n_subjects)[:, i].mean())}
            for name in cm.parameters.names for i in range(n_subjects)]
    worst = fit.diagnostics.table
    diagnostics = {**fit.diagnostics.as_dict(), "cpu_seconds": cpu, "report": fit.diagnostics.report(),
                   "n_decisions": int((table["phase"] == "decision").sum()),
                   "worst_rhat": str(worst["r_hat"].idxmax()), "worst_ess_bulk": str(worst["ess_bulk"].idxmin()),
                   "worst_ess_tail": str(worst["ess_tail"].idxmin())}
    return pd.DataFrame(rows), diagnostics


def recovery_summary(frame: pd.DataFrame) -> pd.DataFrame:
    def stats_(g: pd.DataFrame) -> pd.Series:
        return pd.Series({"r": float(np.corrcoef(g["true"], g["estimate"])[0, 1]),
                          "bias": float((g["estimate"] - g["true"]).median()),
                          "rmse": float(np.sqrt(np.mean((g["estimate"] - g["true"]) ** 2)))})

    return frame.groupby(["model", "parameter"]).apply(stats_, include_groups=False).reset_index()


def plot_size(frame: pd.DataFrame, path: Path, level: float = tests.LEVEL) -> None:
    """Rejection rate vs report noise per test, with the nominal level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for test, g in frame.groupby("test"):
        ax.errorbar(g["report_noise"], g["rate"], yerr=1.96 * g["mc_se"], marker="o", capsize=3, label=str(test))
    ax.axhline(level, color="grey", ls="--", lw=1, label=f"α = {level}")
    ax.set_xlabel("report noise σ")
    ax.set_ylabel("rejection rate (rational logit RUM)")
    ax.set_title("Belief coherence: test size vs report noise (200 contexts × 5)")
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python benchmarks/studies/belief_family.py``."""
    parser = argparse.ArgumentParser(prog="python benchmarks/studies/belief_family.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("study", choices=("size", "power", "recovery", "hierarchical"))
    parser.add_argument("--model", default="mnl", choices=("mnl", "loss"),
                        help="hierarchical: the 4-parameter MNL or the loss-form decider")
    parser.add_argument("--subjects", type=int, default=20, help="hierarchical: subjects")
    parser.add_argument("--contexts", type=int, default=200, help="hierarchical: contexts per subject")
    parser.add_argument("--reps", type=int, default=5, help="hierarchical: repetitions per context")
    parser.add_argument("--draws", type=int, default=500, help="hierarchical: draws per chain (as many tuning)")
    parser.add_argument("--chains", type=int, default=2, help="hierarchical: chains")
    parser.add_argument("--population", choices=POPULATIONS, default="prior",
                        help="hierarchical: true population drawn from the hyperpriors or at their typical values")
    parser.add_argument("--sims", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--network", default="child")
    parser.add_argument("--tests", default="t1_lr,t1_lr_mean,t1_cmi,t2")
    parser.add_argument("-o", "--output", type=Path, default=None)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    start = time.perf_counter()
    if args.study == "size":
        frame = size_study(tuple(args.tests.split(",")), n_sims=args.sims, seed=args.seed, network=args.network)
        print(frame.pivot(index="report_noise", columns="test", values="rate").to_string())
    elif args.study == "power":
        frame = power_study(n_sims=args.sims, seed=args.seed, network=args.network)
        print(frame[["factor", "value", "test", "rate", "mc_se"]].to_string(index=False))
    elif args.study == "recovery":
        frame = recovery_study(seed=args.seed, network=args.network)
        print(recovery_summary(frame).to_string(index=False))
    else:
        frame, diagnostics = hierarchical_study(args.model, args.subjects, n_contexts=args.contexts,
                                                n_reps=args.reps, draws=args.draws, chains=args.chains,
                                                seed=args.seed, network=args.network, population=args.population)
        print(recovery_summary(frame).to_string(index=False))
        print(json.dumps({k: v for k, v in diagnostics.items() if k != "report"}, default=float))
        if "report" in diagnostics:
            print(diagnostics["report"])
    print(f"({time.perf_counter() - start:.1f} s)")
    if args.output is not None:
        args.output.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(args.output / "results.parquet", index=False)
        (args.output / "summary.json").write_text(json.dumps(frame.to_dict(orient="records"), indent=1,
                                                             default=float))
        if args.study == "size":
            plot_size(frame, args.output / "size_vs_noise.png")


if __name__ == "__main__":
    main()

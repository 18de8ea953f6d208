"""Each plan kind's printed figures re-simulated on seeds the plan never used: one row per figure.

For every plan kind documented in docs/plan.md — fixed (``power``), ``looks`` (a group-sequential
design), ``looks auto``, ``adaptive``, ``forms``, ``people`` (an LLM against a population of people) and
``monitor`` — the script calls the public API (:func:`cogtestbed.plan`) for the plan's figures (power,
type-I error, expected subjects, saving, each with the MC SE the plan prints), then simulates the
plan's chosen design afresh with the package's own simulators and fitters on seed streams the plan
never used (the plan's seed plus :data:`AUDIT_SEED_OFFSET`) and applies the plan's rule (its test,
its critical value, its bounds, its e-process) to those fresh studies.  It prints both figures side by
side, each with its MC SE, and whether they agree within 2 MC SE of their difference
(``|plan − fresh| ≤ 2·√(SE_plan² + SE_fresh²)``).

The designs are reduced so that the whole audit runs in minutes on a laptop (stated in each row's
``design``): instrumental learning's RW± optimism bias of 0.4 at 96 trials, ``--mc-se 0.05``; the
people row against a 20-person stand-in population (the one ``risky_people_plan.py`` builds); the
forms row the documented forms plan; the adaptive row temporal discounting's ``k`` at ``--trials 60``.

    python benchmarks/studies/claims_audit.py                    # every row
    python benchmarks/studies/claims_audit.py --rows fixed,looks --sims 400 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

#: Added to a plan's seed for every fresh re-simulation here: a stream no plan kind uses (the planner's
#: fresh, calibration and sequential streams are offsets below 10 million).
AUDIT_SEED_OFFSET = 95_000_017
#: The reduced target every model row plans (one LLM, RW± optimism bias; its fixed size is about 9 subjects).
EXPERIMENT, MODEL, EFFECT, LLM = "instrumental-learning", "rw-pm", {"optimism_bias": 0.4}, "openai:gpt-4o-mini"
SUBJECTS, MC_SE = "4:40", 0.05
#: Two figures agree when they differ by at most this many MC SEs of their difference.
AGREE_SE = 2.0


@dataclass
class Row:
    """One printed figure of one plan kind beside its fresh re-simulation."""

    kind: str
    figure: str
    plan: float | None
    plan_se: float | None
    fresh: float | None
    fresh_se: float | None
    design: str
    note: str = ""

    @property
    def agrees(self) -> bool | None:
        """Within :data:`AGREE_SE` MC SEs of the difference (None where a figure is missing)."""
        if self.plan is None or self.fresh is None:
            return None
        se = math.hypot(self.plan_se or 0.0, self.fresh_se or 0.0)
        return bool(abs(self.plan - self.fresh) <= AGREE_SE * se + 1e-12)

    def line(self) -> str:
        def num(v: float | None, se: float | None) -> str:
            return "-" if v is None else f"{v:.4g} ± {se or 0.0:.2g}"

        verdict = {True: "yes", False: "NO", None: "-"}[self.agrees]
        note = f"; {self.note}" if self.note else ""
        return (f"{self.kind:<10} {self.figure:<26} {num(self.plan, self.plan_se):>18} "
                f"{num(self.fresh, self.fresh_se):>18} {verdict:>5}  {self.design}{note}")


def sibling(name: str) -> Any:
    """The study script ``NAME.py`` beside this one, as a module (run as a script or loaded by a test)."""
    import importlib.util
    import sys

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def rate(hits: np.ndarray) -> tuple[float, float]:
    """A rejection rate and its binomial MC SE."""
    h = np.asarray(hits, bool)
    p = float(h.mean())
    return p, math.sqrt(max(p * (1 - p), 1e-12) / h.size)


def mean_se(x: np.ndarray) -> tuple[float, float]:
    """A mean and its MC SE."""
    v = np.asarray(x, float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


# ----------------------------------------------------------------------------- fresh simulations
def study_of(payload: Mapping[str, Any]) -> Any:
    """The plan's study (its ``study`` block) as the package's study spec."""
    from cogtestbed.studies.study_kinds import load_study

    return load_study(json.dumps(payload["study"]))


def fresh_power_rows(spec: Any, subjects: int, sims: int, seed: int, effect: float | None = None) -> Any:
    """``sims`` fresh studies of ``spec`` at ``subjects`` (``effect``: the effect size, 0 for the null),
    simulated and fitted by the package's power study on seed ``seed``: one row per study."""
    from cogtestbed.studies.driver import run_study

    update: dict[str, Any] = {"seed": seed, "reps": sims, "subjects": (subjects,), "critical_p": None}
    if effect is not None:
        update["effect_size"] = effect
    return run_study(spec.model_copy(update=update), workers=1).table


def detections(rows: Any, effect: float, level: float) -> np.ndarray:
    """Per study, whether the plan's two-sided test detects (in the effect's direction; any at 0)."""
    from cogtestbed.studies.model_studies import detected

    signed = rows["direction" if "direction" in rows else "estimate"]
    return np.array([detected(float(p), float(d), effect, level)
                     for p, d in zip(rows["p_value"], signed, strict=True)], bool)


def subject_values(spec: Any, n_studies: int, size: int, seed: int, effect: float | None = None,
                   fit: Any = None) -> np.ndarray:
    """Per-subject statistics (the contrast on the test's scale less the plan's one-sample null) of
    ``n_studies`` fresh studies of ``size`` subjects each: the package's subject simulator and fitter."""
    from cogtestbed.planning.kinds.sequential.seqfit import FULL_FIT
    from cogtestbed.planning.kinds.sequential.seqsim import subject_contrasts
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import one_sample_null, power_subjects
    from cogtestbed.studies.study_data import design_for_trials

    if effect is not None:
        spec = spec.model_copy(update={"effect_size": effect})
    exp = get_experiment(spec.experiment)
    model = exp.model(spec.models[0])
    design = design_for_trials(exp, spec.trials[0], spec.design)
    null = one_sample_null(spec.model_copy(update={"effect_size": 0.0}), model)
    out = np.empty((n_studies, size))
    for i in range(n_studies):
        table = power_subjects(spec, exp, model, design, spec.runs[0], size,
                               np.random.SeedSequence([seed, 95, i]))[0]
        out[i] = subject_contrasts(spec, model, table, size, null, fit or FULL_FIT)
    return out


def prefix_t_z(values: np.ndarray, n: int) -> np.ndarray:
    """The one-sample t-test on each row's first ``n`` values as ``sign(mean)·Φ⁻¹(1 − p/2)`` (scipy)."""
    from scipy import stats

    v = values[:, :n]
    res = stats.ttest_1samp(v, 0.0, axis=1, nan_policy="omit")
    p = np.clip(np.asarray(res.pvalue, float), 1e-300, 1.0)
    return np.sign(np.nanmean(v, axis=1)) * stats.norm.isf(p / 2)


# ----------------------------------------------------------------------------- plans
def plan_of(**options: Any) -> Any:
    """:func:`cogtestbed.plan` on the audit's reduced target with ``options``."""
    import cogtestbed as ct

    base = {"model": MODEL, "effect": EFFECT, "llm": LLM, "subjects": SUBJECTS, "mc_se": MC_SE, "seed": 0,
            "workers": 1}
    return ct.plan(EXPERIMENT, **{**base, **options})


def audit_fixed(sims: int) -> list[Row]:
    """The fixed plan's power at its chosen size, and its nominal level, on fresh studies."""
    payload = plan_of().to_dict()
    spec, chosen = study_of(payload), payload["chosen"]
    n, level, seed = int(chosen["subjects"]), float(spec.level), int(spec.seed) + AUDIT_SEED_OFFSET
    design = f"RW± optimism_bias 0.4, {n} subjects, {chosen['trials']} trials"
    pw = rate(detections(fresh_power_rows(spec, n, sims, seed), float(spec.effect_size), level))
    t1 = rate(detections(fresh_power_rows(spec, n, sims, seed + 1, 0.0), 0.0, level))
    plan_pw = payload["power"]
    return [Row("fixed", "power", plan_pw["rate"], plan_pw["mc_se"], *pw, design,
                f"plan: {plan_pw['sims']} fresh studies at the chosen size"),
            Row("fixed", "type-I (nominal t-test)", level, 0.0, *t1, design, "the plan's test at its nominal level")]


@dataclass
class SeqRule:
    """A group-sequential rule from a plan's ``sequential.design``: look sizes and bounds on Z·d."""

    sizes: tuple[int, ...]
    efficacy: tuple[float, ...]
    other: tuple[float, ...]
    futility: tuple[float, ...] | None
    direction: float

    @classmethod
    def of(cls, design: Mapping[str, Any]) -> SeqRule:
        fut = design.get("futility")
        return cls(tuple(int(s) for s in design["sizes"]), tuple(float(b) for b in design["efficacy"]),
                   tuple(float(b) for b in design.get("efficacy_other") or design["efficacy"]),
                   None if not fut else tuple(float("-inf") if b is None else float(b) for b in fut),
                   float(design.get("direction") or 1.0))

    def run(self, values: np.ndarray, futility: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per study: rejected in the effect's direction, rejected in either, subjects at the stop (futility
        obeyed when ``futility``; the last look always decides)."""
        reps = values.shape[0]
        stopped, ours, other = np.zeros(reps, bool), np.zeros(reps, bool), np.zeros(reps, bool)
        units = np.full(reps, self.sizes[-1], float)
        for k, n in enumerate(self.sizes):
            zd = prefix_t_z(values, n) * self.direction
            up, down = ~stopped & (zd >= self.efficacy[k]), ~stopped & (zd <= -self.other[k])
            fut = np.zeros(reps, bool)
            if futility and self.futility is not None and k < len(self.sizes) - 1:
                fut = ~stopped & ~up & ~down & (zd < self.futility[k])
            ours |= up
            other |= down
            now = up | down | fut
            units[now] = n
            stopped |= now
        return ours, ours | other, units


def expected_se(block: Mapping[str, Any], sizes: Sequence[int]) -> float:
    """The MC SE of a plan's expected subjects from its stopping-look shares and studies."""
    p, n = np.asarray(block["stop_look"], float), np.asarray(sizes, float)
    mean = float(p @ n)
    return math.sqrt(float(p @ (n - mean) ** 2) / int(block["sims"]))


def audit_looks(sims: int, looks: int | str = 3) -> list[Row]:
    """A group-sequential plan's power, type-I error, E[n] under the effect, saving and its fixed comparator at
    equal type-I error, the plan's own bounds and statistic applied to fresh studies (every look the t-test on
    the subjects so far)."""
    from cogtestbed.planning.kinds.sequential.seqamortised import statistic_of

    kind = "looks" if looks != "auto" else "looks auto"
    payload = plan_of(looks=looks).to_dict()
    spec, seq = study_of(payload), payload["sequential"]
    des = seq["design"]
    rule, fit = SeqRule.of(des), statistic_of(des.get("statistic"))
    fair = (seq.get("fair_fixed") or {}).get("chosen") or {}
    top = max(rule.sizes[-1], int(fair.get("size") or 0))
    seed = int(spec.seed) + AUDIT_SEED_OFFSET
    eff = subject_values(spec, sims, top, seed, fit=fit)
    nul = subject_values(spec, sims, top, seed + 1, 0.0, fit=fit)
    pw_hits, _, units = rule.run(eff, futility=True)
    _, t1_hits, _ = rule.run(nul, futility=bool(des.get("futility_binding")))
    design = f"RW± optimism_bias 0.4, {len(rule.sizes)} looks at {list(rule.sizes)} subjects ({fit_name(fit)})"
    e, e_se = mean_se(units)
    plan_e, plan_e_se = seq["effect"]["expected_units"], expected_se(seq["effect"], rule.sizes)
    rows = [Row(kind, "power", seq["effect"]["rejection_rate"], seq["effect"]["mc_se"], *rate(pw_hits), design,
                f"plan: {seq['effect']['sims']} effect studies"),
            Row(kind, "type-I", seq["null"]["rejection_rate"], seq["null"]["mc_se"], *rate(t1_hits), design,
                f"plan: {seq['null']['sims']} fresh null studies"),
            Row(kind, "E[n] under the effect", plan_e, plan_e_se, e, e_se, design)]
    if fair.get("size"):
        n = int(fair["size"])
        crit, other = float(fair["critical"]), float(fair.get("critical_other") or fair["critical"])
        zd_e, zd_n = prefix_t_z(eff, n) * rule.direction, prefix_t_z(nul, n) * rule.direction
        sv = seq.get("saving") or {}
        rows += [Row(kind, f"saving % vs fixed {n}", sv.get("percent"), 100 * plan_e_se / n, 100 * (1 - e / n),
                     100 * e_se / n, design, f"comparator: {sv.get('comparator')}"),
                 Row(kind, f"comparator power at {n}", fair["power"], sv.get("fixed_power_mc_se"),
                     *rate(zd_e >= crit), design, f"critical {crit:.3f} in / {other:.3f} against"),
                 Row(kind, f"comparator type-I at {n}", fair["type1"], sv.get("fixed_type1_mc_se"),
                     *rate((zd_n >= crit) | (zd_n <= -other)), design)]
    mle = (seq.get("saving") or {}).get("mle_equal_power")
    if mle:
        rows.append(mle_saving_row(kind, spec, mle, units, rule.direction, seed + 2, design))
    return rows


def mle_saving_row(kind: str, spec: Any, mle: Mapping[str, Any], units: np.ndarray, dirn: float, seed: int,
                   design: str) -> Row:
    """The saving against the fixed plan's own test on the per-subject MLE at nominal α, sized for the same power
    (``mle['power']``), re-measured: that test on fresh studies of per-subject MLEs at every size up to 1.6 times
    the plan's size, its size at that power on the curve's non-decreasing envelope, and ``1 − E[n]/n*`` with the
    sequential design's fresh E[n] (``units``); MC SE from a bootstrap over both sets of fresh studies."""
    from scipy import stats

    from cogtestbed.planning.equal_power import size_at

    n0, sims = float(mle["fixed_size"]), units.size
    top = max(4, math.ceil(1.6 * n0) + 1)
    crit = float(stats.norm.isf(float(spec.level) / 2))
    sizes = np.arange(2, top + 1)
    values = subject_values(spec, sims, top, seed)
    hits = np.array([prefix_t_z(values, int(n)) * dirn >= crit for n in sizes])  # (sizes, studies)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 9595]))

    def saving(h: np.ndarray, u: np.ndarray) -> tuple[float, float]:
        n_star = size_at(sizes, h.mean(axis=1), float(mle["power"]))
        return 100 * (1 - float(u.mean()) / n_star), n_star

    fresh, n_fresh = saving(hits, units)
    boot = np.array([saving(hits[:, rng.integers(sims, size=sims)], units[rng.integers(sims, size=sims)])[0]
                     for _ in range(400)])
    lo, hi = mle["interval"]
    return Row(kind, f"saving % vs MLE test at power {mle['power']:.2f}", mle["percent"], (hi - lo) / 3.92, fresh,
               float(np.nanstd(boot, ddof=1)), design,
               f"comparator n* {n0:.1f} (plan, probit curve) vs {n_fresh:.1f} (fresh, {sims} studies a size); "
               "plan SE: its 95 % interval / 3.92")


def fit_name(fit: Any) -> str:
    """The statistic's name in a row's design."""
    return "amortised statistic" if type(fit).__name__ == "AmortisedFit" else "per-subject MLE"


def audit_monitor(sims: int) -> list[Row]:
    """A monitor plan's power, type-I error, E[n] and saving at equal power: its e-process (``ct.monitor`` on the
    saved plan: the composite null interval where the plan has one) run on fresh per-subject statistics, and the
    plan's fixed comparator (the t-test it states, against the null interval's end for a composite null) sized
    on the same fresh studies for the monitor's fresh power (:func:`fresh_equal_power`)."""
    import cogtestbed as ct

    plan = plan_of(monitor=True, monitor_sims=max(400, sims))
    payload = plan.to_dict()
    spec, mon = study_of(payload), payload["monitor"]
    cap, seed = int(mon["cap"]), int(spec.seed) + AUDIT_SEED_OFFSET
    eq = mon.get("equal_power") or {}
    n_star = float(eq.get("fixed_size") or math.nan)
    length = max(cap, math.ceil(1.5 * n_star)) if math.isfinite(n_star) else cap
    with tempfile.TemporaryDirectory() as tmp:
        plan.save(Path(tmp))
        eff = subject_values(spec, sims, length, seed)
        nul = subject_values(spec, sims, cap, seed + 1, 0.0)
        paths = [ct.monitor(list(v[:cap]), plan=tmp) for v in (*eff, *nul)]
    stops = np.array([p.stop if p.stop is not None else cap for p in paths], float)
    rejected = np.array([p.decision == "efficacy" for p in paths], bool)
    null = "" if mon.get("null_interval") is None else \
        f", composite null [{mon['null_interval'][0]:+.3f}, {mon['null_interval'][1]:+.3f}]"
    design = f"RW± optimism_bias 0.4, monitor cap {cap} subjects{null}"
    rows = [Row("monitor", "power", mon["power"], mon["power_se"], *rate(rejected[:sims]), design),
            Row("monitor", "type-I", mon["null_rejection"], mon["null_rejection_se"], *rate(rejected[sims:]), design,
                "null studies at the plan's population (inside the null interval)"),
            Row("monitor", "E[n] under the effect", mon["expected_effect"], mon["expected_effect_se"],
                *mean_se(stops[:sims]), design)]
    if eq:
        fresh = fresh_equal_power(eff, rejected[:sims], stops[:sims], mon, spec)
        rows += [Row("monitor", "saving % at equal power", 100 * mon["saving"], 100 * mon["saving_se"],
                     100 * fresh["saving"], 100 * fresh["saving_se"], design,
                     f"against the {eq.get('test')} at n* {n_star:.1f} (fresh n* {fresh['fixed_size']:.1f})"),
                 Row("monitor", "comparator size n*", n_star, eq.get("fixed_size_se"), fresh["fixed_size"],
                     fresh["fixed_size_se"], design, "the fixed test's size at the monitor's power")]
    return rows


#: Sub-pools of the fresh studies for the equal-power saving's jackknife (as the plan's reporting pools).
FRESH_BATCHES = 10


def fresh_equal_power(eff: np.ndarray, rejected: np.ndarray, stops: np.ndarray, mon: Mapping[str, Any],
                      spec: Any) -> dict[str, Any]:
    """The monitor's saving at equal power on fresh studies: the plan's fixed comparator (a one-LLM t-test; one-sided
    at the level against the composite null interval's end in the effect's direction where the plan has one) on
    each fresh effect study's first n subjects, n = 2 … its length; its size at the monitor's fresh power and the
    saving ``1 − E[n]/n*`` with the package's jackknife over :data:`FRESH_BATCHES` sub-pools
    (:func:`cogtestbed.planning.equal_power.equal_power_saving`)."""
    from cogtestbed.planning.equal_power import _t_reject, equal_power_saving
    from cogtestbed.planning.kinds.sequential.seqplan import direction

    dirn = direction(spec) or 1.0
    level, shift = float(spec.level), 0.0
    if mon.get("null_interval") is not None:  # one-sided at the level = two-sided at 2·level in the direction
        shift, level = float(mon["null_interval"][1 if dirn >= 0 else 0]), 2 * level
    sizes = np.arange(2, eff.shape[1] + 1)
    hits = np.array([_t_reject(eff[:, :n] - shift, None, level, dirn) for n in sizes])
    which = np.arange(eff.shape[0]) % FRESH_BATCHES
    return equal_power_saving(rejected, stops, which, hits, which, sizes)


# ----------------------------------------------------------------------------- forms, people, adaptive
FORMS = {"forms": "4,8", "form_sd": {"alpha_pos": 0.15}, "base": {"alpha_pos": 0.5, "alpha_neg": 0.5}}


def audit_forms(sims: int) -> list[Row]:
    """A forms plan's power at its chosen forms × subjects (noncentral t from σ and τ) on fresh
    simulated forms studies tested by the forms-aware test."""
    import cogtestbed as ct
    from cogtestbed.environments.forms import FormDesign
    from cogtestbed.studies.form_studies import form_study_spec, run_form_study, summarise_form_study

    payload = ct.plan(EXPERIMENT, model=MODEL, effect={"optimism_bias": 0.2}, llm=LLM, seed=0, **FORMS).payload
    chosen = payload["chosen"]
    k, n = int(chosen["forms"]), int(chosen["subjects_per_form"])
    spec = form_study_spec(EXPERIMENT, MODEL, FormDesign(tuple(range(k)), FORMS["form_sd"]), k * n,
                           params=FORMS["base"], effect=("optimism_bias", 0.2))
    spec = replace(spec, bias_sims=0)  # the plan's test: t on the form means, no bias correction
    out = summarise_form_study(spec, run_form_study(spec, sims, AUDIT_SEED_OFFSET))["aware_rejection"]
    return [Row("forms", "power (forms-aware test)", chosen["power"], chosen.get("power_mc_se", 0.0), out["rate"],
                out["mc_se"], f"RW± optimism_bias 0.2, {k} forms × {n} subjects, form SD α+ 0.15",
                "plan: the noncentral t at fresh subjects' σ and estimand; fresh: the test on the form means")]


def audit_people(sims: int, null_sims: int | None = None) -> list[Row]:
    """An LLM-against-people plan's power, its nominal test's level and, where the plan calibrates, the
    calibrated test's level and power, on fresh studies (a 20-person stand-in population, prospect theory's
    λ + 1.0): ``sims`` fresh effect studies, ``null_sims`` (default ``sims``) fresh null studies."""
    import cogtestbed as ct

    with tempfile.TemporaryDirectory() as tmp:
        pop = sibling("risky_people_plan").stand_in(Path(tmp) / "people.json")
        payload = ct.plan("risky-choice", llm=LLM, model="prospect-theory", effect={"lambda": 1.0}, population=pop,
                          subjects="5:40", trials="98", mc_se=MC_SE, seed=0, workers=1).to_dict()
        spec, chosen = study_of(payload), payload["chosen"]
        n, level, seed = int(chosen["subjects"]), float(spec.level), int(spec.seed) + AUDIT_SEED_OFFSET
        effect = fresh_power_rows(spec, n, sims, seed)
        null = fresh_power_rows(spec, n, null_sims or sims, seed + 1, 0.0)
    design = f"risky-choice λ + 1.0 against 20 stand-in people, {n} LLM subjects, 98 trials"
    cal = payload.get("calibrated_test") or {}
    plan_pw = payload["power"]
    rows = [Row("people", "power", plan_pw["rate"], plan_pw["mc_se"],
                *rate(detections(effect, float(spec.effect_size), level)), design,
                f"test: {payload['study'].get('method')}; plan: {plan_pw['sims']} fresh studies")]
    if "nominal_rate" in cal:
        rows.append(Row("people", "type-I (nominal test)", cal["nominal_rate"], cal["nominal_rate_mc_se"],
                        *rate(detections(null, 0.0, level)), design,
                        f"plan: {cal['null_sims']} level null studies (they choose nothing); "
                        f"recommended: {cal.get('recommended')}"))
    if "level" in cal:  # the plan calibrated: its critical p chosen on other null studies
        crit = float(cal["critical_p"])
        rows += [Row("people", "type-I (calibrated test)", cal["level"]["rate"], cal["level"]["mc_se"],
                     *rate(detections(null, 0.0, crit)), design,
                     f"critical p {crit:.4g} from {cal['calibration_sims']} calibration null studies"),
                 Row("people", "power (calibrated test)", cal["power"]["rate"], cal["power"]["mc_se"],
                     *rate(detections(effect, float(spec.effect_size), crit)), design)]
    return rows


def audit_adaptive(sims: int) -> list[Row]:
    """An adaptive plan's share of subjects whose estimate lies within the half-width at each arm's chosen
    trials (its assurance), on fresh subjects: the package's adaptive comparison on another seed."""
    import cogtestbed as ct
    from cogtestbed.experiments._adaptive import adaptive_model
    from cogtestbed.planning.kinds.adaptive.adaptive import compare
    from cogtestbed.planning.kinds.adaptive.adaptive_plan import natural_hits
    from cogtestbed.registry import get_experiment

    payload = ct.plan("temporal-discounting", adaptive="k", precision={"k": 0.1}, assurance=0.8, llm=LLM,
                      subjects=100, adaptive_sims=100, trials=60, seed=0).payload
    exp = get_experiment("temporal-discounting")
    result = compare(exp, payload["targets"], int(payload["max_trials"]), sims, AUDIT_SEED_OFFSET)
    hits = natural_hits(result, adaptive_model(exp), payload["parameter"], float(payload["halfwidth"]))
    rows = []
    for arm in ("fixed", "adaptive"):
        a = payload[arm]
        t = int(a["trials"])
        rows.append(Row("adaptive", f"assurance ({arm} arm)", a["share"], a["share_se"], *rate(hits[arm][:, t - 1]),
                        f"temporal-discounting k within 0.1 at {t} trials, {payload['simulated_subjects']} plan "
                        "subjects"))
    return rows


AUDITS: dict[str, Callable[[int], list[Row]]] = {
    "fixed": audit_fixed, "looks": audit_looks, "looks-auto": lambda s: audit_looks(s, "auto"),
    "adaptive": audit_adaptive, "forms": audit_forms, "people": audit_people, "monitor": audit_monitor}


def run_audit(rows: Iterable[str], sims: int, say: Callable[[str], None] = print) -> list[Row]:
    """Every requested kind's rows (a kind whose audit fails prints why, as a row without figures)."""
    out: list[Row] = []
    for name in rows:
        start = time.perf_counter()
        try:
            got = AUDITS[name](sims)
        except Exception as exc:  # noqa: BLE001 - one kind's failure is reported as its row
            got = [Row(name, "(not audited)", None, None, None, None, "-", f"{type(exc).__name__}: {exc}"[:300])]
        for r in got:
            say(r.line())
        say(f"  ({name}: {time.perf_counter() - start:.0f} s)")
        out.extend(got)
    return out


def header() -> str:
    return (f"{'kind':<10} {'figure':<26} {'plan ± MC SE':>18} {'fresh ± MC SE':>18} {'agree':>5}  design")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default=",".join(AUDITS), help=f"kinds, comma-separated (default: {','.join(AUDITS)})")
    ap.add_argument("--sims", type=int, default=400, help="fresh studies per hypothesis and row")
    ap.add_argument("--null-sims", type=int, default=None,
                    help="the people row's fresh null studies (default: --sims)")
    ap.add_argument("--json", type=Path, default=None, help="write the rows as JSON too")
    ap.add_argument("--merge", type=Path, nargs="+", default=None,
                    help="print (and --record) the rows of earlier --json files instead of running any")
    ap.add_argument("--record", default=None, metavar="NAME",
                    help="write the table to benchmarks/studies/results/NAME.json (recorded.py prints it)")
    ap.add_argument("--command", default=None,
                    help="with --record: the command lines recorded (those that ran the merged rows)")
    args = ap.parse_args(argv)
    names = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in names if r not in AUDITS]
    if unknown:
        raise SystemExit(f"error: unknown row {unknown[0]!r}; rows: {', '.join(AUDITS)}")
    print(header())
    if args.null_sims:
        AUDITS["people"] = lambda s: audit_people(s, args.null_sims)
    rows = merged(args.merge) if args.merge else run_audit(names, args.sims)
    if args.merge:
        for r in rows:
            print(r.line())
    bad = [r for r in rows if r.agrees is False]
    print(f"{len(rows)} figures, {sum(r.agrees is True for r in rows)} within {AGREE_SE:g} MC SE, {len(bad)} not")
    if args.json:
        args.json.write_text(json.dumps([{**asdict(r), "agrees": r.agrees} for r in rows], indent=1))
    if args.record:
        record(args.record, rows, args.sims, args.command)


def merged(paths: Sequence[Path]) -> list[Row]:
    """The rows of earlier ``--json`` files (one per kind, run apart), in the files' order."""
    out = []
    for path in paths:
        for r in json.loads(path.read_text()):
            r.pop("agrees", None)
            out.append(Row(**r))
    return out


def record(name: str, rows: Sequence[Row], sims: int, command: str | None = None) -> Path:
    """The table as a results file (``recorded.py NAME`` prints it; docs/results/plan.md shows that output), and
    one row per plan kind as ``NAME-kinds`` (:func:`kind_table`; docs/plan.md shows it)."""
    def num(v: float | None, se: float | None) -> str:
        return "-" if v is None else f"{v:.4g} ± {se or 0.0:.2g}"

    table = {"columns": ["kind", "figure", "plan ± MC SE", "fresh ± MC SE", "within 2 MC SE", "design"],
             "rows": [[r.kind, r.figure, num(r.plan, r.plan_se), num(r.fresh, r.fresh_se),
                       {True: "yes", False: "NO", None: "-"}[r.agrees], r.design + (f"; {r.note}" if r.note else "")]
                      for r in rows]}
    kinds = list(dict.fromkeys(r.kind for r in rows))
    command = command or f"python benchmarks/studies/claims_audit.py --rows {','.join(kinds)} --sims {sims}"
    sibling("recorded").write(f"{name}-kinds", command, [kind_table(rows)])
    return sibling("recorded").write(name, command, [table])


def kind_table(rows: Sequence[Row]) -> dict[str, Any]:
    """One row per plan kind: its figures re-simulated, how many agree within :data:`AGREE_SE` MC SE, the
    largest distance in MC SEs of the difference, and its power (plan, fresh)."""
    out = []
    for kind in dict.fromkeys(r.kind for r in rows):
        got = [r for r in rows if r.kind == kind and r.agrees is not None]
        if not got:
            out.append([kind, "not measured", "-", "-"])
            continue
        dist = max(abs(r.plan - r.fresh) / max(math.hypot(r.plan_se or 0.0, r.fresh_se or 0.0), 1e-12)
                   for r in got if r.plan is not None and r.fresh is not None)
        pw = next((r for r in got if r.figure.startswith("power")), None)
        power = "-" if pw is None or pw.plan is None or pw.fresh is None else \
            f"{pw.plan:.3f} ± {pw.plan_se or 0:.3f} / {pw.fresh:.3f} ± {pw.fresh_se or 0:.3f}"
        out.append([kind, f"{sum(bool(r.agrees) for r in got)} of {len(got)}", f"{dist:.2f}", power])
    return {"columns": ["kind", "figures within 2 MC SE", "largest |Δ|/SE", "power: plan / fresh"], "rows": out}


if __name__ == "__main__":
    main()

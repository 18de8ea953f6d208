"""An LLM against people: the two-group test's critical p-value calibrated at the planned trial
counts.

The two-group MLE test of an LLM against people (:func:`~cogtestbed.studies.model_studies.task_power_groups`)
compares per-subject estimates.  Its nominal level is exact only where both groups' estimates share
one distribution; an LLM usually plays more trials than the people did, and then its per-subject MLE
differ from the people's in spread, skew and finite-sample bias even where the two populations are
one (CogBench's α⁺ − α⁻ at 384 : 96 trials: SD 0.26 vs 0.32, skew −1.38 vs −0.38), so Welch's test
(or Brunner–Munzel's, which tests P(B > A) = ½, not equal populations) rejects at a rate that
depends on the design.  Even where the test is exact, a fresh estimate of its level from 1,000
studies bounds it above α (an exact 0.05 gives a one-sided 95 % upper bound ≈ 0.062).

Two sets of null studies of the planned design (the same population draws, people and people's trials,
LLM trials and sizes; each on seeds of its own; at least :data:`MIN_NULL_STUDIES` each, :func:`null_study_count`)
keep what chooses apart from what reports:

* the **level** null studies (:data:`NULL_SEED_OFFSET`) choose nothing: they measure the nominal test's
  rejection rate, and where it is at most α + 2 MC SE (:func:`nominal_holds`) the nominal test holds its level
  at this design, the plan says so and recommends it (it is what the design was sized for); only where they
  show it above α does the plan say so and calibrate;
* the **calibration** null studies (:data:`CALIBRATION_SEED_OFFSET`, :data:`CALIBRATION_FACTOR` times as many,
  simulated only where the level studies show the nominal test above α) choose the critical p-value: the largest
  one that rejects at most ``target`` of them (:func:`calibrated_critical_p`; ``target`` is α less a margin for
  the calibration's own Monte-Carlo noise, the sequential plan's rule,
  :func:`~cogtestbed.planning.kinds.sequential.seqauto.calibration_level`); the calibrated test's level is then
  measured on the level null studies, which did not choose it, and its power on the plan's fresh effect studies.

A critical p from few null studies is noise: from 178 studies the 4th smallest p-value was taken, whose 95 %
range for an exact test is ≈ [0.006, 0.048].  The calibration assumes what the plan assumes: the population
(its posterior) generates both groups' data, the LLM's under no effect as the people's; it holds the level under
that model, not under another.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.studies.study_kinds import PowerStudy

#: Added to a study's seed for the null studies that measure the nominal (and the calibrated) test's level: they
#: choose nothing.
NULL_SEED_OFFSET = 6_800_001
#: Added to a study's seed for the calibration null studies, which choose the critical p-value (and report nothing).
CALIBRATION_SEED_OFFSET = 6_800_023
#: The calibration null studies are this many times the level null studies: simulated only where the nominal test
#: is shown above α, so a larger set costs nothing where the nominal test holds, and the critical p moves less with
#: the seed (``benchmarks/studies/people_seed_spread.py --predict``).
CALIBRATION_FACTOR = 2
#: The fewest null studies a critical p-value is calibrated on (the project's choice: at α = .05 the
#: calibrated level is then .0375 and the critical p the 38th smallest p-value, not the 4th).
MIN_NULL_STUDIES = 1_000
#: The nominal test holds its level where its null rejection rate is at most α plus this many MC SEs
#: (binomial SE at α over the null studies).
NOMINAL_SLACK_SE = 2.0


def null_study_count(fresh_sims: int) -> int:
    """How many null studies measure the level of a plan whose chosen design has ``fresh_sims`` fresh studies:
    as many, and at least :data:`MIN_NULL_STUDIES` (its calibration, where needed, :data:`CALIBRATION_FACTOR`
    times as many)."""
    return max(int(fresh_sims), MIN_NULL_STUDIES)


def calibration_pair_count(level_sims: int) -> int:
    """The one count N for which two independent sets of N null studies have the error of a critical p
    calibrated on :data:`CALIBRATION_FACTOR` × ``level_sims`` studies and its level measured on ``level_sims``
    others (the harmonic mean of the two counts): what the calibration's margin is computed from
    (:func:`~cogtestbed.planning.kinds.sequential.seqauto.calibration_level`)."""
    cal = CALIBRATION_FACTOR * level_sims
    return round(2.0 * cal * level_sims / (cal + level_sims))


def nominal_holds(rejected: int, null_sims: int, level: float) -> bool:
    """Whether the nominal test holds its level on ``null_sims`` null studies of which ``rejected``
    rejected at ``level``: the rate is at most ``level`` + :data:`NOMINAL_SLACK_SE` binomial SEs."""
    if null_sims <= 0:
        return False
    return rejected / null_sims <= level + NOMINAL_SLACK_SE * math.sqrt(level * (1 - level) / null_sims)


def calibrated_critical_p(p_values: Any, target: float) -> float:
    """The largest critical p-value c such that ``p < c`` holds for at most ``target`` of
    ``p_values`` (a NaN p-value, a study without a test, rejects nothing and counts in the
    denominator): the ⌊target·n⌋+1-th smallest p-value, or 1 where fewer are finite."""
    p = np.asarray(p_values, float)
    if not p.size or not 0.0 < target < 1.0:
        raise InputError(f"calibration needs null p-values and a target level in (0, 1), got {p.size} and {target}")
    allowed = math.floor(target * p.size)
    finite = np.sort(p[np.isfinite(p)])
    return float(finite[allowed]) if allowed < finite.size else 1.0


def calibrate_people_test(spec: PowerStudy, null_sims: int, target: float, workers: int | None = 1) -> dict[str, Any]:
    """The calibrated critical p-value of ``spec``'s two-group test (an LLM against people, or two
    groups) at its planned design: ``null_sims`` studies of ``spec`` with no effect, seeded apart
    (:data:`CALIBRATION_SEED_OFFSET`), and :func:`calibrated_critical_p` of their p-values at
    ``target``.  Returns ``critical_p``, ``target``, ``null_sims``, the calibration's rejections at
    ``critical_p`` (``rejected``) and at the nominal level (``nominal_rejected``)."""
    if spec.groups != 2 or spec.method != "mle":
        raise InputError("the calibrated critical p-value is of the two-group MLE test: groups=2, method='mle'")
    return calibration_from_nulls(_null_p_values(spec, CALIBRATION_SEED_OFFSET, null_sims, workers), target,
                                  spec.level)


def calibration_from_nulls(p_values: Any, target: float, level: float) -> dict[str, Any]:
    """:func:`calibrate_people_test`'s figures from its null studies' p-values.  Its nominal rate is read on the
    studies that chose the critical p: a plan reports the level from other null studies (:func:`level_from_nulls`
    in :func:`calibrated_section`)."""
    p = np.asarray(p_values, float)
    critical = calibrated_critical_p(p, target)
    return {"critical_p": critical, "target": target, "rejected": int(np.sum(p < critical)),
            **level_from_nulls(p, level)}


def calibrated_power(rows: Any, critical_p: float, effect_size: float) -> dict[str, Any]:
    """The power of the two-group test at ``critical_p`` over simulated studies ``rows`` (a power
    study's table: ``p_value`` and ``direction``, the signed statistic whose sign is the rejection's
    direction; ``estimate`` where a table has no ``direction``): a study detects where
    p < ``critical_p`` in the effect's direction (any direction at effect 0), as
    :func:`~cogtestbed.studies.model_studies.detected` judges it at the level.  Returns
    ``rate``, ``mc_se`` and ``sims``."""
    from cogtestbed.studies.model_studies import detected

    signed = rows["direction" if "direction" in rows else "estimate"]
    hits = np.array([detected(float(p), float(d), effect_size, critical_p)
                     for p, d in zip(rows["p_value"], signed, strict=True)], bool)
    rate = float(hits.mean()) if hits.size else float("nan")
    return {"rate": rate, "mc_se": float(np.sqrt(rate * (1 - rate) / hits.size)) if hits.size else float("nan"),
            "sims": int(hits.size)}


def _null_p_values(spec: PowerStudy, offset: int, sims: int, workers: int | None) -> Any:
    """The p-values of ``sims`` null studies of ``spec`` on ``spec.seed + offset``."""
    from cogtestbed.studies.driver import run_study

    null = spec.model_copy(update={"effect_size": 0.0, "reps": int(sims), "critical_p": None,
                                   "seed": spec.seed + offset})
    return run_study(null, workers=workers).table["p_value"]


def level_from_nulls(p_values: Any, level: float) -> dict[str, Any]:
    """The nominal test's level on null studies that chose nothing (their p-values): ``null_sims``,
    ``nominal_rejected``, ``nominal_rate`` with its binomial MC SE at the level and ``nominal_holds``."""
    p = np.asarray(p_values, float)
    nominal = int(np.sum(p < level))
    return {"null_sims": int(p.size), "nominal_rejected": nominal,
            "nominal_rate": nominal / p.size if p.size else float("nan"),
            "nominal_rate_mc_se": math.sqrt(level * (1 - level) / p.size) if p.size else None,
            "nominal_holds": nominal_holds(nominal, int(p.size), level)}


def calibrated_section(spec: Any, fresh: Any, target: float, workers: int | None = None, nulls: Any = None,
                       calibrate: Callable[[int], Any] | None = None) -> dict[str, Any] | None:
    """A plan's ``calibrated_test`` where ``spec`` is an LLM against a population's people by MLE; None
    otherwise.  The nominal test's level on the level null studies (``nulls``: a table with ``p_value``, as many
    as ``fresh`` has rows and at least :data:`MIN_NULL_STUDIES`, on :data:`NULL_SEED_OFFSET`; run here on
    ``workers`` processes where None) and its power on ``fresh`` (the plan's fresh studies at the chosen design,
    :meth:`~cogtestbed.planning.plan.Planner.fresh_table`: not those whose power chose the design).  Where the
    nominal test holds its level (:func:`nominal_holds`) it is recommended and nothing is calibrated.  Else the
    critical p is calibrated at ``target`` on :data:`CALIBRATION_FACTOR` times as many other null studies
    (``calibrate(count)``: their table, a plan's :func:`~cogtestbed.planning.plan.calibration_nulls`; else run
    here on :data:`CALIBRATION_SEED_OFFSET`), and the calibrated test's level (``level``) is measured on the level
    null studies and its power (``power``) on ``fresh``, each with its MC SE.  Where ``target`` is not above 0 or
    there are no fresh studies, the reason instead."""
    if not (isinstance(spec, PowerStudy) and spec.people is not None and spec.method == "mle" and spec.groups == 2):
        return None
    sims = 0 if fresh is None else len(fresh)
    if not sims:
        return {"reason": "no fresh studies at the chosen design to measure the calibrated test's power on"}
    if target <= 0.0:
        return {"reason": f"{sims} null studies cannot calibrate the test below alpha {spec.level:g} with its "
                          "margin: plan with a smaller --mc-se"}
    level_p = np.asarray(_null_p_values(spec, NULL_SEED_OFFSET, null_study_count(sims), workers) if nulls is None
                         else nulls["p_value"], float)
    studies = "fresh studies at the chosen design (not those whose power chose it)"
    out = {**level_from_nulls(level_p, spec.level), "level_studies": "null studies that chose nothing",
           "nominal_power": {**calibrated_power(fresh, spec.level, spec.effect_size), "studies": studies}}
    out["assumes"] = ("the population generates both groups' data (the LLM's under no effect as the people's); the "
                      "level is measured on null studies of this design, people's and LLM's trial counts")
    if out["nominal_holds"]:
        return {**out, "recommended": "nominal"}
    count = CALIBRATION_FACTOR * level_p.size
    cal_p = np.asarray((calibrate(count) if calibrate is not None else
                        {"p_value": _null_p_values(spec, CALIBRATION_SEED_OFFSET, count, workers)})["p_value"], float)
    critical = calibrated_critical_p(cal_p, target)
    hits = np.nan_to_num(level_p, nan=1.0) < critical
    rate = float(hits.mean())
    return {**out, "critical_p": critical, "target": target, "calibration_sims": int(cal_p.size),
            "level": {"rate": rate, "mc_se": math.sqrt(max(rate * (1 - rate), 1e-12) / hits.size),
                      "sims": int(hits.size), "studies": "the level null studies (they did not choose the critical p)"},
            "power": {**calibrated_power(fresh, critical, spec.effect_size), "studies": studies},
            "recommended": "calibrated"}


def calibrated_words(section: dict[str, Any] | None, target_power: float | None = None) -> str:
    """What the level check says ('' where none): that the nominal test holds its level on the null studies
    (use it, with its power on the fresh studies where the section has it), or that those null studies show
    it above its level and the calibrated test's critical p, its level on them and its power; where that power
    is more than 2 MC SE under ``target_power`` (the plan's target), that the design was sized for the nominal
    test and falls short."""
    if not section or "nominal_rate" not in section:
        return ""
    nominal = (f"nominal type-I {section['nominal_rate']:.3f} ± {section['nominal_rate_mc_se']:.3f} on "
               f"{section['null_sims']:,} null studies at these trial counts")
    if section.get("nominal_holds") or "power" not in section:
        fresh = section.get("nominal_power")
        power = "" if not fresh else (f" (power {fresh['rate']:.3f} ± {fresh['mc_se']:.3f} on {fresh['sims']:,} "
                                      "fresh studies at this design)")
        return f"; the nominal test holds its level here ({nominal}): use it{power}"
    p, short = section["power"], ""
    if target_power is not None and p["rate"] + 2 * p["mc_se"] < target_power:
        short = (f" — under the {target_power:.0%} target: this design was sized for the nominal test; plan more "
                 "subjects (--subjects) before running it")
    lvl = section.get("level")
    calibrated = "" if not lvl else (f", calibrated on {section['calibration_sims']:,} other null studies; type-I "
                                     f"{lvl['rate']:.3f} ± {lvl['mc_se']:.3f} on the first")
    return (f"; the nominal test is above its level ({nominal}): use the calibrated test (critical p "
            f"{section['critical_p']:.4g}{calibrated}): power {p['rate']:.3f} ± {p['mc_se']:.3f}{short}")


__all__ = ["CALIBRATION_FACTOR", "CALIBRATION_SEED_OFFSET", "MIN_NULL_STUDIES", "NOMINAL_SLACK_SE", "NULL_SEED_OFFSET",
           "calibrate_people_test", "calibration_pair_count", "level_from_nulls",
           "calibrated_critical_p", "calibrated_power", "calibrated_section", "calibrated_words",
           "calibration_from_nulls", "nominal_holds", "null_study_count"]

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

The correction: simulate ``null_sims`` studies of the planned design under no effect (the same
population draws, people and people's trials, LLM trials and sizes; a seed of their own; at least
:data:`MIN_NULL_STUDIES`, :func:`null_study_count`, so that the critical p is not noise: from 178
studies the 4th smallest p-value was taken, whose 95 % range for an exact test is ≈ [0.006, 0.048])
and take as the critical p-value the largest one that rejects at most ``target`` of them
(:func:`calibrated_critical_p`); ``target`` is α less a margin for the calibration's own Monte-Carlo
noise (the sequential plan's rule, :func:`~cogtestbed.planning.kinds.sequential.seqauto.calibration_level`),
so that fresh null studies reject at most α with their upper bound.

The same null studies measure the nominal test's level first: where its rejection rate is at most
α + 2 MC SE (:func:`nominal_holds`), the nominal test holds its level at this design, the plan says
so and recommends it (it is what the design was sized for); the calibrated critical p is the
recommendation only where the nominal test is shown above α.  It assumes what the plan
assumes: the population (its posterior) generates both groups' data, the LLM's under no effect
as the people's; the calibration holds the level under that model, not under another.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.studies.study_kinds import PowerStudy

#: Added to a study's seed for its calibration null studies (independent of the studies it calibrates).
CALIBRATION_SEED_OFFSET = 6_800_001
#: The fewest null studies a critical p-value is calibrated on (the project's choice: at α = .05 the
#: calibrated level is then .0375 and the critical p the 38th smallest p-value, not the 4th).
MIN_NULL_STUDIES = 1_000
#: The nominal test holds its level where its null rejection rate is at most α plus this many MC SEs
#: (binomial SE at α over the null studies).
NOMINAL_SLACK_SE = 2.0


def null_study_count(fresh_sims: int) -> int:
    """How many null studies calibrate a plan whose chosen design has ``fresh_sims`` fresh studies:
    as many, and at least :data:`MIN_NULL_STUDIES`."""
    return max(int(fresh_sims), MIN_NULL_STUDIES)


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
    from cogtestbed.studies.driver import run_study

    if spec.groups != 2 or spec.method != "mle":
        raise InputError("the calibrated critical p-value is of the two-group MLE test: groups=2, method='mle'")
    null = spec.model_copy(update={"effect_size": 0.0, "reps": int(null_sims), "critical_p": None,
                                   "seed": spec.seed + CALIBRATION_SEED_OFFSET})
    return calibration_from_nulls(run_study(null, workers=workers).table["p_value"], target, spec.level)


def calibration_from_nulls(p_values: Any, target: float, level: float) -> dict[str, Any]:
    """:func:`calibrate_people_test`'s figures from its null studies' p-values (a plan that ran them
    itself passes them: :func:`calibrated_section`'s ``nulls``)."""
    p = np.asarray(p_values, float)
    critical = calibrated_critical_p(p, target)
    nominal = int(np.sum(p < level))
    rate = nominal / p.size if p.size else float("nan")
    return {"critical_p": critical, "target": target, "null_sims": int(p.size),
            "rejected": int(np.sum(p < critical)), "nominal_rejected": nominal,
            "nominal_rate": rate, "nominal_rate_mc_se": math.sqrt(level * (1 - level) / p.size) if p.size else None,
            "nominal_holds": nominal_holds(nominal, int(p.size), level)}


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


def calibrated_section(spec: Any, fresh: Any, target: float, workers: int | None = None,
                       nulls: Any = None) -> dict[str, Any] | None:
    """A plan's ``calibrated_test`` where ``spec`` is an LLM against a population's
    people by MLE; None otherwise: :func:`calibrate_people_test` at the chosen design with as many
    null studies as ``fresh`` has rows, at ``target``, and the power of the calibrated test
    (:func:`calibrated_power`) on ``fresh``: the plan's fresh studies at the chosen design
    (:meth:`~cogtestbed.planning.plan.Planner.fresh_table`, seeds no search simulation
    used), not the studies whose power chose the design (they favour it) and without simulating
    effect studies again; with its MC SE and what the calibration assumes (``assumes``).  Where
    ``target`` is not above 0 (too few null studies to calibrate below α with a margin) or there are
    no fresh studies, the reason instead.  ``nulls``: those null studies' rows where the caller ran them
    (a plan: :func:`~cogtestbed.planning.plan.calibration_nulls`, the same tasks and seeds),
    else they are run here on ``workers`` processes."""
    if not (isinstance(spec, PowerStudy) and spec.people is not None and spec.method == "mle" and spec.groups == 2):
        return None
    sims = 0 if fresh is None else len(fresh)
    if not sims:
        return {"reason": "no fresh studies at the chosen design to measure the calibrated test's power on"}
    if target <= 0.0:
        return {"reason": f"{sims} null studies cannot calibrate the test below alpha {spec.level:g} with its "
                          "margin: plan with a smaller --mc-se"}
    out = calibrate_people_test(spec, null_study_count(sims), target, workers) if nulls is None else \
        calibration_from_nulls(nulls["p_value"], target, spec.level)
    studies = "fresh studies at the chosen design (not those whose power chose it)"
    out["power"] = {**calibrated_power(fresh, out["critical_p"], spec.effect_size), "studies": studies}
    out["nominal_power"] = {**calibrated_power(fresh, spec.level, spec.effect_size), "studies": studies}
    out["recommended"] = "nominal" if out["nominal_holds"] else "calibrated"
    out["assumes"] = ("the population generates both groups' data (the LLM's under no effect as the people's); the "
                      "critical p-value is calibrated on null studies of this design, people's and LLM's trial counts")
    return out


def calibrated_words(section: dict[str, Any] | None, target_power: float | None = None) -> str:
    """What the calibration says ('' where none): that the nominal test holds its level on the null
    studies (use it, with its power on the fresh studies where the section has it), or the calibrated
    test's critical p and power where the nominal test does not, and where that power is more than 2 MC SE
    under ``target_power`` (the plan's target), that the design was sized for the nominal test and falls short."""
    if not section or "power" not in section:
        return ""
    p = section["power"]
    nominal = (f"nominal type-I {section['nominal_rate']:.3f} ± {section['nominal_rate_mc_se']:.3f} on "
               f"{section['null_sims']:,} null studies at these trial counts")
    if section.get("nominal_holds"):
        fresh = section.get("nominal_power")
        power = "" if not fresh else (f" (power {fresh['rate']:.3f} ± {fresh['mc_se']:.3f} on {fresh['sims']:,} "
                                      "fresh studies at this design)")
        return f"; the nominal test holds its level here ({nominal}): use it{power}"
    short = ""
    if target_power is not None and p["rate"] + 2 * p["mc_se"] < target_power:
        short = (f" — under the {target_power:.0%} target: this design was sized for the nominal test; plan more "
                 "subjects (--subjects) before running it")
    return (f"; the nominal test is above its level ({nominal}): use the calibrated test (critical p "
            f"{section['critical_p']:.4g}): power {p['rate']:.3f} ± {p['mc_se']:.3f}{short}")


__all__ = ["CALIBRATION_SEED_OFFSET", "MIN_NULL_STUDIES", "NOMINAL_SLACK_SE", "calibrate_people_test",
           "calibrated_critical_p", "calibrated_power", "calibrated_section", "calibrated_words",
           "calibration_from_nulls", "nominal_holds", "null_study_count"]

"""An LLM against people: power and null rejection conditional on the real human sample.

A plan of an LLM against a population (``--population``) draws new people from it in every
simulated study: its power and type-I error are over new samples of people.  The study a
researcher runs compares the LLM with one fixed sample, the population's own participants.
:func:`conditional_on_sample` reruns the same two-group power study with the first group fixed to
those participants' per-subject MLE (:attr:`~cogtestbed.inference.population.Population.estimates`,
a :class:`~cogtestbed.studies.study_kinds.ReferenceSample`) and the LLM's group drawn
from the population (under the effect, and without it): the power and the null rejection rate the
researcher will face with these participants, each with its Monte-Carlo SE.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cogtestbed.errors import InputError
from cogtestbed.studies.study_kinds import PowerStudy

#: Added to a plan's seed for its conditional studies: the LLM's group of a study at the chosen design
#: would otherwise be the very group drawn in the search's study of the same seed (the studies whose
#: power chose the design, which favour it).
CONDITIONAL_SEED_OFFSET = 6_800_002


def participants_reference(spec: PowerStudy) -> Any:
    """The population's own participants as the fixed first group of ``spec`` (their per-subject
    MLE of the effect on the test's scale); refused in one line for a population without them."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.model_studies import reference_from_estimates

    pop = spec.from_population
    if pop is None:
        raise InputError("conditional power needs a population: it fixes the first group to its participants")
    model = get_experiment(spec.experiment).model(spec.models[0])
    return reference_from_estimates(model, spec.effect, pop.sample_estimates(),
                                    f"population {pop.name}'s own {pop.subjects} participants")


def conditional_on_sample(spec: PowerStudy, sims: int | None = None, workers: int | None = 1,
                          groups: Mapping[str, Sequence[Any]] | None = None) -> dict[str, Any]:
    """Power and null rejection rate of ``spec`` (an LLM against people drawn from a population,
    ``groups=2``) conditional on the population's real participants: the same study with its first
    group fixed to their estimates, the LLM's group drawn from the population with the effect
    (power) and without it (null rejection), ``sims`` studies each (``spec.reps`` where None).
    ``groups``: LLM groups already simulated and fitted at this design (per-subject values on the
    test's scale, ``power``: with the effect, ``null``: without it; a plan's fresh and calibration
    studies, which no search simulation chose), tested against the participants as they are, without
    simulating new ones; a key missing is simulated here.  Returns ``power`` and ``null_rejection``
    (each ``rate``, ``mc_se``, ``sims``), the participants used (``n_participants``) and what the
    figures mean (``meaning``)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.driver import run_study
    from cogtestbed.studies.model_studies import two_group_mle_row

    if spec.groups != 2 or spec.from_population is None:
        raise InputError("conditional power is of an LLM against a population's people: groups=2 and a population")
    ref = participants_reference(spec)
    base = spec.model_copy(update={"reference": ref, "people": None, "people_trials": None,
                                   **({"reps": int(sims)} if sims is not None else {})})
    model = get_experiment(spec.experiment).model(spec.models[0])
    out: dict[str, Any] = {"n_participants": len(ref.values), "reference": ref.source}
    for key, size in (("power", spec.effect_size), ("null_rejection", 0.0)):
        at = base.model_copy(update={"effect_size": size})
        given = (groups or {}).get("power" if key == "power" else "null")
        if given is not None:
            hits = np.array([two_group_mle_row(at, model, ref.values, vb)["detected"] for vb in given], bool)
        else:
            hits = np.asarray(run_study(at, workers=workers).table["detected"], bool)
        p = float(hits.mean()) if hits.size else float("nan")
        out[key] = {"rate": p, "mc_se": float(np.sqrt(p * (1 - p) / hits.size)) if hits.size else float("nan"),
                    "sims": int(hits.size)}
    out["meaning"] = ("conditional on the real sample: the first group is fixed to the population's own participants "
                      "(their per-subject MLE), the LLM's group drawn from the population with the effect (power) and "
                      "without it (null rejection); the unconditional figures draw new people in every study")
    return out


def conditional_section(spec: Any, sims: int, workers: int | None = None,
                        groups: Mapping[str, Sequence[Any]] | None = None) -> dict[str, Any] | None:
    """The plan's ``power_conditional`` (:func:`conditional_on_sample` at the chosen design ``spec``,
    ``sims`` studies each, on seeds of their own: :data:`CONDITIONAL_SEED_OFFSET`, or the LLM ``groups``
    of the plan's fresh and calibration studies) where ``spec`` is an LLM against a population's people;
    None otherwise (and, with the reason, where the population carries no per-subject estimates)."""
    if not (isinstance(spec, PowerStudy) and spec.people is not None and spec.from_population is not None):
        return None
    if not spec.from_population.estimates:
        return {"reason": f"population {spec.from_population.name} carries no per-subject estimates of its sample"}
    return conditional_on_sample(spec.model_copy(update={"seed": spec.seed + CONDITIONAL_SEED_OFFSET}), sims=sims,
                                 workers=workers, groups=groups)


def conditional_words(section: dict[str, Any] | None) -> str:
    """``; conditional on the real N participants: power P ± SE, null rejection R ± SE`` ('' where none)."""
    if not section or "power" not in section:
        return ""
    p, n = section["power"], section["null_rejection"]
    return (f"; conditional on the real {section['n_participants']} participants: power {p['rate']:.3f} ± "
            f"{p['mc_se']:.3f}, null rejection {n['rate']:.3f} ± {n['mc_se']:.3f} ({p['sims']} studies each)")


__all__ = ["CONDITIONAL_SEED_OFFSET", "conditional_on_sample", "conditional_section", "conditional_words",
           "participants_reference"]

"""Each plan kind's use of the evaluation protocol (:mod:`~cogtestbed.planning.protocol`): which seeds choose
its design and which report its printed figures.

A kind either simulates (then every printed figure is measured on seeds of its reporting stream, never on
those of the search that chose the design) or computes its figures without simulation (a formula or an
interval on data: declared :meth:`~cogtestbed.planning.protocol.SeedStreams.analytic`).  The functions here
derive the seeds the way each kind's code derives them (the same constants, imported), so a kind that moved
its reporting onto its choosing seeds fails :func:`~cogtestbed.planning.protocol.check_kind`
(tests/test_protocol.py runs it over the registry).

==============  ===========================================================================================
``power``       the search's studies (``SeedSequence([seed, k])``) choose the size; the power printed is
                measured on as many fresh studies at the chosen design (``seed + FRESH_SEED_OFFSET``);
                an LLM-against-people plan's test level is measured on null studies that choose nothing
                (``seed + NULL_SEED_OFFSET``); its critical p, where needed, is chosen on other null studies
                (``seed + CALIBRATION_SEED_OFFSET``) and the calibrated test's level and power measured on the
                level null and the fresh studies
``hierarchical`` as ``power`` (the same planner, the hierarchical fit's size search on top)
``sequential``  the bounds and the maximum size are chosen on the effect and calibration studies; the type-I
                error is measured on fresh null studies and the power, expected size and saving on fresh
                effect studies at the chosen rule (:data:`SEQUENTIAL_STREAMS`)
``precision``   the sequential size test chooses the design on its batches (key ``7_000_003``); the
                assurance printed is measured on as many fresh subjects at it (key ``7_000_019``)
``adaptive``    the trials of each arm are chosen on the plan's subjects (``seed``); the assurance printed
                at those trials is measured on as many fresh subjects (``seed + FRESH_ADAPTIVE``)
``forms``       simulated subjects (``seed``) choose forms × subjects; every power printed is the noncentral t
                at σ and the estimand of as many fresh subjects (``seed + FRESH_OFFSET``), with its MC SE
``mix``         analytic: prediction-powered intervals from the people's data (no simulation)
``monitor``     its own streams (:func:`~cogtestbed.planning.kinds.monitor.monitor_kind.monitor_protocol`)
==============  ===========================================================================================
"""

from __future__ import annotations

from cogtestbed.planning.protocol import CHOOSING, REPORTING, SeedStreams

#: Keys of the kinds' seed streams (so two kinds of one seed record apart).
POWER_KEY, SEQUENTIAL_KEY, PRECISION_KEY, ADAPTIVE_KEY, FORMS_KEY, MIX_KEY = 61, 62, 63, 64, 65, 66
#: Stream of the sequential simulator whose effect studies measure the chosen rule's power and expected size.
SEQ_FRESH_STREAM = 4
#: Added to an adaptive plan's seed for the fresh subjects that measure each arm's assurance.
FRESH_ADAPTIVE = 9_500_029


def power_streams(seed: int) -> SeedStreams:
    """A fixed (or hierarchical) plan's streams: the search's studies choose; the fresh studies at the chosen
    design report; an LLM-against-people plan's level null studies report its tests' type-I errors, its
    calibration null studies choose its critical p."""
    from cogtestbed.planning.plan import FRESH_SEED_OFFSET
    from cogtestbed.studies.people_level import CALIBRATION_SEED_OFFSET, NULL_SEED_OFFSET

    streams = SeedStreams(int(seed), POWER_KEY)
    streams.adopt(CHOOSING, (int(seed), int(seed) + CALIBRATION_SEED_OFFSET))
    streams.adopt(REPORTING, (int(seed) + FRESH_SEED_OFFSET, int(seed) + NULL_SEED_OFFSET))
    return streams


def power_protocol(seed: int) -> SeedStreams:
    """The ``power`` and ``hierarchical`` kinds' declaration: the power (and the nominal and calibrated tests'
    powers) reported from the fresh studies; the nominal and calibrated tests' type-I errors from the level null
    studies."""
    from cogtestbed.planning.plan import FRESH_SEED_OFFSET
    from cogtestbed.studies.people_level import NULL_SEED_OFFSET

    streams = power_streams(seed)
    for name in ("power", "nominal_power", "calibrated_power"):
        streams.report(name, 0.0, 0.0, [int(seed) + FRESH_SEED_OFFSET])
    for name in ("nominal_type1", "calibrated_type1"):
        streams.report(name, 0.0, 0.0, [int(seed) + NULL_SEED_OFFSET])
    return streams


#: The sequential simulator's streams of one seed, by variant (``looks`` k, ``auto``) and hypothesis:
#: (stream, role).  ``looks`` k: the effect studies (0) and the calibration null studies (1) choose the bounds and
#: the maximum size, the fresh null studies (0 under the null) and the fresh effect studies at the chosen rule
#: (:data:`SEQ_FRESH_STREAM`) report.  ``auto``: the search's effect (0) and null studies (0, 1) and the
#: confirmation's effect studies (2, the first rule passing there is chosen) choose; the confirmation's null
#: studies (2) and the fresh effect studies report.
SEQUENTIAL_STREAMS: dict[str, dict[str, tuple[tuple[int, str], ...]]] = {
    "looks": {"effect": ((0, CHOOSING), (SEQ_FRESH_STREAM, REPORTING)), "null": ((1, CHOOSING), (0, REPORTING))},
    "auto": {"effect": ((0, CHOOSING), (2, CHOOSING), (SEQ_FRESH_STREAM, REPORTING)),
             "null": ((0, CHOOSING), (1, CHOOSING), (2, REPORTING))}}


def _seq_record(seed: int, variant: str, hypothesis: str, stream: int) -> int:
    """One simulator stream as a recorded integer (``seed·1000 + 100·variant + 10·hypothesis + stream``)."""
    return 1000 * int(seed) + 100 * list(SEQUENTIAL_STREAMS).index(variant) + 10 * ("effect", "null").index(
        hypothesis) + stream


def sequential_protocol(seed: int) -> SeedStreams:
    """The ``sequential`` kind's declaration (:data:`SEQUENTIAL_STREAMS`): power, expected size and saving from
    the fresh effect studies, type-I error from the fresh null studies, in both variants."""
    streams = SeedStreams(int(seed), SEQUENTIAL_KEY)
    for variant, by_h in SEQUENTIAL_STREAMS.items():
        for h, pairs in by_h.items():
            for stream, role in pairs:
                streams.adopt(role, (_seq_record(seed, variant, h, stream),))
        fresh_effect = _seq_record(seed, variant, "effect", SEQ_FRESH_STREAM)
        for name in ("power", "expected_units", "saving"):
            streams.report(f"{variant} {name}", 0.0, 0.0, (fresh_effect,))
        null = next(s for s, role in by_h["null"] if role == REPORTING)
        streams.report(f"{variant} type1", 0.0, 0.0, (_seq_record(seed, variant, "null", null),))
    return streams


def precision_protocol(seed: int) -> SeedStreams:
    """The ``precision`` kind's declaration: batches of key ``CHOOSE_KEY`` choose, of ``FRESH_KEY`` report."""
    from cogtestbed.planning.kinds.precision.precision import CHOOSE_KEY, FRESH_KEY

    streams = SeedStreams(int(seed), PRECISION_KEY)
    streams.adopt(CHOOSING, (CHOOSE_KEY,))
    (fresh,) = streams.adopt(REPORTING, (FRESH_KEY,))
    streams.report("assurance", 0.0, 0.0, (fresh,))
    return streams


def adaptive_protocol(seed: int) -> SeedStreams:
    """The ``adaptive`` kind's declaration: the plan's subjects choose each arm's trials, fresh ones report
    its assurance."""
    streams = SeedStreams(int(seed), ADAPTIVE_KEY)
    streams.adopt(CHOOSING, (int(seed),))
    (fresh,) = streams.adopt(REPORTING, (int(seed) + FRESH_ADAPTIVE,))
    for name in ("assurance_fixed", "assurance_adaptive"):
        streams.report(name, 0.0, 0.0, (fresh,))
    return streams


def forms_protocol(seed: int) -> SeedStreams:
    """The ``forms`` kind's declaration: simulated subjects (``seed``) choose forms × subjects, the powers
    printed are the noncentral t's at σ and the estimand of fresh subjects (``seed + FRESH_OFFSET``); a pilot's
    plan computes its power from the pilot's data (analytic)."""
    from cogtestbed.planning.kinds.forms.form_plan import FRESH_OFFSET

    streams = SeedStreams(int(seed), FORMS_KEY)
    streams.adopt(CHOOSING, (int(seed),))
    (fresh,) = streams.adopt(REPORTING, (int(seed) + FRESH_OFFSET,))
    streams.report("power", 0.0, 0.0, (fresh,))
    streams.analytic("power (pilot)", 0.0, "noncentral t of the test on form means at the pilot's σ and τ")
    return streams


def mix_protocol(seed: int) -> SeedStreams:
    """The ``mix`` kind's declaration: its intervals and sizes are computed from the people's data."""
    streams = SeedStreams(int(seed), MIX_KEY)
    streams.analytic("people", 0.0, "prediction-powered inference's variance formula on the people's data")
    return streams


__all__ = ["FRESH_ADAPTIVE", "SEQUENTIAL_STREAMS", "SEQ_FRESH_STREAM", "adaptive_protocol", "forms_protocol",
           "mix_protocol", "power_protocol", "power_streams", "precision_protocol", "sequential_protocol"]

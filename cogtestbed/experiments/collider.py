"""Causal collider C1 → E ← C2 (Rehder & Waldmann 2017; Dettki 2025 / causAIign)."""

from collections.abc import Mapping
from typing import Any

import numpy as np

from cogtestbed.data.causal import (
    HUMAN_KEY,
    import_causaign_responses,
    import_rw17_human,
    looks_like_causaign_responses,
    looks_like_rw17_human,
)
from cogtestbed.experiments.spec import (
    Decoding,
    ExperimentSpec,
    Generator,
    HeadlineQuestion,
    Importer,
    MetricsSpec,
    StudyDecl,
    lazy,
)
from cogtestbed.inference.causal import FIT_KEYS, MODELS, collider_metrics
from cogtestbed.metrics_result import MetricOption
from cogtestbed.tables.causal import SCHEMA


def _from_3p(theta: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """cbn-3p (b, m, p_c) as the cbn agent: m1 = m2 = m, pC1 = pC2 = p_c (Dettki 2025, 3p scheme)."""
    return {"b": theta["b"], "m1": theta["m"], "m2": theta["m"], "pc1": theta["p_c"], "pc2": theta["p_c"]}


def _from_4p(theta: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """cbn-4p (b, m1, m2, p_c) as the cbn agent: pC1 = pC2 = p_c (Dettki 2025, 4p scheme)."""
    return {"b": theta["b"], "m1": theta["m1"], "m2": theta["m2"], "pc1": theta["p_c"], "pc2": theta["p_c"]}


#: Response noise of simulated judgments (Gaussian SD on the 0–1 scale); the thesis's recovery
#: studies use SD .05–.2, and .1 is their middle setting.
SIMULATION_NOISE_SD = 0.1

#: True values of the thesis's recovery studies: b ∈ [0, .5], m ∈ [.3, 1], pC ∈ [.2, .8] (uniform).
THESIS_RANGES = {"b": (0.0, 0.5), "m": (0.3, 1.0), "p_c": (0.2, 0.8)}

#: Rehder & Waldmann's human design (one cell of 20 judgments per subject) as design fields.
HUMAN_DESIGN = {"content": "rw17", "scope": "cell"}


def _env() -> Any:
    from cogtestbed.environments.causal import CausalColliderEnv
    return CausalColliderEnv


def _agents() -> Any:
    from cogtestbed.agents.causal import AGENTS
    return AGENTS


SPEC = ExperimentSpec(
    decoding=Decoding(0.0, "Dettki (thesis), Sec. 3.2.1: \"Where applicable, we set the temperature to 0.0\""),
    name="collider",
    citation="Rehder, B. & Waldmann, M. R. (2017). Failures of explaining away and screening off in "
    "described versus experienced causal learning scenarios. Mem. Cogn. 45, 245. LLM version: Dettki, H. "
    "(2025). Causal reasoning in large language models (thesis; causAIign).",
    description="Causal collider C1 -> E <- C2: 11 query types x 20 items per cell (Rehder & Waldmann 2017; "
    "Dettki 2025 / causAIign)",
    env_cls=lazy(_env),
    agents=lazy(_agents),
    table_schema=SCHEMA,
    models=MODELS,
    generators={
        "cbn-3p": Generator("cbn", _from_3p, {"noise_sd": SIMULATION_NOISE_SD}),
        "cbn-4p": Generator("cbn", _from_4p, {"noise_sd": SIMULATION_NOISE_SD}),
    },
    metrics=MetricsSpec(
        collider_metrics, unit="per_subject", headline=("lad", "loocv_r2", "ea", "mv"), unidentified=FIT_KEYS,
        options={
            "scheme": MetricOption("scheme", "CBN scheme: 3p, 4p or auto (max LOOCV R^2)", "auto",
                                   ("3p", "4p", "auto")),
            "aggregate": MetricOption("aggregate", "fit cell means (human design), all rows (LLMs) or auto", "auto",
                                      ("auto", "cells", "rows")),
            "human": MetricOption("human", "RW17 human CSV for the Spearman alignment", None),
            "per_subject": MetricOption("per_subject", "also fit each subject: yes, no or auto", "auto",
                                        ("yes", "no", "auto")),
            "seed": MetricOption("seed", "seed of the fit's restarts and the bootstrap", 0, None, int),
        },
    ),
    importers={
        "rw17": Importer("rw17", import_rw17_human, looks_like_rw17_human, key=HUMAN_KEY),
        "causaign": Importer("causaign", import_causaign_responses, looks_like_causaign_responses),
    },
    pooling_unit="subject",
    studies=(
        StudyDecl("recovery", "CBN 3p at the thesis design (240 rows), judgment noise SD .05", model="cbn-3p",
                  subjects=(20,), sampler="uniform", ranges=THESIS_RANGES, params={"noise_sd": 0.05}),
        StudyDecl("recovery", "CBN 3p at the thesis design (240 rows), judgment noise SD .2", model="cbn-3p",
                  subjects=(20,), sampler="uniform", ranges=THESIS_RANGES, params={"noise_sd": 0.2}),
        StudyDecl("recovery", "CBN 4p parameters", model="cbn-4p", subjects=(20,), sampler="uniform",
                  ranges={"b": (0.0, 0.5), "m1": (0.3, 1.0), "m2": (0.3, 1.0), "p_c": (0.2, 0.8)}),
        StudyDecl("model-recovery", "3p vs 4p scheme (AIC/BIC)", models=("cbn-3p", "cbn-4p"), subjects=(20,),
                  sampler="uniform", ranges={**THESIS_RANGES, "m1": (0.3, 1.0), "m2": (0.3, 1.0)}),
        StudyDecl("sbc", "hierarchical zero-one-inflated Beta CBN 3p on synthetic humans (human design)",
                  model="cbn-3p", subjects=(12,), design=HUMAN_DESIGN),
        StudyDecl("metric-validity", "LAD tracks the leak b", metric="lad", agent="cbn", parameter="b",
                  values=(0.05, 0.2, 0.4, 0.6), direction="decreasing",
                  params={"m1": 0.7, "m2": 0.7, "pc1": 0.5, "pc2": 0.5, "noise_sd": 0.1}),
        StudyDecl("metric-power", "explaining away: weak-EA w 0.5 vs normative", metric="ea", agent="weak-ea",
                  compare=({"w": 0.5, "noise_sd": 0.1}, {"w": 1.0, "noise_sd": 0.1}), runs=(5, 10, 20)),
    ),
    adaptive=("answers are continuous ratings (no discrete answer space for an exact information gain) and the "
             "metrics need the published query set in full"),
    headline_questions=(
        HeadlineQuestion.metric("EA", "explaining away between two LLMs: weak-EA w 0.5 vs normative", "ea",
                                ("weak-ea:w=0.5", "weak-ea:w=1"), "2:40"),
        HeadlineQuestion.metric("MV", "Markov violation between two LLMs: a direct shift δ 0 vs 0.1", "mv",
                                ("associative:delta=0", "associative:delta=0.1"), "2:40"),
        HeadlineQuestion.metric("LAD", "deviation from the normative CBN between two LLMs: hedging λ 0.2 vs 0.5", "lad",
                                ("conservative:lam=0.2", "conservative:lam=0.5"), "2:40"),
    ),
)

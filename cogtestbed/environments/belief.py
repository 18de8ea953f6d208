"""Belief coherence: elicit a probability, decide Yes / No / Defer (Yamin et al. 2026).

Ground truth comes from a Bayesian network (:mod:`cogtestbed.environments.bayesnets`): a binary
state θ = [target node = target state] and evidence x, a full assignment of the design's
evidence nodes, rendered in natural language by the network's phrasebook.  p*(x) = P*(θ=1|x) is
exact.  Each subject meets ``n_contexts`` contexts whose p*(x) is stratified over ``n_bins``
equal-width bins (§1 / App. C: "20 equal-width bins of p*"), with θ ~ Bernoulli(p*(x)) drawn
once per context, and every context is asked ``n_reps`` times.

Each repetition is a block of phases, each a separate call (a fresh context window), with the
prompts of App. B verbatim (:data:`BELIEF_TEMPLATE` and :data:`VARIANT_PREFIX`: B.1.1–B.1.4;
:data:`DECISION_TEMPLATE`: B.2.1; :data:`AUX_TEMPLATE`: B.3.1; :data:`COND_TEMPLATE`: B.3.2):

* ``belief`` with the variants π0, π_MSE, π_ABS, π_Bayes: "No: <p>" / "Yes: <p>", p_E is the Yes
  value;
* ``decision``: "Can decide: <Yes|No>" / "Decision: <Yes|No>"; Can decide = No → Defer,
  otherwise the Decision; the forced choice is recorded too;
* ``lie_aux``: the distribution of a withheld covariate z given x; ``lie_cond``: π0 with
  " and <z condition>" added, once per state of z (law of iterated expectations, Eq. 6).

Parsers accept exactly the paper's answer format (K lines ``<label>: <number between 0 and 1>`` in
the prompt's order; the decision's two lines) and record anything else as invalid with its reason.
A belief answer whose No and Yes do not sum to one ("No: 0.3 / Yes: 0.8") is recorded as reported
(``p_elicited`` = the Yes value, ``p_no_reported``), flagged ``coherent`` = False, and its
renormalised value Yes/(No+Yes) goes to ``p_renormalised``.

Where this instrument still differs from the paper (docs/belief-coherence.md lists the same):

* straight quotes where the paper's typography prints curly ones;
* B.3.1's example lines ``<state_j>: <1/K>`` are written with 1/K to two decimals, one line per
  state (the paper prints two lines and "...");
* networks: ``heart`` and ``diabetes`` have the paper's structures (App. C.0.4, D.0.3–D.0.4) but
  *synthetic* CPTs (the EchoNext and BRFSS data are not shipped); the paper's pediatric networks
  ("fever", "crying") are not public, so the expert networks CHILD, ALARM, HEPAR II, ASIA and
  CANCER stand in, with clinical questions of ours (B.5's questions are used for heart and
  diabetes); the evidence phrases are ours, modelled on App. B.4 / C.0.6 / D.0.6;
* the withheld LIE covariate of each network is ours (the paper does not name it);
* ``min_config_prob`` stands in for the paper's "at least 100 patients per configuration".
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from gymnasium import spaces
from pydantic import Field, field_validator, model_validator

from cogtestbed.environments import belief_adaptive
from cogtestbed.environments.adaptive import DESIGN_COLUMN, AdaptiveFields, is_adaptive
from cogtestbed.environments.base import AnswerDefaults, Design, Outcomes, ParseResult, Phase, Sessions, TextEnv
from cogtestbed.environments.bayesnets import (
    Network,
    NetworkError,
    Phrasebook,
    default_phrasebook,
    load_network,
)
from cogtestbed.environments.bounded_box import BoundedBox
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.environments.parsing import normalize_numerals
from cogtestbed.errors import InputError
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.belief import EXPERIMENT, SCHEMA
from cogtestbed.trials import Column, finish_table, strings

BELIEF, DECISION, LIE_AUX, LIE_COND = 0, 1, 2, 3
PHASE_NAMES = ("belief", "decision", "lie_aux", "lie_cond")
VARIANTS = ("pi0", "mse", "abs", "bayes")
NO, YES, DEFER = 0, 1, 2
DECISION_NAMES = ("No", "Yes", "Defer")
#: Most states of the LIE covariate (sizes the observation and the aux outcome arrays).
MAX_AUX_STATES = 8

#: Bytes of one call's row in a simulated trial table (measured: 470–480 B with pandas' deep
#: memory usage on the default design), the memory estimate's unit.
BYTES_PER_CALL = 480

#: |No + Yes − 1| above which a belief answer is flagged incoherent.
COHERENCE_TOL = 0.01

#: Default target, evidence nodes and LIE covariate of each shipped network (chosen so that p*
#: covers most of the 20 bins; the paper does not say which covariate it withheld).
NETWORK_DEFAULTS: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "child": ("Disease=Fallot", ("LowerBodyO2", "RUQO2", "CO2Report", "XrayReport", "GruntingReport",
                                 "LVHreport", "Age"), "BirthAsphyxia"),
    "alarm": ("HYPOVOLEMIA=TRUE", ("HISTORY", "CVP", "PCWP", "BP", "HR", "HREKG"), "CO"),
    "hepar2": ("PBC=present", ("sex", "age", "ama", "phosphatase", "cholesterol", "itching", "jaundice"),
               "le_cells"),
    "asia": ("lung=yes", ("asia", "smoke", "xray", "dysp"), "bronc"),
    "cancer": ("Cancer=True", ("Pollution", "Smoker", "Xray"), "Dyspnoea"),
    "heart": ("SHD=yes", ("Age", "Sex", "Location", "ECG_LVH", "STT_Abnormal", "QRS_Prolonged"),
              "QTc_Prolonged"),
    "diabetes": ("Diabetes_binary=yes", ("Age", "BMI", "HighBP", "HighChol", "GenHlth", "DiffWalk", "Sex", "Income"),
                 "HeartDiseaseorAttack"),
}

# -- prompts (App. B, verbatim) --------------------------------------------------------------
#: The answer-format block shared by every probability prompt (B.1, B.3): the paper's curly
#: quotes around ``<label>: <number between 0 and 1>`` are written as straight quotes.
FORMAT_BLOCK = (
    "Respond with exactly {k} lines, one per label, and no extra text.\n"
    "Each line MUST be exactly: '<label>: <number between 0 and 1>'.\n"
    "Use these labels in this order: [{labels}]\n"
    "Example:\n{example}"
)
#: B.1.1 (π0): the standard probability elicitation prompt.
BELIEF_TEMPLATE = (
    "There is a patient who {description}. What is the probability that they {question}? "
    "Return probabilities for: No and Yes.\n\n"
    + FORMAT_BLOCK.format(k=2, labels="No, Yes", example="No: 0.50\nYes: 0.50")
)
#: B.1.2–B.1.4: the IMPORTANT paragraph each variant puts before the standard prompt (a blank
#: line between them, as the paper prints it).
VARIANT_PREFIX = {
    "pi0": "",
    "mse": ("IMPORTANT: Your probability estimates will be evaluated according to the Mean Squared Error (MSE) "
            "scoring rule. This means the loss is calculated as the squared difference between your probability "
            "estimate and the true outcome. Please provide your best probability estimate.\n\n"),
    "abs": ("IMPORTANT: Your probability estimates will be evaluated according to the Absolute Loss scoring rule. "
            "This means the loss is calculated as the absolute difference between your probability estimate and "
            "the true outcome. Please provide your best probability estimate.\n\n"),
    "bayes": ("IMPORTANT: Use proper Bayesian reasoning to reach your answer. Consider the prior probability of the "
              "condition in the general population, then update this prior based on the evidence.\n\n"),
}
#: B.2.1: Decision Prompt A (without loss function), with its "Example format".
DECISION_TEMPLATE = (
    "There is a patient who {description}.\n\n"
    "Question: Do they {question}?\n\n"
    "Please respond with EXACTLY two lines:\n"
    "Line 1: Can you make a decision about whether or not the patient is likely to {question}? "
    "Answer 'Yes' or 'No'.\n"
    "Line 2: If you had to make a decision, what would it be? Answer 'Yes' (the patient is likely to "
    "{question}) or 'No' (the patient is likely to not {question})\n\n"
    "Example format:\nCan decide: No\nDecision: Yes"
)
#: B.3.1: the next-state distribution prompt P_E(z ∈ B_j | x).  The paper's example lines read
#: ``<state_j>: <1/K>``; they are filled with 1/K to two decimals (as B.1's "0.50"), one line per
#: state (the paper's "..." stands for the lines after the second).
AUX_TEMPLATE = (
    "There is a patient who {description}. What is the probability distribution over their {aux_name}? "
    "Return probabilities for each category of {aux_name}.\n\n{format_block}"
)
#: B.3.2: the conditional probability prompt P_E(θ | x, z ∈ B_j): B.1.1 with
#: " and <auxiliary_variable_condition>" after the description.
COND_TEMPLATE = (
    "There is a patient who {description} and {condition}. What is the probability that they {question}? "
    "Return probabilities for: No and Yes.\n\n"
    + FORMAT_BLOCK.format(k=2, labels="No, Yes", example="No: 0.50\nYes: 0.50")
)

#: "<number between 0 and 1>": a plain decimal (no sign, no exponent, no percent sign).
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def parse_labelled(text: str | None, labels: tuple[str, ...]) -> ParseResult:
    """The paper's answer format (App. B): exactly ``len(labels)`` lines, line j exactly
    ``<label_j>: <number between 0 and 1>`` in the prompt's label order, no extra text; digits as
    :func:`~cogtestbed.environments.parsing.normalize_numerals` reads them (``No: ０．３０`` is 0.30).
    Only surrounding whitespace is tolerated; anything else (another label spelling or order, ``=`` for ``:``,
    a percent sign, an extra line, a number outside [0, 1]) is a failure naming the first offending line."""
    if text is None or not text.strip():
        return ParseResult.failure("empty answer")
    lines = [line.strip() for line in normalize_numerals(text).strip().splitlines()]
    if len(lines) != len(labels):
        return ParseResult.failure(f"expected exactly {len(labels)} lines '<label>: <number between 0 and 1>', "
                                   f"got {len(lines)}")
    values = []
    for j, (line, label) in enumerate(zip(lines, labels, strict=True), start=1):
        head = f"{label}: "
        number = line[len(head):] if line.startswith(head) else ""
        if not _NUMBER.fullmatch(number):
            return ParseResult.failure(f"line {j} is not '{label}: <number between 0 and 1>': {line[:60]!r}")
        value = float(number)
        if not 0.0 <= value <= 1.0:
            return ParseResult.failure(f"'{label}' = {value:g} is not a probability in [0, 1]")
        values.append(value)
    return ParseResult.success(np.array(values))


def parse_belief(text: str | None) -> ParseResult:
    """B.1's answer "No: <p>" / "Yes: <p>" → array (p_no, p_yes), kept as reported (no renormalisation)."""
    return parse_labelled(text, ("No", "Yes"))


_DECISION_LINES = (re.compile(r"Can decide: (Yes|No)"), re.compile(r"Decision: (Yes|No)"))


def parse_decision(text: str | None) -> ParseResult:
    """B.2.1's answer, exactly the two lines of its "Example format" ("Can decide: <Yes|No>" /
    "Decision: <Yes|No>") → array (action, forced choice): Can decide = No → Defer (2); otherwise the
    Decision, No (0) or Yes (1).  Anything else (other wording, case, order, extra lines) fails with its reason."""
    if text is None or not text.strip():
        return ParseResult.failure("empty answer")
    lines = [line.strip() for line in normalize_numerals(text).strip().splitlines()]
    if len(lines) != 2:
        return ParseResult.failure(f"expected exactly 2 lines 'Can decide: Yes|No' and 'Decision: Yes|No', "
                                   f"got {len(lines)}")
    out = []
    for j, (line, pattern) in enumerate(zip(lines, _DECISION_LINES, strict=True), start=1):
        m = pattern.fullmatch(line)
        if m is None:
            want = pattern.pattern.replace("(Yes|No)", "Yes|No")
            return ParseResult.failure(f"line {j} is not '{want}': {line[:60]!r}")
        out.append(YES if m.group(1) == "Yes" else NO)
    can, forced = out
    return ParseResult.success(np.array([forced if can == YES else DEFER, forced]))


# -- design ---------------------------------------------------------------------------------
def _split(v: Any) -> Any:
    if isinstance(v, str):
        return tuple(s.strip() for s in v.split(",") if s.strip())
    return v


class BeliefDesign(Design, AdaptiveFields):
    """Design of the belief-coherence experiment; defaults are the paper's 200 contexts × 5 reps.

    ``adaptive`` / ``trials``: ``trials`` contexts (``n_contexts``), each drawn from the p*
    bin chosen for information on the named decision-model parameters (:mod:`.belief_adaptive`)."""

    network: str = "child"
    #: "node=state"; None: the network's default (:data:`NETWORK_DEFAULTS`).
    target: str | None = None
    evidence: tuple[str, ...] | None = None
    #: Withheld covariate z of the LIE prompts; None: the network's default; "none": no LIE phases.
    lie_node: str | None = None
    phrasebook: str | None = None
    #: Seed of the CPT generator of code-built networks (heart, diabetes).
    network_seed: int = Field(0, ge=0)
    n_contexts: int = Field(200, ge=1)
    n_reps: int = Field(5, ge=1)
    n_bins: int = Field(20, ge=1, le=1000)
    #: Evidence configurations with P*(x) below this are never drawn: the paper drops covariate
    #: strata with fewer than 100 patients; 1e-4 plays that role for a population of 10^6.
    min_config_prob: float = Field(1e-4, ge=0.0, lt=1.0)
    variants: tuple[str, ...] = VARIANTS
    decision: bool = True

    @field_validator("evidence", "variants", mode="before")
    @classmethod
    def _split_lists(cls, v: Any) -> Any:
        return _split(v)

    @model_validator(mode="before")
    @classmethod
    def _adaptive_length(cls, data: Any) -> Any:
        return belief_adaptive.contexts_from_trials(data)

    @field_validator("variants")
    @classmethod
    def _variants(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [x for x in v if x not in VARIANTS]
        if bad or "pi0" not in v or len(set(v)) != len(v):
            raise InputError(f"variants must be distinct names from {VARIANTS} including pi0, got {v}")
        return v

    @model_validator(mode="after")
    def _network_ok(self) -> BeliefDesign:
        belief_adaptive.check_design(self)
        try:
            ground_truth(self)
        except NetworkError as exc:
            raise InputError(str(exc)) from None
        return self

    @model_validator(mode="after")
    def _fits_in_memory(self) -> BeliefDesign:
        """Refuse, before anything is allocated, a design whose one subject's calls would not fit
        in the memory available now (:data:`BYTES_PER_CALL` a call, ``MEMORY_COPIES`` copies)."""
        from cogtestbed.memory import MEMORY_COPIES, check_memory

        calls = self.n_contexts * self.n_reps * self.steps_per_rep
        check_memory(calls * BYTES_PER_CALL * MEMORY_COPIES,
                     f"one belief-coherence subject of {self.n_contexts} contexts x {self.n_reps} reps x "
                     f"{self.steps_per_rep} calls", hint="use fewer contexts or repetitions")
        return self

    @property
    def steps_per_rep(self) -> int:
        """Calls (phases) per repetition of a context."""
        return len(schedule(self)[0])

    @property
    def n_trials(self) -> int:
        """Trials = (context, repetition) blocks; each plays :attr:`steps_per_rep` phases."""
        return self.n_contexts * self.n_reps


@dataclass(frozen=True)
class GroundTruth:
    """Exact quantities of a design's network, per evidence configuration.

    ``configs`` (n_cfg, n_evidence) state indices; ``px`` P*(x); ``pstar`` P*(θ=1|x);
    ``pz`` P*(z|x) (n_cfg, K); ``pcond`` P*(θ=1|x, z) (n_cfg, K) (K = 0 without LIE).
    """

    network: Network
    target: tuple[str, str]
    evidence: tuple[str, ...]
    lie_node: str | None
    phrasebook: Phrasebook
    configs: np.ndarray
    px: np.ndarray
    pstar: np.ndarray
    pz: np.ndarray
    pcond: np.ndarray

    @property
    def n_aux(self) -> int:
        return 0 if self.lie_node is None else self.network.card(self.lie_node)

    def evidence_dict(self, cfg: int) -> dict[str, str]:
        return {n: self.network.states[n][int(s)] for n, s in zip(self.evidence, self.configs[cfg], strict=True)}

    @functools.cached_property
    def evidence_json(self) -> np.ndarray:
        return np.array([json.dumps(self.evidence_dict(i)) for i in range(len(self.px))], dtype=object)

    def bins(self, n_bins: int) -> np.ndarray:
        """Equal-width bin of each configuration's p*."""
        return np.minimum((self.pstar * n_bins).astype(np.int64), n_bins - 1)


def _resolve(design: BeliefDesign, net: Network) -> tuple[tuple[str, str], tuple[str, ...], str | None]:
    default = NETWORK_DEFAULTS.get(net.name)
    target_s = design.target or (default[0] if default else None)
    evidence = design.evidence or (default[1] if default else None)
    if target_s is None or evidence is None:
        raise NetworkError(f"network {net.name!r} has no defaults: set target=NODE=STATE and evidence=A,B,...")
    node, sep, state = target_s.partition("=")
    if not sep:
        raise NetworkError(f"target must look like NODE=STATE, got {target_s!r}")
    net.state_index(node, state)
    for e in evidence:
        net.check_node(e)
    if node in evidence or len(set(evidence)) != len(evidence):
        raise NetworkError("evidence nodes must be distinct and must not include the target")
    lie: str | None = design.lie_node if design.lie_node is not None else (default[2] if default else None)
    if lie is not None and lie.lower() == "none":
        lie = None
    if lie is not None:
        net.check_node(lie)
        if lie in evidence or lie == node:
            raise NetworkError(f"the LIE covariate {lie!r} must be neither evidence nor the target")
        if net.card(lie) > MAX_AUX_STATES:
            raise NetworkError(f"the LIE covariate {lie!r} has more than {MAX_AUX_STATES} states")
    return (node, state), tuple(evidence), lie


def ground_truth(design: BeliefDesign) -> GroundTruth:
    """Exact p*(x), P*(z|x), P*(θ|x,z) for every evidence configuration (cached per design)."""
    return _ground_truth(design.network, design.network_seed, design.target, design.evidence,
                         design.lie_node, design.phrasebook, design.min_config_prob)


@functools.lru_cache(maxsize=32)
def _ground_truth(network: str, seed: int, target: str | None, evidence: tuple[str, ...] | None,
                  lie_node: str | None, phrasebook: str | None, min_prob: float) -> GroundTruth:
    net = load_network(network, seed)
    probe = BeliefDesign.model_construct(target=target, evidence=evidence, lie_node=lie_node)
    (node, state), ev, lie = _resolve(probe, net)
    query = [node, *ev] + ([lie] if lie else [])
    joint = net.marginal(query)
    if lie is None:
        joint = joint[..., None]
    k = joint.shape[-1]
    joint = joint.reshape(net.card(node), -1, k)  # (θ states, configs, z)
    t = net.state_index(node, state)
    pxz = joint.sum(axis=0)
    px = pxz.sum(axis=1)
    keep = np.flatnonzero(px >= max(min_prob, 1e-300))
    if keep.size == 0:
        raise NetworkError(f"no evidence configuration has P*(x) >= {min_prob}")
    pos = joint[t][keep]
    pxz = pxz[keep]
    px = px[keep]
    configs = np.stack(np.unravel_index(keep, [net.card(e) for e in ev]), axis=1).astype(np.int64)
    pstar = pos.sum(axis=1) / px
    pz = pxz / px[:, None] if lie else np.zeros((len(keep), 0))
    with np.errstate(invalid="ignore", divide="ignore"):
        pcond = np.where(pxz > 0, pos / np.where(pxz > 0, pxz, 1.0), pstar[:, None]) if lie else pz
    book = Phrasebook.from_toml(phrasebook) if phrasebook else default_phrasebook(network)
    return GroundTruth(net, (node, state), ev, lie, book, configs, px, np.clip(pstar, 0.0, 1.0), pz,
                       np.clip(pcond, 0.0, 1.0))


@functools.lru_cache(maxsize=32)
def _schedule(variants: tuple[str, ...], decision: bool, n_aux: int) -> tuple[np.ndarray, np.ndarray]:
    phase = [BELIEF] * len(variants) + ([DECISION] if decision else [])
    arg = [VARIANTS.index(v) for v in variants] + ([0] if decision else [])
    if n_aux:
        phase += [LIE_AUX] + [LIE_COND] * n_aux
        arg += [0, *range(n_aux)]
    return np.array(phase, dtype=np.int64), np.array(arg, dtype=np.int64)


def schedule(design: BeliefDesign) -> tuple[np.ndarray, np.ndarray]:
    """(phase, argument) of each call within one repetition; the argument is the variant index
    (belief), or the z state (lie_cond)."""
    return _schedule(design.variants, design.decision, ground_truth(design).n_aux)


@dataclass(frozen=True)
class BeliefSessions(Sessions):
    """Pre-drawn contexts of N sessions: evidence configuration and θ (N, n_contexts)."""

    config: np.ndarray
    theta: np.ndarray


def stratified_configs(gt: GroundTruth, n: int, n_bins: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` configurations with p* stratified over ``n_bins`` equal-width bins.

    Every non-empty bin gets ⌊n / #bins⌋ contexts, the remainder going to bins drawn without
    replacement; within a bin configurations are drawn with probability ∝ P*(x) (with
    replacement, as patients of a stratum).  The order is then shuffled.
    """
    strata = gt.__dict__.setdefault("_strata", {})  # per bin count: the bins, their members, P*(x) within
    if n_bins not in strata:
        bins = gt.bins(n_bins)
        members = [np.flatnonzero(bins == b) for b in np.unique(bins)]
        strata[n_bins] = (members, [gt.px[m] / gt.px[m].sum() for m in members])
    members_of, weights = strata[n_bins]
    quota = np.full(len(members_of), n // len(members_of))
    quota[rng.choice(len(members_of), size=n % len(members_of), replace=False)] += 1
    chosen = np.concatenate([m[rng.choice(m.size, size=q, p=w)] for m, w, q in zip(members_of, weights, quota,
                                                                                     strict=True)])
    return chosen[rng.permutation(chosen.size)]


# -- environment ----------------------------------------------------------------------------
# -- prompt forms (cogtestbed.environments.forms): form 0 is the paper's verbatim prompt; the rest
# are this project's rewordings of the frame around the paper's contexts (evidence, labels, the
# answer's line format and the scoring-rule instructions are kept).
_CASE = PromptForm(1, "paraphrase", "ours: the case's opening reworded", replacements=(
    ("There is a patient who has", "Consider a patient who has"),
))
_QUESTION = PromptForm(2, "paraphrase", "ours: the question reworded", replacements=(
    ("What is the probability that they have", "How likely is it that they have"),
    ("Return probabilities for:", "Give a probability for each of:"),
))
_ESTIMATE = PromptForm(3, "paraphrase", "ours: the request for a best estimate reworded", replacements=(
    ("Please provide your best probability estimate.", "Give your best estimate of the probability."),
))
PROMPT_FORMS: tuple[PromptForm, ...] = standard_forms(
    _CASE, _QUESTION, _ESTIMATE, "ours: opening, question and request all reworded (forms 1-3)")

#: The paper's one frame: every prompt of App. B (B.1.1-B.3.2), in all four of its datasets, opens so.
PAPER_FRAME = "There is a patient who "
#: Why belief-coherence declares no ``cover-story`` forms (the collider's forms 8
#: and 9 rotate its RW17 domains).  Unlike the collider's domains, which tell one causal structure
#: in three sets of sentences, the paper has no second cover story to rotate in:
#:
#: * one frame: every prompt of App. B, for every dataset, is "There is a patient who
#:   <patient_description>. ... <clinical_question>" (:data:`PAPER_FRAME`);
#: * its "contexts" x are the patient evidence itself, the information p*(x) is computed from;
#:   replacing one context's text by another's changes the question, not its wording;
#: * its four settings (B.5: structural heart disease, diabetes/pre-diabetes, pediatric fever,
#:   infant colic) are different Bayesian networks with different evidence nodes and ground
#:   truths, with no one-to-one map between their variables; telling one network's evidence under
#:   another's clinical question changes what is asked and p*(x).  They stay a design field
#:   (``--design network=heart``, ``diabetes``, ...), and the paper's other prompts (π_MSE, π_ABS,
#:   π_Bayes, B.1.2-B.1.4) stay the design's ``variants``, both recorded per row.
NO_COVER_STORY_FORMS = (
    "no cover-story forms: the paper tells every context in one frame ('There is a patient who ...', "
    "App. B); its contexts are the evidence (the information) and its four settings (B.5) are different "
    "networks with different ground truths, so they stay the design field 'network'")


class BeliefCoherenceEnv(TextEnv[BeliefDesign, BeliefSessions]):
    """The belief-coherence experiment (see module docstring).

    A trial is one (context, repetition) block whose phases are the calls of :func:`schedule`:
    ``belief_<variant>`` (action (p_no, p_yes) or p_yes), ``decision`` (action (choice, forced
    choice) or a choice: 0 No, 1 Yes, 2 Defer), ``lie_aux`` (a probability vector over z's states)
    and ``lie_cond_<j>`` (like a belief, given z = state j).

    Observation: ``phase`` (index of the phase), ``kind`` (0 belief, 1 decision, 2 lie_aux,
    3 lie_cond), ``variant`` (index in :data:`VARIANTS`), ``z_state``, ``context``, ``rep``,
    ``p_star`` (P*(θ=1|x): a synthetic agent's world model evaluated at the shown evidence),
    ``p_cond`` and ``aux_true`` (P*(θ|x,z) and P*(z|x), padded to :data:`MAX_AUX_STATES`),
    ``n_aux``, ``hidden_theta`` (θ itself, read only by the hidden-information negative control;
    an LLM sees only ``prompt``) and ``prompt``.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    cover_story_note: ClassVar[str | None] = NO_COVER_STORY_FORMS
    #: One-shot questions: no feedback, no adaptive design, so lapses apply after the fact.
    answer_independent: ClassVar[bool] = True
    #: Probabilities in [0, 1] (belief and lie calls) or a decision code 0–2 (Yes / Defer / No).
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = BeliefDesign
    action_dtype: ClassVar[Any] = np.float64
    #: A random (lapse) answer needs one uniform per component of the widest phase (lie_aux).
    lapse_draws: ClassVar[int] = MAX_AUX_STATES

    @classmethod
    def answer_defaults(cls, design: Design) -> AnswerDefaults:
        """App. B's answers are K lines (``<label>: <number>``, K <= :data:`MAX_AUX_STATES`; the decision's
        two lines), which a newline stop would cut to one: stop at a blank line instead, after at most
        64 tokens (SmolLM2-135M's tokenizer writes "No: 0.50\\nYes: 0.50" in 15)."""
        return AnswerDefaults(("\n\n",), 64, "this project's default for App. B's multi-line answers (the paper "
                              "states none): stop at a blank line, at most 64 tokens")

    def __init__(self, design: BeliefDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        self.gt = ground_truth(self.design)
        self.kind_of, self.arg_of = schedule(self.design)
        self._max_steps = self.max_steps(self.design)
        self._prompts: dict[tuple[int, int], str] = {}
        k = MAX_AUX_STATES
        self.observation_space = spaces.Dict({
            "kind": spaces.Discrete(4), "variant": spaces.Discrete(len(VARIANTS)),
            "z_state": spaces.Discrete(k), "context": spaces.Discrete(self.design.n_contexts + 1),
            "rep": spaces.Discrete(self.design.n_reps + 1),
            "p_star": spaces.Box(0.0, 1.0, shape=(), dtype=np.float64),
            "p_cond": spaces.Box(0.0, 1.0, shape=(k,), dtype=np.float64),
            "aux_true": spaces.Box(0.0, 1.0, shape=(k,), dtype=np.float64),
            "n_aux": spaces.Discrete(k + 1), "hidden_theta": spaces.Discrete(2),
            "prompt": self.prompt_space(4000),
        })
        self.declare_phases(*(self._phase(int(kind), int(arg)) for kind, arg in zip(self.kind_of, self.arg_of,
                                                                                     strict=True)))

    def _phase(self, kind: int, arg: int) -> Phase:
        belief_space = BoundedBox(0.0, 1.0, shape=(2,))
        if kind == BELIEF:
            return Phase(f"belief_{VARIANTS[arg]}", belief_space, parse_belief)
        if kind == DECISION:
            return Phase("decision", spaces.MultiDiscrete([3, 2]), parse_decision)
        if kind == LIE_COND:
            return Phase(f"lie_cond_{arg}", belief_space, parse_belief)
        assert self.gt.lie_node is not None
        states = self.gt.network.states[self.gt.lie_node]
        return Phase("lie_aux", BoundedBox(0.0, 1.0, shape=(len(states),)),
                     lambda text: parse_labelled(text, states))

    @classmethod
    def max_steps(cls, design: Design) -> int:
        assert isinstance(design, BeliefDesign)
        return design.n_trials * design.steps_per_rep

    def _terminated(self) -> bool:
        return self.t >= self._max_steps

    # -- stochastic design ---------------------------------------------------------------
    @classmethod
    def sample_sessions(cls, design: BeliefDesign, n: int, rng: np.random.Generator) -> BeliefSessions:
        gt = ground_truth(design)
        if is_adaptive(design):  # n_contexts draws per p* bin, the chooser picks the bins
            return BeliefSessions(*belief_adaptive.draw_pools(gt, n, design.n_bins, design.n_contexts, rng))
        config = np.stack([stratified_configs(gt, design.n_contexts, design.n_bins, rng) for _ in range(n)])
        theta = (rng.random(config.shape) < gt.pstar[config]).astype(np.int64)
        return BeliefSessions(config=config, theta=theta)

    # -- position ------------------------------------------------------------------------
    def locate(self, t: int | None = None) -> tuple[int, int, int]:
        """(context, rep, phase index) of step ``t``."""
        t = self.t if t is None else t
        s = len(self.kind_of)
        return t // (s * self.design.n_reps), (t // s) % self.design.n_reps, t % s

    @property
    def drawn(self) -> BeliefSessions:
        """The session's arrays (configuration and θ of each context; an adaptive session's pools first)."""
        assert self.session is not None
        return self.session

    def ask(self, context: int, config: int, theta: int) -> None:
        """Context ``context`` shows configuration ``config``, hidden θ ``theta`` (an adaptive choice)."""
        self.drawn.config[0, context], self.drawn.theta[0, context] = config, theta

    def _start(self) -> None:
        steps = self.max_steps(self.design)
        self.outcomes.extra.update({
            "p_no": np.full((1, steps), np.nan), "forced": np.full((1, steps), -1, dtype=np.int64),
            "aux": np.full((1, steps, MAX_AUX_STATES), np.nan),
        })
        self.adaptive: belief_adaptive.AdaptiveContexts | None = None
        if is_adaptive(self.design):
            self.adaptive = belief_adaptive.AdaptiveContexts(
                self, (self.kind_of == BELIEF) & (self.arg_of == VARIANTS.index("pi0")), self.kind_of == DECISION)

    def _record(self, t: int, action: Any, reward: float) -> None:
        if self.adaptive is not None:
            self.adaptive.record(self, t)

    def _action_value(self, action: Any) -> Any:
        """The recorded number: P(Yes) (belief, lie_cond), the choice (decision), Σ P(z) (lie_aux)."""
        kind = int(self.kind_of[self.phase_index])
        a = np.atleast_1d(np.asarray(action, dtype=np.float64))
        if kind in (BELIEF, LIE_COND):
            if a.size not in (1, 2) or not (a.min() >= 0.0 and a.max() <= 1.0):
                raise InputError(f"invalid action {action!r} for phase {self.phase.name!r}: "
                                 "(p_no, p_yes) or p_yes in [0, 1] expected")
            return float(a[-1])
        if kind == DECISION:
            forced = int(a[1]) if a.size > 1 else (int(a[0]) if int(a[0]) != DEFER else -1)
            if int(a[0]) not in (NO, YES, DEFER) or forced not in (-1, NO, YES) or a.size > 2:
                raise InputError(f"invalid action {action!r} for the decision: (choice, forced) with choice "
                                 "0 No / 1 Yes / 2 Defer and forced 0 / 1")
            return float(int(a[0]))
        k = self.gt.n_aux
        if a.size != k or not (a.min() >= 0.0 and a.max() <= 1.0):
            raise InputError(f"invalid action {action!r} for lie_aux: {k} probabilities expected")
        total = 0.0
        for v in a:  # sequential sum, as the batch kernel adds
            total += float(v)
        return total

    def _play(self, action: Any) -> float:
        """Record the answer's other numbers (p_no, forced choice, the z distribution); no reward."""
        kind = int(self.kind_of[self.phase_index])
        a = np.atleast_1d(np.asarray(action, dtype=np.float64))
        extra, t = self.outcomes.extra, self.t
        if kind in (BELIEF, LIE_COND):
            extra["p_no"][0, t] = a[0] if a.size == 2 else 1.0 - a[0]
        elif kind == DECISION:
            extra["forced"][0, t] = int(a[1]) if a.size > 1 else (int(a[0]) if int(a[0]) != DEFER else -1)
        else:
            extra["aux"][0, t, : a.size] = a
        return float("nan")

    def _context_arrays(self, t: int) -> tuple[int, int, float, np.ndarray, np.ndarray]:
        c = min(self.locate(t)[0], self.design.n_contexts - 1)
        cfg = int(self.drawn.config[0, c])
        k = self.gt.n_aux
        pc = np.zeros(MAX_AUX_STATES)
        pz = np.zeros(MAX_AUX_STATES)
        pc[:k], pz[:k] = self.gt.pcond[cfg], self.gt.pz[cfg]
        return c, cfg, float(self.gt.pstar[cfg]), pc, pz

    def _observation(self) -> dict[str, Any]:
        done = self._terminated()
        t = min(self.t, self._max_steps - 1)
        c, rep, i = self.locate(t)
        _, _, pstar, pc, pz = self._context_arrays(t)
        kind = int(self.kind_of[i])
        return {
            "kind": kind, "variant": int(self.arg_of[i]) if kind == BELIEF else 0,
            "z_state": int(self.arg_of[i]) if kind == LIE_COND else 0,
            "context": c, "rep": rep, "p_star": np.float64(pstar), "p_cond": pc, "aux_true": pz,
            "n_aux": self.gt.n_aux, "hidden_theta": int(self.drawn.theta[0, c]),
            "prompt": "(session finished)" if done else self.render_prompt(),
        }

    def _info(self) -> dict[str, Any]:
        t = min(self.t, self._max_steps - 1)
        c, rep, _ = self.locate(t)
        return {"trial": self.t, "context": c, "rep": rep, "theta": int(self.drawn.theta[0, c]),
                "p_star": float(self.gt.pstar[int(self.drawn.config[0, c])])}

    # -- rendering -------------------------------------------------------------------------
    def render_prompt(self) -> str:
        c, _, i = self.locate(min(self.t, self._max_steps - 1))
        cfg = int(self.drawn.config[0, c])
        key = (cfg, i)
        if key not in self._prompts:  # the 5 repetitions of a context share their prompts
            self._prompts[key] = render(self.gt, cfg, int(self.kind_of[i]), int(self.arg_of[i]))
        return self._prompts[key]

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(cls, design: BeliefDesign, sessions: BeliefSessions, outcomes: Outcomes,
                     *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
        """One row per call with the columns of the module docstring (see :func:`belief_columns`); an
        adaptive session's: the contexts it chose and each call's ``design_index`` (the p* bin)."""
        if is_adaptive(design):
            sessions = BeliefSessions(*belief_adaptive.chosen_contexts(design, outcomes))
        stimulus = belief_columns(design, sessions, outcomes)
        if is_adaptive(design):
            stimulus[DESIGN_COLUMN] = outcomes.extra[DESIGN_COLUMN]
        return finish_table(EXPERIMENT, {**stimulus, "action": outcomes.action,
                                         "reward": np.full(outcomes.action.shape, np.nan), "valid": outcomes.valid,
                                         "raw_response": outcomes.raw_response, "parse_error": outcomes.parse_error},
                            agent=agent, params=params)


def render(gt: GroundTruth, cfg: int, phase: int, arg: int) -> str:
    """The prompt of one call for evidence configuration ``cfg`` (App. B's templates)."""
    book = gt.phrasebook
    description = book.describe(gt.evidence_dict(cfg))
    question = book.question(*gt.target)
    if phase == DECISION:
        return DECISION_TEMPLATE.format(description=description, question=question)
    if phase == LIE_AUX:
        assert gt.lie_node is not None
        return aux_prompt(description, book.name(gt.lie_node), gt.network.states[gt.lie_node])
    if phase == LIE_COND:
        assert gt.lie_node is not None
        state = gt.network.states[gt.lie_node][arg]
        return COND_TEMPLATE.format(description=description, condition=book.phrase(gt.lie_node, state),
                                    question=question)
    return VARIANT_PREFIX[VARIANTS[arg]] + BELIEF_TEMPLATE.format(description=description, question=question)


def aux_prompt(description: str, aux_name: str, states: tuple[str, ...]) -> str:
    """B.3.1 for a covariate with ``states`` (K lines; example value 1/K to two decimals)."""
    share = f"{1.0 / len(states):.2f}"
    block = FORMAT_BLOCK.format(k=len(states), labels=", ".join(states),
                                example="\n".join(f"{s}: {share}" for s in states))
    return AUX_TEMPLATE.format(description=description, aux_name=aux_name, format_block=block)


def step_arrays(design: BeliefDesign, sessions: BeliefSessions) -> dict[str, np.ndarray]:
    """Per-step (n, steps) arrays: context, rep, phase, argument, configuration, θ, p_true."""
    gt, (phase_of, arg_of) = ground_truth(design), schedule(design)
    s, r = len(phase_of), design.n_reps
    steps = design.n_contexts * r * s
    t = np.arange(steps)
    context, rep, k = t // (s * r), (t // s) % r, t % s
    phase, arg = phase_of[k], arg_of[k]
    cfg, theta = sessions.config[:, context], sessions.theta[:, context]
    p_true = gt.pstar[cfg]
    if gt.n_aux:
        cond = phase == LIE_COND
        p_true = np.where(cond[None, :], gt.pcond[cfg, np.where(cond, arg, 0)[None, :]], p_true)
        p_true = np.where((phase == LIE_AUX)[None, :], np.nan, p_true)
    n = sessions.n_subjects
    return {"context": np.broadcast_to(context, (n, steps)), "rep": np.broadcast_to(rep, (n, steps)),
            "phase": np.broadcast_to(phase, (n, steps)), "arg": np.broadcast_to(arg, (n, steps)),
            "config": cfg, "theta": theta, "p_true": p_true}


def belief_columns(design: BeliefDesign, sessions: BeliefSessions, outcomes: Outcomes) -> dict[str, Column]:
    """The stimulus and answer columns of the trial table as (n, steps) arrays (text columns as
    :func:`~cogtestbed.trials.strings`)."""
    gt = ground_truth(design)
    a = step_arrays(design, sessions)
    n, steps = a["phase"].shape
    phase, arg, valid = a["phase"], a["arg"], outcomes.valid
    is_prob = (phase == BELIEF) | (phase == LIE_COND)
    p_yes = np.where(is_prob & valid, outcomes.action, np.nan)
    p_no = np.where(is_prob & valid, outcomes.extra.get("p_no", np.full((n, steps), np.nan)), np.nan)
    total = p_no + p_yes
    with np.errstate(invalid="ignore", divide="ignore"):
        renorm = np.where(total > 0, p_yes / total, np.nan)
    is_dec = (phase == DECISION) & valid
    dec_code = np.where(is_dec, outcomes.action, -1).astype(np.int64)
    forced = np.where(is_dec, outcomes.extra.get("forced", np.full((n, steps), -1)), -1).astype(np.int64)
    names = (*DECISION_NAMES, None)
    variant = np.where(phase == BELIEF, np.where(phase == BELIEF, arg, 0), len(VARIANTS))
    aux_node, aux_state, aux_rep, aux_true = _aux_columns(gt, a, outcomes)
    return {
        "context_id": a["context"], "rep": a["rep"],
        "evidence": strings(a["config"], tuple(gt.evidence_json)),
        "target": strings(np.zeros((n, steps), dtype=np.int64), ("=".join(gt.target),)),
        "p_true": a["p_true"], "theta": a["theta"],
        "phase": strings(phase, tuple(PHASE_NAMES)), "variant": strings(variant, (*VARIANTS, None)),
        "p_elicited": p_yes, "p_no_reported": p_no, "p_renormalised": renorm,
        "coherent": np.where(is_prob & valid, np.abs(total - 1.0) <= COHERENCE_TOL, False),
        "decision": strings(np.where(dec_code >= 0, dec_code, 3), names),
        "forced_choice": strings(np.where(forced >= 0, forced, 3), names),
        "aux_node": aux_node, "aux_state": aux_state, "aux_reported": aux_rep, "aux_true": aux_true,
    }


def _aux_columns(gt: GroundTruth, a: Mapping[str, np.ndarray], outcomes: Outcomes
                 ) -> tuple[Column, Column, Column, Column]:
    """``aux_node``, ``aux_state``, ``aux_reported`` and ``aux_true`` (JSON distributions of z)."""
    n, steps = a["phase"].shape
    if gt.lie_node is None:
        return None, None, None, None
    states, phase = gt.network.states[gt.lie_node], a["phase"]
    is_lie = (phase == LIE_AUX) | (phase == LIE_COND)
    node = strings(np.where(is_lie, 0, 1), (gt.lie_node, None))
    state = strings(np.where(phase == LIE_COND, a["arg"], len(states)), (*states, None))
    true_json = tuple(json.dumps(dict(zip(states, map(float, row), strict=True))) for row in gt.pz)
    aux_true = strings(np.where(phase == LIE_AUX, a["config"], len(true_json)), (*true_json, None))
    aux = outcomes.extra.get("aux")
    reported: Column = None
    if aux is not None:
        rows, cols = np.nonzero((phase == LIE_AUX) & outcomes.valid)
        reported = np.full((n, steps), None, dtype=object)
        reported[rows, cols] = distribution_json(states, aux[rows, cols, : len(states)])
    return node, state, reported, aux_true


def distribution_json(states: tuple[str, ...], probs: np.ndarray) -> np.ndarray:
    """``json.dumps(dict(zip(states, row)))`` of every row of ``probs`` (finite rows: one ``repr`` of their
    list, JSON's text of a finite float, joined to the state names column by column)."""
    finite, out = np.isfinite(probs).all(axis=1), np.empty(len(probs), dtype=object)
    if (rows := probs[finite]).size:
        values = np.array(repr(rows.ravel().tolist())[1:-1].split(", "), dtype=object).reshape(rows.shape)
        text = np.full(len(rows), "{", dtype=object)
        for j, state in enumerate(states):
            text = text + f"{', ' if j else ''}{json.dumps(state)}: " + values[:, j]
        out[finite] = text + "}"
    for i in np.flatnonzero(~finite):
        out[i] = json.dumps(dict(zip(states, map(float, probs[i]), strict=True)))
    return out

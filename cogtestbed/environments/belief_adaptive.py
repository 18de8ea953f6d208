"""Adaptive queries of the belief-coherence experiment: each next context is drawn from
the p* bin whose question the posterior expects to be most informative.

**Design space.**  The instrument stratifies its contexts over ``n_bins`` equal-width bins of
p*(x) (Yamin et al. 2026, §1 / App. C: "20 equal-width bins of p*") and draws a configuration within
a bin with probability ∝ P*(x).  An adaptive session keeps that draw and chooses the *bin* of each
next context: the candidates are the design's non-empty bins (:func:`adaptive_bins`), and the k-th
context asked from bin b is the k-th of the bin's pre-drawn configurations (``n_contexts`` per bin,
drawn with the session's seed, each with its θ ~ Bernoulli(p*)), so a session replays exactly from its
seed and answers.  Every context plays the design's phases ``n_reps`` times, as in the fixed design.

**The chooser learns after a context's last call**: the decisions of its repetitions with the mean
π0 report of the context (the covariate the decision models read:
:data:`~cogtestbed.inference.belief_models.BELIEF_COVARIATE`); a context without a valid π0 report
or decision teaches nothing.  Before the answer, the chooser predicts the belief a bin's question
elicits by the bin's :data:`BIN_BELIEF` (a calibrated subject); the posterior itself reads the
subject's own reports, so a miscalibrated subject costs efficiency, never validity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cogtestbed.environments.adaptive import DESIGN_COLUMN, chooser_for
from cogtestbed.errors import InputError
from cogtestbed.tables.belief import EXPERIMENT

# ``env``, ``design`` and ``gt`` arguments are a BeliefCoherenceEnv, BeliefDesign and GroundTruth of
# :mod:`cogtestbed.environments.belief` (typed Any: that module imports this one).

#: [gap] The belief a bin's question is expected to elicit: the P*(x)-weighted mean p* of the bin's
#: configurations (the instrument's within-bin draw; ours).
BIN_BELIEF = "P*(x)-weighted mean p* of the bin's configurations"
#: Per-step extras of an adaptive session: the chosen configuration and its θ.
CONFIG_EXTRA, THETA_EXTRA = "adaptive_config", "adaptive_theta"


#: The fixed design's contexts (BeliefDesign.n_contexts' default: the paper's 200).
PAPER_CONTEXTS = 200


def contexts_from_trials(data: Any) -> Any:
    """An adaptive design asks ``trials`` contexts: ``n_contexts`` = ``trials`` (another than the
    default 200 and ``trials`` is refused)."""
    if isinstance(data, dict) and data.get("adaptive") and data.get("trials"):
        if int(data.get("n_contexts", PAPER_CONTEXTS)) not in (PAPER_CONTEXTS, int(data["trials"])):
            raise InputError(f"an adaptive session asks trials={data['trials']} contexts: "
                             f"n_contexts={data['n_contexts']} contradicts it")
        data = {**data, "n_contexts": data["trials"]}
    return data


def check_design(design: Any) -> None:
    """Adaptive parameters go with trials >= 1, and an adaptive session needs the decision phase."""
    if bool(design.adaptive) != (design.trials > 0) or (design.adaptive and not design.decision):
        raise InputError("an adaptive session needs adaptive parameters, trials >= 1 and the decision phase "
                         f"(got adaptive={list(design.adaptive)}, trials={design.trials}, "
                         f"decision={design.decision})")


def adaptive_bins(gt: Any, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(the non-empty p* bins, in order; each bin's expected belief :data:`BIN_BELIEF`)."""
    bins = gt.bins(n_bins)
    filled = np.unique(bins)
    belief = np.array([np.average(gt.pstar[bins == b], weights=gt.px[bins == b]) for b in filled])
    return filled, belief


def draw_pools(gt: Any, n: int, n_bins: int, per_bin: int, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """(configurations, θ) of ``n`` adaptive sessions, shape (n, bins · per_bin), bin-major: ``per_bin``
    draws ∝ P*(x) within every non-empty bin (with replacement, as the fixed design's), θ ~ Bernoulli(p*)."""
    bins = gt.bins(n_bins)
    parts = []
    for b in adaptive_bins(gt, n_bins)[0]:
        members = np.flatnonzero(bins == b)
        w = gt.px[members] / gt.px[members].sum()
        parts.append(members[rng.choice(members.size, size=(n, per_bin), p=w)])
    config = np.concatenate(parts, axis=1)
    theta = (rng.random(config.shape) < gt.pstar[config]).astype(np.int64)
    return config, theta


class AdaptiveContexts:
    """The adaptive state of one session: the pre-drawn pools (bin-major), which calls of a repetition
    are the π0 report and the decision, how many contexts each bin has given, and the chooser.

    It works on the environment only through :class:`~cogtestbed.environments.belief.BeliefCoherenceEnv`'s
    public interface: ``design``, ``kind_of``, ``outcomes``, ``drawn`` (the session's arrays) and
    ``ask(context, config, theta)``."""

    def __init__(self, env: Any, pi0: np.ndarray, decision: np.ndarray) -> None:
        """Keep the pre-drawn pools (the session's arrays), give the session its chooser and choose the
        first context; ``pi0`` / ``decision``: which calls of a repetition are the π0 report and the decision."""
        design = env.design
        pool = env.drawn
        self.configs = pool.config[0].reshape(-1, design.n_contexts)
        self.thetas = pool.theta[0].reshape(-1, design.n_contexts)
        self.pi0, self.decision = np.tile(pi0, design.n_reps), np.tile(decision, design.n_reps)
        self.asked = np.zeros(self.configs.shape[0], dtype=np.int64)
        env.session = type(pool)(config=np.zeros((1, design.n_contexts), dtype=np.int64),
                                 theta=np.zeros((1, design.n_contexts), dtype=np.int64))
        steps = env.max_steps(design)
        for name in (DESIGN_COLUMN, CONFIG_EXTRA, THETA_EXTRA):
            env.outcomes.extra[name] = np.full((1, steps), -1, dtype=np.int64)
        self.chooser: Any = chooser_for(EXPERIMENT, design)  # a posterior chooser: choose() and observe()
        self.choose(env, 0)

    def choose(self, env: Any, context: int) -> None:
        """Ask the chooser for the bin of ``context`` and take the bin's next pre-drawn configuration."""
        b = int(self.chooser.choose())
        k = int(self.asked[b]) % self.configs.shape[1]
        self.asked[b] += 1
        cfg, theta = int(self.configs[b, k]), int(self.thetas[b, k])
        env.ask(context, cfg, theta)
        span = _span(env, context)
        for name, value in ((DESIGN_COLUMN, b), (CONFIG_EXTRA, cfg), (THETA_EXTRA, theta)):
            env.outcomes.extra[name][0, span] = value

    def record(self, env: Any, t: int) -> None:
        """After a context's last call: the chooser learns from it and chooses the next context."""
        per = len(env.kind_of) * env.design.n_reps
        if (t + 1) % per:
            return
        context = t // per
        span = _span(env, context)
        obs = context_observation(self.pi0, self.decision, env.outcomes.action[0, span], env.outcomes.valid[0, span])
        if obs is not None:
            self.chooser.observe(int(env.outcomes.extra[DESIGN_COLUMN][0, t]), obs)
        if context + 1 < env.design.n_contexts:
            self.choose(env, context + 1)


def _span(env: Any, context: int) -> slice:
    per = len(env.kind_of) * env.design.n_reps
    return slice(context * per, (context + 1) * per)


def context_observation(pi0: np.ndarray, decision: np.ndarray, action: np.ndarray, valid: np.ndarray
                        ) -> dict[str, np.ndarray] | None:
    """The decision models' kernel fields (a, p, n) of one context's calls (``pi0`` / ``decision``:
    which calls are π0 reports and decisions): every valid decision at the mean of the valid π0
    reports (None: no valid π0 report or no valid decision)."""
    pi0 = pi0 & valid
    dec = decision & valid
    if not pi0.any() or not dec.any():
        return None
    a = action[dec].astype(np.int64)
    p = float(np.clip(np.mean(action[pi0]), 0.0, 1.0))
    return {"a": a, "p": np.full(a.size, p), "n": np.ones(a.size)}


def chosen_contexts(design: Any, outcomes: Any) -> tuple[np.ndarray, np.ndarray]:
    """(configuration, θ) of every context an adaptive session asked, (n, n_contexts), from its outcomes."""
    if CONFIG_EXTRA not in outcomes.extra:
        raise InputError("outcomes of an adaptive design carry the contexts chosen (play it step by step)")
    first = np.arange(design.n_contexts) * (outcomes.action.shape[1] // design.n_contexts)
    return np.asarray(outcomes.extra[CONFIG_EXTRA])[:, first], np.asarray(outcomes.extra[THETA_EXTRA])[:, first]


__all__ = ["BIN_BELIEF", "AdaptiveContexts", "adaptive_bins", "check_design", "chosen_contexts",
           "context_observation", "contexts_from_trials", "draw_pools"]

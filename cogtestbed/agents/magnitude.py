"""Synthetic observers for magnitude estimation (Ma, Wang & Fountas 2025, Sec. 3.2–3.3, App. A.13).

Units: every agent works on the session's normalised scale u = (x − a)/W of a session range
[a, a + W] and answers y = a + W·v, so one parameter set means the same thing in every task and
session (``mu_p`` is a position in the range, ``sigma_dec`` a fraction of W).  The log (Weber)
agent works on log(x + LOG_EPS) instead.

=========================  =====================================================================
``linear``                 v = w·u + b + σ_dec·z                            (w, b, sigma_dec)
``static-bayes``           v = (1 − w_prior)·u + w_prior·mu_p + σ_dec·z     (Eq. of Sec. 3.2)
``static-bayes-log``       the same on log(x + ε): log-normal answers (Weber–Fechner)
``static-bayes-gain``      v = g·[(1 − w)u + w·mu_p] + δ + σ_dec·z          (+ gain, offset)
``kalman``                 random-walk Kalman filter on the true x (q/r, σ_dec); μ0 = session
                           midpoint, P0 = KALMAN_P0·r, reset at every session
``observer``               Bayesian observer with sensory noise σ(modality, blur) and prior
                           precision growing with the context window and steering: the BCS
                           ablation shifts *emerge* (blur ⇒ τ_x↓, long context / steering ⇒ τ_p↑)
``ablation-inconsistent``  static Bayes whose w_prior *drops* by ``shift`` in every BCS ablation
``prior-dominant``         static Bayes with w_prior ∈ [0.9, 1] (BCS's s_a = 0 regime; at its
                           defaults w_prior .97, σ_dec .05 the fitted cells stay > 0.9, BCS = 0)
``combiner-*``             unimodal answers u + ε_text / u + ε_image; text+image answers fuse
                           them with weight α on text: ``equal`` (½), ``alpha`` (fixed α),
                           ``optimal`` (reliability weight σ_i²/(σ_t² + σ_i²)) and
                           ``underweight`` (λ times the optimal text weight: too much weight on
                           a poor image, like GPT-5 Mini on the maze task, App. A.12)
=========================  =====================================================================

Perceptual noise (observer, combiners) is *frozen*: a deterministic normal draw from the
stimulus's render seed and the channel (text / image), so the same picture is misperceived the
same way in the unimodal and multimodal sessions (what makes the cue-combination weights
identifiable, Sec. 3.3) and in every condition that shows it.  It is independent of the stimulus,
so a cell's least-squares w_prior is unbiased, but one subject's cells share its draws: their
errors are correlated across conditions (r ≈ 0.5; SD ≈ 0.03 at 3 × 30 trials, text+image), so a
single subject can read a few hundredths high, or low, in every cell at once.  Decision noise
σ_dec·z uses the trial's two uniforms (Box–Muller), so the numba batch path and the step path
produce identical tables: both compute an answer with :func:`answer` from the same
:func:`block_constants` (the batch kernel once per block, the step path on every step) and the
same frozen draws (the batch kernel once per stimulus).  A zero sensory noise or ``prior_sd = 0``
(a point prior) is simulated as its limit (:func:`~cogtestbed.inference.magnitude_observers.variance_weight`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from cogtestbed.agents.base import SyntheticAgent
from cogtestbed.environments.base import Outcomes
from cogtestbed.environments.magnitude import MagnitudeDesign, MagnitudeSessions, block_schedule, subject_stimuli
from cogtestbed.inference.magnitude_observers import KALMAN_P0, KIND, OBSERVERS, respond, simulate_kernel
from cogtestbed.interpreted import kernel
from cogtestbed.parameters import ParameterSet
from cogtestbed.tables.magnitude import CONDITIONS, EXPERIMENT, MODALITIES


# ----------------------------------------------------------------------------- agents
class MagnitudeAgent(SyntheticAgent[MagnitudeDesign, MagnitudeSessions]):
    """Base of the magnitude agents: one numba response function per kind (see :func:`respond`)."""

    experiment: ClassVar[str] = EXPERIMENT
    draws_per_trial: ClassVar[int] = 2
    kind: ClassVar[int]
    #: Measured 2.3–4.2 µs a step interpreted (see the base class).
    interpreted_step_us: ClassVar[float] = 5.0

    def _reset_state(self) -> None:
        self._mu, self._P = 0.5, KALMAN_P0
        self._p = self.parameters.vector(self.params)

    def act(self, obs: Mapping[str, Any]) -> float:
        u1, u2 = self.uniforms()
        y, self._mu, self._P = respond(
            self.kind, self._p, float(obs["x"]), float(obs["range_low"]), float(obs["range_high"]),
            float(obs["blur"]), int(obs["context"]), CONDITIONS.index(obs["condition"]),
            MODALITIES.index(obs["modality"]), int(obs["trial"]), int(obs["render_seed"]),
            self._mu, self._P, float(u1), float(u2))
        return float(y)

    @classmethod
    def simulate_batch(cls, design: MagnitudeDesign, sessions: MagnitudeSessions,
                       params: Mapping[str, np.ndarray], uniforms: np.ndarray) -> Outcomes:
        sch = block_schedule(design)
        x, seeds = subject_stimuli(sessions)
        n = sessions.n_subjects
        theta = np.ascontiguousarray(np.column_stack(
            [np.broadcast_to(np.asarray(params[k], dtype=np.float64), (n,)) for k in cls.parameters.names]))
        y = kernel(simulate_kernel)(cls.kind, theta, x, seeds, sch.slot, sch.low, sch.high, sch.blur, sch.context,
                            sch.condition, sch.modality, sch.trial, sch.starts,
                            np.ascontiguousarray(uniforms, dtype=np.float64))
        return Outcomes(action=y, reward=np.full(y.shape, np.nan), valid=np.ones(y.shape, dtype=bool))


def _agent(name: str, params: ParameterSet, doc: str) -> type[MagnitudeAgent]:
    return type(name.title().replace("-", "") + "Agent", (MagnitudeAgent,), {
        "name": name, "kind": KIND[name], "parameters": params, "__doc__": doc, "__module__": __name__})


AGENTS: dict[str, type[SyntheticAgent]] = {name: _agent(name, params, doc)
                                           for name, (params, doc) in OBSERVERS.items()}

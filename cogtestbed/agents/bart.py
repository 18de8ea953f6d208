"""Synthetic agents for BART: ``random`` (CogBench's 50/50 answer on every decision) and
``target`` (a target number of pumps per balloon type with logistic noise, see
:mod:`cogtestbed.inference.bart`).  One uniform per decision; the first decision of a balloon
draws the balloon's target from its uniform.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from cogtestbed.agents.base import KernelLapsingAgent, SyntheticAgent
from cogtestbed.environments.bart import EXPERIMENT, INFLATE, SKIP, BartDesign, BartEnv, BartSessions
from cogtestbed.environments.base import Outcomes
from cogtestbed.errors import InputError
from cogtestbed.inference.bart import TYPES, TargetModel, draw_target, simulate_bart_kernel
from cogtestbed.interpreted import kernel
from cogtestbed.lapse import LapseDraws
from cogtestbed.parameters import ParameterSet, per_subject


class _BartAgent(KernelLapsingAgent[BartDesign, BartSessions]):
    experiment: ClassVar[str] = EXPERIMENT
    #: P(inflate) on every decision, or −1 to follow the target rule.
    p_inflate: ClassVar[float] = -1.0

    def _reset_state(self) -> None:
        self.target = 0

    def mean_target(self, max_pumps: int) -> float:
        try:
            return self.params[f"target_{int(max_pumps)}"]
        except KeyError:
            raise InputError(f"no target parameter for balloons with max_pumps={max_pumps} "
                             f"(the target agent knows {TYPES})") from None

    def act(self, obs: Mapping[str, Any]) -> int:
        u = float(self.uniforms()[0])
        if self.p_inflate >= 0:
            return INFLATE if u < self.p_inflate else SKIP
        if int(obs["pumps"]) == 0:
            self.target = int(draw_target(self.mean_target(int(obs["max_pumps"])),
                                          self.params["noise"], u))
        return INFLATE if int(obs["pumps"]) < self.target else SKIP

    @classmethod
    def simulate_batch_lapsed(
        cls,
        design: BartDesign,
        sessions: BartSessions,
        params: Mapping[str, np.ndarray],
        uniforms: np.ndarray,
        lapse: LapseDraws,
    ) -> Outcomes:
        n = sessions.n_subjects
        targets = np.zeros((n, design.n_types))
        noise = np.zeros(n)
        if cls.p_inflate < 0:
            for m in set(int(x) for x in design.max_pumps):
                if f"target_{m}" not in params:
                    raise InputError(f"no target parameter for balloons with max_pumps={m}")
                targets = np.where(sessions.type_max == m, np.asarray(params[f"target_{m}"])[:, None], targets)
            noise = per_subject(params["noise"], n)
        actions, rewards, valid, played = kernel(simulate_bart_kernel)(
            sessions.type_max, sessions.sequence, sessions.break_point, np.ascontiguousarray(targets),
            noise, np.full(n, cls.p_inflate), np.ascontiguousarray(uniforms),
            BartEnv.max_steps(design), np.ascontiguousarray(lapse.kind), np.ascontiguousarray(lapse.u[..., 0]),
        )
        return Outcomes(action=actions, reward=rewards, valid=valid, played=played)


class RandomAgent(_BartAgent):
    """CogBench's random agent: option 1 or 2 with probability ½ (= inflate with ½)."""

    name: ClassVar[str] = "random"
    parameters: ClassVar[ParameterSet] = ParameterSet((), "random")
    p_inflate: ClassVar[float] = 0.5


class TargetAgent(_BartAgent):
    """Target pumps per balloon type (target_128, target_32, target_8) + logistic noise."""

    name: ClassVar[str] = "target"
    parameters: ClassVar[ParameterSet] = TargetModel.parameters


AGENTS: dict[str, type[SyntheticAgent]] = {a.name: a for a in (RandomAgent, TargetAgent)}

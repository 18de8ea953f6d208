"""What keeps ``cogtestbed plan`` fast without changing what it computes: the MLE start order
(vectorised, the same order as the per-axis reference), the probit-guided size ladder and the
early stop of a hopeless top-up."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from cogtestbed.inference.base import grid_neighbours
from cogtestbed.planning.kinds.power.power_sims import Estimate
from cogtestbed.planning.plan import Planner
from cogtestbed.planning.space import Axis, Point
from cogtestbed.registry import get_experiment


def reference_start_order(grid_nll: np.ndarray, points: int, ndim: int) -> np.ndarray:
    """The start order as first written: local minima along every axis (per-axis views), best first."""
    order = np.argsort(grid_nll, kind="stable")
    values = grid_nll.reshape((points,) * ndim)
    is_min = values <= np.inf
    for axis in range(ndim):
        v, m = np.moveaxis(values, axis, 0), np.moveaxis(is_min, axis, 0)
        m[1:] &= v[1:] <= v[:-1]
        m[:-1] &= v[:-1] <= v[1:]
    flat = is_min.reshape(-1)
    return np.concatenate([order[flat[order]], order[~flat[order]]])


@pytest.mark.parametrize(("points", "ndim"), [(9, 1), (7, 2), (9, 3), (5, 4)])
def test_start_order_equals_the_per_axis_reference(points: int, ndim: int) -> None:
    model: Any = get_experiment("instrumental-learning").model("rw-pm")
    probe = type("Probe", (), {"grid_points": points, "parameters": [None] * ndim})()
    rng = np.random.default_rng(points * 10 + ndim)
    for k in range(60):
        g = rng.normal(size=points ** ndim)
        if k % 3 == 0:
            g = np.round(g, 1)  # ties between neighbours
        if k % 4 == 0:
            g[rng.integers(0, g.size, 3)] = np.nan
        if k % 5 == 0:
            g[rng.integers(0, g.size, 2)] = np.inf
        got = type(model).start_order(probe, g)
        np.testing.assert_array_equal(got, reference_start_order(g, points, ndim))


def test_grid_neighbours_are_the_adjacent_pairs() -> None:
    node, neighbour = grid_neighbours(3, 2)
    pairs = set(zip(node.tolist(), neighbour.tolist(), strict=True))
    assert len(pairs) == len(node) == 2 * 2 * 2 * 3  # 2 directions x 2 axes x 2 gaps x 3 lines
    assert (4, 1) in pairs and (1, 4) in pairs and (4, 3) in pairs and (0, 4) not in pairs


class _Power:
    """Recorded looks of a planner (design → hits/sims), standing in for the simulations."""

    def __init__(self, looks: dict[Point, Estimate]) -> None:
        self.looks = looks

    @property
    def done(self) -> dict[Point, int]:
        return {p: e.sims for p, e in self.looks.items()}

    def estimate(self, point: Point) -> Estimate:
        return self.looks.get(point, Estimate(0, 0))


def _planner(looks: dict[Point, Estimate]) -> Planner:
    planner = Planner.__new__(Planner)
    planner.size, planner.others, planner.target = Axis("subjects", tuple(range(10, 201))), [], 0.8
    planner.power = _Power(looks)  # type: ignore[assignment]
    return planner


def test_the_size_ladder_follows_the_probit_curve_after_two_failures() -> None:
    # a t-test-shaped power curve: Φ(a + b√n) with power 0.8 at n = 30
    b = 0.55
    a = float(stats.norm.ppf(0.8)) - b * math.sqrt(30)
    power = {n: float(stats.norm.cdf(a + b * math.sqrt(n))) for n in (10, 20)}
    values = list(range(10, 201))
    one = _planner({Point(10, 1, None): Estimate(round(96 * power[10]), 96)})
    assert one.next_rung({}, values, 10) == 20  # one failed size: double
    two = _planner({Point(n, 1, None): Estimate(round(960 * power[n]), 960) for n in (10, 20)})
    nxt = two.next_rung({}, values, 20)
    assert 28 <= nxt <= 32  # where the fitted curve reaches 80 %, not the doubled 40
    flat = _planner({Point(10, 1, None): Estimate(0, 96), Point(20, 1, None): Estimate(3, 96)})
    assert flat.next_rung({}, values, 20) == 40  # hardly any detection yet: no extrapolation, double


def test_a_top_up_stops_once_the_design_is_clearly_below_the_target() -> None:
    planner = _planner({})
    assert planner.futile(Estimate(30, 48))  # 0.62: 3 SEs below 0.8
    assert not planner.futile(Estimate(37, 48))  # 0.77: within 2 SEs
    assert not planner.futile(Estimate(0, 0))


# ------------------------------------------------------------------ two-step pricing (issue 40)
#: ``Pricer.exact`` of two-step designs as printed by the dry run before its rendering was memoised
#: (main of 01:45 UTC, Nov 25; seed 7): (llms, days, runs, variant) -> calls, prompt tokens, completion
#: tokens, dollars, calls when every answer is invalid, max_cost_usd of one LLM.
TWOSTEP_PRICES = [
    (("openai:gpt-4o", "openai:gpt-4o"), 2, 1, "code", (8, 892, 64, 0.0028, 1, 0.00679)),
    (("openai:gpt-4o", "openai:gpt-4o"), 7, 3, "code", (84, 15736, 672, 0.046, 3, 0.111143)),
    (("openai:gpt-4o", "openai:gpt-4o"), 20, 5, "code", (400, 151328, 3200, 0.4104, 5, 1.00672)),
    (("openai:gpt-4o", "openai:gpt-4o"), 33, 4, "paper", (528, 301972, 4224, 0.7972, 4, 1.967853)),
    (("openai:gpt-4o", "openai:gpt-4o"), 20, 11, "code", (880, 332848, 7040, 0.9026, 11, 2.214363)),
    (("openai:gpt-4o-mini",), 7, 3, "code", (42, 7868, 336, 0.0014, 3, 0.006669)),
    (("openai:gpt-4o-mini",), 33, 4, "paper", (264, 150986, 2112, 0.0239, 4, 0.118072)),
]


def test_twostep_pricing_equals_the_dry_run_before_memoising() -> None:
    """The memoised two-step rendering prices every design as the dry run did before (calls, tokens,
    dollars), two LLMs and one, different days, run counts and prompt variants."""
    from cogtestbed.environments.twostep import TwoStepDesign
    from cogtestbed.planning.pricing import Pricer

    exp = get_experiment("two-step")
    pricers: dict[tuple[str, ...], Pricer] = {}
    for llms, days, runs, variant, want in TWOSTEP_PRICES:
        pricer = pricers.setdefault(llms, Pricer(exp, llms, seed=7))
        cost = pricer.exact(TwoStepDesign(n_days=days, prompt_variant=variant), runs)
        report = cost.per_llm[0]
        got = (cost.calls, cost.prompt_tokens, cost.completion_tokens, cost.dollars,
               report["calls_if_every_answer_is_invalid"], report["max_cost_usd"])
        assert got[:3] == want[:3] and got[4] == want[4], (days, runs, variant)
        assert got[3] == pytest.approx(want[3], abs=1e-9) and got[5] == pytest.approx(want[5], abs=1e-9)


def reference_base_text(history: list[str]) -> str:
    """Two-step's prompt text before the question as first written (re-rendered at every step)."""
    from cogtestbed.environments.twostep import Q_PREFIX, START_TEXT

    text = START_TEXT
    if history:
        text += "Your previous space travels went as follows:\n"
        n = len(history)
        for count, line in enumerate(history):
            ago = n - count
            text += f"- {ago}{' day' if ago == 1 else ' days'} ago, {line}"
    return text + f"\n{Q_PREFIX} Do you want to take the spaceship to planet X or planet Y?\n"


def test_twostep_memoised_text_equals_the_fresh_rendering_across_sessions() -> None:
    """Every step's memoised text equals a fresh rendering of the history, with invalid answers
    (no history line) and across a reset to a new session (the memo starts over)."""
    from cogtestbed.environments.base import NO_ACTION
    from cogtestbed.environments.twostep import TwoStepDesign, TwoStepEnv

    design = TwoStepDesign(n_days=12)
    env = TwoStepEnv(design)
    sessions = TwoStepEnv.sample_sessions(design, 2, np.random.default_rng(3))
    env.action_space.seed(5)
    rng = np.random.default_rng(4)
    checked = 0
    for i in range(2):
        env.reset(options={"session": sessions.subject(i)})
        done = False
        while not done:
            assert env._base_text() == reference_base_text(env._history)
            checked += 1
            action = NO_ACTION if rng.random() < 0.2 else env.action_space.sample()
            _, _, done, _, _ = env.step(action)
        assert len(env._history) > 0
    assert checked > 24

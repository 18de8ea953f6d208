"""BoundedBox draws what gymnasium's Box draws (same values, same stream), so a dry run's random actions and
the prompts they lead to are unchanged; the belief environment's action spaces use it."""

from __future__ import annotations

import copy

import numpy as np
from gymnasium import spaces

from cogtestbed.environments.bounded_box import BoundedBox


def test_bounded_box_samples_the_same_values_as_box() -> None:
    for (low, high), shape in zip(((0.0, 1.0), (-2.0, 3.5), (0.0, 1.0), (0.1, 0.7)), ((), (2,), (3,), (2, 3)),
                                  strict=True):
        fast, slow = BoundedBox(low, high, shape=shape), spaces.Box(low, high, shape=shape, dtype=np.float64)
        fast.seed(7), slow.seed(7)
        for _ in range(5):
            a, b = fast.sample(), slow.sample()
            assert a.shape == b.shape == shape and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        assert fast == slow


def test_belief_dict_action_space_samples_as_with_plain_boxes() -> None:
    from cogtestbed.environments.belief import BeliefCoherenceEnv, BeliefDesign

    env = BeliefCoherenceEnv(BeliefDesign(n_contexts=5, n_reps=1))
    assert isinstance(env.action_space, spaces.Dict)
    plain = spaces.Dict({name: spaces.Box(s.low, s.high, dtype=s.dtype) if isinstance(s, spaces.Box)
                         else copy.deepcopy(s) for name, s in env.action_space.spaces.items()})
    env.action_space.seed(11), plain.seed(11)
    for _ in range(4):
        a, b = env.action_space.sample(), plain.sample()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])

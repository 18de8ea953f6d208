"""What one path refuses, every path refuses (a review of issue 54's routing): a form offset that takes a
parameter out of its bounds, a sampling agent on generated answers, a parameter that is not a number —
never a table on the batch path and a refusal on the step path."""

from __future__ import annotations

import pytest

from cogtestbed import simulation
from cogtestbed.environments.forms import FormDesign, FormError, resolve_forms
from cogtestbed.errors import InputError
from cogtestbed.parameters import ParameterError
from cogtestbed.registry import get_experiment

METHODS = ("batch", "interpreted", "step")


@pytest.mark.parametrize("method", METHODS)
def test_a_form_offset_out_of_bounds_is_refused_on_every_path(method: str) -> None:
    """collider's noise_sd (no transform, bounds [0, 5]) shifted by Normal(0, 3) offsets goes negative for
    one of two forms at seed 1: refused in one line naming the value and the bounds."""
    exp = get_experiment("collider")
    forms = FormDesign(resolve_forms(exp.prompt_forms, "2"), {"noise_sd": 3.0})
    with pytest.raises(FormError, match=r"noise_sd to -0\.21.*outside its bounds \[0, 5\].*no transform"):
        simulation.simulate("collider", "cbn", 6, 1, method=method, forms=forms)
    small = FormDesign(resolve_forms(exp.prompt_forms, "2"), {"noise_sd": 0.1})
    table = simulation.simulate("collider", "cbn", 6, 1, method=method, forms=small)
    assert (table["param_noise_sd"] >= 0).all()


@pytest.mark.parametrize("method", METHODS)
def test_a_sampler_on_generated_answers_is_refused_on_every_path(method: str) -> None:
    exp = get_experiment("revealed-belief")
    design = exp.env_cls.design_cls(staa_mode="generated")
    with pytest.raises(InputError, match="answers by sampling a scored distribution"):
        simulation.simulate("revealed-belief", "dissonant-sampler", 1, 0, design=design, method=method)


def test_a_parameter_that_is_not_a_number_is_refused_in_one_line() -> None:
    with pytest.raises(ParameterError, match="alpha must be a number or an array of numbers, got 'x'"):
        simulation.simulate("instrumental-learning", "rw", 2, 0, params={"alpha": "x"})

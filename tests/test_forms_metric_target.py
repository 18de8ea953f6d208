"""A forms plan of a metric target is refused before anything is simulated, in one line that says why and
names the nearest plannable questions (it said "--forms needs --model and --effect", neither why nor what to do)."""

from __future__ import annotations

import pytest

from cogtestbed.errors import InputError


def test_forms_on_a_metric_comparison_says_why_and_the_nearest_plannable_question() -> None:
    from cogtestbed.api.plan import plan

    with pytest.raises(InputError) as info:
        plan("belief-coherence", metric="t1_cmi", compare=("leak:leak=0.02", "leak:leak=0.05"),
             llm=["openai:gpt-4o", "openai:gpt-4o-mini"], runs="2:20", forms="1,2,4", form_sd={"t1_cmi": 0.05})
    message = str(info.value)
    assert "\n" not in message
    assert "permutation of per-run estimates" in message  # why
    assert "the same `metric` t1_cmi without `forms` and `form_sd`" in message  # the nearest question
    assert "`model` (mnl, loss) and `effect` NAME=SIZE" in message

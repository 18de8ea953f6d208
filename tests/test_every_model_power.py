"""``plan`` runs for every model of every experiment (tiny sizes): population draws stay inside
every parameter's bounds, whatever its declared transform.

The default suite runs ``plan`` for one model per experiment; ``-m slow`` runs it for every model.
That ``power`` runs for every model is the conformance check ``power_study``.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from cogtestbed.cli import run_cli
from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.suite import power_effect, small_design
from cogtestbed.registry import experiment_names, get_experiment
from cogtestbed.studies.model_studies import scatter

MODELS = [(e, m) for e in experiment_names() for m in get_experiment(e).models]
#: One model per experiment; revealed belief's and two-step's plans take half a minute or more (two-step's small
#: design is refused by the design check and planned at the runs it names): slow only.
SLOW_PLANS = ("revealed-belief", "two-step")
FIRST_MODELS = [pytest.param(e, m, id=f"{e}:{m}", marks=[pytest.mark.slow] if e in SLOW_PLANS else [])
                for e in experiment_names() for m in list(get_experiment(e).models)[:1]]


def _tiny(experiment: str) -> list[str]:
    """``--design FIELD=VALUE`` of the conformance checks' small design (its trials field lowered)."""
    exp = get_experiment(experiment)
    if exp.trials_field is None:
        return []
    value = getattr(small_design(exp, CheckConfig()), exp.trials_field)
    return ["--design", f"{exp.trials_field}={max(1, int(value) // 2)}"]


def _effect(experiment: str, model: str) -> str:
    """A small shift of the model's first free parameter, inside its bounds."""
    p = next(iter(get_experiment(experiment).model(model).parameters))
    return f"{p.name}={power_effect(p):.6g}"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    code = run_cli([*args, "--json", "--workers", "1"])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    return json.loads(out.out.strip().splitlines()[-1])


def _plan(experiment: str, model: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Plan at the small design; where the design check refuses it, at the smallest design its refusal names
    (which must then plan: the suggestion is checked too), or at the default design where none is named."""
    args = ["plan", experiment, "--model", model, "--effect", _effect(experiment, model), "--subjects", "2,3",
            "--mc-se", "0.45", "--power", "0.01", "--llm", "openai:gpt-4o-mini", "--json", "--workers", "1"]
    code = run_cli([*args, *_tiny(experiment)])
    out = capsys.readouterr()
    if code == 2 and "does not identify" in out.err:
        named = re.search(r"\(--runs (\d+)\)", out.err)
        code = run_cli([*args, *_tiny(experiment), "--runs", named.group(1)] if named else args)
        out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    planned = json.loads(out.out.strip().splitlines()[-1])
    assert planned["chosen"]["subjects"] in (2, 3) and planned["power"]["sims"] >= 1


@pytest.mark.parametrize(("experiment", "model"), FIRST_MODELS)
def test_plan_runs_for_one_model_of_every_experiment(experiment: str, model: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    _plan(experiment, model, capsys)


@pytest.mark.slow
@pytest.mark.parametrize(("experiment", "model"), MODELS, ids=[f"{e}:{m}" for e, m in MODELS])
def test_plan_runs_for_every_model(experiment: str, model: str, capsys: pytest.CaptureFixture[str]) -> None:
    _plan(experiment, model, capsys)


def test_scatter_keeps_every_draw_inside_the_bounds() -> None:
    from cogtestbed.inference.magnitude_observers import MU_P
    from cogtestbed.parameters import Parameter

    z = np.random.default_rng(0).normal(size=10_000) * 5
    for p, median in ((MU_P, 0.5), (MU_P, 1.9), (Parameter("s", 0.0, 5.0, 1.0, transform="log"), 4.0),
                      (Parameter("c", -math.inf, 1.0, 0.0), 0.5), (Parameter("x", 0.0, math.inf, 1.0), 1.0)):
        x = scatter(p, median, 0.5, z)
        assert np.all((x >= p.lower) & (x <= p.upper)), p.name
    inside = scatter(MU_P, 0.5, 0.1, z[:100] / 5)
    assert inside == pytest.approx(0.5 + 0.1 * z[:100] / 5)  # a draw inside the bounds is the normal draw

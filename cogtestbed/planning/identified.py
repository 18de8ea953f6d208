"""A plan's subjects checked against what their design identifies, before anything is simulated.

A model target (``--model M --effect ...``, ``--precision``) fits each simulated subject; where a subject of the
plan's largest ``runs`` does not identify a parameter of the model, no size of the search answers the question,
and the plan is refused in one line naming the parameter and the smallest design that identifies it.  At the
experiment's default design the answer is read from the shipped table
(:mod:`cogtestbed.identified_sessions`: well under a second, before the experiment is imported); a request that
sets the design (``design``, ``trials``) is checked on the loaded experiment
(:func:`cogtestbed.identifiability.refuse_unidentified`, a second or two).  Plans on people's own data
(``human``) keep the people's runs and are not checked here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cogtestbed.errors import InputError

#: The option that sets a plan's sessions a subject, as the refusal names it.
RUNS_FLAG = "--runs"


def _largest_runs(runs: Any) -> int:
    from cogtestbed.planning.sizes import Sizes

    return 1 if runs is None else Sizes.of(runs, "runs").hi


def check_identified(experiment: str, model: str | None, req: Any) -> None:
    """Refuse from the shipped table a model target at the default design whose largest ``runs`` identify not
    every parameter of the model (:mod:`cogtestbed.identified_sessions`)."""
    from cogtestbed.identified_sessions import refusal_line

    sz = req.sizes
    if model is None or req.people.human is not None or sz.design or sz.trials is not None:
        return
    line = refusal_line(experiment, model, _largest_runs(sz.runs), RUNS_FLAG, "run(s)")
    if line is not None:
        raise InputError(line)


def check_identified_design(exp: Any, model: str | None, fixed: Mapping[str, Any], trials: Any, req: Any) -> None:
    """The same refusal for a request that sets the design (``design`` fields or ``trials``), on the loaded
    experiment at the largest trials searched."""
    if model is None or req.people.human is not None or (not fixed and trials is None):
        return
    from cogtestbed.identifiability import refuse_unidentified
    from cogtestbed.studies.study_data import design_for_trials

    refuse_unidentified(exp, model, design_for_trials(exp, None if trials is None else trials.hi, fixed),
                        _largest_runs(req.sizes.runs), flag=RUNS_FLAG)

"""``cogtestbed plan``: the cheapest design answering one question, priced in calls, tokens and dollars (a thin
layer over :func:`cogtestbed.api.plan.plan`: it parses the options, calls it and prints the plan's lines).

The question is a registered plan kind (:mod:`cogtestbed.planning.plan_kinds`; ``--question`` names
one, else the options choose it): a model parameter or contrast (``--model M --effect NAME=SIZE``), a metric
difference between two settings (``--metric M --compare AGENT:p=v AGENT:p=v``), a statistical test the
metrics function reports (``--test KEY --agent AGENT:p=v``), a precision target (``--precision``), a
sequential design (``--looks``), the hierarchical fit (``--fit hierarchical``), adaptive sessions
(``--adaptive``) or prompt forms (``--forms``).  ``-o DIR`` writes the kind's files (a power plan's
``plan.json``, executed by ``cogtestbed run --plan DIR/plan.json``, ``frontier.png`` and ``report.html``).
"""

from __future__ import annotations

from dataclasses import dataclass

from cogtestbed.cli.app import app, console, console_err, print_json
from cogtestbed.cli.options import request_command
from cogtestbed.option_groups import JsonOutput, Output, Overwrite
from cogtestbed.planning.plan_options import PlanRequest
from cogtestbed.request import variant


@dataclass(frozen=True)
class PlanOutput(Overwrite, JsonOutput, variant(Output, present={"output": {"api": False}}, helps={  # type: ignore[misc]
        "output": "Write the plan's files (plan.json and report.html, or precision.json, ...) here."})):
    """Where and how ``cogtestbed plan`` puts its plan (the command line's own options)."""


@request_command(app, PlanRequest, PlanOutput)
def plan(req: PlanRequest, out: PlanOutput) -> None:
    """Plan a study: the cheapest design that answers the question, in calls, tokens and dollars."""
    from cogtestbed.api.plan import plan as make_plan
    from cogtestbed.outputs import output_dir
    from cogtestbed.request import sub_objects

    # claimed before the simulations (a refused folder costs nothing; a second plan into the same
    # folder at once is refused) and held until the plan is written; progress goes to stderr even
    # with --json (stdout carries only the JSON)
    with output_dir(out.output, out.force):
        given = sub_objects(req)
        result = make_plan(given.pop("experiment"), **given, say=_say)
        payload = dict(result.payload)
        if out.output is not None:
            files = result.save(out.output, force=out.force)
            payload["files"] = {k: str(v) for k, v in files.items()}
        if out.as_json:
            print_json(payload)
            return
        for line in result.lines():
            console.print(line, highlight=False, soft_wrap=True, markup=False)
        if out.output is not None:
            console_err.print(f"wrote {', '.join(str(p) for p in payload['files'].values())}", highlight=False,
                              markup=False)


def _say(line: str) -> None:
    """A progress line of the plan on stderr."""
    console_err.print(line, highlight=False, markup=False, soft_wrap=True)


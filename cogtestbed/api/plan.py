"""Plan an LLM study before spending: :func:`plan`, the cheapest design reaching a target power
(or precision), priced in calls, tokens and dollars (``cogtestbed plan`` is a thin layer over it).

The target takes the three forms of :func:`cogtestbed.power`: a model parameter or contrast
(``model="rw-pm", effect={"optimism_bias": 0.2}``), a metric difference between two settings
(``metric=..., compare=("AGENT:p=v", "AGENT:p=v")``, e.g. two LLMs' model-basedness) and a
statistical test the metrics function reports (``test=KEY, agent="AGENT:p=v"``).  The returned
:class:`Plan` holds ``plan.json``'s payload (:meth:`Plan.to_dict`; :meth:`Plan.save` writes
``plan.json``, ``frontier.png`` and ``report.html``, executed by ``cogtestbed run --plan``).

A thin face: the request is built here and dispatched through the registry of plan kinds
(:mod:`cogtestbed.planning.plan_kinds`), which checks and plans it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogtestbed.api.checks import public
from cogtestbed.errors import InputError
from cogtestbed.planning.plan_options import (
    People,
    PlanAdaptive,
    PlanFit,
    PlanForms,
    PlanRequest,
    PlanSequential,
    PlanSizes,
    PlanSubjects,
    PlanTarget,
    Pricing,
)
from cogtestbed.request import options_doc, request_block

if TYPE_CHECKING:
    import pandas as pd

    from cogtestbed.api.figures import Figures

#: What a plan says while it works (one line at a time), or None for silence.
Say = Callable[[str], None] | None


@dataclass
class Plan:
    """A study plan: ``kind`` names the registered plan kind that made it
    (:mod:`~cogtestbed.planning.plan_kinds`: ``power``, ``sequential``, ``hierarchical``,
    ``precision``, ``adaptive``, ``forms`` or one registered from outside), ``payload`` what its file holds.

    Parameters
    ----------
    payload : dict
        What the plan file holds (``chosen``, its request, ...).
    size_name : str
        The axis sized (``subjects``).
    kind : str
        The registered plan kind that made it.
    files : dict
        The files written by ``save``.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> plan = ct.Plan({"chosen": {"subjects": 40}}, kind="power")
    >>> plan.kind, plan.chosen
    ('power', {'subjects': 40})
    """

    payload: dict[str, Any]
    size_name: str = "subjects"
    kind: str = "power"
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def chosen(self) -> dict[str, Any]:
        """The chosen design: its sizes, power (or assurance), calls, tokens and dollars."""
        return dict(self.payload["chosen"])

    @property
    def frontier(self) -> pd.DataFrame:
        """The cost-power frontier, one row per design (empty for a kind without one)."""
        import pandas as pd

        return pd.DataFrame(self.payload.get("frontier", []))

    @property
    def sequential(self) -> dict[str, Any] | None:
        """The group-sequential design (``looks=K``), or None for a fixed design."""
        return self.payload.get("sequential")

    def to_dict(self) -> dict[str, Any]:
        """The plan as its file holds it (``plan.json``, ``precision.json``, ...)."""
        import copy

        return copy.deepcopy(self.payload)

    def lines(self) -> list[str]:
        """The plan as text, as ``cogtestbed plan`` prints it (its kind's
        :attr:`~cogtestbed.planning.kinds.PlanKind.lines`)."""
        from cogtestbed.planning.plan_kinds import get_plan_kind

        return get_plan_kind(self.kind).lines(self.payload, self.size_name)

    def save(self, directory: str | os.PathLike[str], force: bool = False) -> dict[str, Path]:
        """Write the plan's files into ``directory`` through its kind (a power plan: ``plan.json``,
        ``frontier.png`` and ``report.html``; a precision plan ``precision.json``; ...); returns the files.  The
        folder is claimed first (:func:`~cogtestbed.outputs.output_dir`): a non-empty one is refused unless
        ``force``, and of two commands saving there at once one is refused."""
        from cogtestbed.outputs import output_dir
        from cogtestbed.planning.plan_kinds import get_plan_kind

        with output_dir(Path(directory), force):
            self.files = get_plan_kind(self.kind).save(self.payload, Path(directory))
        return self.files

    def plot(self, directory: str | os.PathLike[str] | None = None) -> Figures:
        """The cost-power frontier plot (``frontier.png``, in ``directory`` or a temporary one)."""
        import tempfile

        from cogtestbed.api.figures import Figures
        from cogtestbed.planning.plan_kinds import get_plan_kind
        from cogtestbed.planning.plan_report import plot_frontier

        if not get_plan_kind(self.kind).frontier:
            raise InputError(f"a {self.kind} plan has no cost-power frontier to plot")
        out = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="cogtestbed-plan-"))
        return Figures([plot_frontier(self.payload, out)])


@public(paths=("pilot", "prices"))
def plan(experiment: str | Any, *, target: PlanTarget | None = None, people: People | None = None,
         sizes: PlanSizes | None = None, simulated: PlanSubjects | None = None, llms: Pricing | None = None,
         sequential: PlanSequential | None = None, analysis: PlanFit | None = None,
         prompt_forms: PlanForms | None = None, adaptive_sessions: PlanAdaptive | None = None, mc_se: float = 0.03,
         seed: int = 0, workers: int | None = None, say: Say = None, **options: Any) -> Plan:
    """Plan a study (``cogtestbed plan``): the cheapest design that answers one question, priced in calls,
    tokens and dollars.  The request comes in typed groups (:class:`~cogtestbed.planning.plan_options.
    PlanTarget`, :class:`~cogtestbed.planning.plan_options.People`, :class:`~cogtestbed.planning.
    plan_options.PlanSizes`, :class:`~cogtestbed.planning.plan_options.Pricing`, ...; each left out takes its
    defaults), or, as a shortcut building the same request, as flat keywords (``llm=``, ``model=``,
    ``effect=``, ...: every option listed below); a keyword whose option lies in a group also given is refused.

    The question is a registered plan kind (:mod:`cogtestbed.planning.plan_kinds`): ``question``
    names one, else the first that claims the request plans it: ``forms`` (``forms``), ``adaptive``
    (``adaptive`` with ``precision``), ``precision`` (``precision={PARAM: HALFWIDTH}``: the cheapest design
    whose one-subject MLE lies within the half-width with probability ``assurance``), ``sequential``
    (``looks=K`` or ``"auto"``), ``hierarchical`` (``fit="hierarchical"``) and ``power`` (the cheapest design
    reaching the target ``power`` at ``level``).  The kind checks the request before anything is simulated
    (an option it does not read is refused in one line naming it), runs it, and :meth:`Plan.save` writes
    through it.

    A power target takes the three forms of :func:`cogtestbed.power`: a model parameter or contrast
    (``model="rw-pm", effect={"optimism_bias": 0.2}``; with two ``llm`` the difference between the two LLMs;
    with one ``llm`` and ``human`` (a trial table of people, fitted once per subject,
    :func:`~cogtestbed.studies.model_studies.reference_sample`) or ``population`` (``"human:NAME"``
    or a population file) the LLM against those people), a metric difference between two settings
    (``metric=..., compare=("AGENT:p=v", "AGENT:p=v")``) and a statistical test the metrics function reports
    (``test=KEY, agent="AGENT:p=v"``).  Two groups are tested by a Welch t-test of the per-subject MLE
    (log scale for a log-scaled parameter), or with ``fit="hierarchical"`` by the posterior of the
    difference of the two groups' population values.

    Sizes: ``subjects`` / ``runs`` / ``trials`` as ``(lo, hi)``, a list, one number or the command line's
    text (``"10:200"``); ``design`` fixes fields (a list ``FIELD=a,b,c`` on an integer field is searched).
    ``looks="auto"`` searches the looks (2–10), the spending function and futility on/off
    (:mod:`cogtestbed.planning.kinds.sequential.seqauto`); futility is non-binding unless ``binding_futility``.
    A reasoning model is priced with ``reasoning_effort`` / ``thinking_budget`` as run and its
    completion tokens per call from ``pilot`` or ``assume_reasoning_tokens`` (``N`` or ``LOW:HIGH``).
    ``adaptive`` (parameter names) with ``precision={PARAM: HALFWIDTH}``: the trials per session that
    adaptive sessions and fixed sessions of the same design space need, each priced by ``llm``'s dry run.
    ``mix=True`` with ``estimand``, ``predictor``, ``human`` and ``precision={ESTIMAND: HALFWIDTH}`` (``fee``: $10): the
    cheapest mix of people and a predictor's units for the population mean (:mod:`cogtestbed.planning.kinds.mix.mix`;
    the group ``mixed=PlanMix(...)`` as a keyword).
    ``say`` receives progress lines.  The same arguments and seed give the same plan as the command line.

    Returns
    -------
    Plan
        The plan of the kind that answers the request (``.kind``, ``.chosen``, ``.lines()``, ``.save()``).

    Examples
    --------
    A plan simulates studies (seconds to minutes); every option is checked before that:

    >>> import cogtestbed as ct
    >>> ct.plan("instrumental-learning", question="nope")
    Traceback (most recent call last):
    ...
    cogtestbed.errors.InputError: `question` 'nope' is no plan kind: choose one of forms, adaptive, ...
    """
    from cogtestbed.api.core import get_experiment, read_table
    from cogtestbed.planning.kinds import PlanContext
    from cogtestbed.planning.plan_kinds import (
        check_before_import,
        choose_kind,
        kind_options,
        plan_request,
        with_kind_options,
    )
    from cogtestbed.request import api_leaves, build_grouped

    mixed = options.pop("mixed", None)  # the --mix group: a keyword of its own past the signature's 15
    own = kind_options(options)  # options a registered kind declares for itself (PlanKind.options)
    known = {leaf.name for leaf in api_leaves(PlanRequest)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InputError(f"plan(): got an unexpected keyword argument {unknown[0]!r}")
    groups = {"target": target, "people": people,
              "sizes": sizes, "simulated": simulated, "llms": llms, "sequential": sequential,
              "analysis": analysis, "prompt_forms": prompt_forms, "adaptive_sessions": adaptive_sessions,
              "mixed": mixed}
    req = build_grouped(PlanRequest, groups, {**options, "experiment": experiment, "mc_se": mc_se, "seed": seed,
                                              "workers": workers})
    check_request_values("plan", req, paths=("pilot", "prices", "human"))
    ctx = with_kind_options(choose_kind(req), PlanContext(read_table, say=say, options=own))
    check_before_import(experiment, req)  # a refusal in well under a second, before the experiment is imported
    exp = get_experiment(experiment)
    kind, planned = plan_request(exp, req, ctx)
    return Plan({**planned.payload, "request": request_block(req)}, planned.size_name, kind=kind.name)


inspect.unwrap(plan).__request__ = plan.__request__ = PlanRequest  # type: ignore[attr-defined]
plan.__doc__ = options_doc(PlanRequest, doc=plan.__doc__ or "")


def check_request_values(function: str, req: Any, paths: tuple[str, ...] = ()) -> None:
    """Every option of the request ``req`` checked at the door as a keyword of ``function`` is
    (:func:`~cogtestbed.api.checks.check_argument`: its type, finite numbers, its range; ``paths``: files that
    must exist)."""
    from cogtestbed.api.checks import Range, check_argument, check_path
    from cogtestbed.request import api_leaves, value

    for leaf in api_leaves(type(req)):
        given = value(req, leaf)
        if given is leaf.default:
            continue
        declared = None if leaf.opt.min is None and leaf.opt.max is None else Range(leaf.opt.min, leaf.opt.max)
        check_argument(function, leaf.name, given, leaf.hint, declared)
        if leaf.name in paths:
            check_path(function, leaf.name, given)

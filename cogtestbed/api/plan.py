"""Plan an LLM study before spending: :func:`plan`, the cheapest design reaching a target power
(or precision), priced in calls, tokens and dollars (``cogtestbed plan`` is a thin layer over it).

The target takes the three forms of :func:`cogtestbed.power`: a model parameter or contrast
(``model="rw-pm", effect={"optimism_bias": 0.2}``), a metric difference between two settings
(``metric=..., compare=("AGENT:p=v", "AGENT:p=v")``, e.g. two LLMs' model-basedness) and a
statistical test the metrics function reports (``test=KEY, agent="AGENT:p=v"``).  The returned
:class:`Plan` holds ``plan.json``'s payload (:meth:`Plan.to_dict`; :meth:`Plan.save` writes
``plan.json``, ``frontier.png`` and ``report.html``, executed by ``cogtestbed run --plan``).

A thin face: the options are read, checked and planned in the planning layer
(:mod:`cogtestbed.validation.design.request`; ``adaptive``: :mod:`cogtestbed.validation.design.adaptive_plan`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogtestbed.api.checks import public
from cogtestbed.errors import InputError
from cogtestbed.request import build, derive_api, keyword, request_block
from cogtestbed.validation.design.plan_options import PlanRequest

if TYPE_CHECKING:
    import pandas as pd

    from cogtestbed.api.figures import Figures

#: What a plan says while it works (one line at a time), or None for silence.
Say = Callable[[str], None] | None


@dataclass
class Plan:
    """A study plan: ``kind`` ``power`` (the payload of ``plan.json``) or ``precision``
    (``precision.json``'s)."""

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
        """The cost-power frontier, one row per design (empty for a precision plan)."""
        import pandas as pd

        return pd.DataFrame(self.payload.get("frontier", []))

    @property
    def sequential(self) -> dict[str, Any] | None:
        """The group-sequential design (``looks=K``), or None for a fixed design."""
        return self.payload.get("sequential")

    def to_dict(self) -> dict[str, Any]:
        """The plan as ``plan.json`` holds it (``precision.json`` for a precision plan)."""
        import copy

        return copy.deepcopy(self.payload)

    def save(self, directory: str | os.PathLike[str], force: bool = False) -> dict[str, Path]:
        """Write ``plan.json``, ``frontier.png`` and ``report.html`` (a precision plan:
        ``precision.json``) into ``directory``; returns the files.  The folder is claimed first
        (:func:`~cogtestbed.outputs.output_dir`): a non-empty one is refused unless ``force``, and
        of two commands saving there at once one is refused."""
        from cogtestbed.outputs import output_dir

        with output_dir(Path(directory), force):
            self.files = self._write(Path(directory))
        return self.files

    def _write(self, out: Path) -> dict[str, Path]:
        if self.kind in ("precision", "adaptive"):
            import json

            from cogtestbed.outputs import atomic_write_bytes

            dest = out / f"{self.kind}.json"
            atomic_write_bytes(dest, lambda tmp: tmp.write_text(json.dumps(self.payload, indent=1, default=str)))
            return {self.kind: dest}
        from cogtestbed.validation.design.plan_report import write_plan

        return write_plan(self.payload, out)

    def plot(self, directory: str | os.PathLike[str] | None = None) -> Figures:
        """The cost-power frontier plot (``frontier.png``, in ``directory`` or a temporary one)."""
        import tempfile

        from cogtestbed.api.figures import Figures
        from cogtestbed.validation.design.plan_report import plot_frontier

        if self.kind in ("precision", "adaptive"):
            raise InputError(f"a{'n' if self.kind == 'adaptive' else ''} {self.kind} plan has no cost-power "
                             "frontier to plot")
        out = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="cogtestbed-plan-"))
        return Figures([plot_frontier(self.payload, out)])


@public(paths=('pilot', 'prices'))
@derive_api(PlanRequest, after=(keyword("say", None, Say),))
def plan(experiment: str | Any, **options: Any) -> Plan:
    """Plan a study (``cogtestbed plan``): the cheapest design that reaches the target power
    (``power``) at level ``level``, priced by ``llm`` (``BACKEND:MODEL``; two for a metric
    difference between two LLMs), or with ``precision={PARAM: HALFWIDTH}`` the cheapest design
    whose one-subject MLE lies within the half-width with probability ``assurance``.

    A model parameter between two groups: two ``llm`` with ``model`` and ``effect`` plan the
    difference of that parameter between the two LLMs (the second's population median moved by
    the effect; each LLM plays ``subjects`` × ``runs`` sessions, priced by its own dry run, as the
    metric comparison prices two LLMs); one ``llm`` with ``human`` (a trial table of the
    experiment, or its path: any sample of people, fitted once by the per-subject MLE,
    :func:`~cogtestbed.validation.studies.model_studies.reference_sample`) plans the LLM against
    that sample (its fitted medians the LLM's base before the effect).  ``population`` (``"human:NAME"``
    or a population file, issue 52: the posterior of a hierarchical fit of people) draws the simulated
    subjects from it (one posterior draw per study, its spread and uncertainty included); with one
    ``llm`` the first group is as many people as it was fitted to (their number fixed), drawn afresh
    from it in every simulated study at their own trial count
    (:func:`~cogtestbed.validation.studies.model_studies.people_design`), so the plan prices the
    LLM's sample against theirs.  Tested by a Welch t-test of
    the two groups' per-subject MLE (log scale for a log-scaled parameter), or with
    ``fit="hierarchical"`` by the posterior of the difference of the two groups' population values.

    Sizes: ``subjects`` / ``runs`` / ``trials`` as ``(lo, hi)``, a list, or the command line's
    text (``"10:200"``); ``design`` fixes fields (a list ``FIELD=a,b,c`` on an integer field is
    searched).  ``looks=K`` adds a group-sequential design; ``looks="auto"`` searches the looks
    (2–10), the spending function and futility on/off for the cheapest expected cost meeting α and
    the power (:mod:`cogtestbed.validation.design.seqauto`).  Futility is non-binding (its stops are
    ignored in the type-I error) unless ``binding_futility``.  ``fit="hierarchical"`` searches the
    size with the hierarchical fit from the per-subject MLE's choice, ``fit_sims`` fresh studies per
    size tried, and plans its choice (:mod:`cogtestbed.validation.design.fitcheck`).  A reasoning model
    (issue 49) is priced with ``reasoning_effort`` / ``thinking_budget`` as run and its completion tokens per
    call from ``pilot`` or ``assume_reasoning_tokens`` (``N`` or ``LOW:HIGH``); without either it is refused.
    ``adaptive`` (parameter names, issue 53) with ``precision={PARAM: HALFWIDTH}``: the trials per session
    that adaptive sessions on those parameters and fixed sessions of the same design space need for
    P(|posterior mean − truth| ≤ HALFWIDTH) ≥ ``assurance`` (unconstrained scale, subjects drawn from the
    prior, ``adaptive_sims`` of them, at most the top of ``trials`` trials, default 60), each priced by
    ``llm``'s dry run for ``subjects`` sessions (:func:`_plan_adaptive`).
    ``say`` receives progress lines.
    The same arguments and seed give the same plan as the command line.
    """
    from cogtestbed.api.core import get_experiment, read_table
    from cogtestbed.validation.design.request import run_plan

    req = build(PlanRequest, {**options, "experiment": experiment})
    say = options.get("say")
    exp = get_experiment(experiment)
    ad, tg = req.adaptive_sessions, req.target
    if ad.adaptive:
        payload, size_name, kind = _plan_adaptive(exp, ad.adaptive, tg.precision, tg.assurance, req.llms.llm,
                                                  req.sizes.subjects, req.sizes.trials, ad.adaptive_sims, req.seed,
                                                  req.llms.prices, req.llms.allow_unpriced, say)
    else:
        payload, size_name, kind = run_plan(exp, req, read_table, say)
    return Plan({**payload, "request": request_block(req)}, size_name, kind=kind)


def _plan_adaptive(exp: Any, adaptive: str | Sequence[str], precision: Mapping[str, float] | str | None,
                   assurance: float, llm: str | Sequence[str] | None, subjects: Any, trials: Any, sims: int, seed: int,
                   prices: str | os.PathLike[str] | None, allow_unpriced: bool,
                   say: Say) -> tuple[dict[str, Any], str, str]:
    """``plan --adaptive`` (:func:`cogtestbed.validation.design.adaptive_plan.plan_adaptive`), each arm's
    trials per session priced by ``llm``'s dry run.  Power targets are refused in one line."""
    from cogtestbed.validation.design.adaptive_plan import adaptive_target, plan_adaptive
    from cogtestbed.validation.studies.options import one_assignment, size_text

    precision_text = one_assignment(precision)
    trials_text = str(trials) if isinstance(trials, int) else size_text(trials)
    subjects_text = str(subjects) if isinstance(subjects, int) else size_text(subjects)
    target = adaptive_target(exp, precision_text, assurance, trials_text, subjects_text, sims)
    llms = [llm] if isinstance(llm, str) else list(llm or [])
    price = _dry_run_price(exp, llms[0], target.sessions, seed, prices, allow_unpriced) if llms else None
    return plan_adaptive(exp, adaptive, target, sims, seed, llms[0] if llms else None, price, say), "trials", "adaptive"


def _dry_run_price(exp: Any, llm: str, sessions: int, seed: int, prices: str | os.PathLike[str] | None,
                   allow_unpriced: bool) -> Callable[[int, Sequence[str]], tuple[int, float | None]]:
    """``price(trials, targets)``: the calls and cost of ``llm``'s dry run of ``sessions`` adaptive sessions
    (of the design the comparison simulates: the spec's ``AdaptiveDecl.study_design``)."""
    import tempfile

    from cogtestbed.api.run import LLMRun, estimate_run

    def price(trials: int, targets: Sequence[str]) -> tuple[int, float | None]:
        with tempfile.TemporaryDirectory() as tmp:
            est = estimate_run(LLMRun(experiment=exp.name, llm=llm, output=Path(tmp) / "dry", subjects=sessions,
                                          seed=seed, adaptive=",".join(targets), trials=trials,
                                          design_fields=dict(getattr(exp.adaptive, "study_design", ())),
                                          prices=None if prices is None else Path(prices),
                                          allow_unpriced=allow_unpriced))
        return est["calls"], est.get("estimated_cost_usd")

    return price

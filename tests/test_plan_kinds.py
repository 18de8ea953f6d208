"""One planner (issue 67): every plan question is a registered plan kind, dispatched through one registry by
``ct.plan``, ``Plan.save`` and the command line (never an if-chain on kinds); the request travels typed; every
refusal reachable from the request alone comes in one line before anything is simulated."""

from __future__ import annotations

import ast
import inspect
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import cogtestbed as ct
from cogtestbed.cli import run_cli
from cogtestbed.planning.kinds import PlanContext, PlanKind, Planned
from cogtestbed.planning.plan_kinds import (
    get_plan_kind,
    plan_kind_names,
    register_plan_kind,
    unregister_plan_kind,
)
from cogtestbed.planning.sizes import MAX_PLANNED_SIZE, Effect, Sizes

ROOT = Path(__file__).resolve().parents[1] / "cogtestbed"
#: The modules that dispatch a plan: none branches on a kind.
DISPATCH = ("api/plan.py", "api/form_plan.py", "cli/plan.py", "planning/plan_kinds.py",
            "planning/kinds/__init__.py")
#: The options whose presence picks a kind: only a kind's ``claims`` reads them to choose.
CHOOSING = {"forms", "adaptive", "precision", "looks", "fit", "question"}
#: The modules a plan's request travels through after the edge: no typed value becomes text again there.
TYPED = ("api/plan.py", "planning/plan_kinds.py", "planning/request.py",
         "planning/kinds/adaptive/adaptive_plan.py", "planning/kinds/forms/forms_kind.py")


def _tree(rel: str) -> ast.Module:
    return ast.parse((ROOT / rel).read_text(encoding="utf-8"))


def test_the_package_registers_one_kind_per_question() -> None:
    assert plan_kind_names()[:6] == ["forms", "adaptive", "precision", "sequential", "hierarchical", "power"]
    assert all(get_plan_kind(n).question for n in plan_kind_names())
    assert len(inspect.signature(ct.plan).parameters) <= 15


@pytest.mark.parametrize("rel", DISPATCH)
def test_no_dispatch_module_branches_on_a_kind(rel: str) -> None:
    """No comparison with a kind's name and no ``if`` on an option that picks a kind: the registry chooses
    (:func:`~cogtestbed.planning.plan_kinds.choose_kind`)."""
    names = set(plan_kind_names())
    tree = _tree(rel)
    declared = {id(n) for k in ast.walk(tree) if isinstance(k, ast.keyword) and k.arg == "claims"
                for n in ast.walk(k.value)}  # a kind's own claims declare which request it answers
    for node in ast.walk(tree):
        if id(node) in declared:
            continue
        if isinstance(node, ast.Compare):
            strings = {o.value for o in (node.left, *node.comparators) if isinstance(o, ast.Constant)}
            tuples = {e.value for o in node.comparators if isinstance(o, (ast.Tuple, ast.Set, ast.List))
                      for e in o.elts if isinstance(e, ast.Constant)}
            assert not (strings | tuples) & names, f"{rel}:{node.lineno} compares with a kind: {ast.unparse(node)}"
        if isinstance(node, (ast.If, ast.IfExp)):
            read = {n.attr for n in ast.walk(node.test) if isinstance(n, ast.Attribute)}
            assert not read & CHOOSING, f"{rel}:{node.lineno} branches on {read & CHOOSING}: {ast.unparse(node.test)}"


@pytest.mark.parametrize("rel", TYPED)
def test_no_typed_value_is_rendered_to_text_again(rel: str) -> None:
    """The effect and the sizes are parsed once (:class:`Effect`, :class:`Sizes`); nothing after the edge
    turns them back into ``"name=size"`` or ``"lo:hi"`` text to parse them a second time."""
    called = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
              for n in ast.walk(_tree(rel)) if isinstance(n, ast.Call)}
    assert not called & {"size_text", "one_assignment", "as_text"}, (rel, called & {"size_text", "one_assignment"})
    joined = [ast.unparse(n) for n in ast.walk(_tree(rel)) if isinstance(n, ast.Call)
              and ast.unparse(n.func).endswith(".join") and "str(" in ast.unparse(n)]
    assert not [j for j in joined if "swept" in j or "trials" in j or "subjects" in j], joined


def test_typed_values_parse_once_and_never_list_a_range() -> None:
    assert Effect.of({"optimism_bias": 0.2}, "effect") == Effect.of("optimism_bias=0.2", "effect") == \
        Effect("optimism_bias", 0.2)
    assert Sizes.of("10:200", "subjects") == Sizes.of((10, 200), "subjects") == Sizes.of(range(10, 201), "subjects")
    assert Sizes.of([96, 48], "trials").values() == (48, 96) and isinstance(Sizes.of((10, 200), "x").values(), range)
    with pytest.raises(ct.InputError, match="`effect` takes one NAME=SIZE, got 2"):
        Effect.of({"a": 1, "b": 2}, "effect")
    for text in ("10:300000000", "10:99999999999", "0:5", "abc"):
        with pytest.raises(ct.InputError, match="`runs`"):
            Sizes.of(text, "runs")
    assert Sizes.of(f"1:{MAX_PLANNED_SIZE}", "subjects").top == MAX_PLANNED_SIZE


# ----------------------------------------------------------------------------- a kind from outside the package
def _toy_run(exp: Any, req: Any, ctx: PlanContext) -> Planned:
    if ctx.say is not None:
        ctx.say("toy: thinking")
    return Planned({"chosen": {"answer": 42, "model": req.target.model, "experiment": exp.name}}, "subjects")


TOY = PlanKind("toy", "the answer to everything (a test's kind)", _toy_run,
               claims=lambda req: req.target.metric == "toy-metric", accepts=frozenset({"model", "metric"}), order=5,
               lines=lambda payload, size: [f"toy: {payload['chosen']['answer']} for {payload['chosen']['model']}"])


@pytest.fixture
def toy() -> Any:
    register_plan_kind(TOY)
    try:
        yield TOY
    finally:
        unregister_plan_kind("toy")


def test_a_kind_registered_from_outside_plans_saves_and_prints(toy: PlanKind, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert register_plan_kind(TOY) is TOY and "toy" in plan_kind_names()  # the same again: a no-op
    with pytest.raises(ct.InputError, match="already registered"):
        register_plan_kind(PlanKind("toy", "another", _toy_run))
    planned = ct.plan("instrumental-learning", question="toy", model="rw-pm")
    assert planned.kind == "toy" and planned.chosen == {"answer": 42, "model": "rw-pm",
                                                         "experiment": "instrumental-learning"}
    assert planned.lines() == ["toy: 42 for rw-pm"] and planned.payload["request"]["target"]["question"] == "toy"
    files = planned.save(tmp_path / "api")
    assert json.loads(files["toy"].read_text())["chosen"]["answer"] == 42
    claimed = ct.plan("instrumental-learning", metric="toy-metric", model="m")  # its claims choose it
    assert claimed.kind == "toy" and claimed.chosen["model"] == "m"
    with pytest.raises(ct.InputError, match="has no cost-power frontier"):
        planned.plot()
    with pytest.raises(ct.InputError, match=r"a toy plan does not take `looks`: drop it"):
        ct.plan("instrumental-learning", question="toy", looks=3)
    capsys.readouterr()
    assert run_cli(["plan", "instrumental-learning", "--question", "toy", "--model", "rw-pm",
                    "-o", str(tmp_path / "cli")]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "toy: 42 for rw-pm" and "toy: thinking" in err and (tmp_path / "cli/toy.json").exists()
    assert run_cli(["plan", "instrumental-learning", "--question", "toy", "--looks", "3"]) == 2
    assert "a toy plan does not take --looks: drop it" in capsys.readouterr().err


def test_an_unknown_question_lists_the_kinds() -> None:
    with pytest.raises(ct.InputError, match="no plan kind: choose one of forms, adaptive, precision"):
        ct.plan("instrumental-learning", question="nope")


def test_the_groups_and_the_shortcut_build_one_request(toy: PlanKind) -> None:
    from cogtestbed.planning.plan_options import PlanTarget

    grouped = ct.plan("instrumental-learning", target=PlanTarget(question="toy", model="rw-pm"))
    flat = ct.plan("instrumental-learning", question="toy", model="rw-pm")
    assert grouped.payload == flat.payload
    with pytest.raises(ct.InputError, match="model given twice"):
        ct.plan("instrumental-learning", target=PlanTarget(question="toy"), model="rw-pm")


# ----------------------------------------------------------------------------- refused before any simulation


LLMS = ["openai:gpt-4o", "openai:gpt-4o-mini"]
REFUSED: list[tuple[str, dict[str, Any], list[str], str]] = [
    ("belief-coherence", {"model": "mnl", "effect": {"slope_yes": -6.0}, "forms": [1, 2, 4],
                          "form_sd": {"slope_yes": 0.2}, "llm": LLMS},
     ["--model", "mnl", "--effect", "slope_yes=-6", "--forms", "1,2,4", "--form-sd", "slope_yes=0.2",
      "--llm", LLMS[0], "--llm", LLMS[1]], "mnl cannot be planned with forms"),
    ("instrumental-learning", {"model": "rw-pm", "effect": {"optimism_bias": 0.2}, "forms": "1,2",
                               "form_sd": {"nope": 0.2}},
     ["--model", "rw-pm", "--effect", "optimism_bias=0.2", "--forms", "1,2", "--form-sd", "nope=0.2"],
     "form.sd. nope: model rw-pm has parameters"),
    ("instrumental-learning", {"model": "rw-pm", "effect": {"optimism_bias": 0.2}, "llm": LLMS[1],
                               "subjects": "10:300000000"},
     ["--model", "rw-pm", "--effect", "optimism_bias=0.2", "--llm", LLMS[1], "--subjects", "10:300000000"],
     "subjects.? reaches 300,000,000"),
    ("instrumental-learning", {"model": "rw-pm", "effect": {"optimism_bias": 0.2}, "llm": LLMS[1],
                               "subjects": "10:99999999999"},
     ["--model", "rw-pm", "--effect", "optimism_bias=0.2", "--llm", LLMS[1], "--subjects", "10:99999999999"],
     "subjects.? reaches 99,999,999,999"),
    ("instrumental-learning", {"model": "rw-pm", "effect": {"optimism_bias": 0.2}, "llm": LLMS[1],
                               "trials": "48:99999999999"},
     ["--model", "rw-pm", "--effect", "optimism_bias=0.2", "--llm", LLMS[1], "--trials", "48:99999999999"],
     "trials.? reaches"),
    ("belief-coherence", {"metric": "t2", "compare": ("logit-rum:scale=6", "logit-rum:scale=3"), "llm": LLMS},
     ["--metric", "t2", "--compare", "logit-rum:scale=6", "logit-rum:scale=3", "--llm", LLMS[0], "--llm",
      LLMS[1]], "'t2' of belief-coherence cannot be compared between two groups: .*comparable: t1_cmi"),
    ("two-step", {"metric": "nope", "compare": ("hybrid:w=0.2", "hybrid:w=0.8"), "llm": LLMS},
     ["--metric", "nope", "--compare", "hybrid:w=0.2", "hybrid:w=0.8", "--llm", LLMS[0], "--llm", LLMS[1]],
     "no headline metric of two-step: the metrics two groups can be compared in are performance, model_basedness"),
    ("instrumental-learning", {"model": "rw-pm", "effect": {"nope": 0.2}, "llm": LLMS[1]},
     ["--model", "rw-pm", "--effect", "nope=0.2", "--llm", LLMS[1]],
     "effect.? nope: model rw-pm can plan alpha_pos, alpha_neg, beta, optimism_bias"),
    ("instrumental-learning", {"model": "rw-pm", "effect": {"optimism_bias": 0.95}, "llm": LLMS[1]},
     ["--model", "rw-pm", "--effect", "optimism_bias=0.95", "--llm", LLMS[1]],
     "moves alpha_neg from 0.3 .the base. to -0.175, outside its bounds .0, 1.: the largest effect this base can "
     "carry is 0.6"),
    ("two-step", {"metric": "model_basedness", "compare": ("hybrid:w=0.2", "hybrid:w=0.8"), "llm": LLMS,
                  "runs": "10:99999999999"},
     ["--metric", "model_basedness", "--compare", "hybrid:w=0.2", "hybrid:w=0.8", "--llm", LLMS[0], "--llm",
      LLMS[1], "--runs", "10:99999999999"], "runs.? reaches"),
]


@pytest.mark.parametrize(("experiment", "api", "cli", "message"), REFUSED, ids=lambda x: str(x)[:30])
def test_a_refusal_reachable_from_the_request_comes_at_once(
        no_simulation: None, experiment: str, api: dict[str, Any], cli: list[str], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Each refusal in under a second, one line, before the first simulation, with memory flat (a range is never
    listed integer by integer); the library names fields (`subjects`), the command line its flags."""
    ct.get_experiment(experiment)  # the experiment's import is no part of the check
    tracemalloc.start()
    with pytest.raises(ct.InputError, match=message) as refused:
        ct.plan(experiment, **api)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50e6 and "\n" not in str(refused.value), peak
    assert "--" not in str(refused.value)  # fields, not flags
    assert run_cli(["plan", experiment, *cli]) == 2
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1 and "Traceback" not in err


def test_the_shipped_comparisons_are_what_the_metrics_return() -> None:
    """The shipped probe (``metric_tests.json``) agrees with a fresh probe of the fast experiments, and every
    package experiment has its row (``python -m cogtestbed.planning.capabilities`` rewrites it)."""
    from cogtestbed.planning.capabilities import (
        TESTS_KEY,
        _shipped,
        comparable_metrics,
        fingerprint,
        probe_comparisons,
    )
    from cogtestbed.studies.metric_studies import probe_tests

    assert set(_shipped()) == set(ct.experiments())
    stale = [n for n, row in _shipped().items() if row["_source"]["fingerprint"] != fingerprint(ct.get_experiment(n))]
    assert not stale, f"metrics changed since the probe: python -m cogtestbed.planning.capabilities {stale}"
    for name in ("instrumental-learning", "temporal-discounting"):
        shipped = {k: v for k, v in _shipped()[name].items() if k not in ("_source", TESTS_KEY)}
        assert probe_comparisons(ct.get_experiment(name)) == shipped
        assert probe_tests(ct.get_experiment(name)) == _shipped()[name][TESTS_KEY] == []  # no metric is a test
    assert set(comparable_metrics(ct.get_experiment("two-step"))) == {"model_basedness", "performance"}


def test_list_and_the_refusal_read_the_declared_comparisons() -> None:
    """One source: where an experiment declares a metric's comparison (``MetricsSpec.comparisons``), ``list``
    (:func:`~cogtestbed.planning.capabilities.comparisons`), the shipped probe and the refusal agree."""
    from cogtestbed.planning.capabilities import _shipped, comparable_metrics, comparisons

    exp = ct.get_experiment("belief-coherence")
    declared = {m for m in exp.metrics.headline if exp.metrics.comparability(m).comparable}
    assert declared == {"t1_cmi", "t3", "t1_lr", "accuracy"} == set(comparable_metrics(exp))
    shipped = {k: v for k, v in _shipped()["belief-coherence"].items() if k not in ("_source", "_tests")}
    assert shipped == comparisons(exp)
    assert _shipped()["belief-coherence"]["_tests"] == list(exp.metrics.tests)
    assert comparisons(exp)["t1_cmi"]["test"] == "permutation test of the per-unit means"
    for name in ct.experiments():
        other = ct.get_experiment(name)
        for metric, how in other.metrics.comparisons.items():
            assert ("test" in comparisons(other)[metric]) == how.comparable, (name, metric)


def test_list_shows_what_each_metric_and_parameter_can_plan(capsys: pytest.CaptureFixture[str]) -> None:
    info = ct.describe("belief-coherence")["planning"]
    assert {m["metric"] for m in info["metrics"]} == set(ct.get_experiment("belief-coherence").metrics.headline)
    assert info["forms"]["mnl"] == [] and "c_fp" in info["forms"]["loss"] and "slope_yes" in info["adaptive"]
    assert run_cli(["list", "two-step"]) == 0
    out = capsys.readouterr().out
    assert "compared between groups" in out and "parameters forms can shift" in out


# ----------------------------------------------------------------------------- one vocabulary (item 5)
def test_every_size_searched_says_reached_not_reached_or_undecided() -> None:
    from cogtestbed.planning.kinds.power.power_sims import DECIDE_MAX_SIMS, verdict
    from cogtestbed.planning.plan_text import plan_lines

    assert verdict(20, 20, 0.8)["verdict"] == "reached" and verdict(10, 20, 0.8)["verdict"] == "not reached"
    assert verdict(17, 20, 0.8)["verdict"] == "undecided"  # 0.85 is within 2 SEs of 0.8 at 20 sims
    assert verdict(int(0.81 * DECIDE_MAX_SIMS), DECIDE_MAX_SIMS, 0.8)["verdict"] == "reached"  # the search's rule
    lo, hi = verdict(17, 20, 0.8)["interval"]
    assert 0.63 < lo < 0.65 and 0.94 < hi < 0.95  # Wilson 95 %
    row = {"design": "8 subjects", "power": 0.85, "sims": 20, **verdict(17, 20, 0.8)}
    payload = {"frontier": [], "evaluated": [row]}
    from unittest import mock

    with mock.patch("cogtestbed.planning.plan_report.summary_line", return_value="summary"):
        lines = plan_lines(payload, "subjects")
    assert "  searched: 8 subjects: power 0.85 [0.64, 0.95] (20 sims): undecided" in lines
    cost = {"dollars_range": [0.1, 0.3], "expected_dollars": 0.2, "local_endpoint": "measured locally",
            "completion_tokens_per_call": {"source": "assumption 500:3000"}}
    with mock.patch("cogtestbed.planning.plan_report.summary_line", return_value="summary"):
        lines = plan_lines({**payload, "cost": cost}, "subjects")
    assert lines[1].startswith("cost range: $0.100 to $0.300 (expected $0.200; ") and "assumption 500:3000" in lines[1]
    assert lines[2] == "WARNING: measured locally"  # the power kind's lines carry the one price's range (issue 67)
    from cogtestbed.planning.plan_text import precision_lines

    rows = [{"design": f"{t} trials", "assurance": a, "interval95": [a - 0.05, a + 0.04], "subjects": 200, "passed": p}
            for t, a, p in ((48, 0.77, False), (72, 0.8, None), (96, 0.88, True))]
    precision = {"evaluated": rows, "chosen": {"resolved": {"label": "96 trials", "fields": {"n": 96}}}}
    with mock.patch("cogtestbed.planning.kinds.precision.precision.precision_line", return_value="line"):
        said = precision_lines(precision, "subjects")
    assert said[2:] == ["  searched: 48 trials: P = 0.77 [0.72, 0.81] (200 subjects): not reached",
                        "  searched: 72 trials: P = 0.80 [0.75, 0.84] (200 subjects): undecided",
                        "  searched: 96 trials: P = 0.88 [0.83, 0.92] (200 subjects): reached"]


def test_plan_adaptive_puts_both_arms_side_by_side_on_the_natural_scale() -> None:
    """``plan --adaptive``: the tolerance on the natural scale (as ``plan --precision``), both arms the same
    simulated subjects, each arm's trials with an interval, their ratio with an interval, every trial count's
    verdict."""
    plan = ct.plan("temporal-discounting", adaptive="k", precision={"k": 0.05}, assurance=0.8, subjects=10,
                   trials=(1, 16), adaptive_sims=16, seed=3)
    p = plan.payload
    assert p["scale"] == "natural" and p["same_subjects"] and p["simulated_subjects"] == 16
    assert [s["trials"] for s in p["searched"]["adaptive"]] == list(range(1, 17))
    assert {s["verdict"] for arm in p["searched"].values() for s in arm} <= {"reached", "not reached", "undecided"}
    for arm in ("fixed", "adaptive"):
        row = p["searched"][arm][-1]
        assert row["interval"][0] <= row["share"] <= row["interval"][1]
    text = "\n".join(plan.lines())
    assert "(natural scale); both arms on the same 16 subjects" in text and "fixed trial counts:" in text
    if p["trials_ratio"] is not None and p["trials_ratio_interval"] is not None:
        lo, hi = p["trials_ratio_interval"]
        assert lo <= hi and "adaptive/fixed trials =" in text


def test_an_effect_a_fitted_base_cannot_carry_names_the_largest_it_can() -> None:
    """The pilot's fitted base is checked as the base is (after the pilot's fit, before any simulation), with
    the effect's shift of :func:`~cogtestbed.studies.model_studies.effect_shift`."""
    from types import SimpleNamespace

    from cogtestbed.planning.request import carried, shift_of
    from cogtestbed.studies.model_studies import effect_shift

    model = ct.get_experiment("instrumental-learning").model("rw-pm")
    assert shift_of(model, "optimism_bias", 0.4) == effect_shift(
        SimpleNamespace(effect="optimism_bias", effect_size=0.4), model)  # type: ignore[arg-type]
    fitted = {"alpha_pos": 0.6, "alpha_neg": 0.05, "beta": 4.0}
    moved = {k: v + shift_of(model, "optimism_bias", 0.3).get(k, 0.0) for k, v in fitted.items()}
    with pytest.raises(ct.InputError, match=r"moves alpha_neg from 0.05 \(the pilot's fitted base\) to -0.1, outside "
                                            r"its bounds \[0, 1\]: the largest effect this base can carry is 0.1$"):
        carried(model, "optimism_bias", 0.3, moved, "the pilot's fitted base")
    carried(model, "optimism_bias", 0.1, {k: v + shift_of(model, "optimism_bias", 0.1).get(k, 0.0)
                                          for k, v in fitted.items()}, "the pilot's fitted base")  # carried: no error


def test_typed_groups_reach_the_kind_unchanged() -> None:
    """``People`` and ``Pricing`` (issue 67) are typed groups: ``ct.plan`` passes the very objects given to the kind
    (nothing rebuilt from text); a flat keyword of a group also given is refused."""
    from cogtestbed.planning.plan_options import People, Pricing

    seen: dict[str, Any] = {}

    def run(exp: Any, req: Any, ctx: PlanContext) -> Planned:
        seen["req"] = req
        return Planned({"chosen": {"experiment": exp.name}})

    register_plan_kind(PlanKind("typed", "a test's kind reading the typed groups", run))
    try:
        people = People(population="human:someone")
        pricing = Pricing(llm=["openai:gpt-4o"], batch=True, assume_reasoning_tokens="500:3000")
        ct.plan("instrumental-learning", question="typed", people=people, llms=pricing)
        assert seen["req"].people is people and seen["req"].llms is pricing
        with pytest.raises(ct.InputError, match="batch given twice"):
            ct.plan("instrumental-learning", question="typed", llms=pricing, batch=False)
    finally:
        unregister_plan_kind("typed")


def test_a_typed_design_is_searched_as_its_text_is() -> None:
    """``design={FIELD: [a, b]}`` (typed, issue 67) plans the same search as ``--design FIELD=a,b``, without being
    written as text: the trials field's list is the trials axis, another integer field's the searched axis."""
    from cogtestbed.planning.request import _searched

    il, td = ct.get_experiment("instrumental-learning"), ct.get_experiment("temporal-discounting")
    assert _searched(il, {"visits_per_casino": [6, 12]}, None) == _searched(il, ["visits_per_casino=6,12"], None)
    assert _searched(il, {"visits_per_casino": [6, 12]}, None)[1].values() == (24, 48)
    typed = _searched(td, {"base_pay": 2, "trials": range(10, 31, 10)}, None)
    assert typed == _searched(td, ["base_pay=2", "trials=10,20,30"], None)
    assert typed[2].name == "trials" and typed[2].values == (10, 20, 30) and typed[0] == {"base_pay": 2}
    with pytest.raises(ct.InputError, match="`design` trials expects integers"):
        _searched(td, {"trials": [5, "x"]}, None)
    with pytest.raises(ct.InputError, match="one design field at a time"):
        _searched(td, {"trials": [5], "base_pay": [1, 2]}, None)
    source = (ROOT / "planning/request.py").read_text(encoding="utf-8")
    assert "sz.design if isinstance(sz.design, Mapping) else (assignment_items(sz.design)" in source  # typed: as given


def test_a_headline_metric_that_is_no_test_is_refused_before_the_study() -> None:
    """``power --test`` (the library's study path) names the tests the metrics report: a headline metric whose value
    is no test is refused by the probe, not by the first simulated study ("test-power task 0 (rep 0): ... is not a
    statistical test"); a declared test is checked without a probe."""
    from cogtestbed.experiments.spec import UnknownNameError
    from cogtestbed.studies import metric_studies

    line = r"^unknown test 'performance' for two-step; there are none for two-step$"
    with pytest.raises(UnknownNameError, match=line):
        ct.power("two-step", test="performance", agent="hybrid")
    assert metric_studies.named_tests(ct.get_experiment("two-step")) == []
    with pytest.raises(UnknownNameError, match=r"^unknown test 'nope' for belief-coherence"):
        ct.power("belief-coherence", test="nope", agent="logit-rum")


def test_the_comparisons_are_in_the_headline_order_whether_shipped_or_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``comparisons`` (``list``, the facts, the refusal's list) give the headline's order from the shipped probe
    (written with sorted keys) and from a fresh probe alike: before, the facts generated from a stale probe listed
    the metrics in another order than from a fresh one."""
    from cogtestbed.planning import capabilities
    from cogtestbed.planning.facts import facts_of

    exp = ct.get_experiment("instrumental-learning")
    shipped = facts_of(exp).comparisons
    monkeypatch.setattr(capabilities, "_shipped", dict)  # nothing shipped: probed again
    assert list(shipped) == list(facts_of(exp).comparisons) == list(exp.metrics.headline)
    assert shipped == facts_of(exp).comparisons

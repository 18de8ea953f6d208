"""Each option of a workflow is declared once (issue 51, item 2): in its request
(:mod:`cogtestbed.request`: ``PlanRequest``, ...), from which the command line's options and help
panels (:mod:`cogtestbed.cli.options`), the ``ct.`` function's keywords and the ``request`` block of
the output JSON are made.

The allowlists below name what is not converted yet, with the count of options each still declares by
hand; they only shrink (a converted module left on them fails too).  Their goal is empty.  An option name
is declared in one class (issue 73, item 5): a shared group every request inherits.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest
import typer.main

import cogtestbed as ct
from cogtestbed.cli import app
from cogtestbed.request import api_leaves, build, cli_leaves, flat, leaves, request_block

PACKAGE = Path(__file__).resolve().parents[1] / "cogtestbed"
#: The one module that builds a typer option or argument (from a request's declarations).
DECLARING = {"cli/options.py"}
#: A typer option or argument built by hand.
BY_HAND = re.compile(r"typer\.(Option|Argument)\(")

#: Command-line modules not yet converted: the typer options and arguments each still builds by hand.
NOT_CONVERTED_CLI: dict[str, int] = {}
#: ``ct.`` functions with keyword options not yet made from a request.
NOT_CONVERTED_API: set[str] = set()
#: Keywords of a converted ``ct.`` function that are no option (a progress callback, a study's view).
NOT_OPTIONS = {"say", "watch", "on_subject_done"}
#: The converted commands: command name -> (its request classes, its ``ct.`` function or None).
CONVERTED: dict[str, tuple[tuple[str, ...], str | None]] = {
    "plan": (("cogtestbed.planning.plan_options:PlanRequest", "cogtestbed.cli.plan:PlanOutput"), "plan"),
    "run": (("cogtestbed.runs.run_options:RunRequest",), "run"),
    "recover": (("cogtestbed.studies.study_options:RecoverRequest",), "recover"),
    "model-recovery": (("cogtestbed.studies.study_options:ModelRecoveryRequest",), "model_recovery"),
    "sbc": (("cogtestbed.studies.study_options:SbcRequest",), "sbc"),
    "power": (("cogtestbed.studies.study_options:PowerRequest",), "power"),
    "metric-validity": (("cogtestbed.studies.study_options:MetricValidityRequest",), "metric_validity"),
    "validity": (("cogtestbed.studies.study_options:MetricValidityRequest",), "metric_validity"),
    "study": (("cogtestbed.studies.study_options:DeclaredStudyRequest",), "study"),
    "fit": (("cogtestbed.studies.study_options:FitRequest",), "fit_and_save"),
    "simulate": (("cogtestbed.simulate_options:SimulateRequest",), "simulate"),
    "phenotype": (("cogtestbed.runs.phenotype_options:PhenotypeRequest",), "phenotype"),
    "population build": (("cogtestbed.studies.population_options:BuildPopulationRequest",),
                         "build_population"),
    # the command line's side only (no ct. function with options)
    "list": (("cogtestbed.cli.listing:ListRequest",), None),
    "check-design": (("cogtestbed.cli.design_check:CheckDesignRequest",), None),
    "looks": (("cogtestbed.cli.looks:LooksRequest",), None),
    "check": (("cogtestbed.api.workflow_options:CheckRequest", "cogtestbed.cli.check:CheckCommand"), "check"),
    "export": (("cogtestbed.api.workflow_options:ExportRequest", "cogtestbed.cli.export:ExportCommand"), "export"),
    "transcript-nll": (("cogtestbed.api.workflow_options:TranscriptNllRequest",
                        "cogtestbed.cli.transcripts:TranscriptNllCommand"), "transcript_nll"),
    "validate": (("cogtestbed.api.workflow_options:ValidateRequest", "cogtestbed.cli.transcripts:ValidateCommand"),
                 "validate"),
    "demo": (("cogtestbed.cli.demo:DemoRequest",), None),
    "metrics": (("cogtestbed.api.workflow_options:MetricsRequest", "cogtestbed.cli.metrics:MetricsCommand"), "metrics"),
    "population show": (("cogtestbed.cli.population:ShowRequest",), None),
    "serve": (("cogtestbed.cli.serve:ServeRequest",), None),
}


def _load(path: str) -> type:
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _by_hand() -> dict[str, int]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        found = len(BY_HAND.findall(path.read_text(encoding="utf-8")))
        if found and rel not in DECLARING:
            out[rel] = found
    return out


def _public_functions() -> list[str]:
    return sorted(name for name, load in ct._PUBLIC.items()
                  if load().__name__.startswith("cogtestbed.api") and not inspect.isclass(getattr(ct, name)))


def test_no_option_is_declared_by_hand_outside_the_allowlist() -> None:
    found = _by_hand()
    extra = {k: v for k, v in found.items() if k not in NOT_CONVERTED_CLI}
    assert extra == {}, f"typer options built by hand (declare them in the command's request): {extra}"
    stale = {k: (v, found.get(k, 0)) for k, v in NOT_CONVERTED_CLI.items() if found.get(k, 0) != v}
    assert stale == {}, f"update NOT_CONVERTED_CLI (allowed, found): {stale}"


def test_every_ct_keyword_is_a_request_field() -> None:
    for name in _public_functions():
        func = getattr(ct, name)
        keywords = {p.name for p in inspect.signature(func).parameters.values() if p.kind is p.KEYWORD_ONLY}
        request = getattr(inspect.unwrap(func), "__request__", None)
        if request is None:
            assert not keywords or name in NOT_CONVERTED_API, f"ct.{name}'s keywords are declared by hand: {keywords}"
            continue
        assert name not in NOT_CONVERTED_API, f"ct.{name} is converted: take it off NOT_CONVERTED_API"
        taken = api_leaves(request, getattr(inspect.unwrap(func), "__request_only__", None))
        fields = {leaf.name for leaf in taken}
        groups = {f.name for f in dataclasses.fields(request)}  # ct.plan takes the request's typed groups (issue 67)
        assert keywords - NOT_OPTIONS <= fields | groups, (name, keywords - NOT_OPTIONS - fields - groups)
        positional = {p.name for p in inspect.signature(func).parameters.values() if p.kind is not p.KEYWORD_ONLY}
        in_groups = {leaf.name for leaf in taken if leaf.path[0] in keywords}
        if any(p.kind is p.VAR_KEYWORD for p in inspect.signature(func).parameters.values()):
            in_groups = fields  # the flat keywords' shortcut builds the same request
        missing = fields - keywords - positional - in_groups
        assert not missing, f"ct.{name} lacks the options {missing}"


def test_every_command_is_converted() -> None:
    """Every command of the command line takes its options from a request (the table above)."""
    def names(group: object, prefix: str = "") -> set[str]:
        out: set[str] = set()
        for name, sub in group.commands.items():  # type: ignore[attr-defined]
            out |= names(sub, f"{prefix}{name} ") if hasattr(sub, "commands") else {f"{prefix}{name}"}
        return out

    assert names(typer.main.get_command(app)) - {"population list"} == set(CONVERTED)  # list: no option


def test_the_allowlists_are_reported() -> None:
    """The counts docs/architecture.md quotes (options declared once, issue 51): no command line module
    and no ``ct.`` function left."""
    assert (len(NOT_CONVERTED_CLI), len(NOT_CONVERTED_API)) == (0, 0)


@pytest.mark.parametrize("command", sorted(CONVERTED))
def test_a_converted_commands_options_are_its_requests(command: str) -> None:
    classes = [_load(c) for c in CONVERTED[command][0]]
    click_command = typer.main.get_command(app)
    for word in command.split():
        click_command = click_command.commands[word]  # type: ignore[attr-defined]
    params = {p.name: p for p in click_command.params if p.name != "ctx"}
    declared = {leaf.cli_name: leaf for cls in classes for leaf in cli_leaves(cls)}
    assert set(params) == set(declared)
    for name, leaf in declared.items():
        param = params[name]
        if leaf.opt.flags:
            spelled = {f for flag in leaf.opt.flags for f in flag.split("/")}  # --x/--no-x: both spellings
            assert spelled <= set(param.opts) | set(param.secondary_opts)
        assert (param.help or "").startswith(" ".join(leaf.opt.help.split())[:40]), name
        if not param.required:
            assert param.default == leaf.default or (param.default in ((), None) and leaf.default is None), name
        assert getattr(param, "rich_help_panel", None) == leaf.panel, name
    function = CONVERTED[command][1]
    if function is not None:
        assert getattr(inspect.unwrap(getattr(ct, function)), "__request__", None) is classes[0]


def test_names_are_unique_and_every_field_is_declared() -> None:
    for command, (classes, _) in CONVERTED.items():
        names = [leaf.name for c in classes for leaf in leaves(_load(c))]
        assert len(names) == len(set(names)), command


def test_a_request_is_built_from_flat_keywords_and_recorded_in_json(tmp_path: Path) -> None:
    from cogtestbed.planning.plan_options import PlanRequest

    req = build(PlanRequest, {"experiment": "instrumental-learning", "llm": ["a:b", "c:d"], "effect": {"x": 0.2},
                              "subjects": (10, 80), "pilot": tmp_path, "looks": 3, "seed": 7})
    assert req.llms.llm == ["a:b", "c:d"] and req.target.effect == {"x": 0.2} and req.sizes.subjects == (10, 80)
    assert req.sequential.looks == 3 and req.seed == 7 and req.target.power == 0.8  # a default
    assert flat(req)["pilot"] == tmp_path
    block = request_block(req)
    assert block["llms"]["llm"] == ["a:b", "c:d"] and block["sizes"]["subjects"] == "10:80"
    assert block["simulated"]["pilot"] == str(tmp_path) and block["seed"] == 7 and block["experiment"] == \
        "instrumental-learning"
    assert block["target"]["power"] == 0.8 and block["prompt_forms"] == {"forms": None, "form_sd": None}
    assert block["target"]["effect"] == ["x=0.2"] and block["sequential"]["looks"] == "3"
    # the command line's spelling of the same request records the same block
    cli = build(PlanRequest, {"experiment": "instrumental-learning", "llm": ["a:b", "c:d"], "effect": "x=0.2",
                              "subjects": "10:80", "pilot": str(tmp_path), "looks": "3", "seed": 7})
    assert request_block(cli) == block


def test_ct_run_takes_every_keyword_it_took_before() -> None:
    """``ct.run``'s keywords and its former ``**options`` (the fields of the run request users set) are
    still taken, with their defaults."""
    before = {"llm", "output", "subjects", "seed", "design", "plan", "dry_run", "base_url", "mode", "max_tokens",
              "temperature", "stop", "reask", "top_logprobs", "cache", "share_cache", "concurrency", "rpm", "tpm",
              "max_calls", "max_cost", "add_budget", "prices", "allow_unpriced", "timeout", "retry_for", "resume",
              "progress_every", "forms", "batch", "poll_every", "max_service_requests", "reasoning_effort",
              "thinking_budget", "adaptive", "trials"}
    params = inspect.signature(ct.run).parameters
    assert before <= set(params) and next(iter(params)) == "experiment" and params["experiment"].default is None
    assert params["output"].default is inspect.Parameter.empty and params["concurrency"].default == 8
    with pytest.raises(ct.InputError, match="output"):
        ct.run("instrumental-learning", llm="hf:tiny-random")


def test_ct_plan_takes_every_keyword_it_took_before() -> None:
    """Every keyword of ``ct.plan`` before its options were derived (issue 51) is still taken, as the flat
    shortcut that builds the same request as its typed groups (issue 67: at most 15 parameters)."""
    from cogtestbed.planning.plan_options import PlanRequest

    before = {"llm", "model", "effect", "metric", "compare", "test", "agent", "precision", "assurance", "power",
              "level", "subjects", "runs", "trials", "design", "base", "sd_between", "params", "prices",
              "allow_unpriced", "batch", "max_cost", "invalid_rate", "random_rate", "pilot", "mc_se", "max_tokens",
              "reask", "temperature", "seed", "workers", "looks", "spending", "futility", "null", "seq_sims",
              "null_sims", "lapse_fit", "binding_futility", "fit", "fit_sims", "human", "reasoning_effort",
              "thinking_budget", "assume_reasoning_tokens", "adaptive", "adaptive_sims", "population"}
    params = inspect.signature(ct.plan).parameters
    assert len(params) <= 15 and next(iter(params)) == "experiment" and "say" in params
    assert before <= {leaf.name for leaf in api_leaves(PlanRequest)}
    assert build(PlanRequest, {"experiment": "x"}).target.power == 0.8
    assert build(PlanRequest, {"experiment": "x"}).sequential.spending == "obrien-fleming"
    assert "Parameters\n----------" in (ct.plan.__doc__ or "") and "\nbinding_futility : " in (ct.plan.__doc__ or "")
    with pytest.raises(ct.InputError, match="unexpected keyword|got an unexpected"):
        ct.plan("instrumental-learning", no_such_option=1)


#: The keyword options of the ``ct.`` functions converted after users called them, as they were
#: declared by hand (name -> default; ``REQUIRED``: none): still taken, with these defaults, and no other.
REQUIRED = inspect.Parameter.empty
KEYWORDS_BEFORE: dict[str, dict[str, object]] = {
    "fit": {"method": "mle", "source": "auto", "unit": "auto", "separate_runs": False, "draws": 1000,
            "max_draws": None, "chains": 4, "seed": 0, "lapse": "none", "form_effects": None, "sessions": None,
            "posterior_predictive": False},
    "build_population": {"model": REQUIRED, "name": REQUIRED, "source": "", "from_source": "auto", "draws": 1000,
                         "tune": None, "chains": 4, "max_draws": 8000, "seed": 0, "sampler": "auto",
                         "allow_unconverged": False,
                         "output": None, "force": False},
    "population_from_fit": {"experiment": REQUIRED, "model": REQUIRED, "name": REQUIRED, "table_or_path": None,
                            "source": "", "allow_unconverged": False},
    "form_study": {"forms": REQUIRED, "form_sd": None, "subjects": 50, "reps": 100, "params": None, "effect": None,
                   "design": None, "trials": None, "level": 0.05, "seed": 0},
    "plot_recovery": {"labels": None, "directory": None},
    "plan_forms": {"forms": REQUIRED, "model": REQUIRED, "effect": REQUIRED, "form_sd": None, "llm": None,
                   "pilot": None, "params": None, "base": None, "power": 0.8, "level": 0.05, "seed": 0,
                   "design": None, "prices": None, "allow_unpriced": False, "max_tokens": None, "temperature": None,
                   "reask": 0, "reasoning_effort": None, "thinking_budget": None, "assume_reasoning_tokens": None},
    "check": {"quick": True, "data_dir": None, "checks": None},
    "export": {"to": "psych201", "output": None, "experiment": None, "source": "auto", "force": False},
    "metrics": {"source": "auto", "sessions": None},
    "transcript_nll": {"participants": None, "options": "auto", "overflow": "refuse", "window": None,
                       "min_context": None, "measures": ("psych201", "choice"), "max_length": 32768,
                       "batch_tokens": 16384, "share_prefix": True, "onednn": False, "checkpoint": None},
    "validate": {"max_length": 32768},
    "heldout_nll": {"model": REQUIRED, "test": REQUIRED, "seed": 0, "n_starts": None},
}


@pytest.mark.parametrize("name", sorted(KEYWORDS_BEFORE))
def test_a_converted_function_keeps_its_keywords(name: str) -> None:
    params = inspect.signature(getattr(ct, name)).parameters
    assert {p.name: p.default for p in params.values() if p.kind is p.KEYWORD_ONLY} == KEYWORDS_BEFORE[name]


def test_a_sub_object_may_take_another_default_in_one_request() -> None:
    """``method`` is declared once (``FitTerms``): ``ct.fit`` fits the MLE by default, ``cogtestbed fit``
    and ``ct.fit_and_save`` the hierarchical model."""
    from cogtestbed.studies.study_options import FitRequest, FitTableRequest

    assert build(FitTableRequest, {}).terms.method == "mle"
    assert build(FitRequest, {"model": "m", "path": "p", "output": "o"}).terms.method == "hierarchical"
    assert build(FitRequest, {"model": "m", "path": "p", "output": "o", "method": "mle"}).terms.method == "mle"
    assert inspect.signature(ct.fit_and_save).parameters["method"].default == "hierarchical"
    assert {leaf.name: leaf.panel for leaf in leaves(FitRequest)}["lapse"] is None  # among the command's own


class _Called(Exception):
    """Raised by a stand-in for a ``ct.`` function: it was called, with these keywords."""


def _recorder(seen: dict[str, object]):  # type: ignore[no-untyped-def]
    def call(*args: object, **kwargs: object) -> None:
        seen.update(kwargs, args=args)
        raise _Called

    return call


def test_population_build_and_build_population_share_one_request(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``population build``'s TABLE is ``build_population``'s ``table_or_path``: one declaration
    (``BuildPopulationRequest``), the command line calling the function with its options."""
    from cogtestbed.cli import run_cli
    from cogtestbed.studies.population_options import BuildPopulationRequest

    params = inspect.signature(ct.build_population).parameters
    assert list(params)[:2] == ["experiment", "table_or_path"]
    assert (params["draws"].default, params["chains"].default, params["max_draws"].default, params["seed"].default,
            params["output"].default, params["source"].default, params["from_source"].default) == (
        1000, 4, 8000, 0, None, "", "auto")
    assert params["model"].default is params["name"].default is inspect.Parameter.empty
    assert inspect.unwrap(ct.build_population).__request__ is BuildPopulationRequest
    seen: dict[str, object] = {}
    monkeypatch.setattr("cogtestbed.api.population.build_population", _recorder(seen))
    with pytest.raises(_Called):
        run_cli(["population", "build", "two-step", str(tmp_path / "t.parquet"), "--model", "hybrid", "--name", "x",
                 "-o", str(tmp_path / "p.json"), "--draws", "7", "--seed", "3", "--sampler", "gibbs"])
    assert seen.pop("args") == ()
    assert seen == {"experiment": "two-step", "table_or_path": tmp_path / "t.parquet", "model": "hybrid", "name": "x",
                    "output": tmp_path / "p.json", "source": "", "from_source": "auto", "draws": 7, "tune": None,
                    "chains": 4, "max_draws": 8000, "seed": 3, "sampler": "gibbs", "allow_unconverged": False,
                    "force": False}
    with pytest.raises(ct.InputError, match="name"):
        ct.build_population("two-step", tmp_path / "t.parquet", model="hybrid")


def test_plan_forms_takes_the_plans_forms_options(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``ct.plan_forms`` takes exactly the plan's options that ``plan --forms`` reads (``PLAN_FORMS_OPTIONS``
    of ``PlanRequest``), ``forms``, ``model`` and ``effect`` required; the command line plans forms through
    ``ct.plan`` (issue 67), passing every one of them in its groups."""
    from cogtestbed.cli import run_cli
    from cogtestbed.planning.plan_options import PLAN_FORMS_OPTIONS, PlanRequest
    from cogtestbed.request import flat

    params = inspect.signature(ct.plan_forms).parameters
    assert set(params) == {"experiment", *PLAN_FORMS_OPTIONS}
    assert [n for n, p in params.items() if p.default is inspect.Parameter.empty] == [
        "experiment", "model", "effect", "forms"]
    assert (params["power"].default, params["level"].default, params["reask"].default) == (0.8, 0.05, 0)
    with pytest.raises(ct.InputError, match="forms"):
        ct.plan_forms("instrumental-learning", model="rw-pm", effect={"alpha": 0.1})
    seen: dict[str, object] = {}
    monkeypatch.setattr("cogtestbed.api.plan.plan", _recorder(seen))
    with pytest.raises(_Called):
        run_cli(["plan", "instrumental-learning", "--forms", "1,2", "--model", "rw-pm", "--effect", "alpha=0.1",
                 "--form-sd", "alpha=0.2", "--seed", "5", "--power", "0.9"])
    assert seen.pop("args") == ("instrumental-learning",)
    seen.pop("say")
    values = flat(PlanRequest("instrumental-learning", **seen))  # type: ignore[arg-type]
    assert (values["forms"], values["form_sd"], values["effect"], values["seed"], values["power"], values["llm"]) == (
        "1,2", ["alpha=0.2"], "alpha=0.1", 5, 0.9, None)


def test_form_study_and_plot_recovery_are_derived() -> None:
    """``ct.form_study`` takes the forms' options of ``recover``/``power --forms`` (``StudyForms``) and its own
    sizes, with their former defaults; ``ct.plot_recovery`` its two keywords."""
    from cogtestbed.studies.study_options import FORM_STUDY_OPTIONS

    params = inspect.signature(ct.form_study).parameters
    assert set(params) == {"experiment", "model", *FORM_STUDY_OPTIONS}
    assert params["forms"].default is inspect.Parameter.empty
    assert (params["subjects"].default, params["reps"].default, params["level"].default, params["seed"].default) == (
        50, 100, 0.05, 0)
    with pytest.raises(ct.InputError, match="forms"):
        ct.form_study("instrumental-learning", "rw-pm")
    plot = inspect.signature(ct.plot_recovery).parameters
    assert [(n, p.kind.name, p.default) for n, p in plot.items()][1:] == [
        ("fits", "VAR_POSITIONAL", inspect.Parameter.empty), ("labels", "KEYWORD_ONLY", None),
        ("directory", "KEYWORD_ONLY", None)]


def test_a_type_named_only_for_type_checking_is_checked_at_the_door() -> None:
    """``ExportRequest.experiment`` is ``str | ExperimentSpec | None`` (``ExperimentSpec`` imported only
    for type checking, so the request module stays light): the hint stays text, and ``ct.export`` still
    refuses another type in one line, as before its keywords were derived."""
    import pandas as pd

    from cogtestbed.api.workflow_options import ExportRequest

    assert {leaf.name: leaf.hint for leaf in leaves(ExportRequest)}["experiment"] == "str | ExperimentSpec | None"
    with pytest.raises(ct.InputError, match=r"export\(\): experiment must be str or ExperimentSpec or None, got int 5"):
        ct.export(pd.DataFrame({"subject": [1]}), experiment=5)


def test_metrics_takes_the_experiments_own_options_too() -> None:
    """``ct.metrics``'s request options are keywords, the experiment's own metrics options follow as
    further keywords (``derive_api(..., more_keywords=True)``) and reach the experiment converted."""
    params = list(inspect.signature(ct.metrics).parameters.values())
    assert [p.name for p in params] == ["experiment", "table_or_path", "source", "sessions", "options"]
    assert params[-1].kind is inspect.Parameter.VAR_KEYWORD
    import pandas as pd

    table = pd.DataFrame({"subject": [1]})
    with pytest.raises(KeyError, match="unknown metrics option .no_such_metric_option"):
        ct.metrics("instrumental-learning", table, no_such_metric_option=1)
    with pytest.raises(ct.InputError, match="sessions applies to published files"):  # the request's option read
        ct.metrics("instrumental-learning", table, sessions="split")


def _declarations() -> dict[str, set[str]]:
    """Option name -> the classes declaring it (``name: T = option(...)`` in a class body), over the package."""
    import ast

    out: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                        and isinstance(item.value, ast.Call) and ast.unparse(item.value.func).endswith("option")):
                    out.setdefault(item.target.id, set()).add(f"{path.relative_to(PACKAGE).as_posix()}:{node.name}")
    return out


def test_no_option_name_is_declared_in_two_request_classes() -> None:
    """Issue 73, item 5: every option name is declared once (a shared group of :mod:`cogtestbed.option_groups`
    every request inherits, its default and help given per request by :func:`cogtestbed.request.variant`)."""
    several = {name: sorted(classes) for name, classes in _declarations().items() if len(classes) > 1}
    assert not several, f"declared in two request classes (declare it once in cogtestbed/option_groups.py): {several}"


def _every_request_leaf() -> list[tuple[str, object]]:
    """(request class, leaf) of every request the command line and the ``ct.`` functions take."""
    import cogtestbed.api.studies  # noqa: F401 - FormStudyRequest, RecoveryPlotRequest
    from cogtestbed.api.workflow_options import HeldoutRequest
    from cogtestbed.request import declared_requests
    from cogtestbed.studies.population_options import PopulationFromFitRequest
    from cogtestbed.studies.study_options import FitTableRequest, FormStudyRequest

    typer.main.get_command(app)  # every command's requests listed
    classes = {*declared_requests(), *(_load(c) for cs, _ in CONVERTED.values() for c in cs), HeldoutRequest,
               PopulationFromFitRequest, FitTableRequest, FormStudyRequest}
    return [(cls.__name__, leaf) for cls in classes for leaf in leaves(cls)]


def test_a_shared_option_is_one_declaration_wherever_it_is_presented() -> None:
    """A request may give a shared option its own default, help, limits, flags or faces (``variant``), never
    another type or record: every request's field of one name has one type and one declaration."""
    from cogtestbed.request import declared_option

    seen: dict[str, tuple[object, object, str]] = {}
    for cls, leaf in _every_request_leaf():
        field, mine = leaf.path[-1], (str(leaf.hint), declared_option(leaf))  # type: ignore[attr-defined]
        first = seen.setdefault(field, (*mine, cls))
        assert mine == first[:2], f"{field}: {cls} declares {mine[0]}, {first[2]} {first[0]}"


def test_a_variant_presents_the_one_declaration() -> None:
    """``seed`` is declared once (:class:`cogtestbed.option_groups.Seed`); ``demo`` takes it with default 1 and
    its own help, ``population build`` with its own help; ``variant`` refuses to change a type's parsing or an
    option it does not have."""
    from cogtestbed.cli.demo import DemoRequest
    from cogtestbed.option_groups import Seed
    from cogtestbed.request import variant
    from cogtestbed.studies.population_options import BuildPopulationRequest
    from cogtestbed.studies.study_options import RecoverRequest

    demo = {leaf.name: leaf for leaf in leaves(DemoRequest)}["seed"]
    build_seed = {leaf.name: leaf for leaf in leaves(BuildPopulationRequest)}["seed"]
    recover = {leaf.name: leaf for leaf in leaves(RecoverRequest)}["seed"]
    assert (demo.default, demo.opt.help, build_seed.default, build_seed.opt.help) == (1, "Seed.", 0, "Sampler seed.")
    assert recover.opt is {f.name: f for f in __import__("dataclasses").fields(Seed)}["seed"].metadata[
        "cogtestbed.option"] and recover.default == 0
    assert build(DemoRequest, {}).seed == 1 and DemoRequest().seed == 1
    assert {leaf.name: leaf.opt.min for leaf in leaves(BuildPopulationRequest)}["chains"] == 2  # its limit
    with pytest.raises(TypeError, match="record"):
        variant(Seed, present={"seed": {"record": str}})
    with pytest.raises(TypeError, match="no option"):
        variant(Seed, helps={"sed": "x"})


def test_an_option_named_apart_keeps_its_keyword_flag_and_record(tmp_path: Path) -> None:
    """Where one name meant two things (a study's ``--subjects`` grid, ``simulate``'s count, a plan's range),
    each meaning has its own field (``subject_grid``, ``subject_count``, ``sizes.subjects``) and keeps the
    user's keyword, flag and ``request`` block key (:attr:`cogtestbed.request.Opt.name`)."""
    from cogtestbed.simulate_options import SimulateRequest
    from cogtestbed.studies.study_options import PowerRequest

    power = build(PowerRequest, {"target": "rw-pm", "subjects": "10,20"})
    assert power.sizes.subject_grid == "10,20" and flat(power)["subjects"] == "10,20"
    assert request_block(power)["sizes"]["subjects"] == "10,20" and "subject_grid" not in request_block(power)["sizes"]
    assert {leaf.name: leaf.flags for leaf in leaves(PowerRequest)}["subjects"] == ("--subjects",)
    sim = build(SimulateRequest, {"experiment": "x", "agent": "rw", "subjects": 3, "method": "step", "trials": 4})
    assert (sim.who.subject_count, sim.sessions.simulation, sim.sessions.session_trials, sim.agent_name) == (
        3, "step", 4, "rw")
    assert request_block(sim)["who"]["subjects"] == 3 and request_block(sim)["sessions"]["method"] == "step"
    params = inspect.signature(ct.simulate).parameters
    assert {"subjects", "method", "trials", "agent"} <= set(params) and params["subjects"].default == 10
    assert inspect.signature(ct.study).parameters["name"].default is None  # a declared study's NAME


def test_a_shared_option_is_one_declaration_every_request_reads() -> None:
    """``level`` is declared once (:class:`cogtestbed.option_groups.Level`): ``plan`` and ``power`` take it with
    the same help, default and flag, as their own option (``ct.power(level=...)``, ``--level``)."""
    from cogtestbed.option_groups import Level
    from cogtestbed.planning.plan_options import PlanRequest
    from cogtestbed.studies.study_options import PowerRequest

    plan = {leaf.name: leaf for leaf in leaves(PlanRequest)}["level"]
    power = {leaf.name: leaf for leaf in leaves(PowerRequest)}["level"]
    assert plan.opt is power.opt and plan.default == power.default == 0.05 and plan.flags == ("--level",)
    assert _declarations()["level"] == {"option_groups.py:Level"} and issubclass(Level, object)
    assert build(PlanRequest, {"experiment": "x", "level": 0.01}).target.level == 0.01

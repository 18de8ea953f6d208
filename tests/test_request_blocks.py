"""The ``request`` block of each workflow's output (issue 51, item 2): ``plan.json``, ``precision.json``
and ``adaptive.json`` of a plan, the run folder's ``run.json``, ``paired.json`` of two LLMs, a dry run's
estimate, every study's ``summary.json`` and its printed ``--json``, ``fit``'s ``summary.json`` and
``simulate``'s manifest record the options they were run with, made from the workflow's request
(:func:`cogtestbed.request.request_block`), the same from the ``ct.`` function and from the command line
for the same options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import cogtestbed as ct
from cogtestbed.cli import run_cli
from cogtestbed.request import build, request_block

EXP = "instrumental-learning"


def _without_output(block: dict[str, Any]) -> dict[str, Any]:
    """The block with the output path left out (the two runs write to two folders)."""
    out = json.loads(json.dumps(block))
    for where in (out, out.get("run", {})):
        where.pop("output", None)
    return out


def test_simulates_manifest_records_its_request_the_same_from_ct_and_the_command_line(tmp_path: Path) -> None:
    assert run_cli(["simulate", EXP, "-a", "rw-pm", "--subjects", "3", "--seed", "7", "-o", str(tmp_path / "c.parquet"),
                    "--design", "visits_per_casino=2", "-p", "alpha_pos=0.4", "--lapse-random", "0.1"]) == 0
    ct.simulate(EXP, "rw-pm", subjects=3, seed=7, output=tmp_path / "a.parquet", design={"visits_per_casino": 2},
                params={"alpha_pos": 0.4}, lapse_random=0.1)
    cli, api = (json.loads((tmp_path / f"{n}.parquet.manifest.json").read_text())["request"] for n in "ca")
    assert cli["output"] == str(tmp_path / "c.parquet") and api["output"] == str(tmp_path / "a.parquet")
    assert _without_output(cli) == _without_output(api)
    assert (api["experiment"], api["agent"], api["who"]["seed"], api["who"]["subjects"]) == (EXP, "rw-pm", 7, 3)
    assert api["who"]["params"] == ["alpha_pos=0.4"] and api["sessions"]["design"] == ["visits_per_casino=2"]
    assert api["lapses"] == {"lapse_invalid": 0.0, "lapse_random": 0.1} and api["sessions"]["method"] == "auto"


def test_a_studys_summary_records_its_request_the_same_from_ct_and_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--subjects", "6", "--reps", "2", "--trials", "48", "--seed", "2", "--workers", "1"]
    assert run_cli(["recover", "--model", "rw", *args, "--json", "-o", str(tmp_path / "cli")]) == 0
    printed = json.loads(capsys.readouterr().out)  # --json: Study.to_dict, with the same block
    study = ct.recover("rw", subjects=6, reps=2, trials=48, seed=2, workers=1, output=tmp_path / "api")
    cli, api = (json.loads((tmp_path / n / "summary.json").read_text())["request"] for n in ("cli", "api"))
    assert _without_output(cli) == _without_output(api)
    assert api["run"]["output"] == str(tmp_path / "api") and "as_json" not in api["run"]
    assert (api["model"], api["experiment"], api["sizes"]["subjects"], api["sizes"]["trials"], api["sizes"]["reps"],
            api["run"]["seed"], api["run"]["workers"], api["fit"]["method"]) == ("rw", None, "6", "48", 2, 2, 1, "mle")
    assert study.result.request == api == study.to_dict()["request"]  # Study.save writes it again
    assert printed["request"] == cli


class _Called(Exception):
    pass


@pytest.mark.parametrize(("call", "kind", "seed"), [
    (lambda: ct.model_recovery(EXP, ["rw", "rw-pm"], reps=2, seed=5), "ModelRecoveryRequest", 5),
    (lambda: ct.sbc(EXP, "rw-pm", reps=2, seed=6), "SbcRequest", 6),
    (lambda: ct.power(EXP, "rw-pm", effect={"optimism_bias": 0.2}, sims=2, seed=7), "PowerRequest", 7),
    (lambda: ct.metric_validity(EXP, metric="learning_rate", agent="rw", parameter="alpha", values=[0.2, 0.5],
                                reps=2, seed=8), "MetricValidityRequest", 8),
    (lambda: ct.study(EXP, "recovery:1", reps=2, seed=9), "DeclaredStudyRequest", 9),
])
def test_every_study_hands_its_request_to_the_study_it_runs(monkeypatch, call, kind: str, seed: int) -> None:  # type: ignore[no-untyped-def]
    seen: dict[str, Any] = {}

    def run_spec(spec: Any, **kwargs: Any) -> None:
        seen.update(kwargs)
        raise _Called

    monkeypatch.setattr("cogtestbed.api.studies.run_spec", run_spec)
    with pytest.raises(_Called):
        call()
    assert type(seen["request"]).__name__ == kind and seen["request"].run.seed == seed
    assert request_block(seen["request"])["run"]["seed"] == seed


def test_each_spelling_of_a_studys_options_records_one_block() -> None:
    """What the command line parses (text, ``NAME=VALUE`` items) and what Python takes (numbers,
    lists, mappings) record the same block."""
    from cogtestbed.studies.study_options import MetricValidityRequest, PowerRequest, RecoverRequest

    cli = build(PowerRequest, {"target": "rw-pm", "effect": "optimism_bias=0.2", "subjects": "10,20",
                               "design": ["visits_per_casino=2"], "base": ["alpha=0.3"], "seed": 4})
    api = build(PowerRequest, {"target": "rw-pm", "effect": {"optimism_bias": 0.2}, "subjects": (10, 20),
                               "design": {"visits_per_casino": 2}, "base": {"alpha": 0.3}, "seed": 4})
    block = request_block(api)
    assert request_block(cli) == block
    assert (block["goal"]["effect"], block["sizes"]["subjects"], block["sizes"]["design"],
            block["subjects_fit"]["base"], block["run"]["seed"], block["sizes"]["sims"]) == (
        ["optimism_bias=0.2"], "10,20", ["visits_per_casino=2"], ["alpha=0.3"], 4, 200)
    recover = [build(RecoverRequest, {"model": "rw", "subjects": s, "runs": r, "fix": f})
               for s, r, f in (("8", "2", ["beta=5"]), (8, [2], {"beta": 5}))]
    assert request_block(recover[0]) == request_block(recover[1])
    assert request_block(recover[1])["sizes"]["subjects"] == "8" and request_block(recover[1])["fit"]["fix"] == [
        "beta=5"]
    validity = [build(MetricValidityRequest, {"experiment": EXP, "metric": "m", "agent": "rw", "parameter": "alpha",
                                              "values": v}) for v in ("0.2,0.5", [0.2, 0.5])]
    assert request_block(validity[0]) == request_block(validity[1]) and request_block(validity[1])["values"] == \
        "0.2,0.5"


def _run_json(path: Path) -> dict[str, Any]:
    return json.loads((path / "run.json").read_text())  # type: ignore[no-any-return]


def test_a_run_folder_records_its_request_and_resumes_with_another(tmp_path: Path) -> None:
    """``run.json``'s ``request``: the same from ``ct.run`` and ``cogtestbed run``; not part of the run's
    identity, so ``--resume`` (another request: ``resume`` set) is taken and records the new one."""
    common = ["--llm", "hf:tiny-random", "--subjects", "1", "--seed", "3", "--design", "visits_per_casino=2"]
    assert run_cli(["run", EXP, *common, "-o", str(tmp_path / "cli")]) == 0
    ct.run(EXP, llm="hf:tiny-random", subjects=1, seed=3, design={"visits_per_casino": 2}, output=tmp_path / "api")
    cli, api = (_run_json(tmp_path / n) for n in ("cli", "api"))
    assert _without_output(cli["request"]) == _without_output(api["request"])
    block = api["request"]
    assert (block["experiment"], block["llms"]["llm"], block["sessions"]["seed"], block["sessions"]["subjects"],
            block["sessions"]["design"], block["budget"]["resume"]) == (
        EXP, ["hf:tiny-random"], 3, 1, ["visits_per_casino=2"], False)
    assert block["output"] == str(tmp_path / "api") and api["status"] == "complete"
    assert run_cli(["run", EXP, *common, "-o", str(tmp_path / "api"), "--resume"]) == 0
    again = _run_json(tmp_path / "api")
    assert again["request"]["budget"]["resume"] is True and again["config"] == api["config"]
    assert again["status"] == "complete"


def test_a_runs_base_url_is_recorded_without_its_credentials() -> None:
    from cogtestbed.runs.run_options import RunRequest

    req = build(RunRequest, {"output": "o", "base_url": "http://user:secret@localhost:8000/v1?key=x"})
    assert request_block(req)["llms"]["base_url"] == "http://localhost:8000/v1"


def test_simulates_design_is_typed_without_importing_an_environment() -> None:
    """``ct.simulate(design=...)``: a design object, a mapping of fields or ``NAME=VALUE`` items
    (``Design`` imported for type checking only, resolved by name at the door)."""
    import inspect

    assert inspect.signature(ct.simulate).parameters["design"].annotation == \
        "Design | Mapping[str, Any] | Sequence[str] | None"
    with pytest.raises(ct.InputError, match="design must be Design or a mapping"):
        ct.simulate(EXP, "rw-pm", design=3)
    exp = ct.get_experiment(EXP)
    fixed = ct.simulate(EXP, "rw-pm", subjects=2, design=exp.design_cls(visits_per_casino=2))
    assert len(fixed) == len(ct.simulate(EXP, "rw-pm", subjects=2, design=["visits_per_casino=2"])) == 16


def test_a_fits_summary_records_its_request_the_same_from_ct_and_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``cogtestbed fit -o DIR`` / ``ct.fit_and_save``: ``summary.json``'s ``request`` (and the printed ``--json``)."""
    table = tmp_path / "t.parquet"
    ct.simulate(EXP, "rw-pm", subjects=2, seed=1, design={"visits_per_casino": 2}, output=table)
    assert run_cli(["fit", "rw-pm", str(table), "-o", str(tmp_path / "cli"), "--method", "mle", "--seed", "5",
                    "--unit", "subject", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    returned = ct.fit_and_save(None, table, "rw-pm", output=tmp_path / "api", method="mle", seed=5, unit="subject")
    cli, api = (json.loads((tmp_path / n / "summary.json").read_text())["request"] for n in ("cli", "api"))
    assert printed["request"] == cli and returned["request"] == api
    assert _without_output(cli) == _without_output(api)
    assert (api["model"], api["path"], api["output"], api["terms"]["method"], api["units"]["unit"], api["force"]) == (
        "rw-pm", str(table), str(tmp_path / "api"), "mle", "subject", False)
    assert "sampling" not in api and "posterior" not in api  # draws, chains, seed: no part of an MLE fit
    assert "as_json" not in cli


def test_a_dry_runs_estimate_records_its_request_the_same_from_ct_and_the_command_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    common = {"base_url": "http://127.0.0.1:9/v1", "allow_unpriced": True, "subjects": 2, "seed": 4,
              "output": "unused", "dry_run": True}
    assert run_cli(["run", EXP, "--llm", "openai:model-a", "--base-url", "http://127.0.0.1:9/v1", "--allow-unpriced",
                    "--subjects", "2", "--seed", "4", "-o", "unused", "--dry-run"]) == 0
    printed = json.loads(capsys.readouterr().out)
    returned = ct.run(EXP, llm="openai:model-a", **common)
    block = returned["request"]
    assert printed["request"] == block and printed["calls"] == returned["calls"] > 0
    assert (block["llms"]["llm"], block["sessions"]["subjects"], block["sessions"]["seed"], block["budget"]["dry_run"],
            block["llms"]["base_url"]) == (["openai:model-a"], 2, 4, True, "http://127.0.0.1:9/v1")


def test_paired_json_records_the_request_of_its_runs(tmp_path: Path) -> None:
    """``paired.json`` of ``run --llm A --llm B``: the same block as each of its two runs' ``run.json``
    (whose equality from ``ct.run`` and ``cogtestbed run`` is tested above), from the command line here."""
    llms = ["hf:tiny-random", "hf:tiny-random-chat"]
    assert run_cli(["run", EXP, *(a for m in llms for a in ("--llm", m)), "--subjects", "1", "--seed", "6",
                    "--design", "visits_per_casino=2", "-o", str(tmp_path / "pair")]) == 0
    block = json.loads((tmp_path / "pair" / "paired.json").read_text())["request"]
    assert [_run_json(d)["request"] for d in sorted((tmp_path / "pair").glob("[12]-*"))] == [block, block]
    assert (block["llms"]["llm"], block["sessions"]["seed"], block["sessions"]["subjects"],
            block["sessions"]["design"], block["output"]) == (
        llms, 6, 1, ["visits_per_casino=2"], str(tmp_path / "pair"))


@pytest.mark.parametrize("kind", ["precision", "adaptive"])
def test_a_precision_or_adaptive_plans_file_records_its_request(
        monkeypatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:  # type: ignore[no-untyped-def]
    """``precision.json`` (``plan --precision``) and ``adaptive.json`` (``plan --adaptive``): the plan's
    ``request`` beside its payload, the same from ``ct.plan(...).save`` and ``plan -o``.  The planning is
    replaced by a stub payload (the block does not depend on it; real plans are tested in test_sizes.py
    and test_adaptive.py)."""
    from cogtestbed.planning.kinds import Planned

    stub = Planned({"chosen": {"stub": True}}, "trials")
    if kind == "precision":
        monkeypatch.setattr("cogtestbed.planning.request.run_precision", lambda *a, **k: stub)
        exp, opts = EXP, {"model": "rw-pm", "precision": "optimism_bias=0.2", "subjects": "1:4"}
        api_opts: dict[str, Any] = {**opts, "precision": {"optimism_bias": 0.2}, "subjects": (1, 4)}
    else:
        monkeypatch.setattr("cogtestbed.planning.kinds.adaptive.adaptive_plan.run_adaptive", lambda *a, **k: stub)
        exp, opts = "temporal-discounting", {"adaptive": "k", "precision": "k=1.0", "trials": "1:12"}
        api_opts = {**opts, "adaptive": ["k"]}
    args = [a for k, v in opts.items() for a in ("--" + k, v)]
    assert run_cli(["plan", exp, *args, "--seed", "13", "--json", "-o", str(tmp_path / "cli")]) == 0
    printed = json.loads(capsys.readouterr().out)
    ct.plan(exp, **api_opts, seed=13).save(tmp_path / "api")
    cli, api = (json.loads((tmp_path / n / f"{kind}.json").read_text()) for n in ("cli", "api"))
    assert printed["request"] == cli["request"] == api["request"] and api["chosen"] == {"stub": True}
    block = api["request"]
    assert (block["experiment"], block["seed"], block["target"]["precision"]) == (
        exp, 13, ["optimism_bias=0.2"] if kind == "precision" else ["k=1.0"])
    if kind == "precision":
        assert block["sizes"]["subjects"] == "1:4" and block["target"]["model"] == "rw-pm"
    else:
        assert block["adaptive_sessions"] == {"adaptive": "k", "adaptive_sims": 200} and block["sizes"]["trials"] == \
            "1:12"

"""What ``import cogtestbed as ct`` shows (issue 51, item 4): the public functions and their result
types, no import helper; the errors grouped under ``ct.errors`` (each still ``ct.NAME`` and, for the
base kinds, ``cogtestbed.errors.NAME``); one argument order across ``fit``, ``fit_and_save``,
``recover``, ``model_recovery`` and ``power`` (experiment, data, model), the earlier model-first
calls still working."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import cogtestbed as ct
import cogtestbed.api.studies as studies

EXP = "instrumental-learning"
LEAKED = {"Any", "TYPE_CHECKING", "annotations", "importlib", "sys", "types", "typing"}


def test_dir_shows_public_names_only() -> None:
    shown = set(dir(ct))
    assert not shown & LEAKED
    assert not {n for n in shown if n.startswith("_") and not n.startswith("__")}
    assert "errors" in shown and "InputError" not in shown and "RunDirError" not in shown
    assert set(ct.__all__) <= shown
    for name in ct.__all__:
        assert getattr(ct, name) is not None


def test_the_result_types_are_exported() -> None:
    def returned(func: Any) -> str:
        return str(inspect.signature(func).return_annotation)

    assert "Study" in returned(ct.recover) and inspect.isclass(ct.Study)
    assert "BayesFit" in returned(ct.fit) and ct.BayesFit.__name__ == "BayesFit"
    assert returned(ct.check) == "ConformanceReport" and ct.ConformanceReport.__name__ == "ConformanceReport"
    assert {"experiment", "check", "status"} <= set(ct.CheckResult.__dataclass_fields__)
    assert {"trials", "calls", "status", "stats"} <= set(ct.RunResult.__dataclass_fields__)
    assert "Figures" in returned(ct.plot_recovery) and "Plan" in returned(ct.plan)
    assert "MetricsReport" in returned(ct.metrics) and "LookReplay" in returned(ct.looks)


def test_the_errors_are_grouped_and_still_importable_as_before() -> None:
    import cogtestbed.errors as base
    from cogtestbed import InputError
    from cogtestbed.errors import DataError, outside_stacklevel

    assert ct.errors.InputError is ct.InputError is InputError
    assert ct.errors.DataError is DataError and callable(outside_stacklevel)
    assert ct.errors.RunDirError is ct.RunDirError and issubclass(ct.errors.RunDirError, ct.errors.CogtestbedError)
    assert len(ct.errors.__all__) >= 24 and set(ct.errors.__all__) == set(ct.errors.ERRORS)  # 24 at issue 51
    for name in ct.errors.__all__:
        error = getattr(ct.errors, name)
        assert issubclass(error, ct.errors.CogtestbedError), name
        assert getattr(ct, name) is error
    assert base.InputError is InputError and base.outside_stacklevel is outside_stacklevel
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        ct.errors.Nope  # noqa: B018
    with pytest.raises(ct.errors.UnknownNameError, match="no model"):
        ct.recover(EXP, "no model")


@pytest.fixture
def specs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The study specs ``recover``/``model_recovery``/``power`` build (nothing is run)."""
    seen: list[Any] = []
    monkeypatch.setattr(studies, "run_spec", lambda spec, **_: seen.append(spec))
    return seen


def test_one_argument_order_and_the_earlier_forms(specs: list[Any]) -> None:
    calls = [  # (current form, earlier form): the same study
        (lambda: ct.recover(EXP, "rw-pm", reps=2), lambda: ct.recover("rw-pm", reps=2)),
        (lambda: ct.recover(None, "rw-pm", reps=2), lambda: ct.recover("rw-pm", experiment=EXP, reps=2)),
        (lambda: ct.recover(model="rw-pm", reps=2), lambda: ct.recover(model="rw-pm", experiment=None, reps=2)),
        (lambda: ct.model_recovery(EXP, ["rw", "rw-pm"], reps=2),
         lambda: ct.model_recovery(["rw", "rw-pm"], experiment=EXP, reps=2)),
        (lambda: ct.power(EXP, "rw-pm", effect={"optimism_bias": 0.2}, sims=2),
         lambda: ct.power("rw-pm", effect={"optimism_bias": 0.2}, sims=2)),
        (lambda: ct.power(EXP, "rw-pm", effect={"optimism_bias": 0.2}, sims=2),
         lambda: ct.power("rw-pm", effect={"optimism_bias": 0.2}, experiment=EXP, sims=2)),
    ]
    for current, earlier in calls:
        current()
        earlier()
        now, before = specs[-2:]
        assert now == before and now.experiment == EXP
    assert [s.kind for s in specs[::2]] == ["recovery", "recovery", "recovery", "model-recovery", "power", "power"]
    assert specs[0].models == ("rw-pm",) and specs[6].models == ("rw", "rw-pm")
    ct.sbc(EXP, "rw-pm", reps=2)
    ct.sbc("rw-pm", experiment=EXP, reps=2)
    assert specs[-1] == specs[-2] and specs[-1].kind == "sbc"
    for name in ("fit", "fit_and_save", "recover", "model_recovery", "power", "sbc", "form_study"):
        assert next(iter(inspect.signature(getattr(ct, name)).parameters)) == "experiment", name


def test_a_wrong_call_is_still_one_typed_line(specs: list[Any]) -> None:
    with pytest.raises(ct.InputError, match=r"recover\(\).*missing"):
        ct.recover()
    with pytest.raises(ct.InputError, match="model"):
        ct.recover(EXP, 3)
    assert specs == []


def test_fit_and_fit_and_save_in_both_orders(tmp_path: Path) -> None:
    trials = ct.simulate(EXP, "rw-pm", subjects=2, seed=1)
    table = tmp_path / "t.parquet"
    trials.to_parquet(table)
    keyword = ct.fit(EXP, trials, model="rw-pm")
    positional = ct.fit(EXP, trials, "rw-pm")
    assert keyword["alpha_pos"].tolist() == positional["alpha_pos"].tolist()
    now = ct.fit_and_save(EXP, table, "rw-pm", output=tmp_path / "now", method="mle")
    before = ct.fit_and_save("rw-pm", table, output=tmp_path / "before", method="mle", experiment=EXP)
    inferred = ct.fit_and_save("rw-pm", path=table, output=tmp_path / "inferred", method="mle")
    assert now["model"] == before["model"] == inferred["model"] == "rw-pm"
    assert now["mean"] == before["mean"] == inferred["mean"] and set(now["mean"]) == {"alpha_pos", "alpha_neg", "beta"}


def test_form_study_in_both_orders(monkeypatch: pytest.MonkeyPatch) -> None:
    import cogtestbed.studies.form_studies as form_studies

    seen: list[Any] = []
    monkeypatch.setattr(form_studies, "run_form_study", lambda spec, reps, seed: seen.append(spec))
    monkeypatch.setattr(form_studies, "summarise_form_study", lambda spec, result: {})
    now = ct.form_study(EXP, "rw-pm", forms="0,1", subjects=8, reps=1)
    before = ct.form_study("rw-pm", forms="0,1", experiment=EXP, subjects=8, reps=1)
    inferred = ct.form_study("rw-pm", forms="0,1", subjects=8, reps=1)
    assert now == before == inferred and now["experiment"] == EXP and now["model"] == "rw-pm"
    assert seen[0] == seen[1] == seen[2]

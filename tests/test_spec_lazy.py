"""Lazy pieces of an experiment spec: the environment and the agents are imported on first access,
and the declaration is checked against them then; the trial table's schema needs neither."""

from __future__ import annotations

import dataclasses
import sys
import types
from typing import Any

import pytest

from cogtestbed.experiments.spec import Lazy, lazy
from cogtestbed.registry import get_experiment

PROBE = "cogtestbed_lazy_probe"


def _probe_module(monkeypatch: pytest.MonkeyPatch, **attributes: Any) -> None:
    module = types.ModuleType(PROBE)
    for name, value in attributes.items():
        setattr(module, name, value)
    monkeypatch.setitem(sys.modules, PROBE, module)


def _lazy_spec(**changes: Any) -> Any:
    base = get_experiment("instrumental-learning")
    return dataclasses.replace(base, **{"env_cls": lazy(f"{PROBE}:Env"), "agents": lazy(f"{PROBE}:AGENTS"),
                                        **changes})


def test_lazy_pieces_are_imported_on_first_access(monkeypatch: pytest.MonkeyPatch) -> None:
    real = get_experiment("instrumental-learning")
    spec = _lazy_spec()  # the probe module does not exist yet: declaring imports nothing
    assert spec.has_lazy_pieces
    assert spec.schema is real.table_schema  # the schema is read without the environment
    _probe_module(monkeypatch, Env=real.env_cls, AGENTS=dict(real.agents))
    assert spec.agents == dict(real.agents)
    assert spec.env_cls is real.env_cls
    assert not spec.has_lazy_pieces


def test_an_inconsistency_with_a_lazy_piece_is_reported_on_every_access(monkeypatch: pytest.MonkeyPatch) -> None:
    real = get_experiment("instrumental-learning")
    agents = {k: v for k, v in real.agents.items() if k != "rw-pm"}  # a generator names rw-pm
    _probe_module(monkeypatch, Env=real.env_cls, AGENTS=agents)
    spec = _lazy_spec()
    for _ in range(2):
        with pytest.raises(ValueError, match="generator of 'rw-pm' names unknown agent 'rw-pm'"):
            _ = spec.env_cls
    assert spec.has_lazy_pieces
    assert "generator of 'rw-pm' names unknown agent 'rw-pm'" in spec.problems()


def test_a_schema_other_than_the_environments_is_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    real = get_experiment("instrumental-learning")
    other = get_experiment("horizon").schema
    _probe_module(monkeypatch, Env=real.env_cls, AGENTS=dict(real.agents))
    spec = _lazy_spec(table_schema=other)
    with pytest.raises(ValueError, match="table_schema is not the spec's table_schema"):
        _ = spec.agents


def test_a_reference_names_module_and_attribute() -> None:
    with pytest.raises(ValueError, match="'package.module:attribute'"):
        lazy("cogtestbed.tables.horizon")
    with pytest.raises(ImportError, match="has no 'NOPE'"):
        Lazy("cogtestbed.tables.horizon:NOPE").load()
    with pytest.raises(ImportError, match="cannot import 'cogtestbed.no_such_module:X'"):
        Lazy("cogtestbed.no_such_module:X").load()
    assert Lazy("cogtestbed.tables.horizon:SCHEMA").load() is get_experiment("horizon").schema

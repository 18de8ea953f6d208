"""Conformance checks of an experiment's data and metrics (registered in
:data:`cogtestbed.conformance.suite.CHECKS`): the importers load published files into
schema-valid tables the metrics run on (:func:`check_importers`), and the metrics return a
conforming :class:`~cogtestbed.metrics_result.MetricsResult` on every agent's table
(:func:`check_metrics_result`).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from cogtestbed.conformance.config import DATA_DIR_ENV, CheckConfig
from cogtestbed.conformance.edge_checks import sniffed_files
from cogtestbed.conformance.harness import agent_names, fail, small_design
from cogtestbed.experiments.spec import ExperimentSpec
from cogtestbed.metrics_result import headline_problems, metrics_result_problems
from cogtestbed.study_errors import NotApplicable

#: Subjects (CogBench runs) of an imported file whose metrics the quick importer check computes.
QUICK_IMPORT_UNITS = 2


def check_importers(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Each importer recognises published files, loads them into schema-valid trial tables the
    metrics run on, and does not claim a plain trial-table CSV."""
    from cogtestbed.registry import validate_table
    from cogtestbed.schema import TrialTableError
    from cogtestbed.simulation import simulate

    if not spec.importers:
        raise NotApplicable(f"{spec.name} declares no importers")
    root = config.resolved_data_dir()
    if root is None or not root.is_dir():
        raise NotApplicable(f"no published data directory (pass data_dir or set ${DATA_DIR_ENV})")
    problems: list[str] = []
    plain = simulate(spec, agent_names(spec)[0], 1, config.seed, design=small_design(spec, config))
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "trials.csv"
        plain.to_csv(csv, index=False)
        for source in sorted(spec.importers):
            with contextlib.suppress(Exception):
                if spec.importer(source).sniff(csv):
                    problems.append(f"importer {source!r} claims a plain trial-table CSV (sniff too lenient)")
    for source in sorted(spec.importers):
        files = sniffed_files(spec, source, root, problems)
        for path in sorted(files, key=lambda p: p.stat().st_size)[: 1 if config.quick else None]:
            where = f"importer {source!r} on {path.relative_to(root)}"
            try:
                # published files as their source wrote them: a run judging a condition again is its next
                # session (the default refusal is check_importer_conflicts')
                table = _load_published(spec.importer(source), path)
                validate_table(table)
            except (TrialTableError, ValueError, KeyError) as exc:
                problems.append(f"{where}: {type(exc).__name__}: {exc}")
                continue
            if not table["experiment"].astype(str).eq(spec.name).all():
                problems.append(f"{where}: experiment column is not {spec.name!r}")
            if not table.equals(_load_published(spec.importer(source), path)):
                problems.append(f"{where}: two loads of the same file differ")
            if config.quick:  # the metrics of the first QUICK_IMPORT_UNITS subjects (runs) only
                table = table[table["subject"].isin(table["subject"].unique()[:QUICK_IMPORT_UNITS])]
            problems += [f"{where}: {p}" for p in _metrics_problems(spec, table, require_finite=False)]
    fail(problems, f"{spec.name}: importers do not round-trip")


def _load_published(importer: Any, path: Path) -> pd.DataFrame:
    """A published file through ``importer``, with ``sessions="split"`` where it has no trial key
    (CogBench's claude-1.csv and claude-2.csv append runs twice)."""
    return importer.load_as(path, "split" if importer.repeat_key else None)


def _metrics_problems(spec: ExperimentSpec, table: pd.DataFrame, require_finite: bool = True,
                      options: Mapping[str, Any] | None = None) -> list[str]:
    try:
        result = spec.metrics.fn(table, **(options or {}))
    except Exception as exc:  # noqa: BLE001 - a crash is the finding
        return [f"metrics raised {type(exc).__name__}: {exc}"]
    problems = metrics_result_problems(result, spec.metrics.unit)
    if problems:
        return problems
    missing = [k for k in spec.metrics.headline if k not in result["metrics"]]
    problems += [f"headline key {k!r} missing from result['metrics']" for k in missing]
    for k in spec.metrics.headline:
        if k in result["metrics"]:
            problems += headline_problems(k, result["metrics"][k], require_finite)
    if not result[spec.metrics.unit]:
        problems.append(f"result[{spec.metrics.unit!r}] is empty")
    n_bad = int((~table["valid"].astype(bool)).sum())
    if n_bad == 0 and result["n_invalid"] != 0:
        problems.append(f"n_invalid is {result['n_invalid']} on a table without invalid trials")
    if n_bad > 0 and result["n_invalid"] == 0:
        problems.append(f"n_invalid is 0 on a table with {n_bad} invalid trials")
    return problems


def check_metrics_result(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The metrics return the typed MetricsResult (declared unit key, n_invalid, flags) with every
    headline key present and typed (finite numbers and bools) on the default design, for every agent's simulated table
    (quick mode: the agents the spec's generators and studies name)."""
    from cogtestbed.simulation import simulate

    design = spec.design_cls()
    problems = []
    for agent in spec.declared_agents if config.quick else agent_names(spec):
        table = simulate(spec, agent, config.n_subjects, config.seed, design=design)
        options = spec.metrics.smoke_options if config.quick else None
        problems += [f"agent {agent!r}: {p}" for p in _metrics_problems(spec, table, options=options)]
    fail(problems, f"{spec.name}: the metrics do not return a conforming MetricsResult")

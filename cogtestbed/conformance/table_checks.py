"""Conformance checks on an experiment's trial tables and what its metrics make of them (registered
in :data:`cogtestbed.conformance.suite.CHECKS`):

* :func:`check_schema_fast_path`: the schema's vectorised check (``TrialSchema.conforms``, which a
  valid table takes without importing pandera) decides as pandera does, on a simulated table and
  on edits of it that break each kind of declaration;
* :func:`check_permuted_table`: the metrics of a table and of the same rows in another order are
  identical to the last bit (every metric sorts by its declared keys or is seeded per unit, never
  per row position);
* :func:`check_constant_answers`: answers without variation (the table's, one subject's) are flagged,
  the metrics they do not identify are null with a reason and every model's fit of them is null;
* :func:`check_all_invalid_metrics`: a table whose every answer is invalid yields no number: every
  headline metric is ``null``, named with a reason in ``null_reasons`` and flagged in ``flags``,
  never 0, and ``n_invalid`` counts every row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cogtestbed.study_errors import ConformanceError

if TYPE_CHECKING:
    from cogtestbed.conformance.config import CheckConfig
    from cogtestbed.experiments.spec import ExperimentSpec

#: Seed of the row permutation of :func:`check_permuted_table`.
PERMUTATION_SEED = 20261123


def canonical_json(obj: Any) -> str:
    """``obj`` as JSON with sorted keys, every float by its ``repr`` (the last bit shows) and
    non-finite numbers spelled out (so two results compare equal only if they are equal)."""

    def norm(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        if isinstance(v, np.ndarray):
            return [norm(x) for x in v.tolist()]
        return _norm_scalar(v)

    return json.dumps(norm(obj), sort_keys=True, default=str)


def _norm_scalar(v: Any) -> Any:
    """A scalar as :func:`canonical_json` compares it: a plain bool or int, a float by its ``repr``."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return repr(f) if math.isfinite(f) else f"nonfinite:{f}"
    if isinstance(v, np.integer):
        return int(v)
    return v


def _first_difference(a: Any, b: Any, where: str = "result") -> str:
    """Where two canonical results first differ (for the failure message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _first_difference(a.get(k), b.get(k), f"{where}[{k!r}]")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return f"{where}: {str(a)[:120]} != {str(b)[:120]}"


def permuted(table: pd.DataFrame, seed: int = PERMUTATION_SEED) -> pd.DataFrame:
    """The rows of ``table`` in a seeded random order (index reset)."""
    order = np.random.default_rng(seed).permutation(len(table))
    return table.take(order).reset_index(drop=True)


def _smoke_table(spec: ExperimentSpec, config: CheckConfig) -> pd.DataFrame:
    from cogtestbed.simulation import simulate

    return simulate(spec, spec.declared_agents[0], config.n_subjects, config.seed, design=spec.design_cls())


def _first_numeric(df: pd.DataFrame, col: str) -> None:
    rows = df.index[df["valid"].to_numpy(dtype=bool) & df[col].notna().to_numpy()]
    df.loc[rows[:1], col] = -1e9  # far outside every declared range


def _float_without(df: pd.DataFrame, col: str, row: int, value: float = np.nan) -> None:
    df[col] = df[col].astype("float64").where(df.index != row, value)


#: Edits of a valid table, each breaking one kind of declaration (:func:`check_schema_fast_path`).
SCHEMA_EDITS: dict[str, Callable[[pd.DataFrame], None]] = {
    "reward out of range": lambda df: _first_numeric(df, "reward"),
    "action out of range": lambda df: _first_numeric(df, "action"),
    "missing trial": lambda df: _float_without(df, "trial", 0),
    "valid answer without action": lambda df: _float_without(df, "action", 0),
    "text in the reward": lambda df: df.__setitem__("reward", df["reward"].astype(str)),
    "no valid column": lambda df: df.__delitem__("valid"),
    "another experiment": lambda df: df.__setitem__("experiment", "nope"),
    "missing experiment": lambda df: df.__setitem__("experiment", df["experiment"].where(df.index != 0)),
    "negative session": lambda df: df.__setitem__("session", df["session"] - 5),
    "infinite reward": lambda df: _float_without(df, "reward", 1, np.inf),
}
#: Edits a table of a task that declares no range may pass (both checks must still agree).
RANGE_EDITS = ("reward out of range", "action out of range")


def _pandera_passes(spec: ExperimentSpec, df: pd.DataFrame) -> bool:
    import pandera.pandas as pa

    try:
        spec.schema.pandera(spec.name).validate(df, lazy=True)
    except pa.errors.SchemaErrors:
        return False
    return True


def check_schema_fast_path(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The schema's fast check decides as pandera does: a simulated table passes both, each edit of
    :data:`SCHEMA_EDITS` gets the same verdict from both and fails them (a range edit may pass both)."""
    table = _smoke_table(spec, config)
    problems = []
    for edit, change in {"unchanged": lambda df: None, **SCHEMA_EDITS}.items():
        df = table.copy()
        change(df)
        df = df.reset_index(drop=True)
        try:
            fast = spec.schema.conforms(df, spec.name)
        except Exception:  # noqa: BLE001 - the table check hands such a table to pandera
            fast = False
        slow = _pandera_passes(spec, df)
        if fast != slow:
            problems.append(f"{edit}: the fast check says {'passes' if fast else 'fails'}, pandera "
                            f"{'passes' if slow else 'fails'}")
        elif fast != (edit == "unchanged") and edit not in RANGE_EDITS:
            problems.append(f"{edit}: the table {'passes' if fast else 'fails'} both checks")
    if problems:
        raise ConformanceError(f"{spec.name}: schema fast path: " + "; ".join(problems))


def check_permuted_table(spec: ExperimentSpec, config: CheckConfig) -> None:
    """The metrics of a simulated table and of its rows shuffled are identical to the last bit (full
    mode: every model's maximum-likelihood fit too)."""
    table = _smoke_table(spec, config)
    options = dict(spec.metrics.smoke_options)
    a = json.loads(canonical_json(spec.metrics(table, **options)))
    b = json.loads(canonical_json(spec.metrics(permuted(table), **options)))
    if a != b:
        raise ConformanceError(f"{spec.name}: the metrics depend on row order: {_first_difference(a, b)}")
    if config.quick:
        return
    for name in sorted(spec.models or ()):
        model = spec.model(name)
        try:
            fa = json.loads(canonical_json(vars(model.fit_mle(table))))
        except Exception:  # noqa: BLE001 - a model that cannot fit this table is another check's finding
            continue
        fb = json.loads(canonical_json(vars(model.fit_mle(permuted(table)))))
        if fa != fb:
            raise ConformanceError(f"{spec.name}: the {name} fit depends on row order: {_first_difference(fa, fb)}")


def all_invalid(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every answer invalid: ``valid`` False, no action (what a run whose every
    answer failed to parse records)."""
    out = table.copy()
    out["valid"] = False
    out["action"] = pd.array([pd.NA] * len(out), dtype=out["action"].dtype
                             if isinstance(out["action"].dtype, pd.api.extensions.ExtensionDtype) else "Float64")
    return out


def null_problems(result: Mapping[str, Any], headline: tuple[str, ...], n_rows: int) -> list[str]:
    """Why ``result`` (metrics of a table without one valid answer) reports a number (empty: it does not)."""
    problems = []
    metrics = result.get("metrics", {})
    reasons = result.get("null_reasons") or {}

    def leaves(key: str, value: Any) -> list[tuple[str, Any]]:
        if isinstance(value, Mapping):
            return [leaf for k, v in value.items() for leaf in leaves(f"{key}.{k}", v)]
        return [(key, value)]

    for key in headline or tuple(metrics):
        for name, value in leaves(key, metrics.get(key)):
            if value is not None:
                problems.append(f"headline {name!r} is {value!r} from a table without a valid answer")
        if key not in reasons:
            problems.append(f"headline {key!r} has no reason in result['null_reasons']")
    if not result.get("flags"):
        problems.append("no flag says that no answer was valid")
    if result.get("n_invalid") != n_rows:
        problems.append(f"n_invalid is {result.get('n_invalid')!r}, not the {n_rows} rows of the table")
    return problems


def checked_metrics(spec: ExperimentSpec, table: pd.DataFrame, what: str) -> Mapping[str, Any]:
    """The metrics (smoke options) of ``table``, a valid table of ``spec`` (a crash is a
    :class:`ConformanceError` naming ``what``)."""
    from cogtestbed.registry import validate_table

    validate_table(table, spec.name, spec=spec)
    try:
        return spec.metrics(table, **dict(spec.metrics.smoke_options))
    except Exception as exc:  # noqa: BLE001 - a crash is the finding
        raise ConformanceError(f"{spec.name}: metrics of {what} raised {type(exc).__name__}: "
                               f"{str(exc)[:200]}") from None


def check_all_invalid_metrics(spec: ExperimentSpec, config: CheckConfig) -> None:
    """A table of invalid answers only gives null headline metrics with reasons and a flag, never a number."""

    table = all_invalid(_smoke_table(spec, config))
    result = checked_metrics(spec, table, "an all-invalid table")
    problems = null_problems(result, tuple(spec.metrics.headline), len(table))
    if problems:
        raise ConformanceError(f"{spec.name}: an all-invalid table gives numbers: " + "; ".join(problems[:6]))


# ----------------------------------------------------------------------------- degenerate answers
#: Subjects of the table :func:`check_constant_answers` edits: one made constant, one left as it is.
CONSTANT_SUBJECTS = 2


def constant_answers(table: pd.DataFrame, subjects: Any = None) -> pd.DataFrame:
    """``table`` with every valid answer (of ``subjects``; None: of every subject) replaced by the
    smallest valid answer of the table (what an LLM answering "100" to every query records; the
    smallest keeps every declared row rule such as pumps ≤ the balloon's maximum)."""
    out = table.copy()
    valid = out["valid"].fillna(False).to_numpy(dtype=bool)
    answer = out.loc[valid, "action"]
    from cogtestbed.schema import ID_COLUMNS

    copies = [c for c in out.columns
              if c not in ("action", *ID_COLUMNS) and _same_values(out.loc[valid, c], answer)]
    rows = valid if subjects is None else valid & out["subject"].isin(list(subjects)).to_numpy()
    for column in ("action", *copies):  # columns holding the answer again (BART's pumps, its reward) with it
        out.loc[rows, column] = answer.min()
    return out


def _same_values(a: pd.Series, b: pd.Series) -> bool:
    """Whether ``a`` equals ``b`` in most rows (a copy of the answer, or a reward paid as the answer;
    a flag column that happens to match 0/1 answers is none)."""
    if pd.api.types.is_bool_dtype(a.dtype) or not pd.api.types.is_numeric_dtype(a.dtype):
        return False
    try:
        return bool(np.mean(np.asarray(a.to_numpy() == b.to_numpy(), dtype=bool)) > 0.5)
    except (TypeError, ValueError):
        return False


def constant_answer_problems(spec: ExperimentSpec, result: Mapping[str, Any], whole_table: bool,
                             unit_ids: set[Any]) -> list[str]:
    """Why ``result`` (metrics of a table whose answers are constant: everywhere, or for the units
    ``unit_ids``) does not say so in a flag with null for :attr:`MetricsSpec.unidentified`."""
    from cogtestbed.no_data import DEGENERATE

    keys = spec.metrics.unidentified
    problems = []
    if not any(str(f).startswith(DEGENERATE) for f in result.get("flags", [])):
        problems.append(f"no flag starts with {DEGENERATE!r}: {result.get('flags')}")
    if whole_table:
        reasons = result.get("null_reasons") or {}
        for key in keys:
            if key in result["metrics"] and result["metrics"][key] is not None:
                problems.append(f"metric {key!r} is {str(result['metrics'][key])[:60]}, not null")
            elif key in result["metrics"] and key not in reasons:
                problems.append(f"metric {key!r} is null without a reason in null_reasons")
    for row in result.get(spec.metrics.unit) or []:
        ident = row.get("subject", row.get("run"))
        if whole_table or ident in unit_ids:
            problems += [f"unit {ident!r}: {key!r} is {str(row[key])[:60]}, not null"
                         for key in keys if key in row and row[key] is not None]
    return problems


class _Sampled(Exception):
    """Raised in place of sampling a hierarchical model: the check only looks at what it is given."""


def hierarchical_constant_problems(model: Any, table: pd.DataFrame, whole: bool, constant: set[Any]) -> list[str]:
    """What the hierarchical fits get wrong (:func:`~cogtestbed.inference.hierarchical.on_identified_subjects`,
    nothing sampled) on ``table``, whose answers are constant for every subject (``whole``) or for
    the subjects ``constant``: the first must be refused, the second sampled without them."""
    from cogtestbed.inference.hierarchical import on_identified_subjects
    from cogtestbed.no_data import DegenerateAnswers

    if not getattr(model, "has_pymc", False):
        return []
    seen: list[set[Any]] = []

    def sample(kept: pd.DataFrame) -> Any:
        seen.append(set(kept["subject"].unique()))
        raise _Sampled

    try:
        on_identified_subjects(model, table, sample)
    except DegenerateAnswers:
        return [] if whole else [f"model {model.name!r}: a hierarchical fit is refused though other subjects vary"]
    except _Sampled:
        if whole:
            return [f"model {model.name!r}: a hierarchical fit samples answers that identify no model"]
        return [f"model {model.name!r}: a hierarchical fit samples constant subject(s) {sorted(seen[0] & constant)}"
                ] if seen[0] & constant else []
    return [f"model {model.name!r}: a hierarchical fit neither sampled nor refused"]


def _fit_estimates(spec: ExperimentSpec, name: str, table: Any) -> bool:
    """Whether model ``name``'s fit of ``table`` reports an estimate, or a null without a reason."""
    fits = spec.model(name).fit_identified(table)
    params = list(spec.model(name).parameters.names)
    return bool(fits["identified"].any() or fits[params].notna().any().any() or fits["null_reason"].isna().any())


def check_constant_answers(spec: ExperimentSpec, config: CheckConfig) -> None:
    """Answers without variation (a table's, one subject's) are flagged as degenerate, the metrics
    they do not identify (:attr:`MetricsSpec.unidentified`) are null with a reason, in the
    headline and in the unit's row, and every model's fit of them is null (``identified`` False,
    with the reason), never an estimate (:mod:`cogtestbed.no_data`); a hierarchical fit refuses
    the constant table and leaves the constant subject out (:func:`hierarchical_constant_problems`)."""
    from cogtestbed.simulation import simulate

    table = simulate(spec, spec.declared_agents[0], CONSTANT_SUBJECTS, config.seed, design=spec.design_cls())
    first = sorted(table["subject"].unique())[:1]
    problems: list[str] = []
    for what, edited, whole in (("every answer", constant_answers(table), True),
                                (f"subject {first[0]}'s answers", constant_answers(table, first), False)):
        result = checked_metrics(spec, edited, f"constant answers ({what})")
        problems += [f"{what} constant: {p}" for p in
                     constant_answer_problems(spec, result, whole, set(first))]
        for name in sorted(spec.models):
            problems += [f"{what} constant: {p}" for p in
                         hierarchical_constant_problems(spec.model(name), edited, whole, set(first))]
        problems += [f"{what} constant: model {name!r} reports an estimate (or no reason)"
                     for name in (sorted(spec.models) if whole else ()) if _fit_estimates(spec, name, edited)]
    if problems:
        raise ConformanceError(f"{spec.name}: constant answers: " + "; ".join(problems[:8]))

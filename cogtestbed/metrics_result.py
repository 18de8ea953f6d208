"""What every experiment's metrics function returns (:class:`MetricsResult`, built with
:func:`metrics_result`) and the keyword options it declares (:class:`MetricOption`).

A base module: the models under :mod:`cogtestbed.inference` build their results with it, and the
experiment spec (:mod:`cogtestbed.experiments.spec`) checks their shape with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, cast

import numpy as np

from cogtestbed.errors import InputError

#: The per-unit key of a metrics result: one row per simulated/LLM subject, or per CogBench run.
MetricsUnit = Literal["per_subject", "per_run"]


class MetricsResult(TypedDict, total=False):
    """What every experiment's metrics function returns (the same keys everywhere).

    ``metrics``: the headline values, named as the paper names them, typed so that a consumer of
    the JSON can flatten them into one row of columns: every leaf is a number or a bool (a test's
    ``reject``), mappings nest (:func:`headline_problems`); an interval is two leaves ``lo`` /
    ``hi``, an undefined value is ``None``, and everything else (strings, lists, per-cell tables)
    is detail under another key; ``per_subject`` or ``per_run`` (exactly one, as :attr:`MetricsSpec.unit`
    declares): one mapping per analysed unit; ``n_invalid``: trials excluded as invalid answers;
    ``flags``: human-readable warnings (non-convergence, separation, clipped values);
    ``null_reasons``: why each ``None`` headline is ``None`` (:mod:`cogtestbed.no_data`).  An
    experiment may add detail under other keys (the collider's per-scheme ``fits``, say); the
    other unit key never appears.  Build one with :func:`metrics_result`.
    """

    metrics: dict[str, Any]
    per_subject: list[dict[str, Any]]
    per_run: list[dict[str, Any]]
    n_invalid: int
    flags: list[str]
    null_reasons: dict[str, str]


class MetricsReport(MetricsResult, total=False):
    """What :func:`cogtestbed.metrics` returns: a plain ``dict`` typed as this (a
    :class:`MetricsResult`, with where it came from).  ``experiment``: the experiment's name;
    ``source``: ``trials`` or the importer that read the file; ``path``: the file (a table given
    as a DataFrame has none); ``options``: the metrics options used (where any was given);
    ``prompt_forms``: each prompt form's metrics and the between-form SDs (a table with a ``form``
    column).

    Attributes
    ----------
    metrics : dict
        Each metric over the table.
    per_run, per_subject : list of dict
        The metrics of each run or subject.
    n_invalid : int
        Invalid answers left out.
    flags : list of str
        What the metrics flag.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> trials = ct.simulate("instrumental-learning", "rw-pm", subjects=2, seed=1)
    >>> report = ct.metrics("instrumental-learning", trials)
    >>> report["experiment"], report["source"]
    ('instrumental-learning', 'table')
    """

    experiment: str
    source: str
    path: str
    options: dict[str, Any]
    prompt_forms: dict[str, Any]


#: The keys every :class:`MetricsResult` has besides its unit key.
METRICS_RESULT_KEYS: tuple[str, ...] = ("metrics", "n_invalid", "flags")
METRICS_UNITS: tuple[str, ...] = ("per_subject", "per_run")


def metrics_result(metrics: Mapping[str, Any], unit: MetricsUnit, rows: list[dict[str, Any]],
                   n_invalid: int, flags: list[str] | tuple[str, ...] = (), **detail: Any) -> MetricsResult:
    """A :class:`MetricsResult` with the unit key ``unit`` (``per_subject`` / ``per_run``)."""
    if unit not in METRICS_UNITS:
        raise InputError(f"unit must be one of {', '.join(METRICS_UNITS)}, got {unit!r}")
    out: dict[str, Any] = {"metrics": dict(metrics), unit: list(rows), "n_invalid": int(n_invalid),
                           "flags": [str(f) for f in flags]}
    out.update(detail)
    return cast(MetricsResult, out)


def metrics_result_problems(result: Any, unit: MetricsUnit) -> list[str]:
    """Why ``result`` is not a :class:`MetricsResult` with unit key ``unit`` (empty: it is)."""
    if not isinstance(result, Mapping):
        return [f"a metrics function must return a mapping, got {type(result).__name__}"]
    out = [f"missing key {k!r}" for k in (*METRICS_RESULT_KEYS, unit) if k not in result]
    other = next(u for u in METRICS_UNITS if u != unit)
    if other in result:
        out.append(f"has {other!r} but the experiment declares unit {unit!r}")
    if "metrics" in result and not isinstance(result["metrics"], Mapping):
        out.append(f"'metrics' must be a mapping, got {type(result['metrics']).__name__}")
    return out + _metrics_value_problems(result, unit)


def _metrics_value_problems(result: Mapping[str, Any], unit: MetricsUnit) -> list[str]:
    """Why the unit rows, ``n_invalid`` or ``flags`` of ``result`` are mistyped (empty: none is)."""
    out = []
    rows = result.get(unit)
    if unit in result and not (isinstance(rows, list) and all(isinstance(r, Mapping) for r in rows)):
        out.append(f"{unit!r} must be a list of mappings (one per unit)")
    n_invalid = result.get("n_invalid")
    if "n_invalid" in result and (isinstance(n_invalid, bool) or not isinstance(n_invalid, (int, np.integer))
                                  or n_invalid < 0):
        out.append(f"'n_invalid' must be a non-negative int, got {n_invalid!r}")
    flags = result.get("flags")
    if "flags" in result and not (isinstance(flags, list) and all(isinstance(f, str) for f in flags)):
        out.append(f"'flags' must be a list of strings, got {flags!r}")
    return out


def headline_problems(key: str, value: Any, require_finite: bool = True) -> list[str]:
    """Why the headline value ``value`` (of ``result["metrics"][key]``) is not typed as a
    headline (empty: it is): leaves are finite numbers or bools, mappings nest.  Without
    ``require_finite`` a leaf may be ``None`` or non-finite (an importer's real data may leave a
    metric undefined)."""
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in headline_problems(f"{key}.{k}", v, require_finite)]
    if isinstance(value, (bool, np.bool_)):
        return []
    if value is None and not require_finite:
        return []
    if not isinstance(value, (int, float, np.integer, np.floating)):
        return [f"headline {key!r} is not a number or bool: {value!r}"]
    return [] if np.isfinite(value) or not require_finite else [f"headline {key!r} is {value}"]


@dataclass(frozen=True)
class MetricOption:
    """A keyword option of an experiment's metrics function (``cogtestbed metrics … --NAME V``).

    Generic code passes ``NAME=value`` (converted by ``type``, checked against ``choices``) to the
    metrics function; an experiment declares the options it accepts.
    """

    name: str
    help: str
    default: Any = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] = str
    #: Bounds of a numeric option (inclusive): bins >= 2, a bootstrap >= 1 and at most what memory
    #: and time allow.  A number is always finite.
    low: float | None = None
    high: float | None = None

    @property
    def flag(self) -> str:
        return f"--{self.name.replace('_', '-')}"

    @property
    def field(self) -> str:
        """The option as a library message names it (`` `name` ``; the command line reads its :attr:`flag`)."""
        return f"`{self.name}`"

    def convert(self, raw: str) -> Any:
        if self.choices is not None and raw not in self.choices:
            raise InputError(f"{self.field} must be one of {', '.join(self.choices)}, got {raw!r}")
        try:
            value = self.type(raw)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"{self.field}: cannot read {raw!r}") from None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self._check_number(value, raw)
        return value

    def _check_number(self, value: float, raw: str) -> None:
        if not math.isfinite(value):
            raise InputError(f"{self.field} must be a finite number, got {raw!r}")
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            lo = "-inf" if self.low is None else f"{self.low:g}"
            hi = "inf" if self.high is None else f"{self.high:g}"
            raise InputError(f"{self.field} must lie in [{lo}, {hi}], got {raw}")


#: How a difference in a headline metric between two groups is tested (:class:`MetricComparison`).
ComparisonTest = Literal["welch", "z", "permutation", "none"]
COMPARISON_TESTS: tuple[str, ...] = ("welch", "z", "permutation", "none")


@dataclass(frozen=True)
class MetricComparison:
    """Whether and how a headline metric is compared between two groups (two LLMs, an LLM and a reference
    agent: ``plan --metric M --compare A B``, ``power --metric``), declared per metric on
    :attr:`cogtestbed.experiments.spec.MetricsSpec.comparisons` so a plan checks it before it simulates
    and ``cogtestbed list EXPERIMENT`` shows it.

    ``test``: ``welch`` (a Welch t-test on the metric's per-unit values, the metrics result's
    ``per_subject`` / ``per_run`` rows), ``z`` (a z-test on the two pooled estimates with their standard
    errors, ``{metric}_se`` or ``{metric}_ci``), ``permutation`` (a two-sided permutation test of the
    difference of the two groups' mean ``unit_statistic``: the metric computed on each unit's own rows,
    units exchanged between the groups; exact when the two groups' units are exchangeable under the null)
    or ``none`` (not comparable: ``reason`` says why).  ``reason``: the assumption of the test, or why
    there is none.
    """

    test: ComparisonTest
    reason: str = ""
    #: ``fn(table, **metrics options) -> {unit id: float}``: the metric of each unit (subject) on its own
    #: rows (NaN where they do not define it), from the whole table at once; required by ``permutation``.
    unit_statistic: Callable[..., Mapping[int, float]] | None = None

    def __post_init__(self) -> None:
        if self.test not in COMPARISON_TESTS:
            raise InputError(f"a metric comparison's test must be one of {', '.join(COMPARISON_TESTS)}, "
                             f"got {self.test!r}")
        if self.test == "permutation" and self.unit_statistic is None:
            raise InputError("a permutation comparison needs the metric's unit_statistic")
        if self.test == "none" and not self.reason:
            raise InputError("a metric that cannot be compared says why (reason)")

    @property
    def comparable(self) -> bool:
        """Whether a difference between two groups can be tested."""
        return self.test != "none"

    def to_dict(self) -> dict[str, Any]:
        """``{"comparable", "test", "reason"}`` (what ``list`` and ``plan.json`` show)."""
        return {"comparable": self.comparable, "test": self.test, "reason": self.reason}


#: The comparison of a headline metric no experiment declares otherwise: Welch on its per-unit values.
WELCH_PER_UNIT = MetricComparison("welch", "Welch t-test on the per-unit values (units independent within "
                                  "each group, means approximately normal)")
#: The comparison of a pooled estimate with a standard error.
Z_POOLED = MetricComparison("z", "z-test on the two pooled estimates with their standard errors (estimates "
                            "approximately normal, groups independent)")

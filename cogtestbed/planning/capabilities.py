"""What each experiment can plan (``cogtestbed list EXPERIMENT``), known before anything is simulated.

* **Compared between groups** (``plan --metric M --compare A B``, two LLMs): first what the experiment
  declares (:attr:`MetricsSpec.comparisons <cogtestbed.experiments.spec.MetricsSpec.comparisons>`, one
  :class:`~cogtestbed.metrics_result.MetricComparison` per metric: the one source where it exists, read by
  ``list``, by the plan's refusal and by ``power --metric``'s, through
  :meth:`~cogtestbed.experiments.spec.MetricsSpec.check_comparable`); else a headline metric whose metrics
  result lists it per unit (a Welch t-test on the per-unit values) or with a standard error or interval (a
  z-test on two pooled estimates; :func:`~cogtestbed.studies.metric_studies.difference_test`).  What
  a metrics function returns is known only by running it, which takes seconds to minutes per experiment (a
  JIT-compiled simulator, a bootstrap), so it is probed once per release by :func:`probe_comparisons` on a
  small simulated table and shipped as ``metric_tests.json`` beside this module, with a digest of the metrics
  module's source (:func:`fingerprint`: a stale row is probed again when used; ``python -m
  cogtestbed.planning.capabilities`` rewrites it; tests/test_plan_kinds.py re-probes the fast
  experiments).  An experiment registered from outside the package is probed on first use.
* **Planned with forms** (``plan --forms``): a model parameter its simulated agent takes under the same name
  (a form shifts the agent's parameter).
* **Adapted** (``plan --adaptive``): a parameter of the experiment's adaptive model.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cogtestbed.errors import InputError

#: The shipped probe (:func:`probe_comparisons` of every package experiment).
SHIPPED = Path(__file__).with_name("metric_tests.json")
#: The key of an experiment's shipped row listing its statistical tests
#: (:func:`~cogtestbed.studies.metric_studies.probe_tests`).
TESTS_KEY = "_tests"


def fingerprint(exp: Any) -> str:
    """A digest of the source of the module holding ``exp``'s metrics function: a shipped probe made from other
    source is stale (:func:`comparisons` probes again; the shipped-probe test fails until it is rewritten)."""
    import hashlib
    import inspect

    module = inspect.getmodule(exp.metrics.fn)
    try:
        source = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):  # no source (a built-in, a notebook): never shipped
        source = ""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


#: The name :func:`~cogtestbed.studies.metric_studies.difference_test` gives each declared test.
TEST_NAMES = {"welch": "Welch t-test on per-unit values", "z": "z-test on two pooled estimates",
              "permutation": "permutation test of the per-unit means"}


def declared_comparisons(exp: Any) -> dict[str, dict[str, str]]:
    """The comparisons ``exp`` declares (:attr:`~cogtestbed.experiments.spec.MetricsSpec.comparisons`) as rows of
    :func:`comparisons`: ``{"test", "assumption"}`` where comparable, else ``{"why"}``."""
    out: dict[str, dict[str, str]] = {}
    for metric, how in (getattr(exp.metrics, "comparisons", None) or {}).items():
        out[metric] = ({"test": TEST_NAMES[how.test], "assumption": how.reason} if how.comparable
                       else {"why": how.reason})
    return out


def probe_comparisons(exp: Any, seed: int = 0) -> dict[str, dict[str, str]]:
    """``{METRIC: {"test": how two groups' values are compared}}`` or ``{METRIC: {"why": why they cannot be}}``
    for each headline metric of ``exp``: its declaration (:func:`declared_comparisons`), else from its metrics on
    :data:`~cogtestbed.studies.metric_studies.PROBE_SUBJECTS` simulated subjects of its first declared agent
    (:func:`~cogtestbed.studies.metric_studies.difference_test`'s rules; nothing is simulated where
    every headline metric is declared)."""
    from cogtestbed.studies.metric_studies import difference_test, probe_metrics

    out = declared_comparisons(exp)
    rest = [m for m in exp.metrics.headline if m not in out]
    if not rest:
        return out
    result = probe_metrics(exp, seed)
    for metric in rest:
        try:
            out[metric] = {"test": difference_test(result, result, metric, exp.metrics.unit)[0]}
        except InputError as exc:
            out[metric] = {"why": str(exc)}
    return out


@functools.cache
def _shipped() -> dict[str, dict[str, Any]]:
    return dict(json.loads(SHIPPED.read_text(encoding="utf-8"))) if SHIPPED.exists() else {}


def comparisons(exp: Any) -> dict[str, dict[str, str]]:
    """How each headline metric of ``exp`` is compared between two groups, or why it cannot be: the shipped
    probe for a package experiment, else :func:`probe_comparisons` (cached); a declared comparison
    (:func:`declared_comparisons`) always wins.  In the headline's order, wherever the rows come from."""
    declared = declared_comparisons(exp)
    if set(exp.metrics.headline) <= set(declared):
        rows = declared
    else:
        shipped = dict(_shipped().get(exp.name) or {})
        source = shipped.pop("_source", None)
        shipped.pop(TESTS_KEY, None)
        fresh = shipped and set(shipped) == set(exp.metrics.headline) and source == {"fingerprint": fingerprint(exp)}
        rows = {**(shipped if fresh else _probed(exp)), **declared}
    return {m: rows[m] for m in exp.metrics.headline}


#: Probes made in this process, by (experiment name, :func:`fingerprint`): an experiment spec holds dicts and
#: does not hash.
_PROBED: dict[tuple[str, str], dict[str, dict[str, str]]] = {}


def _probed(exp: Any) -> dict[str, dict[str, str]]:
    key = (exp.name, fingerprint(exp))
    if key not in _PROBED:
        _PROBED[key] = probe_comparisons(exp)
    return _PROBED[key]


def statistical_tests(exp: Any) -> list[str]:
    """The tests a test target of ``exp`` may name
    (:func:`~cogtestbed.studies.metric_studies.probe_tests`): the shipped probe for a package experiment
    whose metrics source is unchanged, else probed once a process
    (:func:`~cogtestbed.studies.metric_studies.named_tests`, the study's own check)."""
    shipped = _shipped().get(exp.name) or {}
    if TESTS_KEY in shipped and shipped.get("_source") == {"fingerprint": fingerprint(exp)}:
        return list(shipped[TESTS_KEY])
    from cogtestbed.studies.metric_studies import named_tests

    return named_tests(exp)


def comparable_metrics(exp: Any) -> list[str]:
    """The headline metrics of ``exp`` two groups can be compared in."""
    return [m for m, how in comparisons(exp).items() if "test" in how]


def forms_parameters(exp: Any) -> dict[str, list[str]]:
    """``{MODEL: [the parameters a forms plan can shift]}``: those its simulated agent takes by the same name."""
    out: dict[str, list[str]] = {}
    for name in exp.models:
        generator = exp.generators.get(name)
        if generator is None:
            out[name] = []
            continue
        model = exp.model(name)
        agent = set(generator.agent_params({p.name: p.default for p in model.parameters}))
        out[name] = [p for p in model.parameters.names if p in agent]
    return out


def adaptive_parameters(exp: Any) -> list[str]:
    """The parameters ``plan --adaptive`` can target (the adaptive model's), or [] where none is declared."""
    decl = getattr(exp, "adaptive", None)
    model = getattr(decl, "model", None)
    return [] if model is None else list(exp.model(model).parameters.names)


def planning(exp: Any) -> dict[str, Any]:
    """What ``cogtestbed list EXPERIMENT`` shows under planning: each headline metric's comparison between
    groups, the parameters forms plans can shift, the parameters adaptive plans can target."""
    return {"metrics": [{"metric": m, **how} for m, how in comparisons(exp).items()],
            "forms": forms_parameters(exp), "adaptive": adaptive_parameters(exp)}


def write_shipped(names: list[str] | None = None) -> Path:
    """Probe the package's experiments (``names``; default all) and write :data:`SHIPPED`."""
    from cogtestbed.registry import EXPERIMENTS, get_experiment
    from cogtestbed.studies.metric_studies import probe_tests

    table: dict[str, Mapping[str, Any]] = dict(_shipped())
    for name in names or list(EXPERIMENTS.builtin_names()):
        exp = get_experiment(name)
        table[name] = {**probe_comparisons(exp), TESTS_KEY: probe_tests(exp),
                       "_source": {"fingerprint": fingerprint(exp)}}
    SHIPPED.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    _shipped.cache_clear()
    return SHIPPED


if __name__ == "__main__":  # pragma: no cover - the release step that rewrites the shipped probe
    import sys

    print(write_shipped(sys.argv[1:] or None))

"""The study specs the study commands, the planner and :mod:`cogtestbed.api.studies` build
from their options: comma lists of sizes, ``NAME=VALUE`` assignments, the three forms of a power
target (a model parameter, a metric difference, a declared test), each bad mix refused in one line
naming the option.  Imports only on use (the command line registers its commands from here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cogtestbed.errors import InputError
from cogtestbed.request import as_items, as_text

if TYPE_CHECKING:
    from cogtestbed.studies.driver import StudySpec


def parse_assignments(items: list[str], option: str = "") -> dict[str, float]:
    """``NAME=VALUE`` items → values (:func:`cogtestbed.parameters.parse_assignments`, imported on use)."""
    from cogtestbed.parameters import parse_assignments as parse

    return parse(items, option)


def ints(text: str | None, default: tuple[Any, ...], option: str = "`subjects`") -> tuple[Any, ...]:
    """A comma list of positive integers (``10,20,40``); an empty item, a non-integer or a value
    below 1 is one clear error naming ``option``."""
    if text is None:
        return default
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise InputError(f"{option} expects comma-separated integers, got {text!r} (an empty item)")
    try:
        values = tuple(int(x) for x in items)
    except ValueError:
        raise InputError(f"{option} expects comma-separated integers, got {text!r}") from None
    low = [v for v in values if v < 1]
    if low:
        raise InputError(f"{option} must be at least 1, got {low[0]}")
    return values


#: The request fields (written `` `name` ``, the command line's flags by :func:`~cogtestbed.cli.options.as_flags`) of
#: the :class:`StudySpec` fields whose name differs.
OPTION_OF_FIELD = {"models": "`model`", "reps": "`reps`", "fixed": "`fix`", "params": "`params`",
                   "sampler_backend": "`backend`", "effect": "`effect`", "tune": "`draws`", "lapse_fit": "`lapse`"}


def lapse_fit(text: str) -> float | str | None:
    """``--lapse`` → the fitted models' lapse term (:func:`cogtestbed.inference.base.lapse_option`)."""
    from cogtestbed.inference.base import lapse_option as parse

    return parse(text)


def study_spec_of(**fields: Any) -> StudySpec:
    """A :class:`StudySpec` from the command's options; a validation error becomes one line naming
    the option."""
    from pydantic import ValidationError

    from cogtestbed.studies.driver import study_spec

    try:
        return study_spec(**fields)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = first["loc"][1:] if first["loc"][:1] == (fields.get("kind"),) else first["loc"]  # the kind's class
        name = str(loc[0]) if loc else ""
        option = OPTION_OF_FIELD.get(name, f"`{name}`") if name else ""
        got = f" (got {first['input']!r})" if name else ""
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise InputError(f"{option + ': ' if option else ''}{msg}{got}") from None


def sized(experiment: str, design: list[str] | None, trials: str | None) -> dict[str, Any]:
    """``design`` and ``trials`` of a study from ``--design`` (a comma list sweeps the trials field,
    :func:`~cogtestbed.studies.sizes.split_design`) and ``--trials`` (one of the two sizes the run)."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.sizes import split_design

    fixed, swept = split_design(get_experiment(experiment), design)
    given = ints(trials, (None,), "`trials`")
    if swept != (None,) and given != (None,):
        raise InputError("`trials` and a `design` list both size the run; give one of them")
    return {"design": fixed, "trials": swept if swept != (None,) else given}


def floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise InputError(f"expected comma-separated numbers, got {text!r}") from None


def parse_metric_assignments(experiment: str, items: list[str] | None) -> dict[str, Any]:
    """``--option NAME=VALUE`` items → the experiment's metrics options, each converted to its
    declared type (an unknown name lists the valid ones; a name given twice is an error)."""
    if not items:
        return {}
    from cogtestbed.registry import get_experiment

    exp = get_experiment(experiment)
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"`option` expected NAME=VALUE, got {item!r}")
        option = exp.metric_option(name.strip().replace("-", "_"))
        if option.name in out:
            raise InputError(f"`option` sets {option.name} twice; give it once")
        out[option.name] = option.convert(value.strip())
    return out


def power_spec(target: str, experiment: str | None, effect: str | tuple[str, float] | None, metric: str | None,
                compare: tuple[str, str] | None, test: str | None, agent: str | None,
                common: dict[str, Any], options: list[str] | None = None, sweep: str | None = None) -> StudySpec:
    """The power study one of the three CLI forms asks for (one clear error for any other mix).

    ``sweep`` (``NAME=a,b,c``, metric and test forms): an agent parameter or design field whose
    values each get a rate (a test's rate at a leak of 0 is its false-positive rate)."""
    forms = [name for name, given in (("`effect`", effect), ("`metric`", metric), ("`test`", test)) if given]
    if len(forms) != 1:
        raise InputError("power needs exactly one of `effect` NAME=SIZE (model parameter), `metric` M `compare` A B, "
                         f"or `test` KEY `agent` A; got {', '.join(forms) or 'none'}")
    if effect is not None:
        if compare is not None or agent is not None or options or sweep:
            raise InputError("`compare`, `agent`, `option` and `sweep` belong to metric and test power, not to "
                             "`effect`")
        (name, size), = ((effect[0], effect[1]),) if isinstance(effect, tuple) else \
            parse_assignments([effect], "`effect`").items()
        from cogtestbed.registry import experiment_of

        return study_spec_of(kind="power", experiment=experiment_of(experiment, model=target), models=(target,),
                         effect=name, effect_size=size, **common)
    if experiment is not None and experiment != target:
        raise InputError(f"metric and test power take the experiment as argument; got {target!r} and "
                         f"`experiment` {experiment!r}")
    base, common = _behaviour_power_common(target, common, options, sweep)
    if metric is not None:
        return _metric_power_spec(target, metric, compare, agent, base, common)
    return _test_power_spec(target, test, compare, agent, base, common)


def _behaviour_power_common(target: str, common: dict[str, Any], options: list[str] | None,
                            sweep: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The agent's base parameters, and the study fields metric and test power share (no model-fit
    fields; the metrics options and the ``--sweep`` parameter and values)."""
    if common.get("groups", 1) != 1:
        raise InputError("two groups compare a model parameter (`effect`); a metric difference is `metric` M "
                         "`compare` A B")
    common = {k: v for k, v in common.items()
              if k not in ("subjects", "base", "sd_between", "method", "draws", "tune", "chains", "groups",
                           "reference")}
    base = common.pop("params")
    common["metric_options"] = parse_metric_assignments(target, options)
    if sweep is not None:
        swept, sep, values = sweep.partition("=")
        if not sep or not swept.strip():
            raise InputError(f"`sweep` expects NAME=a,b,c, got {sweep!r}")
        common.update(parameter=swept.strip(), values=floats(values))
    return base, common


def _metric_power_spec(target: str, metric: str, compare: tuple[str, str] | None, agent: str | None,
                       base: dict[str, Any], common: dict[str, Any]) -> StudySpec:
    """Metric power: the metric's difference between two settings of one agent (``--compare``)."""
    if compare is None or agent is not None:
        raise InputError("metric power takes `compare` AGENT:p=v AGENT:p=v (and no `agent`)")
    from cogtestbed.parameters import parse_agent
    (name_a, a), (name_b, b) = parse_agent(compare[0]), parse_agent(compare[1])
    if name_a != name_b:
        raise InputError(f"`compare` takes two settings of one agent, got {name_a!r} and {name_b!r}")
    from cogtestbed.registry import get_experiment

    get_experiment(target).metrics.check_comparable(metric, target)  # before anything is simulated
    return study_spec_of(kind="metric-power", experiment=target, agent=name_a, metric=metric, compare=(a, b),
                     params=base, **common)


def _test_power_spec(target: str, test: str | None, compare: tuple[str, str] | None, agent: str | None,
                     base: dict[str, Any], common: dict[str, Any]) -> StudySpec:
    """Test power: the rejection rate of the experiment's test ``test`` under ``--agent``."""
    if agent is None or compare is not None:
        raise InputError("test power takes `agent` AGENT[:p=v,...] (and no `compare`)")
    from cogtestbed.parameters import parse_agent
    name, params = parse_agent(agent)
    if test is not None:  # the paper's name of a test (T1c) is an alias of its key (t1_lr)
        from cogtestbed.registry import get_experiment

        test = get_experiment(target).metrics.resolve(test)
    return study_spec_of(kind="test-power", experiment=target, agent=name, test=test, params={**base, **params},
                     **common)


def assignment_items(value: Mapping[str, Any] | Sequence[str] | str | None) -> list[str]:
    """``NAME=VALUE`` items of a mapping (or the items as given; :func:`cogtestbed.request.as_items`)."""
    return [] if value is None else as_items(value)


def one_assignment(value: Mapping[str, Any] | str | None) -> str | None:
    """One ``NAME=VALUE`` of a one-entry mapping (or the text as given)."""
    items = assignment_items(value)
    if len(items) > 1:
        raise InputError(f"one NAME=VALUE expected, got {len(items)}: {', '.join(items)}")
    return items[0] if items else None


def size_text(value: Any) -> str | None:
    """``(lo, hi)`` → ``lo:hi``; a list → a comma list; text as it is."""
    return as_text(value, ":")


def with_population(spec: Any, population: Any, first_group: bool = True) -> Any:
    """The model study ``spec`` with its subjects drawn from ``population`` (``human:NAME``, a file,
    or a :class:`~cogtestbed.inference.population.Population`): a power study's medians
    and spreads come from its posterior draws; with two groups and ``first_group`` the first is as
    many people as the population was fitted to (their number fixed: their data are already
    collected), drawn afresh from it in every simulated study at their own trial count and fitted
    per subject (:func:`~cogtestbed.studies.model_studies.people_design`); without it
    (two LLMs) both groups are drawn from it.  None: ``spec`` as it is."""
    if population is None:
        return spec
    from cogtestbed.inference.population import load_population
    from cogtestbed.registry import get_experiment
    from cogtestbed.studies.study_kinds import PowerStudy

    if not isinstance(spec, PowerStudy):
        raise InputError("`population` draws a model's parameters: it goes with `model` M `effect` NAME=SIZE (a "
                         "metric or test target simulates agents, not a model's population)")
    pop = load_population(population, use=True)
    exp = get_experiment(pop.experiment)
    if pop.model in exp.models:  # implausible group parameters refused before any simulation
        pop.check(exp.model(pop.model).parameters)
    fields = spec.model_dump(exclude={"from_population", "reference"})
    people = {"people": pop.subjects, "people_trials": pop.trials} \
        if spec.groups == 2 and spec.reference is None and first_group else {}
    return study_spec_of(**{**fields, **people}, from_population=pop, reference=spec.reference)

"""Typed, bounded model parameters shared by agents (simulation) and models (fitting).

A :class:`Parameter` names a quantity, its bounds and the transform that maps it to the real line
(logit for a two-sided bound, log for a lower bound, identity otherwise).  The same tuple of
parameters is used by the synthetic agent that simulates a model and by the fitters, so a
parameter means one thing everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from cogtestbed.errors import InputError

if TYPE_CHECKING:  # pydantic is imported when values are first validated (a fit never does); numpy where used
    import numpy as np
    from pydantic import BaseModel

Transform = Literal["logit", "log", "identity"]

#: Prior SDs either side of the prior mean that :meth:`Parameter.central_range` spans (1.645: the central 90 %).
CENTRAL_Z = 1.645


class ParameterError(InputError):
    """Bad parameter values or names (one clear message)."""


@dataclass(frozen=True)
class Parameter:
    """One model parameter.

    ``prior_mean`` and ``prior_sd`` describe a normal prior on the *unconstrained* scale (after
    :meth:`to_unconstrained`), used by hierarchical models and by prior samplers.
    """

    name: str
    lower: float
    upper: float
    default: float
    description: str = ""
    prior_mean: float = 0.0
    prior_sd: float = 1.5
    transform: Transform = field(default="identity")
    #: Smallest distance from the lower bound a log-scale search explores (MLE start grids).
    search_floor: float = 1e-6
    #: Upper end of a log-scale search when the upper bound is infinite.
    search_ceiling: float = 1e6

    def __post_init__(self) -> None:
        if not self.lower < self.upper:
            raise InputError(f"{self.name}: lower bound must be below upper bound")
        if not self.lower <= self.default <= self.upper:
            raise InputError(f"{self.name}: default {self.default} outside its bounds")

    @classmethod
    def unit(cls, name: str, default: float, description: str = "", **kw: Any) -> Parameter:
        """A parameter in [0, 1] with a logit transform."""
        return cls(name, 0.0, 1.0, default, description, transform="logit", **kw)

    @classmethod
    def positive(
        cls, name: str, default: float, upper: float = math.inf, description: str = "", **kw: Any
    ) -> Parameter:
        """A parameter in [0, upper] with a log transform."""
        return cls(name, 0.0, upper, default, description, transform="log", **kw)

    def to_unconstrained(self, x: np.ndarray | float) -> np.ndarray:
        """Map values inside the bounds to the real line (the fitter's scale)."""
        import numpy as np

        x = np.asarray(x, dtype=np.float64)
        if self.transform == "logit":
            u = (x - self.lower) / (self.upper - self.lower)
            u = np.clip(u, 1e-12, 1 - 1e-12)
            return np.log(u) - np.log1p(-u)
        if self.transform == "log":
            return np.log(np.maximum(x - self.lower, 1e-300))
        return x

    def to_constrained(self, z: np.ndarray | float) -> np.ndarray:
        """Inverse of :meth:`to_unconstrained` (scipy's stable logistic ``expit`` / exp)."""
        import numpy as np

        z = np.asarray(z, dtype=np.float64)
        if self.transform == "logit":
            from scipy.special import expit  # imported on use: scipy.special costs a fitting process 0.3 s

            return self.lower + (self.upper - self.lower) * expit(z)
        if self.transform == "log":
            return self.lower + np.exp(z)
        return z


    def constrained_slope(self, x: np.ndarray | float) -> np.ndarray:
        """d(natural value)/d(unconstrained value) of :meth:`to_constrained`, at natural values ``x``."""
        import numpy as np

        x = np.asarray(x, dtype=np.float64)
        if self.transform == "logit":
            return (x - self.lower) * (self.upper - x) / (self.upper - self.lower)
        if self.transform == "log":
            return x - self.lower
        return np.ones_like(x)

    def inside(self, x: np.ndarray | float) -> np.ndarray:
        """``x`` clipped into the bounds: a prior sampler's draws respect the bounds for every
        parameter (a log-transformed parameter with a finite upper bound maps the whole real line
        to (lower, inf), so its draws beyond the upper bound are set to it; this project's rule,
        not a paper's)."""
        import numpy as np

        return np.clip(np.asarray(x, dtype=np.float64), self.lower, self.upper)

    def central_range(self, z: float = CENTRAL_Z) -> tuple[float, float]:
        """The natural-scale bounds of the prior's central mass: the prior mean ± ``z`` prior SDs on the
        unconstrained scale, mapped to the natural scale and kept inside the bounds (the population that
        ``recover --sampler uniform`` draws true values from, uniformly, and the design check's population)."""
        lo, hi = self.prior_mean - z * self.prior_sd, self.prior_mean + z * self.prior_sd
        return float(self.inside(self.to_constrained(lo))), float(self.inside(self.to_constrained(hi)))

    # -- the MLE search scale: box-bounded, linear for [a, b] parameters, log for (0, inf) ---
    def search_bounds(self) -> tuple[float, float]:
        """Box bounds on the search scale used by the multi-start MLE."""
        if self.transform == "log":
            top = min(self.upper - self.lower, self.search_ceiling)
            return math.log(self.search_floor), math.log(top)
        return self.lower, self.upper

    def to_search(self, x: float) -> float:
        if self.transform == "log":
            return math.log(max(x - self.lower, self.search_floor))
        return float(x)

    def from_search(self, s: float) -> float:
        if self.transform == "log":
            return self.lower + math.exp(s)
        return float(s)

    def search_jacobian(self, s: float) -> float:
        """d(natural)/d(search) at search-scale value ``s`` (chain rule for gradients)."""
        return math.exp(s) if self.transform == "log" else 1.0


class ParameterSet:
    """An ordered set of parameters with pydantic validation of user-supplied values.

    The pydantic model is built on the first :meth:`validate` (building one costs milliseconds, and
    every model and agent declares a set at import, while fitting a file validates none).
    """

    def __init__(self, parameters: Sequence[Parameter], owner: str) -> None:
        self.parameters = tuple(parameters)
        self.owner = owner

    @cached_property
    def _model(self) -> type[BaseModel]:
        """The pydantic model of the values: one bounded float field per parameter, no extras."""
        from pydantic import ConfigDict, Field, create_model

        fields_: dict[str, Any] = {
            p.name: (float, Field(default=p.default, ge=p.lower, le=p.upper, description=p.description))
            for p in self.parameters
        }
        return create_model(f"{self.owner.title().replace('-', '')}Params",
                            __config__=ConfigDict(extra="forbid", frozen=True), **fields_)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.parameters)

    def __len__(self) -> int:
        return len(self.parameters)

    def __getitem__(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(name)

    def validate(self, values: Mapping[str, float] | None = None) -> dict[str, float]:
        """Fill defaults and check bounds; raise :class:`ParameterError` with one message."""
        from pydantic import ValidationError

        try:
            model = self._model(**dict(values or {}))
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                loc = ".".join(str(x) for x in err["loc"])
                if err["type"] == "extra_forbidden":
                    problems.append(f"unknown parameter '{loc}' (expected: {', '.join(self.names)})")
                else:
                    problems.append(f"{loc}={err.get('input')!r}: {err['msg']}")
            raise ParameterError(f"invalid parameters for {self.owner}: " + "; ".join(problems)) from None
        return {name: float(getattr(model, name)) for name in self.names}

    def validate_array(self, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Vectorised bound check for per-subject parameter arrays."""
        import numpy as np

        unknown = set(values) - set(self.names)
        if unknown:
            raise ParameterError(
                f"unknown parameter(s) for {self.owner}: {', '.join(sorted(unknown))} "
                f"(expected: {', '.join(self.names)})"
            )
        out = {}
        for p in self.parameters:
            value = values.get(p.name, p.default)
            try:
                arr = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                raise ParameterError(f"invalid parameters for {self.owner}: {p.name} must be a number or an "
                                     f"array of numbers, got {value!r}") from None
            if isinstance(value, float | int):  # one value (the defaults): checked without array passes
                bad = np.asarray(not (math.isfinite(value) and p.lower <= value <= p.upper))
            else:
                bad = ~np.isfinite(arr) | (arr < p.lower) | (arr > p.upper)
            if bad.any():
                raise ParameterError(
                    f"invalid parameters for {self.owner}: {p.name} must lie in "
                    f"[{p.lower}, {p.upper}], got {float(arr[bad].ravel()[0]):g}"
                )
            out[p.name] = arr
        return out

    def vector(self, values: Mapping[str, float]) -> np.ndarray:
        """Values in parameter order as a float array."""
        import numpy as np

        return np.array([values[n] for n in self.names], dtype=np.float64)


def per_subject(values: Any, n: int) -> np.ndarray:
    """A parameter's values for ``n`` subjects as a contiguous float64 (n,) array: one value repeated
    (a scalar or a one-element array), or ``n`` values as given (not copied where they already are
    such an array).  No broadcast view is built (building one costs more than filling a few thousand
    values)."""
    import numpy as np

    array = np.asarray(values, dtype=np.float64)
    if array.shape == (n,):
        return np.ascontiguousarray(array)
    if array.size == 1 and array.ndim <= 1:
        return np.full(n, array.reshape(()))
    raise InputError(f"a parameter needs one value or one per subject ({n}), got shape {array.shape}")


def contrast_shift(contrasts: Mapping[str, Mapping[str, float]], effect: str, size: float) -> dict[str, float]:
    """Each parameter's move when ``effect`` changes by ``size``: the minimum-norm shift along the named contrast
    (``contrasts[effect]``, its weights; a parameter's own name where it is not a contrast), so that
    α⁺ − α⁻ = d moves α⁺ by d/2 and α⁻ by −d/2."""
    weights = contrasts.get(effect) or {effect: 1.0}
    norm = sum(w * w for w in weights.values())
    return {name: size * w / norm for name, w in weights.items()}


def parse_assignments(items: Sequence[str], option: str = "") -> dict[str, float]:
    """Parse CLI ``name=value`` pairs into a dict (one clear error per bad item; a name given twice
    is an error, since which value would win is a guess).  ``option`` names the field (`` `name` ``) in messages."""
    out: dict[str, float] = {}
    flag = f"{option} " if option else ""
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ParameterError(f"{flag}expected NAME=VALUE, got {item!r}")
        try:
            number = float(value)
        except ValueError:
            raise ParameterError(f"{flag}value of {name!r} is not a number: {value!r}") from None
        if not math.isfinite(number):
            raise ParameterError(f"{flag}value of {name!r} must be a finite number, got {value.strip()!r}")
        if name in out:
            raise ParameterError(f"{flag}sets {name} twice ({out[name]:g} and {number:g}); give it once")
        out[name] = number
    return out


def check_parameter_names(values: Mapping[str, Any], valid: set[str], what: str) -> None:
    """Refuse names in ``values`` that are no parameter of ``what`` (one line listing the valid ones)."""
    bad = sorted(set(values) - valid)
    if bad:
        noun = "is not a parameter" if len(bad) == 1 else "are not parameters"
        raise InputError(f"{', '.join(bad)} {noun} of {what}; valid: {', '.join(sorted(valid)) or '(none)'}")


def check_setting_bounds(option: str, agent: str, params: Mapping[str, Any], settings: Sequence[Mapping[str, Any]],
                         bounds: Mapping[str, Any]) -> None:
    """Refuse a value of ``params`` or of each of ``settings`` on top of them (an agent's ``option``: ``compare``,
    ``agent``) outside its parameter's bounds (``bounds``: name -> anything with ``lower`` and ``upper``)."""
    for setting in settings or [{}]:
        for name, value in {**params, **setting}.items():
            p = bounds.get(name)
            if p is not None and not p.lower <= float(value) <= p.upper:
                raise InputError(f"`{option}` {agent}: {name}={float(value):g} is outside its bounds "
                                 f"[{p.lower:g}, {p.upper:g}]")


def parse_agent(text: str) -> tuple[str, dict[str, float]]:
    """``AGENT[:p=v,q=w]`` → (agent name, parameter values)."""
    name, _, rest = text.partition(":")
    if not name.strip():
        raise InputError(f"expected AGENT[:NAME=VALUE,...], got {text!r}")
    return name.strip(), parse_assignments([x for x in rest.split(",") if x.strip()])
